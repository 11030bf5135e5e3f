"""A real XDP program over every flow-table entry, once per configuration (``bpf_prog_run_xdp``
as ``xdptui.sim.core.filter`` compiles it).

Every frame of an entry carries the same bytes, so a program whose verdict is a function of the
frame -- its context (``ingress_ifindex``, ``rx_queue_index``, ``egress_ifindex``) and maps it
never writes included -- is run once per entry: its return code, its redirect, the bytes it
leaves (the next hop's frame, an entry of its own: ``xdptui.sim.core.derived``) and the
instructions it ran. The run is a probe: the maps are put back afterwards, and what it did to
them is kept as *effects*, the commutative adds each entry's frame makes (counters), which the
data path then applies with each poll's frame counts on the polling CPU
(``xdptui.sim.core.bpf_run``).

The probe also says whether the program is such a function: one that stores into a map,
exchanges or fetches a map word, inserts into a hash map, reads a word it adds to, or calls
``bpf_ktime_get_ns`` / ``bpf_get_prandom_u32`` / ``bpf_get_smp_processor_id`` may answer each
frame of an entry differently (a rate limiter, a round robin). Such a program is run frame by
frame in exact mode; its per-entry results here are only the fallback for what fast mode has not
seen yet.

Results are cached on the parsed object by what they depend on (device, queue layout, the
devmaps' contents, the table) and extended when the table grows, so a recompile after a command
runs the program only on entries it has not met.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.bpf import memory as mem
from xdptui.bpf.maps import PERCPU_TYPES
from xdptui.bpf.packets import Packets
from xdptui.bpf.vm import run_batch
from xdptui.model.errors import Errno, KernelError
from xdptui.sim.core import derived
from xdptui.sim.core.bpf_obj import ObjProgram, Outcome, devmap_fingerprint, sync_devmaps
from xdptui.sim.core.derived import FrameKey
from xdptui.sim.dev.netdev import Host, XdpCore
from xdptui.sim.dev.nic import Nic
from xdptui.sim.hashing import rss_queue
from xdptui.sim.kconst import BPF_F_BROADCAST, CPU_TARGET, XDP_REDIRECT, XSK_TARGET

if TYPE_CHECKING:
    from xdptui.sim.dev.netdev import NetDev
    from xdptui.sim.entries import Entries
    from xdptui.sim.programs import Program

IntArray = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
PROBE_CHUNK = 2048  # frames per probe batch (bounds the interpreter's memory)
EVALS_KEPT = 64  # cached evaluations per object


class EvalCore(XdpCore, Protocol):
    """The data path as a real program's evaluation calls back into it: its BPF state."""

    bpf: BpfState


@dataclass
class BpfState:
    """The data path's side of real programs: frames they made that the table lacks yet and
    outcomes to pin (added when the paths are next compiled: ``grow_pending``), and the
    devmap egress programs' evaluations (per configuration)."""

    frames: list[FrameKey] = field(default_factory=list)
    pins: list[tuple[ObjProgram, str, int, Outcome]] = field(default_factory=list)
    egress: dict[tuple[int, str, str], ObjEval] = field(default_factory=dict)

    @property
    def pending(self) -> bool:
        return bool(self.frames or self.pins)


@dataclass(frozen=True, eq=False)
class Effects:
    """The commutative adds of one frame of each entry, grouped by entry (``first[e]`` ..
    ``first[e] + length[e]``), each into a word of the word table (map, offset in CPU 0's
    copy, size)."""

    first: IntArray
    length: IntArray
    word: IntArray
    value: U64
    wmap: IntArray
    woff: IntArray
    wsize: IntArray

    @property
    def empty(self) -> bool:
        return not len(self.word)


@dataclass(eq=False)
class Probe:
    """Per-entry results for entries ``0 .. len(retval)`` of one table lineage."""

    lineage: object
    retval: IntArray
    ifindex: IntArray
    mapidx: IntArray
    key: IntArray
    flags: IntArray
    out: list[FrameKey | None]
    insns: IntArray
    eff: tuple[IntArray, IntArray, IntArray, IntArray, U64]  # entry, map, offset, size, value
    depends: str | None
    fault: str | None = None  # the first run-time refusal met (those frames: XDP_ABORTED)

    def __len__(self) -> int:
        return len(self.retval)


