"""Fast mode: the same rules as exact mode, as arithmetic over a step of many polls.

A step moves every frame source's contiguous range of frames (``frames_per_entry``) into the
rings, lets each CPU serve its NAPI instances, and drains the transmit rings -- counts per
flow-table entry, a few NumPy operations per instance whatever the number of frames.

How an instance's polls look follows exact mode's rules: its interrupt fires at most once per
``rx-usecs``; each poll takes at most 64 frames from the ring's head, and a poll that takes
fewer completes. ``napi_pattern`` solves that for a steady arrival rate once (the poll sizes of
one period) and the step tiles it; a CPU with more work than time polls full budgets,
round-robin. The polls are contiguous ranges of the queue's frame sequence, so how many frames
of each poll go to each bulk queue -- and so the devmap flushes, ceil(k / 16) per poll -- is
counted exactly from prefix sums over the queue's cycle of flow-table entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.core.filter import BROADCAST, RR_CLASS, TX_RR
from xdptui.sim.datapath import Datapath, Refusal
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import flush_cost
from xdptui.sim.fast_polls import (
    arrived_fn,
    cycle_sizes,
    even_sizes,
    fifo_take,
    first_after,
    full_polls,
    full_sizes,
    napi_pattern,
    round_rate,
    spread_over,
    tile,
    water_fill,
)
from xdptui.sim.fast_tx import Claim, drain
from xdptui.sim.kconst import XDP_TX
from xdptui.sim.splitting import share, take_share
from xdptui.sim.traffic import Source, frames_per_entry
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SETTLE_NS = 1_000  # after a change, steps restart this short and double
MAX_STEP_NS = 50_000_000  # the longest step
GROWTH = 2  # each quiet step this many times the last (4 blurs a tap ring filling)
MAX_CHAIN = 6  # veth hops served within one step


@dataclass
class Pending:
    """Frames put into a veth queue during a step, served in the same step."""

    dev: NetDev
    rxq: RxQueue
    rows: Rows
    cpu: int
    ref: Refusal


class FastIO:
    def __init__(self, fast: Fast) -> None:
        self.fast = fast
        self.claims: list[Claim] = []
        self.pending: list[Pending] = []

    def tx(self, ring_dev: NetDev, ring: TxRing, rows: Rows, t: int, ref: Refusal) -> int:
        wire = float(rows.count @ self.fast.world.entries.wire_bytes[rows.entry])
        self.claims.append(Claim(ring_dev, ring, rows, ref, wire))
        return rows.total

    def rx(self, dev: NetDev, rxq: RxQueue, rows: Rows, t: int, cpu: int, ref: Refusal) -> int:
        self.pending.append(Pending(dev, rxq, rows, cpu, ref))
        return rows.total


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


@dataclass
class Instance:
    """A NAPI instance's work for one step."""

    dev: NetDev
    rxq: RxQueue
    cpu: int
    demand: IntArray  # frames per entry: waiting plus arriving
    arrived: int
    pending: list[Pending] = field(default_factory=list)
    kept: float = 1.0  # the share of the arrivals the card took


