"""BPF_MAP_TYPE_DEVMAP / DEVMAP_HASH and the per-CPU bulk queues (``kernel/bpf/devmap.c``,
seed devmap-prog-on-flush.txt).

A map holds entries key -> (device, optional egress program). Update and delete follow
``dev_map_update_elem`` / ``dev_map_hash_update_elem`` / ``dev_map_delete_elem`` with their
errors; lookups are what ``bpf_redirect_map`` does; ``walk`` is ``dev_map_enqueue_multi``'s
order (index order for DEVMAP, bucket order for DEVMAP_HASH).

Redirected frames go into the per-CPU bulk queue of their target (``bq_enqueue``), one queue
per (CPU, target), sent by ``bq_xmit_all`` at 16 frames and at the end of the poll
(``__dev_flush``), each bulk through the egress program of the poll's first enqueuer
(``dev_map_bpf_prog_run``) and the target's ``ndo_xdp_xmit``. Exact mode sends each poll's
frames in order; fast mode counts ceil(k / 16) bulks for a poll of k frames.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno, KernelError
from xdptui.sim import costs
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.core import bpf_run
from xdptui.sim.core.bpf_run import RunCore
from xdptui.sim.core.filter import BROADCAST, Compiled, FilterCore, make_context
from xdptui.sim.dev.netdev import MODE_DRV, MODE_SKB, NetDev, Xmit
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.kconst import (
    BPF_ANY,
    BPF_EXIST,
    BPF_F_EXCLUDE_INGRESS,
    BPF_NOEXIST,
    DEV_MAP_BULK_SIZE,
    XDP_DROP,
    XDP_PASS,
    action_name,
    max_fwd_len,
)
from xdptui.sim.programs import Program

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class DevmapCore(RunCore, FilterCore, Protocol):
    """The data path as ``devmap.c``'s flush calls back into it: egress verdicts it keeps."""

    @property
    def egress_cache(self) -> MutableMapping[tuple[int, str, str], IntArray]: ...


@dataclass
class DevmapEntry:
    dev: str
    egress: Program | None = None


@dataclass
class DevMap:
    name: str
    type: str  # devmap | devmap_hash
    max_entries: int
    map_id: int
    entries: dict[int, DevmapEntry] = field(default_factory=dict)

    @property
    def n_buckets(self) -> int:
        """``roundup_pow_of_two(max_entries)`` (DEVMAP_HASH)."""
        n = 1
        while n < self.max_entries:
            n <<= 1
        return n

    def check_update(self, key: int, flags: int = BPF_ANY) -> None:
        """The checks before the entry is built (``__dev_map_alloc_node``, where a bad egress
        program answers EINVAL): ``__dev_map_update_elem`` -- flags > BPF_EXIST -> EINVAL, key
        out of range -> E2BIG, BPF_NOEXIST -> EEXIST (array slots always exist);
        ``__dev_map_hash_update_elem`` -- flags -> EINVAL, BPF_NOEXIST on a present key ->
        EEXIST, and no BPF_EXIST check: an absent key is inserted (kernel/bpf/devmap.c, v6.15)."""
        if flags > BPF_EXIST:
            raise KernelError(Errno.EINVAL, "")
        if self.type == "devmap":
            if not 0 <= key < self.max_entries:
                raise KernelError(Errno.E2BIG, "")
            if flags == BPF_NOEXIST:
                raise KernelError(Errno.EEXIST, "")
        elif flags == BPF_NOEXIST and key in self.entries:
            raise KernelError(Errno.EEXIST, "")

    def update(self, key: int, entry: DevmapEntry, flags: int = BPF_ANY) -> None:
        """``dev_map_update_elem`` / ``__dev_map_hash_update_elem``: :meth:`check_update`, then
        for DEVMAP_HASH a new key in a full map -> E2BIG; the entry goes to the head of its
        bucket (``hlist_add_head_rcu``), a replaced one too (the old node is unlinked)."""
        self.check_update(key, flags)
        if self.type != "devmap":
            present = key in self.entries
            if not present and len(self.entries) >= self.max_entries:
                raise KernelError(Errno.E2BIG, "")
            self.entries.pop(key, None)  # re-inserted last: the newest of its bucket
        self.entries[key] = entry

    def delete(self, key: int) -> None:
        """``dev_map_delete_elem``: out of range -> EINVAL, empty slot -> 0; hash: missing ->
        ENOENT."""
        if self.type == "devmap":
            if not 0 <= key < self.max_entries:
                raise KernelError(Errno.EINVAL, "")
            self.entries.pop(key, None)
            return
        if key not in self.entries:
            raise KernelError(Errno.ENOENT, "")
        del self.entries[key]

    def lookup(self, key: int) -> DevmapEntry | None:
        return self.entries.get(key)

    def walk(self) -> list[tuple[int, DevmapEntry]]:
        """Entries in ``dev_map_enqueue_multi`` order: slot order, or for DEVMAP_HASH bucket
        order (key & (n_buckets - 1)) and inside a bucket its hlist from the head -- newest
        first, as ``hlist_add_head_rcu`` put them."""
        if self.type == "devmap":
            return sorted(self.entries.items())
        mask = self.n_buckets - 1
        items = list(self.entries.items())
        order = sorted(range(len(items)), key=lambda i: (items[i][0] & mask, -i))
        return [items[i] for i in order]


