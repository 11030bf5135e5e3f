"""pktgen-like traffic sources as flow tables: every frame a source emits is one table entry.

A source with ``flows = F`` and ``sizes`` of length ``S`` cycles through ``L = lcm(F, S)``
entries: frame number ``n`` is entry ``n % L``, entry ``j`` carries flow ``j % F`` with size
``sizes[j % S]``. That is pktgen's behaviour (``net/core/pktgen.c``) with ``flows`` flows and a
size that steps through the list one frame at a time, so the whole simulation can work per
entry (counts of frames per entry) instead of per frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import Range, TrafficSpec
from xdptui.sim.hashing import (
    ETH_P_IP,
    IPPROTO_ICMP,
    IPPROTO_IGMP,
    IPPROTO_TCP,
    IPPROTO_UDP,
    FlowHeaders,
    toeplitz_hash,
)

__all__ = [
    "GSO_STEP",
    "MAX_TABLE_ENTRIES",
    "PROTO_NUMBERS",
    "FlowTable",
    "build_flow_table",
    "frames_per_entry",
    "random_frames_per_entry",
]

MAX_TABLE_ENTRIES = 65536
"""The largest flow table (``lcm(flows, len(sizes))``) a source may need."""

GSO_STEP = 0.618033988749895
"""(Kept for compatibility; the GSO assignment is now the exact even spread below.)"""

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

    def __post_init__(self) -> None:
        n = len(self.headers)
        for name, dtype in (("size", np.int64), ("gso", np.bool_), ("rss_hash", np.uint32)):
            arr = np.array(getattr(self, name), dtype=dtype, copy=True)
            if arr.shape != (n,):
                raise ValueError(f"FlowTable.{name} has shape {arr.shape}, expected ({n},)")
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.headers)


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


def random_frames_per_entry(n: int, L: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """For ``random: true`` sources: ``n`` frames spread over ``L`` equally likely entries, as
    one multinomial draw (pktgen's ``F_FLOW_SEQ`` off: each frame picks a flow at random)."""
    if L < 1:
        raise ValueError(f"table length must be at least 1, got {L}")
    if n < 0:
        raise ValueError(f"frame count can't be negative, got {n}")
    return rng.multinomial(n, np.full(L, 1.0 / L)).astype(np.int64)
