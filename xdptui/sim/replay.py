"""A replayed capture as a traffic source (DESIGN, "Traffic from a capture").

Every captured frame is a flow-table entry of its own, with its bytes exactly as captured: a
real program reads them (``xdptui.sim.core.derived.frame_bytes``), and the header fields the
rest of the data path reads -- RSS, the bond's xmit hash, built-in programs -- are parsed out
of them (``xdp_buff.parse_frames``). Frame ``n`` of the source is entry ``n % N``, as for any
source, so a capture replays in order and, with ``loop``, again from its first frame.

Pacing is the source's rate, or ``as-captured``: frame ``n`` then arrives as far after the
source's first frame as it was captured after it (nanoseconds); a loop restarts one mean gap
after the last frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import TrafficSpec
from xdptui.pcap import read_capture
from xdptui.sim.core.xdp_buff import parse_frames
from xdptui.sim.hashing import FlowHeaders, toeplitz_hash_bytes
from xdptui.sim.traffic import FlowTable

IntArray = npt.NDArray[np.int64]

ETH_P_IPV6 = 0x86DD
_L4 = (6, 17)  # TCP, UDP: the IPv6 4-tuple hash (other next headers: the address pair)


@dataclass(frozen=True, eq=False)
class CapturePacing:
    """Frame ``n``'s capture time, ``at(n) = (n // N) * period + offset[n % N]``, and how
    many frames are captured at or before a time (the inverse)."""

    offset: IntArray  # ns after the first frame, non-decreasing
    period: int  # a loop's length: the span plus one mean gap (0: no loop)
    mean_pps: float

    @property
    def still(self) -> bool:
        """Every frame at one instant: no pace to loop at."""
        return int(self.offset[-1]) == 0

    def at(self, n: IntArray) -> IntArray:
        size = len(self.offset)
        if self.period <= 0:
            out: IntArray = self.offset[np.minimum(n, size - 1)]
            return out
        looped: IntArray = (n // size) * self.period + self.offset[n % size]
        return looped

    def count_until(self, x: IntArray) -> IntArray:
        size = len(self.offset)
        if self.period <= 0:
            out: IntArray = np.searchsorted(self.offset, x, side="right").astype(np.int64)
            return out
        loops, rest = np.divmod(x, self.period)
        counted: IntArray = loops * size + np.searchsorted(self.offset, rest, side="right")
        return counted


def capture_pacing(times_ns: tuple[int, ...], loop: bool) -> CapturePacing:
    t = np.asarray(times_ns, dtype=np.int64)
    offset = t - t[0]
    offset.flags.writeable = False
    span = int(offset[-1])
    n = len(offset)
    gap = span // (n - 1) if n > 1 else 0
    period = span + max(gap, 1) if loop else 0
    mean = n * 1e9 / (period if loop else max(span, 1))
    if span == 0:
        mean = n * 1e9  # one instant: every frame in its first nanosecond (never looped)
    return CapturePacing(offset, period, mean)


def _ipv6_rss(frames: list[bytes], etype: npt.NDArray[np.uint16]) -> dict[int, int]:
    """The RSS hash of the IPv6 frames (untagged or behind one VLAN tag), by frame index."""
    four: list[tuple[int, bytes]] = []
    two: list[tuple[int, bytes]] = []
    for i in np.flatnonzero(etype == ETH_P_IPV6).tolist():
        d = frames[i]
        ip = 18 if d[12:14] in (b"\x81\x00", b"\x88\xa8") else 14
        if len(d) < ip + 40:
            continue
        addrs = d[ip + 8 : ip + 40]
        nxt = d[ip + 6]
        if nxt in _L4 and len(d) >= ip + 44:
            four.append((i, addrs + d[ip + 40 : ip + 44]))
        else:
            two.append((i, addrs))
    out: dict[int, int] = {}
    for group in (four, two):
        if group:
            rows = np.frombuffer(b"".join(b for _, b in group), np.uint8).reshape(len(group), -1)
            for (i, _), h in zip(group, toeplitz_hash_bytes(rows).tolist(), strict=True):
                out[i] = h
    return out


def capture_flow_table(spec: TrafficSpec) -> tuple[FlowTable, CapturePacing]:
    """The flow table of a source replaying ``spec.pcap``: one entry per captured frame,
    its headers and RSS hash parsed from its bytes; and the capture's own pacing."""
    assert spec.pcap is not None
    cap = read_capture(spec.pcap)
    frames = list(cap.frames)
    p = parse_frames(frames)
    rss = p.rss_hash.copy()
    for i, h in _ipv6_rss(frames, p.ethertype).items():
        rss[i] = h
    headers = FlowHeaders(
        src_mac=p.src_mac,
        dst_mac=p.dst_mac,
        ethertype=p.ethertype,
        vlan=p.vlan,
        src_ip=p.src_ip,
        dst_ip=p.dst_ip,
        proto=p.proto,
        src_port=p.src_port,
        dst_port=p.dst_port,
        frag=p.frag,
    )
    table = FlowTable(
        headers=headers,
        size=np.array([len(f) for f in frames], np.int64),
        gso=np.zeros(len(frames), bool),
        rss_hash=rss,
        frames=cap.frames,
    )
    return table, capture_pacing(cap.times_ns, spec.loop)
