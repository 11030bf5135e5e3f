"""Fast mode's per-class facts and per-poll shapes, computed once per configuration.

A step's arithmetic (``xdptui.sim.fast``) needs, per device and flow class, what a frame costs
on the polling CPU (veth peers' NAPI on the same CPU included), which bulk queue it joins and
what a flush of that queue costs; and, per poll, how many frames go to each bulk queue -- counted
over the queue's contiguous frame ranges where the sequence is known, so devmap flushes are
ceil(k / 16) per poll (``bq_enqueue``, ``xdp_do_flush``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.sim import costs
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.core.filter import RR_CLASS
from xdptui.sim.cpumap import CPU_MAP_BULK_SIZE
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev.netdev import MODE_DRV, NetDev, Refusal
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import flush_cost
from xdptui.sim.fast_burst import Schedule
from xdptui.sim.fast_polls import spread_over
from xdptui.sim.kconst import CPU_TARGET, DEV_MAP_BULK_SIZE, XDP_REDIRECT, XDP_TX, XSK_TARGET
from xdptui.sim.layout import Grouped, SourceLayout
from xdptui.sim.shared import SharedCache
from xdptui.sim.traffic import Source
from xdptui.sim.world import World
from xdptui.sim.xsk import XSK_BULK

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MAX_CHAIN = 6  # veth hops served within one step


@dataclass
class Pending:
    """Frames put into a veth queue during a step, served in the same step."""

    dev: NetDev
    rxq: RxQueue
    rows: Rows
    cpu: int
    ref: Refusal


@dataclass
class Work:
    """NAPI instances with frames this step, one row each: what waits in the ring (``held``),
    what arrives (``arr``), per flow class."""

    devs: list[NetDev]
    rxqs: list[RxQueue]
    cpu: IntArray
    held: IntArray
    arr: IntArray
    kept: FloatArray  # the share of the arrivals the card took
    feeds: list[list[Pending]] = field(default_factory=list)  # veth: the offers served here
    groups: list[tuple[IntArray, DevFacts]] | None = None  # instances by device (cached)
    cycle: dict[int, tuple[int, int]] = field(default_factory=dict)  # a cycling card's
    # instances (``fast_card``): the frames their CPUs take this step, their next interrupt

    def __len__(self) -> int:
        return len(self.rxqs)

    def fed(self, i: int) -> list[Pending]:
        return self.feeds[i] if self.feeds else []

    def without(self, done: set[int]) -> Work:
        """These instances but those whose RxQueue ids are in ``done``."""
        keep = np.array([id(r) not in done for r in self.rxqs], bool)
        idx = np.flatnonzero(keep)
        where = {int(i): k for k, i in enumerate(idx.tolist())}
        return Work(
            [self.devs[i] for i in idx],
            [self.rxqs[i] for i in idx],
            self.cpu[idx],
            self.held[idx],
            self.arr[idx],
            self.kept[idx],
            [self.feeds[i] for i in idx] if self.feeds else [],
            None,
            {where[i]: v for i, v in self.cycle.items() if i in where},
        )


@dataclass
class Plan:
    """Each instance's polls this step (``sizes`` only where a bulk queue needs them)."""

    served: IntArray
    polls: IntArray
    bursts: IntArray
    work: FloatArray
    drops: IntArray
    peak: IntArray
    next_irq: IntArray
    start: IntArray  # queue position of the first frame taken (-1: not known)
    sizes: dict[int, IntArray]
    # when each poll starts and its size, where the polls come in interrupt bursts
    sched: dict[int, Schedule] = field(default_factory=dict)


@dataclass(frozen=True)
class DevFacts:
    """A device's per-class arithmetic inputs (one configuration's)."""

    cost: FloatArray  # ns per frame on the polling CPU, chain of veth peers included
    poll: float
    bq: IntArray  # bulk queue label per class (-1: none)
    bq_value: IntArray  # label -> the bulk class (target ifindex, RR_CLASS, BROADCAST)
    flush: FloatArray  # label -> ns per flush
    tx_out: FloatArray  # 1 where the frame leaves by a port of the same card
    multi_key: npt.NDArray[np.bool_]  # label -> its classes have several devmap keys
    onward: FloatArray  # 1 where a native program's XDP_TX or redirect sends the frame on
    bulk: FloatArray | None = None  # label -> frames per bulk (16; a cpumap entry's 8)


