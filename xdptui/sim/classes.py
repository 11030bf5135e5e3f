"""Flow classes: flow-table entries that every stage of the data path treats alike.

Two entries are in one class when they come from the same source (so a representative stays a
frame of that source when a command later changes the source's sizes or headers), every
device's compiled path gives them the same verdict, target, errno, devmap key, tun path, bond
slave, bulk queue and cost, they have the same size, GSO flag and IP protocol, land on the same
queue of every veth or tap that can receive them, and meet the same devmap egress verdicts
and cpumap entry programs' verdicts.
Fast mode counts frames per class, so a step costs what its classes cost, not what its flows
do; one representative entry of each class stands for all of them in the shared data path
(``Rows.entry``). Per-entry identity comes back in exact mode and for a followed frame.

The key is built column by column into a 64-bit hash, then checked: a collision would merge
entries that differ, so any column that is not constant within a class makes the classes be
rebuilt exactly (``np.unique`` over the stacked columns).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.sim.columns import ClassIds
from xdptui.sim.core.bpf_eval import ObjEval
from xdptui.sim.core.filter import reached
from xdptui.sim.devmap import DevmapCore

IntArray = npt.NDArray[np.int64]

_MUL = np.uint64(0x9E3779B97F4A7C15)
_ADD = np.uint64(0x632BE59BD9B4E019)


class ClassesCore(DevmapCore, Protocol):
    """The data path as the flow-class compiler reads it: the epoch its paths were compiled at."""

    @property
    def compiled_epoch(self) -> int: ...


@dataclass(frozen=True, eq=False)
class FlowClasses:
    """The classes of one configuration: ``of_entry[e]`` is entry ``e``'s class, ``rep[c]``
    the first entry of class ``c`` (classes are numbered by their first entry)."""

    epoch: int
    of_entry: ClassIds
    rep: IntArray

    def __len__(self) -> int:
        return len(self.rep)

    def __deepcopy__(self, memo: dict[int, Any]) -> FlowClasses:
        return self


def compile_classes(dp: ClassesCore) -> FlowClasses:
    """The classes of the data path's current configuration (``dp.compiled`` is up to date)."""
    n = len(dp.world.entries)
    if n == 0:
        return FlowClasses(dp.compiled_epoch, np.zeros(0, np.int32), np.zeros(0, np.int64))
    outs: list[IntArray] = []
    base = np.zeros(n, np.uint64)
    for col in _varying(dp, outs):  # one column at a time: a million entries' columns add up
        base = _hash(base, [col])
    h = _follow_outputs(base, outs)
    del base
    first, inverse = unique_first(h)
    del h
    if not _exact(_varying(dp, []), outs, first, inverse):  # (a collision merged them)
        # each output entry apart: what every rewrite was before outputs were followed
        cols = list(_varying(dp, []))
        _, first, inv = np.unique(np.stack(cols + outs, axis=1), axis=0,
                                  return_index=True, return_inverse=True)  # fmt: skip
        inverse = inv.reshape(-1).astype(np.int32)
    order = np.argsort(first, kind="stable")  # number classes by their first entry
    rank = np.empty(len(order), _class_type(len(order)))
    rank[order] = np.arange(len(order))
    of_entry = rank[inverse]  # (a byte an entry while classes are few)
    rep = first[order].astype(np.int64)
    of_entry.flags.writeable = False
    rep.flags.writeable = False
    return FlowClasses(dp.compiled_epoch, of_entry, rep)


def _class_type(n: int) -> type[np.signedinteger[Any]]:
    """The narrowest signed integer that numbers ``n`` classes."""
    for t in (np.int8, np.int16):
        if n <= np.iinfo(t).max + 1:
            return t
    return np.int32


UNIQUE_CHUNK = 1 << 18  # entries a pass over the table sorts at once


def unique_first(
    h: npt.NDArray[np.uint64], chunk: int = UNIQUE_CHUNK
) -> tuple[IntArray, npt.NDArray[np.int32]]:
    """``np.unique(h, return_index=True, return_inverse=True)``'s first indices and inverse
    (in 32 bits), a chunk of entries at a time: each chunk's distinct values with their first
    index, merged; then each entry's value looked up among them. A whole-table sort of 3
    million entries held 170 MB of temporaries; this holds a chunk's."""
    vals: list[npt.NDArray[np.uint64]] = []
    firsts: list[IntArray] = []
    for lo in range(0, len(h), chunk):
        v, f = np.unique(h[lo : lo + chunk], return_index=True)
        vals.append(v)
        firsts.append(f.astype(np.int64) + lo)
    if not vals:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    v, f = np.concatenate(vals), np.concatenate(firsts)
    order = np.lexsort((f, v))  # by value, then first index: a value's first chunk first
    v, f = v[order], f[order]
    keep = np.ones(len(v), bool)
    keep[1:] = v[1:] != v[:-1]
    distinct, first = v[keep], f[keep]
    inverse = np.empty(len(h), np.int32)
    for lo in range(0, len(h), chunk):
        inverse[lo : lo + chunk] = np.searchsorted(distinct, h[lo : lo + chunk])
    return first, inverse


