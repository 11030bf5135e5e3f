"""Descriptor rings: RX queues with their NAPI instance, and transmit rings that drain.

A ring holds its frames in the form the running mode needs. Exact mode keeps a FIFO of frame
records -- flow-table entry, source, sequence number and a time (arrival on RX, departure on TX)
-- so a poll takes real descriptors from the head. Fast mode keeps frames per flow-table entry
(``counts``). ``to_exact`` / ``to_fast`` convert between them (docs/design.md, "Two
granularities").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.sim.batch import Rows
from xdptui.sim.columns import ClassIds
from xdptui.sim.kconst import DEV_MAP_BULK_SIZE
from xdptui.sim.table import Field, Row, Table

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

RX_COLUMNS = ("entry", "ident", "t")
TX_COLUMNS = ("entry", "wire", "t")

Batch = tuple[int, int, int, int]
"""Frames queued on one ring and sent back to back: (ring, first departure in ps, frames,
ps each)."""


def batch_left(b: Batch, at_ps: int) -> int:
    """Frames of a batch not sent by ``at_ps`` (a frame has left once its time is past)."""
    _, first, n, s = b
    if at_ps < first:
        return n
    return max(0, n - ((at_ps - first) // s + 1))


@dataclass
class Offered:
    """What :func:`offer_polls` did: per claim the frames taken and the bulks that met a full
    ring; per ring the frames taken, those lost and the wire bytes taken; when the wire is
    free and what is still queued."""

    took: IntArray
    full: IntArray
    ring_took: IntArray
    ring_lost: IntArray
    ring_bytes: FloatArray
    free_ps: int
    queued: list[Batch]


def offer_polls(
    sizes: list[int], free_ps: int, batches: list[Batch], times: IntArray, per_poll: IntArray,
    start: IntArray, ring: IntArray, claim: IntArray, service: IntArray, mean: FloatArray,
) -> Offered:  # fmt: skip
    """Polls offering frames to a port's transmit rings: sequence ``j`` is polls ``start[j]``
    to ``start[j + 1]``, at ``times`` (ns, in order), to ring ``ring[j]`` for claim
    ``claim[j]``. The sequences merged in time order (ties: sequence order), each poll's
    frames offered as bulks of at most 16 (``bq_enqueue`` / ``__dev_flush``) that the rings
    take as :func:`wire_offer` does (a claim's frames take ``service`` ps of wire and
    ``mean`` bytes each). ``batches``: what is still queued (compiled once a step offers many
    polls)."""
    if len(times) > 4096:
        compile_rules()
    nk = int((-(-per_poll // DEV_MAP_BULK_SIZE)).sum())
    txr, wire, wb = _port(sizes, free_ps, batches, nk)
    n_claims = len(service)
    took = np.zeros(n_claims, np.int64)
    full = np.zeros(n_claims, np.int64)
    ring_bytes = np.zeros(len(sizes), np.float64)
    heap = np.zeros((len(ring), 2), np.int64)
    pos = start[:-1].copy()
    _offer_polls(
        txr, wire, wb, times, per_poll, start, ring, claim, service, mean, heap, pos, took,
        full, ring_bytes,
    )  # fmt: skip
    return Offered(
        took, full, txr[:, X_TOOK].copy(), txr[:, X_LOST].copy(), ring_bytes,
        int(wire[0, W_FREE]), _still_queued(wire, wb),
    )  # fmt: skip


def _port(
    sizes: list[int], free_ps: int, batches: list[Batch], nk: int
) -> tuple[IntArray, IntArray, IntArray]:
    """One port's rings and wire as arrays, with room for ``nk`` more batches."""
    nb = len(batches)
    txr = np.zeros((len(sizes), X_WIDTH), np.int64)
    txr[:, X_SIZE] = sizes
    wire = np.zeros((1, W_WIDTH), np.int64)
    wire[0, W_FREE] = free_ps
    wire[0, W_CB] = NO_CHARGE
    wb = np.zeros((1, pow2(nb + nk + 1), 4), np.int64)
    if nb:
        wb[0, :nb] = np.array(batches, np.int64)
        np.add.at(txr[:, X_HELD], wb[0, :nb, 0], wb[0, :nb, 2])
    wire[0, W_TAIL] = nb
    return txr, wire, wb


