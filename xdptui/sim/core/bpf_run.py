"""A real XDP program in a poll (``bpf_prog_run_xdp`` in the driver's receive loop, and
``dev_map_bpf_prog_run`` at a devmap flush), as both modes call it.

* A program whose verdict is a function of the frame was run once per entry when the paths
  were compiled (``xdptui.sim.core.bpf_eval``); here its map side effects are applied with the
  poll's frame counts, on the polling CPU's copy of a per-CPU map -- as the kernel's program,
  run once per frame on that CPU, would have added them. Nothing runs per frame.
* A program that reads state it writes runs frame by frame in exact mode, in ring order, on the
  real maps: each frame's outcome (verdict, redirect, output bytes) is an entry pinned to that
  outcome (``xdptui.sim.core.derived``), so the data path's per-entry rules apply unchanged.
  Fast mode runs a sample of the step's frames in order and shares each entry's frames out over
  the outcomes the sample saw, extrapolating the sample's counters: an approximation that
  ``bpftool prog show``, the report and the frame's ``ObjectView`` say it made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.bpf.batch import KEY_SPACE, READ, AccessLog
from xdptui.bpf.maps import BpfMap
from xdptui.bpf.memory import FIRST_MAP_REGION
from xdptui.bpf.vm import BatchResult, action_name, run_batch
from xdptui.model.views import MapAccessView, ProgramRunView
from xdptui.sim.batch import Rows
from xdptui.sim.core import derived
from xdptui.sim.core.bpf_eval import EvalCore, ObjEval, evaluate, outcome, percpu_stride
from xdptui.sim.core.bpf_obj import ObjProgram, Outcome

if TYPE_CHECKING:
    from xdptui.sim.core.filter import Compiled
    from xdptui.sim.dev.netdev import NetDev
    from xdptui.sim.programs import Program

IntArray = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
SAMPLE_FRAMES = 64  # frames of a fast-mode poll batch a stateful program is run on, in order


class RunCore(EvalCore, Protocol):
    """The data path as a real program's run calls back into it: the compiled paths."""

    @property
    def compiled(self) -> Mapping[str, Compiled]: ...

    def compile(self) -> None: ...


# ------------------------------------------------------------ map side effects


def add_words(obj: ObjProgram, wmap: IntArray, woff: IntArray, wsize: IntArray, val: U64) -> None:
    """Add ``val`` to each (map, arena offset, size) word, modulo the word's width."""
    for mi in np.unique(wmap):
        m = obj.maps[int(mi)]
        arena = m.arena
        for size in np.unique(wsize[wmap == mi]):
            sel = (wmap == mi) & (wsize == size)
            s = int(size)
            if sel.any():
                m.touch(int(woff[sel].max()) + s)
            idx = woff[sel][:, None] + np.arange(s)
            cur = np.ascontiguousarray(arena[idx]).view(f"<u{s}").reshape(-1).astype(np.uint64)
            mask = np.uint64((1 << (8 * s)) - 1) if s < 8 else np.uint64(2**64 - 1)
            with np.errstate(over="ignore"):
                new = (cur + val[sel]) & mask
            arena[idx] = new.astype(f"<u{s}").view(np.uint8).reshape(-1, s)


