"""The flow-table entries of all sources, one global index: per-entry header arrays as programs
and hashes see them, and the frames the data path made past the sources' entries
(``xdptui.sim.core.derived``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.sim.columns import compact, filled, once
from xdptui.sim.hashing import FlowHeaders
from xdptui.sim.kconst import WIRE_OVERHEAD

IntArray = npt.NDArray[np.int64]


@dataclass(eq=False)
class Entries:
    """Per-entry header arrays over all sources, as programs and hashes see them (read-only:
    shared, never copied, by checkpoints)."""

    size: IntArray
    wire_bytes: IntArray
    gso: npt.NDArray[np.bool_]
    rss_hash: npt.NDArray[np.uint32]
    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    ethertype: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    headers: FlowHeaders
    # Entries past the sources' are frames the data path made (``xdptui.sim.core.derived``):
    # a program's rewrite, or one frame's outcome of a program that reads state it writes.
    n_source: int = -1  # -1: every entry comes from a source
    derived: tuple[tuple[bytes, int, bool], ...] = ()  # (frame bytes, size, GSO) of those
    # Replayed captures: (first entry, the frames' bytes as captured) per capture source.
    captured: tuple[tuple[int, tuple[bytes, ...]], ...] = ()
    # Lazily built, pure functions of the entries (frame bytes, their index): shared.
    cache: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.size)

    @classmethod
    def over(
        cls,
        headers: FlowHeaders,
        size: IntArray,
        gso: npt.NDArray[np.bool_],
        rss_hash: npt.NDArray[np.uint32],
        **extra: Any,
    ) -> Entries:
        """Entries whose header fields are ``headers``' own (read-only) arrays; the wire size
        adds the preamble, gap and FCS."""
        size, gso, rss_hash = compact(size), compact(gso), compact(rss_hash)
        wire = (
            filled(len(size), size[0] + WIRE_OVERHEAD, size.dtype)
            if once(size)
            else compact(size + WIRE_OVERHEAD)
        )
        return cls(
            size=size,
            wire_bytes=wire,
            gso=gso,
            rss_hash=rss_hash,
            src_mac=headers.src_mac,
            dst_mac=headers.dst_mac,
            ethertype=headers.ethertype,
            src_ip=headers.src_ip,
            dst_ip=headers.dst_ip,
            proto=headers.proto,
            src_port=headers.src_port,
            dst_port=headers.dst_port,
            headers=headers,
            **extra,
        )

    @property
    def sources_end(self) -> int:
        """Entries below this come from the traffic sources' flow tables."""
        return len(self) if self.n_source < 0 else self.n_source

    def __deepcopy__(self, memo: dict[int, Any]) -> Entries:
        return self
