"""Frames in flight as values: a set of rows (flow-table entry, frame count) and the poll they
belong to.

In exact mode a row is one frame and rows are in ring order; in fast mode a row is every frame
of one entry that a step's polls handled. Every kernel rule in the core is written once over
rows, so both modes run the same code (docs/design.md, "One datapath, two granularities").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
SMALL = 256  # arrays up to this long: Python sets beat NumPy's sorting


@dataclass(frozen=True, eq=False)
class Rows:
    """Frames as (entry, count) rows; ``ordered`` rows are single frames (count 1 each) in
    ring order."""

    entry: IntArray
    count: IntArray
    ordered: bool = False
    ident: IntArray | None = None  # exact mode: each frame's source << 40 | sequence number
    time: IntArray | None = None  # exact mode: when each became ready (None: when handed on)

    def __deepcopy__(self, memo: dict[int, Any]) -> Rows:
        return self  # a value: nothing changes its arrays once made, so copies share it

    @staticmethod
    def frames(
        entry: IntArray, ident: IntArray | None = None, time: IntArray | None = None
    ) -> Rows:
        return Rows(entry, np.ones(len(entry), np.int64), True, ident, time)

    @staticmethod
    def counted(entry: IntArray, count: IntArray, total: int) -> Rows:
        """Unordered rows whose total is known already (made by the thousand a step: no
        dataclass ``__init__``, no sum taken later)."""
        r = object.__new__(Rows)
        r.__dict__.update(
            entry=entry, count=count, ordered=False, ident=None, time=None, _count_sum=total
        )
        return r

    @staticmethod
    def empty() -> Rows:
        z = np.zeros(0, np.int64)
        return Rows(z, z, True)

    def __len__(self) -> int:
        return len(self.entry)

    @property
    def total(self) -> int:
        """The frames the rows hold (ordered rows: one each, no sum to take)."""
        if self.ordered:
            return len(self.entry)
        return self._count_sum

    @cached_property
    def _count_sum(self) -> int:
        return int(self.count.sum())

    def where(self, mask: BoolArray) -> Rows:
        return Rows(
            self.entry[mask],
            self.count[mask],
            self.ordered,
            self.ident[mask] if self.ident is not None else None,
            self.time[mask] if self.time is not None else None,
        )

    def slice(self, start: int, end: int) -> Rows:
        return Rows(
            self.entry[start:end],
            self.count[start:end],
            self.ordered,
            self.ident[start:end] if self.ident is not None else None,
            self.time[start:end] if self.time is not None else None,
        )

    def head(self, n: int) -> Rows:
        """The first ``n`` frames (ordered rows), or ``n`` frames spread over the rows in
        proportion (aggregated rows; remainders to the first rows)."""
        if n >= self.total:
            return self
        if self.ordered:
            return self.slice(0, max(n, 0))
        return Rows(self.entry, _spread(self.count, n), False)

    def minus(self, other: Rows) -> Rows:
        """Rows left after taking ``other`` (a ``head`` of these rows)."""
        if self.ordered:
            return self.slice(len(other), len(self))
        return Rows(self.entry, self.count - other.count, False)

    def concat(self, other: Rows) -> Rows:
        """These rows and ``other`` together, in frame order when both are ordered."""
        if not len(self):
            return other
        a, b = self, other
        if a.ordered and a.ident is not None and b.ident is not None:
            order = np.argsort(np.concatenate((a.ident, b.ident)), kind="stable")
        else:
            order = np.arange(len(a) + len(b))

        def cat(x: IntArray | None, y: IntArray | None) -> IntArray | None:
            return np.concatenate((x, y))[order] if x is not None and y is not None else None

        return Rows(
            np.concatenate((a.entry, b.entry))[order],
            np.concatenate((a.count, b.count))[order],
            a.ordered,
            cat(a.ident, b.ident),
            cat(a.time, b.time),
        )

    def bytes(self, size: IntArray) -> int:
        return int(self.count @ size[self.entry]) if len(self) else 0


def distinct(values: IntArray) -> list[int]:
    """``np.unique(values)`` as Python ints (for a poll's few dozen frames a set is cheaper)."""
    if len(values) <= SMALL:
        return sorted(set(values.tolist()))
    out: list[int] = np.unique(values).tolist()
    return out


def having(rows: Rows, values: IntArray, present: list[int], v: int) -> Rows:
    """``rows.where(values == v)`` (``present``: ``distinct(values)``), without a mask when
    every row or none has ``v``."""
    if v not in present:
        return rows.slice(0, 0)
    if len(present) == 1:
        return rows
    return rows.where(values == v)


def _spread(count: IntArray, n: int) -> IntArray:
    """``n`` frames out of ``count`` in proportion, remainders to the first rows with room."""
    total = int(count.sum())
    if total <= 0 or n <= 0:
        return np.zeros_like(count)
    take = count * n // total
    rem = n - int(take.sum())
    if rem:
        room = np.flatnonzero(count > take)
        take[room[:rem]] += 1
    return take


@dataclass
class PollShape:
    """What a batch of polls looked like per poll: for each bulk class (a redirect target, or
    the frames a round-robin bond places), how many frames each poll sent its way, and the
    devmap key of the first of them (whose egress program the bulk runs). Exact mode has one
    poll; fast mode derives the matrix from contiguous frame ranges (``xdptui.sim.fast``)."""

    polls: int
    bursts: int = 1  # interrupts behind those polls (each starts a burst of polls)
    classes: dict[int, IntArray] = field(default_factory=dict)  # class -> frames per poll
    first_key: dict[int, IntArray] = field(default_factory=dict)  # class -> key per poll
    times: IntArray | None = None  # when each poll ran (NAPI's loop; None: not known)
    # a balance-rr bond's frames each poll sent out of the receiving slave (NAPI's loop,
    # whose per-CPU counter runs through every poll of the CPU in time order)
    rr_here: IntArray | None = None
