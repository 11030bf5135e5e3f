"""NAPI poll sizes as arithmetic, for fast mode (``net/core/dev.c`` ``napi_complete_done`` and
the driver's interrupt moderation, ``rx-usecs``).

An instance's interrupt fires at the first waiting frame but not within ``rx-usecs`` of the
last one; each poll takes at most its weight (64) from the ring's head and a poll that takes
fewer completes. ``napi_pattern`` is the steady state at one arrival rate; ``full_polls``
solves a step's interrupt cycles from the arrival curve by composing each cycle's function of
the previous one; ``water_fill`` shares a saturated CPU among its instances.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from xdptui.sim.splitting import share, take_share
from xdptui.sim.traffic import Source

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pattern:
    """An instance's polls at a steady arrival rate."""

    cycle_ns: float  # mean time from one interrupt to the next
    sizes: tuple[float, ...]  # frames per poll over a stretch of cycles
    drops: float  # frames the ring could not hold, per frame taken
    peak: float  # the most frames waiting at once
    saturated: bool


@lru_cache(maxsize=4096)
def napi_pattern(lam: float, a: float, p: float, itr: int, weight: int, size: int) -> Pattern:
    """The steady state of one NAPI instance fed ``lam`` frames per ns, ``a`` ns per frame and
    ``p`` per poll: the interrupt fires at the first frame but not within ``itr`` of the last
    one; each poll takes min(weight, waiting) frames; a poll that took fewer than ``weight``
    completes. Simulated with fluid arrivals over a few dozen interrupts; the later half is
    what a step tiles."""
    if lam <= 0:
        return Pattern(float("inf"), (), 0.0, 0.0, False)
    horizon = 40 * max(itr, 1.0 / lam, 1.0)
    t = 0.0
    waiting = min(max(lam * itr, 1.0), float(size))
    last_irq = 0.0
    sizes: list[float] = []
    drops = 0.0
    peak = waiting
    irqs = 0
    mark: tuple[float, int, float, int] | None = None
    while t < horizon:
        if mark is None and t >= horizon / 2:
            mark = (t, len(sizes), drops, irqs)
        x = min(float(weight), waiting)
        d = p + a * x
        sizes.append(x)
        waiting = waiting - x + lam * d
        if waiting > size:
            drops += waiting - size
            waiting = float(size)
        peak = max(peak, waiting)
        t += d
        if x >= weight:
            if len(sizes) > 100_000:
                break
            continue
        # napi_complete_done: the next interrupt at the first frame, not before last + itr
        first = t if waiting >= 1.0 else t + (1.0 - waiting) / lam
        nxt = max(first, last_irq + itr)
        waiting += lam * (nxt - t)
        if waiting > size:
            drops += waiting - size
            waiting = float(size)
        peak = max(peak, waiting)
        last_irq = t = nxt
        irqs += 1
    if mark is None or irqs - mark[3] < 1:
        full = float(weight)
        return Pattern(0.0, (full,), max(0.0, 1.0 - 1.0 / max(lam * a, 1e-9)), float(size), True)
    t0, i0, d0, q0 = mark
    kept = tuple(sizes[i0:])
    taken = max(sum(kept), 1e-9)
    return Pattern((t - t0) / (irqs - q0), kept, (drops - d0) / taken, peak, False)


