"""The state of one batch run: frame buffers, stacks, call frames, and the access log.

A :class:`Group` is a set of packets (sorted row numbers) at the same instruction, with its
own copy of the eleven registers; everything else lives here, indexed by row. Map accesses are
logged per 8-byte word so ``vm`` can tell whether the batch stayed equal to running its packets
one by one (see ``vm.run_batch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.bpf import memory as mem
from xdptui.bpf.isa import MAX_BPF_STACK, MAX_CALL_FRAMES
from xdptui.bpf.maps import BPF_F_RDONLY_PROG, BpfMap, MapSnapshot, MapType
from xdptui.bpf.packets import Packets
from xdptui.model.errors import Errno, KernelError

if TYPE_CHECKING:
    from xdptui.bpf.objfile import BpfProgram

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
M32 = np.uint64(0xFFFFFFFF)

# Kinds of logged map accesses.
READ, WRITE, ADD, FETCH = 0, 1, 2, 3
KEY_SPACE = 1 << 62
NO_ROW = np.iinfo(np.int64).max  # a touch's second row when it has one
SMALL_LOG = 4096  # logged touches up to which the order check takes them as they are


DEAD = np.zeros(0, dtype=np.uint64)  # a register no instruction reads before writing it
ALL_REGS = (1 << 11) - 1


@dataclass
class Group:
    """Packets at one instruction: their rows (ascending) and their registers (``DEAD``
    where the register is dead there, so splits and merges skip it)."""

    idx: I64
    r: list[U64]
    top: int = 0  # at least the most instructions any of its rows has run

    def take(self, sel: npt.NDArray[np.bool_] | I64, live: int = ALL_REGS) -> Group:
        """The rows ``sel`` selects, with the registers in the ``live`` bit mask."""
        if sel.dtype == np.bool_:
            sel = np.flatnonzero(sel)  # one mask scan for all the registers
        return Group(
            self.idx[sel],
            [reg[sel] if (live >> k) & 1 and len(reg) else DEAD for k, reg in enumerate(self.r)],
            self.top,
        )

    def __len__(self) -> int:
        return len(self.idx)


def merge(groups: list[Group], live: int = ALL_REGS) -> Group:
    """One group from several at the same instruction, rows back in packet order; only the
    registers in the ``live`` bit mask are carried."""
    if len(groups) == 1:
        return groups[0]
    idx = np.concatenate([g.idx for g in groups])
    order = np.argsort(idx, kind="stable")
    regs = []
    for k in range(11):
        if not (live >> k) & 1:
            regs.append(DEAD)
            continue
        parts = [g.r[k] for g in groups]
        if any(len(p) != len(g) for p, g in zip(parts, groups, strict=True)):
            raise AssertionError(f"r{k} is live at a merge but dead on a path into it")
        regs.append(np.concatenate(parts)[order])
    return Group(idx[order], regs, max(g.top for g in groups))


@dataclass
class Private:
    """A map's value arena with a copy per row: a per-CPU scratch buffer that each packet
    fills before it reads it back gives every packet its own bytes, as running them one by one
    would. ``dirty``: the bytes each row wrote; ``read_first``: those it read before writing."""

    data: U8  # row r's copy at r * size
    dirty: npt.NDArray[np.bool_]
    read_first: npt.NDArray[np.bool_]
    size: int


class PrivateAbort(Exception):
    """A privatised map was used in a way a copy per row cannot follow (an atomic operation, a
    helper that updates or deletes): the pass runs again with the map shared."""

    def __init__(self, mi: int) -> None:
        super().__init__(mi)
        self.mi = mi


PRIVATE_ARENA = 4096  # a map arena up to this size may get a copy per row
PRIVATE_BUDGET = 16 << 20  # bytes of copies (and as many of each mask) a pass may hold


@dataclass
class Record:
    """An output record: a ``trace_printk`` line or a perf / ring buffer sample."""

    packet: int
    kind: str  # "trace_printk", "perf_event_output", "ringbuf_output"
    data: bytes
    text: str = ""


@dataclass
class AccessLog:
    """Logged map accesses: the 8-byte word (``region << 32 | offset`` >> 3, or a hash key's
    ``KEY_SPACE | map << 48 | hash``), the packet, and READ / WRITE / ADD / FETCH."""

    words: U64
    rows: I64
    kinds: npt.NDArray[np.int8]

    @staticmethod
    def join(logs: list[AccessLog]) -> AccessLog:
        if len(logs) == 1:
            return logs[0]
        return AccessLog(
            np.concatenate([a.words for a in logs]),
            np.concatenate([a.rows for a in logs]),
            np.concatenate([a.kinds for a in logs]),
        )

    def map_of(self) -> I64:
        """The object's map index each word belongs to."""
        key = (self.words & np.uint64(KEY_SPACE)) != 0
        arena = (self.words >> np.uint64(29)).astype(np.int64) - mem.FIRST_MAP_REGION
        keyed = ((self.words >> np.uint64(48)) & np.uint64(0x3FFF)).astype(np.int64)
        out: I64 = np.where(key, keyed, arena)
        return out

    def state_dependence(self) -> tuple[int, str] | None:
        """Whether running the packets depends on what earlier packets wrote: the first map
        (index) a packet stores into, exchanges, fetches from or inserts into, or whose
        added-to words a packet reads -- with the reason; None when every write is a
        commutative add that no packet reads."""
        if not len(self.words):
            return None
        maps = self.map_of()
        hard = (self.kinds == WRITE) | (self.kinds == FETCH)
        if hard.any():
            i = int(np.flatnonzero(hard)[0])
            keyed = bool(self.words[i] & np.uint64(KEY_SPACE))
            what = "inserts into or deletes from" if keyed else "stores into"
            return int(maps[i]), what
        added = np.unique(self.words[self.kinds == ADD])
        read = self.kinds == READ
        both = read & np.isin(self.words, added)
        if both.any():
            return int(maps[int(np.flatnonzero(both)[0])]), "reads what it adds to in"
        return None


