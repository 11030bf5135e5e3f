"""Where a source's frames land: its cycle of flow-table entries laid out over a device's RX
queues and the flow classes, so "how many frames of this kind in that range" is a binary
search, not a pass over the flows.

A pktgen-like source sends frame ``n`` as entry ``n % L`` of its table; RSS sends each entry to
one queue. Queue ``q``'s own frames form a sequence too (the entries of the table that land on
``q``, in table order, repeated), and NAPI polls take contiguous ranges of it. ``Grouped`` keeps,
for each group (a queue, a (queue, class) pair, a (queue, bulk queue) pair), the sorted
positions of its elements in one period, and counts them below any position -- for many
groups and positions at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.sim.columns import ClassIds, compact
from xdptui.sim.shared import SharedCache
from xdptui.sim.splitting import within_runs

if TYPE_CHECKING:
    from xdptui.sim.dev.netdev import NetDev
    from xdptui.sim.traffic import Source
    from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]


def _fits(top: int) -> type[np.signedinteger[Any]]:
    """The narrower of int32 and int64 that holds ``0 .. top``."""
    return np.int32 if top < np.iinfo(np.int32).max else np.int64


class Grouped:
    """Elements with a group and a position in ``[0, span)``: per group, how many of its
    elements lie below a position, and which element is the first at or after one. With no
    ``pos``, an element's position is its index (a table's positions): a group's positions
    are then its slice of ``order``, searched in place (4 bytes an element, not 8 with the
    sorted keys)."""

    def __init__(self, group: IntArray, pos: IntArray | None, n_groups: int, span: int) -> None:
        self.span = max(int(span), 1)
        self.indexed = pos is None  # (group g's positions: order[start[g] : start[g + 1]])
        key = group * self.span + (np.arange(len(group), dtype=np.int64) if pos is None else pos)
        order = np.argsort(key)  # keys are unique: any sort is stable
        # element indices and keys in 32 bits where they fit
        self.order = order.astype(_fits(len(group)))  # element index, by (group, position)
        self.key = (
            None if pos is None else key[order].astype(_fits(max(n_groups, 1) * self.span + 1))
        )
        self.start = np.searchsorted(group[order], np.arange(n_groups + 1)).astype(np.int64)
        self.size = np.diff(self.start)

    def positions(self, g: int) -> npt.NDArray[np.integer[Any]]:
        """Group ``g``'s positions in order."""
        lo, hi = self.start[g], self.start[g + 1]
        if self.key is None:
            return self.order[lo:hi]
        out: npt.NDArray[np.integer[Any]] = self.key[lo:hi] - g * self.span
        return out

    def _at(self, g: IntArray, p: IntArray) -> IntArray:
        """Where (group ``g``, position ``p``) sorts among the elements by (group, position)
        (``0 <= p <= span``): a search of the keys, or, indexed, a bisection of every group's
        slice of ``order`` at once."""
        if self.key is not None:
            out: IntArray = np.searchsorted(self.key, (g * self.span + p).astype(self.key.dtype))
            return out
        g, p = np.broadcast_arrays(g, p)
        lo, hi = self.start[g], self.start[g + 1]
        last = len(self.order) - 1
        while True:
            live = lo < hi
            if not live.any():
                return lo
            mid = (lo + hi) >> 1
            less = live & (self.order[np.minimum(mid, last)] < p)
            lo = np.where(less, mid + 1, lo)
            hi = np.where(live & ~less, mid, hi)

    def below(self, g: IntArray, p: IntArray) -> IntArray:
        """Elements of group ``g`` at positions ``< p`` (``0 <= p <= span``)."""
        out: IntArray = self._at(g, p) - self.start[g]
        return out

    def count(self, g: IntArray, m: IntArray, period: IntArray | int) -> IntArray:
        """Elements of group ``g`` among the first ``m`` of a sequence that repeats the group's
        positions every ``period``."""
        full, rest = np.divmod(m, period)
        out: IntArray = full * self.size[g] + self.below(g, rest)
        return out

    def next_at(self, g: IntArray, p: IntArray) -> IntArray:
        """The element of group ``g`` first at or after position ``p`` (wrapping to the
        group's first element); groups must not be empty."""
        i = self._at(g, p)
        i = np.where(i >= self.start[g + 1], self.start[g], i)
        out: IntArray = self.order[i].astype(np.int64)
        return out


