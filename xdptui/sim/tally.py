"""Aggregated tracepoint hits (``include/trace/events/xdp.h``) and per-CPU statistics."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.sim.table import Field, Row, Table


@dataclass
class XmitTally:
    """``xdp:xdp_devmap_xmit`` for one (from, to) pair: hits are bulk flushes; ``err``
    counts flushes whose ``ndo_xdp_xmit`` returned an error (xdp-monitor's drv_err)."""

    sent: int = 0
    drops: int = 0
    err: int = 0
    flushes: int = 0
    egress_drops: int = 0  # of the drops, those the devmap egress program made


class BulkTally(Row):
    """One per-CPU bulk queue (``struct xdp_dev_bulk_queue``) toward a device: a row of the
    tracepoints' table of them, one per (CPU, from, to) (``Tracepoints.bq``)."""

    frames = Field[int](0)
    flushes = Field[int](0)
    egress_drops = Field[int](0)  # of its frames, those the egress program dropped at flush
    last_bulk = Field[float](0.0)  # frames in its last flush (fast mode: mean over the last step)
    program = Field[str]("")  # the first enqueuer's egress program at its last flush ("" = none)
    fill = Field[int](0)  # exact mode: frames in it right now (only mid-poll is it non-empty)

    __slots__ = ()


@dataclass
class BulkTx:
    """``xdp:xdp_bulk_tx`` summed: frames a driver's XDP_TX bulk sent and dropped."""

    sent: int = 0
    drops: int = 0

    def __iadd__(self, sent_drops: tuple[int, int]) -> BulkTx:
        self.sent += sent_drops[0]
        self.drops += sent_drops[1]
        return self


@dataclass
class Tracepoints:
    exception: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    redirect_err: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    # xdp:xdp_bulk_tx by (device, errno name or ""): [frames sent, frames dropped]
    bulk_tx: dict[tuple[str, str], BulkTx] = field(default_factory=lambda: defaultdict(BulkTx))
    redirect: int = 0  # xdp:xdp_redirect hits (one per successfully enqueued input frame)
    devmap_xmit: dict[tuple[str, str], XmitTally] = field(default_factory=dict)
    # the per-CPU bulk queues (xdp_dev_bulk_queue) and each one's row, by (cpu, from, to)
    bulk: Table[BulkTally] = field(default_factory=lambda: Table.of(BulkTally, ()))
    bulk_at: dict[tuple[int, str, str], int] = field(default_factory=dict)

    def xmit(self, src: str, dst: str) -> XmitTally:
        row = self.devmap_xmit.get((src, dst))
        if row is None:
            row = self.devmap_xmit[(src, dst)] = XmitTally()
        return row

    def bq(self, cpu: int, src: str, dst: str) -> BulkTally:
        """CPU ``cpu``'s bulk queue from ``src`` toward ``dst`` (made at its first use)."""
        key = (cpu, src, dst)
        i = self.bulk_at.get(key)
        if i is None:
            self.bulk_at[key] = len(self.bulk)
            return self.bulk.add_row({})
        return self.bulk[i]

    def bulk_queue(self, cpu: int, src: str, dst: str) -> BulkTally | None:
        """That bulk queue if it was ever used."""
        i = self.bulk_at.get((cpu, src, dst))
        return None if i is None else self.bulk[i]

    def bulk_queues(self) -> list[tuple[tuple[int, str, str], BulkTally]]:
        """Every bulk queue ever used, by (cpu, from, to)."""
        return [(key, self.bulk[i]) for key, i in sorted(self.bulk_at.items())]


@dataclass
class CpuStats:
    """What each CPU did: NAPI busy time and polls (``net_rx_action``)."""

    busy_ns: npt.NDArray[np.float64]
    polls: npt.NDArray[np.int64]

    @staticmethod
    def make(n: int) -> CpuStats:
        return CpuStats(np.zeros(n), np.zeros(n, dtype=np.int64))
