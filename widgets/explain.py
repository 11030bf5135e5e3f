"""One-line causes and fixes for every kind of drop the drops panel lists.

Each function takes what the row knows (device, queue, CPU, action, errno, from->to) and says why
the kernel dropped the frames there and what an operator would change. Pure: the projection puts
the explanation into the row's view, the panel shows the selected one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Explanation:
    cause: str
    fix: str


NONE = Explanation("", "")


@dataclass(frozen=True)
class BondTarget:
    """What a bond's ``bond_xdp_xmit`` depends on: its mode, active slave and MII period."""

    mode: str
    active_slave: str | None
    miimon_ms: int


def ring_full(dev: str, queue: int, cpu: int) -> Explanation:
    """``rx_dropped``: the NIC found no free descriptor in the RX ring."""
    return Explanation(
        f"frames reach {dev} queue {queue} faster than NAPI on cpu{cpu} frees descriptors "
        "(napi_poll cleans up to 64 per poll): the ring is full and the NIC drops",
        f"spread flows over more queues (ethtool -L {dev} combined N), a deeper ring "
        f"(ethtool -G {dev} rx 4096), a cheaper program, or an idle CPU for the IRQ",
    )


def missed(dev: str, card: str = "") -> Explanation:
    """``rx_missed_errors``: the NIC itself could not take the frame (its DMA / PCIe budget,
    ``ice_update_vsi_stats``: port-level discards) -- before any ring or CPU saw it."""
    shared = f" (shared by every port of card {card})" if card else ""
    return Explanation(
        f"{dev}'s NIC could not move the frame into host memory: its own packet-rate limit "
        f"(DMA / PCIe budget{shared}) is below the offered rate. The rings were not full and "
        "no CPU was involved: ip -s link counts these as missed (rx_missed_errors), not as "
        "rx_dropped",
        "more queues or CPUs will not help; send less to this port, spread the load over "
        "ports of other cards, or use larger frames (the limit is per frame, not per byte)",
    )


_EXCEPTIONS: dict[str, Explanation] = {
    "XDP_ABORTED": Explanation(
        "the program returned XDP_ABORTED (or a code bpf_warn_invalid_xdp_action rejects); "
        "the driver drops the frame and fires xdp:xdp_exception. With redirect_map this is "
        "what a devmap miss returns: bpf_redirect_map found no entry for the key and returned "
        "its fallback verdict (the flags' low bits, XDP_ABORTED by default) -- no "
        "xdp_redirect tracepoint fires, the frames just vanish here",
        "add the missing devmap entry (bpftool map update name MAP key K value DEV), give "
        "the program a fallback (param flags=2 for XDP_PASS), or fix its error path",
    ),
    "XDP_TX": Explanation(
        "XDP_TX could not be queued: the XDP TX ring was full or the port is down (a veth "
        "reports its failures as xdp:xdp_bulk_tx instead)",
        "a bigger TX ring (ethtool -G DEV tx N) or less TX load",
    ),
    "XDP_REDIRECT": Explanation(
        "xdp_do_redirect failed in the driver; xdp:xdp_redirect_err names the errno",
        "see the redirect_err rows for the reason",
    ),
}


def exception(action: str) -> Explanation:
    """``xdp:xdp_exception`` with ``act``: the driver could not carry out the verdict."""
    return _EXCEPTIONS.get(
        action,
        Explanation(
            f"the program returned {action}, which is no XDP action: "
            "bpf_warn_invalid_xdp_action treats it as XDP_ABORTED",
            "return one of XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT",
        ),
    )


def cpumap_enqueue(name: str, cpu: int, to_cpu: int) -> Explanation:
    """``xdp:xdp_cpumap_enqueue`` drops: ``bq_flush_to_queue`` found the entry's ptr_ring
    full."""
    return Explanation(
        f"cpu {to_cpu}'s kthread did not keep up: its ptr_ring ({name} key {to_cpu}) was full "
        f"when cpu {cpu} flushed its bulk queue, and bq_flush_to_queue dropped the rest",
        f"spread over more CPUs (bpf_redirect_map with other keys), a bigger qsize for bursts, "
        f"or an entry program that drops early: bpftool map update name {name} key {to_cpu} "
        "value qsize N prog xdp_drop",
    )