class OneLabel(Grouped):
    """Queue sequences grouped by (queue, label) when every element has one label ``label``:
    group ``q * n_labels + label`` is queue ``q``'s sequence, whose ranks are ``0 ..
    size - 1``, and the other groups are empty -- counted from the queues' grouping, with no
    per-element arrays."""

    def __init__(self, queues: Grouped, label: int, n_labels: int, span: int) -> None:
        self.queues, self.label, self.n_labels, self.span = queues, label, n_labels, span
        nq = len(queues.size)
        self.size = np.zeros(nq * n_labels, np.int64)
        self.size[np.arange(nq, dtype=np.int64) * n_labels + label] = queues.size
        self.start = np.concatenate(([0], np.cumsum(self.size))).astype(np.int64)

    def below(self, g: IntArray, p: IntArray) -> IntArray:
        q, lab = np.divmod(g, self.n_labels)
        out: IntArray = np.where(lab == self.label, np.minimum(p, self.queues.size[q]), 0)
        return out

    def next_at(self, g: IntArray, p: IntArray) -> IntArray:
        q = g // self.n_labels
        r = np.where(p < self.queues.size[q], p, 0)
        out: IntArray = self.queues.order[self.queues.start[q] + r].astype(np.int64)
        return out


@dataclass(frozen=True, eq=False)
class SourceLayout:
    """One source's table over one device's queues and the flow classes of one epoch. Table
    position ``p`` is entry ``offset + p`` (a source's table is its slice of the entries),
    unless the entries are ``listed``; the queues are the device's own column (a view)."""

    L: int
    nq: int
    offset: int  # the entry at table position 0
    listed: IntArray | None  # the entries in table order, when they are not a slice
    queue: npt.NDArray[np.integer[Any]]  # the queue each position lands on (narrow)
    cls: IntArray  # its flow class
    queues: Grouped  # group = queue, position = table position
    pair_q: IntArray  # (queue, class) pairs present
    pair_c: IntArray
    pairs: Grouped  # group = pair, position = table position

    def __deepcopy__(self, memo: dict[int, Any]) -> SourceLayout:
        return self

    @property
    def per_queue(self) -> IntArray:
        """Frames of one table cycle per queue."""
        return self.queues.size

    def entry(self, positions: npt.NDArray[np.integer[Any]]) -> IntArray:
        """The entries at table ``positions``."""
        if self.listed is not None:
            out: IntArray = self.listed[positions]
            return out
        return positions.astype(np.int64) + self.offset

    def column(self, per_entry: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """A per-entry column in table order (a view when the table is a slice)."""
        return _in_table_order(per_entry, self.offset, self.listed, self.L)

    def queue_frames(self, q: IntArray, n: IntArray) -> IntArray:
        """How many of the source's first ``n`` frames land on queue ``q``."""
        return self.queues.count(q, n, self.L)

    def pair_frames(self, n0: int, n1: int) -> IntArray:
        """Frames ``n0 .. n1 - 1`` per (queue, class) pair."""
        g = np.arange(len(self.pair_q), dtype=np.int64)
        out: IntArray = self.pairs.count(g, np.full(len(g), n1), self.L) - self.pairs.count(
            g, np.full(len(g), n0), self.L
        )
        return out

    def sequence(self, q: int) -> IntArray:
        """Queue ``q``'s entries in arrival order over one cycle."""
        return self.entry(self.queues.order[self.queues.start[q] : self.queues.start[q + 1]])

    def by_queue(self, label: npt.NDArray[np.integer[Any]], n_labels: int) -> Grouped:
        """Queue sequences grouped by (queue, ``label[entry]``): group ``q * n_labels + l``."""
        span = max(int(self.per_queue.max(initial=1)), 1)
        lab = self.column(label)
        if len(lab) and (not lab.strides[0] or lab.min() == lab.max()):
            return OneLabel(self.queues, int(lab[0]), n_labels, span)
        group = self.queue.astype(np.int64) * n_labels + lab
        return Grouped(group, self.rank().astype(np.int64), self.nq * n_labels, span)

    def rank(self) -> npt.NDArray[np.int32]:
        """Each table position's index in its queue's sequence (made when asked: 4 bytes a
        position)."""
        out = np.empty(self.L, np.int32)
        out[self.queues.order] = within_runs(self.queues.size)
        return out


def _in_table_order(
    per_entry: npt.NDArray[Any], offset: int, listed: IntArray | None, L: int
) -> npt.NDArray[Any]:
    """A per-entry column at a table's positions: ``listed`` entries, or the slice from
    ``offset`` (a view, no copy)."""
    if listed is not None:
        return per_entry[listed]
    return per_entry[offset : offset + L]


def build_layout(world: World, src: Source, dev: NetDev, of_entry: ClassIds) -> SourceLayout:
    from xdptui.sim.dev.nic import Nic

    L = len(src.table)
    nq = max(len(dev.rxq), 1)
    span = slice(src.offset, src.offset + L)
    if isinstance(dev, Nic):
        queue = dev.rss_slice(span.start, span.stop, world.entries.rss_hash)  # (a view)
    else:
        queue = dev.rx_queue_of(world.entries.rss_hash[span]).astype(np.int32)
    return _layout(src.offset, None, queue, nq, of_entry)


def sequence_layout(entry: IntArray, nq: int, q: int, of_entry: ClassIds) -> SourceLayout:
    """A sequence of entries that all land on queue ``q`` of ``nq``, laid out as a source's
    table would be (a veth queue fed by one sender: the sender's frames toward it)."""
    listed = entry.astype(np.int64)
    return _layout(0, listed, np.full(len(entry), q, np.int32), nq, of_entry)


def _layout(
    offset: int,
    listed: IntArray | None,
    queue: npt.NDArray[np.integer[Any]],
    nq: int,
    of_entry: ClassIds,
) -> SourceLayout:
    L = len(queue)
    if not len(of_entry):
        cls = compact(np.zeros(L, np.int64))
    else:
        cls = compact(_in_table_order(of_entry, offset, listed, L))
    q64 = queue.astype(np.int64)
    queues = Grouped(q64, None, nq, L)
    n_cls = int(cls.max(initial=-1)) + 1
    if L and not cls.strides[0] and queues.size.all():
        # one class on every queue: the (queue, class) pairs are the queues
        pairs, pair_q, pair_c = queues, np.arange(nq, dtype=np.int64), np.full(nq, cls[0])
    else:
        pid_all = q64 * max(n_cls, 1) + cls
        uniq, inverse = np.unique(pid_all, return_inverse=True)
        pairs = Grouped(inverse.astype(np.int64), None, len(uniq), L)
        pair_q = (uniq // max(n_cls, 1)).astype(np.int64)
        pair_c = (uniq % max(n_cls, 1)).astype(np.int64)
    return SourceLayout(
        L=L,
        nq=nq,
        offset=offset,
        listed=listed,
        queue=queue,
        cls=cls,
        queues=queues,
        pair_q=pair_q,
        pair_c=pair_c,
        pairs=pairs,
    )


class Layouts:
    """Layouts per (epoch, source, device), shared by checkpoints and forks."""

    def __init__(self) -> None:
        self._cache: SharedCache[tuple[int, int, str, int, int], SourceLayout] = SharedCache()

    def __deepcopy__(self, memo: dict[int, Any]) -> Layouts:
        return self

    def get(self, world: World, src: Source, dev: NetDev, of_entry: ClassIds) -> SourceLayout:
        key = (world.epoch, src.index, dev.name, len(dev.rxq), id(src.table))
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > 64:
                self._cache.clear()
            hit = self._cache[key] = build_layout(world, src, dev, of_entry)
        return hit
