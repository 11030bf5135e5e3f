"""The topology and redirect-paths view: every device as a box, every path frames take as an arrow.

Devmaps get a box listing their entries (key -> device, egress program). A device box holds,
in the order a frame meets them: the way in (``wire`` -> the RX ring for a
port, the peer for a veth, userspace writes for a tap) with the ring-full loss at that hop; one
arrow per verdict of the attached program that has ever fired (``XDP_TX`` to the device's own XDP
TX ring, ``XDP_REDIRECT`` to each target through the per-CPU bulk queue and the target's
``ndo_xdp_xmit``, ``XDP_PASS`` to the stack, ``XDP_DROP`` / ``XDP_ABORTED``); and the way out
(``tx_packets`` onto the wire, to the veth peer or to the tap's reader). Each arrow carries its
rate (a counter delta over simulated time) and its weight (how thick to draw it); losses hang
off the hop where the kernel counts them. A bond's box holds its slaves' boxes; a veth pair
shares one box.

Which kernel code decides the paths: the driver's RX loop runs the program (``ice_run_xdp``,
``ixgbe_run_xdp``, ``veth_xdp_rcv_one``, ``tun_xdp_act``); ``xdp_do_redirect`` ->
``__xdp_enqueue`` / ``bq_enqueue`` queues redirects, ``bq_xmit_all`` flushes them into the
target's ``ndo_xdp_xmit`` (``xdp:xdp_devmap_xmit``); a bond slave's XDP_TX becomes
``xdp_master_redirect`` -> ``bond_xdp_get_xmit_slave``.

Pure: frames in, frozen views out (no Textual, no engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import (
    CpumapKthreadView,
    DeviceView,
    Frame,
    PacketView,
    TraceHop,
    XskView,
)
from xdptui.widgets.format import format_count, format_pps, program_name
from xdptui.widgets.rates import RatesView, sum_rates


@dataclass(frozen=True)
class Loss:
    """Frames lost at a hop: what the kernel calls it, its rate and its total."""

    what: str
    rate: float | None
    total: int
    step: int | None = None  # since the frame before (one ``.``)


@dataclass(frozen=True)
class Arrow:
    """One path out of a hop."""

    label: str  # "wire", "XDP_TX", "XDP_REDIRECT", "TX"
    target: str  # where the frames go, in words
    target_dev: str | None  # the device they reach, if any (click to focus)
    rate: float | None  # frames per second, None without a previous frame
    total: int
    weight: int  # 0 idle, 1 trickle, 2 flowing, 3 heavy: the arrow's thickness
    note: str = ""
    losses: tuple[Loss, ...] = ()
    terminal: bool = False  # the path ends here on purpose (XDP_DROP, stack)
    step: int | None = None  # frames since the frame before (one ``.``: this poll's)


@dataclass(frozen=True)
class DeviceBox:
    """One device (or a veth pair: ``kind == "veth pair"``, the ends as children)."""

    name: str
    kind: str  # "nic/ice 100G", "bond", "veth", "tun/tap", "veth pair"
    state: str  # "up", "down", "no-carrier"; "" for a group
    program: str  # "l4lb native ⇐ bond0", "" without a program
    inbound: Arrow | None = None
    verdicts: tuple[Arrow, ...] = ()
    outbound: Arrow | None = None
    children: tuple[DeviceBox, ...] = ()
    notes: tuple[str, ...] = ()
    on_path: bool = False  # the followed packet passes through this device
    marked: bool = False  # the event selected in the event list concerns this device


@dataclass(frozen=True)
class FollowView:
    """A followed packet: which one, its hops with simulated timestamps, and its bytes."""

    label: str
    hops: tuple[TraceHop, ...]
    packet: PacketView | None = None


@dataclass(frozen=True)
class PathsView:
    boxes: tuple[DeviceBox, ...]
    focus: str | None = None
    follow: FollowView | None = None
    counting: bool = False  # exact mode: each arrow's total and this step's frames too


def weight_of(rate: float | None) -> int:
    """Arrow thickness from a rate: idle, under 100 Kpps, under 5 Mpps, more."""
    if not rate:
        return 0
    if rate < 100_000:
        return 1
    if rate < 5_000_000:
        return 2
    return 3


def _speed(bps: int) -> str:
    if bps >= 1_000_000_000 and bps % 1_000_000_000 == 0:
        return f"{bps // 1_000_000_000}G"
    if bps >= 1_000_000:
        return f"{bps / 1_000_000:g}M"
    return f"{bps}"


def _state(dev: DeviceView) -> str:
    return "down" if not dev.up else "up" if dev.carrier else "no-carrier"


def _source_lost(frame: Frame) -> dict[tuple[str, bool], int]:
    """Frames the traffic sources offered while their device was down, by (device, local)."""
    out: dict[tuple[str, bool], int] = {}
    for src in frame.sources:
        out[(src.device, src.local)] = out.get((src.device, src.local), 0) + src.lost
    return out


def project_paths(
    prev: Frame | None,
    frame: Frame,
    *,
    focus: str | None = None,
    follow: FollowView | None = None,
    rates: RatesView | None = None,
    marked: frozenset[str] = frozenset(),
) -> PathsView:
    """The boxes and arrows for ``frame``, rates from ``rates`` (default: against ``prev``)."""
    deltas = rates if rates is not None else RatesView(prev, frame)
    devices = {dev.name: dev for dev in frame.devices}
    on_path = {hop.dev for hop in follow.hops} if follow is not None else set()
    boxes: list[DeviceBox] = []
    grouped: set[str] = set()
    for dev in frame.devices:
        if dev.name in grouped or (dev.master is not None and dev.master in devices):
            continue
        peer = dev.veth.peer if dev.veth is not None else None
        if peer is not None and peer in devices and devices[peer].master is None:
            grouped |= {dev.name, peer}
            ends = (
                _box(dev, frame, deltas, devices, on_path, marked),
                _box(devices[peer], frame, deltas, devices, on_path, marked),
            )
            boxes.append(
                DeviceBox(
                    name=f"{dev.name} ⇄ {peer}",
                    kind="veth pair",
                    state="",
                    program="",
                    children=ends,
                    on_path=any(end.on_path for end in ends),
                )
            )
            continue
        boxes.append(_box(dev, frame, deltas, devices, on_path, marked))
    kthreads = {(k.map, k.cpu): k for k in frame.tracepoints.xdp_cpumap_kthread}
    for devmap in frame.maps:
        if devmap.type == "cpumap":
            notes = tuple(
                _kthread_note(e.key, e.qsize, e.egress, kthreads.get((devmap.name, e.key)), deltas)
                for e in devmap.entries
            )
        else:
            notes = tuple(
                f"key {e.key} → {e.dev}" + (f"  egress {e.egress}" if e.egress else "")
                for e in devmap.entries
            )
        boxes.append(
            DeviceBox(
                name=devmap.name,
                kind=f"{devmap.type} {len(devmap.entries)}/{devmap.max_entries} entries",
                state="",
                program="",
                notes=notes or ("empty",),
            )
        )
    boxes += [_xsk_box(x, deltas) for x in frame.xsks]
    return PathsView(boxes=tuple(boxes), focus=focus, follow=follow, counting=deltas.counting)


def _xsk_box(x: XskView, deltas: RatesView) -> DeviceBox:
    """An AF_XDP socket: its fill and RX rings now, its UMEM's chunks by owner, its reader."""
    fill, rx = x.ring("fill"), x.ring("rx")
    owners = dict(x.owners)
    umem = " ".join(f"{k} {format_count(owners[k])}" for k in ("fill", "rx", "kernel", "user"))
    read = deltas.tracepoint(("xsk", x.name, "read"), rx.consumer)
    reader = (
        f"reader {format_pps(x.reader_pps)} · reads {format_pps(read)}"
        if x.reader_pps
        else "no reader: nothing leaves the RX ring"
    )
    wake = " · fill ring NEED_WAKEUP" if x.rx_need_wakeup else ""
    caveat: tuple[str, ...] = ()
    if x.writer is not None:
        w, tx, comp = x.writer, x.ring("tx"), x.ring("comp")
        sent = deltas.tracepoint(("xsk", x.name, "tx_packets"), x.counter("tx_packets"))
        caveat += (
            f"TX {tx.entries}/{tx.size} · comp {comp.entries}/{comp.size} · UMEM tx "
            f"{format_count(owners['tx'])} comp {format_count(owners['comp'])}",
            f"writer {format_pps(w.offered_pps)}, {w.batch} a sendto · sends "
            f"{format_pps(sent)} · EAGAIN {format_count(w.eagain)} of "
            f"{format_count(w.kicks)} sendto · not written {format_count(w.not_written)}",
        )
    if x.mode == "zerocopy":  # said on screen, not only in the docs
        caveat += (
            "zero-copy: the driver's refill from the fill ring is not modelled; "
            "a dry fill ring shows as ENOMEM here, where the NIC would drop the queue's frames",
        )
    return DeviceBox(
        name=x.name,
        kind=f"AF_XDP socket, {x.mode}",
        state=f"{x.dev} q{x.queue}",
        program="",
        notes=(
            f"fill {fill.entries}/{fill.size} · RX {rx.entries}/{rx.size}{wake}",
            f"UMEM {x.frames}×{x.frame_size}: {umem}",
            reader,
            *caveat,
        ),
    )


