"""Frames the data path made, as flow-table entries of their own.

A program that rewrites a frame -- swaps the MACs before XDP_TX, decrements the TTL before a
redirect, pushes an outer header with ``bpf_xdp_adjust_head`` -- hands the next hop other bytes:
another size, other headers, other hashes. Such a frame becomes an entry appended after the
sources' entries, with its bytes kept and its header fields parsed back out of them, so every
later stage (the TX ring's wire time and ``tx_bytes``, ``xdp_ok_fwd_dev``'s size check, a bond's
xmit hash, the next device's program) reads the frame it really gets. A program that reads
state it writes gives one entry several outcomes; each outcome it was seen to have is an entry
too (same bytes as its input) whose verdict is pinned (``xdptui.sim.core.bpf_run``).

Entries are append-only: an index never changes meaning, so ring contents and every compiled
per-entry array stay valid when the table grows; growing pads the per-entry ring counts and
bumps the world's epoch so the paths are compiled again. Identical frames share an entry (a
MAC swapped twice is the source's own entry again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.bpf.memory import MAX_LINEAR
from xdptui.sim.core.xdp_buff import Headers, build_frames, parse_frames
from xdptui.sim.dev.nic import Nic, map_entries
from xdptui.sim.entries import Entries
from xdptui.sim.hashing import FlowHeaders
from xdptui.sim.traffic import entry_span

if TYPE_CHECKING:
    from xdptui.sim.dev.netdev import Host

IntArray = npt.NDArray[np.int64]
FrameKey = tuple[bytes, int, bool]  # (bytes a program sees, frame size, GSO)

MAX_DERIVED = 65_536
"""Frames the data path may add to the flow table; past it a rewritten frame keeps its input's
entry and the program's view says its outputs are approximated."""


def frame_bytes(e: Entries) -> list[bytes]:
    """Every entry's bytes, as a program sees them (built once per table, then shared)."""
    got: list[bytes] | None = e.cache.get("bytes")
    if got is not None and len(got) == len(e):
        return got
    if got is None or len(got) < e.sources_end:
        end = e.sources_end
        h = e.headers
        got = build_frames(
            Headers(
                src_mac=h.src_mac[:end],
                dst_mac=h.dst_mac[:end],
                vlan=h.vlan[:end],
                src_ip=h.src_ip[:end],
                dst_ip=h.dst_ip[:end],
                proto=h.proto[:end],
                src_port=h.src_port[:end],
                dst_port=h.dst_port[:end],
                size=e.size[:end],
            )
        )
        for first, frames in e.captured:  # a replayed capture's entries: its own bytes
            got[first : first + len(frames)] = [f[:MAX_LINEAR] for f in frames]
    else:
        got = list(got)
    got.extend(d[0] for d in e.derived[len(got) - e.sources_end :])
    e.cache["bytes"] = got
    return got


def _index(e: Entries) -> dict[FrameKey, int]:
    """Frame -> the first entry holding it."""
    got: dict[FrameKey, int] | None = e.cache.get("index")
    if got is not None:
        return got
    data = frame_bytes(e)
    sizes = e.size.tolist()
    gso = e.gso.tolist()
    got = {}
    for i in range(len(e) - 1, -1, -1):
        got[(data[i], sizes[i], gso[i])] = i
    e.cache["index"] = got
    return got


def find(e: Entries, key: FrameKey) -> int | None:
    """The entry holding exactly this frame, if any."""
    return _index(e).get(key)


def room(e: Entries) -> int:
    """How many more frames the table may take."""
    return MAX_DERIVED - (len(e) - e.sources_end)


def grow(world: Host, frames: list[FrameKey], distinct: bool = True) -> list[int]:
    """Append ``frames`` (those not already present, when ``distinct``) as entries; returns
    each frame's entry (-1 for one refused because the table is full). Pads every queue's
    per-entry counts, re-lays the NICs' RSS lookup and bumps the epoch."""
    old = world.entries
    index = dict(_index(old))
    out: list[int] = []
    new: list[FrameKey] = []
    limit = room(old)
    for key in frames:
        hit = index.get(key) if distinct else None
        if hit is None:
            if len(new) >= limit:
                out.append(-1)
                continue
            hit = len(old) + len(new)
            new.append(key)
            index.setdefault(key, hit)
        out.append(hit)
    if not new:
        return out
    world.entries = extend(old, new, index)
    for dev in world.devices.values():
        for rxq in dev.rxq:
            rxq.resize_entries(np.arange(len(old), dtype=np.int64), len(world.entries))
        if isinstance(dev, Nic):
            map_entries(dev, world.entries.rss_hash, entry_span(world.sources, dev.name))
    world.touch()
    return out


def extend(old: Entries, frames: list[FrameKey], index: dict[FrameKey, int] | None) -> Entries:
    """``old`` with ``frames`` appended; their header fields parsed from their bytes."""
    p = parse_frames([f[0] for f in frames])
    sizes = np.array([f[1] for f in frames], dtype=np.int64)
    gso = np.array([f[2] for f in frames], dtype=bool)
    h = old.headers

    def cat(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        return np.concatenate((a, b.astype(a.dtype)))

    headers = FlowHeaders.make(
        src_mac=cat(h.src_mac, p.src_mac),
        dst_mac=cat(h.dst_mac, p.dst_mac),
        src_ip=cat(h.src_ip, p.src_ip),
        dst_ip=cat(h.dst_ip, p.dst_ip),
        ethertype=cat(h.ethertype, p.ethertype),
        vlan=cat(h.vlan, p.vlan),
        proto=cat(h.proto, p.proto),
        src_port=cat(h.src_port, p.src_port),
        dst_port=cat(h.dst_port, p.dst_port),
        frag=cat(h.frag, p.frag),
    )
    size = np.concatenate((old.size, sizes))
    size.flags.writeable = False
    cache: dict[str, object] = {}
    data = old.cache.get("bytes")
    if data is not None and len(data) == len(old):
        cache["bytes"] = data + [f[0] for f in frames]
    if index is not None:
        cache["index"] = index
    return Entries.over(
        headers,
        size,
        np.concatenate((old.gso, gso)),
        np.concatenate((old.rss_hash, p.rss_hash)).astype(np.uint32),
        n_source=old.sources_end,
        derived=old.derived + tuple(frames),
        captured=old.captured,
        cache=cache,
    )


def carry_over(old: Entries, fresh: Entries) -> tuple[Entries, IntArray]:
    """The sources' entries were rebuilt (``fresh``): append ``old``'s derived frames again.
    Returns the table and where each of ``old``'s derived entries now is."""
    if not old.derived:
        return fresh, np.zeros(0, dtype=np.int64)
    table = extend(fresh, list(old.derived), None)
    moved = fresh.sources_end + np.arange(len(old.derived), dtype=np.int64)
    return table, moved