@dataclass
class Batch:
    """Per-row state of the packets being run (rows are packet positions in the batch)."""

    prog: BpfProgram
    packets: Packets
    first: int  # index of row 0 in the caller's whole batch (for prandom and records)
    ingress_ifindex: U64
    rx_queue_index: U64
    egress_ifindex: U64
    cpu: int
    time_ns: int
    seed: int
    max_insns: int
    maps: list[BpfMap] = field(init=False)
    n: int = field(init=False)
    buf: U8 = field(init=False)
    width: int = field(init=False)  # bytes of frame buffer per row (grows with adjust_tail)
    owned: bool = field(init=False)  # ``buf`` is the batch's own (the caller's rows until a write)
    stack: U8 = field(init=False)
    stack_width: int = field(init=False)  # stack bytes per row (grows with the call depth)
    # ``stack`` is word-major -- 8-byte word w of every row, then word w + 1 -- so an access
    # that every row makes at one offset (a spill, a key) reads memory in order.
    data_off: I64 = field(init=False)
    end_off: I64 = field(init=False)
    meta_off: I64 = field(init=False)
    depth: I64 = field(init=False)
    retpc: I64 = field(init=False)
    saved: U64 = field(init=False)
    visits: list[tuple[I64, int]] = field(init=False)  # (rows, instructions) per block run
    retval: U64 = field(init=False)
    done: npt.NDArray[np.bool_] = field(init=False)
    rnd_calls: I64 = field(init=False)
    redirect_ifindex: I64 = field(init=False)
    redirect_map: I64 = field(init=False)
    redirect_key: I64 = field(init=False)
    redirect_flags: I64 = field(init=False)
    records: list[tuple[int, int, Record]] = field(default_factory=list)
    log_words: list[U64] = field(default_factory=list)
    log_rows: list[I64] = field(default_factory=list)
    log_kind: list[int] = field(default_factory=list)
    log_event: list[int] = field(default_factory=list)
    events: int = 0
    snapshots: dict[int, MapSnapshot] = field(default_factory=dict)
    private: dict[int, Private] = field(default_factory=dict)  # map -> its copies per row
    inserts: dict[int, list[int]] = field(default_factory=dict)  # map -> rows changing its size
    hit_full: set[int] = field(default_factory=set)
    insns: int = 0
    record: bool = False  # keep each commutative add's value (``adds``) for the caller
    # The host's devices by ifindex: (mtu, hard_header_len), for bpf_check_mtu. What
    # BPF_PROG_TEST_RUN sees by default: lo, ifindex 1 (MTU 65536, an Ethernet header).
    devices: dict[int, tuple[int, int]] = field(default_factory=lambda: {1: (65536, 14)})
    adds: list[tuple[int, I64, I64, int, U64]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.maps = self.prog.maps
        n = self.n = len(self.packets)
        pk = self.packets
        if n and (pk.start != mem.XDP_PACKET_HEADROOM).any():
            pk = Packets.from_bytes(pk.to_bytes())  # rows laid out as test_run lays a frame
        lens = pk.lengths
        if n and (lens.min() < mem.ETH_HLEN or lens.max() > mem.MAX_LINEAR):
            bad = int(np.flatnonzero((lens < mem.ETH_HLEN) | (lens > mem.MAX_LINEAR))[0])
            raise KernelError(
                Errno.EINVAL,
                f"packet {self.first + bad}: {lens[bad]} bytes; BPF_PROG_TEST_RUN takes "
                f"{mem.ETH_HLEN} to {mem.MAX_LINEAR} bytes of linear data",
            )
        # Each row: the headroom, the frame, zeros to the row's width (8-byte aligned).
        self.buf, self.width, self.owned = pk.buf, pk.width, False
        self.stack_width = MAX_BPF_STACK
        self.stack = np.zeros(n * self.stack_width, dtype=np.uint8)
        self.data_off = np.full(n, mem.XDP_PACKET_HEADROOM, dtype=np.int64)
        self.meta_off = self.data_off.copy()
        self.end_off = pk.end.copy()
        self.depth = np.zeros(n, dtype=np.int64)
        self.retpc = np.zeros((n, MAX_CALL_FRAMES), dtype=np.int64)
        self.saved = np.zeros((n, MAX_CALL_FRAMES, 5), dtype=np.uint64)
        self.visits = []
        self.retval = np.zeros(n, dtype=np.uint64)
        self.done = np.zeros(n, dtype=bool)
        self.rnd_calls = np.zeros(n, dtype=np.int64)
        self.redirect_ifindex = np.full(n, -1, dtype=np.int64)
        self.redirect_map = np.full(n, -1, dtype=np.int64)
        self.redirect_key = np.full(n, -1, dtype=np.int64)
        self.redirect_flags = np.zeros(n, dtype=np.int64)

    def icount(self) -> I64:
        """The instructions each row has run so far."""
        out = np.zeros(self.n, dtype=np.int64)
        for rows, count in self.visits:
            out[rows] += count
        return out

    def writable(self) -> U8:
        """The frame buffer to write into: the caller's rows are copied on the first write."""
        if not self.owned:
            self.buf, self.owned = self.buf.copy(), True
        return self.buf

    def ensure_width(self, end: int) -> None:
        """Widen every row's frame buffer to hold ``end`` bytes (bpf_xdp_adjust_tail)."""
        if end <= self.width:
            return
        new = min(mem.FRAME_SIZE, (end + 63) & ~63)
        grown = np.zeros((self.n, new), dtype=np.uint8)
        grown[:, : self.width] = self.buf.reshape(self.n, self.width)
        self.buf, self.width, self.owned = grown.reshape(-1), new, True

    def out(self) -> Packets:
        """``data_out`` of each row: ``data_meta`` to ``data_end``."""
        return Packets(self.buf, self.width, self.meta_off, self.end_off)

    def ensure_stack(self, frames: int) -> None:
        """Room for ``frames`` stack frames per row (bpf-to-bpf calls)."""
        need = frames * MAX_BPF_STACK
        if need <= self.stack_width:
            return
        grown = np.zeros(self.n * need, dtype=np.uint8)  # word-major: new words at the end
        grown[: len(self.stack)] = self.stack
        self.stack, self.stack_width = grown, need

    def initial_group(self) -> Group:
        n = self.n
        regs = [np.zeros(n, dtype=np.uint64) for _ in range(11)]
        regs[1] = np.full(n, mem.CTX_BASE, dtype=np.uint64)
        regs[10] = np.full(n, mem.STACK_BASE + MAX_BPF_STACK, dtype=np.uint64)
        return Group(np.arange(n, dtype=np.int64), regs)

    # -- the access log ---------------------------------------------------------------------
    def new_event(self) -> int:
        self.events += 1
        return self.events

    def log(self, words: U64, rows: I64, kind: int, event: int = 0) -> None:
        self.log_words.append(words)
        self.log_rows.append(rows)
        self.log_kind.append(kind)
        self.log_event.append(event or self.new_event())

    def log_arena(
        self, region: int, off: I64, size: int, rows: I64, kind: int, event: int = 0
    ) -> None:
        base = np.uint64(region << 32)
        first = (base + off.astype(np.uint64)) >> np.uint64(3)
        last = (base + (off + size - 1).astype(np.uint64)) >> np.uint64(3)
        ev = event or self.new_event()
        self.log(first, rows, kind, ev)
        spans = last != first
        if spans.any():
            self.log(last[spans], rows[spans], kind, ev)

    def log_keys(self, mi: int, keys: U8, rows: I64, kind: int) -> None:
        """Key-level accesses of a hash map (lookups READ, updates and deletes WRITE)."""
        if len(rows) == 0:
            return
        pad = (-keys.shape[1]) % 8
        rows8 = np.concatenate([keys, np.zeros((len(keys), pad), dtype=np.uint8)], axis=1)
        cols = np.ascontiguousarray(rows8).view("<u8")
        h = np.full(len(keys), 0xCBF29CE484222325, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for c in range(cols.shape[1]):
                h = (h ^ cols[:, c]) * np.uint64(0x100000001B3)
                h ^= h >> np.uint64(29)
        words = np.uint64(KEY_SPACE | (mi << 48)) | (h & np.uint64((1 << 48) - 1))
        self.log(words, rows, kind)

    def record_add(self, mi: int, rows: I64, off: I64, size: int, values: U64) -> None:
        """A non-fetching atomic add into map ``mi`` (recording runs only): which rows added
        what at which arena offsets."""
        if self.record:
            self.adds.append((mi, rows.copy(), off.copy(), size, values.copy()))

    def access_log(self) -> AccessLog:
        """The map accesses of this batch, one row per logged word."""
        if not self.log_words:
            e = np.zeros(0, dtype=np.int64)
            return AccessLog(np.zeros(0, dtype=np.uint64), e, np.zeros(0, dtype=np.int8))
        sizes = [len(w) for w in self.log_words]
        return AccessLog(
            np.concatenate(self.log_words),
            np.concatenate(self.log_rows).astype(np.int64) + self.first,
            np.repeat(np.array(self.log_kind, dtype=np.int8), sizes),
        )

    def before_write(self, mi: int) -> None:
        """Copy a map's state before the batch first changes it, to roll the batch back."""
        if mi in self.private:
            raise PrivateAbort(mi)
        if mi not in self.snapshots:
            self.snapshots[mi] = self.maps[mi].snapshot()

    # -- maps with a copy per row -----------------------------------------------------------
    def privatise(self, maps: set[int]) -> None:
        """Give each of ``maps`` that fits a copy per row of its arena."""
        for mi in sorted(maps):
            arena = self.maps[mi].arena
            if arena.size * self.n > PRIVATE_BUDGET:
                continue
            total = arena.size * self.n
            self.private[mi] = Private(
                np.tile(arena, self.n),
                np.zeros(total, dtype=bool),
                np.zeros(total, dtype=bool),
                arena.size,
            )

    def is_private(self, region: int) -> bool:
        return region - mem.FIRST_MAP_REGION in self.private

    def scratch_candidates(self) -> set[int]:
        """Maps this pass stored into that a copy per row could serve: plain or per-CPU
        arrays, small, writable by the program."""
        out: set[int] = set()
        for words, kind in zip(self.log_words, self.log_kind, strict=True):
            if kind != WRITE or not len(words) or int(words[0]) & KEY_SPACE:
                continue
            mi = (int(words[0]) >> 29) - mem.FIRST_MAP_REGION
            m = self.maps[mi]
            if (
                m.map_type in (MapType.ARRAY, MapType.PERCPU_ARRAY)
                and m.arena.size <= PRIVATE_ARENA
                and not m.map_flags & BPF_F_RDONLY_PROG
            ):
                out.add(mi)
        return out

    def private_cut(self) -> int | None:
        """The first row that read a byte of a privatised map, before writing it itself, that
        an earlier row had written (run one by one, it would have read that row's byte)."""
        cut: int | None = None
        for priv in self.private.values():
            dirty = priv.dirty.reshape(self.n, priv.size)
            first = np.where(dirty.any(axis=0), dirty.argmax(axis=0), self.n)
            rows = np.arange(self.n)[:, None]
            late = priv.read_first.reshape(self.n, priv.size) & (rows > first[None, :])
            hit = np.flatnonzero(late.any(axis=1))
            if len(hit):
                cut = int(hit[0]) if cut is None else min(cut, int(hit[0]))
        return cut

    def commit_private(self) -> None:
        """Each privatised byte as the last row that wrote it left it."""
        for mi, priv in self.private.items():
            dirty = priv.dirty.reshape(self.n, priv.size)
            cols = np.flatnonzero(dirty.any(axis=0))
            if not len(cols):
                continue
            last = self.n - 1 - dirty[::-1, cols].argmax(axis=0)
            m = self.maps[mi]
            if mi not in self.snapshots:
                self.snapshots[mi] = m.snapshot()
            m.arena[cols] = priv.data.reshape(self.n, priv.size)[last, cols]
            m.touch(int(cols[-1]) + 1)

    def rollback(self) -> None:
        for mi, snap in self.snapshots.items():
            self.maps[mi].restore(snap)
        self.snapshots.clear()

    def first_conflict(self) -> int | None:
        """The first row whose result may differ from running the rows one by one, or None.

        A word touched by two or more packets conflicts unless every touch reads it, every
        touch is a non-fetching atomic add, or all touches are one atomic instruction (which
        applied them in packet order). A map that filled up (E2BIG or an LRU eviction) while
        two packets inserted or deleted (or, for LRU, looked up) conflicts at the second."""
        cut: int | None = None
        for mi in self.hit_full:
            sizers = sorted(set(self.inserts.get(mi, [])))
            if len(sizers) > 1:
                cut = sizers[1] if cut is None else min(cut, sizers[1])
        entries = self._touches()
        if entries is None:
            return cut
        words, rmin_e, r2_e, rmax_e, kind, event = entries
        order = np.lexsort((rmin_e, words))
        words, rmin_e, r2_e, rmax_e = words[order], rmin_e[order], r2_e[order], rmax_e[order]
        kind, event = kind[order], event[order]
        start = np.flatnonzero(np.concatenate(([True], words[1:] != words[:-1])))
        seg = np.repeat(np.arange(len(start)), np.diff(np.append(start, len(words))))
        rmin = np.minimum.reduceat(rmin_e, start)
        rmax = np.maximum.reduceat(rmax_e, start)
        shared = rmin != rmax
        if not shared.any():
            return cut
        all_read = np.maximum.reduceat((kind != READ).astype(np.int8), start) == 0
        all_add = np.maximum.reduceat((kind != ADD).astype(np.int8), start) == 0
        emin = np.minimum.reduceat(event, start)
        emax = np.maximum.reduceat(event, start)
        atomic = np.minimum.reduceat((kind >= ADD).astype(np.int8), start) == 1
        one_atomic_event = (emin == emax) & atomic
        bad = shared & ~all_read & ~all_add & ~one_atomic_event
        if not bad.any():
            return cut
        # The second distinct packet of each bad word: the first row above the word's minimum.
        above = np.where(rmin_e > rmin[seg], rmin_e, r2_e)
        cand = np.where(bad[seg], above, NO_ROW)
        second = int(cand.min())
        return second if cut is None else min(cut, second)

    def _touches(self) -> tuple[U64, I64, I64, I64, npt.NDArray[np.int8], I64] | None:
        """The logged touches of words that some touch writes, adds to or fetches (a word
        only ever read cannot conflict): word, first row, second row (or ``NO_ROW``), last
        row, kind and event. An access whose rows all touch one word is one touch (a counter
        every packet adds to, a lookup of one key), so the log's size follows distinct words."""
        if not any(kind != READ for kind in self.log_kind):
            return None
        sizes = [len(w) for w in self.log_words]
        if sum(sizes) <= SMALL_LOG:  # a few packets: every touch as it is
            rows = np.concatenate(self.log_rows).astype(np.int64, copy=False)
            return (
                np.concatenate(self.log_words),
                rows,
                np.full(len(rows), NO_ROW),
                rows,
                np.repeat(np.array(self.log_kind, dtype=np.int8), sizes),
                np.repeat(np.array(self.log_event, dtype=np.int64), sizes),
            )
        parts: list[tuple[U64, I64, I64, I64, int, int]] = []
        for words, rows, kind, ev in zip(
            self.log_words, self.log_rows, self.log_kind, self.log_event, strict=True
        ):
            if len(words) == 0:
                continue
            if len(words) > 1 and (words == words[0]).all():
                low = np.partition(rows, 1)[:2]
                one = np.ones(1, dtype=np.int64)
                parts.append(
                    (words[:1], one * low[0], one * low[1], one * int(rows.max()), kind, ev)
                )
            else:
                rows64 = rows.astype(np.int64, copy=False)
                parts.append((words, rows64, np.full(len(rows), NO_ROW), rows64, kind, ev))
        written = [p[0] for p in parts if p[4] != READ]
        if not written:
            return None
        hot = np.unique(np.concatenate(written))
        kept = []
        for w, r1, r2, rx, kind, ev in parts:
            sel = np.isin(w, hot)
            if sel.all():
                kept.append((w, r1, r2, rx, kind, ev))
            elif sel.any():
                kept.append((w[sel], r1[sel], r2[sel], rx[sel], kind, ev))
        sizes = [len(k[0]) for k in kept]
        return (
            np.concatenate([k[0] for k in kept]),
            np.concatenate([k[1] for k in kept]),
            np.concatenate([k[2] for k in kept]),
            np.concatenate([k[3] for k in kept]),
            np.repeat(np.array([k[4] for k in kept], dtype=np.int8), sizes),
            np.repeat(np.array([k[5] for k in kept], dtype=np.int64), sizes),
        )
