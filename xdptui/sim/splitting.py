"""Integer bookkeeping for batches: split counts proportionally without losing a frame.

Frames are counted per (row, flow-table entry). When only part of a row is served, dropped or
kept, the split must be exact in integers (counters add up) and deterministic. These helpers do
it with a handful of NumPy operations whatever the number of frames.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def share(total: int, weights: npt.NDArray[np.float64], rotate: int = 0) -> IntArray:
    """Split an integer ``total`` over buckets in proportion to ``weights`` (largest remainder;
    ties go to the first bucket at or after ``rotate``, so repeated small splits stay fair)."""
    wsum = float(weights.sum())
    if total <= 0 or wsum <= 0:
        return np.zeros(len(weights), dtype=np.int64)
    exact = weights * (total / wsum)
    base = np.floor(exact).astype(np.int64)
    rem = total - int(base.sum())
    if rem > 0:
        n = len(weights)
        shift = rotate % n if n else 0
        frac = np.roll(exact - base, -shift)
        order = (np.argsort(-frac, kind="stable") + shift) % n
        base[order[:rem]] += 1
    return base


def take_rows(counts: IntArray, n: IntArray, rotate: int = 0) -> IntArray:
    """For every row of a matrix at once, ``n[i]`` of row ``i``'s frames, in
    proportion, the remainders to the columns that still have frames, from the ``rotate``-th
    such column on."""
    total = counts.sum(axis=1)
    n = np.minimum(np.maximum(n, 0), total)
    take: IntArray = counts * n[:, None] // np.maximum(total, 1)[:, None]
    rem = n - take.sum(axis=1)
    if not rem.any():
        return take
    room = counts > take
    n_room = room.sum(axis=1)
    rank = np.cumsum(room, axis=1) - 1
    shifted = (rank - rotate) % np.maximum(n_room, 1)[:, None]
    take += (room & (shifted < rem[:, None])).astype(np.int64)
    return take


def within_runs(length: IntArray) -> IntArray:
    """For runs of ``length[k]`` elements laid end to end, each element's index in its run."""
    first = np.cumsum(length) - length
    out: IntArray = np.arange(int(length.sum()), dtype=np.int64) - np.repeat(first, length)
    return out


def spans(start: IntArray, length: IntArray) -> IntArray:
    """The indices ``start[k] .. start[k] + length[k] - 1`` for every k, in order."""
    out: IntArray = np.repeat(start, length) + within_runs(length)
    return out
