"""BPF_MAP_TYPE_CPUMAP: XDP frames handed to another CPU (``kernel/bpf/cpumap.c``).

A map holds entries key (a CPU) -> ``struct bpf_cpumap_val`` {qsize, optional program}.
``bpf_redirect_map`` into it puts the frame into the polling CPU's bulk queue toward the entry
(``cpu_map_enqueue``, ``CPU_MAP_BULK_SIZE`` 8); the queue is flushed into the entry's
``ptr_ring`` of ``qsize`` slots when a ninth frame comes and at ``xdp_do_flush``
(``bq_flush_to_queue``: a frame that finds the ring full is dropped, ``xdp:xdp_cpumap_enqueue``
counts both), and the flush at the end of the poll wakes the entry's kthread
(``__cpu_map_flush``). The kthread, bound to the entry's CPU, takes up to ``CPUMAP_BATCH`` 8
frames at a time (``cpu_map_kthread_run``), runs the entry's program on them
(``cpu_map_bpf_prog_run_xdp``: PASS, DROP, REDIRECT; anything else is an exception and a drop),
builds skbs of the passed ones for the stack, fires ``xdp:xdp_cpumap_kthread`` per batch and
sleeps when the ring is empty (``sched`` is 1 for the batch after a sleep).

The ring frees slots as ``ptr_ring`` does (``__ptr_ring_discard_one``): consumed slots are
zeroed -- and so free for the producer -- only in batches of ``PTR_RING_BATCH`` or at the
ring's end, so a ring a kthread is draining looks fuller to the producer than it is.

Modelling choices: the kthread runs when its CPU has no NAPI work (a softirq runs before a
task; a CPU busy with NAPI starves the kthread, where the kernel's ksoftirqd would share the
CPU with it); a poll's flushes happen at the poll's start, as all of its effects do. Exact
mode moves frames one by one (``Exact``'s RUN events run kthread batches); fast mode counts a
step's frames per flow class and serves each ring with the CPU time NAPI left
(:func:`serve_fast`), with each poll's bulks counted as ceil(k / 8).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno, KernelError
from xdptui.sim import costs
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.core.filter import Compiled, FilterCore, make_context
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.devmap import PollOutcome
from xdptui.sim.kconst import (
    BPF_EXIST,
    BPF_NOEXIST,
    CPU_TARGET,
    XDP_ABORTED,
    XDP_DROP,
    XDP_PASS,
    XDP_REDIRECT,
    action_name,
)
from xdptui.sim.programs import Program

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

CPU_MAP_BULK_SIZE = 8  # kernel/bpf/cpumap.c: frames per per-CPU bulk queue
CPUMAP_BATCH = 8  # kernel/bpf/cpumap.c: frames the kthread takes from its ring at a time
QSIZE_MAX = 16384  # cpu_map_update_elem: "sanity limit on qsize"
PTR_RING_BATCH = 16  # __ptr_ring_set_size: SMP_CACHE_BYTES * 2 / sizeof(void *)


def cpu_of_target(target: int) -> int:
    return CPU_TARGET - target


class CpumapCore(FilterCore, Protocol):
    """The data path as ``cpumap.c`` calls back into it: the verdict cache and tallies."""

    @property
    def egress_cache(self) -> Any: ...

    @property
    def compiled(self) -> Mapping[str, Compiled]: ...

    @property
    def cpumap_tp(self) -> CpumapTally: ...


@dataclass
class EnqueueTally:
    """``xdp:xdp_cpumap_enqueue`` for one (map, from CPU, to CPU): hits are bulk flushes."""

    processed: int = 0
    drops: int = 0
    hits: int = 0


@dataclass
class KthreadTally:
    """``xdp:xdp_cpumap_kthread`` for one (map, CPU): hits are batches."""

    processed: int = 0
    drops: int = 0  # skb allocation failures (never here)
    sched: int = 0
    xdp_pass: int = 0
    xdp_drop: int = 0
    xdp_redirect: int = 0
    hits: int = 0
    busy_ns: float = 0.0


@dataclass
class CpumapTally:
    enqueue: dict[tuple[str, int, int], EnqueueTally] = field(default_factory=dict)
    # the same per (map, receiving device, target CPU): which port's frames they were (the
    # tracepoint knows only the CPU, which ports may share)
    from_dev: dict[tuple[str, str, int], EnqueueTally] = field(default_factory=dict)
    kthread: dict[tuple[str, int], KthreadTally] = field(default_factory=dict)
    exception: dict[str, int] = field(default_factory=dict)  # xdp_exception in the kthread

    def enq(self, name: str, cpu: int, to_cpu: int) -> EnqueueTally:
        key = (name, cpu, to_cpu)
        row = self.enqueue.get(key)
        if row is None:
            row = self.enqueue[key] = EnqueueTally()
        return row

    def src(self, name: str, dev: str, to_cpu: int) -> EnqueueTally:
        key = (name, dev, to_cpu)
        row = self.from_dev.get(key)
        if row is None:
            row = self.from_dev[key] = EnqueueTally()
        return row

    def dropped(self, name: str, sender: tuple[int, str], to_cpu: int, n: int) -> None:
        """``n`` frames of ``sender`` (CPU, device) found the ring full."""
        self.enq(name, sender[0], to_cpu).drops += n
        self.src(name, sender[1], to_cpu).drops += n

    def kth(self, name: str, cpu: int) -> KthreadTally:
        row = self.kthread.get((name, cpu))
        if row is None:
            row = self.kthread[(name, cpu)] = KthreadTally()
        return row


@dataclass(eq=False)
class CpuMapEntry:
    """``struct bpf_cpu_map_entry``: the ring of frames waiting for the kthread on ``cpu``."""

    cpu: int
    qsize: int
    prog: Program | None = None
    ring: Rows = field(default_factory=Rows.empty)
    lag: int = 0  # consumed, not yet zeroed slots (``consumer_head - consumer_tail``)
    head: int = 0  # ``consumer_head``: where the next consume is (slots are zeroed at the end)
    sleeping: bool = True  # the kthread is in schedule(): the next batch has ``sched`` 1
    last_end: int = 0  # exact mode: when its last batch ended (it looks at the ring then)
    watch_dev: str = ""  # a followed frame's receiving device (``xdpf->dev_rx``)
    # fast mode, within a step: frames flushed toward the ring, the polls and bulks that did
    arrived: Rows = field(default_factory=Rows.empty)
    step_polls: int = 0
    step_bulks: int = 0
    step_from: dict[tuple[int, str], int] = field(default_factory=dict)  # per (CPU, device)
    # each sending poll's time, frames toward the ring and sending CPU (fast mode, NAPI's loop)
    step_times: list[IntArray] = field(default_factory=list)
    step_counts: list[IntArray] = field(default_factory=list)
    step_cpus: list[tuple[int, str]] = field(default_factory=list)  # (CPU, device) per sender
    step_timed: bool = True  # every sending poll's time is known this step
    step_bursts: int = 0  # interrupts behind those polls (a burst of back-to-back polls)
    step_gap_ns: float = 0.0  # the sender's CPU time per poll: polls of a burst come that far apart

    @property
    def batch(self) -> int:
        """``__ptr_ring_set_size``: the zeroing batch, 1 when it exceeds half the ring."""
        return 1 if self.qsize // 2 < PTR_RING_BATCH else PTR_RING_BATCH

    @property
    def room(self) -> int:
        """Slots the producer can fill: ``__ptr_ring_produce`` fails on a non-NULL slot."""
        return self.qsize - self.ring.total - self.lag

    def consumed(self, n: int) -> None:
        """``__ptr_ring_discard_one`` for ``n`` frames (:func:`ptr_ring_discard`)."""
        self.head, self.lag = ptr_ring_discard(self.head, self.lag, n, self.qsize, self.batch)


@dataclass
class CpuMap:
    name: str
    max_entries: int
    map_id: int
    nr_cpus: int
    entries: dict[int, CpuMapEntry] = field(default_factory=dict)
    type: str = "cpumap"

    def check_update(self, key: int, qsize: int, flags: int) -> None:
        """``cpu_map_update_elem``'s checks, in order: flags > BPF_EXIST -> EINVAL; key out of
        range -> E2BIG; BPF_NOEXIST -> EEXIST (every slot exists); qsize > 16384 ->
        EOVERFLOW; a CPU that is not possible -> ENODEV. (A program that is not
        BPF_XDP_CPUMAP fails ``__cpu_map_entry_alloc``, which the caller answers ENOMEM.)"""
        if flags > BPF_EXIST:
            raise KernelError(Errno.EINVAL, "")
        if not 0 <= key < self.max_entries:
            raise KernelError(Errno.E2BIG, "")
        if flags == BPF_NOEXIST:
            raise KernelError(Errno.EEXIST, "")
        if qsize > QSIZE_MAX:
            raise KernelError(Errno.EOVERFLOW, "")
        if key >= self.nr_cpus:
            raise KernelError(Errno.ENODEV, "")

    def update(self, key: int, qsize: int, prog: Program | None, flags: int = 0) -> None:
        """``cpu_map_update_elem``: qsize 0 empties the slot (as a delete); otherwise a new
        entry (``__cpu_map_entry_alloc``: a new ring and kthread) replaces the old one, whose
        frames the old kthread still delivers (here: they are dropped with it)."""
        self.check_update(key, qsize, flags)
        if qsize == 0:
            self.entries.pop(key, None)
            return
        self.entries[key] = CpuMapEntry(key, qsize, prog)

    def delete(self, key: int) -> None:
        """``cpu_map_delete_elem``: out of range -> EINVAL."""
        if not 0 <= key < self.max_entries:
            raise KernelError(Errno.EINVAL, "")
        self.entries.pop(key, None)

    def lookup(self, key: int) -> CpuMapEntry | None:
        """``__cpu_map_lookup_elem``: what ``bpf_redirect_map`` finds."""
        return self.entries.get(key)


# ------------------------------------------------------------ the sending CPU


def enqueue(
    dp: CpumapCore,
    dev: NetDev,
    cmap: CpuMap,
    cpu: int,
    t: int,
    rows: Rows,
    shape: PollShape,
    out: PollOutcome,
) -> None:
    """``cpu_map_enqueue`` for one poll's frames toward each entry, then the bulk flushes
    (``bq_flush_to_queue``) into the entries' rings. Exact mode: in order, 8 at a time; fast
    mode: each poll's k frames toward an entry as ceil(k / 8) flushes."""
    target = dp.compiled[dev.name].target[rows.entry]
    for tgt in np.unique(target).tolist():
        key = cpu_of_target(int(tgt))
        part = rows.where(target == tgt) if len(np.unique(target)) > 1 else rows
        entry = cmap.lookup(key)
        if entry is None:  # deleted since the compile: the next compile says so
            continue
        tally = dp.cpumap_tp.enq(cmap.name, cpu, entry.cpu)
        src = dp.cpumap_tp.src(cmap.name, dev.name, entry.cpu)
        if dp.watched(part):
            entry.watch_dev = dev.name
            dp.hop(
                t, dev.name, "bulk_queue", f"cpu_map_enqueue: cpu {cpu}'s bulk queue to cpu {key}"
            )
        if part.ordered:
            n = len(part)
            for start in range(0, n, CPU_MAP_BULK_SIZE):
                chunk = part.slice(start, start + CPU_MAP_BULK_SIZE)
                took = _produce(dp, entry, chunk, t)
                for row in (tally, src):
                    row.processed += len(chunk)
                    row.drops += len(chunk) - took
                    row.hits += 1
                reason = "poll_end" if start + CPU_MAP_BULK_SIZE >= n else "full"
                out.cost_ns += costs.CPUMAP_FLUSH
                out.cpumap_flushes.append(
                    {
                        "cpu": cpu,
                        "map": cmap.name,
                        "to_cpu": entry.cpu,
                        "frames": len(chunk),
                        "drops": len(chunk) - took,
                        "reason": reason,
                    }
                )
                if dp.watched(chunk):
                    _hop_flush(dp, dev, t, chunk, took, entry)
            dp.io.wake(entry.cpu, t)  # __cpu_map_flush: wake_up_process
            continue
        per_poll = shape.classes.get(int(tgt))
        hits = (
            int(np.ceil(per_poll / CPU_MAP_BULK_SIZE).sum())
            if per_poll is not None
            else -(-part.total // CPU_MAP_BULK_SIZE)
        )
        for row in (tally, src):
            row.processed += part.total  # the drops are known once the ring is served
            row.hits += hits
        out.cost_ns += hits * costs.CPUMAP_FLUSH
        entry.arrived = entry.arrived.concat(part)
        polls = shape.polls if per_poll is None else int((per_poll > 0).sum())
        entry.step_polls += polls
        entry.step_bursts += min(max(shape.bursts, 1), polls)
        sender_ns = dp.compiled[dev.name].cost[rows.entry]
        entry.step_gap_ns = float(rows.count @ sender_ns) / max(shape.polls, 1)
        entry.step_bulks += hits
        sender = (cpu, dev.name)
        entry.step_from[sender] = entry.step_from.get(sender, 0) + part.total
        if shape.times is not None and per_poll is not None and len(per_poll) == len(shape.times):
            entry.step_times.append(shape.times)
            entry.step_counts.append(per_poll)
            entry.step_cpus.append(sender)
        else:
            entry.step_timed = False


def _produce(dp: CpumapCore, entry: CpuMapEntry, rows: Rows, t: int) -> int:
    """``__ptr_ring_produce`` for each frame of a flush: what fits is taken, in order (fast
    mode: a share of every class); returns the frames taken."""
    room = max(entry.room, 0)
    if rows.ordered and not entry.ring.total and t >= entry.last_end:
        entry.sleeping = True  # the ring was empty when its last batch ended: schedule()
    took = rows.head(room)
    if took.total:
        entry.ring = entry.ring.concat(took)
    return took.total


def _hop_flush(dp: CpumapCore, dev: NetDev, t: int, chunk: Rows, took: int, e: CpuMapEntry) -> None:
    assert chunk.ident is not None
    i = int(np.flatnonzero(chunk.ident == dp.watch)[0])
    if i < took:
        dp.hop(t, dev.name, "ptr_ring", f"bq_flush_to_queue: into cpu {e.cpu}'s ptr_ring")
    else:
        dp.hop(t, dev.name, "drop", f"cpu {e.cpu}'s ptr_ring is full: dropped", end=True)


# ------------------------------------------------------------ the kthread


def verdicts(dp: CpumapCore, cmap: CpuMap, key: int, entry: CpuMapEntry) -> IntArray:
    """The entry program's action for every flow-table entry (``cpu_map_bpf_prog_run_xdp``),
    computed once per configuration; no program passes everything."""
    n = len(dp.world.entries)
    if entry.prog is None:
        return np.full(n, XDP_PASS, np.int64)
    ck = (dp.world.epoch, f"cpumap:{cmap.name}", f"{key}:{entry.prog.name}")
    hit = dp.egress_cache.get(ck)
    if hit is not None and len(hit) == n:
        out: IntArray = hit
        return out
    raw = entry.prog.run(make_context(dp.world, None, entry.prog))
    dp.egress_cache[ck] = raw
    return raw


def frame_costs(act: IntArray, prog: Program | None) -> FloatArray:
    """CPU ns per frame on the kthread's CPU by its program's action: a passed frame becomes
    an skb for the stack; a dropped one goes back to its page pool."""
    base = prog.cost_ns if prog is not None else 0.0
    cost = np.full(len(act), base + costs.CPUMAP_FRAME)
    cost[act == XDP_PASS] += costs.CPUMAP_BUILD_SKB + costs.STACK_RX
    return cost


def tally_batch(
    dp: CpumapCore, cmap: CpuMap, entry: CpuMapEntry, rows: Rows, act: IntArray, batches: int
) -> float:
    """The kthread's outcome for ``rows`` (``batches`` batches of them): its tracepoint's
    fields, exceptions, and the CPU time (ns) it took."""
    tally = dp.cpumap_tp.kth(cmap.name, entry.cpu)
    count_verdicts(dp, cmap.name, entry, rows, act)
    tally.processed += rows.total
    tally.hits += batches
    cost = float(rows.count @ frame_costs(act[rows.entry], entry.prog))
    cost += batches * costs.CPUMAP_BATCH
    tally.busy_ns += cost
    return cost


def count_verdicts(
    dp: CpumapCore, name: str, entry: CpuMapEntry, rows: Rows, act: IntArray
) -> None:
    """``cpu_map_bpf_prog_run_xdp``'s stats: the entry program's PASS, DROP (an unknown
    action too: ``bpf_warn_invalid_xdp_action``, then ``xdp:xdp_exception`` and a drop) and
    REDIRECT. Without a program they stay 0 (``cpu_map_bpf_prog_run``: ``if (!rcpu->prog)``),
    though every frame goes up the stack."""
    if entry.prog is None:
        return
    tally = dp.cpumap_tp.kth(name, entry.cpu)
    a = act[rows.entry]
    bad = (a != XDP_PASS) & (a != XDP_DROP) & (a != XDP_REDIRECT)
    if bad.any():
        for code in np.unique(a[bad]).tolist():
            name = action_name(int(code)) if code != XDP_ABORTED else "XDP_ABORTED"
            hits = int(rows.count[a == code].sum())
            dp.cpumap_tp.exception[name] = dp.cpumap_tp.exception.get(name, 0) + hits
    tally.xdp_pass += int(rows.count[a == XDP_PASS].sum())
    tally.xdp_drop += int(rows.count[(a == XDP_DROP) | bad].sum())
    tally.xdp_redirect += int(rows.count[a == XDP_REDIRECT].sum())


def kthread_batch(
    dp: CpumapCore, cmap: CpuMap, key: int, entry: CpuMapEntry, t: int
) -> tuple[int, dict[str, Any]]:
    """One turn of ``cpu_map_kthread_run`` (exact mode): up to 8 frames from the ring's
    head; returns its CPU time (ns) and its event."""
    before = entry.ring.total
    if entry.ring.ordered:
        rows = entry.ring.slice(0, CPUMAP_BATCH)
    else:  # left by fast mode: its frames, one by one
        rows = Rows.frames(np.repeat(entry.ring.entry, entry.ring.count))
        entry.ring = rows
        rows = rows.slice(0, CPUMAP_BATCH)
    entry.ring = entry.ring.slice(len(rows), len(entry.ring))
    entry.consumed(len(rows))
    sched = entry.sleeping
    tally = dp.cpumap_tp.kth(cmap.name, entry.cpu)
    tally.sched += int(sched)
    act = verdicts(dp, cmap, key, entry)
    cost = tally_batch(dp, cmap, entry, rows, act, 1)
    entry.sleeping = False  # it looks at the ring again when this batch ends
    entry.last_end = t + max(1, int(cost + 0.5))
    if dp.watched(rows):
        name = entry.prog.name if entry.prog is not None else "no program"
        code = int(act[rows.entry[int(np.flatnonzero(rows.ident == dp.watch)[0])]])
        rx = entry.watch_dev or f"cpu{entry.cpu}"
        if code == XDP_PASS:  # an skb with skb->dev = xdpf->dev_rx, up the stack
            what = f"cpu {entry.cpu}'s cpumap kthread ({name}): an skb of {rx} up the stack"
            dp.hop(t, rx, "stack", what, end=True)
        else:
            what = f"cpu {entry.cpu}'s cpumap kthread: {name} returns {action_name(code)}, dropped"
            dp.hop(t, rx, "drop", what, end=True)
    codes, counts = np.unique(act[rows.entry], return_counts=True)
    event = {
        "t_ns": t,
        "kind": "cpumap_kthread",
        "cpu": entry.cpu,
        "map": cmap.name,
        "frames": len(rows),
        "ring_before": before,
        "ring_after": entry.ring.total,
        "sched": int(sched),
        # the entry program's verdicts (none without one: every frame goes up the stack)
        "verdicts": {action_name(int(c)): int(k) for c, k in zip(codes, counts, strict=True)}
        if entry.prog is not None
        else {},
        "dur_ns": max(1, int(cost + 0.5)),
    }
    return max(1, int(cost + 0.5)), event


def pending(cpumaps: Mapping[str, CpuMap], cpu: int) -> tuple[CpuMap, int, CpuMapEntry] | None:
    """The kthread on ``cpu`` with frames waiting (the first by map name and key), if any."""
    for name in sorted(cpumaps):
        m = cpumaps[name]
        for key in sorted(m.entries):
            e = m.entries[key]
            if e.cpu == cpu and e.ring.total:
                return m, key, e
    return None


def ptr_ring_discard(head: int, lag: int, n: int, size: int, batch: int) -> tuple[int, int]:
    """``__ptr_ring_discard_one`` for ``n`` consumed frames of a ring of ``size``: the
    consumed slots are zeroed -- free for the producer -- once ``batch`` of them gather, or at
    the ring's end. Returns the new (``consumer_head``, consumed-not-zeroed) pair; the rule
    exact mode's :meth:`CpuMapEntry.consumed` and fast mode's :func:`kthread_run` share."""
    left = n
    while left > 0:
        step = min(left, batch - lag, size - head)
        head += step
        lag += step
        left -= step
        if lag >= batch or head >= size:
            lag = 0
        if head >= size:
            head = 0
    return head, lag


def kthread_run(
    arr_t: IntArray,
    arr_k: IntArray,
    arr_s: IntArray,
    st: IntArray,
    per_frame: float,
    per_batch: float,
    t1: int,
    out: FloatArray,
    drops: IntArray,
) -> None:
    """``cpu_map_kthread_run`` against its producers, event by event, as exact mode runs it:
    each sending poll (time ``arr_t``, ``arr_k`` frames, sender ``arr_s``) flushes 8 frames
    at a time into the ring (``bq_flush_to_queue``: what finds no free slot is a drop of its
    sender); the kthread, woken by the first frames into an empty ring (a sleep before that
    batch: ``sched``), takes 8 at a time, each batch lasting its frames' and its own cost,
    and looks at the ring again when the batch ends. Batches that start by ``t1`` run.
    ``st``: ring, lag, head, last_end, sleeping, qsize, zeroing batch (updated); ``out``:
    frames, batches, sleeps, CPU ns, whole ns (added)."""
    ring, lag, head, last_end, sleeping, qsize, zb = st[0], st[1], st[2], st[3], st[4], st[5], st[6]
    t_free = last_end
    i = 0
    n = len(arr_t)
    while True:
        while i < n and arr_t[i] <= t_free:
            t = arr_t[i]
            k = arr_k[i]
            while k > 0:
                c = min(k, CPU_MAP_BULK_SIZE)
                if ring == 0 and t >= last_end:
                    sleeping = 1  # empty when its last batch ended: it went to sleep
                take = min(max(qsize - ring - lag, 0), c)
                ring += take
                drops[arr_s[i]] += c - take
                k -= c
            i += 1
        if ring > 0 and t_free <= t1:
            m = min(CPUMAP_BATCH, ring)
            ring -= m
            head, lag = ptr_ring_discard(head, lag, m, qsize, zb)
            out[2] += sleeping
            sleeping = 0
            cost = m * per_frame + per_batch
            dur = max(1, int(cost + 0.5))
            out[0] += m
            out[1] += 1
            out[3] += cost
            out[4] += dur
            last_end = t_free + dur
            t_free = last_end
            continue
        if i >= n:
            break
        t_free = max(t_free, arr_t[i])
    st[0], st[1], st[2], st[3], st[4] = ring, lag, head, last_end, sleeping


def _serve_timed(
    dp: CpumapCore, m: CpuMap, key: int, e: CpuMapEntry, arrived: Rows, t1: int
) -> float:
    """Fast mode for a kthread alone on its CPU whose senders' polls NAPI's loop timed:
    :func:`kthread_run` over them. Returns the CPU time it used."""
    none = np.zeros(0, np.int64)
    times = np.concatenate([none, *e.step_times])
    counts = np.concatenate([none, *e.step_counts])
    who = np.repeat(np.arange(len(e.step_cpus)), [len(x) for x in e.step_times])
    order = np.argsort(times, kind="stable")
    times, counts, who = times[order], counts[order], who[order]
    if len(times) > 4096:
        from xdptui.sim import cpumap, jit

        jit.compile_functions(cpumap, ("ptr_ring_discard", "kthread_run"))
    backlog = _aggregate(e.ring) if e.ring.ordered else e.ring
    act = verdicts(dp, m, key, e)
    both = _aggregate(backlog.concat(arrived))
    # the frames' mean cost: exact when the program gives every frame one verdict
    cost = frame_costs(act[both.entry], e.prog)
    per_frame = float(both.count @ cost) / both.total if both.total else 0.0
    st = np.array(
        [backlog.total, e.lag, e.head, e.last_end, int(e.sleeping), e.qsize, e.batch], np.int64
    )
    out = np.zeros(5)
    drops = np.zeros(len(e.step_cpus), np.int64)
    kthread_run(
        times.astype(np.int64), counts.astype(np.int64), who.astype(np.int64), st,
        per_frame, costs.CPUMAP_BATCH, t1, out, drops,
    )  # fmt: skip
    for sender, d in zip(e.step_cpus, drops.tolist(), strict=True):
        dp.cpumap_tp.dropped(m.name, sender, e.cpu, int(d))
    n, dropped = int(out[0]), int(drops.sum())
    took = both.head(n)  # what waited first, then the step's arrivals, in proportion
    rest = both.minus(took)
    e.ring = _aggregate(rest.head(rest.total - dropped))
    e.lag, e.head, e.last_end, e.sleeping = int(st[1]), int(st[2]), int(st[3]), bool(st[4])
    if n:
        tally = dp.cpumap_tp.kth(m.name, e.cpu)
        count_verdicts(dp, m.name, e, took, act)
        tally.processed += n
        tally.hits += int(out[1])
        tally.sched += int(out[2])
        tally.busy_ns += float(out[3])
    return float(out[4])


def serve_fast(
    dp: CpumapCore,
    cpumaps: Mapping[str, CpuMap],
    budget: FloatArray,
    t1: int,
    napi_cpus: frozenset[int],
) -> FloatArray:
    """Fast mode, at the end of a step: every kthread serves its ring. A kthread alone on its
    CPU (no NAPI instance there, ``napi_cpus``) whose senders NAPI's loop ran is run event by
    event (:func:`kthread_run`), as exact mode runs it. Otherwise, as arithmetic: what waited,
    then the step's arrivals, with the CPU time NAPI left on its CPU (``budget``, ns); what
    neither the kthread nor the ring's room took was dropped at enqueue; a kthread that
    empties its ring took each poll's frames as they came -- ceil(k / 8) batches a poll, a
    sleep before each poll's first when it is done before the sender's next poll of the
    burst, else before each burst's -- and one that cannot keep up takes full batches of 8.
    Returns the CPU time each CPU's kthreads used."""
    spent = np.zeros(len(budget))
    for name in sorted(cpumaps):
        m = cpumaps[name]
        for key in sorted(m.entries):
            e = m.entries[key]
            arrived, polls, bulks, senders = e.arrived, e.step_polls, e.step_bulks, e.step_from
            bursts, gap = e.step_bursts, e.step_gap_ns
            alone = e.cpu not in napi_cpus
            timed = alone and ((e.step_timed and bool(e.step_times)) or not arrived.total)
            if timed and (arrived.total or e.ring.total):
                spent[e.cpu] += _serve_timed(dp, m, key, e, _aggregate(arrived), t1)
            e.arrived, e.step_polls, e.step_bulks, e.step_from = Rows.empty(), 0, 0, {}
            e.step_bursts, e.step_gap_ns = 0, 0.0
            e.step_times, e.step_counts, e.step_cpus, e.step_timed = [], [], [], True
            if timed:
                continue
            backlog = _aggregate(e.ring) if e.ring.ordered else e.ring
            if not backlog.total and not arrived.total:
                continue
            arrived = _aggregate(arrived)
            act = verdicts(dp, m, key, e)
            both = _aggregate(backlog.concat(arrived))
            per_frame = float(both.count @ frame_costs(act[both.entry], e.prog)) / both.total
            full = per_frame + costs.CPUMAP_BATCH / CPUMAP_BATCH
            time = max(float(budget[e.cpu] - spent[e.cpu]), 0.0)
            n = both.total if full <= 0 else min(both.total, int(time / full))
            old = backlog.head(n)
            new = arrived.head(n - old.total)
            left_old, left_new = backlog.minus(old), arrived.minus(new)
            room = max(e.qsize - left_old.total - e.lag, 0)
            kept = left_new.head(room)
            dropped = left_new.total - kept.total
            if dropped:
                _drops_by_sender(dp, m, e, senders, dropped)
            e.ring = _aggregate(left_old.concat(kept))
            if not n:
                continue
            empties = n == both.total
            batches = bulks if empties and bulks else -(-n // CPUMAP_BATCH)
            took = _aggregate(old.concat(new))
            cost = tally_batch(dp, m, e, took, act, batches)
            tally = dp.cpumap_tp.kth(m.name, e.cpu)
            if empties and polls:  # asleep before each poll's frames, or only each burst's
                per_poll = n / polls * full
                tally.sched += polls if per_poll <= gap else bursts
            else:
                tally.sched += int(e.sleeping)
            spent[e.cpu] += cost
            e.consumed(n)
            e.sleeping = e.ring.total == 0
    return spent


def _drops_by_sender(
    dp: CpumapCore,
    m: CpuMap,
    e: CpuMapEntry,
    senders: dict[tuple[int, str], int],
    dropped: int,
) -> None:
    """Fast mode: a step's ring-full drops, split over the (CPU, device) senders that
    enqueued in it in proportion to what each sent (``bq_flush_to_queue``'s ``drops``)."""
    order = sorted(senders)
    if not order:
        return
    share = _split(np.array([senders[c] for c in order], np.int64), dropped)
    for sender, d in zip(order, share.tolist(), strict=True):
        dp.cpumap_tp.dropped(m.name, sender, e.cpu, int(d))


def _split(weights: IntArray, n: int) -> IntArray:
    total = int(weights.sum())
    if total <= 0:
        out = np.zeros(len(weights), np.int64)
        out[0] = n
        return out
    take = weights * n // total
    rem = n - int(take.sum())
    take[np.argsort(-weights, kind="stable")[:rem]] += 1
    return take


def _aggregate(rows: Rows) -> Rows:
    if not len(rows):
        return Rows(np.zeros(0, np.int64), np.zeros(0, np.int64), False)
    ent, inv = np.unique(rows.entry, return_inverse=True)
    return Rows(ent, np.bincount(inv, weights=rows.count).astype(np.int64), False)