@dataclass(eq=False)
class ObjEval:
    """What a real program does with each entry on one device (or one devmap egress)."""

    prog: Program
    dev: str
    ingress: int
    egress: int
    queue: IntArray  # rx_queue_index each entry's frame is received on
    raw: IntArray
    target: IntArray  # redirect target ifindex (-1: none)
    key: IntArray  # devmap key of a bpf_redirect_map (-1: none)
    map_name: str | None
    broadcast: int
    out: IntArray  # the entry of the frame it leaves (-1: not in the table yet: ``missing``)
    insns: IntArray
    effects: Effects
    depends: str | None  # why verdicts may differ between frames of an entry (None: they don't)
    missing: dict[int, FrameKey] = field(default_factory=dict)  # entry -> frame not in the table

    def __deepcopy__(self, memo: dict[int, Any]) -> ObjEval:
        """Shares the per-entry arrays (fixed once run); the program goes with the copy."""
        other = copy.copy(self)
        memo[id(self)] = other
        other.prog = copy.deepcopy(self.prog, memo)
        other.missing = dict(self.missing)
        return other

    @property
    def obj(self) -> ObjProgram:
        assert self.prog.obj is not None
        return self.prog.obj


def _lineage(e: Entries) -> object:
    token = e.cache.get("lineage")
    if token is None:
        token = e.cache["lineage"] = object()
    return token


def rx_queues(dev: NetDev | None, e: Entries) -> IntArray:
    """The receive queue each entry's frame lands on (``rx_queue_index``)."""
    if dev is None or len(dev.rxq) <= 1:
        return np.zeros(len(e), dtype=np.int64)
    if isinstance(dev, Nic):
        return rss_queue(e.rss_hash, dev.reta)  # (the port keeps its own sources' only)
    return dev.rx_queue_of(e.rss_hash)


def frame_key(e: Entries, entry: int) -> FrameKey:
    return (derived.frame_bytes(e)[entry], int(e.size[entry]), bool(e.gso[entry]))


def run_probe(
    obj: ObjProgram,
    frames: list[bytes],
    sizes: IntArray,
    gso: npt.NDArray[np.bool_],
    ingress: int,
    egress: int,
    queue: IntArray,
) -> Probe:
    """Run the program on each frame as if it were the only one, maps put back after. A frame
    the interpreter refuses (an access the kernel's verifier would not have let through) is
    XDP_ABORTED and the first refusal is kept (``Probe.fault``)."""
    n = len(frames)
    retval = np.zeros(n, dtype=np.int64)
    ifindex = np.full(n, -1, dtype=np.int64)
    mapidx = np.full(n, -1, dtype=np.int64)
    key = np.full(n, -1, dtype=np.int64)
    flags = np.zeros(n, dtype=np.int64)
    insns = np.zeros(n, dtype=np.int64)
    out: list[FrameKey | None] = [None] * n
    effs: list[tuple[IntArray, IntArray, IntArray, IntArray, U64]] = []
    depends: str | None = None
    fault: str | None = None
    snaps = [m.snapshot() for m in obj.maps]
    work = [(start, min(n, start + PROBE_CHUNK)) for start in range(0, n, PROBE_CHUNK)][::-1]
    try:
        while work:
            start, end = work.pop()
            packed = Packets.from_bytes(frames[start:end])
            try:
                res = run_batch(
                    obj.prog,
                    packed,
                    ingress_ifindex=ingress,
                    rx_queue_index=queue[start:end],
                    egress_ifindex=egress,
                    sequential=False,
                    record=True,
                    devices=obj.devices or None,
                )
            except KernelError as exc:
                # A fault the kernel's verifier would have refused at load: find the frames
                # that meet it; each is XDP_ABORTED (the interpreter stops the run).
                if end - start > 1:
                    work.extend((i, i + 1) for i in range(end - 1, start - 1, -1))
                elif fault is None:
                    fault = exc.extack.removeprefix("packet 0: ")
                continue
            finally:
                for m, snap in zip(obj.maps, snaps, strict=True):
                    m.restore(snap)
            retval[start:end] = res.retval
            insns[start:end] = res.counts
            to_map = res.redirect_map >= 0  # bpf_redirect_map's target wins over an ifindex
            ifindex[start:end] = np.where(to_map, -1, np.maximum(res.redirect_ifindex, -1))
            mapidx[start:end] = np.where(to_map, res.redirect_map, -1)
            key[start:end] = np.where(to_map, res.redirect_key, -1)
            flags[start:end] = np.where(to_map, res.redirect_flags, 0)
            for i in _rewritten(packed, res.out, res.meta_len).tolist():
                j = start + i
                body = res.out.packet(i)[int(res.meta_len[i]) :]
                size = len(body) + int(sizes[j]) - len(frames[j])
                if body != frames[j] or size != int(sizes[j]):
                    out[j] = (body, size, bool(gso[j]))
            for mi, rows, off, size_b, val in res.adds:
                effs.append(
                    (
                        rows.astype(np.int64) + start,
                        np.full(len(rows), mi, dtype=np.int64),
                        off.astype(np.int64),
                        np.full(len(rows), size_b, dtype=np.int64),
                        val.astype(np.uint64),
                    )
                )
            if depends is None and res.log is not None:
                dep = res.log.state_dependence()
                if dep is not None:
                    depends = f"{dep[1]} {obj.map_name(dep[0])}"
    finally:
        for m, snap in zip(obj.maps, snaps, strict=True):
            m.restore(snap)
    eff = _cat_effects(effs)
    return Probe(None, retval, ifindex, mapidx, key, flags, out, insns, eff, depends, fault)


