"""The cost model: simulated CPU nanoseconds for each piece of work on the XDP path.

One table per driver plus a few driver-independent entries. Numbers marked *fitted* were solved
from the seeds' benchmark tables so that the simulator reproduces them as ratios (``xdptui
reproduce``); the rest are estimates marked UNVERIFIED and only set relative speeds.

Fitted on the bond seed's single-device E810 rows (``seeds/bond-xdp.txt``, "without patch"):
one queue on one CPU gives XDP_DROP 48.6 Mpps (20.58 ns/frame all-in) and XDP_TX 18.3 Mpps
(54.64 ns/frame all-in). With a 100 ns poll overhead amortised over 64 frames (1.56 ns) that
leaves 19.0 ns for RX + a trivial program + page recycle, and 33.1 ns more for an XDP_TX
(descriptor write, its share of the doorbell and the completion clean-up).

Fitted on the devmap seed (``seeds/devmap-prog-on-flush.txt``, xdp_redirect_map, one flow,
i40e RX on one CPU, "+ patch" rows): i40e->i40e native 9.5 Mpps = 105.3 ns, i40e->veth 11.6
Mpps = 86.2 ns (the veth peer dropping in XDP), generic 2.0 / 1.7 Mpps = 500 / 588 ns; with a
2nd (egress) program 7.5 / 9.1 Mpps, i.e. ~26 ns per frame for running it on the bulk at flush;
"before the patch" (per frame at enqueue) 8.0 / 9.7 Mpps, i.e. ~13.6 ns, and the base path
was ~4.65 ns slower (9.1 / 11.0 Mpps). ice has no redirect figures in the seeds: it takes
i40e's redirect and ndo_xdp_xmit costs (UNVERIFIED), which is what the bond seed's two-device
XDP_TX rows (a cross-port redirect) are then predicted from.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriverCosts:
    rx_frame: float  # RX descriptor + running a trivial program (native)
    tx: float  # XDP_TX: frame onto the CPU's XDP TX ring + completion clean-up
    redirect: float  # xdp_do_redirect + bq_enqueue
    xmit_frame: float  # per frame handed to this driver's ndo_xdp_xmit
    poll: float  # per NAPI poll (napi->poll entry/exit, IRQ re-arm)
    flush: float  # per bulk-queue flush (ndo_xdp_xmit call + doorbell)
    build_skb: float  # XDP_PASS: build an skb around the buffer
    generic_rx: float  # generic XDP: skb alloc + netif_receive_generic_xdp, per frame
    skb_xmit: float = 200.0  # an skb out through ndo_start_xmit + its completion (generic path)


COSTS: dict[str, DriverCosts] = {
    "ice": DriverCosts(
        rx_frame=19.0,  # fitted: XDP_DROP 48.6 Mpps
        tx=33.1,  # fitted: XDP_TX 18.3 Mpps
        redirect=22.0,  # as i40e (UNVERIFIED for ice)
        xmit_frame=52.7,  # as i40e (UNVERIFIED for ice)
        poll=100.0,
        flush=80.0,
        build_skb=45.0,  # UNVERIFIED
        generic_rx=95.0,  # UNVERIFIED
        skb_xmit=219.4,  # as i40e (UNVERIFIED for ice)
    ),
    "i40e": DriverCosts(
        rx_frame=21.0,  # UNVERIFIED split: rx_frame + redirect + xmit_frame is what is fitted
        tx=33.0,
        redirect=22.0,
        xmit_frame=52.7,  # fitted: native i40e->i40e 105.3 ns per frame
        poll=100.0,
        flush=80.0,
        build_skb=45.0,
        generic_rx=95.0,
        skb_xmit=219.4,  # fitted: generic i40e->i40e 500 ns per frame
    ),
    "ixgbe": DriverCosts(
        rx_frame=24.0,  # UNVERIFIED: 10G parts are rarely CPU bound at line rate
        tx=36.0,
        redirect=24.0,
        xmit_frame=16.0,
        poll=110.0,
        flush=90.0,
        build_skb=45.0,
        generic_rx=95.0,
        skb_xmit=503.0,  # fitted: tun seed, generic xdp_redirect from a tap to ixgbe
    ),
    "mlx5": DriverCosts(
        rx_frame=18.0,  # UNVERIFIED
        tx=30.0,
        redirect=22.0,
        xmit_frame=13.0,
        poll=100.0,
        flush=80.0,
        build_skb=45.0,
        generic_rx=95.0,
    ),
    "generic": DriverCosts(
        rx_frame=30.0,  # UNVERIFIED: an skb-only driver
        tx=0.0,
        redirect=0.0,
        xmit_frame=0.0,
        poll=120.0,
        flush=0.0,
        build_skb=60.0,
        generic_rx=95.0,
    ),
    "veth": DriverCosts(
        rx_frame=25.0,  # UNVERIFIED: veth_xdp_rcv from the ptr_ring
        tx=20.0,  # veth_xdp_tx bulk to the peer
        redirect=22.0,
        xmit_frame=9.9,  # fitted: native i40e->veth 86.2 ns per frame
        poll=90.0,
        flush=60.0,
        build_skb=45.0,
        generic_rx=95.0,
        skb_xmit=282.4,  # fitted: generic i40e->veth 588 ns (veth_xmit + XDP on the skb)
    ),
    # tun/tap: the writer's side of a write (syscall, copy_from_user, tun_get_user) is charged
    # to the writer's CPU. Fitted on the tun seed (xdp1: 1.7 Mpps all-generic -> 2.3 Mpps with
    # the fast path; xdp_redirect to ixgbe 0.8 -> 1.38 Mpps), split UNVERIFIED.
    "tap": DriverCosts(
        rx_frame=300.0,
        tx=30.0,
        redirect=22.0,
        xmit_frame=40.0,  # tun_xdp_xmit: ptr_ring produce (UNVERIFIED)
        poll=0.0,  # no NAPI: each write is its own "poll"
        flush=0.0,
        build_skb=60.0,
        generic_rx=285.0,  # fitted: the slow path (skb alloc + do_xdp_generic)
        skb_xmit=150.0,
    ),
    "tap-vhost": DriverCosts(
        rx_frame=150.0,  # UNVERIFIED: vhost batches 64 buffers per tun_sendmsg
        tx=30.0,
        redirect=22.0,
        xmit_frame=40.0,
        poll=0.0,
        flush=0.0,
        build_skb=60.0,
        generic_rx=285.0,
        skb_xmit=150.0,
    ),
}

# Driver-independent costs (ns per frame unless said otherwise).
STACK_RX = 220.0  # XDP_PASS / no program: the frame climbs the stack to a sink (UNVERIFIED)
GENERIC_REDIRECT = 160.0  # xdp_do_generic_redirect: skb sent at once with generic_xdp_tx
GENERIC_TX = 140.0  # generic XDP_TX: generic_xdp_tx on the RX device
LOCK_UNCONTENDED = 6.0  # spin_lock/unlock of an XDP ring's tx_lock (ixgbe > 64 CPUs)
LOCK_PER_SHARER = 9.0  # extra cache-line bouncing per additional CPU sharing the ring
TUN_FAST = 132.0  # tun_build_skb: page frag + xdp_buff + running the program (fitted, tun seed)
TUN_WRITE_FLUSH = 247.4  # xdp_do_flush after every single write: a bulk of one and its
# doorbell (fitted: tun seed, xdp_redirect to ixgbe with the fast path)
CLONE = 30.0  # xdpf_clone for a broadcast destination (UNVERIFIED)
# Devmap egress programs (fitted on the devmap seed, see below): per frame on top of the
# program's own cost.
EGRESS_FLUSH = 26.0  # since the patch: dev_map_bpf_prog_run on the bulk at flush
EGRESS_ENQUEUE = 13.6  # before it: run per frame at enqueue
EGRESS_SKB = 40.0  # generic XDP: dev_map_bpf_prog_run_skb (UNVERIFIED)
PRE_PATCH_DEVMAP = 4.65  # the pre-patch enqueue path's extra per-frame cost
MASTER_REDIRECT = 15.0  # xdp_master_redirect: slave lookup + hash + compare (UNVERIFIED estimate;
# not fitted: the bond seed's bond rows are predictions from it)
# cpumap (kernel/bpf/cpumap.c), all UNVERIFIED estimates: a passed frame is ~3 Mpps per
# kthread CPU (an skb and the stack), a frame its program drops ~16 Mpps.
CPUMAP_ENQUEUE = 25.0  # the sender: xdp_do_redirect + cpu_map_enqueue into the bulk queue
CPUMAP_FLUSH = 60.0  # the sender, per bulk: bq_flush_to_queue under the ring's producer lock
CPUMAP_BATCH = 80.0  # the kthread, per batch: __ptr_ring_consume_batched, skb bulk alloc
CPUMAP_FRAME = 50.0  # the kthread, per frame: xdp_frame back to an xdp_buff, page recycled
CPUMAP_BUILD_SKB = 60.0  # the kthread: __xdp_build_skb_from_frame for a passed frame

# Extra ns per frame each built-in program spends beyond a trivial ``return XDP_*``.
PROGRAM_COST: dict[str, float] = {
    "xdp_pass": 0.0,
    "xdp_drop": 0.0,
    "xdp_tx": 0.0,
    "xdp_aborted": 0.0,
    "xdp1": 3.0,  # parse + per-CPU array update (UNVERIFIED)
    "xdp2": 4.0,  # xdp1 + MAC swap
    "redirect": 2.0,
    "redirect_map": 3.0,
    "redirect_map_multi": 6.0,
    "redirect_cpu": 5.0,  # a 5-tuple hash and bpf_redirect_map (UNVERIFIED)
    "l4lb": 18.0,  # 5-tuple hash + two map lookups + rewrite (UNVERIFIED)
    "drop_port": 2.0,
}
USER_PROGRAM_COST = 5.0
# A real XDP object: its JITed instructions, per instruction run for the frame (a JITed BPF
# instruction is about one x86 instruction; ~3 per ns at 3 GHz with IPC ~1: UNVERIFIED), plus
# each helper call's own cost.
OBJECT_PROGRAM_COST = 0.0  # the per-frame cost is BPF_INSN_NS x the instructions that frame ran
BPF_INSN_NS = 0.35

# AF_XDP (net/xdp/xsk.c), UNVERIFIED estimates: a redirect to a socket costs the polling CPU the
# RX descriptor; copy mode adds a chunk allocation and the memcpy (~30 GB/s); every poll that
# received flushes once (xsk_flush: publish the RX producer, wake the reader).
XSK_RCV = 20.0  # __xsk_map_redirect, xskq_prod_reserve_desc
XSK_COPY = 25.0  # copy mode: xsk_buff_alloc from the fill ring, xdp_return_buff of the page
XSK_COPY_BYTE = 0.033  # copy mode: ns per byte copied into the chunk
XSK_FLUSH = 60.0  # per poll: xsk_flush (xskq_prod_submit, sock_def_readable)
