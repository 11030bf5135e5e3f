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


def take_share(counts: IntArray, n: int, rotate: int = 0) -> IntArray:
    """``n`` of the frames ``counts`` holds, in proportion, remainders to the entries that
    still have frames from position ``rotate`` on."""
    total = int(counts.sum())
    if n >= total:
        return counts.copy()
    if n <= 0:
        return np.zeros_like(counts)
    take: IntArray = counts * n // total
    rem = n - int(take.sum())
    if rem:
        room = np.flatnonzero(counts > take)
        pick = room[(rotate + np.arange(rem)) % len(room)]
        take[pick] += 1
    return take