def arrived_fn(src: Source, prefix: IntArray, per_cycle: int):  # type: ignore[no-untyped-def]
    """Frames of ``src`` that reached the queue by each time (queue index space)."""
    L = len(src.table)

    def arrived(t: IntArray) -> IntArray:
        n = src.emitted_by(t)
        out: IntArray = (n // L) * per_cycle + prefix[n % L]
        return out

    return arrived


def first_after(src: Source, t0: int, arrived) -> int:  # type: ignore[no-untyped-def]
    """When the queue's next frame arrives (a coarse search is enough: the interrupt then
    takes what is waiting)."""
    base = int(arrived(np.array([t0]))[0])
    step = max(1, int(1e12 / max(src.milli, 1)))
    t = t0
    for _ in range(64):
        t += step
        if int(arrived(np.array([t]))[0]) > base:
            return t
        step *= 2
    return t


def full_polls(at_j: IntArray, start: int, w: int) -> IntArray:
    """How many full polls each interrupt cycle makes. Cycle k's poll j (j = 0, 1, ...) finds
    at_j[j, k] - begin_k - w j frames waiting, begin_k being where the previous cycle's last
    poll stopped, so each cycle's count is a function of the previous one's: those functions
    (tables over the few possible counts) are composed by doubling, so a step's cycles are
    solved without a loop over them."""
    j1, k = at_j.shape
    steps = w * np.arange(j1, dtype=np.int64)

    def count(avail: IntArray) -> IntArray:
        is_full = avail >= w
        out: IntArray = np.where(is_full.all(axis=-1), j1 - 1, np.argmin(is_full, axis=-1))
        return out

    first = int(count((at_j[:, 0] - start - steps)[None, :])[0])
    if k == 1:
        return np.array([first], np.int64)
    # table[k - 1, f]: full polls of cycle k when cycle k - 1 made f
    table = count(at_j[:, 1:].T[:, None, :] - at_j[:, :-1].T[:, :, None] - steps[None, None, :])
    d = 1
    while d < k - 1:  # table[i] becomes the composition of cycles 1 .. i + 1
        table[d:] = np.take_along_axis(table[d:], table[:-d], axis=1)
        d *= 2
    return np.concatenate(([first], table[:, first]))


def cycle_sizes(full: IntArray, last: IntArray, w: int) -> IntArray:
    """Poll sizes: each cycle's ``full`` polls of ``w`` then its last poll."""
    reps = full + 1
    sizes = np.full(int(reps.sum()), w, np.int64)
    ends = np.cumsum(reps) - 1
    sizes[ends] = last
    return sizes


def round_rate(lam: float) -> float:
    """Arrival rates rounded to 1/64 of a power of two, so patterns are reused."""
    if lam <= 0:
        return 0.0
    m, e = np.frexp(lam)
    return float(np.ldexp(round(float(m) * 64) / 64, int(e)))


def tile(pattern: tuple[float, ...], frames: int, weight: int) -> IntArray:
    """Poll sizes covering ``frames`` frames: the pattern repeated, cut at whole frames."""
    if frames <= 0:
        return np.zeros(0, np.int64)
    per = sum(pattern)
    reps = int(np.ceil(frames / max(per, 1e-9))) + 1
    cum = np.cumsum(np.tile(np.asarray(pattern, dtype=np.float64), reps))
    n = int(np.searchsorted(cum, frames - 1e-9)) + 1
    bounds = np.minimum(np.floor(cum[:n] + 1e-9).astype(np.int64), frames)
    bounds[-1] = frames
    sizes = np.diff(np.concatenate(([0], bounds)))
    return np.minimum(sizes, weight)


def full_sizes(frames: int, weight: int) -> IntArray:
    """A saturated instance's polls: full budgets, and what is left in one last poll."""
    full, rest = divmod(frames, weight)
    out = np.full(full + (1 if rest else 0), weight, np.int64)
    if rest:
        out[-1] = rest
    return out


def even_sizes(frames: int, polls: int, weight: int) -> IntArray:
    polls = max(polls, 1 if frames else 0)
    if not polls:
        return np.zeros(0, np.int64)
    out = np.full(polls, frames // polls, np.int64) + (np.arange(polls) < frames % polls)
    return np.minimum(out, weight)


def spread_over(n: int, sizes: IntArray) -> IntArray:
    total = int(sizes.sum())
    if total <= 0:
        return np.zeros_like(sizes)
    return share(n, sizes.astype(np.float64))


def fifo_take(waiting: IntArray, arriving: IntArray, n: int, rotate: int) -> IntArray:
    """``n`` frames from the ring's head: what was waiting first, then the newest."""
    w_total = int(waiting.sum())
    if n <= w_total:
        return take_share(waiting, n, rotate)
    return waiting + take_share(arriving, n - w_total, rotate)


def water_fill(demand: FloatArray, cost: FloatArray, budget: float) -> FloatArray:
    """Every instance gets up to the same number of frames; find the level at which the time
    spent equals ``budget``."""
    if len(demand) == 1:
        out1: FloatArray = np.minimum(demand, budget / cost)
        return out1
    order = np.argsort(demand, kind="stable")
    d = demand[order]
    cst = cost[order]
    served = np.zeros_like(d)
    remaining = budget
    level_prev = 0.0
    for i in range(len(d)):
        rate = float(cst[i:].sum())
        need = (d[i] - level_prev) * rate
        if need <= remaining:
            remaining -= need
            level_prev = float(d[i])
            served[i] = d[i]
        else:
            served[i:] = level_prev + remaining / rate
            break
    out: FloatArray = np.empty_like(served)
    out[order] = served
    return out
