"""The core of the XDP data path (``net/core/dev.c``, ``net/core/filter.c``), shared by both
modes.

``napi_poll`` is a driver's receive loop for a batch of polls on one CPU: rows of frames meet
the program's verdicts (compiled per entry, ``xdptui.sim.core.filter``) and follow them --
XDP_DROP, XDP_PASS up the stack (through a bond master), XDP_ABORTED, XDP_TX by the driver's
rule (``NetDev.xdp_tx``, or ``xdp_master_redirect`` on a bond slave), XDP_REDIRECT through
``xdp_do_redirect`` into the per-CPU bulk queue of its target (``xdptui.sim.devmap``). Where
frames land (a TX ring, a veth peer's receive queue) is the mode's I/O (``io``): exact mode
moves descriptors, fast mode claims slots that are settled at the end of a step. What a
refused frame counts is decided here, once, for both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs, cpumap, devmap, xsk
from xdptui.sim.batch import PollShape, Rows, distinct, having
from xdptui.sim.bond.bond_main import Bond, BondLogic, rr_poll_counts
from xdptui.sim.classes import FlowClasses, compile_classes
from xdptui.sim.columns import filled, holds
from xdptui.sim.core import bpf_run
from xdptui.sim.core.bpf_eval import BpfState, grow_pending
from xdptui.sim.core.filter import (
    RR_CLASS,
    TX_ABORT,
    TX_HERE,
    TX_RR,
    Compiled,
    compile_device,
    enqueue_errors,
)
from xdptui.sim.dev.netdev import IO, MODE_DRV, MODE_SKB, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import PollOutcome
from xdptui.sim.frame_log import FrameLog
from xdptui.sim.kconst import (
    XDP_ABORTED,
    XDP_DROP,
    XDP_PASS,
    XDP_REDIRECT,
    XDP_TX,
    action_name,
)
from xdptui.sim.layout import Layouts
from xdptui.sim.programs import ProgramFailed
from xdptui.sim.refusals import Accounting
from xdptui.sim.shared import SharedCache
from xdptui.sim.tally import CpuStats, Tracepoints
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
COMPILE_ROUNDS = 6  # frames made by programs feed other programs: a few rounds, then stop
MAX_FAILED_PROGRAMS = 64  # programs detached in one compilation before giving up


class Datapath:
    """Compiled paths, tracepoint tallies and the rules every frame follows."""

    world: World

    def __init__(self, world: World, io: IO) -> None:
        self.world = world
        self.io = io
        self.tp = Tracepoints()
        self.cpumap_tp = cpumap.CpumapTally()
        self.window = (0, 0)  # fast mode: the step being run (t0, t1)
        self.accounts = Accounting(world, self.tp, self)
        self.cpu = CpuStats.make(world.nr_cpus)
        self.compiled: dict[str, Compiled] = SharedCache()
        self.failures: list[tuple[ProgramFailed, list[str]]] = []  # detached since last asked
        self.compiled_epoch = -1
        self.classes = FlowClasses(-1, np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.layouts = Layouts()
        self.master_key = False
        self.egress_cache: SharedCache[tuple[int, str, str], IntArray] = SharedCache()
        self._err: SharedCache[tuple[str, int, str], IntArray] = SharedCache()
        self._skbs: SharedCache[tuple[str, int, int], bool] = SharedCache()  # _veth_skbs
        self.watch: int | None = None  # a followed frame's identity (exact mode)
        self.hops: list[tuple[int, str, str, str, object]] = []
        self.watch_done = False
        self.frame_log: FrameLog | None = None  # ``run --pcap``: frames of chosen devices
        self.bpf = BpfState()  # real programs: frames and outcomes to add, egress evaluations

    # ------------------------------------------------------------ following one frame

    def watched(self, rows: Rows) -> bool:
        """Do ``rows`` hold the followed frame."""
        return (
            self.watch is not None
            and rows.ident is not None
            and bool(np.any(rows.ident == self.watch))
        )

    def hop(
        self,
        t: int,
        dev: str,
        stage: str,
        detail: str,
        end: bool = False,
        program: object = None,
    ) -> None:
        """Record a hop of the followed frame; ``end``: its journey is over; ``program``: a
        real program's run on it (``ProgramRunView``)."""
        if self.watch_done:
            return
        self.hops.append((t, dev, stage, detail, program))
        if end:
            self.watch_done = True
            self.watch = None

    # ------------------------------------------------------------ compile

    def compile(self) -> None:
        """Recompute every device's per-entry paths if the configuration changed. A Python
        program that fails on the new configuration is detached and the paths recomputed
        without it; ``failures`` keeps what happened for the engine to report."""
        for _ in range(MAX_FAILED_PROGRAMS):
            try:
                self._compile()
                return
            except ProgramFailed as exc:
                where = self.world.detach_program(exc.prog_id)
                self.failures.append((exc, where))
        self._compile()

    def _compile(self) -> None:
        """Every device's per-entry paths -- again while real programs make frames the flow
        table lacks (``bpf_eval.grow_pending``)."""
        w = self.world
        for round_ in range(COMPILE_ROUNDS):
            if self.compiled_epoch == w.epoch:
                break
            self.master_key = any(isinstance(d, Bond) and d.bond_prog for d in w.devices.values())
            self.egress_cache = SharedCache()
            self.bpf.egress = {}
            self._err = SharedCache()
            for dev in w.devices.values():
                if isinstance(dev, Bond):
                    BondLogic(dev, w.devices).update_slave_arr()
            compiled = {dev.name: compile_device(self, dev) for dev in w.devices.values()}
            # shared by copies of the state unless a real program's maps hang off it (then
            # each Compiled shares its columns and re-points its program: __deepcopy__)
            shared = all(c.obj is None for c in compiled.values())
            self.compiled = SharedCache(compiled) if shared else compiled
            self.compiled_epoch = w.epoch
            if not grow_pending(self, final=round_ == COMPILE_ROUNDS - 1):
                break
        if self.classes.epoch == self.compiled_epoch:
            return
        self.classes = compile_classes(self)
        for src in w.sources:  # where each source's frames land, per queue and class
            lands = w.lands_on(src)
            if lands is not None and lands.rxq:
                self.layouts.get(w, src, lands, self.classes.of_entry)

    # ------------------------------------------------------------ the poll

    def napi_poll(
        self, dev: NetDev, queue: int, cpu: int, t: int, rows: Rows, shape: PollShape
    ) -> PollOutcome:
        """The driver's receive loop (``*_clean_rx_irq`` / ``veth_xdp_rcv`` /
        ``tun_get_user``) over ``rows``, standing for ``shape.polls`` polls on ``cpu``."""
        d = dev.costs()
        out = PollOutcome(rows.total, shape.polls * d.poll)
        self.cpu.polls[cpu] += shape.polls
        if not rows.total:
            return out
        c = self.compiled[dev.name]
        if not (isinstance(dev, Tun) and c.mode == MODE_DRV):  # tun counts per verdict
            self._received(dev, c, rows)
        if c.obj is not None:  # a real program: its map effects, per-frame outcomes
            c, rows = bpf_run.run_xdp(self, dev, c, rows, cpu, t)
        out.cost_ns += float(rows.count @ c.cost[rows.entry])
        if self.frame_log is not None and rows.ordered:
            att = dev.prog
            self.frame_log.polled(
                dev.name,
                t,
                rows.entry,
                None if c.mode is None else c.raw[rows.entry],
                att.prog.name if att is not None else "",
                f"{dev.name} rx queue {queue}, NAPI poll on cpu {cpu}",
            )
        if c.mode is None:
            if self.watched(rows):
                self.hop(t, dev.name, "stack", "no XDP program: up the stack", end=True)
            self.up_the_stack(dev, rows)
            return out
        for mode, part, part_shape in self._paths(dev, c, rows, shape):
            self._verdicts(dev, c, mode, queue, cpu, t, part, part_shape, out)
        return out

    def _received(self, dev: NetDev, c: Compiled, rows: Rows) -> None:
        """A poll's frames in the device's receive counters: ``rx_packets`` and ``rx_bytes``
        (a veth's: ``Veth.polled``, ``Veth.sent_into``); a NIC in generic XDP makes an skb of
        each."""
        nbytes = rows.bytes(self.world.entries.size)
        if isinstance(dev, Veth):  # its ring's frames; its backlog's were counted as queued
            if c.mode == MODE_DRV:
                nbytes = Veth.ring_bytes(nbytes, rows.total, self._veth_skbs(dev))
                dev.polled(self.world.devices.get(dev.peer), rows.total, nbytes)
            return
        dev.add("rx_packets", rows.total)
        dev.add("rx_bytes", nbytes)
        if isinstance(dev, Nic) and c.mode != MODE_DRV:  # an skb for every frame
            dev.rq_stats(rows.total, nbytes)

    def _veth_skbs(self, dev: Veth) -> bool:
        """Whether what reaches ``dev``'s ring are skbs -- ``veth_xmit`` from its peer: the
        local stack sending out of the peer, or generic XDP (a redirect or broadcast into it,
        its own XDP_TX) -- rather than xdp_frames (the peer's native XDP_TX, an
        ``ndo_xdp_xmit`` into the peer). Where both reach it: as skbs."""
        w = self.world
        key = (dev.name, w.epoch, self.compiled_epoch)
        hit = self._skbs.get(key)
        if hit is not None:
            return hit
        peer = w.devices.get(dev.peer)
        skbs = peer is not None and (
            any(s.local and s.device == peer.name for s in w.sources)
            or any(
                c.mode == MODE_SKB
                and (
                    holds(c.target, peer.ifindex)
                    or (name == peer.name and holds(c.act, XDP_TX))
                    or any(t is peer for _, t in self._walk(name, c))
                )
                for name, c in self.compiled.items()
            )
        )
        if len(self._skbs) > 256:
            self._skbs.clear()
        self._skbs[key] = skbs
        return skbs

    def _walk(self, name: str, c: Compiled) -> list[tuple[int, NetDev]]:
        dev = self.world.devices.get(name)
        if not c.broadcast or dev is None:
            return []
        return devmap.broadcast_walk(self, dev, c)

    def napi_poll_many(
        self, dev: NetDev, t: int, polls: Sequence[tuple[int, int, Rows, PollShape]]
    ) -> FloatArray:
        """``napi_poll`` for many NAPI instances of one device at once, each given as
        (queue, cpu, rows, shape); returns each one's CPU time. What does not depend on the
        queue or the CPU -- the counters, XDP_DROP, XDP_PASS, XDP_ABORTED -- is done once for
        all of them; XDP_TX and redirects go instance by instance (rings and bulk queues are
        per CPU)."""
        c = self.compiled[dev.name]
        if isinstance(dev, Tun) or c.obj is not None:  # a tap's writes, a real program's
            # maps (per CPU) and outcomes: instance by instance
            return np.array([self.napi_poll(dev, q, u, t, r, sh).cost_ns for q, u, r, sh in polls])
        d = dev.costs()
        n_polls = np.array([sh.polls for _, _, _, sh in polls], np.int64)
        cpus = np.array([cpu for _, cpu, _, _ in polls], np.int64)
        np.add.at(self.cpu.polls, cpus, n_polls)
        cost: FloatArray = (n_polls * float(d.poll)).astype(np.float64)
        entry = np.concatenate([r.entry for _, _, r, _ in polls])
        count = np.concatenate([r.count for _, _, r, _ in polls])
        owner = np.repeat(np.arange(len(polls)), [len(r) for _, _, r, _ in polls])
        rows = Rows(entry, count, False)
        if not rows.total:
            return cost
        self._received(dev, c, rows)
        cost += np.bincount(owner, weights=count * c.cost[entry], minlength=len(polls))
        if c.mode is None:
            self.up_the_stack(dev, rows)
            return cost
        act = c.act[entry]
        onward = (act == XDP_TX) | (act == XDP_REDIRECT)
        out = PollOutcome(0, 0.0)
        self._verdicts(dev, c, c.mode, -1, -1, t, rows.where(~onward), PollShape(0), out)
        if isinstance(dev, Nic) and c.mode == MODE_DRV:
            queues = np.array([q for q, _, _, _ in polls], np.int64)
            onward &= ~self._tx_many(dev, c, act, owner, cpus, queues, t, rows)
            onward &= ~self._redirect_many(dev, c, act, owner, cpus, t, rows, polls, cost)
        for i in np.unique(owner[onward]):
            q, cpu, r, shape = polls[int(i)]
            mine = onward[owner == i]
            one = PollOutcome(0, 0.0)
            self._verdicts(dev, c, c.mode, q, cpu, t, r.where(mine), shape, one)
            cost[i] += one.cost_ns
        return cost

    def _tx_many(
        self,
        dev: Nic,
        c: Compiled,
        act: IntArray,
        owner: IntArray,
        cpus: IntArray,
        queues: IntArray,
        t: int,
        rows: Rows,
    ) -> npt.NDArray[np.bool_]:
        """Native XDP_TX of many instances at once (not on a bond slave); returns the rows
        done."""
        tx: npt.NDArray[np.bool_] = act == XDP_TX
        if c.master is not None or not tx.any():
            return np.zeros(len(act), bool)
        part = rows.where(tx)
        dev.add("xdp_tx", part.total)
        dev.xdp_tx_many(self, cpus[owner[tx]], queues[owner[tx]], t, part)
        return tx

    def _redirect_many(
        self,
        dev: NetDev,
        c: Compiled,
        act: IntArray,
        owner: IntArray,
        cpus: IntArray,
        t: int,
        rows: Rows,
        polls: Sequence[tuple[int, int, Rows, PollShape]],
        cost: FloatArray,
    ) -> npt.NDArray[np.bool_]:
        """Native unicast redirects of many instances at once, toward NICs and without devmap
        egress programs (``devmap.enqueue_many``); returns the rows done."""
        red: npt.NDArray[np.bool_] = act == XDP_REDIRECT
        xsk_map = c.map_name is not None and c.map_name in self.world.xskmaps
        if c.broadcast or xsk_map or not red.any() or self.world.devmap_egress != "flush":
            return np.zeros(len(act), bool)
        dmap = self.world.maps.get(c.map_name) if c.map_name else None
        target = c.target[rows.entry]
        plain = red.copy()
        for ifindex in np.unique(target[red & (c.err[rows.entry] == 0)]).tolist():
            if ifindex < 0:  # a cpumap entry: instance by instance
                plain &= target != ifindex
                continue
            tgt = self.world.by_ifindex[ifindex]
            keys = c.key[rows.entry[red & (target == ifindex)]]
            if not isinstance(tgt, Nic) or devmap.programs_of(dmap, keys):
                plain &= target != ifindex
        if not plain.any():
            return plain
        part = rows.where(plain)
        dev.add("xdp_redirect", part.total)
        err = c.err[part.entry]
        self._redirect_failed(dev, MODE_DRV, part, err)
        ok = err == 0
        self.tp.redirect += int(part.count[ok].sum())
        who = owner[plain]
        for ifindex in np.unique(c.target[part.entry[ok]]).tolist():
            sel = ok & (c.target[part.entry] == ifindex)
            tgt = self.world.by_ifindex[ifindex]
            assert isinstance(tgt, Nic)
            devmap.enqueue_many(self, dev, tgt, t, part.where(sel), who[sel], cpus, polls, cost)
        return plain

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
        tun_fast = isinstance(dev, Tun) and mode == MODE_DRV  # tun_build_skb -> tun_xdp_act
        if isinstance(dev, Veth) and mode == MODE_DRV:  # veth_xdp_rcv_one: xdp_packets
            dev.rq_stats["xdp_packets"] += rows.total
        codes = distinct(act)
        for code in codes:
            part = having(rows, act, codes, code)
            n = part.total
            name = action_name(code)
            out.verdicts[name] = out.verdicts.get(name, 0) + n
            if code in (XDP_DROP, XDP_ABORTED) and isinstance(dev, Veth) and mode == MODE_DRV:
                dev.rq_stats["xdp_drops"] += n
            if code in (XDP_DROP, XDP_ABORTED) and isinstance(dev, Nic) and mode == MODE_DRV:
                dev.xdp_handle(dropped=n)
            if code == XDP_DROP:
                dev.add("xdp_drop", n)
                if tun_fast:  # tun_xdp_act: dev_core_stats_rx_dropped_inc, no rx_packets
                    dev.add("rx_dropped", n)
            elif code == XDP_PASS:
                dev.add("xdp_pass", n)
                if isinstance(dev, Nic) and mode == MODE_DRV:
                    dev.rq_stats(n, part.bytes(self.world.entries.size))
                if isinstance(dev, Tun) and c.mode == MODE_DRV:  # tun_get_user: rx stats
                    self.tun_rx(dev, part)
                self.up_the_stack(dev, bpf_run.leaving(self, dev, c, part))
            elif code == XDP_ABORTED:
                dev.add("xdp_aborted", n)
                if tun_fast:
                    dev.add("rx_dropped", n)
                raw = c.raw[part.entry]
                for r in np.unique(raw):
                    self.tp.exception[(dev.name, action_name(int(r)))] += int(
                        part.count[raw == r].sum()
                    )
            elif code == XDP_TX:
                if tun_fast:  # tun_xdp_act: a frame tun_xdp_tx took counts in the RX stats
                    self.tun_rx(dev, part)
                if c.master is not None:
                    self._master_redirect(dev, c, mode, queue, cpu, t, part, shape, out)
                else:
                    self._xdp_tx(dev, mode, queue, cpu, t, bpf_run.leaving(self, dev, c, part))
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
            bond.rx_up += rows.total  # its rx_packets are its slaves' (bond_get_stats)
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
        kinds = distinct(slave)
        aborted = having(rows, slave, kinds, TX_ABORT)
        if aborted.total:
            dev.add("xdp_aborted", aborted.total)
            self.tp.exception[(dev.name, "XDP_ABORTED")] += aborted.total
            if isinstance(dev, Nic) and mode == MODE_DRV:
                dev.xdp_handle(dropped=aborted.total)
        here = bpf_run.leaving(self, dev, c, having(rows, slave, kinds, TX_HERE))
        rr = bpf_run.leaving(self, dev, c, having(rows, slave, kinds, TX_RR))
        parts: list[tuple[int, Rows, IntArray]] = []
        if rr.total:
            c0 = int(bond.rr_counter[cpu])
            lg = BondLogic(bond, self.world.devices)
            table = lg.slave_by_id_table()
            per_poll = shape.classes.get(RR_CLASS)
            counted = shape.rr_here is not None and per_poll is not None and not rr.ordered
            if counted:  # NAPI's loop followed the counter poll by poll, in time order
                assert shape.rr_here is not None
                split = lg.rr_split_counted(cpu, rr, dev.name, int(shape.rr_here.sum()))
            else:
                split = lg.rr_split(cpu, rr, self.world.entries.proto)
            for name, part in split:
                target = self.world.devices[name] if name is not None else None
                if name is None or target is None or target is dev:
                    here = here.concat(part)
                    continue
                err = self.enqueue_err(dev, target.ifindex, mode)[part.entry]
                parts.append((target.ifindex, part, err))
                if counted:
                    assert per_poll is not None and shape.rr_here is not None
                    counts: IntArray | None = per_poll - shape.rr_here
                else:
                    counts = rr_poll_counts(per_poll, table, bond.packets_per_slave, c0, name)
                if counts is not None:
                    shape.classes[target.ifindex] = counts
        for ifindex in (k for k in kinds if k >= 0):
            part = having(rows, slave, kinds, ifindex)
            parts.append((ifindex, bpf_run.leaving(self, dev, c, part), c.tx_err[part.entry]))
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
            ok = part.where(err == 0) if self._redirect_failed(dev, mode, part, err) else part
            if ok.total:
                self.tp.redirect += ok.total
                tgt = self.world.by_ifindex[ifindex]
                keys = np.full(len(ok), -1, dtype=np.int64)
                devmap.enqueue(self, dev, tgt, mode, cpu, t, ok, keys, None, shape, ifindex, out)

    def enqueue_err(self, dev: NetDev, ifindex: int, mode: str) -> IntArray:
        """``__xdp_enqueue``'s checks toward ``ifindex`` for every entry (cached per epoch)."""
        key = (dev.name, ifindex, mode)
        err = self._err.get(key)
        if err is None:
            n = len(self.world.entries)
            err = self._err[key] = enqueue_errors(self, filled(n, ifindex, np.int64), mode)
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
        if c.map_name is not None and c.map_name in self.world.xskmaps:
            self._redirect_xsk(dev, c, mode, t, rows, shape, out)
            return
        dev.add("xdp_redirect", rows.total)
        err = c.err[rows.entry]
        ok = rows.where(err == 0) if self._redirect_failed(dev, mode, rows, err) else rows
        if not ok.total:
            return
        self.tp.redirect += ok.total  # one xdp_redirect per input frame
        dmap = self.world.maps.get(c.map_name) if c.map_name else None
        if c.broadcast:
            devmap.broadcast(
                self, dev, c, mode, cpu, t, bpf_run.leaving(self, dev, c, ok), shape, out
            )
            return
        cmap = self.world.cpumaps.get(c.map_name) if c.map_name else None
        if cmap is not None:  # bpf_redirect_map into a cpumap: cpu_map_enqueue
            part = bpf_run.leaving(self, dev, c, ok)
            cpumap.enqueue(self, dev, cmap, cpu, t, part, shape, out)
            return
        target = c.target[ok.entry]
        for ifindex in np.unique(target):
            part = ok.where(target == ifindex)
            tgt = self.world.by_ifindex[int(ifindex)]
            keys = c.key[part.entry]
            part = bpf_run.leaving(self, dev, c, part)
            devmap.enqueue(self, dev, tgt, mode, cpu, t, part, keys, dmap, shape, int(ifindex), out)

    def _redirect_xsk(
        self,
        dev: NetDev,
        c: Compiled,
        mode: str,
        t: int,
        rows: Rows,
        shape: PollShape,
        out: PollOutcome,
    ) -> None:
        """``__xdp_do_redirect_xsk``: ``xsk_rcv`` into the socket right away (no bulk queue);
        its errors are ``xdp_do_redirect``'s, the flush publishes the RX ring."""
        dev.add("xdp_redirect", rows.total)
        w = self.world
        by_index = w.xsk_by_index
        err = c.err[rows.entry]
        bad = err != 0
        if bad.any():
            xsk.count_enospc(by_index, c.target, c.err, rows)
            self._redirect_failed(dev, mode, rows.where(bad), err[bad])
            rows = rows.where(~bad)
        parts, flushes = xsk.receive_rows(
            by_index, c.target, w.entries.size, rows, t, shape, self.window
        )
        out.cost_ns += flushes * costs.XSK_FLUSH
        if rows.ordered:  # one poll: what xsk_flush published, per socket
            for sock, frames, got, code in xsk.flush_records(by_index, c.target, parts):
                why = Errno(code).name if code else None
                out.xsk_flushes.append(
                    {"sock": sock, "frames": frames, "received": got, "err": why}
                )
        for code, part in parts:
            if not part.total:
                continue
            self._redirect_failed(dev, mode, part, np.full(len(part), code, np.int64))
            if code == 0:
                self.tp.redirect += part.total
                if self.watched(part):
                    xs = by_index[xsk.socket_of_target(int(c.target[part.entry[0]]))]
                    what = f"xsk_rcv: into {xs.name}'s RX ring (published at xdp_do_flush)"
                    self.hop(t, dev.name, "xsk", what, end=True)

    def tun_rx(self, dev: NetDev, rows: Rows) -> None:
        """``dev_sw_netstats_rx_add``: the frames a tap's writes delivered (XDP_PASS, or the
        fast path's successful XDP_TX and XDP_REDIRECT -- ``tun_xdp_act`` since v6.6)."""
        dev.add("rx_packets", rows.total)
        dev.add("rx_bytes", rows.bytes(self.world.entries.size))

    def _redirect_failed(self, dev: NetDev, mode: str, rows: Rows, err: IntArray) -> bool:
        """``xdp:xdp_redirect_err`` by errno, and the native driver's drop with
        ``xdp:xdp_exception`` (``tun_xdp_act`` only returns the error; ``veth_xdp_rcv_one``
        only counts ``rx_drops``, the machine's kernel confirms it). Native veth and tun
        count the outcome in their RX stats: veth's ``xdp_redirect`` or ``rx_drops``
        (``veth_xdp_rcv_one``); tun's RX stats or ``rx_dropped`` (``tun_xdp_act``); a NIC's
        ``Nic.xdp_handle``. Returns whether any failed."""
        bad = err != 0
        failed = bool(bad.any())
        n_bad = int(rows.count[bad].sum()) if failed else 0
        if mode == MODE_DRV and isinstance(dev, Nic):
            dev.xdp_handle(dropped=n_bad, redirected=rows.total - n_bad)
        if mode == MODE_DRV and isinstance(dev, Veth | Tun):
            dev.add("rx_dropped", n_bad)
            if isinstance(dev, Veth):
                dev.rq_stats["xdp_redirect"] += rows.total - n_bad
                dev.rq_stats["drops"] += n_bad
            else:
                self.tun_rx(dev, rows.where(~bad))
        if not failed:
            return False
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
            if mode == MODE_DRV and not isinstance(dev, Tun | Veth):  # veth: rx_drops only
                self.tp.exception[(dev.name, "XDP_REDIRECT")] += hits
        return True

    # ------------------------------------------------------------ what the rings report back

    def by_rx_queue(self, dev: NetDev, rows: Rows) -> list[tuple[int, Rows]]:
        """Split rows over ``dev``'s receive queues by the flow's hash (``NetDev.rx_queue_of``:
        a veth's, the queue mapping ``veth_xmit`` follows)."""
        q = dev.rx_queue_of(self.world.entries.rss_hash[rows.entry])
        qs = np.unique(q)
        if len(qs) <= 1:
            return [(int(qs[0]) if len(qs) else 0, rows)]
        return [(int(i), rows.where(q == i)) for i in qs]