def _kthread_note(
    key: int, qsize: int, prog: str | None, k: CpumapKthreadView | None, deltas: RatesView
) -> str:
    """One cpumap entry: its CPU's kthread, its ring and what it does (``cpu_map_kthread_run``)."""
    text = f"key {key} → cpu{key} kthread" + (f" · prog {prog}" if prog else "")
    if k is None:
        return text + f" · ring 0/{qsize}"
    r = deltas.tracepoint(("kthread", k.map, k.cpu, "processed"), k.processed)
    busy = deltas.tracepoint(("kthread", k.map, k.cpu, "busy_ns"), int(k.busy_ns))
    share = f" · busy {busy / 1e9:.0%}" if busy is not None else ""
    return text + f" · ring {k.ring}/{qsize} · {format_pps(r)}{share}"


class _Counters:
    """One device's counters with their rates: arrows and losses read from them."""

    def __init__(self, dev: DeviceView, deltas: RatesView) -> None:
        self.dev = dev
        self.values = dict(dev.counters)
        self.deltas = deltas

    def get(self, name: str) -> int:
        return self.values.get(name, 0)

    def rate(self, name: str) -> float | None:
        return self.deltas.counter(self.dev.name, name, self.get(name))

    def arrow(
        self,
        label: str,
        counter: str,
        target: str,
        target_dev: str | None = None,
        *,
        note: str = "",
        losses: tuple[Loss, ...] = (),
        terminal: bool = False,
    ) -> Arrow:
        r = self.rate(counter)
        total = self.get(counter)
        step = self.deltas.step(self.dev.name, counter, total)
        return Arrow(
            label, target, target_dev, r, total, weight_of(r), note, losses, terminal, step
        )

    def loss(self, what: str, counter: str) -> tuple[Loss, ...]:
        """The loss counted in ``counter``, if it ever happened."""
        total = self.get(counter)
        if not total:
            return ()
        return (
            Loss(what, self.rate(counter), total, self.deltas.step(self.dev.name, counter, total)),
        )

    def link_down(self, frame: Frame, *, local: bool) -> tuple[Loss, ...]:
        """Frames a source offered while this device was down (``SourceView.lost``): they
        never reach the ring, so they are counted at the wire (or the sending stack)."""
        total = _source_lost(frame).get((self.dev.name, local), 0)
        if not total:
            return ()
        per_s = sum_rates(
            self.deltas.tracepoint(("source", src.name, "lost"), src.lost)
            for src in frame.sources
            if src.device == self.dev.name and src.local == local
        )
        return (Loss("lost: link down", per_s, total),)

    def writes(self, frame: Frame, label: str, target: str) -> Arrow:
        """What the tap's writers wrote (their sources' frames, but those offered while it
        was down, which are the arrow's loss)."""
        name = self.dev.name
        srcs = [s for s in frame.sources if s.device == name and not s.local]
        total = sum(s.emitted - s.lost for s in srcs)
        per_s = sum_rates(
            None if e is None or lost is None else e - lost
            for s in srcs
            for e, lost in [
                (
                    self.deltas.tracepoint(("source", s.name, "emitted"), s.emitted),
                    self.deltas.tracepoint(("source", s.name, "lost"), s.lost),
                )
            ]
        )
        losses = self.link_down(frame, local=False)
        steps = [
            self.deltas.step_tracepoint(("source", s.name, "emitted"), s.emitted) for s in srcs
        ] + [-(self.deltas.step_tracepoint(("source", s.name, "lost"), s.lost) or 0) for s in srcs]
        step = None if self.deltas.last is None else max(0, sum(n or 0 for n in steps))
        return Arrow(label, target, None, per_s, total, weight_of(per_s), losses=losses, step=step)

    def bond_arrow(self, label: str, key: str, total: int, target: str) -> Arrow:
        """One of a bond's own paths: ``rx_up``, ``stack_down`` or ``xdp_down`` (what
        ``bond_xdp_xmit`` handed down: ``tx_down`` less ``stack_down``)."""
        name = self.dev.name
        info = self.dev.bond
        assert info is not None
        d = self.deltas
        if key == "xdp_down":
            down = d.tracepoint(("bond", name, "tx_down"), info.tx_down)
            stack = d.tracepoint(("bond", name, "stack_down"), info.stack_down)
            r = None if down is None or stack is None else max(0.0, down - stack)
            step_down = d.step_tracepoint(("bond", name, "tx_down"), info.tx_down)
            step_stack = d.step_tracepoint(("bond", name, "stack_down"), info.stack_down)
            step = None if step_down is None else max(0, step_down - (step_stack or 0))
        else:
            r = d.tracepoint(("bond", name, key), total)
            step = d.step_tracepoint(("bond", name, key), total)
        return Arrow(
            label, target, None, r, total, weight_of(r), terminal=key == "rx_up", step=step
        )

    def xmit_note(self) -> str:
        """Frames other devices handed to this one's ``ndo_xdp_xmit``, part of its TX."""
        if not self.get("xdp_xmit"):
            return ""
        return f"incl. ndo_xdp_xmit {format_pps(self.rate('xdp_xmit'))}"


