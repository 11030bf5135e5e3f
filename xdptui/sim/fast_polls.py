"""NAPI poll sizes as arithmetic, for fast mode (``net/core/dev.c`` ``napi_complete_done`` and
the driver's interrupt moderation, ``rx-usecs``).

An instance's interrupt fires at the first waiting frame but not within ``rx-usecs`` of the
last one; each poll takes at most its weight (64) from the ring's head and a poll that takes
fewer completes. ``napi_pattern`` is the steady state at one arrival rate; ``cycles`` solves a
step's interrupt cycles from the arrival curve for many instances at once (each cycle's number
of full polls is a function of the previous one's); ``water_fill`` shares a saturated CPU among
its instances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from xdptui.sim.splitting import share, within_runs

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


@dataclass
class Cycles:
    """A step's interrupt cycles for many instances at once (``cycles``): per instance the
    frames served, ring-full drops, the most frames waiting, the next interrupt and the
    number of interrupts; the polls' sizes flat, instance after instance (``owner``)."""

    served: IntArray
    drops: IntArray
    peak: IntArray
    next_irq: IntArray
    bursts: IntArray
    sizes: IntArray
    owner: IntArray
    times: FloatArray  # each poll's start: its interrupt, then one full poll's time apart


def cycles(
    nxt: IntArray,
    itr: IntArray,
    weight: IntArray,
    size: IntArray,
    d64: FloatArray,
    start: IntArray,
    t1: int,
    arrived: Callable[[IntArray, IntArray], IntArray],
) -> Cycles:
    """Interrupts every ``rx-usecs`` from ``nxt`` on, for each instance: cycle k's first poll
    at tau_k takes what arrived since the previous cycle's last poll began, ``weight`` at
    most; a full poll is followed by another one full poll's time (``d64``) later, which takes
    what is waiting then, and so on; the first poll that is not full completes
    (``napi_complete_done``). ``arrived(i, t)`` is instance i's queue position reached by time
    t; ``start`` the position of its oldest waiting frame. Instances' cycles are laid end to
    end, so every array operation covers all of them."""
    m = len(nxt)
    K = np.maximum((t1 - 1 - nxt) // np.maximum(itr, 1) + 1, 0)
    owner = np.repeat(np.arange(m, dtype=np.int64), K)
    first_row = np.concatenate(([0], np.cumsum(K)[:-1])).astype(np.int64)
    k = within_runs(K)
    tau = nxt[owner] + itr[owner] * k
    at_tau = arrived(owner, tau)
    is_first = np.zeros(len(owner), bool)
    is_first[first_row[K > 0]] = True
    prev = np.where(is_first, start[owner], np.roll(at_tau, 1))
    most = np.zeros(m, np.int64)
    np.maximum.at(most, owner, at_tau - prev)
    w = weight
    jmax = np.minimum(1 + size // np.maximum(w, 1), most // np.maximum(w, 1) + 2)
    J = int(jmax.max(initial=1))
    j = np.arange(J + 1, dtype=np.int64)
    # only a cycle whose arrivals could fill a poll can have more than one: the others'
    # later polls never happen, so their arrival curve past tau is not needed
    burst = np.flatnonzero(at_tau - prev >= w[owner])
    at_j = np.repeat(at_tau[:, None], J + 1, axis=1)
    if len(burst):
        ob = owner[burst]
        later = tau[burst, None] + (d64[ob, None] * j[None, 1:]).astype(np.int64)
        at_j[burst, 1:] = arrived(np.repeat(ob, J), later.ravel()).reshape(len(burst), J)
    full = np.zeros(len(owner), np.int64)
    if len(burst):
        full[burst] = _full_polls(at_j, burst, is_first, start[owner], w[owner], J)
    last_start = np.take_along_axis(at_j, full[:, None], axis=1)[:, 0]
    begin = np.where(is_first, start[owner], np.roll(last_start, 1))
    last = np.maximum(np.minimum(last_start - begin - w[owner] * full, w[owner]), 0)
    reps = full + 1
    sizes = np.repeat(w[owner], reps)
    sizes[np.cumsum(reps) - 1] = last
    poll_owner = np.repeat(owner, reps)
    within = np.arange(len(sizes)) - np.repeat(np.cumsum(reps) - reps, reps)
    times = np.repeat(tau, reps) + within * d64[poll_owner]
    served = np.bincount(poll_owner, weights=sizes, minlength=m).astype(np.int64)
    drops = np.bincount(
        owner, weights=np.maximum(at_tau - begin - size[owner], 0), minlength=m
    ).astype(np.int64)
    peak = np.zeros(m, np.int64)
    np.maximum.at(peak, owner, at_tau - begin)
    return Cycles(served, drops, peak, nxt + itr * K, K, sizes, poll_owner, times)


def _full_polls(
    at_j: IntArray,
    burst: IntArray,
    is_first: npt.NDArray[np.bool_],
    start: IntArray,
    w: IntArray,
    J: int,
) -> IntArray:
    """How many full polls each bursting cycle makes. Poll j of cycle r finds
    at_j[r, j] - begin_r - w j frames waiting, begin_r being where the previous cycle's last
    poll began: so a cycle's count is a function of the previous cycle's (a table over the few
    possible counts), and a cycle that is not bursting makes none."""
    j = np.arange(J + 1, dtype=np.int64)
    a = at_j[burst]
    wb = w[burst, None, None]
    steps = w[burst, None] * j[None, :]
    prev_at = at_j[burst - 1]  # (a first row's own ``prev`` is its start: constant below)
    avail = a[:, None, :] - prev_at[:, :, None] - steps[:, None, :]
    is_full = avail >= wb
    table = np.where(is_full.all(axis=-1), J, np.argmin(is_full, axis=-1))
    first = is_first[burst]
    if first.any():
        f0 = a[first] - start[burst[first], None] - steps[first]
        ok = f0 >= w[burst[first], None]
        table[first] = np.where(ok.all(axis=-1), J, np.argmin(ok, axis=-1))[:, None]
    # the previous cycle, when it is bursting too (else it made no full poll)
    pos = np.searchsorted(burst, burst - 1)
    prev = np.where((pos < len(burst)) & (burst[np.minimum(pos, len(burst) - 1)] == burst - 1),
                    pos, -1)  # fmt: skip
    prev[first] = -1
    return _solve(table, prev)


def _solve(table: IntArray, prev: IntArray) -> IntArray:
    """f_i = table[i, f_prev[i]] (f = 0 where ``prev`` is -1): iterate to the fixed point, which
    is the solution; if a few rounds don't reach it, jump pointers (compose each row's function
    with its predecessor's, doubling the reach every round)."""
    rows = np.arange(len(table))
    has = prev >= 0
    g = table[:, 0].copy()
    for _ in range(6):
        new = np.where(has, table[rows, np.where(has, g[prev], 0)], table[:, 0])
        if np.array_equal(new, g):
            return g
        g = new
    t = table.copy()
    p = prev.copy()
    while (p >= 0).any():
        live = np.flatnonzero(p >= 0)
        t[live] = np.take_along_axis(t[live], t[p[live]], axis=1)
        p[live] = p[p[live]]
    out: IntArray = t[:, 0]
    return out


def first_after(emitted_by: Callable[[IntArray], IntArray], milli: int, t0: int) -> int:
    """When the next frame counted by ``emitted_by`` arrives after ``t0`` (a coarse search is
    enough: the interrupt then takes what is waiting)."""
    base = int(emitted_by(np.array([t0]))[0])
    step = max(1, int(1e12 / max(milli, 1)))
    t = t0
    for _ in range(64):
        t += step
        if int(emitted_by(np.array([t]))[0]) > base:
            return t
        step *= 2
    return t


def round_rates(lam: FloatArray) -> FloatArray:
    """Arrival rates rounded to 1/64 of a power of two, so patterns are reused."""
    m, e = np.frexp(lam)
    out: FloatArray = np.where(lam > 0, np.ldexp(np.round(m * 64) / 64, e), 0.0)
    return out


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