def _still_queued(wire: IntArray, wb: IntArray) -> list[Batch]:
    h, t = int(wire[0, W_HEAD]), int(wire[0, W_TAIL])
    rows = wb[0, np.arange(h, t) & (wb.shape[1] - 1)]
    return [(int(r), int(f), int(n), int(e)) for r, f, n, e in rows.tolist()]


def compile_rules() -> None:
    """Compile the wire's rules and ``offer_polls``' loop (on first use; cached on disk)."""
    from xdptui.sim import jit
    from xdptui.sim.dev import rings as me

    jit.compile_functions(
        me, (*WIRE_RULES, "_sift", "_offer_polls"), inline=(*WIRE_RULES, "_sift"),
        nrt=False,
    )  # fmt: skip


def _sift(heap: IntArray, k: int, n: int) -> None:
    """Restore the heap of (time, sequence) below ``k`` (the least at the root)."""
    while True:
        m = k
        for ch in (2 * k + 1, 2 * k + 2):
            if ch < n and (
                heap[ch, 0] < heap[m, 0] or (heap[ch, 0] == heap[m, 0] and heap[ch, 1] < heap[m, 1])
            ):
                m = ch
        if m == k:
            return
        for c in range(2):
            heap[k, c], heap[m, c] = heap[m, c], heap[k, c]
        k = m