def _box(
    dev: DeviceView,
    frame: Frame,
    deltas: RatesView,
    devices: dict[str, DeviceView],
    on_path: set[str],
    marked: frozenset[str] = frozenset(),
) -> DeviceBox:
    c = _Counters(dev, deltas)
    kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
    if dev.type == "nic":
        kind += f" {_speed(dev.speed_bps)}"
    program = ""
    if dev.xdp is not None:
        program = f"{program_name(dev.xdp.program)} {dev.xdp.mode}"
        if dev.xdp.inherited_from:
            program += f" ⇐ {dev.xdp.inherited_from}"

    inbound: Arrow | None = None
    outbound: Arrow | None = None
    bond_verdicts: tuple[Arrow, ...] = ()
    notes: list[str] = []
    children: tuple[DeviceBox, ...] = ()
    ring_full = c.link_down(frame, local=False) + c.loss("ring full (rx_dropped)", "rx_dropped")
    xmit_losses = c.link_down(frame, local=True) + c.loss(
        "ndo_xdp_xmit refused (xdp_xmit_errors)", "xdp_xmit_errors"
    )
    if dev.type == "nic":
        queues = f"RX q0-{len(dev.queues) - 1}" if len(dev.queues) > 1 else "RX q0"
        # (the card's DMA fell behind: missed before any ring, ``rx_missed_errors``)
        missed = c.loss("NIC limit, missed (rx_missed_errors)", "rx_missed_errors")
        inbound = c.arrow("wire", "rx_packets", queues, losses=missed + ring_full)
        outbound = c.arrow(
            "TX",
            "tx_packets",
            "wire",
            note=c.xmit_note(),
            losses=xmit_losses + c.loss("tx_dropped", "tx_dropped"),
        )
    elif dev.type == "veth":
        peer = dev.veth.peer if dev.veth is not None else "peer"
        # veth_get_stats64: rx_dropped is what the peer's XDP_TX or an ndo_xdp_xmit into the
        # peer could not put on this end's ring -- full, or no NAPI here without a native
        # program (-ENXIO); without one, also the skbs its backlog refused
        # (enqueue_to_backlog) and those generic XDP sent while it was down
        # (__dev_forward_skb2)
        why = (
            "ring full (rx_dropped)"
            if dev.xdp is not None and dev.xdp.mode == "native"
            else "no XDP here, backlog full or down (rx_dropped)"
        )
        refused = c.link_down(frame, local=False) + c.loss(why, "rx_dropped")
        inbound = c.arrow(f"{peer} TX", "rx_packets", "RX", peer, losses=refused)
        writers = [x.name for x in frame.xsks if x.dev == dev.name and x.writer is not None]
        outbound = c.arrow(
            "TX",
            "tx_packets",
            f"{peer} RX",
            peer,
            note=" ".join(
                [c.xmit_note()] * bool(c.xmit_note())
                + [f"from {w}'s TX ring (sendto)" for w in writers]
            ),
            # (veth_get_stats64: tx_dropped holds the refusals above, not more of them)
            losses=xmit_losses + c.loss("tx_dropped (these included)", "tx_dropped"),
        )
    elif dev.type == "tun":
        # A write is the writer's own syscall (tun_get_user), not a NAPI poll: what the
        # writer wrote, whatever the program then did (tun_xdp_act leaves rx_packets at 0
        # for XDP_DROP).
        writer = "vhost write" if dev.tap is not None and dev.tap.writer == "vhost" else None
        if any(s.device == dev.name and not s.local for s in frame.sources):
            inbound = c.writes(frame, writer or "userspace write", "tun_get_user")
        if c.get("rx_dropped"):
            # tun_xdp_act counts its drops here: XDP_DROP, XDP_ABORTED and an XDP_TX or
            # redirect that failed -- the verdict arrows below, not a second loss.
            notes.append(
                f"rx_dropped {format_count(c.get('rx_dropped'))} (tun_xdp_act: the program's"
                " drops and failed XDP_TX/REDIRECT, drawn below)"
            )
        if c.get("xdp_fast_path") or c.get("xdp_generic_path"):
            notes.append(
                f"fast path (tun_build_skb) {format_pps(c.rate('xdp_fast_path'))} · "
                f"generic path (do_xdp_generic) {format_pps(c.rate('xdp_generic_path'))}"
            )
        outbound = c.arrow(
            "TX",
            "tx_packets",
            "reader (tun_do_read)",
            note=c.xmit_note(),
            losses=c.loss("ring full (tx_dropped)", "tx_dropped"),
        )
    elif dev.bond is not None:
        mode = dev.bond.mode
        policy = dev.bond.xmit_hash_policy
        active = dev.bond.active_slave or ""
        usable = " ".join(dev.bond.usable_slaves)
        notes.append(f"mode {mode}" + (f" · xmit_hash_policy {policy}" if policy else ""))
        notes.append(f"active {active or '-'} · usable {usable or 'none'}")
        # A bond's rx_packets/tx_packets are its slaves' sums (bond_get_stats), whatever the
        # slaves' programs did: the bond's own paths are what went up through it (rx_up),
        # the skbs it sent down (bond_start_xmit) and the frames redirected into it
        # (bond_xdp_xmit), each drawn once it ever carried any.
        info = dev.bond
        if info.rx_up:
            inbound = c.bond_arrow("slaves", "rx_up", info.rx_up, "stack (delivered up)")
        if info.tx_down - info.stack_down:
            xmit = c.bond_arrow(
                "ndo_xdp_xmit",
                "xdp_down",
                info.tx_down - info.stack_down,
                "slaves (bond_xdp_xmit)",
            )
            bond_verdicts = (xmit,)
        if info.stack_down:
            outbound = c.bond_arrow(
                "stack", "stack_down", info.stack_down, "slaves (bond_start_xmit)"
            )
        children = tuple(
            _box(devices[name], frame, deltas, devices, on_path, marked)
            for name in dev.bond.slaves
            if name in devices
        )

    verdicts = _verdicts(c, frame, deltas, devices) if dev.queues else bond_verdicts
    return DeviceBox(
        name=dev.name,
        kind=kind,
        state=_state(dev),
        program=program,
        inbound=inbound,
        verdicts=verdicts,
        outbound=outbound,
        children=children,
        notes=tuple(notes),
        on_path=dev.name in on_path or any(child.on_path for child in children),
        marked=dev.name in marked,
    )