class Facts:
    """Per-configuration caches of one fast-mode engine (shared by copies of its state)."""

    def __init__(self, world: World, dp: Datapath) -> None:
        self.world = world
        self.dp = dp
        self._facts: SharedCache[tuple[str, int], DevFacts] = SharedCache()
        self._bq_groups: SharedCache[tuple[int, int, str], Grouped] = SharedCache()
        self._single: SharedCache[tuple[int, str], int | None] = SharedCache()

    def layout(self, src: Source, dev: NetDev) -> SourceLayout:
        return self.dp.layouts.get(self.world, src, dev, self.dp.classes.of_entry)

    def shapes(self, work: Work, plan: Plan, idx: IntArray, take: IntArray) -> dict[int, PollShape]:
        """Per poll, how many frames go to each bulk queue, for one device's instances
        ``idx``: counted over each queue's contiguous frame ranges where its sequence is known
        (all instances in one search), else spread evenly."""
        out = {
            i: PollShape(int(plan.polls[i]), int(plan.bursts[i]) or int(plan.polls[i]))
            for i in idx.tolist()
        }
        want = [i for i in idx.tolist() if i in plan.sizes and plan.polls[i] > 0]
        if not want:
            return out
        dev = work.devs[want[0]]
        f = self.dev_facts(dev)
        if not len(f.flush):
            return out
        c = self.dp.compiled[dev.name]
        has = f.bq >= 0
        onehot = np.zeros((len(f.bq), len(f.flush)), np.int64)
        onehot[np.flatnonzero(has), f.bq[has]] = 1
        per_label = take[want] @ onehot
        src = self.single_source(dev)
        exact = [k for k, i in enumerate(want) if src is not None and not work.fed(i)]
        for k in sorted(set(range(len(want))) - set(exact)):
            shape, spread = out[want[k]], plan.sizes[want[k]]
            for lab in np.flatnonzero(per_label[k]).tolist():
                shape.classes[int(f.bq_value[lab])] = spread_over(int(per_label[k, lab]), spread)
        if not exact:
            return out
        assert src is not None
        lay = self.layout(src, dev)
        grp = self.bq_group(src, dev, lay, f)
        rows = [want[k] for k in exact]
        sizes = [plan.sizes[i] for i in rows]
        lengths = np.array([len(z) + 1 for z in sizes], np.int64)
        q = np.array([work.rxqs[i].index for i in rows], np.int64)
        start = np.array(
            [plan.start[i] if plan.start[i] >= 0 else work.rxqs[i].fast_pos for i in rows],
            np.int64,
        )
        cum = np.concatenate([np.concatenate(([0], np.cumsum(z))) for z in sizes])
        bounds = np.repeat(start, lengths) + cum
        qs = np.repeat(q, lengths)
        period = lay.per_queue[qs]
        offs = np.concatenate(([0], np.cumsum(lengths)))
        n_lab = len(f.bq_value) + 1  # label 0: no bulk queue
        labels = np.flatnonzero(per_label[exact].sum(axis=0))
        for lab in labels.tolist():
            g = qs * n_lab + lab + 1
            d = np.diff(grp.count(g, bounds, period))
            cls = int(f.bq_value[lab])
            first = None
            if f.multi_key[lab]:  # the poll's first enqueuer decides the egress program
                first = c.key[lay.entry(grp.next_at(g, bounds % period))]
            for k, i in enumerate(rows):
                if per_label[exact[k], lab]:
                    out[i].classes[cls] = d[offs[k] : offs[k + 1] - 1]
                    if first is not None:
                        out[i].first_key[cls] = first[offs[k] : offs[k + 1] - 1]
        return out

    def bq_group(self, src: Source, dev: NetDev, lay: SourceLayout, f: DevFacts) -> Grouped:
        key = (self.world.epoch, src.index, dev.name)
        hit = self._bq_groups.get(key)
        if hit is None:
            if len(self._bq_groups) > 64:
                self._bq_groups.clear()
            label = f.bq[self.dp.classes.of_entry] + 1  # 0: no bulk queue
            hit = self._bq_groups[key] = lay.by_queue(label, len(f.bq_value) + 1)
        return hit

    def queue_order(self, dev: NetDev, rxq: RxQueue) -> IntArray | None:
        """The entries a queue's next frames come as, from where its sequence stands (for
        laying its counts out as descriptors)."""
        src = self.single_source(dev)
        if src is None:
            return None
        self.dp.compile()
        seq = self.layout(src, dev).sequence(rxq.index)
        if not len(seq):
            return None
        return np.roll(seq, -(rxq.fast_pos % len(seq)))

    def single_source(self, dev: NetDev) -> Source | None:
        """The one source whose frames reach ``dev``'s queues (None: none or several)."""
        key = (self.world.epoch, dev.name)
        if key not in self._single:
            if len(self._single) > 256:
                self._single.clear()
            srcs = [s for s in self.world.sources if self.world.lands_on(s) is dev]
            self._single[key] = srcs[0].index if len(srcs) == 1 else None
        index = self._single[key]
        return self.world.sources[index] if index is not None else None

    # ------------------------------------------------------------ per-class facts

    def dev_facts(self, dev: NetDev) -> DevFacts:
        """Per-class facts a step's arithmetic needs, computed once per configuration."""
        key = (dev.name, self.world.epoch)
        hit = self._facts.get(key)
        if hit is not None:
            return hit
        dp = self.dp
        c = dp.compiled[dev.name]
        rep = dp.classes.rep
        bq_entry = c.bq_class[rep]
        values = np.unique(bq_entry[bq_entry != -1])
        label = np.full(len(rep), -1, np.int64)
        flush = np.zeros(len(values))
        for k, v in enumerate(values):
            label[bq_entry == v] = k
            tgt = self.world.by_ifindex.get(int(v)) if v >= 0 else None
            if tgt is not None:
                flush[k] = flush_cost(dev, tgt)
            elif v == RR_CLASS:
                flush[k] = 80.0  # a round-robin bond's slaves: their flushes, on average
            elif v <= XSK_TARGET:
                flush[k] = costs.XSK_FLUSH  # xsk_flush, once a poll
            elif v <= CPU_TARGET:
                flush[k] = costs.CPUMAP_FLUSH  # bq_flush_to_queue
        tx_out = (c.act == XDP_TX) & (c.mode is not None)
        card = dev.card if isinstance(dev, Nic) else None
        for ifindex in np.unique(c.target[c.target >= 0]):
            tgt = self.world.by_ifindex.get(int(ifindex))
            if isinstance(tgt, Nic) and tgt.card == card:
                tx_out |= (c.target == ifindex) & (c.err == 0)
        cost = c.cost[rep] + self.chain(dev)[rep]
        keys = c.key[rep]
        multi = np.array([len(np.unique(keys[label == k])) > 1 for k in range(len(values))], bool)
        onward = ((c.act == XDP_TX) | (c.act == XDP_REDIRECT)) & (c.mode == MODE_DRV)
        out = DevFacts(
            cost,
            dev.costs().poll,
            label,
            values,
            flush,
            tx_out[rep].astype(float),
            multi,
            onward[rep].astype(float),
            np.select(
                [values <= XSK_TARGET, values <= CPU_TARGET],
                [XSK_BULK, CPU_MAP_BULK_SIZE],
                DEV_MAP_BULK_SIZE,
            ).astype(float),
        )
        if len(self._facts) > 256:
            self._facts.clear()
        self._facts[key] = out
        return out

    def flush_many(self, f: DevFacts, D: IntArray, per_poll: FloatArray) -> FloatArray:
        """``_flush_per_frame`` for many instances (rows of ``D``) at once."""
        if not len(f.flush):
            return np.zeros(len(D))
        onehot = np.zeros((len(f.bq), len(f.flush)))
        has = f.bq >= 0
        onehot[np.flatnonzero(has), f.bq[has]] = 1.0
        total = np.maximum(D.sum(axis=1), 1)
        k = (D @ onehot) / total[:, None] * per_poll[:, None]
        bulk = f.bulk if f.bulk is not None else DEV_MAP_BULK_SIZE
        out: FloatArray = (np.ceil(k / bulk) @ f.flush) / per_poll
        return out

    def flush_per_frame(self, f: DevFacts, d: IntArray, per_poll: float) -> float:
        """CPU ns per frame for bulk flushes: a poll of m frames sends k = r m of them to a
        target, in ceil(k / 16) flushes (``bq_enqueue``, ``xdp_do_flush``)."""
        if not len(f.flush):
            return 0.0
        total = float(d.sum())
        if not total:
            return 0.0
        per_label = np.bincount(f.bq[f.bq >= 0], weights=d[f.bq >= 0], minlength=len(f.flush))
        k = per_label / total * per_poll
        bulk = f.bulk if f.bulk is not None else DEV_MAP_BULK_SIZE
        return float(f.flush @ np.ceil(k / bulk)) / per_poll

    def chain(self, dev: NetDev, depth: int = 0) -> FloatArray:
        """Per entry, the CPU ns its frame costs further on the same CPU: a veth peer's
        NAPI runs on the sender's CPU (and its own XDP_TX or redirect into another veth)."""
        c = self.dp.compiled[dev.name]
        out = np.zeros(len(c.act))
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
            out[mask] += (pc + self.chain(peer, depth + 1))[mask]
        return out