def _rewritten(before: Packets, after: Packets, meta_len: IntArray) -> IntArray:
    """The packets whose data may differ from what they were: any whose data moved, whose end
    moved, or whose row's bytes from the headroom on differ (a superset: each is checked)."""
    data = after.start + meta_len
    moved = (data != mem.XDP_PACKET_HEADROOM) | (after.end != before.end)
    if after.buf is not before.buf:
        if after.width != before.width:
            return np.arange(len(before), dtype=np.int64)
        w, h = before.width, mem.XDP_PACKET_HEADROOM
        grid_a = after.buf.reshape(len(after), w)[:, h:]
        grid_b = before.buf.reshape(len(before), w)[:, h:]
        moved |= (grid_a != grid_b).any(axis=1)
    return np.flatnonzero(moved)


def _cat_effects(
    effs: list[tuple[IntArray, IntArray, IntArray, IntArray, U64]],
) -> tuple[IntArray, IntArray, IntArray, IntArray, U64]:
    if not effs:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z, np.zeros(0, dtype=np.uint64)
    return (
        np.concatenate([x[0] for x in effs]),
        np.concatenate([x[1] for x in effs]),
        np.concatenate([x[2] for x in effs]),
        np.concatenate([x[3] for x in effs]),
        np.concatenate([x[4] for x in effs]),
    )


def _join(a: Probe, b: Probe, shift: int) -> Probe:
    """``a`` then ``b`` (whose entries start at ``shift``)."""
    ea, eb = a.eff, b.eff
    eff = (
        np.concatenate((ea[0], eb[0] + shift)),
        np.concatenate((ea[1], eb[1])),
        np.concatenate((ea[2], eb[2])),
        np.concatenate((ea[3], eb[3])),
        np.concatenate((ea[4], eb[4])),
    )
    return Probe(
        a.lineage,
        np.concatenate((a.retval, b.retval)),
        np.concatenate((a.ifindex, b.ifindex)),
        np.concatenate((a.mapidx, b.mapidx)),
        np.concatenate((a.key, b.key)),
        np.concatenate((a.flags, b.flags)),
        a.out + b.out,
        np.concatenate((a.insns, b.insns)),
        eff,
        a.depends or b.depends,
        a.fault or b.fault,
    )


def _probe(obj: ObjProgram, e: Entries, ingress: int, egress: int, queue: IntArray) -> Probe:
    """The cached probe of every entry, run on the entries it has not met yet."""
    lineage = _lineage(e)
    qh = hashlib.sha1(queue.tobytes()).hexdigest()
    cache_key = (ingress, egress, qh, devmap_fingerprint(obj), id(lineage))
    evals = obj.code.evals
    hit: Probe | None = evals.get(cache_key)
    if hit is not None and hit.lineage is not lineage:
        hit = None
    n = len(e)
    have = len(hit) if hit is not None else 0
    if hit is None or have < n:
        frames = derived.frame_bytes(e)[have:n]
        new = run_probe(obj, frames, e.size[have:n], e.gso[have:n], ingress, egress, queue[have:n])
        new.lineage = lineage
        hit = new if hit is None else _join(hit, new, have)
        if len(evals) >= EVALS_KEPT:
            evals.clear()
        evals[cache_key] = hit
    assert hit is not None
    return hit


