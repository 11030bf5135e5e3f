"""The core of the XDP data path (``net/core/dev.c``, ``net/core/filter.c``,
``kernel/bpf/devmap.c``), shared by both modes.

``napi_poll`` is a driver's receive loop for a batch of polls on one CPU: rows of frames meet
the program's verdicts (compiled per entry, ``xdptui.sim.core.filter``) and follow them --
XDP_DROP, XDP_PASS up the stack (through a bond master), XDP_ABORTED, XDP_TX by the driver's
rule (or ``xdp_master_redirect`` on a bond slave), XDP_REDIRECT through ``xdp_do_redirect``
into the per-CPU bulk queue of its target, sent at 16 frames and at the end of the poll
(``xdp_do_flush``) with the first enqueuer's egress program. Where frames land (a TX ring, a
veth peer's receive queue) is the mode's I/O (``io``): exact mode moves descriptors, fast mode
claims slots that are settled at the end of a step. What a refused frame counts is decided
here, once, for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.bond.bond_main import Bond, BondLogic
from xdptui.sim.core.filter import (
    BROADCAST,
    RR_CLASS,
    TX_ABORT,
    TX_HERE,
    TX_RR,
    Compiled,
    compile_device,
    enqueue_errors,
    make_context,
)
from xdptui.sim.dev.netdev import MODE_DRV, MODE_SKB, NetDev
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.kconst import (
    BPF_F_EXCLUDE_INGRESS,
    DEV_MAP_BULK_SIZE,
    XDP_ABORTED,
    XDP_DROP,
    XDP_PASS,
    XDP_TX,
    action_name,
    max_fwd_len,
)
from xdptui.sim.programs import Program
from xdptui.sim.tally import CpuStats, Tracepoints, XmitTally
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]


@dataclass
class Xmit:
    """One ``ndo_xdp_xmit``'s worth of frames (fast mode: a step's bulks toward one target)."""

    src: NetDev  # the ingress device (bq->dev_rx)
    dst: NetDev
    cpu: int
    t: int
    rows: Rows
    calls: int  # ndo_xdp_xmit calls behind these frames
    tally: XmitTally
    sent: int = 0
    bursts: int = 1  # the interrupts whose polls made those calls (fast mode: a step's)
    parent: Xmit | None = None  # a bond's bond_xdp_xmit that handed these on to a slave

    def add_sent(self, n: int) -> None:
        x: Xmit | None = self
        while x is not None:
            x.sent += n
            x = x.parent


@dataclass
class Refusal:
    """How frames a ring could not take are counted: ``tx`` (XDP_TX), ``xmit``
    (``ndo_xdp_xmit``), ``gtx`` (generic XDP's ``generic_xdp_tx``), ``stack`` (local TX),
    ``veth_skb`` (``veth_xmit``)."""

    kind: str
    src: NetDev
    xmit: Xmit | None = None


@dataclass
class Flush:
    """One ``bq_xmit_all`` (exact mode), for the event stream."""

    cpu: int
    src: str
    dst: str
    frames: int
    sent: int
    drops: int
    egress: str | None
    reason: str  # full | poll_end
    egress_drops: int = 0


@dataclass
class PollOutcome:
    frames: int
    cost_ns: float
    verdicts: dict[str, int] = field(default_factory=dict)
    flushes: list[Flush] = field(default_factory=list)


class IO(Protocol):
    """Where frames land, as each mode keeps rings."""

    def tx(self, ring_dev: NetDev, ring: TxRing, rows: Rows, t: int, ref: Refusal) -> int: ...

    def rx(self, dev: NetDev, rxq: RxQueue, rows: Rows, t: int, cpu: int, ref: Refusal) -> int: ...


class Datapath:
    """Compiled paths, tracepoint tallies and the rules every frame follows."""

    def __init__(self, world: World, io: IO) -> None:
        self.world = world
        self.io = io
        self.tp = Tracepoints()
        self.cpu = CpuStats.make(world.nr_cpus)
        self.compiled: dict[str, Compiled] = {}
        self.compiled_epoch = -1
        self.master_key = False
        self._egress: dict[tuple[int, str, str], IntArray] = {}
        self._err: dict[tuple[str, int, str], IntArray] = {}
        self.watch: int | None = None  # a followed frame's identity (exact mode)
        self.hops: list[tuple[int, str, str, str]] = []
        self.watch_done = False

    # ------------------------------------------------------------ following one frame

    def watched(self, rows: Rows) -> bool:
        """Do ``rows`` hold the followed frame."""
        return (
            self.watch is not None
            and rows.ident is not None
            and bool(np.any(rows.ident == self.watch))
        )

    def hop(self, t: int, dev: str, stage: str, detail: str, end: bool = False) -> None:
        """Record a hop of the followed frame; ``end``: its journey is over."""
        if self.watch_done:
            return
        self.hops.append((t, dev, stage, detail))
        if end:
            self.watch_done = True
            self.watch = None

    # ------------------------------------------------------------ compile

    def compile(self) -> None:
        """Recompute every device's per-entry paths if the configuration changed."""
        w = self.world
        if self.compiled_epoch == w.epoch:
            return
        self.master_key = any(isinstance(d, Bond) and d.bond_prog for d in w.devices.values())
        self._egress = {}
        self._err = {}
        for dev in w.devices.values():
            if isinstance(dev, Bond):
                BondLogic(dev, w.devices).update_slave_arr()
        self.compiled = {dev.name: compile_device(self, dev) for dev in w.devices.values()}
        self.compiled_epoch = w.epoch

    # ------------------------------------------------------------ the poll

    def napi_poll(
        self, dev: NetDev, queue: int, cpu: int, t: int, rows: Rows, shape: PollShape
    ) -> PollOutcome:
        """The driver's receive loop (``*_clean_rx_irq`` / ``veth_xdp_rcv`` /
        ``tun_get_user``) over ``rows``, standing for ``shape.polls`` polls on ``cpu``."""
        e = self.world.entries
        d = dev.costs()
        out = PollOutcome(rows.total, shape.polls * d.poll)
        self.cpu.polls[cpu] += shape.polls
        if not rows.total:
            return out
        c = self.compiled[dev.name]
        dev.add("rx_packets", rows.total)
        dev.add("rx_bytes", rows.bytes(e.size))
        out.cost_ns += float(rows.count @ c.cost[rows.entry])
        if c.mode is None:
            if self.watched(rows):
                self.hop(t, dev.name, "stack", "no XDP program: up the stack", end=True)
            self.up_the_stack(dev, rows)
            return out
        for mode, part, part_shape in self._paths(dev, c, rows, shape):
            self._verdicts(dev, c, mode, queue, cpu, t, part, part_shape, out)
        return out

    def _paths(
        self, dev: NetDev, c: Compiled, rows: Rows, shape: PollShape
    ) -> list[tuple[str, Rows, PollShape]]:
        """``tun_get_user``: each write takes the fast path (``tun_build_skb``, the program on
        the page) or builds an skb and runs it as generic XDP (``do_xdp_generic``)."""
        assert c.mode is not None
        if not isinstance(dev, Tun):
            return [(c.mode, rows, shape)]
        fast = c.fast[rows.entry]
        e = self.world.entries
        n_fast = int(rows.count[fast].sum())
        dev.add("xdp_fast_path", n_fast)
        dev.add("xdp_generic_path", rows.total - n_fast)
        for reason, mask in dev.slow_reason(e.size, e.gso):
            dev.slow_reasons[reason] += int(rows.count[mask[rows.entry] & ~fast].sum())
        out: list[tuple[str, Rows, PollShape]] = []
        for path, mode, mask in (("fast", MODE_DRV, fast), ("generic", MODE_SKB, ~fast)):
            part = rows.where(mask)
            if not part.total:
                continue
            raw = c.raw[part.entry]
            for code in np.unique(raw):
                key = f"{path}.{action_name(int(code))}"
                hits = int(part.count[raw == code].sum())
                dev.path_verdicts[key] = dev.path_verdicts.get(key, 0) + hits
            out.append((mode, part, shape))
        return out

    def _verdicts(
        self,
        dev: NetDev,
        c: Compiled,
        mode: str,
        queue: int,
        cpu: int,
        t: int,
        rows: Rows,
        shape: PollShape,
        out: PollOutcome,
    ) -> None:
        """The program's verdicts for the frames it ran on (``*_run_xdp``)."""
        act = c.act[rows.entry]
        if self.watched(rows):
            self._hop_verdict(dev, c, mode, t, rows)
        for code in np.unique(act):
            part = rows.where(act == code)
            n = part.total
            name = action_name(int(code))
            out.verdicts[name] = out.verdicts.get(name, 0) + n
            if code == XDP_DROP:
                dev.add("xdp_drop", n)
                if isinstance(dev, Tun) and mode == MODE_DRV:  # tun_xdp_act
                    dev.add("rx_dropped", n)
            elif code == XDP_PASS:
                dev.add("xdp_pass", n)
                self.up_the_stack(dev, part)
            elif code == XDP_ABORTED:
                dev.add("xdp_aborted", n)
                if isinstance(dev, Tun) and mode == MODE_DRV:
                    dev.add("rx_dropped", n)
                raw = c.raw[part.entry]
                for r in np.unique(raw):
                    self.tp.exception[(dev.name, action_name(int(r)))] += int(
                        part.count[raw == r].sum()
                    )
            elif code == XDP_TX:
                if c.master is not None:
                    self._master_redirect(dev, c, mode, queue, cpu, t, part, shape, out)
                else:
                    self._xdp_tx(dev, mode, queue, cpu, t, part)
            else:
                self._redirect(dev, c, mode, cpu, t, part, shape, out)

    def _hop_verdict(self, dev: NetDev, c: Compiled, mode: str, t: int, rows: Rows) -> None:
        assert rows.ident is not None
        i = int(np.flatnonzero(rows.ident == self.watch)[0])
        e = int(rows.entry[i])
        att = dev.prog
        name = att.prog.name if att is not None else "?"
        if isinstance(dev, Tun) and c.mode == MODE_DRV:
            where = (
                "tun_build_skb (fast path)"
                if mode == MODE_DRV
                else "an skb, generic XDP (slow path)"
            )
            self.hop(t, dev.name, "xdp", f"{name} runs in {where}")
        raw = int(c.raw[e])
        self.hop(t, dev.name, "xdp", f"{name} ({mode}) returns {action_name(raw)}")
        act = int(c.act[e])
        if act == XDP_DROP:
            self.hop(t, dev.name, "drop", "XDP_DROP: the page is recycled", end=True)
        elif act == XDP_ABORTED:
            self.hop(t, dev.name, "drop", f"{action_name(raw)}: xdp_exception, dropped", end=True)
        elif act == XDP_PASS:
            self.hop(t, dev.name, "stack", "XDP_PASS: an skb up the stack", end=True)

    def _xdp_tx(self, dev: NetDev, mode: str, queue: int, cpu: int, t: int, rows: Rows) -> None:
        dev.add("xdp_tx", rows.total)
        if mode == MODE_SKB:
            dev.generic_xmit(self, dev, cpu, t, rows)  # generic_xdp_tx on the RX device
        else:
            dev.xdp_tx(self, cpu, queue, t, rows)

    def up_the_stack(self, dev: NetDev, rows: Rows) -> None:
        """Frames the stack gets from a slave climb through its bond (``bond_handle_frame``);
        in active-backup, frames on a backup slave are not delivered to the bond
        (``bond_should_deliver_exact_match``)."""
        name = dev.master
        while name is not None:
            bond = self.world.devices.get(name)
            if not isinstance(bond, Bond):
                return
            if bond.mode == "active-backup" and bond.curr_active != dev.name:
                return
            bond.add("rx_packets", rows.total)
            bond.add("rx_bytes", rows.bytes(self.world.entries.size))
            dev, name = bond, bond.master

    # ------------------------------------------------------------ XDP_TX on a bond slave

    def _master_redirect(
        self,
        dev: NetDev,
        c: Compiled,
        mode: str,
        queue: int,
        cpu: int,
        t: int,
        rows: Rows,
        shape: PollShape,
        out: PollOutcome,
    ) -> None:
        """``xdp_master_redirect``: bond not up -> XDP_ABORTED; the bond's slave is the
        receiving one (or none) -> XDP_TX here; another slave -> XDP_REDIRECT to it."""
        assert c.master is not None
        bond = self.world.devices[c.master]
        assert isinstance(bond, Bond)
        slave = c.tx_slave[rows.entry]
        aborted = rows.where(slave == TX_ABORT)
        if aborted.total:
            dev.add("xdp_aborted", aborted.total)
            self.tp.exception[(dev.name, "XDP_ABORTED")] += aborted.total
        here = rows.where(slave == TX_HERE)
        rr = rows.where(slave == TX_RR)
        parts: list[tuple[int, Rows, IntArray]] = []
        if rr.total:
            c0 = int(bond.rr_counter[cpu])
            lg = BondLogic(bond, self.world.devices)
            table = lg.slave_by_id_table()
            for name, part in lg.rr_split(cpu, rr, self.world.entries.proto):
                target = self.world.devices[name] if name is not None else None
                if name is None or target is None or target is dev:
                    here = _concat(here, part)
                    continue
                err = self.enqueue_err(dev, target.ifindex, mode)[part.entry]
                parts.append((target.ifindex, part, err))
                counts = _rr_poll_counts(shape, table, bond.packets_per_slave, c0, name)
                if counts is not None:
                    shape.classes[target.ifindex] = counts
        for ifindex in np.unique(slave[slave >= 0]):
            part = rows.where(slave == ifindex)
            parts.append((int(ifindex), part, c.tx_err[part.entry]))
        if self.watched(here):
            self.hop(
                t,
                dev.name,
                "xdp",
                f"xdp_master_redirect ({bond.mode}): {bond.name} picks this slave -> XDP_TX here",
            )
        if self.watched(aborted):
            self.hop(
                t, dev.name, "drop", f"{bond.name} is down: XDP_TX becomes XDP_ABORTED", end=True
            )
        if here.total:
            self._xdp_tx(dev, mode, queue, cpu, t, here)
        for ifindex, part, err in parts:
            if self.watched(part):
                to = self.world.by_ifindex[ifindex].name
                how = f"{bond.mode}, {bond.xmit_hash_policy}"
                what = f"xdp_master_redirect ({how}): {bond.name} picks {to} -> XDP_REDIRECT"
                self.hop(t, dev.name, "xdp", what)
            dev.add("xdp_redirect", part.total)
            self._redirect_failed(dev, mode, part, err)
            ok = part.where(err == 0)
            if ok.total:
                self.tp.redirect += ok.total
                tgt = self.world.by_ifindex[ifindex]
                keys = np.full(len(ok), -1, dtype=np.int64)
                self._enqueue(dev, tgt, mode, cpu, t, ok, keys, None, shape, ifindex, out)

    def enqueue_err(self, dev: NetDev, ifindex: int, mode: str) -> IntArray:
        """``__xdp_enqueue``'s checks toward ``ifindex`` for every entry (cached per epoch)."""
        key = (dev.name, ifindex, mode)
        err = self._err.get(key)
        if err is None:
            n = len(self.world.entries)
            err = self._err[key] = enqueue_errors(self, np.full(n, ifindex, np.int64), mode)
        return err

    # ------------------------------------------------------------ XDP_REDIRECT

    def _redirect(
        self,
        dev: NetDev,
        c: Compiled,
        mode: str,
        cpu: int,
        t: int,
        rows: Rows,
        shape: PollShape,
        out: PollOutcome,
    ) -> None:
        """``xdp_do_redirect``: failures fire ``xdp_redirect_err`` and the driver drops with
        ``xdp_exception``; successes fire ``xdp_redirect`` and go into the per-CPU bulk queue
        of the target device -- one queue per target, shared by every devmap entry and
        ifindex redirect pointing at it."""
        dev.add("xdp_redirect", rows.total)
        err = c.err[rows.entry]
        self._redirect_failed(dev, mode, rows, err)
        ok = rows.where(err == 0)
        if not ok.total:
            return
        self.tp.redirect += ok.total  # one xdp_redirect per input frame
        dmap = self.world.maps.get(c.map_name) if c.map_name else None
        if c.broadcast:
            self._broadcast(dev, c, mode, cpu, t, ok, shape, out)
            return
        target = c.target[ok.entry]
        for ifindex in np.unique(target):
            part = ok.where(target == ifindex)
            tgt = self.world.by_ifindex[int(ifindex)]
            keys = c.key[part.entry]
            self._enqueue(dev, tgt, mode, cpu, t, part, keys, dmap, shape, int(ifindex), out)

    def _redirect_failed(self, dev: NetDev, mode: str, rows: Rows, err: IntArray) -> None:
        """``xdp:xdp_redirect_err`` by errno, and the native driver's drop with
        ``xdp:xdp_exception`` (``tun_xdp_act`` only returns the error)."""
        bad = err != 0
        if not np.any(bad):
            return
        if self.watched(rows.where(bad)):
            assert rows.ident is not None
            i = int(np.flatnonzero(rows.ident == self.watch)[0])
            name = Errno(int(err[i])).name
            self.hop(
                self.hops[-1][0] if self.hops else 0,
                dev.name,
                "drop",
                f"xdp_do_redirect failed: {name} (xdp_redirect_err)",
                end=True,
            )
        for code in np.unique(err[bad]):
            hits = int(rows.count[err == code].sum())
            self.tp.redirect_err[(dev.name, Errno(int(code)).name)] += hits
            if mode == MODE_DRV and not isinstance(dev, Tun):
                self.tp.exception[(dev.name, "XDP_REDIRECT")] += hits

    def _broadcast(
        self,
        dev: NetDev,
        c: Compiled,
        mode: str,
        cpu: int,
        t: int,
        rows: Rows,
        shape: PollShape,
        out: PollOutcome,
    ) -> None:
        """``dev_map_enqueue_multi``: a clone for every entry that passes ``is_valid_dst``
        (invalid ones skipped silently), without the ingress device and -- with
        BPF_F_EXCLUDE_INGRESS -- its upper devices (``get_upper_ifindexes``). Generic XDP
        does not pre-filter: the first failing clone aborts the rest with its error."""
        w = self.world
        dmap = w.maps.get(c.map_name or "")
        if dmap is None:
            return
        excluded: set[str] = set()
        if c.broadcast & BPF_F_EXCLUDE_INGRESS:
            up: str | None = dev.name
            while up is not None:
                excluded.add(up)
                upper = w.devices.get(up)
                up = upper.master if upper is not None else None
        sizes = w.entries.size[rows.entry]
        for key, entry in dmap.walk():
            tgt = w.devices.get(entry.dev)
            if tgt is None or tgt.name in excluded:
                continue
            fits = sizes <= max_fwd_len(tgt.mtu)
            if mode == MODE_DRV:
                if not tgt.ndo_xmit_ready(self) or not tgt.admin_up:
                    continue
                part = rows.where(fits)
            else:
                if not tgt.admin_up or not np.all(fits):
                    code = Errno.ENETDOWN if not tgt.admin_up else Errno.EMSGSIZE
                    self.tp.redirect_err[(dev.name, code.name)] += rows.total
                    return
                part = rows
            if part.total:
                keys = np.full(len(part), key, dtype=np.int64)
                self._enqueue(dev, tgt, mode, cpu, t, part, keys, dmap, shape, BROADCAST, out)

    # ------------------------------------------------------------ bulk queues

    def _enqueue(
        self,
        dev: NetDev,
        tgt: NetDev,
        mode: str,
        cpu: int,
        t: int,
        rows: Rows,
        keys: IntArray,
        dmap: object,
        shape: PollShape,
        cls: int,
        out: PollOutcome,
    ) -> None:
        """``bq_enqueue`` then ``bq_xmit_all``. Generic XDP sends each skb at once
        (``dev_map_generic_redirect``), its entry's egress program per skb."""
        progs = self._programs(dmap, keys)
        if self.watched(rows):
            how = (
                "sent at once (generic XDP)"
                if mode == MODE_SKB
                else f"bq_enqueue on cpu {cpu}'s bulk queue toward {tgt.name}"
            )
            self.hop(t, dev.name, "bulk_queue", how)
        if mode == MODE_SKB:
            kept = self._egress_each(dev, tgt, rows, keys, progs)
            if kept.total:
                tgt.generic_xmit(self, dev, cpu, t, kept)
            return
        if self.world.devmap_egress == "enqueue":  # before the seed's patch: at enqueue
            rows = self._egress_each(dev, tgt, rows, keys, progs)
            keys = np.full(len(rows), -1, dtype=np.int64)
            progs = {}
        if rows.ordered:
            self._flush_exact(dev, tgt, cpu, t, rows, keys, progs, out)
        else:
            self._flush_fast(dev, tgt, cpu, t, rows, keys, progs, shape, cls, out)

    def _flush_exact(
        self,
        dev: NetDev,
        tgt: NetDev,
        cpu: int,
        t: int,
        rows: Rows,
        keys: IntArray,
        progs: dict[int, Program],
        out: PollOutcome,
    ) -> None:
        """One poll's frames toward ``tgt``, in order: ``bq_enqueue`` sends the queue when a
        17th frame arrives (without XDP_XMIT_FLUSH) and ``__dev_flush`` the rest at the end of
        the poll; every bulk runs the egress program of the poll's first enqueuer."""
        tally = self.tp.xmit(dev.name, tgt.name)
        bq = self.tp.bq(cpu, dev.name, tgt.name)
        prog = progs.get(int(keys[0]))
        n = len(rows)
        for start in range(0, n, DEV_MAP_BULK_SIZE):
            end = start + DEV_MAP_BULK_SIZE
            chunk = rows.slice(start, end)
            cnt = len(chunk)
            kept = self._egress_bulk(dev, tgt, chunk, prog)
            tally.flushes += 1
            bq.flushes += 1
            bq.frames += cnt
            bq.last_bulk = float(cnt)
            bq.program = prog.name if prog is not None else ""
            dropped = cnt - kept.total
            tally.drops += dropped
            tally.egress_drops += dropped
            sent = 0
            if self.watched(chunk):
                why = (
                    "17th frame: bq_xmit_all" if end < n else "xdp_do_flush at the end of the poll"
                )
                egress = f", egress {prog.name}" if prog is not None else ""
                self.hop(t, dev.name, "ndo_xdp_xmit", f"{why}: {cnt} frames to {tgt.name}{egress}")
                if not self.watched(kept):
                    self.hop(
                        t,
                        tgt.name,
                        "drop",
                        f"the egress program {prog.name if prog else ''} dropped it",
                        end=True,
                    )
            if kept.total:
                x = Xmit(dev, tgt, cpu, t, kept, 1, tally)
                tgt.ndo_xdp_xmit(self, x)
                sent = x.sent
            reason = "poll_end" if end >= n else "full"
            name = prog.name if prog is not None else None
            out.flushes.append(
                Flush(cpu, dev.name, tgt.name, cnt, sent, cnt - sent, name, reason, dropped)
            )
            out.cost_ns += self.flush_cost(dev, tgt)

    def _flush_fast(
        self,
        dev: NetDev,
        tgt: NetDev,
        cpu: int,
        t: int,
        rows: Rows,
        keys: IntArray,
        progs: dict[int, Program],
        shape: PollShape,
        cls: int,
        out: PollOutcome,
    ) -> None:
        """A step's polls toward ``tgt``: poll p sent k_p frames, so ceil(k_p / 16) bulks
        (``bq_enqueue`` + ``__dev_flush``); each poll's bulks run the egress program of its
        first enqueuer (``shape.first_key``)."""
        tally = self.tp.xmit(dev.name, tgt.name)
        bq = self.tp.bq(cpu, dev.name, tgt.name)
        per_poll = shape.classes.get(cls)
        if per_poll is None or abs(int(per_poll.sum()) - rows.total) > 0.02 * rows.total + 1:
            per_poll = _even(rows.total, shape.polls)  # no poll-by-poll record: spread evenly
        flushes = int((-(-per_poll // DEV_MAP_BULK_SIZE)).sum())
        out.cost_ns += flushes * self.flush_cost(dev, tgt)
        tally.flushes += flushes
        bq.flushes += flushes
        bq.frames += rows.total
        bq.last_bulk = rows.total / max(flushes, 1)
        parts: list[tuple[Program | None, Rows]] = [(None, rows)]
        if progs:
            first = shape.first_key.get(cls)
            parts = self._by_first_enqueuer(rows, keys, progs, per_poll, first)
        for prog, part in parts:
            if not part.total:
                continue
            bq.program = prog.name if prog is not None else ""
            kept = self._egress_bulk(dev, tgt, part, prog)
            dropped = part.total - kept.total
            tally.drops += dropped
            tally.egress_drops += dropped
            if kept.total:
                share = max(1, round(flushes * part.total / rows.total))
                x = Xmit(dev, tgt, cpu, t, kept, share, tally, bursts=shape.bursts)
                tgt.ndo_xdp_xmit(self, x)

    @staticmethod
    def _write_flush(dev: NetDev) -> float:
        """A tap's single writes call ``xdp_do_flush`` after every write that redirected."""
        if isinstance(dev, Tun) and dev.writer == "write":
            return costs.TUN_WRITE_FLUSH
        return 0.0

    def flush_cost(self, dev: NetDev, tgt: NetDev) -> float:
        """One ``bq_xmit_all``: the target's ``ndo_xdp_xmit`` call and doorbell -- for a tap's
        single writes the fitted cost of a flush after every write, doorbell included."""
        return self._write_flush(dev) or tgt.costs().flush

    def _by_first_enqueuer(
        self,
        rows: Rows,
        keys: IntArray,
        progs: dict[int, Program],
        per_poll: IntArray,
        first: IntArray | None,
    ) -> list[tuple[Program | None, Rows]]:
        """Re-deal a step's frames toward one target so each poll's frames meet the program
        of the entry that enqueued first in that poll."""
        if first is None or len(first) != len(per_poll):
            # no per-poll record: each entry's own program, as if each poll held one key
            out: list[tuple[Program | None, Rows]] = []
            for k in np.unique(keys):
                out.append((progs.get(int(k)), rows.where(keys == k)))
            return out
        out = []
        left = rows
        uniq = np.unique(first)
        for i, k in enumerate(uniq):
            frames = int(per_poll[first == k].sum())
            n = left.total if i == len(uniq) - 1 else min(left.total, frames)
            part = left.head(n)
            left = left.minus(part)
            out.append((progs.get(int(k)), part))
        return out

    def _programs(self, dmap: object, keys: IntArray) -> dict[int, Program]:
        from xdptui.sim.devmap import DevMap

        if not isinstance(dmap, DevMap):
            return {}
        out: dict[int, Program] = {}
        for k in np.unique(keys):
            entry = dmap.lookup(int(k)) if k >= 0 else None
            if entry is not None and entry.egress is not None:
                out[int(k)] = entry.egress
        return out

    def _egress_bulk(self, dev: NetDev, tgt: NetDev, rows: Rows, prog: Program | None) -> Rows:
        """``dev_map_bpf_prog_run``: PASS keeps the frame, DROP frees it, other codes fire
        ``xdp_exception`` on the target and free it."""
        if prog is None:
            return rows
        raw = self._egress_verdicts(prog, dev, tgt)[rows.entry]
        other = (raw != XDP_PASS) & (raw != XDP_DROP)
        for code in np.unique(raw[other]):
            self.tp.exception[(tgt.name, action_name(int(code)))] += int(
                rows.count[raw == code].sum()
            )
        return rows.where(raw == XDP_PASS)

    def _egress_each(
        self, dev: NetDev, tgt: NetDev, rows: Rows, keys: IntArray, progs: dict[int, Program]
    ) -> Rows:
        """Each frame meets its own entry's program (generic XDP, or before the patch)."""
        if not progs:
            return rows
        keep = np.ones(len(rows), dtype=bool)
        for k, prog in progs.items():
            sel = keys == k
            raw = self._egress_verdicts(prog, dev, tgt)[rows.entry]
            keep &= ~sel | (raw == XDP_PASS)
            other = sel & (raw != XDP_PASS) & (raw != XDP_DROP)
            for code in np.unique(raw[other]):
                self.tp.exception[(tgt.name, action_name(int(code)))] += int(
                    rows.count[other & (raw == code)].sum()
                )
        return rows.where(keep)

    def _egress_verdicts(self, prog: Program, rx_dev: NetDev, tgt: NetDev) -> IntArray:
        key = (prog.prog_id, rx_dev.name, tgt.name)
        cached = self._egress.get(key)
        if cached is None:
            cached = prog.run(make_context(self.world, rx_dev, prog, egress=tgt))
            self._egress[key] = cached
        return cached

    # ------------------------------------------------------------ what the rings report back

    def refusal(self, kind: str, src: NetDev, xmit: Xmit | None = None) -> Refusal:
        return Refusal(kind, src, xmit)

    def xdp_tx_failed(self, dev: NetDev, rows: Rows) -> None:
        """XDP_TX the driver could not queue at all: ``xdp_exception`` and a drop."""
        if self.watched(rows):
            self.hop(
                self.hops[-1][0],
                dev.name,
                "drop",
                "XDP_TX failed: no XDP TX ring (or no peer program)",
                end=True,
            )
        dev.add("xdp_tx_errors", rows.total)
        self.tp.exception[(dev.name, "XDP_TX")] += rows.total

    def xmit_error(self, x: Xmit, errno: Errno, count_dev: bool = True) -> None:
        """``ndo_xdp_xmit`` returned an error: nothing sent, devmap frees the bulk and the
        flush counts as a driver error."""
        n = x.rows.total
        if self.watched(x.rows):
            self.hop(
                x.t,
                x.dst.name,
                "drop",
                f"ndo_xdp_xmit returned {errno.name}: devmap frees the bulk",
                end=True,
            )
        if count_dev:
            x.dst.add("xdp_xmit", n)
            x.dst.add("xdp_xmit_errors", n)
        x.tally.drops += n
        x.tally.err += x.calls

    def xmit_part(self, x: Xmit, slave: NetDev, rows: Rows, calls: int) -> Xmit:
        """Frames of a bond's ``bond_xdp_xmit`` handed on to one slave (the devmap tally and
        the flush stay the bond's)."""
        return Xmit(x.src, slave, x.cpu, x.t, rows, calls, x.tally, parent=x)

    def accepted(self, ref: Refusal, rows: Rows, into_rx: bool) -> None:
        """Frames a ring took. Frames put into a veth peer's receive queue have left the
        sender now; a NIC or tap counts ``tx_packets`` when they leave its ring."""
        n = rows.total
        x = ref.xmit
        if ref.kind == "xmit" and x is not None:
            x.dst.add("xdp_xmit", n)
            x.tally.sent += n
            x.add_sent(n)
        if into_rx:
            sender = x.dst if ref.kind == "xmit" and x is not None else ref.src
            sender.add("tx_packets", n)
            sender.add("tx_bytes", rows.bytes(self.world.entries.size))

    def refused(self, ref: Refusal, ring_dev: NetDev, n: int, taken: int = 0) -> None:
        """Frames a full ring refused, counted where the kernel counts them: XDP_TX as
        ``xdp_tx_errors`` + ``xdp_exception`` (a tap: ``tx_dropped`` per frame); an
        ``ndo_xdp_xmit`` prefix as devmap ``drops`` (a tap also adds one ``tx_dropped`` per
        call that met the full ring); generic XDP_TX and the stack as ``tx_dropped``; a veth's
        skbs as the sender's ``tx_dropped``."""
        if not n:
            return
        kind = ref.kind
        if kind == "tx":
            ref.src.add("xdp_tx_errors", n)
            if isinstance(ring_dev, Tun):
                ring_dev.add("tx_dropped", n)
            else:
                self.tp.exception[(ref.src.name, "XDP_TX")] += n
        elif kind == "xmit" and ref.xmit is not None:
            x = ref.xmit
            x.dst.add("xdp_xmit", n)
            x.dst.add("xdp_xmit_errors", n)
            x.tally.drops += n
            if isinstance(ring_dev, Tun):
                ring_dev.add("tx_dropped", _calls_full(x, n, taken))
        elif kind == "gtx":
            ring_dev.add("tx_dropped", n)
            if not isinstance(ring_dev, Tun):
                self.tp.exception[(ref.src.name, "XDP_TX")] += n
        elif kind == "veth_skb":
            ref.src.add("tx_dropped", n)
        else:
            ring_dev.add("tx_dropped", n)

    def by_rx_queue(self, dev: NetDev, rows: Rows) -> list[tuple[int, Rows]]:
        """Split rows over ``dev``'s receive queues by the flow's hash."""
        nq = len(dev.rxq)
        if nq <= 1:
            return [(0, rows)]
        q = (self.world.entries.rss_hash[rows.entry] % nq).astype(np.int64)
        return [(int(i), rows.where(q == i)) for i in np.unique(q)]


def _calls_full(x: Xmit, refused: int, taken: int) -> int:
    """How many of the ``ndo_xdp_xmit`` calls behind ``x`` met a full ring. One call: it did.
    Many (a fast-mode step): each interrupt's burst of bulks of 16 goes in until the room the
    reader made since the last burst is gone; the calls after that met the full ring."""
    if x.calls <= 1:
        return 1
    bursts = max(1, x.bursts)
    fit = bursts * (taken // (bursts * DEV_MAP_BULK_SIZE))
    return int(min(refused, x.calls, max(1, x.calls - fit)))


def _concat(a: Rows, b: Rows) -> Rows:
    if not len(a):
        return b
    if a.ordered and a.ident is not None and b.ident is not None:
        order = np.argsort(np.concatenate((a.ident, b.ident)), kind="stable")
    else:
        order = np.arange(len(a) + len(b))

    def cat(x: IntArray | None, y: IntArray | None) -> IntArray | None:
        return np.concatenate((x, y))[order] if x is not None and y is not None else None

    return Rows(
        np.concatenate((a.entry, b.entry))[order],
        np.concatenate((a.count, b.count))[order],
        a.ordered,
        cat(a.ident, b.ident),
        cat(a.time, b.time),
    )


def _even(total: int, polls: int) -> IntArray:
    """``total`` frames over ``polls`` polls as evenly as integers allow."""
    polls = max(1, polls)
    return np.full(polls, total // polls, dtype=np.int64) + (np.arange(polls) < total % polls)


def _rr_poll_counts(
    shape: PollShape, table: list[str | None], pps: int, c0: int, slave: str
) -> IntArray | None:
    """Per poll, the round-robin frames that go to ``slave``: the per-CPU counter runs on
    from ``c0`` through the polls' frames (``bond_rr_gen_slave_id``), each id mapped by
    ``bond_get_slave_by_id`` (``table``)."""
    x = shape.classes.get(RR_CLASS)
    if x is None or shape.polls <= 1 or not table:
        return None
    cnt = len(table)
    pps = max(1, pps)
    a = c0 + 1 + np.concatenate(([0], np.cumsum(x)[:-1]))
    lo = np.arange(cnt, dtype=np.int64) * pps
    period = pps * cnt

    def upto(v: IntArray) -> IntArray:
        out: IntArray = (v[:, None] // period) * pps + np.clip(v[:, None] % period - lo, 0, pps)
        return out

    per_id = upto(a + x) - upto(a)
    mine = np.array([name == slave for name in table], dtype=bool)
    counts: IntArray = per_id[:, mine].sum(axis=1)
    return counts