def apply_effects(ev: ObjEval, rows: Rows, cpu: int) -> None:
    """Each frame's commutative adds, ``count`` times per entry, on ``cpu``'s copy."""
    eff = ev.effects
    if eff.empty or not rows.total:
        return
    lens = eff.length[rows.entry]
    total = int(lens.sum())
    if not total:
        return
    ends = np.cumsum(lens)
    idx = np.repeat(eff.first[rows.entry], lens) + np.arange(total) - np.repeat(ends - lens, lens)
    mult = np.repeat(rows.count, lens).astype(np.uint64)
    acc = np.zeros(len(eff.wmap), dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(acc, eff.word[idx], eff.value[idx] * mult)
    hit = np.flatnonzero(acc)
    if not len(hit):
        return
    obj = ev.obj
    wmap = eff.wmap[hit]
    ncpus = np.array([m.ncpus for m in obj.maps], dtype=np.int64)[wmap]
    off = eff.woff[hit] + percpu_stride(obj, wmap) * (cpu % ncpus)
    add_words(obj, wmap, off, eff.wsize[hit], acc[hit])


# ------------------------------------------------------------ the XDP hook


def run_xdp(
    dp: RunCore, dev: NetDev, c: Compiled, rows: Rows, cpu: int, t: int
) -> tuple[Compiled, Rows]:
    """The program on a poll's frames: side effects applied, and for a stateful program each
    frame relabelled to the entry pinned to its outcome. Returns the (maybe recompiled)
    paths and the rows the verdicts apply to."""
    ev = c.obj
    if ev is None or not rows.total:
        return c, rows
    if ev.depends is None:
        apply_effects(ev, rows, cpu)
        if dp.watched(rows):
            _explain_hop(dp, dev, ev, rows, cpu, t)
        return c, rows
    if rows.ordered:
        return _frame_by_frame(dp, dev, c, ev, rows, cpu, t)
    return c, _sampled(dp, dev, ev, rows, cpu, t)


def _pinned(ev: ObjEval, dev: str, entries: IntArray, sigs: list[Outcome]) -> IntArray:
    pins = ev.obj.pins.get(dev, {})
    out = entries.copy()
    for i, sig in enumerate(sigs):
        pin = pins.get((int(entries[i]), sig))
        out[i] = -1 if pin is None else pin
    return out


def _run(
    dp: RunCore, ev: ObjEval, entries: IntArray, cpu: int, t: int, record: bool = False
) -> tuple[list[Outcome], BatchResult]:
    """Run the program on these entries' frames in order, on the real maps."""
    e = dp.world.entries
    data = derived.frame_bytes(e)
    frames = [data[i] for i in entries.tolist()]
    res = run_batch(
        ev.obj.prog,
        frames,
        ingress_ifindex=ev.ingress,
        rx_queue_index=ev.queue[np.minimum(entries, len(ev.queue) - 1)],
        egress_ifindex=ev.egress,
        cpu=cpu,
        time_ns=t,
        record=record,
        devices=ev.obj.devices or None,
    )
    sigs = [
        outcome(
            ev.obj,
            int(res.retval[i]),
            res.redirects[i],
            res.data[i][int(res.meta_len[i]) :],
            frames[i],
            int(e.size[entries[i]]),
            bool(e.gso[entries[i]]),
        )
        for i in range(len(frames))
    ]
    return sigs, res


def _frame_by_frame(
    dp: RunCore, dev: NetDev, c: Compiled, ev: ObjEval, rows: Rows, cpu: int, t: int
) -> tuple[Compiled, Rows]:
    """Exact mode: the poll's frames in ring order; outcomes not met before are pinned now
    (the paths are compiled again at once)."""
    obj = ev.obj
    watched = dp.watched(rows)
    if watched:
        assert rows.ident is not None
        pos = int(np.flatnonzero(rows.ident == dp.watch)[0])
        head, _ = _run(dp, ev, rows.entry[:pos], cpu, t)
        _explain_hop(dp, dev, ev, rows.slice(pos, pos + 1), cpu, t)
        mid, _ = _run(dp, ev, rows.entry[pos : pos + 1], cpu, t)
        tail, _ = _run(dp, ev, rows.entry[pos + 1 :], cpu, t)
        sigs = head + mid + tail
    else:
        sigs, _ = _run(dp, ev, rows.entry, cpu, t)
    obj.frames_run += len(sigs)
    pinned = _pinned(ev, dev.name, rows.entry, sigs)
    missing = np.flatnonzero(pinned < 0)
    if len(missing):
        for i in missing.tolist():
            dp.bpf.pins.append((obj, dev.name, int(rows.entry[i]), sigs[i]))
        dp.world.touch()
        dp.compile()
        c = dp.compiled[dev.name]
        pinned = _pinned(ev, dev.name, rows.entry, sigs)
        pinned = np.where(pinned < 0, rows.entry, pinned)  # the table is full: the probe's
    return c, Rows(pinned, rows.count, True, rows.ident, rows.time)


def _sampled(dp: RunCore, dev: NetDev, ev: ObjEval, rows: Rows, cpu: int, t: int) -> Rows:
    """Fast mode: a sample of the step's frames, interleaved as the queue would hold them,
    run in order; each entry's frames shared out over the outcomes its sampled frames had."""
    obj = ev.obj
    sample = rows.head(min(rows.total, SAMPLE_FRAMES))
    reps = np.repeat(np.arange(len(sample)), sample.count)
    rank = np.arange(len(reps)) - np.repeat(np.cumsum(sample.count) - sample.count, sample.count)
    seq = reps[np.lexsort((reps, rank))]
    sigs, res = _run(dp, ev, sample.entry[seq], cpu, t, record=True)
    pinned = _pinned(ev, dev.name, sample.entry[seq], sigs)
    for i in np.flatnonzero(pinned < 0).tolist():
        dp.bpf.pins.append((obj, dev.name, int(sample.entry[seq[i]]), sigs[i]))
    if (pinned < 0).any():
        dp.world.touch()  # compiled again before the next step: pins for what was seen
    label = np.where(pinned < 0, sample.entry[seq], pinned)
    obj.approximated += rows.total
    rest = rows.count - sample.count
    _extrapolate(obj, res, seq, sample.count, rest)
    unsampled = sample.count == 0
    if unsampled.any():
        apply_effects(ev, rows.where(unsampled), cpu)
    return _share(rows, seq, label, sample.count)


def _share(rows: Rows, seq: IntArray, label: IntArray, sampled: IntArray) -> Rows:
    """Each row's frames split over its sampled frames' labels in proportion (largest
    remainders first); rows without a sampled frame keep their entry."""
    pair = np.stack((seq, label), axis=1)
    uniq, counts = np.unique(pair, axis=0, return_counts=True)
    row, lab = uniq[:, 0], uniq[:, 1]
    total = rows.count[row]
    s = sampled[row]
    exact = total * counts
    share = exact // s
    frac = exact % s
    left = total - np.bincount(row, weights=share, minlength=len(rows)).astype(np.int64)[row]
    order = np.lexsort((-frac, row))
    first = np.searchsorted(row[order], row[order], side="left")
    rank = np.arange(len(order)) - first
    bonus = np.zeros(len(row), dtype=np.int64)
    bonus[order] = (rank < left[order]).astype(np.int64)
    share = share + bonus
    keep = sampled == 0
    entry = np.concatenate((rows.entry[keep], lab))
    count = np.concatenate((rows.count[keep], share))
    nz = count > 0
    return Rows(entry[nz], count[nz], False)


def _extrapolate(
    obj: ObjProgram, res: BatchResult, seq: IntArray, sampled: IntArray, rest: IntArray
) -> None:
    """The sample's commutative adds, scaled to the frames it stood for."""
    if not res.adds or not rest.any():
        return
    for mi, pos, off, size, val in res.adds:
        r = seq[pos]
        factor = rest[r] / np.maximum(sampled[r], 1)
        extra = np.rint(val.view(np.int64) * factor).astype(np.int64).view(np.uint64)
        wmap = np.full(len(off), mi, dtype=np.int64)
        add_words(obj, wmap, off.astype(np.int64), np.full(len(off), size, np.int64), extra)


# ------------------------------------------------------------ devmap egress


def egress(dp: RunCore, prog: Program, rx_dev: NetDev, tgt: NetDev) -> ObjEval:
    """``dev_map_bpf_prog_run``'s program evaluated per entry for frames ``rx_dev`` received
    and ``tgt`` sends (cached per configuration)."""
    key = (prog.prog_id, rx_dev.name, tgt.name)
    hit = dp.bpf.egress.get(key)
    if hit is None:
        hit = dp.bpf.egress[key] = evaluate(dp, prog, rx_dev, tgt)
    return hit


def run_egress(
    dp: RunCore, prog: Program, rx_dev: NetDev, tgt: NetDev, rows: Rows, cpu: int
) -> tuple[IntArray, Rows]:
    """The egress program on a bulk: each frame's return code, and the frames it leaves."""
    ev = egress(dp, prog, rx_dev, tgt)
    if ev.depends is not None:
        ev.obj.approximated += rows.total  # a stateful egress program: its probe's verdicts
    apply_effects(ev, rows, cpu)
    raw = ev.raw[rows.entry]
    out = ev.out[rows.entry]
    if (out < 0).any() and _add_frames(dp, ev, rows.entry[out < 0], rows.ordered):
        out = egress(dp, prog, rx_dev, tgt).out[rows.entry]
    return raw, _relabel(rows, out)


def leaving(dp: RunCore, dev: NetDev, c: Compiled, rows: Rows) -> Rows:
    """The frames ``dev``'s program left, handed to the next stage: each row relabelled to
    its output entry. An output the table lacks is added now in exact mode (the paths are
    compiled again at once); fast mode keeps the input's entry until the next step."""
    if c.out is None or not len(rows):
        return rows
    out = c.out[rows.entry]
    missing = out < 0
    if (
        missing.any()
        and c.obj is not None
        and _add_frames(dp, c.obj, rows.entry[missing], rows.ordered)
    ):
        fresh = dp.compiled[dev.name].out
        out = fresh[rows.entry] if fresh is not None else out
    return _relabel(rows, out)


def _add_frames(dp: RunCore, ev: ObjEval, entries: IntArray, now: bool) -> bool:
    """Ask for the output frames of ``entries``; True if they were added now."""
    keys = [ev.missing[int(e)] for e in np.unique(entries) if int(e) in ev.missing]
    if not keys:
        return False
    dp.bpf.frames.extend(keys)
    dp.world.touch()  # fast mode: compiled again (and the frames added) before the next step
    if now:
        dp.compile()
    return now


def _relabel(rows: Rows, out: IntArray) -> Rows:
    new = np.where(out < 0, rows.entry, out)
    return Rows(new, rows.count, rows.ordered, rows.ident, rows.time)


# ------------------------------------------------------------ following one frame


def _explain_hop(dp: RunCore, dev: NetDev, ev: ObjEval, rows: Rows, cpu: int, t: int) -> None:
    """Record the followed frame's run, made on a copy of the maps (the real run is the
    effects table's, or the frame-by-frame batch's)."""
    assert rows.ident is not None
    i = int(np.flatnonzero(rows.ident == dp.watch)[0])
    view = explain(dp, ev, int(rows.entry[i]), cpu, t)
    what = f"{view.program} (id {view.prog_id}) ran {view.insns} insns: {view.action}"
    if view.before != view.after:
        what += f", rewrote the frame ({len(view.before)} -> {len(view.after)} bytes)"
    if view.accesses:
        n = len(view.accesses)
        what += f", {n} map value{'s' if n != 1 else ''} read or written"
    dp.hop(t, dev.name, "xdp", what, program=view)


def explain(dp: RunCore, ev: ObjEval, entry: int, cpu: int, t: int) -> ProgramRunView:
    """One frame's run, recorded: bytes before and after, map words read and written."""
    obj = ev.obj
    e = dp.world.entries
    frame = derived.frame_bytes(e)[entry]
    snaps = [m.snapshot() for m in obj.maps]
    try:
        res = run_batch(
            obj.prog,
            [frame],
            ingress_ifindex=ev.ingress,
            rx_queue_index=int(ev.queue[min(entry, len(ev.queue) - 1)]),
            egress_ifindex=ev.egress,
            cpu=cpu,
            time_ns=t,
            record=True,
            devices=obj.devices or None,
        )
        after = [m.arena[: m.used].copy() for m in obj.maps]  # what was ever written
    finally:
        for m, snap in zip(obj.maps, snaps, strict=True):
            m.restore(snap)
    retval = int(res.retval[0])
    red = res.redirects[0]
    redirect = None
    if retval == 4 and red is not None:
        redirect = (
            f"ifindex {red.ifindex}"
            if red.ifindex is not None
            else (f"map {red.map} key {red.key}")
        )
    accesses = _accesses(obj, res.log, [s.arena for s in snaps], after)
    return ProgramRunView(
        obj.name,
        ev.prog.prog_id,
        action_name(retval),
        retval,
        int(res.counts[0]),
        frame,
        res.data[0][int(res.meta_len[0]) :],
        redirect,
        accesses,
    )


def _accesses(
    obj: ObjProgram,
    log: AccessLog | None,
    before: list[npt.NDArray[np.uint8]],
    after: list[npt.NDArray[np.uint8]],
) -> tuple[MapAccessView, ...]:
    """Map values the run read or changed, one per (map, element, CPU copy)."""
    touched: dict[tuple[int, int, int | None], str] = {}
    if log is not None:
        for w, k in zip(log.words.tolist(), log.kinds.tolist(), strict=True):
            if w & KEY_SPACE:
                continue  # a hash key's own word: its value is listed by offset
            mi = (w >> 29) - FIRST_MAP_REGION
            if not 0 <= mi < len(obj.maps):
                continue
            m = obj.maps[mi]
            off = (w << 3) & 0xFFFFFFFF
            slot, within = divmod(off, m.stride)
            cpu = within // m.value_size if m.is_percpu else None
            kind = "read" if k == READ else "write"
            touched.setdefault((mi, slot, cpu), kind)
            if kind == "write":
                touched[(mi, slot, cpu)] = kind
    out: list[MapAccessView] = []
    for (mi, slot, cpu), kind in sorted(touched.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        m = obj.maps[mi]
        base = slot * m.stride + (cpu or 0) * m.value_size
        old = before[mi][base : base + m.value_size].tobytes().ljust(m.value_size, b"\0")
        new = after[mi][base : base + m.value_size].tobytes().ljust(m.value_size, b"\0")
        if old != new:
            kind = "write"
        out.append(
            MapAccessView(
                obj.map_name(mi),
                _key_of(m, slot),
                cpu,
                kind,
                old.hex(" "),
                new.hex(" ") if kind == "write" else "",
            )
        )
    return tuple(out)


def _key_of(m: BpfMap, slot: int) -> str:
    """The key of a slot, as bpftool prints keys."""
    if m.is_hash:
        return next((kb.hex(" ") for kb, s in m.slots.items() if s == slot), "?")
    return slot.to_bytes(m.key_size, "little").hex(" ")
