"""Packets packed for a batch: one row per packet, laid out as ``bpf_prog_test_run_xdp()``
lays its frame -- ``XDP_PACKET_HEADROOM`` bytes of headroom, then the frame, then zeros to the
row's width (8-byte aligned) -- with each packet's ``[start, end)`` in its row.

A batch runs on its rows in place (``vm.run_batch`` copies them on the first write into a
packet), so packing once and running many times costs no per-packet Python; the result's
``data_out`` (``data_meta`` to ``data_end``) is a ``Packets`` too, over the batch's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.bpf import memory as mem

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Packets:
    """Rows of ``width`` bytes in ``buf`` (row i at ``i * width``); packet i is
    ``buf[i * width + start[i] : i * width + end[i]]``."""

    buf: U8
    width: int
    start: I64
    end: I64

    @staticmethod
    def from_bytes(packets: list[bytes]) -> Packets:
        """Each frame after ``XDP_PACKET_HEADROOM`` bytes of headroom, rows as wide as the
        longest frame needs."""
        n = len(packets)
        lens = np.fromiter(map(len, packets), dtype=np.int64, count=n)
        longest = int(lens.max()) if n else 0
        width = (mem.XDP_PACKET_HEADROOM + longest + 7) & ~7
        # NumPy's own allocation: huge pages where the kernel offers them (a batch's loads
        # gather one field from every row, a page or so apart).
        buf = np.zeros(n * width, dtype=np.uint8)
        rows = buf.data
        at = mem.XDP_PACKET_HEADROOM
        for p in packets:
            rows[at : at + len(p)] = p
            at += width
        start = np.full(n, mem.XDP_PACKET_HEADROOM, dtype=np.int64)
        return Packets(buf, width, start, start + lens)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def lengths(self) -> I64:
        out: I64 = self.end - self.start
        return out

    def rows(self, start: int, stop: int) -> Packets:
        """Packets ``start`` to ``stop`` (a view of the same rows; all of them: itself)."""
        if start == 0 and stop == len(self):
            return self
        w = self.width
        return Packets(
            self.buf[start * w : stop * w], w, self.start[start:stop], self.end[start:stop]
        )

    def packet(self, i: int) -> bytes:
        """Packet ``i`` as ``bytes``."""
        base = i * self.width
        return self.buf[base + int(self.start[i]) : base + int(self.end[i])].tobytes()

    def to_bytes(self) -> list[bytes]:
        """Every packet as ``bytes`` (one Python object each: for callers that want them)."""
        view = self.buf.data
        base = np.arange(len(self), dtype=np.int64) * self.width
        starts = (base + self.start).tolist()
        ends = (base + self.end).tolist()
        return [view[s:e].tobytes() for s, e in zip(starts, ends, strict=True)]

    @staticmethod
    def concat(parts: list[Packets]) -> Packets:
        """One set of rows from several, each row widened to the widest."""
        if len(parts) == 1:
            return parts[0]
        width = max((p.width for p in parts), default=mem.XDP_PACKET_HEADROOM)
        rows = []
        for p in parts:
            grid = p.buf.reshape(len(p), p.width)
            if p.width < width:
                grid = np.pad(grid, ((0, 0), (0, width - p.width)))
            rows.append(grid)
        buf = np.concatenate(rows).reshape(-1) if rows else np.zeros(0, dtype=np.uint8)
        return Packets(
            buf,
            width,
            np.concatenate([p.start for p in parts]),
            np.concatenate([p.end for p in parts]),
        )