def _effects(p: Probe, n: int) -> Effects:
    entry, mi, off, size, val = p.eff
    keep = entry < n
    entry, mi, off, size, val = entry[keep], mi[keep], off[keep], size[keep], val[keep]
    order = np.argsort(entry, kind="stable")
    entry, mi, off, size, val = entry[order], mi[order], off[order], size[order], val[order]
    length = np.bincount(entry, minlength=n).astype(np.int64)
    first = np.concatenate(([0], np.cumsum(length)[:-1])).astype(np.int64)
    words = np.stack((mi, off, size), axis=1) if len(entry) else np.zeros((0, 3), np.int64)
    table, word = np.unique(words, axis=0, return_inverse=True)
    return Effects(
        first,
        length,
        word.reshape(-1).astype(np.int64),
        val,
        table[:, 0].astype(np.int64),
        table[:, 1].astype(np.int64),
        table[:, 2].astype(np.int64),
    )


def evaluate(dp: EvalCore, prog: Program, dev: NetDev | None, egress: NetDev | None) -> ObjEval:
    """``prog`` (a real object) on every entry, received by ``dev`` -- or, for a devmap
    egress program, sent out of ``egress`` after ``dev`` received it."""
    obj = prog.obj
    assert obj is not None
    w = dp.world
    e = w.entries
    n = len(e)
    sync_devmaps(obj, w)
    queue = rx_queues(dev, e) if egress is None else np.zeros(n, dtype=np.int64)
    ingress = dev.ifindex if dev is not None else 0
    egress_ifindex = egress.ifindex if egress is not None else 0
    p = _probe(obj, e, ingress, egress_ifindex, queue)
    raw = p.retval[:n].copy()
    ifindex = p.ifindex[:n].copy()
    mapidx = p.mapidx[:n].copy()
    key = p.key[:n].copy()
    flags = p.flags[:n].copy()
    outs: list[FrameKey | None] = list(p.out[:n])
    name = dev.name if dev is not None and egress is None else ""
    for (base, sig), pin in obj.pins.get(name, {}).items():
        if pin < n and base < n:
            raw[pin], ifindex[pin], mapidx[pin], key[pin], flags[pin], outs[pin] = sig
    out, missing = _resolve(e, outs)
    if egress is None and dev is not None:  # traffic arriving here: its outputs join now
        dp.bpf.frames.extend(k for i, k in missing.items() if _arrives(w, dev, i))
    target, map_name, broadcast = _targets(w, obj, raw, ifindex, mapidx, key, flags)
    depends = (obj.code.varying and f"calls {obj.code.varying}") or p.depends
    obj.depends = obj.depends or depends
    obj.fault = obj.fault or p.fault
    return ObjEval(
        prog,
        name,
        ingress,
        egress_ifindex,
        queue,
        raw,
        target,
        np.where(mapidx >= 0, key, -1),
        map_name,
        broadcast,
        out,
        p.insns[:n].copy(),
        _effects(p, n),
        depends,
        missing,
    )


def _arrives(w: Host, dev: NetDev, entry: int) -> bool:
    """Is ``entry`` a frame of a source whose frames arrive on ``dev`` (from the wire, a
    tap's writer, or the local stack through ``dev``'s veth peer)?"""
    for src in w.sources:
        if not src.offset <= entry < src.offset + len(src.table):
            continue
        if src.local:
            sender = w.devices.get(src.device)
            return getattr(sender, "peer", None) == dev.name
        return src.device == dev.name
    return False


def _resolve(e: Entries, outs: list[FrameKey | None]) -> tuple[IntArray, dict[int, FrameKey]]:
    """Each entry's output entry: itself when unchanged, the entry holding the new frame, or
    -1 when the table lacks it -- the frame is then returned, to be added when frames of that
    entry really leave (``bpf_run.leaving``): outputs of frames that never come this way (a
    rewrite of a rewrite) never enter the table."""
    out = np.arange(len(outs), dtype=np.int64)
    missing: dict[int, FrameKey] = {}
    for i, k in enumerate(outs):
        if k is None:
            continue
        hit = derived.find(e, k)
        if hit is None:
            out[i] = -1
            missing[i] = k
        else:
            out[i] = hit
    return out, missing


