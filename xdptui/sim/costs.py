"""The cost model: simulated CPU nanoseconds for each piece of work on the XDP path.

One table per driver plus a few driver-independent entries. Numbers marked *fitted* were solved
from the seeds' benchmark tables so that the simulator reproduces them as ratios (``xdptui
reproduce``); the rest are estimates marked UNVERIFIED and only set relative speeds.

Fitted on the bond seed's single-device E810 rows (``seeds/bond-xdp.txt``, "without patch"):
one queue on one CPU gives XDP_DROP 48.6 Mpps (20.58 ns/frame all-in) and XDP_TX 18.3 Mpps
(54.64 ns/frame all-in). With a 100 ns poll overhead amortised over 64 frames (1.56 ns) that
leaves 19.0 ns for RX + a trivial program + page recycle, and 33.1 ns more for an XDP_TX
(descriptor write, its share of the doorbell and the completion clean-up).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriverCosts:
    rx_frame: float  # RX descriptor + running a trivial program (native)
    drop: float  # XDP_DROP: page recycled
    tx: float  # XDP_TX: frame onto the CPU's XDP TX ring + completion clean-up
    redirect: float  # xdp_do_redirect + bq_enqueue
    xmit_frame: float  # per frame handed to this driver's ndo_xdp_xmit
    poll: float  # per NAPI poll (napi->poll entry/exit, IRQ re-arm)
    flush: float  # per bulk-queue flush (ndo_xdp_xmit call + doorbell)
    build_skb: float  # XDP_PASS: build an skb around the buffer
    generic_rx: float  # generic XDP: skb alloc + netif_receive_generic_xdp, per frame


COSTS: dict[str, DriverCosts] = {
    "ice": DriverCosts(
        rx_frame=19.0,  # fitted: XDP_DROP 48.6 Mpps
        drop=0.0,
        tx=33.1,  # fitted: XDP_TX 18.3 Mpps
        redirect=22.0,  # UNVERIFIED until the devmap seed is fitted
        xmit_frame=14.0,  # UNVERIFIED
        poll=100.0,
        flush=80.0,  # UNVERIFIED
        build_skb=45.0,  # UNVERIFIED
        generic_rx=95.0,  # UNVERIFIED
    ),
    "i40e": DriverCosts(
        rx_frame=21.0,  # UNVERIFIED (to be fitted on the devmap seed's i40e rows)
        drop=0.0,
        tx=33.0,
        redirect=22.0,
        xmit_frame=14.0,
        poll=100.0,
        flush=80.0,
        build_skb=45.0,
        generic_rx=95.0,
    ),
    "ixgbe": DriverCosts(
        rx_frame=24.0,  # UNVERIFIED: 10G parts are rarely CPU bound at line rate
        drop=0.0,
        tx=36.0,
        redirect=24.0,
        xmit_frame=16.0,
        poll=110.0,
        flush=90.0,
        build_skb=45.0,
        generic_rx=95.0,
    ),
    "mlx5": DriverCosts(
        rx_frame=18.0,  # UNVERIFIED
        drop=0.0,
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
        drop=0.0,
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
        drop=0.0,
        tx=20.0,  # veth_xdp_tx bulk to the peer
        redirect=22.0,
        xmit_frame=18.0,  # veth_xdp_xmit: ptr_ring produce
        poll=90.0,
        flush=60.0,
        build_skb=45.0,
        generic_rx=95.0,
    ),
}

# Driver-independent costs (ns per frame unless said otherwise).
STACK_RX = 220.0  # XDP_PASS / no program: the frame climbs the stack to a sink (UNVERIFIED)
GENERIC_REDIRECT = 160.0  # xdp_do_generic_redirect: skb sent at once with generic_xdp_tx
GENERIC_TX = 140.0  # generic XDP_TX: generic_xdp_tx on the RX device
LOCK_UNCONTENDED = 6.0  # spin_lock/unlock of an XDP ring's tx_lock (ixgbe > 64 CPUs)
LOCK_PER_SHARER = 9.0  # extra cache-line bouncing per additional CPU sharing the ring
MASTER_REDIRECT = 15.0  # xdp_master_redirect: slave lookup + hash + compare (UNVERIFIED estimate;
# not fitted: the bond seed's bond rows are predictions from it)
STACK_TX = 300.0  # a local stack send (from: DEV), charged to nobody: pktgen-like pacing

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
    "l4lb": 18.0,  # 5-tuple hash + two map lookups + rewrite (UNVERIFIED)
    "drop_port": 2.0,
}
USER_PROGRAM_COST = 5.0
