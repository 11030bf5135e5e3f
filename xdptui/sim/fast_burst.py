"""A NIC's transmit rings fed in bursts, for fast mode: when a step's frames are more than the
wire sends, when they come matters.

A NAPI instance between interrupts sends nothing; in a burst it polls back to back and each
poll puts its frames into the TX rings at once (XDP_TX into its own ring, a devmap flush into
its CPU's; exact mode applies a poll at its start). A 256-slot ring holds ~17 us of a 10G wire,
less than an ``rx-usecs`` wait: in a burst the rings fill and refuse frames, between bursts
they run dry and the wire idles. A fluid spread over the step sees neither.

So where the step's fluid says the wire is saturated, the wire is played over the step's polls.
Each feeding instance's polls (``Feed``: their times and sizes -- the interrupt cycles its plan
solved, a steady instance's NAPI loop played on from where the last such step left it, or
evenly spread when it polls back to back) carry its share of each ring's offered frames; each
offer takes what its ring has room for at that instant; the wire sends the queued frames one
after the other, in the order they were queued, across all rings (``Exact.departures``). One
Python step per poll of a feeding instance, never per frame.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.sim.datapath import Datapath
from xdptui.sim.dev.netdev import MODE_DRV, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue
from xdptui.sim.kconst import XDP_REDIRECT, XDP_TX
from xdptui.sim.shared import deepcopy_fields

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SPREAD = 16  # frames per offer where no feeding instance is known (a devmap bulk)

Sched = tuple[FloatArray, FloatArray]  # each poll's start time and size
Schedule = Sched | Callable[[], Sched | None]


@dataclass
class Feed:
    """One NAPI instance's polls this step: per class the frames it took (``take``), when
    each poll started and how many frames it took (None: spread evenly over the step)."""

    __deepcopy__ = deepcopy_fields

    dev: NetDev
    queue: int
    cpu: int
    take: IntArray
    polls: int
    sched: Schedule | None


def steady_schedule(
    rxq: RxQueue,
    lam: float,
    a: float,
    p: float,
    itr: int,
    weight: int,
    size: int,
    other: float,
    waiting: float,
    nxt: int,
    t0: int,
    t1: int,
) -> Callable[[], Sched | None]:
    """A steady instance's polls over the step, worked out only if a saturated wire needs
    them (``napi_schedule``): from where the last such step left them (each instance keeps its
    own phase: two instances' bursts drift apart as their CPUs' other work differs), else from
    the plan's next interrupt. Each poll is stretched by the share ``other`` of its CPU that
    the CPU's other instances' polls take (``net_rx_action`` polls them round-robin)."""
    done: list[Sched | None] = []

    def make() -> Sched | None:
        if done:
            return done[0]
        k = 1.0 / (1.0 - other)
        state = rxq.fast_burst
        if state is not None and state[0] == t0:
            start = (state[1], state[2], state[3])
        else:
            start = (float(nxt), waiting, float(nxt))
        out, rxq.fast_burst = napi_schedule(lam, a * k, p * k, itr, weight, size, start, t1)
        done.append(out)
        return out

    return make


def napi_schedule(
    lam: float,
    a: float,
    p: float,
    itr: int,
    weight: int,
    size: int,
    start: tuple[float, float, float],
    t1: int,
) -> tuple[Sched | None, tuple[int, float, float, float]]:
    """One instance's polls up to ``t1`` from ``start`` (a poll's time, the frames waiting
    for it, the last interrupt), fed ``lam`` frames per ns, as ``napi_pattern`` plays them:
    each poll takes min(weight, waiting) frames and lasts ``p + a x``; one that took fewer
    completes and the next interrupt comes at the first frame, but not within ``itr`` of the
    last one. Returns the polls and where they stand at ``t1``."""
    t, w, last_irq = start
    times: list[float] = []
    sizes: list[float] = []
    w = min(w, float(size))
    while t < t1 and lam > 0:
        x = min(float(weight), w)
        times.append(t)
        sizes.append(x)
        d = p + a * x
        w = min(w - x + lam * d, float(size))
        t += d
        if x >= weight:
            continue
        first = t if w >= 1.0 else t + (1.0 - w) / lam
        irq = max(first, last_irq + itr)
        w = min(w + lam * (irq - t), float(size))
        last_irq = t = irq
    state = (t1, t, w, last_irq)
    if not times:
        return None, state
    return (np.array(times, np.float64), np.array(sizes, np.float64)), state


def _even(t0: int, t1: int, n: int) -> Sched:
    """``n`` polls evenly over the step (an instance that polls back to back)."""
    n = max(n, 1)
    times = (t0 + (np.arange(n) + 0.5) * ((t1 - t0) / n)).astype(np.float64)
    return times, np.ones(n)


def ring_offers(
    dp: Datapath, nic: Nic, feeds: list[Feed], offered: IntArray, t0: int, t1: int
) -> tuple[FloatArray, IntArray, FloatArray]:
    """Each ring's offered frames as offers at the polls of the instances that feed it: an
    instance's XDP_TX goes to its own ring (``xdp_tx_ring``), its redirects into ``nic`` to the
    ring of its CPU (``ndo_xdp_xmit``); each instance's share of a ring's frames is what its
    classes send there, spread over its polls by their sizes. Returns (time, ring, frames),
    in time order."""
    R = len(offered)
    rep = dp.classes.rep
    parts: list[tuple[Feed, int, float]] = []
    for f in feeds:
        c = dp.compiled.get(f.dev.name)
        if c is None or c.mode != MODE_DRV:
            continue
        act = c.act[rep]
        if f.dev is nic and c.master is None:
            n_tx = float(f.take @ (act == XDP_TX))
            ring = nic.xdp_tx_ring(f.cpu, f.queue)
            if n_tx > 0 and 0 <= ring < R:
                parts.append((f, ring, n_tx))
        red = (act == XDP_REDIRECT) & (c.target[rep] == nic.ifindex) & (c.err[rep] == 0)
        n_red = float(f.take @ red)
        ring = int(nic.ring_of_cpu[f.cpu]) if nic.xdp_rings else -1
        if n_red > 0 and 0 <= ring < R:
            parts.append((f, ring, n_red))
    known = np.zeros(R)
    for _, ring, n in parts:
        known[ring] += n
    ts: list[FloatArray] = []
    rs: list[IntArray] = []
    ks: list[FloatArray] = []
    for f, ring, n in parts:
        if not offered[ring]:
            continue
        sched = f.sched() if callable(f.sched) else f.sched
        times, sizes = sched if sched is not None else _even(t0, t1, f.polls)
        tot = float(sizes.sum())
        if tot <= 0:
            continue
        ts.append(times)
        rs.append(np.full(len(times), ring, np.int64))
        ks.append(sizes * (n / tot) * (offered[ring] / known[ring]))
    for ring in np.flatnonzero((offered > 0) & (known <= 0)).tolist():
        times, sizes = _even(t0, t1, min(-(-int(offered[ring]) // SPREAD), 1 << 14))
        ts.append(times)
        rs.append(np.full(len(times), ring, np.int64))
        ks.append(sizes * (offered[ring] / len(sizes)))
    if not ts:
        z = np.zeros(0)
        return z, np.zeros(0, np.int64), z
    t: FloatArray = np.clip(np.concatenate(ts), t0, t1 - 1).astype(np.float64)
    order = np.argsort(t, kind="stable")
    return t[order], np.concatenate(rs)[order], np.concatenate(ks)[order]


def fifo_wire(
    t0: int,
    t1: int,
    ev: tuple[FloatArray, IntArray, FloatArray],
    occ: IntArray,
    size: IntArray,
    service: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """The wire over one step: the rings' ``occ`` frames first, then each offer (time, ring,
    frames) takes what its ring has room for then -- a frame holds its slot until it has left
    -- and the wire sends the queued frames in the order they were queued, ``service[r]`` ns
    each. Returns per ring the frames taken and the frames sent by ``t1``."""
    R = len(size)
    chunks: list[deque[tuple[float, float, float]]] = [deque() for _ in range(R)]
    held = [0.0] * R
    wire = float(t0)
    starts: list[float] = []
    counts: list[float] = []
    rings: list[int] = []
    for r in range(R):
        if occ[r] > 0:
            end = wire + occ[r] * service[r]
            chunks[r].append((wire, end, float(occ[r])))
            held[r] += float(occ[r])
            starts.append(wire)
            counts.append(float(occ[r]))
            rings.append(r)
            wire = end
    took = [0.0] * R
    sz = size.tolist()
    sv = service.tolist()
    for t, r, k in zip(ev[0].tolist(), ev[1].tolist(), ev[2].tolist(), strict=True):
        dq = chunks[r]
        while dq and dq[0][1] <= t:
            held[r] -= dq[0][2]
            dq.popleft()
        inside = held[r]
        if dq and dq[0][0] < t:
            inside -= (t - dq[0][0]) / sv[r]
        room = sz[r] - math.ceil(inside - 1e-9)
        a = k if k < room else room
        if a <= 0:
            continue
        st = wire if wire > t else t
        wire = st + a * sv[r]
        dq.append((st, wire, a))
        held[r] += a
        took[r] += a
        starts.append(st)
        counts.append(a)
        rings.append(r)
    if not starts:
        return np.zeros(R), np.zeros(R)
    ring_of = np.array(rings, np.int64)
    done = np.clip((t1 - np.array(starts)) / service[ring_of], 0.0, np.array(counts))
    sent = np.bincount(ring_of, weights=done, minlength=R).astype(np.float64)
    return np.array(took, np.float64), sent