def cpumap_program(name: str, cpu: int, prog: str | None) -> Explanation:
    """The entry program's XDP_DROP on the kthread (``cpu_map_bpf_prog_run_xdp``)."""
    return Explanation(
        f"{prog or 'the entry program'} on {name} key {cpu} returned XDP_DROP in cpu {cpu}'s "
        "kthread: dropped before an skb was built (xdp:xdp_cpumap_kthread xdp_drop)",
        "intended: the program's choice",
    )


def bulk_tx(err: str, dev: str, peer: str | None) -> Explanation:
    """``xdp:xdp_bulk_tx`` with drops: a veth's XDP_TX bulk ``veth_xdp_flush_bq`` could not
    hand to the peer -- refused with ``err`` (-ENXIO: the peer has no NAPI, i.e. no XDP
    program or it is down) or cut short by the peer's full ``ptr_ring`` (no error)."""
    other = peer or "the peer"
    if err:
        return Explanation(
            f"{dev}'s XDP_TX bulk goes to {other} through veth_xdp_xmit, which refuses all of it "
            f"({err}) while {other} runs no XDP program or is down: every frame is dropped "
            f"({dev} tx_dropped, {other} rx_dropped)",
            f"attach a program to {other}: ip link set dev {other} xdp obj xdp_pass",
        )
    return Explanation(
        f"{other}'s receive ring (256 frames) was full when {dev} flushed its XDP_TX bulk",
        f"a cheaper program on {other}, or less traffic bounced back",
    )


_REDIRECT_ERRORS: dict[str, Explanation] = {
    "ENETDOWN": Explanation(
        "the redirect target is down (__xdp_enqueue / xdp_ok_fwd_dev check IFF_UP)",
        "bring it up (ip link set dev TARGET up) or redirect elsewhere",
    ),
    "EOPNOTSUPP": Explanation(
        "the target has no ndo_xdp_xmit now: ixgbe, i40e and ice only while they run a "
        "program, a veth only while its peer runs one (NETDEV_XDP_ACT_NDO_XMIT)",
        "attach a program to the target: ip link set dev TARGET xdp obj xdp_pass",
    ),
    "EMSGSIZE": Explanation(
        "the frame is longer than the target's MTU allows (xdp_ok_fwd_dev)",
        "raise the target's MTU or send smaller frames",
    ),
    "EINVAL": Explanation(
        "no device has the ifindex the program redirects to, the flags are invalid, or the "
        "AF_XDP socket at the key is bound to another device or queue (xsk_rcv_check)",
        "check the program's target (param dev=NAME), or bind one socket per queue",
    ),
    "ENOMEM": Explanation(
        "an AF_XDP socket's fill ring was empty: no UMEM chunk to copy the frame into "
        "(xsk_buff_alloc; rx_dropped and rx_fill_ring_empty_descs count it)",
        "a faster reader (reader SOCK rate R) that gives chunks back to the fill ring sooner",
    ),
    "ENOBUFS": Explanation(
        "an AF_XDP socket's RX ring was full (xskq_prod_reserve_desc; rx_ring_full)",
        "a faster reader, or a bigger RX ring (rx:) with enough UMEM chunks to fill it",
    ),
    "ENOSPC": Explanation(
        "the frame is longer than an AF_XDP socket's chunk holds (frame_size less 256 bytes "
        "of headroom; xsk_rcv_check counts it in rx_dropped)",
        "frame_size: 4096, or smaller frames",
    ),
    "ENXIO": Explanation(
        "the devmap has no entry at the key the program looked up",
        "bpftool map update name MAP key K value DEV",
    ),
    "ENOENT": Explanation(
        "the devmap has no entry at the key the program looked up",
        "bpftool map update name MAP key K value DEV",
    ),
}


