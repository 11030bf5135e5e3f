"""The tables NAPI's loop reads and what its polls mean (``xdptui.sim.fast_napi``): per
instance, its frames' queue positions, prefix sums of their costs and of their bulk labels;
the pacing of the sources as integer columns; and the runs of positions polls took, counted
back per flow class."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.sim import costs, devmap, napi
from xdptui.sim.batch import Rows
from xdptui.sim.core.filter import BROADCAST, RR_CLASS, Compiled
from xdptui.sim.cpumap import CPU_MAP_BULK_SIZE
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev.netdev import MODE_DRV, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.kconst import (
    CPU_TARGET,
    DEV_MAP_BULK_SIZE,
    XDP_REDIRECT,
    XDP_TX,
    XSK_TARGET,
    max_fwd_len,
)
from xdptui.sim.layout import Grouped, SourceLayout
from xdptui.sim.splitting import spans
from xdptui.sim.traffic import Source
from xdptui.sim.world import World
from xdptui.sim.xsk import XSK_BULK

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Tables:
    """The per-position tables of a configuration's instances, concatenated: queue positions
    (``tab``), prefix sums of each frame's cost (``pre``), prefix counts (``lab``: each bulk
    label's, XDP_TX's, a bond's, a veth's feed, ``add_prefix``), and per label the cost of a
    flush, the frames of a bulk and where its prefix count starts (``lfl``)."""

    def __init__(self, world: World, dp: Datapath) -> None:
        self.world = world
        self.dp = dp
        self.tab: list[npt.NDArray[np.int32]] = []
        self.pre: list[IntArray] = []
        self.lab: list[IntArray] = []
        self.lfl: list[IntArray] = []
        self.sizes = [0, 0, 0, 0]
        self._orders: dict[int, tuple[int, Grouped]] = {}

    def add_tab(self, positions: npt.NDArray[np.integer[Any]]) -> int:
        at = self.sizes[0]
        self.tab.append(positions.astype(np.int32, copy=False))
        self.sizes[0] += len(positions)
        return at

    def add_order(self, queues: Grouped) -> int:
        """Where a layout's queue sequences start in ``tab``: its grouping's order, added
        once for all its queues (queue ``q``'s positions from ``queues.start[q]`` on)."""
        assert queues.indexed
        hit = self._orders.get(id(queues))
        if hit is None:
            hit = self._orders[id(queues)] = (self.add_tab(queues.order), queues)
        return hit[0]

    def share_tab(self) -> npt.NDArray[np.int32]:
        """``tab`` end to end; each layout's order added whole becomes its slice of it (a
        view: a million-entry table's queue sequences are stored once, not twice)."""
        tab: npt.NDArray[np.int32] = cat(self.tab, np.int32)
        for at, queues in self._orders.values():
            if queues.order.dtype == np.int32:
                queues.order = tab[at : at + len(queues.order)]
        return tab

    def add_prefix(self, hit: BoolArray) -> int:
        """A prefix count over an instance's positions, after its period (where it starts in
        ``lab``): 1 when every position is alike (``napi.prefix_sum``)."""
        at = self.sizes[2]
        alike = len(hit) > 0 and bool(hit.all() or not hit.any())
        part = hit[:1] if alike else hit
        self.lab.append(np.concatenate(([len(part), 0], np.cumsum(part.astype(np.int64)))))
        self.sizes[2] += len(part) + 2
        return at

    def add(
        self, row: list[int], dev: NetDev, seq: IntArray
    ) -> tuple[IntArray, BoolArray, IntArray]:
        """An instance whose frames are ``seq`` (entries, repeated): its cost and label
        tables; returns its labels (bulk classes), which of them span several keys, and each
        frame's label (-1: none). Generic XDP sends each skb at once: its only labels are the
        veths whose NAPI its redirects feed (``veth_xmit``), at no cost of their own."""
        m = len(seq)
        c = self.dp.compiled[dev.name]
        cost_ps = np.round(c.cost[seq] * 1000).astype(np.int64)
        if c.mode == MODE_DRV:
            bq = c.bq_class[seq]
            if isinstance(dev, Veth) and veth_napi(self.world, self.dp, dev.ifindex) is not None:
                # veth_xdp_tx: XDP_TX frames into the peer's queue, as veth_xdp_xmit puts a
                # redirect into this veth (its label), at no flush cost of their own
                bq = np.where(c.act[seq] == XDP_TX, dev.ifindex, bq)
        elif c.mode is not None:
            t = c.target[seq]
            red = (c.act[seq] == XDP_REDIRECT) & (c.err[seq] == 0) & (t >= 0)
            fed = [v for v in np.unique(t[red]).tolist() if veth_napi(self.world, self.dp, v, True)]
            bq = np.where(red & np.isin(t, fed), t, -1)
        else:
            bq = np.full(m, -1, np.int64)
        values = np.unique(bq[(bq >= 0) | (bq <= CPU_TARGET) | (bq == RR_CLASS)])
        targets = broadcast_targets(self.dp, dev, c) if c.mode == MODE_DRV else []
        if targets and (bq == BROADCAST).any():  # a label per target, each of every frame
            ifindexes = np.array([t.ifindex for t in targets], np.int64)
            values = np.concatenate((values, ifindexes))
        row[napi.I_M] = m
        row[napi.I_PRE] = self.sizes[1]
        row[napi.I_NLAB] = len(values)
        row[napi.I_LFL] = self.sizes[3]
        if m and cost_ps.min() == cost_ps.max():  # every frame costs the same: one period
            row[napi.I_PM] = 1
            self.pre.append(np.array([0, cost_ps[0]], np.int64))
        else:
            row[napi.I_PM] = m
            self.pre.append(np.concatenate(([0], np.cumsum(cost_ps))))
        flushes: list[int] = []
        mk = np.zeros(len(values), bool)
        for k, v in enumerate(values.tolist()):
            hit = label_hit(self.world, c, seq, bq, v)
            at = self.add_prefix(hit)
            if c.mode != MODE_DRV or v == RR_CLASS or veth_tx_label(dev, v):  # no bulk, no flush
                flushes += [0, 1, at]  # (a balance-rr bond's: its flushes are ``transmit``'s)
            elif v <= XSK_TARGET:  # an AF_XDP socket: one xsk_flush a poll
                flushes += [round(costs.XSK_FLUSH * 1000), XSK_BULK, at]
            elif v <= CPU_TARGET:  # a cpumap entry's bulk queue
                flushes += [round(costs.CPUMAP_FLUSH * 1000), CPU_MAP_BULK_SIZE, at]
            else:
                flush = round(devmap.flush_cost(dev, self.world.by_ifindex[v]) * 1000)
                flushes += [flush, DEV_MAP_BULK_SIZE, at]
            mk[k] = not c.broadcast and len(np.unique(c.key[seq[hit]])) > 1
        self.lfl.append(np.array(flushes, np.int64))
        self.sizes[1] += len(self.pre[-1])
        self.sizes[3] += napi.L_WIDTH * len(values)
        return values, mk, bq


def broadcast_targets(dp: Datapath, dev: NetDev, c: Compiled) -> list[NetDev]:
    """The devices a native broadcast from ``dev`` clones every frame to, one bulk queue each
    (``devmap.native_broadcast``), each a label named by its ifindex (``label_hit``): NICs,
    and veths through an entry with no egress program (``_build`` then checks that the loop
    runs the peer's NAPI); generic XDP's NIC targets (no bulks: each skb goes through the
    walk at once). Empty when NAPI's loop cannot follow it: another kind of target,
    two entries for one device (two clones into one bulk queue), frames the program leaves
    that are not in the table yet, a bond's slave or a veth broadcasting (their own labels
    could be named alike)."""
    if not c.broadcast or c.master is not None or isinstance(dev, Veth):
        return []
    if c.mode != MODE_DRV:  # generic XDP: each skb through the walk at once, no bulks
        generic = [t for _, t in devmap.broadcast_walk(dp, dev, c)]
        return generic if all(isinstance(t, Nic) for t in generic) else []
    walk = devmap.native_broadcast(dp, dev, c)
    dmap = dp.world.maps.get(c.map_name or "")
    tgts = [t for _, t in walk]
    for key, t in walk:
        if isinstance(t, Veth):
            entry = getattr(dmap, "entries", {}).get(key)
            if entry is None or entry.egress is not None:
                return []
        elif not isinstance(t, Nic):
            return []
    if len({t.name for t in tgts}) < len(tgts):
        return []
    if c.out is not None and (c.out[c.bq_class == BROADCAST] < 0).any():
        return []  # (the frames the program left, ``bpf_run.leaving``: compiled again first)
    return tgts


def label_hit(world: World, c: Compiled, seq: IntArray, bq: IntArray, label: int) -> BoolArray:
    """Which frames (entries ``seq``, of bulk classes ``bq``) join bulk label ``label``: those
    of that class, or for a broadcast's target (``broadcast_targets``) every broadcast frame
    its MTU lets through (``dev_map_enqueue_multi`` skips a frame too long for it)."""
    if not c.broadcast or label < 0:
        same: BoolArray = bq == label
        return same
    out = seq if c.out is None else c.out[seq]  # (the frames the program left)
    mtu = world.by_ifindex[label].mtu
    fits: BoolArray = (bq == BROADCAST) & (world.entries.size[out] <= max_fwd_len(mtu))
    return fits


def veth_tx_label(dev: NetDev, label: int) -> bool:
    """Whether ``label`` is a veth's own XDP_TX (``Tables.add``): frames into its peer's queue,
    as ``veth_xdp_xmit`` puts a redirect into this veth, at no flush cost of their own and
    with no bulk queue of the devmap's."""
    return isinstance(dev, Veth) and label == dev.ifindex


def veth_napi(world: World, dp: Datapath, label: int, generic: bool = False) -> NetDev | None:
    """The veth whose receive queues take the frames of a bulk label (a redirect into its
    peer): native XDP's ``veth_xdp_xmit`` while the peer's NAPI runs XDP; generic XDP's
    ``veth_xmit`` whenever the peer is up (``Veth.skb_rx``)."""
    tgt = world.by_ifindex.get(label) if label >= 0 else None
    if not isinstance(tgt, Veth):
        return None
    return tgt.skb_rx(dp) if generic else tgt.xdp_napi(dp)


def written_tap(dev: NetDev) -> bool:
    """A tap written one frame per ``write`` (``tun_get_user`` on the writer's CPU): NAPI's
    loop with a budget of one and no interrupt to wait for, as exact mode runs it (vhost's
    batches are not in the loop)."""
    return is_tap(dev) and isinstance(dev, Tun) and dev.writer == "write"


def is_tap(dev: NetDev) -> bool:
    """A tap: what is redirected into it waits for its reader (userspace), on no CPU."""
    return isinstance(dev, Tun) and dev.mode == "tap"


def basis_of(world: World, dev: NetDev, s: int) -> tuple[int, ...]:
    """What a queue's positions count: its source's table and the device's queues."""
    if s < 0:
        return (-1,)
    src = world.sources[s]
    return (s, id(src.table), src.offset, len(dev.rxq), id(getattr(dev, "queue_of_entry", None)))


def cpu_rows(n: int) -> IntArray:
    cpu = np.zeros((n, napi.C_WIDTH), np.int64)
    cpu[:, napi.C_RUN_AT] = -1
    return cpu


def cat(parts: list[Any], dtype: npt.DTypeLike = np.int64) -> Any:
    """The instances' tables end to end (table positions fit in 32 bits)."""
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(1, dtype)


def source_rows(sources: list[Source]) -> IntArray:
    """Each source's pacing as ``napi``'s integer columns."""
    out = np.zeros((max(len(sources), 1), napi.S_WIDTH), np.int64)
    for k, s in enumerate(sources):
        milli = 0 if s.stopped else int(s.milli)
        out[k, napi.S_ORIGIN] = s.rate_origin_ns
        out[k, napi.S_N0] = s.emitted_at_origin
        out[k, napi.S_MILLI] = milli
        out[k, napi.S_CAP] = s.spec.count if s.spec.count is not None else -1
        out[k, napi.S_L] = len(s.table)
        out[k, napi.S_MQ] = milli // 1_000_000
        out[k, napi.S_MR] = milli % 1_000_000
        if milli > 0:
            out[k, napi.S_A] = 10**18 // milli
            out[k, napi.S_AR] = 10**18 % milli
    return out


def segments(mine: IntArray, segs: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """The runs the polls took: starts, ends and each run's poll (its index in ``mine``)."""
    if not len(mine):
        z = np.zeros(0, np.int64)
        return z, z, z
    counts = mine[:, napi.P_NSEG]
    who = np.repeat(np.arange(len(mine), dtype=np.int64), counts)
    rows = spans(mine[:, napi.P_SEG], counts)
    return segs[rows, 0], segs[rows, 1], who


def full_prefix(lab: IntArray, at: int, m: int) -> IntArray:
    """A prefix count stored after its period (``Tables.add_prefix``) over all ``m``
    positions."""
    pm = int(lab[at])
    pre: IntArray = lab[at + 1 : at + pm + 2]
    return pre if pm == m else np.arange(m + 1, dtype=np.int64) * pre[1]


def seq_range(pre: IntArray, m: int, a: IntArray, b: IntArray) -> IntArray:
    """``napi._range_sum`` for many ranges."""
    total = pre[m]
    out: IntArray = (b // m - a // m) * total + pre[b % m] - pre[a % m]
    return out


def first_at(pre: IntArray, m: int, pos: IntArray) -> IntArray:
    """The first position at or after ``pos`` whose indicator (prefix ``pre``) is set."""
    r = pos % m
    k = np.searchsorted(pre, pre[r], side="right") - 1  # the first j >= r with pre[j+1] > pre[r]
    wrap = k >= m
    k = np.where(wrap, np.searchsorted(pre, 0, side="right") - 1 + m, k)
    out: IntArray = pos - r + k
    return out


def class_counts_many(
    grp: Grouped, lay: SourceLayout, qs: IntArray, C: int, a: IntArray, b: IntArray,
    owner: IntArray,
) -> IntArray:  # fmt: skip
    """Frames per class at positions [a_k, b_k) of queue ``qs[owner_k]``'s sequence, summed
    per owner (``owner`` sorted): one row of C counts per entry of ``qs``."""
    out = np.zeros((len(qs), C), np.int64)
    if not len(a):
        return out
    if len(a) > 1:  # an owner's runs that meet are one run: the counts telescope
        cut = (a[1:] != b[:-1]) | (owner[1:] != owner[:-1])
        a = a[np.concatenate(([True], cut))]
        owner_b = owner[np.concatenate((cut, [True]))]
        b = b[np.concatenate((cut, [True]))]
        owner = owner_b
    q = qs[owner]
    m = np.maximum(lay.per_queue[q], 1)[:, None]  # (a queue with no frames has no runs)
    g = q[:, None] * C + np.arange(C, dtype=np.int64)[None, :]  # an absent class counts 0
    cnt = grp.count(g, b[:, None], m) - grp.count(g, a[:, None], m)
    np.add.at(out, owner, cnt)
    return out


def class_rows_many(counts: IntArray, rep: IntArray) -> list[Rows]:
    """Each row of ``counts`` (frames per flow class) as rows of the classes' representative
    entries ``rep``, the classes with none left out (one search for all of them)."""
    r, c = np.nonzero(counts)
    at = np.searchsorted(r, np.arange(len(counts) + 1)).tolist()
    entry, count = rep[c], counts[r, c]
    totals = counts.sum(axis=1).tolist()
    return [
        Rows.counted(entry[a:b], count[a:b], n)
        for (a, b), n in zip(pairwise(at), totals, strict=True)
    ]