class Fast:
    def __init__(self, world: World, dp: Datapath) -> None:
        self.world = world
        self.dp = dp
        self.grid = Grid()
        self.steps = 0
        self._dt = 1
        self._chains: dict[tuple[str, int], FloatArray] = {}
        self._derived_cache: dict[tuple[str, int], Derived] = {}
        self._seq_cache: dict[tuple[int, str, int, int], tuple[IntArray, IntArray]] = {}

    # ------------------------------------------------------------ time

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
        dp.compile()
        self.steps += 1
        dt = t1 - t0
        self._dt = dt
        n = len(w.entries)
        arrivals: dict[str, IntArray] = {}
        for src in w.sources:
            self._emit(src, t1, arrivals, n, t0)
        budget = np.full(w.nr_cpus, float(dt))
        work = [
            Instance(dev, rxq, rxq.irq_cpu, rxq.counts + arr_q, int(arr_q.sum()))
            for dev in w.devices.values()
            for rxq, arr_q in zip(dev.rxq, self._by_queue(dev, arrivals.get(dev.name)), strict=True)
            if rxq.counts.any() or arr_q.any()
        ]
        if w.cards:
            self._card_admit(work, t0, t1)
        self._serve(work, budget, t0, t1)
        for _ in range(MAX_CHAIN):
            if not io.pending:
                break
            fed, io.pending = io.pending, []
            self._serve(self._fed(fed), budget, t0, t1)
        for p in io.pending:  # a loop of veth hops: what is left is dropped
            dp.refused(p.ref, p.dev, p.rows.total)
        io.pending = []
        drain(self.world, self.dp, io.claims, dt)

    def _emit(self, src: Source, t1: int, arrivals: dict[str, IntArray], n: int, t0: int) -> None:
        n1 = src.emitted_until(t1)
        if n1 <= src.emitted:
            return
        L = len(src.table)
        counts = np.zeros(n, dtype=np.int64)
        counts[src.offset : src.offset + L] = frames_per_entry(src.emitted, n1, L)
        frames = n1 - src.emitted
        src.emitted = n1
        dev = self.world.devices.get(src.device)
        if dev is None or not dev.running:
            src.lost += frames
            return
        if src.local:
            if isinstance(dev, Veth):
                peer = self.world.devices.get(dev.peer)
                if peer is None or not peer.running:
                    dev.add("tx_dropped", frames)
                    return
                # veth_xmit: into the peer's queues, the sender counting what they take
                for q, part in self.dp.by_rx_queue(peer, _rows(counts)):
                    self.dp.io.rx(peer, peer.rxq[q], part, t0, 0, self.dp.refusal("veth_skb", dev))
                return
            dev.stack_xmit(self.dp, 0, t0, _rows(counts))
            return
        if dev.name in arrivals:
            arrivals[dev.name] += counts
        else:
            arrivals[dev.name] = counts

    def _card_admit(self, work: list[Instance], t0: int, t1: int) -> None:
        """The cards' DMA budget, as exact mode applies it: frames a full ring would refuse
        take no DMA; of the rest, what the card cannot move is ``rx_dropped``."""
        w = self.world
        by_card: dict[str, list[tuple[Instance, int]]] = {}
        for inst in work:
            dev = inst.dev
            if not isinstance(dev, Nic) or dev.card not in w.cards or not inst.arrived:
                continue
            # what the CPU could take at most, plus the ring's slots: the rest finds it full
            c = self.dp.compiled[dev.name]
            unit = float(inst.demand @ c.cost) / max(int(inst.demand.sum()), 1)
            unit += self._flush_share(inst, 64.0) + dev.costs().poll / inst.rxq.weight
            waiting = int(inst.demand.sum()) - inst.arrived
            room = max(0, int((t1 - t0) / max(unit, 1e-9)) + inst.rxq.size - waiting)
            by_card.setdefault(dev.card, []).append((inst, min(inst.arrived, room)))
        for name, insts in by_card.items():
            card = w.cards[name]
            offered = np.array([ok for _, ok in insts], dtype=np.float64)
            # transmit takes DMA too: each frame taken sends r frames out of the card's ports
            # (XDP_TX, redirects to them), at most what their wires carry this step
            sent = sum(float(self._tx_share(inst) * ok) for inst, ok in insts)
            r = sent / max(float(offered.sum()), 1.0)
            wires = sum(
                _wire_frames(d, t1 - t0)
                for d in w.devices.values()
                if isinstance(d, Nic) and d.card == name
            )
            taken, card.tx_ahead = card.admit_count(int(offered.sum()), t0, t1, r, wires)
            if taken >= offered.sum():
                continue
            for (inst, ok), got in zip(insts, share(taken, offered), strict=True):
                lost = ok - int(got)
                if lost <= 0:
                    continue
                arr = inst.demand - inst.rxq.counts
                cut = take_share(arr, lost, self.steps)
                inst.demand = inst.demand - cut
                inst.kept = (inst.arrived - lost) / max(inst.arrived, 1)
                inst.arrived -= lost
                inst.dev.add("rx_missed_errors", lost)  # port-level discards, not a ring

    def _by_queue(self, dev: NetDev, arr: IntArray | None) -> list[IntArray]:
        nq = len(dev.rxq)
        if arr is None:
            z = np.zeros(len(self.world.entries), np.int64)
            return [z] * nq
        if nq == 1:
            return [arr]
        if isinstance(dev, Nic):
            q = dev.queue_of_entry
        else:
            q = (self.world.entries.rss_hash % nq).astype(np.int64)
        return [np.where(q == i, arr, 0) for i in range(nq)]

    def _fed(self, fed: list[Pending]) -> list[Instance]:
        """Veth queues that senders filled this step: served on the sending CPU."""
        by_key: dict[tuple[str, int, int], Instance] = {}
        n = len(self.world.entries)
        for p in fed:
            key = (p.dev.name, p.rxq.index, p.cpu)
            inst = by_key.get(key)
            counts = p.rows.per_entry(n)
            if inst is None:
                inst = by_key[key] = Instance(p.dev, p.rxq, p.cpu, p.rxq.counts.copy(), 0)
                p.rxq.counts[:] = 0
            inst.demand = inst.demand + counts
            inst.arrived += p.rows.total
            inst.pending.append(p)
        return list(by_key.values())

    # ------------------------------------------------------------ NAPI

    def _serve(self, work: list[Instance], budget: FloatArray, t0: int, t1: int) -> None:
        """Every CPU serves its instances: each its own poll pattern when the CPU has time,
        full 64-frame polls shared round-robin when it does not (``net_rx_action``)."""
        dp = self.dp
        dt = t1 - t0
        by_cpu: dict[int, list[Instance]] = {}
        for inst in work:
            by_cpu.setdefault(inst.cpu, []).append(inst)
        for cpu, insts in by_cpu.items():
            plans = [self._plan(inst, t0, t1) for inst in insts]
            need = sum(pl.work for pl in plans)
            if need > budget[cpu]:
                plans = self._saturated(insts, plans, float(budget[cpu]))
            used = 0.0
            for inst, pl in zip(insts, plans, strict=True):
                used += self._poll(inst, pl, t0)
            spent = min(used, float(budget[cpu]))
            budget[cpu] -= spent
            dp.cpu.busy_ns[cpu] += spent
            _ = dt

    def _plan(self, inst: Instance, t0: int, t1: int) -> Plan:
        """What an instance's polls do this step when its CPU has the time: interrupts every
        ``cycle_ns`` (``rx-usecs`` at steady load); each takes what arrived before it, in the
        pattern's poll sizes; what arrived after the last one waits."""
        rxq = inst.rxq
        dt = t1 - t0
        demand = int(inst.demand.sum())
        c = self.dp.compiled[inst.dev.name]
        a = float(inst.demand @ c.cost) / max(demand, 1) + self._flush_share(inst)
        p = inst.dev.costs().poll
        lam = inst.arrived / dt
        if inst.pending:  # a veth queue: one poll per sender poll that fed it
            feeds = max(1, sum(self._sender_polls(q) for q in inst.pending))
            sizes = even_sizes(demand, feeds, rxq.weight)
            return Plan(demand, sizes, demand * a + len(sizes) * p, 0, 0.0, t1)
        if lam * max(rxq.itr_ns, 1) < 1 and demand <= inst.arrived + rxq.weight:
            # frames further apart than rx-usecs: each one's interrupt polls it at once
            sizes = np.ones(demand, np.int64)
            return Plan(demand, sizes, demand * (a + p), 0, 1.0, t1)
        pat = napi_pattern(round_rate(lam), round(a, 1), p, rxq.itr_ns, rxq.weight, rxq.size)
        on_grid = not pat.saturated and abs(pat.cycle_ns - rxq.itr_ns) < 0.01 * rxq.itr_ns
        if on_grid and self._derived(inst.dev).targets:
            # its polls feed bulk queues: their exact boundaries decide the flushes
            plan = self._cycles(inst, t0, t1, a, p)
            if plan is not None:
                return plan
        if pat.saturated or not pat.sizes:
            sizes = full_sizes(demand, rxq.weight)
            return Plan(demand, sizes, demand * a + len(sizes) * p, 0, float(rxq.size), t1)
        nxt = rxq.fast_irq
        waiting = demand - inst.arrived
        if nxt < t0:  # idle until now: the interrupt comes with the first frame
            nxt = t0 if waiting else t0 + int(1.0 / max(lam, 1e-12))
        if nxt >= t1:
            return Plan(0, np.zeros(0, np.int64), 0.0, 0, float(waiting), nxt)
        k = int((t1 - 1 - nxt) // pat.cycle_ns)
        last = nxt + k * pat.cycle_ns
        left = min(demand, round(lam * (t1 - last)))
        served = demand - left
        if self._derived(inst.dev).targets:
            sizes = tile(pat.sizes, served, rxq.weight)
        else:  # nothing per poll to count: just how many polls
            per = sum(pat.sizes) / len(pat.sizes)
            sizes = even_sizes(served, int(np.ceil(served / per)) if served else 0, rxq.weight)
        drops = round(pat.drops * served)
        work = served * a + len(sizes) * p
        return Plan(served, sizes, work, drops, pat.peak, int(last + pat.cycle_ns))

    def _cycles(self, inst: Instance, t0: int, t1: int, a: float, p: float) -> Plan | None:
        """Interrupts every ``rx-usecs``: cycle k's first poll at tau_k takes what arrived since
        the previous cycle's last poll began, 64 at most; a full poll is followed by another
        one poll later, which takes what is waiting then. Frame counts are the queue's
        arrivals by each instant -- prefix sums over its source's cycle of entries -- so the
        polls are the contiguous ranges exact mode polls."""
        q = self._queue_index(inst)
        if q is None:
            return None
        src, prefix, per_cycle = q
        rxq = inst.rxq
        itr = rxq.itr_ns
        w = rxq.weight
        emitted = arrived_fn(src, prefix, per_cycle)
        base = int(emitted(np.array([t0]))[0])

        def arrived(t: IntArray) -> IntArray:  # what the card let through, evenly
            out: IntArray = base + ((emitted(t) - base) * inst.kept).astype(np.int64)
            return out

        waiting = int(inst.demand.sum()) - inst.arrived
        start = base - waiting  # queue index of the oldest waiting frame
        nxt = rxq.fast_irq
        if nxt < t0:
            nxt = t0 if waiting else first_after(src, t0, arrived)
        if nxt >= t1:
            return Plan(0, np.zeros(0, np.int64), 0.0, 0, float(waiting), nxt, start)
        tau = nxt + itr * np.arange(int((t1 - 1 - nxt) // itr) + 1, dtype=np.int64)
        d64 = p + a * w
        at_tau = arrived(tau)
        most = int(np.max(np.diff(np.concatenate(([start], at_tau))))) if len(tau) else 0
        jmax = min(1 + rxq.size // w, most // w + 2)
        offsets = (d64 * np.arange(jmax + 1)).astype(np.int64)
        at_j = arrived((tau[None, :] + offsets[:, None]).ravel()).reshape(jmax + 1, len(tau))
        full = full_polls(at_j, start, w)
        last_start = np.take_along_axis(at_j, full[None, :], axis=0)[0]
        begin = np.concatenate(([start], last_start[:-1]))
        last = np.minimum(last_start - begin - w * full, w)
        sizes = cycle_sizes(full, np.maximum(last, 0), w)
        served = int(sizes.sum())
        drops = int(np.maximum(at_tau - begin - rxq.size, 0).sum())
        work = served * a + len(sizes) * p
        peak = float(np.max(at_tau - begin)) if len(tau) else float(waiting)
        return Plan(served, sizes, work, drops, peak, int(tau[-1] + itr), start, len(tau))

    def _queue_index(self, inst: Instance) -> tuple[Source, IntArray, int] | None:
        """The single source feeding a queue, the prefix count of its cycle's entries that
        land on the queue, and how many land per cycle."""
        seq = self._sequence(inst)
        if seq is None:
            return None
        order, prefix = seq
        src = next(s for s in self.world.sources if _lands_on(self.world, s) is inst.dev)
        return src, prefix, len(order)

    def _saturated(self, insts: list[Instance], plans: list[Plan], budget: float) -> list[Plan]:
        """NAPI round-robin on a saturated CPU: every instance gets up to the same number of
        frames in full polls; find that level so the time spent equals the budget."""
        out: list[Plan] = []
        demand = np.array([float(inst.demand.sum()) for inst in insts])
        cost = np.array([pl.work / max(pl.frames, 1) if pl.frames else 1.0 for pl in plans])
        eff = np.array(
            [
                float(inst.demand @ self.dp.compiled[inst.dev.name].cost) / max(d, 1)
                + self._flush_share(inst, float(inst.rxq.weight))
                + inst.dev.costs().poll / inst.rxq.weight
                for inst, d in zip(insts, demand, strict=True)
            ]
        )
        _ = cost
        served = water_fill(demand, eff, budget)
        for inst, s, pl in zip(insts, served, plans, strict=True):
            frames = int(s + 1e-9)
            if frames < int(inst.demand.sum()):  # still busy: the next poll goes on next step
                frames -= frames % inst.rxq.weight
            sizes = full_sizes(frames, inst.rxq.weight)
            out.append(Plan(frames, sizes, 0.0, 0, float(inst.rxq.size), pl.next_irq))
        return out

    def _poll(self, inst: Instance, pl: Plan, t0: int) -> float:
        """Run the planned polls through the core and keep what is left in the ring."""
        dev, rxq = inst.dev, inst.rxq
        demand = inst.demand
        total = int(demand.sum())
        served = min(pl.frames, total)
        waiting = rxq.counts if not inst.pending else np.zeros_like(demand)
        if served >= total:
            take, rest = demand, np.zeros_like(demand)
        else:
            take = fifo_take(waiting, demand - waiting, served, self.steps)
            rest = demand - take
        over = max(0, int(rest.sum()) - rxq.size) + pl.drops
        if over:
            lost = take_share(rest, over, self.steps)
            rest = rest - lost
            self._overflow(inst, int(lost.sum()))
        rxq.counts = rest
        rxq.fast_irq = pl.next_irq
        rxq.peak = max(rxq.peak, min(rxq.size, int(max(pl.peak, rest.sum()))))
        rxq.rx_packets += served
        rxq.polls += len(pl.sizes)
        if inst.pending:
            self._accept_fed(inst, served + int(rest.sum()))
        rows = _rows(take)
        shape = self._shape(inst, rows, pl.sizes, pl.start, pl.bursts or len(pl.sizes))
        out = self.dp.napi_poll(dev, rxq.index, inst.cpu, t0, rows, shape)
        rxq.fast_pos += served
        return out.cost_ns

    def _overflow(self, inst: Instance, n: int) -> None:
        """Frames a full ring could not hold: a NIC's ``rx_dropped``, a tap writer that must
        wait, a veth sender's ``tx_dropped`` (settled with the senders' offers)."""
        if inst.pending:
            return  # refused offers are counted in _accept_fed
        dev = inst.dev
        if isinstance(dev, Tun):
            dev.throttled += n
        else:
            inst.rxq.rx_dropped += n
            dev.add("rx_dropped", n)

    def _accept_fed(self, inst: Instance, kept: int) -> None:
        """The offers into a veth queue: the ring took ``kept`` of what was waiting and
        offered; the refused share of each offer is counted as its sender counts it."""
        offered = np.array([p.rows.total for p in inst.pending], dtype=np.float64)
        total = int(inst.demand.sum())
        refused = max(0, total - kept)
        lost = share(refused, offered)
        for p, n_lost in zip(inst.pending, lost, strict=True):
            ok = p.rows.head(p.rows.total - int(n_lost))
            self.dp.accepted(p.ref, ok, into_rx=True)
            self.dp.refused(p.ref, p.dev, int(n_lost))

    def _sender_polls(self, p: Pending) -> int:
        return max(1, p.rows.total // 64 + 1)

    def _flush_share(self, inst: Instance, per_poll: float | None = None) -> float:
        """CPU ns per frame for bulk flushes and for the veth peers its frames wake on the
        same CPU: a poll of m frames sends k = r m of them to a target, in ceil(k / 16)
        flushes (``bq_enqueue``, ``xdp_do_flush``)."""
        frames = inst.demand
        total = float(frames.sum())
        if not total:
            return 0.0
        derived = self._derived(inst.dev)
        out = float(frames @ derived.chain) / total
        if not derived.targets:
            return out
        rxq = inst.rxq
        if per_poll is None:
            lam = inst.arrived / max(self._dt, 1)
            per_poll = min(float(rxq.weight), max(1.0, lam * rxq.itr_ns))
        for mask, flush in derived.targets:
            k = float(frames[mask].sum()) / total * per_poll
            out += flush * np.ceil(k / 16) / per_poll
        return out

    def _tx_share(self, inst: Instance) -> float:
        """Frames of this instance that leave by a port of its own card, per frame."""
        d = inst.demand
        total = float(d.sum())
        return float(d @ self._derived(inst.dev).tx_out) / total if total else 0.0

    def _derived(self, dev: NetDev) -> Derived:
        """Per-entry facts a step's arithmetic needs, computed once per configuration."""
        key = (dev.name, self.dp.compiled_epoch)
        hit = self._derived_cache.get(key)
        if hit is not None:
            return hit
        c = self.dp.compiled[dev.name]
        targets: list[tuple[npt.NDArray[np.bool_], float]] = []
        for target in np.unique(c.bq_class[c.bq_class != -1]):
            if target < 0 and target != RR_CLASS:
                continue
            tgt = self.world.by_ifindex.get(int(target)) if target >= 0 else None
            flush = flush_cost(dev, tgt) if tgt is not None else 80.0
            targets.append((c.bq_class == target, flush))
        tx_out = (c.act == XDP_TX) & (c.mode is not None)
        card = dev.card if isinstance(dev, Nic) else None
        for ifindex in np.unique(c.target[c.target >= 0]):
            tgt = self.world.by_ifindex.get(int(ifindex))
            if isinstance(tgt, Nic) and tgt.card == card:
                tx_out |= (c.target == ifindex) & (c.err == 0)
        out = Derived(targets, tx_out.astype(np.float64), self._chain(dev))
        if len(self._derived_cache) > 256:
            self._derived_cache.clear()
        self._derived_cache[key] = out
        return out

    def _chain(self, dev: NetDev, depth: int = 0) -> FloatArray:
        """Per entry, the CPU ns its frame costs further on the same CPU: a veth peer's
        NAPI runs on the sender's CPU (and its own XDP_TX or redirect into another veth)."""
        key = (dev.name, self.dp.compiled_epoch)
        hit = self._chains.get(key)
        if hit is not None:
            return hit
        c = self.dp.compiled[dev.name]
        n = len(c.act)
        out = np.zeros(n)
        targets: list[tuple[npt.NDArray[np.bool_], NetDev]] = []
        if isinstance(dev, Veth):
            peer = self.world.devices.get(dev.peer)
            if peer is not None:
                targets.append((c.act == XDP_TX, peer))
        for ifindex in np.unique(c.target[c.target >= 0]):
            tgt = self.world.by_ifindex.get(int(ifindex))
            if isinstance(tgt, Veth):
                peer = self.world.devices.get(tgt.peer)
                if peer is not None:
                    targets.append(((c.target == ifindex) & (c.err == 0), peer))
        for mask, peer in targets:
            if depth >= MAX_CHAIN or peer.name not in self.dp.compiled:
                continue
            pc = self.dp.compiled[peer.name].cost + peer.costs().poll / 64
            out[mask] += (pc + self._chain(peer, depth + 1))[mask]
        self._chains[key] = out
        return out

    # ------------------------------------------------------------ per-poll shape

    def _shape(
        self, inst: Instance, rows: Rows, sizes: IntArray, plan_start: int, bursts: int
    ) -> PollShape:
        """Per poll, how many frames go to each bulk queue: prefix sums over the queue's cycle
        of entries, cut at the polls' contiguous boundaries."""
        polls = len(sizes)
        shape = PollShape(polls, bursts)
        c = self.dp.compiled[inst.dev.name]
        if not rows.total or polls == 0:
            return shape
        cls_rows = c.bq_class[rows.entry]
        classes = np.unique(cls_rows[cls_rows != -1])
        if c.master is not None:
            tx = c.act[rows.entry] == XDP_TX
            rr = tx & (c.tx_slave[rows.entry] == TX_RR)
            if np.any(rr):
                classes = np.union1d(classes, [RR_CLASS])
        if not len(classes):
            return shape
        seq = self._sequence(inst)
        if seq is None:
            for cls in classes:
                n = int(rows.count[cls_rows == cls].sum())
                shape.classes[int(cls)] = spread_over(n, sizes)
            return shape
        order, _ = seq
        L = len(order)
        start = plan_start if plan_start >= 0 else inst.rxq.fast_pos
        bounds = start + np.concatenate(([0], np.cumsum(sizes)))
        seq_cls = c.bq_class[order]
        for cls in classes:
            mask = seq_cls == cls
            prefix = np.concatenate(([0], np.cumsum(mask)))
            f = (bounds // L) * prefix[-1] + prefix[bounds % L]
            per_poll = np.diff(f)  # the kernel's counts; rows may differ by a fluid rounding
            shape.classes[int(cls)] = per_poll
            keys = c.key[order]
            if len(np.unique(keys[mask])) > 1:
                pos = np.flatnonzero(mask)
                i = np.searchsorted(pos, bounds[:-1] % L) % len(pos)
                shape.first_key[int(cls)] = keys[pos[i]]
        if BROADCAST in shape.classes:
            pass
        return shape

    def queue_order(self, dev: NetDev, rxq: RxQueue) -> IntArray | None:
        """The entries a queue's next frames come as, from where its sequence stands (for
        laying its counts out as descriptors)."""
        seq = self._sequence(Instance(dev, rxq, rxq.irq_cpu, rxq.counts, 0))
        if seq is None:
            return None
        order = seq[0]
        return np.roll(order, -(rxq.fast_pos % len(order)))

    def _sequence(self, inst: Instance) -> tuple[IntArray, IntArray] | None:
        """The queue's frames in arrival order over one cycle of its (single) source."""
        dev, rxq = inst.dev, inst.rxq
        srcs = [s for s in self.world.sources if _lands_on(self.world, s) is dev]
        if len(srcs) != 1 or inst.pending:
            return None
        src = srcs[0]
        key = (src.index, dev.name, rxq.index, len(dev.rxq) * 1_000_003 + id(src.table) % 997)
        hit = self._seq_cache.get(key)
        if hit is None:
            idx = np.arange(len(src.table), dtype=np.int64) + src.offset
            if isinstance(dev, Nic):
                q = dev.queue_of_entry[idx]
            else:
                q = (self.world.entries.rss_hash[idx] % len(dev.rxq)).astype(np.int64)
            on_q = q == rxq.index
            order = idx[on_q]
            if not len(order):
                return None
            hit = (order, np.concatenate(([0], np.cumsum(on_q))).astype(np.int64))
            self._seq_cache[key] = hit
        return hit


@dataclass(frozen=True)
class Derived:
    """A device's per-entry arithmetic inputs (one configuration's)."""

    targets: list[tuple[npt.NDArray[np.bool_], float]]  # bulk queue membership, flush cost
    tx_out: FloatArray  # 1 where the frame leaves by a port of the same card
    chain: FloatArray  # CPU ns further on the same CPU (veth peers)


@dataclass
class Plan:
    frames: int
    sizes: IntArray
    work: float
    drops: int
    peak: float
    next_irq: int
    start: int = -1  # queue index of the first frame taken (-1: not known)
    bursts: int = 0  # interrupts in the step (0: one per poll)


def _wire_frames(nic: Nic, dt: int) -> int:
    """Frames of the smallest size a port's wire (and its driver) can send in ``dt``."""
    pps = nic.speed_bps / (8.0 * 84)
    if nic.drv.tx_pps_max:
        pps = min(pps, nic.drv.tx_pps_max)
    return int(pps * dt / 1e9)


def _lands_on(world: World, src: Source) -> NetDev | None:
    dev = world.devices.get(src.device)
    if dev is None:
        return None
    if not src.local:
        return dev
    if isinstance(dev, Veth):
        return world.devices.get(dev.peer)
    return None


def _rows(counts: IntArray) -> Rows:
    nz = np.flatnonzero(counts)
    return Rows(nz.astype(np.int64), counts[nz], False)
