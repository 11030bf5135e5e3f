"""pktgen-like traffic sources as flow tables: every frame a source emits is one table entry.

A source with ``flows = F`` and ``sizes`` of length ``S`` cycles through ``L = lcm(F, S)``
entries: frame number ``n`` is entry ``n % L``, entry ``j`` carries flow ``j % F`` with size
``sizes[j % S]``. That is pktgen's behaviour (``net/core/pktgen.c``) with ``flows`` flows and a
size that steps through the list one frame at a time, so the whole simulation can work per
entry (counts of frames per entry) instead of per frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.model.limits import MAX_TABLE_ENTRIES
from xdptui.model.topology import Range, TrafficSpec
from xdptui.model.units import Rate
from xdptui.sim.columns import owned
from xdptui.sim.hashing import (
    ETH_P_IP,
    IPPROTO_ICMP,
    IPPROTO_IGMP,
    IPPROTO_TCP,
    IPPROTO_UDP,
    FlowHeaders,
    toeplitz_hash,
)
from xdptui.sim.kconst import WIRE_OVERHEAD

IntArray = npt.NDArray[np.int64]

__all__ = [
    "MAX_TABLE_ENTRIES",
    "PROTO_NUMBERS",
    "FlowTable",
    "Source",
    "build_flow_table",
    "frames_per_entry",
]

"""The largest flow table (``lcm(flows, len(sizes))``) a source may need."""

GSO_GRAIN = 20
"""With a GSO share strictly between 0 and 1 the table length is a multiple of this, so the
share is realised to 5 %: entry j is GSO iff ``floor((j+1)*gso) > floor(j*gso)``."""

PROTO_NUMBERS: dict[str, int] = {
    "udp": IPPROTO_UDP,
    "tcp": IPPROTO_TCP,
    "icmp": IPPROTO_ICMP,
    "igmp": IPPROTO_IGMP,
}
"""IP protocol numbers (``include/uapi/linux/in.h``) of the ``proto`` values a source accepts."""

_L4_PORTS = ("udp", "tcp")


@dataclass(frozen=True, eq=False)
class FlowTable:
    """The L entries a source cycles through; entry ``n % L`` is frame number ``n``.

    ``size`` is the frame length in bytes without FCS; ``gso`` flags the entries sent as GSO
    super-frames (the size is kept as given; the flag is what later stages look at);
    ``rss_hash`` is the Toeplitz hash (:data:`~xdptui.sim.hashing.DEFAULT_RSS_KEY`) a receiving
    NIC computes: over the 4-tuple for TCP/UDP, over the address pair otherwise.
    All arrays are read-only and ``len(headers)`` long.
    """

    headers: FlowHeaders
    size: npt.NDArray[np.int64]
    gso: npt.NDArray[np.bool_]
    rss_hash: npt.NDArray[np.uint32]
    frames: tuple[bytes, ...] | None = None  # a replayed capture: each entry's own bytes

    def __post_init__(self) -> None:
        n = len(self.headers)
        for name, dtype in (("size", np.int64), ("gso", np.bool_), ("rss_hash", np.uint32)):
            arr = owned(getattr(self, name), dtype)
            if arr.shape != (n,):
                raise ValueError(f"FlowTable.{name} has shape {arr.shape}, expected ({n},)")
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.headers)

    def __deepcopy__(self, memo: dict[int, Any]) -> FlowTable:
        return self  # read-only: checkpoints share it


class Pacing(Protocol):
    """When frames arrive when not at a constant rate (a capture replayed as captured): frame
    ``n`` at ``origin + 1 + at(n) - at(first)``, ``first`` the frame the pacing started with."""

    @property
    def mean_pps(self) -> float: ...

    def at(self, n: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...

    def count_until(self, x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...


@dataclass(eq=False)
class Source:
    """A running pktgen-like source: frame ``n`` is entry ``offset + n % len(table)`` and
    arrives at its device at ``arrival_ns(n)`` -- exact integer pacing from the time the
    current rate took effect, so counts never depend on how time is cut. A source with a
    ``pacing`` and rate ``as-captured`` takes its frames' times from it instead."""

    index: int
    spec: TrafficSpec
    table: FlowTable
    offset: int
    rate: Rate
    start_ns: int
    emitted: int = 0  # frames that have arrived at the device so far
    lost: int = 0  # offered while the target was down
    stopped: bool = False
    rate_origin_ns: int = 0  # ``emitted`` counts from here at the current rate
    emitted_at_origin: int = 0
    milli: int = 0  # frames per 1000 s at the current rate (set by the engine)
    pacing: Pacing | None = None  # a capture's own timing (``xdptui.sim.replay``)
    writer: Pacing | None = None  # an AF_XDP socket's writer: its kicks' timing (sim/xsk.py)
    via: str | None = None  # an AF_XDP writer's frames leave through this (bound) device

    def __post_init__(self) -> None:
        self.rate_origin_ns = self.start_ns

    @property
    def paced(self) -> Pacing | None:
        """The pacing in force: an AF_XDP writer's kicks, or the capture's timing while the
        rate is ``as-captured``."""
        if self.writer is not None:
            return self.writer
        return self.pacing if self.rate.kind == "captured" else None

    def _paced_until(self, p: Pacing, t: npt.NDArray[np.int64]) -> IntArray:
        e0 = self.emitted_at_origin
        first = p.at(np.array([e0], np.int64))[0]
        dt = t - self.rate_origin_ns
        n = np.where(dt >= 1, p.count_until(first + np.maximum(dt, 1) - 1), e0)
        n = np.maximum(n, e0)
        if self.spec.count is not None:
            n = np.minimum(n, self.spec.count)
        return n.astype(np.int64)

    @property
    def device(self) -> str:
        return self.via or self.spec.to or self.spec.from_ or ""

    @property
    def local(self) -> bool:
        return self.spec.from_ is not None

    def mean_wire_bytes(self) -> float:
        return float(self.table.size.mean()) + WIRE_OVERHEAD

    def emitted_until(self, t: int) -> int:
        """Frames emitted at or before time ``t``."""
        if self.stopped or t <= self.rate_origin_ns or self.milli <= 0:
            return self.emitted_at_origin
        if (p := self.paced) is not None:
            return int(self._paced_until(p, np.array([t], np.int64))[0])
        n = self.emitted_at_origin + (self.milli * (t - self.rate_origin_ns)) // 10**12
        if self.spec.count is not None:
            n = min(n, self.spec.count)
        return n

    def emitted_by(self, t: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``emitted_until`` for many times at once, in exact int64 arithmetic (the product
        milli * dt is split so it cannot overflow)."""
        n0 = self.emitted_at_origin
        if self.stopped or self.milli <= 0:
            return np.full(len(t), n0, np.int64)
        if (p := self.paced) is not None:
            return self._paced_until(p, np.asarray(t, np.int64))
        dt = np.maximum(t - self.rate_origin_ns, 0)
        q, r = np.divmod(dt, 10**6)
        a = self.milli * q
        n: npt.NDArray[np.int64] = (
            n0 + a // 10**6 + ((a % 10**6) * 10**6 + self.milli * r) // 10**12
        )
        if self.spec.count is not None:
            n = np.minimum(n, self.spec.count)
        return n

    def emitted_from(self, t_ref: int, span: int) -> Callable[[npt.NDArray[np.int64]], IntArray]:
        """``emitted_by`` for times in ``[t_ref, t_ref + span]``, cheaper: one multiply per
        time, counted on from ``t_ref`` with the exact remainder there (Python integers)."""
        if (
            self.stopped
            or self.milli <= 0
            or self.milli * (span + 1) >= 2**62
            or self.paced is not None
        ):
            return self.emitted_by
        origin = self.rate_origin_ns
        ref = max(t_ref, origin)
        total = self.milli * (ref - origin)
        n_ref = self.emitted_at_origin + total // 10**12
        rem = total % 10**12
        milli, cap = self.milli, self.spec.count

        def emitted(t: npt.NDArray[np.int64]) -> IntArray:
            n: IntArray = n_ref + (rem + milli * np.maximum(t - ref, 0)) // 10**12
            n = np.where(t <= origin, self.emitted_at_origin, n)
            return np.minimum(n, cap) if cap is not None else n

        return emitted

    def arrival_ns(self, n0: int, n1: int) -> npt.NDArray[np.int64]:
        """Arrival times of frames ``n0 .. n1 - 1`` (all after the rate's origin): frame
        ``origin + k`` arrives at ``ceil((k + 1) * 1e12 / milli)`` ns past the origin."""
        if (p := self.paced) is not None:
            n = np.arange(n0, n1, dtype=np.int64)
            first = p.at(np.array([self.emitted_at_origin], np.int64))[0]
            paced: IntArray = self.rate_origin_ns + 1 + p.at(n) - first
            return paced
        k0 = n0 - self.emitted_at_origin + 1
        scaled = k0 * 10**12
        base, rem = divmod(scaled, self.milli)
        j = np.arange(n1 - n0, dtype=np.int64)
        off = (rem + j * 10**12 + self.milli - 1) // self.milli
        out: npt.NDArray[np.int64] = self.rate_origin_ns + base + off
        return out

    def arrival_of(self, n: int) -> int:
        """``arrival_ns(n, n + 1)[0]`` in Python integers."""
        if self.paced is not None:
            return int(self.arrival_ns(n, n + 1)[0])
        k = n - self.emitted_at_origin + 1
        return self.rate_origin_ns + -(-(k * 10**12) // self.milli)

    def entries(self, n0: int, n1: int) -> npt.NDArray[np.int64]:
        """The flow-table entries (global index) of frames ``n0 .. n1 - 1``."""
        out: npt.NDArray[np.int64] = self.offset + np.arange(n0, n1, dtype=np.int64) % len(
            self.table
        )
        return out


def entry_span(sources: list[Source], device: str) -> tuple[int, int]:
    """The entries of the sources sent to ``device``, from the first to the last ((0, 0):
    none)."""
    mine = [(s.offset, s.offset + len(s.table)) for s in sources if s.spec.to == device]
    if not mine:
        return (0, 0)
    return (min(lo for lo, _ in mine), max(hi for _, hi in mine))


def _flow_values(
    r: Range, flows: int, random: bool, rng: np.random.Generator, what: str
) -> npt.NDArray[np.int64]:
    """Flow i's value of one header range: ``first + i % span`` (pktgen's sequential stepping,
    wrapping at ``last``), or a uniform draw from ``[first, last]`` per flow when ``random``."""
    if r.span < 1:
        raise ValueError(f"{what} range {r.first}-{r.last} is empty (first > last)")
    if random:
        return rng.integers(r.first, r.last, endpoint=True, size=flows, dtype=np.int64)
    return r.first + np.arange(flows, dtype=np.int64) % r.span


def build_flow_table(spec: TrafficSpec, rng: np.random.Generator) -> FlowTable:
    """The flow table of one pktgen-like source (``net/core/pktgen.c``: ``mod_cur_headers``).

    * ``L = lcm(spec.flows, len(spec.sizes))`` entries; entry ``j`` is flow ``j % flows`` with
      size ``sizes[j % len(sizes)]``. ``L > MAX_TABLE_ENTRIES`` raises ``ValueError``.
    * Flow ``i`` takes value ``first + i % span`` of each range (src/dst MAC, src/dst IP,
      src/dst port), like pktgen without ``*_RND`` flags. With ``spec.random`` each flow's values
      are instead drawn uniformly with ``rng``, field by field in that order (deterministic for a
      given seed); the per-frame entry choice of random sources is
      :func:`random_frames_per_entry`.
    * IPv4 only: ethertype 0x0800, IP protocol from :data:`PROTO_NUMBERS`; ICMP flows are echo
      requests whose identifier is the ``src_port`` value. ``vlan`` is ``spec.vlan or 0``. No
      fragments.
    * GSO: entry ``j`` is a GSO super-frame iff ``floor((j+1)*gso) > floor(j*gso)`` (an exact,
      evenly spread share; the table is stretched to a multiple of 20 entries for it). The
      golden-ratio sequence is low-discrepancy, so any window of consecutive entries carries
      close to the requested share, without randomness. The share is realised only as well as
      the table length allows: it is ``count / L`` (with ``L = 1`` the single entry is GSO
      whenever ``gso > 0``, since ``frac(0) = 0``).
    """
    flows = spec.flows
    n_sizes = len(spec.sizes)
    if flows < 1:
        raise ValueError(f"traffic {spec.name!r}: flows must be at least 1, got {flows}")
    if n_sizes < 1:
        raise ValueError(f"traffic {spec.name!r}: needs at least one frame size")
    if spec.proto not in PROTO_NUMBERS:
        raise ValueError(
            f"traffic {spec.name!r}: unknown proto {spec.proto!r} "
            f"(one of {', '.join(PROTO_NUMBERS)})"
        )
    entries = math.lcm(flows, n_sizes)
    if 0.0 < spec.gso < 1.0:
        entries = math.lcm(entries, GSO_GRAIN)  # room for the share at 5 % granularity
    if entries > MAX_TABLE_ENTRIES:
        raise ValueError(
            f"traffic {spec.name!r}: {flows} flows with {n_sizes} sizes need "
            f"lcm({flows}, {n_sizes}) = {entries} table entries, more than the limit of "
            f"{MAX_TABLE_ENTRIES}; choose a flow count and size list whose lcm is smaller "
            f"(e.g. make the flow count a multiple of the number of sizes)"
        )

    values = {
        name: _flow_values(getattr(spec, name), flows, spec.random, rng, name)
        for name in ("src_mac", "dst_mac", "src_ip", "dst_ip", "src_port", "dst_port")
    }
    per_flow = FlowHeaders.make(
        src_mac=values["src_mac"],
        dst_mac=values["dst_mac"],
        ethertype=ETH_P_IP,
        vlan=spec.vlan or 0,
        src_ip=values["src_ip"],
        dst_ip=values["dst_ip"],
        proto=PROTO_NUMBERS[spec.proto],
        src_port=values["src_port"],
        dst_port=values["dst_port"],
        frag=False,
    )
    if spec.proto in _L4_PORTS:
        flow_hash = toeplitz_hash(
            per_flow.src_ip, per_flow.dst_ip, per_flow.src_port, per_flow.dst_port
        )
    else:
        flow_hash = toeplitz_hash(per_flow.src_ip, per_flow.dst_ip)

    j = np.arange(entries, dtype=np.int64)
    flow_of = j % flows
    sizes = np.asarray(spec.sizes, dtype=np.int64)[j % n_sizes]
    # Evenly spread, exact share: entry j is GSO when floor((j + 1) * gso) steps up.
    gso = np.floor((j + 1) * spec.gso + 1e-9) > np.floor(j * spec.gso + 1e-9)
    return FlowTable(
        headers=per_flow.take(flow_of),
        size=sizes,
        gso=gso,
        rss_hash=flow_hash[flow_of],
    )


def frames_per_entry(start: int, stop: int, L: int) -> npt.NDArray[np.int64]:
    """How many frame numbers in ``[start, stop)`` land on each entry ``n % L``.

    For entry ``e`` that is ``ceil((stop - e) / L) - ceil((start - e) / L)``, computed as
    ``(e - start) // L - (e - stop) // L`` with floor division — no loop over frames."""
    if L < 1:
        raise ValueError(f"table length must be at least 1, got {L}")
    if stop < start:
        raise ValueError(f"empty frame range [{start}, {stop})")
    e = np.arange(L, dtype=np.int64)
    return (e - np.int64(start)) // L - (e - np.int64(stop)) // L