def redirect_err(errno: str) -> Explanation:
    """``xdp:xdp_redirect_err`` with ``err``: the redirect was refused before queueing."""
    return _REDIRECT_ERRORS.get(
        errno,
        Explanation(f"the kernel refused the redirect with {errno}", "see the event log"),
    )


def devmap_xmit(
    from_dev: str,
    to_dev: str,
    drops: int,
    err: int,
    bulk: float | None,
    egress_drops: int = 0,
    egress: str | None = None,
    bond: BondTarget | None = None,
) -> Explanation:
    """``xdp:xdp_devmap_xmit``: one hit per bulk flush (``bq_xmit_all``) from one device to one
    target (``bond``: the target is a bond, what its slave choice depends on)."""
    if egress_drops and egress_drops >= drops - egress_drops:
        prog = egress or "the devmap entry's egress program"
        return Explanation(
            f"{prog} ran on each bulk toward {to_dev} at flush (dev_map_bpf_prog_run) and did "
            f"not return XDP_PASS for {egress_drops} frames; bq_xmit_all counts them as drops "
            "(the egress program of the entry that enqueued first decides for the whole bulk)",
            "give the devmap entry another egress program (bpftool map update ... egress "
            "xdp_pass) or none",
        )
    if bond is not None and (err or drops):
        return bond_xmit(from_dev, to_dev, err, bond)
    if err:
        return Explanation(
            f"{to_dev}'s ndo_xdp_xmit returned an error for whole bulks (drv_err): it was "
            "down or lost its XDP support while frames were queued",
            f"keep {to_dev} up with a program attached while {from_dev} redirects to it",
        )
    if drops:
        return Explanation(
            f"{to_dev}'s ndo_xdp_xmit took fewer frames than the bulk queue held (its XDP TX "
            "ring was full); bq_xmit_all counts the rest as drops and frees them",
            f"more TX ring room on {to_dev} (ethtool -G {to_dev} tx N), less load, or spread it",
        )
    avg = f"{bulk:.1f}" if bulk is not None else "-"
    return Explanation(
        f"bq_enqueue holds redirected frames per CPU, up to 16 (DEV_MAP_BULK_SIZE); "
        f"xdp_do_flush sends them at the end of each NAPI poll: bulk-avg {avg} frames per "
        "flush",
        "nothing to fix: a low bulk-avg means light polls, 16 a saturated CPU",
    )


def bond_xmit(from_dev: str, to_dev: str, err: int, bond: BondTarget) -> Explanation:
    """Drops of bulks into a bond: ``bond_xdp_xmit`` hands each frame alone to the slave
    ``bond_xdp_get_xmit_slave`` picks and stops at the first one refused; ``bq_xmit_all`` frees
    the rest (all of it, and a flush error, when the first frame failed)."""
    picked = (
        f"the active slave ({bond.active_slave})"
        if bond.mode == "active-backup" and bond.active_slave
        else "the slave bond_xdp_get_xmit_slave picked"
    )
    where = "the first frame of whole bulks (drv_err)" if err else "a frame within the bulk"
    cause = (
        f"{to_dev}'s bond_xdp_xmit handed {where} to {picked}, whose ndo_xdp_xmit refused it "
        "(a slave that is down answers ENETDOWN); the bond stops at that frame and "
        f"bq_xmit_all frees the rest of the bulk from {from_dev}"
    )
    if bond.miimon_ms:
        fix = (
            f"{to_dev} moves to a working slave at its next MII tick (miimon "
            f"{bond.miimon_ms}ms); a shorter miimon shortens the loss"
        )
    else:
        fix = f"{to_dev} has no MII monitoring (miimon 0): it never fails over; set miimon"
    return Explanation(cause, fix)