# ------------------------------------------------------------ bulk queues


@dataclass
class PollOutcome:
    frames: int
    cost_ns: float
    verdicts: dict[str, int] = field(default_factory=dict)
    flushes: list[Flush] = field(default_factory=list)
    cpumap_flushes: list[dict[str, Any]] = field(default_factory=list)  # bq_flush_to_queue
    xsk_flushes: list[dict[str, Any]] = field(default_factory=list)  # __xsk_map_flush


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
    err: str | None = None  # the errno ndo_xdp_xmit returned (``trace_xdp_devmap_xmit``'s err)


def broadcast_walk(dp: DevmapCore, dev: NetDev, c: Compiled) -> list[tuple[int, NetDev]]:
    """``dev_map_enqueue_multi``'s walk for frames ``dev`` received: the map's entries in
    ``walk`` order, without the ingress device and -- with BPF_F_EXCLUDE_INGRESS -- its upper
    devices (``get_upper_ifindexes``), as (key, target)."""
    w = dp.world
    dmap = w.maps.get(c.map_name or "")
    if dmap is None:
        return []
    excluded: set[str] = set()
    if c.broadcast & BPF_F_EXCLUDE_INGRESS:
        up: str | None = dev.name
        while up is not None:
            excluded.add(up)
            upper = w.devices.get(up)
            up = upper.master if upper is not None else None
    out: list[tuple[int, NetDev]] = []
    for key, entry in dmap.walk():
        tgt = w.devices.get(entry.dev)
        if tgt is not None and tgt.name not in excluded:
            out.append((key, tgt))
    return out


def native_broadcast(dp: DevmapCore, dev: NetDev, c: Compiled) -> list[tuple[int, NetDev]]:
    """The entries a native broadcast clones each frame to (``is_valid_dst``: the target
    can take ``ndo_xdp_xmit`` and is up; a frame too long for its MTU is skipped per frame)."""
    return [(k, t) for k, t in broadcast_walk(dp, dev, c) if t.ndo_xmit_ready(dp) and t.admin_up]