FOLLOW_MAX = 8  # rewrites of rewrites followed (then each rewritten entry stays apart)


def _hash(h: npt.NDArray[np.uint64], cols: Iterable[IntArray]) -> npt.NDArray[np.uint64]:
    """``h`` with each column mixed in, a chunk of entries at a time (a new array)."""
    cols = list(cols)
    out = np.empty_like(h)
    with np.errstate(over="ignore"):
        for lo in range(0, len(h), UNIQUE_CHUNK):
            x = h[lo : lo + UNIQUE_CHUNK]
            for col in cols:
                x = (x ^ (col[lo : lo + UNIQUE_CHUNK].view(np.uint64) + _ADD)) * _MUL
                x ^= x >> np.uint64(29)
            out[lo : lo + UNIQUE_CHUNK] = x
    return out


def _refs(h: npt.NDArray[np.uint64], out: IntArray) -> IntArray:
    """Each entry's output as a key: the output entry's hash, or the marker (unchanged, or an
    output not in the table yet)."""
    own: IntArray = np.where(out >= 0, h[np.maximum(out, 0)].view(np.int64), out)
    return own


def _follow_outputs(base: npt.NDArray[np.uint64], outs: list[IntArray]) -> npt.NDArray[np.uint64]:
    """A rewritten frame goes on as its output entry, so two entries are alike when their
    columns are and their outputs are alike: refine until the partition stops changing (each
    round splits or keeps the last). Past ``FOLLOW_MAX`` rounds every rewrite keeps its own
    output entry."""
    if not outs:
        return base
    h = base
    count = len(np.unique(h))
    for _ in range(FOLLOW_MAX):
        nxt = _hash(base, [_refs(h, o) for o in outs])
        new = len(np.unique(nxt))
        h = nxt
        if new == count:
            return h
        count = new
    return _hash(base, outs)


def _varying(dp: ClassesCore, outs: list[IntArray]) -> Iterable[IntArray]:
    """``_columns`` less those that hold one value everywhere (they set nothing apart)."""
    return (col for col in _columns(dp, outs) if col.min() != col.max())


def _exact(
    cols: Iterable[IntArray], outs: list[IntArray], first: IntArray, inverse: npt.NDArray[np.int32]
) -> bool:
    """No hash collision merged entries that differ: every column is constant within each
    class, and so is each output's class (compared a chunk of entries at a time)."""

    def alike(col: IntArray) -> bool:
        at_first = col[first]
        return all(
            np.array_equal(col[lo : lo + UNIQUE_CHUNK], at_first[inverse[lo : lo + UNIQUE_CHUNK]])
            for lo in range(0, len(col), UNIQUE_CHUNK)
        )

    if not all(alike(col) for col in cols):
        return False
    for out in outs:
        ref = np.where(out >= 0, inverse[np.maximum(out, 0)], out)
        if not alike(ref):
            return False
    return True