def _targets(
    w: Host,
    obj: ObjProgram,
    raw: IntArray,
    ifindex: IntArray,
    mapidx: IntArray,
    key: IntArray,
    flags: IntArray,
) -> tuple[IntArray, str | None, int]:
    """``bpf_redirect_info`` as ``xdp_do_redirect`` reads it: an ifindex, or a devmap slot
    resolved to its device (the first devmap a program redirects through names them all)."""
    red = raw == XDP_REDIRECT
    target = np.where(red & (ifindex >= 0), ifindex, -1)
    via_map = red & (mapidx >= 0)
    if not via_map.any():
        return target, None, 0
    first = int(mapidx[np.flatnonzero(via_map)[0]])
    map_name = obj.bound.get(first, obj.maps[first].name)
    bflags = int(flags[via_map & ((flags & BPF_F_BROADCAST) != 0)].max(initial=0))
    xskmap = w.xskmaps.get(map_name)
    if xskmap is not None:  # xsk_map_redirect: the socket at the key
        for k in np.unique(key[via_map]):
            rows = via_map & (key == k)
            sock = xskmap.lookup(int(k))
            xs = w.xsks.get(sock) if sock is not None else None
            target[rows] = XSK_TARGET - xs.index if xs is not None else -1
        return target, map_name, 0
    cpus = w.cpumaps.get(map_name)
    if cpus is not None:  # cpu_map_redirect: the entry's CPU, the key
        for k in np.unique(key[via_map]):
            rows = via_map & (key == k)
            target[rows] = CPU_TARGET - int(k) if cpus.lookup(int(k)) is not None else -1
        return target, map_name, 0
    host = w.maps.get(map_name)
    for k in np.unique(key[via_map]):
        entry = host.lookup(int(k)) if host is not None else None
        dev = w.devices.get(entry.dev) if entry is not None else None
        rows = via_map & (key == k)
        target[rows] = dev.ifindex if dev is not None else -1
    return target, map_name, bflags


def grow_pending(dp: EvalCore, final: bool) -> bool:
    """Add the frames and pinned outcomes asked for since the last compile; True if the
    table changed (the epoch moved: compile again). On the ``final`` round they are
    dropped: the frames keep their input's entry until the next change."""
    p = dp.bpf
    if not p.pending:
        return False
    dp.bpf = BpfState()
    if final:
        return False
    w = dp.world
    frames = list(dict.fromkeys(p.frames + [sig[5] for *_, sig in p.pins if sig[5] is not None]))
    derived.grow(w, frames)
    for obj, dev, base, sig in p.pins:
        pins = obj.pins.setdefault(dev, {})
        if (base, sig) in pins:
            continue
        got = derived.grow(w, [frame_key(w.entries, base)], distinct=False)[0]
        if got >= 0:
            pins[(base, sig)] = got
    w.touch()
    return True


def outcome(
    obj: ObjProgram,
    retval: int,
    redirect: Any,
    body: bytes,
    frame: bytes,
    size: int,
    gso: bool,
) -> Outcome:
    """One frame's outcome from a run's results (``vm.Redirect`` and the output bytes)."""
    ifindex = mapidx = key = -1
    flags = 0
    if redirect is not None:
        if redirect.ifindex is not None:
            ifindex = int(redirect.ifindex)
        elif redirect.map is not None:
            mapidx = next(k for k, m in enumerate(obj.maps) if m.name == redirect.map)
            key = int(redirect.key) if redirect.key is not None else -1
            flags = int(redirect.flags)
    out_size = len(body) + size - len(frame)
    out: FrameKey | None = None
    if body != frame or out_size != size:
        out = (body, out_size, gso)
    return (int(retval), ifindex, mapidx, key, flags, out)


def percpu_stride(obj: ObjProgram, maps: IntArray) -> IntArray:
    """Per map index: the bytes between two CPUs' copies (0 for shared maps)."""
    sizes = np.array(
        [m.value_size if m.map_type in PERCPU_TYPES else 0 for m in obj.maps], dtype=np.int64
    )
    out: IntArray = sizes[maps]
    return out


def verify_on_traffic(prog: Program, world: Host, dev: NetDev | None, egress: bool) -> None:
    """Run a freshly loaded object over the configured traffic (the probe the next compile
    reuses): a frame the interpreter refuses is an access the kernel's verifier would not
    have let through, so the load is refused with its errno, as ``BPF_PROG_LOAD`` would."""
    obj = prog.obj
    assert obj is not None
    sync_devmaps(obj, world)
    e = world.entries
    queue = np.zeros(len(e), dtype=np.int64) if egress else rx_queues(dev, e)
    ifindex = dev.ifindex if dev is not None else 0
    p = _probe(obj, e, 0 if egress else ifindex, ifindex if egress else 0, queue)
    if p.fault is not None:
        raise KernelError(
            Errno.EACCES,
            f"{obj.name}: {p.fault} (on a frame of the configured traffic; the kernel's "
            "verifier would refuse this program)",
        )