def _verdicts(
    c: _Counters, frame: Frame, deltas: RatesView, devices: dict[str, DeviceView]
) -> tuple[Arrow, ...]:
    dev = c.dev
    tp = frame.tracepoints
    out: list[Arrow] = []
    if c.get("xdp_tx") or c.get("xdp_tx_errors"):
        peer = dev.veth.peer if dev.veth is not None else None
        if peer:
            # veth_xdp_tx -> veth_xdp_xmit: the frame goes into the peer's NAPI ring, which
            # only exists while the peer runs a program of its own.
            target, target_dev, why = f"{peer} RX (veth_xdp_xmit)", peer, "peer refused"
        elif dev.type == "tun":
            target, target_dev, why = "reader (tun_xdp_xmit)", dev.name, "ring full"
        else:
            target, target_dev, why = f"{dev.name} XDP TX ring", dev.name, "TX ring full"
        out.append(
            c.arrow(
                "XDP_TX",
                "xdp_tx",
                target,
                target_dev,
                losses=c.loss(f"{why} (xdp_tx_errors)", "xdp_tx_errors"),
            )
        )
    targets = [d for d in tp.xdp_devmap_xmit if d.from_dev == dev.name]
    errors = [e for e in tp.xdp_redirect_err if e.dev == dev.name and e.count]
    if c.get("xdp_redirect") or targets or errors:
        for d in targets:
            # The arrow is every frame redirected to this target (what entered its bulk
            # queues, REDIR on Devices); the ✗ lines under it say what of it was lost.
            sent_r = deltas.devmap(d.from_dev, d.to_dev, "sent", d.sent)
            drop_r = deltas.devmap(d.from_dev, d.to_dev, "drops", d.drops)
            r = None if sent_r is None or drop_r is None else sent_r + drop_r
            bond = _shared_master(dev, devices.get(d.to_dev))
            via = f"via {bond} xdp_master_redirect · " if bond else ""
            bulk = deltas.bulk_avg(d.from_dev, d.to_dev, d.sent, d.drops, d.flushes)
            key = ("devmap", d.from_dev, d.to_dev)
            sent_step = deltas.step_tracepoint((*key, "sent"), d.sent)
            drop_step = deltas.step_tracepoint((*key, "drops"), d.drops)
            step = None if sent_step is None else sent_step + (drop_step or 0)
            egress = sorted(
                {
                    bq.program
                    for bq in frame.bulk_queues
                    if bq.from_dev == dev.name and bq.to_dev == d.to_dev and bq.program
                }
            )
            note = via + (f"bulk-avg {bulk:.1f}" if bulk is not None else "")
            if egress:
                note += f" · egress {', '.join(egress)} (runs on the bulk at flush)"
            # bq_xmit_all counts both as drops: frames the egress program did not pass, and
            # frames the target's ndo_xdp_xmit did not take.
            losses: tuple[Loss, ...] = ()
            if d.egress_drops:
                by = f"egress {egress[0]}" if egress else "the egress program"
                egress_r = deltas.devmap(d.from_dev, d.to_dev, "egress_drops", d.egress_drops)
                losses += (
                    Loss(f"dropped by {by} at flush (devmap_xmit drops)", egress_r, d.egress_drops),
                )
            not_taken = d.drops - d.egress_drops
            if not_taken:
                egress_r = deltas.devmap(d.from_dev, d.to_dev, "egress_drops", d.egress_drops)
                not_taken_r = (
                    None if drop_r is None or egress_r is None else max(0.0, drop_r - egress_r)
                )
                losses += (
                    Loss("ndo_xdp_xmit refused (devmap_xmit drops)", not_taken_r, not_taken),
                )
            to = devices.get(d.to_dev)
            ndo = "bond_xdp_xmit" if to is not None and to.type == "bond" else "ndo_xdp_xmit"
            out.append(
                Arrow(
                    "XDP_REDIRECT",
                    f"{d.to_dev} bq → {ndo}",
                    d.to_dev,
                    r,
                    d.sent + d.drops,
                    weight_of(r),
                    note,
                    losses,
                    step=step,
                )
            )
        # bpf_redirect_map into a cpumap: what this device's frames enqueued toward each CPU
        by_target = [f for f in tp.cpumap_from_dev if f.dev == dev.name]
        for f in by_target:
            r = deltas.tracepoint(("cpumap_dev", f.map, f.dev, f.to_cpu, "processed"), f.processed)
            lost = deltas.tracepoint(("cpumap_dev", f.map, f.dev, f.to_cpu, "drops"), f.drops)
            why = "ptr_ring full (cpumap_enqueue drops)"
            losses = (Loss(why, lost, f.drops),) if f.drops else ()
            note = f"{f.map} · bulk-avg {f.processed / f.hits:.1f}" if f.hits else f.map
            out.append(
                Arrow(
                    "XDP_REDIRECT",
                    f"cpu{f.to_cpu} kthread (ptr_ring)",
                    None,
                    r,
                    f.processed,
                    weight_of(r),
                    note,
                    losses,
                )
            )
        # AF_XDP: xsk_rcv into each socket bound to one of this device's queues
        socks = [x for x in frame.xsks if x.dev == dev.name]
        for x in socks:
            out.append(_xsk_arrow(x, deltas))
        xsk_errs = {"ENOMEM", "ENOBUFS"} if socks else set()
        errors = [e for e in errors if e.err not in xsk_errs]
        if errors or not (targets or by_target or socks):
            refused = tuple(
                Loss(
                    f"{e.err} (xdp_redirect_err)",
                    deltas.tracepoint(("redirect_err", e.dev, e.err), e.count),
                    e.count,
                )
                for e in errors
            )
            target = "refused" if errors and not targets else "redirect target"
            out.append(c.arrow("XDP_REDIRECT", "xdp_redirect", target, losses=refused))
    if c.get("xdp_pass"):
        out.append(c.arrow("XDP_PASS", "xdp_pass", "stack (netif_receive_skb)", terminal=True))
    if c.get("xdp_drop"):
        out.append(c.arrow("XDP_DROP", "xdp_drop", "dropped by the program", terminal=True))
    if c.get("xdp_aborted"):
        out.append(
            c.arrow(
                "XDP_ABORTED",
                "xdp_aborted",
                "dropped",
                losses=c.loss("xdp_exception", "xdp_aborted"),
                terminal=True,
            )
        )
    return tuple(out)