def _offer_polls(
    txr: IntArray, wire: IntArray, wb: IntArray, times: IntArray, per_poll: IntArray,
    start: IntArray, ring: IntArray, claim: IntArray, service: IntArray, mean: FloatArray,
    heap: IntArray, pos: IntArray, took: IntArray, full: IntArray, ring_bytes: FloatArray,
) -> None:  # fmt: skip
    """:func:`offer_polls`' loop: the sequences' next polls in a heap by (time, sequence)."""
    n = 0
    for j in range(len(ring)):
        if start[j] < start[j + 1]:
            heap[n, 0] = times[start[j]]
            heap[n, 1] = j
            n += 1
    for k in range(n // 2 - 1, -1, -1):
        _sift(heap, k, n)
    while n > 0:
        j = heap[0, 1]
        p = pos[j]
        r = ring[j]
        c = claim[j]
        left = per_poll[p]
        while left > 0:
            b = left if left < DEV_MAP_BULK_SIZE else DEV_MAP_BULK_SIZE
            got = wire_offer(txr, wire, wb, 0, r, b, 1000 * times[p], service[c])
            took[c] += got
            if got < b:
                full[c] += 1
            ring_bytes[r] += got * mean[c]
            left -= b
        pos[j] = p + 1
        if p + 1 < start[j + 1]:
            heap[0, 0] = times[p + 1]
        else:
            n -= 1
            heap[0, 0] = heap[n, 0]
            heap[0, 1] = heap[n, 1]
        _sift(heap, 0, n)


# A port's transmit rings and wire as arrays (NAPI's loop and ``offer_polls``). A ring
# (``txr``): its port, its size, the frames holding a slot, and those it took and refused. A
# port (``wire``): when its wire is free (ps), its batches ``wb[w, b % cap] = (ring, first
# departure in ps, frames, ps each)`` from ``W_HEAD`` (the first with a frame not gone,
# ``W_DOFF`` of its frames gone) to ``W_TAIL``, and from ``W_CB`` (frame ``W_CJ``) on those
# whose DMA its card has not charged yet (``napi.card_admit``; ``NO_CHARGE``: no card); the
# batches' room is a power of two (``pow2``: a slot is a masked index, not a division);
# ``W_S``: ps of wire per frame where every frame it sends is alike (NAPI's loop). A ring's
# ``X_TXTOOK``: of those it took, its own port's XDP_TX (the loop).
X_PORT, X_SIZE, X_HELD, X_TOOK, X_LOST, X_TXTOOK, X_WIDTH = range(7)
W_S, W_FREE, W_HEAD, W_DOFF, W_TAIL, W_CB, W_CJ, W_WIDTH = range(8)
NO_CHARGE = 1 << 62
WIRE_RULES = ("wire_pop", "wire_offer")


def pow2(n: int) -> int:
    """The least power of two at least ``n``."""
    return 1 << max(n - 1, 0).bit_length()


def wire_pop(txr: IntArray, wire: IntArray, wb: IntArray, w: int, at_ps: int) -> None:
    """The frames port ``w``'s wire has sent by ``at_ps`` free their slots (a frame has left
    once its time is past). Its batches follow one another on the wire, so only the first
    may be partly gone."""
    wrap = wb.shape[1] - 1
    h = wire[w, W_HEAD]
    tail = wire[w, W_TAIL]
    doff = wire[w, W_DOFF]
    while h < tail:
        b = h & wrap
        first = wb[w, b, 1]
        if at_ps < first:
            break
        n = wb[w, b, 2]
        gone = (at_ps - first) // wb[w, b, 3] + 1
        if gone > n:
            gone = n
        txr[wb[w, b, 0], X_HELD] -= gone - doff
        if gone < n:
            doff = gone
            break
        doff = 0
        h += 1
    wire[w, W_HEAD] = h
    wire[w, W_DOFF] = doff


def wire_offer(
    txr: IntArray, wire: IntArray, wb: IntArray, w: int, r: int, n: int, at_ps: int, s: int
) -> int:
    """``ExactIO.tx``: ``n`` frames offered at ``at_ps`` to ring ``r`` of port ``w``. The ring
    takes what it has room for -- a frame holds its slot until it has left -- and the wire,
    one server across the port's rings, sends them after what it has queued, ``s`` ps each
    (:func:`fifo_departures`: d_i = max(free, at) + (i + 1) s). Returns the frames taken."""
    wire_pop(txr, wire, wb, w, at_ps)
    room = txr[r, X_SIZE] - txr[r, X_HELD]
    a = n if n < room else room
    if a < 0:
        a = 0
    if a > 0:
        start = wire[w, W_FREE] if wire[w, W_FREE] > at_ps else at_ps
        b = wire[w, W_TAIL] & (wb.shape[1] - 1)
        wb[w, b, 0] = r
        wb[w, b, 1] = start + s
        wb[w, b, 2] = a
        wb[w, b, 3] = s
        wire[w, W_TAIL] += 1
        wire[w, W_FREE] = start + a * s
        txr[r, X_HELD] += a
        txr[r, X_TOOK] += a
    txr[r, X_LOST] += n - a
    return a


def fifo_departures(free_ps: int, ready_ps: IntArray | int, service_ps: IntArray) -> IntArray:
    """When one server (a port's wire, a tap queue's reader) is done with frames queued at
    ``ready_ps`` in order (one time: all ready then), ``service_ps`` each, from when it is
    free: d_i = max(d_{i-1}, ready_i) + s_i = cs_i + max(free, max_{j <= i} (ready_j -
    cs_{j-1})), in picoseconds so a 6.72 ns frame time is not rounded to 7."""
    cs = np.cumsum(service_ps)
    if isinstance(ready_ps, int):
        out: IntArray = cs + max(free_ps, ready_ps)
        return out
    dep: IntArray = cs + np.maximum.accumulate(np.maximum(ready_ps - (cs - service_ps), free_ps))
    return dep


# NAPI instance states (include/linux/netdevice.h: NAPI_STATE_SCHED and the armed IRQ)
ARMED = 0  # interrupt enabled, nothing pending
IRQ_PENDING = 1  # the interrupt will fire at ``irq_at`` (interrupt moderation)
SCHEDULED = 2  # on a CPU's poll list (``____napi_schedule``)


class Fifo:
    """A FIFO of records stored column-wise in NumPy arrays (no per-frame Python objects)."""

    __slots__ = ("buf", "columns", "head", "shared", "tail")

    def __init__(self, columns: tuple[str, ...], capacity: int = 64) -> None:
        self.columns = columns
        self.buf: dict[str, IntArray] = {c: np.zeros(max(capacity, 16), np.int64) for c in columns}
        self.head = 0
        self.tail = 0
        self.shared = False  # ``buf`` is also a copy's: the first write makes its own

    def __len__(self) -> int:
        return self.tail - self.head

    def cow(self) -> Fifo:
        """A copy on write: it shares the buffers, and whichever of the two writes first
        (``push``, ``resize_entries``) takes its own live records (most rings in fast mode
        hold nothing, and a checkpoint is rarely written to)."""
        new = Fifo.__new__(Fifo)
        new.columns, new.buf, new.head, new.tail = self.columns, self.buf, self.head, self.tail
        new.shared = self.shared = True
        return new

    def own(self) -> None:
        """Buffers of its own, holding the live records from their start."""
        if self.shared:
            live = self.tail - self.head
            size = max(16, 2 * live)
            buf = {}
            for c in self.columns:
                arr = np.zeros(size, np.int64)
                arr[:live] = self.buf[c][self.head : self.tail]
                buf[c] = arr
            self.buf, self.head, self.tail, self.shared = buf, 0, live, False

    def push(self, cols: dict[str, IntArray]) -> None:
        n = len(cols[self.columns[0]])
        if n == 0:
            return
        if self.shared:
            self.own()
        size = len(self.buf[self.columns[0]])
        if self.tail + n > size:
            live = self.tail - self.head
            new_size = max(size, 2 * (live + n))
            for c in self.columns:
                arr = np.zeros(new_size, np.int64)
                arr[:live] = self.buf[c][self.head : self.tail]
                self.buf[c] = arr
            self.head, self.tail = 0, live
        for c in self.columns:
            self.buf[c][self.tail : self.tail + n] = cols[c]
        self.tail += n

    def peek(self, n: int | None = None) -> dict[str, IntArray]:
        """The first ``n`` records (all when None), as copies."""
        end = self.tail if n is None else min(self.tail, self.head + n)
        return {c: self.buf[c][self.head : end].copy() for c in self.columns}

    def pop(self, n: int) -> dict[str, IntArray]:
        """The first ``n`` records, removed. They are views of storage no later push writes
        to (pushes go past the tail; a buffer that grows or is cleared is a new one)."""
        end = min(self.tail, self.head + n)
        out = {c: self.buf[c][self.head : end] for c in self.columns}
        self.head = end
        return out

    def column(self, name: str) -> IntArray:
        """A read-only view of one column over the live records."""
        view = self.buf[name][self.head : self.tail]
        view.flags.writeable = False
        return view

    def clear(self) -> int:
        n = len(self)
        self.buf = {c: np.zeros(16, np.int64) for c in self.columns}
        self.head = self.tail = 0
        self.shared = False
        return n


class RxQueue(Row):
    """One receive queue and its NAPI instance (``struct napi_struct``): the descriptor ring,
    the CPU its interrupt is affine to and the interrupt moderation (``rx-usecs``). A row of
    its device's table (``rx_queue_table``)."""

    size = Field[int](0)
    irq_cpu = Field[int](0)
    # interrupt throttle: at most one interrupt per itr_ns (0: none, e.g. veth)
    itr_ns = Field[int](0)
    weight = Field[int](0)  # the budget of one poll (NAPI_POLL_WEIGHT; 1 for a tap's single writes)
    entries = Field[int](0)  # the flow-table size, for fast mode's per-entry counts
    rx_packets = Field[int](0)
    rx_dropped = Field[int](0)
    peak = Field[int](0)
    polls = Field[int](0)
    # fast mode: frames waiting, per entry (or class representative)
    held = Field[Rows](Rows.empty())
    state = Field[int](ARMED)
    irq_at = Field[int](0)
    last_irq = Field[int](-(10**15))
    cpu = Field[int](-1)  # the CPU whose poll list holds it (exact mode), -1 when not scheduled
    fast_pos = Field[int](0)  # fast mode: frames taken so far (position in the queue's sequence)
    fast_irq = Field[int](-1)  # fast mode: when its next interrupt fires (-1: idle)
    # fast mode, where a saturated wire needed its polls' times (``fast_burst``): the step end
    # they reached, the next poll then, the frames waiting for it, the last interrupt
    fast_burst = Field[tuple[int, float, float, float] | None](None)
    vhost_done = Field[int](0)  # a vhost writer's done_idx: buffers since its last vhost_tx_batch
    # a veth's backlog: of the frames held, those in ``process_queue`` (the head), which no
    # limit counts (``veth.backlog_room``)
    proc = Field[int](0)

    __slots__ = ("fifo",)
    fifo: Fifo  # grows as exact mode fills it (fast mode never does)
    OWN = (("fifo", Fifo.cow),)

    def fresh(self) -> dict[str, Any]:
        return {"fifo": Fifo(RX_COLUMNS)}

    def occupancy(self, exact: bool) -> int:
        return len(self.fifo) if exact else self.held.total

    def resize_entries(self, mapping: IntArray, entries: int) -> None:
        """The flow table was rebuilt: entry e is now ``mapping[e]``."""
        if len(self.held):
            self.held = Rows(mapping[self.held.entry], self.held.count, False)
        self.entries = entries
        if len(self.fifo):
            self.fifo.own()
            self.fifo.buf["entry"][self.fifo.head : self.fifo.tail] = mapping[
                self.fifo.buf["entry"][self.fifo.head : self.fifo.tail]
            ]

    def clear(self) -> int:
        """Everything queued is freed (ring re-allocation, link down); returns the frames lost."""
        lost = len(self.fifo) + self.held.total
        self.fifo.clear()
        self.held = Rows.empty()
        self.proc = 0
        return lost

    def to_fast(self) -> None:
        if len(self.fifo):
            entry, count = np.unique(self.fifo.column("entry"), return_counts=True)
            self.held = self.held.concat(
                Rows(entry.astype(np.int64), count.astype(np.int64), False)
            )
            self.fifo.clear()

    def to_exact(self, order: IntArray | None, of_entry: ClassIds, at: int) -> None:
        """Counts become descriptors (arrived by ``at``). ``order`` is the queue's entries in
        arrival order from its head (the last arrivals of a pktgen-ordered source); each class
        takes its frames' entries from it in turn."""
        total = self.held.total
        if not total:
            return
        entries = _lay_out(self.held, order, of_entry)
        zeros = np.zeros(total, np.int64)
        self.fifo.push({"entry": entries, "ident": zeros - 1, "t": zeros + at})
        self.held = Rows.empty()


class TxRing(Row):
    """A transmit ring that drains onto the wire (an XDP TX ring, the stack's TX queue) or to a
    reader (a tap's ``tx_ring``). Frames wait in slots until their departure time. A row of
    its device's table (``tx_ring_table``)."""

    size = Field[int](0)
    cpus = Field[tuple[int, ...]](())  # CPUs whose ndo_xdp_xmit (ixgbe: and XDP_TX) lands here
    locked = Field[bool](False)
    sent = Field[int](0)
    sent_wire = Field[float](0.0)  # the wire bytes of what was sent (frames + WIRE_OVERHEAD each)
    dropped = Field[int](0)
    occ = Field[int](0)  # fast mode: frames held
    occ_bytes = Field[float](0.0)
    credit = Field[float](0.0)  # fast mode: a fraction of a frame the ring may still send
    rx_queues = Field[tuple[int, ...]](())  # RX queues whose XDP_TX lands here (i40e, ice, mlx5)

    __slots__ = ("fifo",)
    fifo: Fifo
    OWN = (("fifo", Fifo.cow),)

    def fresh(self) -> dict[str, Any]:
        return {"fifo": Fifo(TX_COLUMNS)}

    def occupancy(self, exact: bool) -> int:
        return len(self.fifo) if exact else self.occ

    def to_fast(self) -> None:
        self.occ += len(self.fifo)
        self.occ_bytes += float(self.fifo.column("wire").sum()) if len(self.fifo) else 0.0
        self.fifo.clear()

    def clear(self) -> None:
        self.fifo.clear()
        self.occ = 0
        self.occ_bytes = 0.0


def _lay_out(held: Rows, order: IntArray | None, of_entry: ClassIds) -> IntArray:
    """Frames per class as a sequence of entries: each class's frames take the entries of
    that class in ``order`` (cycling), and the frames are put in ``order``'s order; a class
    absent from ``order`` keeps its representative entry, at the end."""
    cls = of_entry[held.entry]
    if order is None or not len(order):
        return np.repeat(held.entry, held.count)
    n = len(order)
    seq_cls = of_entry[order]
    pos_parts: list[IntArray] = []
    tail: list[IntArray] = []
    for c in np.unique(cls):
        k = int(held.count[cls == c].sum())
        where = np.flatnonzero(seq_cls == c)
        if not len(where):
            tail.append(np.full(k, held.entry[cls == c][0], np.int64))
            continue
        i = np.arange(k, dtype=np.int64)
        pos_parts.append(where[i % len(where)] + (i // len(where)) * n)
    pos = np.sort(np.concatenate(pos_parts)) if pos_parts else np.zeros(0, np.int64)
    out: IntArray = np.concatenate([order[pos % n], *tail])
    return out


def rx_queue_table(
    size: int, irq_cpus: list[int], itr_ns: int, weight: int, entries: int
) -> Table[RxQueue]:
    """A device's RX queues, queue q's interrupt on ``irq_cpus[q]``."""
    return Table.of(
        RxQueue,
        (
            {
                "index": q,
                "size": size,
                "irq_cpu": c,
                "itr_ns": itr_ns,
                "weight": weight,
                "entries": entries,
            }
            for q, c in enumerate(irq_cpus)
        ),
    )


def tx_ring_table(size: int, n: int) -> Table[TxRing]:
    """``n`` transmit rings of ``size`` slots."""
    return Table.of(TxRing, ({"index": r, "size": size} for r in range(n)))
