"""Fast mode: the same rules as exact mode, as arithmetic over flow classes and a step of many
polls.

A step counts every source's contiguous range of frames per (queue, flow class) -- binary
searches over the source's layout (``xdptui.sim.layout``), not a pass over its flows -- and
serves every NAPI instance at once: rings, arrivals and takes are (instance x class) matrices,
and each instance's polls follow exact mode's rules. Its interrupt fires at most once per
``rx-usecs``; each poll takes at most 64 frames from the ring's head, and a poll that takes
fewer completes. Where the polls feed bulk queues, the step's interrupt cycles are solved
exactly from the arrival curve (``fast_polls.cycles``) and the frames each poll sends to each
bulk queue are counted from the queue's contiguous frame ranges, so the devmap flushes,
ceil(k / 16) per poll, come out as the kernel counts them; elsewhere the steady pattern at the
arrival rate (``napi_pattern``) gives the number of polls. A CPU with more work than time polls
full budgets, round-robin. One representative entry per class carries the frames through the
shared data path (``Datapath.napi_poll``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.sim import cpumap, napi
from xdptui.sim.batch import Rows
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev.netdev import NetDev, Refusal, Xmit
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.fast_burst import Feed, steady_schedule
from xdptui.sim.fast_card import card_admit
from xdptui.sim.fast_napi import FastNapi
from xdptui.sim.fast_polls import (
    Pattern,
    cycles,
    even_sizes,
    first_after,
    full_sizes,
    napi_pattern,
    round_rates,
    tile,
    water_fill,
)
from xdptui.sim.fast_shapes import MAX_CHAIN, DevFacts, Facts, Pending, Plan, Work
from xdptui.sim.fast_tx import Claim, drain
from xdptui.sim.fast_vhost import cut_sends, full_sends
from xdptui.sim.layout import SourceLayout
from xdptui.sim.splitting import share, take_rows
from xdptui.sim.traffic import Source
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SETTLE_NS = 8_000  # after a change, steps restart this short and double
MAX_STEP_NS = 50_000_000  # the longest step
GROWTH = 2  # each quiet step this many times the last (4 blurs a tap ring filling)


class FastIO:
    def __init__(self, fast: Fast) -> None:
        self.fast = fast
        self.claims: list[Claim] = []
        self.pending: list[Pending] = []
        self.feeds: list[Feed] = []

    def tx(self, ring_dev: NetDev, ring: TxRing, rows: Rows, t: int, ref: Refusal) -> int:
        self.claims.append(Claim(ring_dev, ring, rows, ref))
        return rows.total

    def tx_many(self, ring_dev: NetDev, rings: IntArray, rows: Rows, t: int, ref: Refusal) -> int:
        self.claims.append(Claim(ring_dev, None, rows, ref, rings))
        return rows.total

    def tx_bulks(self, ring_dev: NetDev, ring: TxRing, xs: Sequence[Xmit], t: int) -> None:
        for x in xs:
            self.tx(ring_dev, ring, x.rows, t, Refusal("xmit", x.src, x))

    def wake(self, cpu: int, t: int) -> None:
        """A cpumap kthread woke: fast mode serves the rings at the end of the step."""

    def rx(self, dev: NetDev, rxq: RxQueue, rows: Rows, t: int, cpu: int, ref: Refusal) -> int:
        took = self.fast.napi.written_rx.pop(id(rxq), None)
        if took is not None:  # a veth the local stack writes into, run by NAPI's loop
            self.fast.dp.accounts.accepted(ref, took, into_rx=True)
            self.fast.dp.accounts.refused(ref, dev, rows.total - took.total)
            return took.total
        fed = self.fast.napi.fed_rx
        refused = fed.get((id(rxq), cpu))
        if refused is None:
            self.pending.append(Pending(dev, rxq, rows, cpu, ref))
            return rows.total
        # a veth queue NAPI's loop ran: its ring took what the loop says (``napi.feed``), of
        # the frames this CPU's senders offered
        fed[(id(rxq), cpu)] = refused - min(refused, rows.total)
        ok = rows.head(max(0, rows.total - refused))
        self.fast.dp.accounts.accepted(ref, ok, into_rx=True)
        self.fast.dp.accounts.refused(ref, dev, rows.total - ok.total)
        return ok.total


@dataclass
class Grid:
    """Step boundaries: restart at SETTLE_NS after every change and double up to
    MAX_STEP_NS -- a function of the inputs' times only, so runs don't depend on how a caller
    cuts time."""

    step: int = SETTLE_NS
    next: int = SETTLE_NS

    def restart(self, t: int) -> None:
        self.step = SETTLE_NS
        self.next = t + SETTLE_NS

    def advance(self) -> None:
        self.step = min(self.step * GROWTH, MAX_STEP_NS)
        self.next += self.step


class Fast:
    def __init__(self, world: World, dp: Datapath) -> None:
        self.world = world
        self.dp = dp
        self.grid = Grid()
        self.steps = 0
        self.facts = Facts(world, dp)
        # CPU time a saturated CPU's last poll of a step ran past the step's end (ns): the
        # poll that started finishes, as NAPI finishes it, and the next step has that less
        self.cpu_debt = np.zeros(world.nr_cpus)
        self.napi = FastNapi(world, dp, self.facts)

    # ------------------------------------------------------------ time

    def expect(self, t_end: int) -> None:
        """The run asking for steps goes on to ``t_end`` (NAPI's loop compiles itself when
        the polls still to come would pay for it)."""
        self.napi.horizon = t_end

    def run(self, t_from: int, t_to: int) -> None:
        """Steps along the grid from ``t_from`` to exactly ``t_to``."""
        t = t_from
        while t < t_to:
            if self.grid.next <= t:
                self.grid.advance()
                continue
            end = min(self.grid.next, t_to)
            self.step(t, end)
            if end == self.grid.next:
                self.grid.advance()
            t = end

    # ------------------------------------------------------------ one step

    def step(self, t0: int, t1: int) -> None:
        w = self.world
        dp = self.dp
        io = FastIO(self)
        dp.io = io
        dp.window = (t0, t1)
        dp.compile()
        self.steps += 1
        dt = t1 - t0
        C = len(dp.classes)
        rxqs = [(dev, rxq) for dev in w.devices.values() for rxq in dev.rxq]
        index = {id(rxq): i for i, (_, rxq) in enumerate(rxqs)}
        arr = np.zeros((len(rxqs), C), np.int64)
        written: list[tuple[NetDev, RxQueue, Rows, Refusal]] = []
        for src in w.sources:
            self._emit(src, t0, t1, arr, index, written)
        held = np.zeros_like(arr)
        waiting = [h for dev in w.devices.values() for h in dev.rxq.column(RxQueue.held)]
        for i, h in enumerate(waiting):
            if h.total:
                np.add.at(held[i], dp.classes.of_entry[h.entry], h.count)
        live = np.flatnonzero((held.sum(axis=1) + arr.sum(axis=1)) > 0)
        work = Work(
            [rxqs[i][0] for i in live],
            [rxqs[i][1] for i in live],
            np.array([rxqs[i][1].irq_cpu for i in live], np.int64),
            held[live],
            arr[live],
            np.ones(len(live)),
        )
        budget = np.maximum(float(dt) - self.cpu_debt, 0.0)
        self.napi.debt = self.cpu_debt.copy()  # (a CPU the loop takes over starts busy)
        self.cpu_debt = np.maximum(self.cpu_debt - float(dt), 0.0)
        owned = set(self.napi.owned_cards()) if w.cards else set()
        if w.cards and len(work):
            card_admit(w, self.facts, work, t0, t1, self.steps, skip=owned)
        kept = {id(r): float(k) for r, k in zip(work.rxqs, work.kept, strict=True)}
        busy0 = dp.cpu.busy_ns.copy() if w.cpumaps else None
        done = self.napi.step(t0, t1, kept, {id(work.rxqs[i]) for i in work.cycle})
        if written:  # the stack's writes into veths: first in line, as if made at t0
            later, io.pending = io.pending, []
            for peer, rxq, part, ref in written:
                io.rx(peer, rxq, part, t0, 0, ref)
            io.pending += later
        if busy0 is not None:  # what NAPI's loop used is not the kthreads'
            budget = np.maximum(budget - (dp.cpu.busy_ns - busy0), 0.0)
        if done:
            work = work.without(done)
            ran = self.napi.ran_cpus  # a poll the loop ran past t1: the CPU's debt
            self.cpu_debt[ran] = np.maximum(self.napi.state.cpu[ran, napi.C_BUSY] - t1, 0)
        left = owned - self.napi.cards_run
        if left and len(work):  # a card the loop could not run this step
            card_admit(w, self.facts, work, t0, t1, self.steps, skip=set(w.cards) - left)
        self._serve(work, budget, t0, t1)
        for _ in range(MAX_CHAIN):
            if not io.pending:
                break
            fed, io.pending = io.pending, []
            self._serve(self._fed(fed), budget, t0, t1)
        for p in io.pending:  # a loop of veth hops: what is left is dropped
            dp.accounts.refused(p.ref, p.dev, p.rows.total)
        io.pending = []
        drain(self.world, self.dp, io.claims, dt, io.feeds, t0, self.napi.played)
        io.claims, io.feeds = [], []  # the step's: not kept (nor copied by a checkpoint)
        if w.cpumaps:  # the kthreads, with the time NAPI left on their CPUs
            napi_cpus = frozenset(q.irq_cpu for d in w.devices.values() for q in d.rxq)
            dp.cpu.busy_ns += cpumap.serve_fast(dp, w.cpumaps, budget, t1, napi_cpus)

    def _emit(
        self,
        src: Source,
        t0: int,
        t1: int,
        arr: IntArray,
        index: dict[int, int],
        written: list[tuple[NetDev, RxQueue, Rows, Refusal]],
    ) -> None:
        """The source's frames of this step: per (queue, class) into ``arr``, or sent by the
        local stack (a veth sender's go into its peer's queues: into ``written``, delivered
        once NAPI's loop has run)."""
        n0, n1 = src.emitted, src.emitted_until(t1)
        if n1 <= n0:
            return
        frames = n1 - n0
        src.emitted = n1
        w = self.world
        dev = w.devices.get(src.device)
        if dev is not None and src.local and not dev.running:
            src.lost += dev.stack_refused(frames)
            return
        if dev is None or not dev.running:
            src.lost += frames
            return
        if src.local:
            rows = self._class_rows(src, dev, n0, n1)
            if isinstance(dev, Veth):
                peer = w.devices.get(dev.peer)
                if peer is None or not peer.running:
                    dev.add("tx_dropped", frames)
                    return
                # veth_xmit: into the peer's queues, what they take counted by Veth.sent_into
                ref = self.dp.accounts.refusal("veth_skb", dev)
                for q, part in self.dp.by_rx_queue(peer, rows):
                    written.append((peer, peer.rxq[q], part, ref))
                return
            dev.stack_xmit(self.dp, 0, t0, rows)
            return
        lay = self.facts.layout(src, dev)
        counts = lay.pair_frames(n0, n1)
        nz = np.flatnonzero(counts)
        rows_i = np.array([index[id(dev.rxq[int(q)])] for q in range(len(dev.rxq))], np.int64)
        np.add.at(arr, (rows_i[lay.pair_q[nz]], lay.pair_c[nz]), counts[nz])

    def _class_rows(self, src: Source, dev: NetDev, n0: int, n1: int) -> Rows:
        lay = self.facts.layout(src, dev)
        counts = lay.pair_frames(n0, n1)
        per_class = np.bincount(lay.pair_c, weights=counts, minlength=len(self.dp.classes))
        return _rows(per_class.astype(np.int64), self.dp.classes.rep)

    # ------------------------------------------------------------ NAPI

    def _serve(self, work: Work, budget: FloatArray, t0: int, t1: int) -> None:
        """Every CPU serves its instances: each its own poll pattern when the CPU has time,
        full 64-frame polls shared round-robin when it does not (``net_rx_action``)."""
        if not len(work):
            return
        plan = self._plan(work, t0, t1)
        self._follow_cycle(work, plan, False)
        need = np.bincount(work.cpu, weights=plan.work, minlength=len(budget))
        for cpu in np.flatnonzero(need > budget + 1e-9):
            self._saturated(work, plan, np.flatnonzero(work.cpu == cpu), float(budget[cpu]))
        self._follow_cycle(work, plan, True)
        used = self._poll(work, plan, t0)
        spent = np.minimum(np.bincount(work.cpu, weights=used, minlength=len(budget)), budget)
        budget -= spent
        self.dp.cpu.busy_ns += spent

    def _follow_cycle(self, work: Work, plan: Plan, at_most: bool) -> None:
        """Instances a cycling card feeds (``fast_card``): their CPUs take what the cycle
        gives them, in full polls, and wait for the cycle's next interrupt (``at_most``: a CPU
        short of time may take less)."""
        for i, (n, nxt) in work.cycle.items():
            if at_most and plan.served[i] <= n:
                continue
            w = work.rxqs[i].weight
            f = self.facts.dev_facts(work.devs[i])
            D = work.held[i] + work.arr[i]
            total = max(float(D.sum()), 1.0)
            eff = float(D @ f.cost) / total + self.facts.flush_per_frame(f, D, w) + f.poll / w
            sizes = full_sizes(n, w)
            plan.served[i] = n
            plan.polls[i] = plan.bursts[i] = len(sizes)
            plan.drops[i] = 0
            plan.peak[i] = work.rxqs[i].size
            plan.next_irq[i] = nxt
            plan.start[i] = -1
            plan.sched.pop(i, None)
            plan.work[i] = n * eff
            if i in plan.sizes or (D[f.bq >= 0].sum() > 0):
                plan.sizes[i] = sizes

    def _plan(self, work: Work, t0: int, t1: int) -> Plan:
        """What each instance's polls do this step when its CPU has the time: interrupts every
        ``cycle_ns`` (``rx-usecs`` at steady load); each takes what arrived before it; what
        arrived after the last one waits. Computed device by device over all its instances."""
        m = len(work)
        dt = t1 - t0
        D = work.held + work.arr
        demand = D.sum(axis=1)
        arrived = work.arr.sum(axis=1)
        lam = arrived / dt
        itr = np.array([r.itr_ns for r in work.rxqs], np.int64)
        weight = np.array([r.weight for r in work.rxqs], np.int64)
        size = np.array([r.size for r in work.rxqs], np.int64)
        cost = np.zeros(m)
        poll = np.zeros(m)
        targets = np.zeros(m, bool)
        sends = np.zeros(m, bool)
        per_poll = np.minimum(weight, np.maximum(1.0, lam * itr))
        for idx, f in self._by_device(work):
            Di = D[idx]
            cost[idx] = Di @ f.cost / np.maximum(demand[idx], 1)
            cost[idx] += self.facts.flush_many(f, Di, per_poll[idx])
            poll[idx] = f.poll
            targets[idx] = Di[:, f.bq >= 0].sum(axis=1) > 0
            sends[idx] = Di @ f.onward > 0
        plan = Plan(
            served=demand.copy(),
            polls=np.zeros(m, np.int64),
            bursts=np.zeros(m, np.int64),
            work=np.zeros(m),
            drops=np.zeros(m, np.int64),
            peak=np.zeros(m, np.int64),
            next_irq=np.full(m, t1, np.int64),
            start=np.full(m, -1, np.int64),
            sizes={},
        )
        fed = np.array([bool(work.fed(i)) for i in range(m)], bool)
        for i in np.flatnonzero(fed).tolist():  # a veth queue: one poll per sender poll
            feeds = max(1, sum(max(1, p.rows.total // 64 + 1) for p in work.fed(i)))
            self._set(plan, i, even_sizes(int(demand[i]), feeds, int(weight[i])), t1, targets[i])
        # frames further apart than rx-usecs: each one's interrupt polls it at once
        sparse = ~fed & (lam * np.maximum(itr, 1) < 1) & (demand <= arrived + weight)
        plan.polls[sparse] = plan.bursts[sparse] = demand[sparse]
        plan.peak[sparse] = demand[sparse] > 0
        for i in np.flatnonzero(sparse & targets).tolist():
            plan.sizes[i] = np.ones(int(demand[i]), np.int64)
        rest = np.flatnonzero(~fed & ~sparse)
        full_mask = np.zeros(m, bool)
        if not len(rest):
            cut_sends(self.facts, work, plan, full_mask, targets)
            plan.work = plan.served * cost + plan.polls * poll
            return plan
        args = [
            (lr, ar, float(poll[i]), int(itr[i]), int(weight[i]), int(size[i]))
            for i, lr, ar in zip(
                rest.tolist(),
                round_rates(lam[rest]).tolist(),
                np.round(cost[rest], 1).tolist(),
                strict=True,
            )
        ]
        pats = [napi_pattern(*a) for a in args]
        cycle = np.array([p.cycle_ns for p in pats])
        saturated = np.array([p.saturated or not p.sizes for p in pats], bool)
        grid = ~saturated & (np.abs(cycle - itr[rest]) < 0.01 * itr[rest])
        single = np.array([self.facts.single_source(work.devs[i]) is not None for i in rest], bool)
        on_grid = rest[grid & targets[rest] & single]
        full = rest[saturated & ~(grid & targets[rest] & single)]
        plan.polls[full] = plan.bursts[full] = -(-demand[full] // weight[full])
        plan.peak[full] = size[full]
        for i in full[targets[full]].tolist():
            plan.sizes[i] = full_sizes(int(demand[i]), int(weight[i]))
        steady = ~saturated & ~(grid & targets[rest] & single)
        calm = [p for p, s in zip(pats, steady, strict=True) if s]
        timing: dict[int, tuple[float, float, float, int, int, int, float]] = {}
        if (steady & sends[rest]).any():  # the share of its CPU an instance's neighbours
            load = lam * (cost + poll / per_poll)  # take, for the times of its polls
            other = np.clip(np.bincount(work.cpu, weights=load)[work.cpu] - load, 0.0, 0.9)
            for a, i, s in zip(args, rest.tolist(), steady & sends[rest], strict=True):
                if s:
                    timing[i] = (*a, float(other[i]))
        self._steady(work, plan, rest[steady], calm, timing, lam, targets, t0, t1)
        if len(on_grid):
            self._cycles(work, plan, on_grid, cost, poll, t0, t1)
        full_mask[full] = True
        cut_sends(self.facts, work, plan, full_mask, targets)
        plan.work = plan.served * cost + plan.polls * poll
        return plan

    def _steady(
        self,
        work: Work,
        plan: Plan,
        idx: IntArray,
        pats: list[Pattern],
        timing: dict[int, tuple[float, float, float, int, int, int, float]],
        lam: FloatArray,
        targets: npt.NDArray[np.bool_],
        t0: int,
        t1: int,
    ) -> None:
        """Instances at a steady rate: the pattern's cycle from their next interrupt on (and
        their polls' times, ``timing``: the pattern's arguments and the neighbours' share)."""
        if not len(idx):
            return
        D = work.held[idx] + work.arr[idx]
        demand = D.sum(axis=1)
        waiting = work.held[idx].sum(axis=1)
        cycle = np.array([p.cycle_ns for p in pats])
        per = np.array([sum(p.sizes) / len(p.sizes) for p in pats])
        nxt = np.array([work.rxqs[i].fast_irq for i in idx], np.int64)
        idle = nxt < t0  # idle until now: the interrupt comes with the first frame
        first = np.where(waiting > 0, t0, t0 + (1.0 / np.maximum(lam[idx], 1e-12)).astype(np.int64))
        nxt = np.where(idle, first, nxt)
        later = nxt >= t1
        plan.served[idx[later]] = 0
        plan.peak[idx[later]] = waiting[later]
        plan.next_irq[idx[later]] = nxt[later]
        k = np.floor((t1 - 1 - nxt) / cycle)
        last = nxt + k * cycle
        left = np.minimum(demand, np.round(lam[idx] * (t1 - last)).astype(np.int64))
        served = np.where(later, 0, demand - left)
        polls = np.where(served > 0, np.ceil(served / per), 0).astype(np.int64)
        go = ~later
        plan.served[idx[go]] = served[go]
        plan.polls[idx[go]] = plan.bursts[idx[go]] = polls[go]
        plan.next_irq[idx[go]] = (last + cycle)[go].astype(np.int64)
        plan.drops[idx[go]] = np.round(np.array([p.drops for p in pats])[go] * served[go])
        plan.peak[idx[go]] = np.array([int(p.peak) for p in pats], np.int64)[go]
        for k_, i in enumerate(idx.tolist()):
            if not go[k_]:
                continue
            if i in timing:
                ahead = float(waiting[k_] + lam[i] * max(0, int(nxt[k_]) - t0))
                at = int(nxt[k_])
                plan.sched[i] = steady_schedule(work.rxqs[i], *timing[i], ahead, at, t0, t1)
            if targets[i]:
                sizes = tile(pats[k_].sizes, int(served[k_]), work.rxqs[i].weight)
                self._set(plan, i, sizes, int(plan.next_irq[i]), True)

    def _by_device(self, work: Work) -> list[tuple[IntArray, DevFacts]]:
        """The instances of each device, with its per-class facts."""
        if work.groups is None:
            work.groups = self._by_device_of(work, np.arange(len(work), dtype=np.int64))
        return work.groups

    def _by_device_of(self, work: Work, idx: IntArray) -> list[tuple[IntArray, DevFacts]]:
        """``idx``'s instances grouped by device (as positions in ``idx``)."""
        seen: dict[str, list[int]] = {}
        for k, i in enumerate(idx.tolist()):
            seen.setdefault(work.devs[i].name, []).append(k)
        return [
            (np.array(ks, np.int64), self.facts.dev_facts(self.world.devices[name]))
            for name, ks in seen.items()
        ]

    def _set(self, plan: Plan, i: int, sizes: IntArray, next_irq: int, keep: bool) -> None:
        plan.served[i] = int(sizes.sum())
        plan.polls[i] = plan.bursts[i] = len(sizes)
        plan.next_irq[i] = next_irq
        if keep:
            plan.sizes[i] = sizes

    def _cycles(
        self,
        work: Work,
        plan: Plan,
        idx: IntArray,
        cost: FloatArray,
        poll: FloatArray,
        t0: int,
        t1: int,
    ) -> None:
        """Interrupts every ``rx-usecs`` for the instances ``idx``: exact boundaries of each
        cycle's polls from the queue's arrivals (``fast_polls.cycles``)."""
        m = len(idx)
        groups: dict[tuple[int, str], list[int]] = {}
        srcs: list[Source] = []
        for k, i in enumerate(idx.tolist()):
            src = self.facts.single_source(work.devs[i])
            assert src is not None
            srcs.append(src)
            groups.setdefault((src.index, work.devs[i].name), []).append(k)
        q = np.array([work.rxqs[i].index for i in idx], np.int64)
        kept = work.kept[idx]
        base = np.empty(m, np.int64)
        parts: list[tuple[IntArray, Callable[[IntArray], IntArray], SourceLayout]] = []
        part_of = np.empty(m, np.int64)
        for (_, name), ks in groups.items():
            sel = np.array(ks, np.int64)
            src = srcs[ks[0]]
            lay = self.facts.layout(src, self.world.devices[name])
            emitted_by = src.emitted_from(t0, (t1 - t0) * 2 + 10**6)
            part_of[sel] = len(parts)
            parts.append((sel, emitted_by, lay))
            n0 = emitted_by(np.array([t0]))
            base[sel] = lay.queue_frames(q[sel], np.repeat(n0, len(sel)))
        scaled = bool((kept < 1).any())

        def arrived(owner: IntArray, t: IntArray) -> IntArray:
            """Queue positions reached by ``t``: what the card let through, evenly."""
            if len(parts) == 1:
                _, emitted_by, lay = parts[0]
                got = lay.queue_frames(q[owner], emitted_by(t))
            else:
                got = np.empty(len(t), np.int64)
                which = part_of[owner]
                for k, (_, emitted_by, lay) in enumerate(parts):
                    mine = which == k
                    got[mine] = lay.queue_frames(q[owner[mine]], emitted_by(t[mine]))
            if not scaled:
                return got
            b = base[owner]
            out: IntArray = b + ((got - b) * kept[owner]).astype(np.int64)
            return out

        D = work.held[idx] + work.arr[idx]
        waiting = D.sum(axis=1) - work.arr[idx].sum(axis=1)
        start = base - waiting
        rxqs = [work.rxqs[i] for i in idx]
        nxt = np.array([r.fast_irq for r in rxqs], np.int64)
        for j in np.flatnonzero(nxt < t0).tolist():
            if waiting[j]:
                nxt[j] = t0
                continue

            def emitted(t: IntArray, j: int = j) -> IntArray:
                return arrived(np.full(len(t), j), t)

            nxt[j] = first_after(emitted, srcs[j].milli, t0)
        busy = nxt < t1
        calm = idx[~busy]
        plan.served[calm] = 0
        plan.peak[calm] = waiting[~busy]
        plan.next_irq[calm] = nxt[~busy]
        plan.start[calm] = start[~busy]
        sel = np.flatnonzero(busy)
        if not len(sel):
            return
        itr = np.array([rxqs[k].itr_ns for k in sel], np.int64)
        weight = np.array([rxqs[k].weight for k in sel], np.int64)
        size = np.array([rxqs[k].size for k in sel], np.int64)
        d64 = poll[idx[sel]] + cost[idx[sel]] * weight

        def arrived_sel(owner: IntArray, t: IntArray) -> IntArray:
            return arrived(sel[owner], t)

        cy = cycles(nxt[sel], itr, weight, size, d64, start[sel], t1, arrived_sel)
        ends = np.searchsorted(cy.owner, np.arange(len(sel) + 1))
        rows = idx[sel]
        plan.served[rows] = cy.served
        plan.polls[rows] = np.diff(ends)
        plan.bursts[rows] = cy.bursts
        plan.drops[rows] = cy.drops
        plan.peak[rows] = cy.peak
        plan.next_irq[rows] = cy.next_irq
        plan.start[rows] = start[sel]
        for k, i in enumerate(rows.tolist()):
            plan.sizes[i] = cy.sizes[ends[k] : ends[k + 1]]
            a, b = ends[k], ends[k + 1]
            plan.sched[i] = (cy.times[a:b], cy.sizes[a:b].astype(np.float64))

    def _saturated(self, work: Work, plan: Plan, idx: IntArray, budget: float) -> None:
        """NAPI round-robin on a saturated CPU: every instance gets up to the same number of
        frames in full polls; find that level so the time spent equals the budget."""
        D = work.held[idx] + work.arr[idx]
        demand = D.sum(axis=1).astype(np.float64)
        eff = np.empty(len(idx))
        vhost = {
            int(i): full_sends(self.facts, work, int(i), int(demand[k])) for k, i in enumerate(idx)
        }
        for k, i in enumerate(idx):
            f = self.facts.dev_facts(work.devs[i])
            sends = vhost[int(i)]
            w = float(work.rxqs[i].weight) if sends is None else demand[k] / max(len(sends), 1)
            total = max(float(demand[k]), 1.0)
            eff[k] = (
                float(D[k] @ f.cost) / total + self.facts.flush_per_frame(f, D[k], w) + f.poll / w
            )
        served = water_fill(demand, eff, budget)
        for k, i in enumerate(idx):
            w = work.rxqs[i].weight
            got = float(served[k])
            sends = vhost[int(i)]
            # the poll (or vhost send) under way when the budget ran out finishes: what it
            # takes past the budget is the CPU's debt to the next step
            if sends is not None:  # whole vhost sends (handle_tx_copy)
                n = int(np.searchsorted(np.cumsum(sends), got - 1e-9, side="left")) + 1
                sizes = sends[: min(n, len(sends))] if got > 1e-9 else sends[:0]
                frames = int(sizes.sum())
            else:
                whole = int(np.ceil(got / w - 1e-9)) * w
                frames = min(whole, int(demand[k]))
                sizes = full_sizes(frames, w)
            self.cpu_debt[work.cpu[i]] += max(0.0, (frames - got) * float(eff[k]))
            plan.served[i] = frames
            plan.polls[i] = plan.bursts[i] = len(sizes)
            plan.drops[i] = 0
            plan.peak[i] = work.rxqs[i].size
            plan.start[i] = -1
            plan.sched.pop(int(i), None)
            if i in plan.sizes:
                plan.sizes[int(i)] = sizes
            plan.work[i] = frames * eff[k]

    def _poll(self, work: Work, plan: Plan, t0: int) -> FloatArray:
        """Run the planned polls through the core and keep what is left in the rings; returns
        each instance's CPU time."""
        D = work.held + work.arr
        total = D.sum(axis=1)
        served = np.minimum(plan.served, total)
        waiting = work.held.sum(axis=1)
        from_held = np.minimum(served, waiting)
        take = take_rows(work.held, from_held, self.steps)
        take += take_rows(work.arr, served - from_held, self.steps)
        rest = D - take
        size = np.array([r.size for r in work.rxqs], np.int64)
        # a veth's backlog: what ``process_queue`` still holds counts against no limit (this
        # arithmetic splices nothing: ``veth.process_queue_after`` poll by poll in the loop)
        proc0 = np.array([r.proc for r in work.rxqs], np.int64)
        proc = np.where(proc0 >= served, proc0 - served, 0)
        over = np.maximum(0, rest.sum(axis=1) - size - proc) + plan.drops
        lost = take_rows(rest, over, self.steps)
        rest -= lost
        lost_n = lost.sum(axis=1)
        kept_n = rest.sum(axis=1)
        rep = self.dp.classes.rep
        held = _rows_many(rest, rep)
        peak = np.minimum(size, np.maximum(plan.peak, kept_n)).tolist()
        columns = zip(
            work.devs,
            work.rxqs,
            held,
            plan.next_irq.tolist(),
            peak,
            served.tolist(),
            plan.polls.tolist(),
            lost_n.tolist(),
            strict=True,
        )
        for i, (dev, rxq, h, nxt, pk, n, polls, n_lost) in enumerate(columns):
            fed = work.fed(i)
            if n_lost and not fed:
                self._overflow(dev, rxq, n_lost)
            rxq.held = h
            rxq.proc = min(int(proc[i]), h.total)
            rxq.fast_irq = nxt
            if pk > rxq.peak:
                rxq.peak = pk
            rxq.rx_packets += n
            rxq.polls += polls
            if fed:
                self._accept_fed(fed, int(total[i]), int(served[i] + kept_n[i]))
        feeds = getattr(self.dp.io, "feeds", None)
        used = np.zeros(len(work))
        rows = _rows_many(take, rep)
        for idx, f in self._by_device(work):
            dev = work.devs[int(idx[0])]
            if feeds is not None:  # the instances that send frames on: their polls' times
                for i in idx[take[idx] @ f.onward > 0].tolist():
                    q, cpu, polls = work.rxqs[i].index, int(work.cpu[i]), int(plan.polls[i])
                    feeds.append(Feed(dev, q, cpu, take[i], polls, plan.sched.get(i)))
            shapes = self.facts.shapes(work, plan, idx, take)
            batch = [
                (work.rxqs[i].index, int(work.cpu[i]), rows[i], shapes[i]) for i in idx.tolist()
            ]
            used[idx] = self.dp.napi_poll_many(dev, t0, batch)
        for rxq, n in zip(work.rxqs, served.tolist(), strict=True):
            rxq.fast_pos += n
        return used

    def _overflow(self, dev: NetDev, rxq: RxQueue, n: int) -> None:
        """Frames a full ring could not hold: a NIC's ``rx_dropped``, a tap writer that must
        wait (a veth sender's refusals are counted with its offers)."""
        if isinstance(dev, Tun):
            dev.throttled += n
        else:
            rxq.rx_dropped += n
            dev.add("rx_dropped", n)

    def _fed(self, fed: list[Pending]) -> Work:
        """Veth queues that senders filled this step: served on the sending CPU."""
        C = len(self.dp.classes)
        of = self.dp.classes.of_entry
        order: list[tuple[str, int, int]] = []
        groups: dict[tuple[str, int, int], list[Pending]] = {}
        for p in fed:
            key = (p.dev.name, p.rxq.index, p.cpu)
            if key not in groups:
                order.append(key)
            groups.setdefault(key, []).append(p)
        m = len(order)
        held = np.zeros((m, C), np.int64)
        arr = np.zeros((m, C), np.int64)
        devs: list[NetDev] = []
        rxqs: list[RxQueue] = []
        cpus = np.empty(m, np.int64)
        for i, key in enumerate(order):
            ps = groups[key]
            rxq = ps[0].rxq
            devs.append(ps[0].dev)
            rxqs.append(rxq)
            cpus[i] = key[2]
            if rxq.held.total:  # what waited is served with the first feed
                np.add.at(held[i], of[rxq.held.entry], rxq.held.count)
                rxq.held = Rows.empty()
            for p in ps:
                np.add.at(arr[i], of[p.rows.entry], p.rows.count)
        return Work(devs, rxqs, cpus, held, arr, np.ones(m), [groups[k] for k in order])

    def _accept_fed(self, feeds: list[Pending], total: int, kept: int) -> None:
        """The offers into a veth queue: the ring took ``kept`` of what was waiting and
        offered; the refused share of each offer is counted as its sender counts it."""
        offered = np.array([p.rows.total for p in feeds], dtype=np.float64)
        refused = max(0, total - kept)
        lost = share(refused, offered)
        for p, n_lost in zip(feeds, lost, strict=True):
            ok = p.rows.head(p.rows.total - int(n_lost))
            self.dp.accounts.accepted(p.ref, ok, into_rx=True)
            self.dp.accounts.refused(p.ref, p.dev, int(n_lost))


def _rows(counts: IntArray, rep: IntArray) -> Rows:
    """Class counts as rows, one representative entry per class."""
    nz = np.flatnonzero(counts)
    return Rows(rep[nz], counts[nz], False)


def _rows_many(counts: IntArray, rep: IntArray) -> list[Rows]:
    """``_rows`` for every row of a matrix."""
    i, c = np.nonzero(counts)
    ends = np.searchsorted(i, np.arange(len(counts) + 1))
    entry = rep[c]
    value = counts[i, c]
    return [Rows(entry[a:b], value[a:b], False) for a, b in itertools.pairwise(ends.tolist())]