def _xsk_arrow(x: XskView, deltas: RatesView) -> Arrow:
    """Frames redirected to an AF_XDP socket: what its RX ring took, and what was lost for
    want of a fill descriptor (ENOMEM) or of room in the RX ring (ENOBUFS)."""

    def rate(name: str) -> float | None:
        return deltas.tracepoint(("xsk", x.name, name), x.counter(name))

    got, empty, full = (x.counter(n) for n in XSK_LOSSES)
    r = sum_rates(rate(n) for n in XSK_LOSSES)
    losses: tuple[Loss, ...] = ()
    if empty:
        what = "fill ring empty: ENOMEM"
        losses += (Loss(what, rate(XSK_LOSSES[1]), empty),)
    if full:
        losses += (Loss("RX ring full: ENOBUFS", rate(XSK_LOSSES[2]), full),)
    reader = format_pps(x.reader_pps) if x.reader_pps else "no reader"
    note = f"q{x.queue} · {x.mode} · reader {reader}"
    steps = [deltas.step_tracepoint(("xsk", x.name, n), x.counter(n)) for n in XSK_LOSSES]
    return Arrow(
        "XDP_REDIRECT",
        f"{x.name} RX ring (AF_XDP)",
        None,
        r,
        got + empty + full,
        weight_of(r),
        note,
        losses,
        step=None if any(v is None for v in steps) else sum(v or 0 for v in steps),
    )


XSK_LOSSES = ("rx_packets", "rx_fill_ring_empty_descs", "rx_ring_full")


def _shared_master(dev: DeviceView, target: DeviceView | None) -> str | None:
    if target is None or dev.master is None or dev.master != target.master:
        return None
    return dev.master