def broadcast(
    dp: DevmapCore,
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
    (invalid ones skipped silently; ``native_broadcast``). Generic XDP does not pre-filter:
    each skb goes through the entries in turn (``broadcast_walk``) and the first that refuses
    it (``xdp_ok_fwd_dev``: ENETDOWN, EMSGSIZE) ends that skb's walk with the error."""
    w = dp.world
    dmap = w.maps.get(c.map_name or "")
    if dmap is None:
        return
    sizes = w.entries.size[rows.entry]
    alive = np.ones(len(rows), dtype=bool)  # generic XDP: the skbs still being cloned
    walk = native_broadcast(dp, dev, c) if mode == MODE_DRV else broadcast_walk(dp, dev, c)
    for key, tgt in walk:
        fits = sizes <= max_fwd_len(tgt.mtu)
        if mode == MODE_DRV:
            part = rows.where(fits)
        else:
            # dev_map_redirect_multi: per skb, each target in turn through xdp_ok_fwd_dev
            # (dev_map_generic_redirect); the first that refuses ends that skb's walk with its
            # error, the skbs it takes go on to the next target
            ok = alive & fits if tgt.admin_up else np.zeros(len(rows), dtype=bool)
            refused = alive & ~ok
            if refused.any():
                code = Errno.ENETDOWN if not tgt.admin_up else Errno.EMSGSIZE
                dp.tp.redirect_err[(dev.name, code.name)] += int(rows.count[refused].sum())
            alive = ok
            part = rows.where(ok)
        if part.total:
            keys = np.full(len(part), key, dtype=np.int64)
            # (NAPI's loop counts each target's frames per poll under its ifindex)
            cls = tgt.ifindex if tgt.ifindex in shape.classes else BROADCAST
            enqueue(dp, dev, tgt, mode, cpu, t, part, keys, dmap, shape, cls, out)


def enqueue(
    dp: DevmapCore,
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
    progs = _programs(dmap, keys)
    if dp.watched(rows):
        how = (
            "sent at once (generic XDP)"
            if mode == MODE_SKB
            else f"bq_enqueue on cpu {cpu}'s bulk queue toward {tgt.name}"
        )
        dp.hop(t, dev.name, "bulk_queue", how)
    if mode == MODE_SKB:
        kept = _egress_each(dp, dev, tgt, rows, keys, progs, cpu)
        if kept.total:
            tgt.generic_xmit(dp, dev, cpu, t, kept)
        return
    if dp.world.devmap_egress == "enqueue":  # before the seed's patch: at enqueue
        rows = _egress_each(dp, dev, tgt, rows, keys, progs, cpu)
        keys = np.full(len(rows), -1, dtype=np.int64)
        progs = {}
    if rows.ordered:
        _flush_exact(dp, dev, tgt, cpu, t, rows, keys, progs, out)
    else:
        _flush_fast(dp, dev, tgt, cpu, t, rows, keys, progs, shape, cls, out)


def _flush_exact(
    dp: DevmapCore,
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
    tally = dp.tp.xmit(dev.name, tgt.name)
    bq = dp.tp.bq(cpu, dev.name, tgt.name)
    prog = progs.get(int(keys[0]))
    n = len(rows)
    if prog is None and dp.watch is None and isinstance(tgt, Nic):
        _flush_plain(dp, dev, tgt, cpu, t, rows, out)
        return
    for start in range(0, n, DEV_MAP_BULK_SIZE):
        end = start + DEV_MAP_BULK_SIZE
        chunk = rows.slice(start, end)
        cnt = len(chunk)
        kept = _egress_bulk(dp, dev, tgt, chunk, prog, cpu)
        tally.flushes += 1
        bq.flushes += 1
        bq.frames += cnt
        bq.last_bulk = float(cnt)
        bq.program = prog.name if prog is not None else ""
        dropped = cnt - kept.total
        tally.drops += dropped
        tally.egress_drops += dropped
        sent = 0
        err: str | None = None
        if dp.watched(chunk):
            why = "17th frame: bq_xmit_all" if end < n else "xdp_do_flush at the end of the poll"
            egress = f", egress {prog.name}" if prog is not None else ""
            dp.hop(t, dev.name, "ndo_xdp_xmit", f"{why}: {cnt} frames to {tgt.name}{egress}")
            if not dp.watched(kept):
                dp.hop(
                    t,
                    tgt.name,
                    "drop",
                    f"the egress program {prog.name if prog else ''} dropped it",
                    end=True,
                )
        if kept.total:
            x = Xmit(dev, tgt, cpu, t, kept, 1, tally)
            tgt.ndo_xdp_xmit(dp, x)
            sent, err = x.sent, x.err
        bq.egress_drops += dropped
        reason = "poll_end" if end >= n else "full"
        name = prog.name if prog is not None else None
        out.flushes.append(
            Flush(cpu, dev.name, tgt.name, cnt, sent, cnt - sent, name, reason, dropped, err)
        )
        out.cost_ns += flush_cost(dev, tgt)


def _flush_plain(
    dp: DevmapCore, dev: NetDev, tgt: Nic, cpu: int, t: int, rows: Rows, out: PollOutcome
) -> None:
    """``_flush_exact`` toward a port without an egress program (and nobody followed): the
    poll's bulks go to ``ndo_xdp_xmit`` together, each counted as its own flush."""
    tally = dp.tp.xmit(dev.name, tgt.name)
    bq = dp.tp.bq(cpu, dev.name, tgt.name)
    n = len(rows)
    xs: list[Xmit] = []
    for start in range(0, n, DEV_MAP_BULK_SIZE):
        chunk = rows.slice(start, start + DEV_MAP_BULK_SIZE)
        xs.append(Xmit(dev, tgt, cpu, t, chunk, 1, tally))
        tally.flushes += 1
        bq.flushes += 1
        bq.frames += len(chunk)
    bq.last_bulk = float(len(xs[-1].rows))
    bq.program = ""
    tgt.ndo_xdp_xmit_bulks(dp, xs)
    cost = flush_cost(dev, tgt)
    for i, x in enumerate(xs):
        cnt = len(x.rows)
        reason = "poll_end" if i == len(xs) - 1 else "full"
        out.flushes.append(
            Flush(cpu, dev.name, tgt.name, cnt, x.sent, cnt - x.sent, None, reason, 0, x.err)
        )
        out.cost_ns += cost


def _flush_fast(
    dp: DevmapCore,
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
    tally = dp.tp.xmit(dev.name, tgt.name)
    bq = dp.tp.bq(cpu, dev.name, tgt.name)
    per_poll = shape.classes.get(cls)
    if per_poll is None or abs(int(per_poll.sum()) - rows.total) > 0.02 * rows.total + 1:
        per_poll = _even(rows.total, shape.polls)  # no poll-by-poll record: spread evenly
    recorded = shape.times is not None and len(shape.times) == len(per_poll)
    recorded = recorded and int(per_poll.sum()) == rows.total
    flushes = int((-(-per_poll // DEV_MAP_BULK_SIZE)).sum())
    out.cost_ns += flushes * flush_cost(dev, tgt)
    tally.flushes += flushes
    bq.flushes += flushes
    bq.frames += rows.total
    bq.last_bulk = rows.total / max(flushes, 1)
    parts: list[tuple[Program | None, Rows]] = [(None, rows)]
    if progs:
        first = shape.first_key.get(cls)
        parts = _by_first_enqueuer(rows, keys, progs, per_poll, first)
    for prog, part in parts:
        if not part.total:
            continue
        bq.program = prog.name if prog is not None else ""
        kept = _egress_bulk(dp, dev, tgt, part, prog, cpu)
        dropped = part.total - kept.total
        tally.drops += dropped
        tally.egress_drops += dropped
        bq.egress_drops += dropped
        if kept.total:
            share = max(1, round(flushes * part.total / rows.total))
            x = Xmit(dev, tgt, cpu, t, kept, share, tally, bursts=shape.bursts)
            if recorded and len(parts) == 1 and kept.total == rows.total:
                assert shape.times is not None
                x.sched = (shape.times, per_poll)  # the polls' own bulks, played in order
            tgt.ndo_xdp_xmit(dp, x)
    first = shape.first_key.get(cls) if progs else None
    if first is not None and len(first) == len(per_poll) and len(first):
        # the last bulk ran the program of its poll's first enqueuer (bq_enqueue's
        # xdp_prog), which may have none
        last = progs.get(int(first[per_poll > 0][-1])) if (per_poll > 0).any() else None
        bq.program = last.name if last is not None else ""


def enqueue_many(
    dp: DevmapCore,
    dev: NetDev,
    tgt: Nic,
    t: int,
    rows: Rows,
    who: IntArray,
    cpus: IntArray,
    polls: Sequence[tuple[int, int, Rows, PollShape]],
    cost: FloatArray,
) -> None:
    """``_flush_fast`` for the polls of many instances toward one NIC, without egress
    programs: each instance's bulks are counted from its polls (ceil(k / 16) per poll) on its
    CPU's bulk queue, and every CPU's bulks go to ``ndo_xdp_xmit`` together."""
    tally = dp.tp.xmit(dev.name, tgt.name)
    flush = flush_cost(dev, tgt)
    n = np.bincount(who, weights=rows.count, minlength=len(polls)).astype(np.int64)
    calls = np.zeros(len(polls), np.int64)
    bursts = 0
    cls = tgt.ifindex
    scheds: list[tuple[int, IntArray, IntArray]] | None = []
    for i in np.flatnonzero(n).tolist():
        _, cpu, _, shape = polls[i]
        per_poll = shape.classes.get(cls)
        total = int(n[i])
        if per_poll is None or abs(int(per_poll.sum()) - total) > 0.02 * total + 1:
            per_poll = _even(total, shape.polls)  # no poll-by-poll record: spread evenly
            scheds = None
        elif scheds is not None and shape.times is not None and int(per_poll.sum()) == total:
            scheds.append((cpu, shape.times, per_poll))  # the polls' own bulks, in order
        else:
            scheds = None
        flushes = int((-(-per_poll // DEV_MAP_BULK_SIZE)).sum())
        calls[i] = flushes
        bursts += shape.bursts
        bq = dp.tp.bq(cpu, dev.name, tgt.name)
        bq.flushes += flushes
        bq.frames += total
        bq.last_bulk = total / max(flushes, 1)
        bq.program = ""
    cost += calls * flush
    tally.flushes += int(calls.sum())
    x = Xmit(dev, tgt, -1, t, rows, int(calls.sum()), tally, bursts=max(bursts, 1))
    x.scheds = scheds
    row_calls = np.zeros(len(rows), np.int64)
    first = np.unique(who, return_index=True)[1]  # each instance's calls on one of its rows
    row_calls[first] = calls[who[first]]
    tgt.ndo_xdp_xmit_many(dp, x, cpus[who], row_calls)


def programs_of(dmap: object, keys: IntArray) -> dict[int, Program]:
    """The egress programs of the devmap entries ``keys`` (by key)."""
    return _programs(dmap, keys)


def _write_flush(dev: NetDev) -> float:
    """A tap's single writes call ``xdp_do_flush`` after every write that redirected."""
    if isinstance(dev, Tun) and dev.writer == "write":
        return costs.TUN_WRITE_FLUSH
    return 0.0


def flush_cost(dev: NetDev, tgt: NetDev) -> float:
    """One ``bq_xmit_all``: the target's ``ndo_xdp_xmit`` call and doorbell -- for a tap's
    single writes the fitted cost of a flush after every write, doorbell included."""
    return _write_flush(dev) or tgt.costs().flush


def _by_first_enqueuer(
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


def _programs(dmap: object, keys: IntArray) -> dict[int, Program]:
    if not isinstance(dmap, DevMap):
        return {}
    out: dict[int, Program] = {}
    for k in np.unique(keys):
        entry = dmap.lookup(int(k)) if k >= 0 else None
        if entry is not None and entry.egress is not None:
            out[int(k)] = entry.egress
    return out


def _egress_bulk(
    dp: DevmapCore, dev: NetDev, tgt: NetDev, rows: Rows, prog: Program | None, cpu: int
) -> Rows:
    """``dev_map_bpf_prog_run``: PASS keeps the frame (as the program left it), DROP frees
    it, other codes fire ``xdp_exception`` on the target and free it."""
    if prog is None:
        return rows
    raw, left = _egress_run(dp, prog, dev, tgt, rows, cpu)
    other = (raw != XDP_PASS) & (raw != XDP_DROP)
    for code in np.unique(raw[other]):
        dp.tp.exception[(tgt.name, action_name(int(code)))] += int(rows.count[raw == code].sum())
    return left.where(raw == XDP_PASS)


def _egress_run(
    dp: DevmapCore, prog: Program, dev: NetDev, tgt: NetDev, rows: Rows, cpu: int
) -> tuple[IntArray, Rows]:
    """Each frame's return code and the frames the program leaves (a real object rewrites
    them and counts in its maps; a built-in or Python program leaves them as they are)."""
    if prog.obj is None:
        return egress_verdicts(dp, prog, dev, tgt)[rows.entry], rows
    return bpf_run.run_egress(dp, prog, dev, tgt, rows, cpu)


def _egress_each(
    dp: DevmapCore,
    dev: NetDev,
    tgt: NetDev,
    rows: Rows,
    keys: IntArray,
    progs: dict[int, Program],
    cpu: int,
) -> Rows:
    """Each frame meets its own entry's program (generic XDP, or before the patch)."""
    if not progs:
        return rows
    keep = np.ones(len(rows), dtype=bool)
    entry = rows.entry.copy()
    for k, prog in progs.items():
        sel = keys == k
        part_raw, left = _egress_run(dp, prog, dev, tgt, rows.where(sel), cpu)
        entry[sel] = left.entry  # the frames as the program left them
        raw = np.full(len(rows), XDP_PASS, dtype=np.int64)
        raw[sel] = part_raw
        keep &= raw == XDP_PASS
        other = sel & (raw != XDP_PASS) & (raw != XDP_DROP)
        for code in np.unique(raw[other]):
            dp.tp.exception[(tgt.name, action_name(int(code)))] += int(
                rows.count[other & (raw == code)].sum()
            )
    return Rows(entry, rows.count, rows.ordered, rows.ident, rows.time).where(keep)


def egress_verdicts(dp: DevmapCore, prog: Program, rx_dev: NetDev, tgt: NetDev) -> IntArray:
    """``dev_map_bpf_prog_run``'s verdict per entry for frames from ``rx_dev`` leaving by
    ``tgt`` (cached per configuration)."""
    key = (prog.prog_id, rx_dev.name, tgt.name)
    cached = dp.egress_cache.get(key)
    if cached is None:
        cached = prog.run(make_context(dp.world, rx_dev, prog, egress=tgt))
        dp.egress_cache[key] = cached
    return cached


def calls_full(x: Xmit, refused: int, taken: int) -> int:
    """How many of the ``ndo_xdp_xmit`` calls behind ``x`` met a full ring. One call: it did.
    Many (a fast-mode step): each interrupt's burst of bulks of 16 goes in until the room the
    reader made since the last burst is gone; the calls after that met the full ring."""
    if x.full_calls is not None:
        return x.full_calls
    if x.calls <= 1:
        return 1
    bursts = max(1, x.bursts)
    fit = bursts * (taken // (bursts * DEV_MAP_BULK_SIZE))
    return int(min(refused, x.calls, max(1, x.calls - fit)))


def _even(total: int, polls: int) -> IntArray:
    """``total`` frames over ``polls`` polls as evenly as integers allow."""
    polls = max(1, polls)
    return np.full(polls, total // polls, dtype=np.int64) + (np.arange(polls) < total % polls)