def _columns(dp: ClassesCore, outs: list[IntArray]) -> Iterable[IntArray]:
    """Every per-entry array a stage reads, as int64 columns; real programs' outputs (entry
    indices, or markers below 0) go to ``outs``."""
    w = dp.world
    n = len(w.entries)
    e = w.entries

    starts = np.array([src.offset for src in w.sources] + [e.sources_end], np.int64)
    source = np.repeat(
        np.arange(len(starts) + 1, dtype=np.int64), np.diff(starts, prepend=0, append=n)
    )
    yield source  # (1 + the source's index; past the sources: the frames programs leave)
    for col in (e.size, e.gso, e.proto):
        if col.strides[0]:
            yield col.astype(np.int64)
    for name in sorted(dp.compiled):
        c = dp.compiled[name]
        # A port receives only its sources' frames (``filter.reached``): its path for any
        # other entry is never taken, so it does not set entries apart (the frames a rewriting
        # program leaves, above all, which its own program would rewrite again).
        dev = w.devices.get(name)
        reach = reached(w, dev) if dev is not None else None
        for f in fields(c):
            value = getattr(c, f.name)
            if f.name == "out" and c.obj is not None:
                own_outs: list[IntArray] = []
                for col in _object_columns(c.obj, own_outs):
                    yield col if reach is None else np.where(reach, col, 0)
                outs.extend(o if reach is None else np.where(reach, o, -2) for o in own_outs)
            elif isinstance(value, np.ndarray) and value.shape == (n,) and value.strides[0]:
                # (a column of one value -- stored once, ``columns.compact`` -- says nothing
                # the source column does not: it is skipped before it costs memory)
                col = _as_int64(value)
                yield col if reach is None else np.where(reach, col, -9)
    from xdptui.sim.bond.bond_main import Bond, BondLogic
    from xdptui.sim.dev.tun import Tun
    from xdptui.sim.dev.veth import Veth

    for dev in w.devices.values():
        if isinstance(dev, Veth | Tun) and len(dev.rxq) > 1:  # veth_xmit / tun: the RX queue
            yield (e.rss_hash.astype(np.int64) % len(dev.rxq)).astype(np.int64)
        if isinstance(dev, Bond) and dev.slaves:
            logic = BondLogic(dev, w.devices)
            for slave in (
                logic.xdp_slave_of_entry(e.headers),
                logic.stack_slave_of_entry(e.headers),
            ):
                if slave is not None:
                    yield slave.astype(np.int64)
    yield from _egress_columns(dp, outs)
    yield from _cpumap_columns(dp)


def _cpumap_columns(dp: ClassesCore) -> Iterable[IntArray]:
    """Each cpumap entry program's verdict (``cpu_map_bpf_prog_run_xdp``): the kthread's
    outcome and cost follow it."""
    from xdptui.sim.core.filter import make_context

    w = dp.world
    for name in sorted(w.cpumaps):
        m = w.cpumaps[name]
        for key in sorted(m.entries):
            prog = m.entries[key].prog
            if prog is not None:
                yield np.asarray(prog.run(make_context(w, None, prog)), np.int64)


def _egress_columns(dp: ClassesCore, outs: list[IntArray]) -> Iterable[IntArray]:
    """Devmap egress verdicts, for every device that redirects and every entry's program."""
    from xdptui.sim.devmap import egress_verdicts

    w = dp.world
    senders = [w.devices[name] for name, c in dp.compiled.items() if c.mode is not None]
    for dmap in w.maps.values():
        for _key, entry in dmap.walk():
            tgt = w.devices.get(entry.dev)
            if entry.egress is None or tgt is None:
                continue
            for rx in senders:
                if entry.egress.obj is not None:  # a real object: its verdict and output
                    from xdptui.sim.core import bpf_run

                    ev = bpf_run.egress(dp, entry.egress, rx, tgt)
                    yield ev.raw.astype(np.int64)
                    yield from _object_columns(ev, outs)
                    continue
                yield egress_verdicts(dp, entry.egress, rx, tgt).astype(np.int64)


def _object_columns(ev: ObjEval, outs: list[IntArray]) -> Iterable[IntArray]:
    """A real program's effect on each entry, as far as the classes need it: the frame it
    leaves (to ``outs``: -2 for every entry it leaves unchanged, whose frame goes on as itself
    and which the other columns already describe; the output entry of a rewritten one, which
    ``_follow_outputs`` compares by its class; a value of its own where the output is not in
    the table yet) and its map adds. A stateful program (verdicts that differ between frames
    of an entry) keeps every entry apart. Entries with the same adds (a word of a map, a
    value) have one value -- a 64-bit hash of the set of adds."""
    n = len(ev.out)
    own = np.arange(n, dtype=np.int64)
    if ev.depends is not None:
        yield own
        return
    outs.append(np.where(ev.out == own, -2, np.where(ev.out < 0, -3 - own, ev.out)))
    eff = ev.effects
    if eff.empty or not eff.length.any():
        return
    lens = eff.length
    total = int(lens.sum())
    ends = np.cumsum(lens)
    idx = np.repeat(eff.first, lens) + np.arange(total) - np.repeat(ends - lens, lens)
    with np.errstate(over="ignore"):
        h = (eff.word[idx].astype(np.uint64) + _ADD) * _MUL
        h ^= h >> np.uint64(29)
        h = (h ^ eff.value[idx].astype(np.uint64)) * _MUL
        h ^= h >> np.uint64(31)
        cs = np.concatenate((np.zeros(1, np.uint64), np.cumsum(h, dtype=np.uint64)))
        yield (cs[ends] - cs[ends - lens]).view(np.int64)


def _as_int64(value: npt.NDArray[np.generic]) -> IntArray:
    if value.dtype == np.float64:
        out: IntArray = value.view(np.int64)
        return out
    return value.astype(np.int64)
