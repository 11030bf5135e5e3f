"""Integer bookkeeping for batches: split counts proportionally without losing a frame.

Frames are counted per (row, flow-table entry). When only part of a row is served, dropped or
kept, the split must be exact in integers (counters add up) and deterministic. These helpers do
it with a handful of NumPy operations whatever the number of frames.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def split_rows(x: IntArray, take: IntArray, rotate: int = 0) -> IntArray:
    """For a [K, E] count matrix and per-row totals ``take`` (each <= the row's sum), return a
    matrix y <= x with row sums exactly ``take``, proportional to x. Remainders go to the
    entries that still have frames, starting at column ``rotate`` so no entry is favoured."""
    totals = x.sum(axis=1)
    if not np.any(take):
        return np.zeros_like(x)
    full = take >= totals
    if np.all(full):
        return x.copy()
    safe = np.where(totals > 0, totals, 1)
    y = (x * (take / safe)[:, None]).astype(np.int64)
    np.minimum(y, x, out=y)
    rem = take - y.sum(axis=1)
    if np.any(rem > 0):
        avail = x > y
        if rotate:
            shift = rotate % x.shape[1]
            rolled = np.roll(avail, -shift, axis=1)
            rank = np.cumsum(rolled, axis=1)
            extra = rolled & (rank <= rem[:, None])
            y += np.roll(extra, shift, axis=1)
        else:
            rank = np.cumsum(avail, axis=1)
            y += avail & (rank <= rem[:, None])
    y[full] = x[full]
    return y


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
