"""Exact mode's admission: which arriving frames take a descriptor in their RX ring, which a
full ring refuses before any DMA, and which the card has no DMA for (``Card.admit``).

Frames are taken in arrival order; the ports of one card share its DMA budget, so frames of
different ports that reach the card at the same nanosecond need an order too: the card's DMA
arbitrates between its ports (``arbitrate``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.nic import Card
from xdptui.sim.traffic import Source

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class Arrivals:
    """Frames of one source reaching one device between two looks."""

    dev: NetDev
    src: Source
    entries: IntArray
    times: IntArray
    ident: IntArray
    queue: IntArray


def admission(
    times: IntArray, key: IntArray, port: IntArray, free: IntArray, card: Card | None, ports: int
) -> tuple[BoolArray, BoolArray]:
    """Frames in arrival order (``times``, each bound for ring ``key`` of port number ``port``
    with ``free`` slots): which take a descriptor (``keep``) and which a full ring refuses
    before any DMA (``full``); the others the card had no DMA for."""
    nkeys = len(free)
    n = len(times)
    keep = np.zeros(n, dtype=bool)
    full = np.zeros(n, dtype=bool)
    if card is None:
        keep = _fits(key, free, np.zeros(nkeys, np.int64))
        return keep, ~keep
    took_all, tat = card.trial(times)
    took_all, rr = arbitrate(took_all, times, port, card.rr, ports)
    if (np.bincount(key[took_all], minlength=nkeys) <= free).all():
        card.tat, card.rr = tat, rr  # no ring overflows: what the card takes is kept
        return took_all, full
    live = np.ones(n, dtype=bool)
    start = 0
    while start < n:
        cand = np.flatnonzero(live[start:]) + start
        if not len(cand):
            break
        took_mask, tat = card.trial(times[cand])
        took_mask, rr = arbitrate(took_mask, times[cand], port[cand], card.rr, ports)
        took = cand[took_mask]
        used = np.bincount(key[keep], minlength=nkeys)
        over = ~_fits(key[took], free, used)
        if not over.any():
            card.tat, card.rr = tat, rr
            keep[took] = True
            break
        f = int(took[int(np.argmax(over))])
        before = cand[cand < f]
        if len(before):
            got = card.admit(times[before])
            got, card.rr = arbitrate(got, times[before], port[before], card.rr, ports)
            keep[before[got]] = True
        later = np.arange(f, n)
        mine = later[(key[later] == key[f]) & live[later]]
        full[mine] = True  # the ring is full: no descriptor, no DMA
        live[mine] = False
        start = f + 1
    return keep, full


def arbitrate(
    took: BoolArray, times: IntArray, port: IntArray, rr: int, ports: int
) -> tuple[BoolArray, int]:
    """The card's DMA arbitration between its ports (a modelling choice, not a documented
    E810 rule): when frames of several ports reach it at the same nanosecond and it has DMA
    for only some of them, the grants go round-robin -- the k-th such contended instant
    serves port ``rr + k`` (mod ``ports``) first, then the ports after it -- so no port has
    priority. The card's decisions depend on the times only (``Card.trial``); this says
    whose frames they are. Returns the grants and the arbiter's next ``rr``."""
    n = len(times)
    if ports < 2 or n < 2 or took.all() or not took.any():
        return took, rr
    new = np.concatenate(([True], times[1:] != times[:-1]))
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    size = np.diff(np.concatenate((starts, [n])))
    got = np.bincount(group, weights=took, minlength=len(starts)).astype(np.int64)
    split = (got > 0) & (got < size)
    split &= np.minimum.reduceat(port, starts) != np.maximum.reduceat(port, starts)
    if not split.any():
        return took, rr
    turn = (rr + np.cumsum(split) - 1) % ports
    rank = np.where(split[group], (port - turn[group]) % ports, 0)
    order = np.lexsort((rank, group))
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n) - starts[group[order]]
    out: BoolArray = np.where(split[group], pos < got[group], took)
    return out, (rr + int(split.sum())) % ports


def _fits(key: IntArray, free: IntArray, used: IntArray) -> BoolArray:
    """Which frames (in order, by ring ``key``) find a free slot, ``used`` slots already
    taken in this batch."""
    if not len(key) or (np.bincount(key, minlength=len(free)) + used <= free).all():
        return np.ones(len(key), dtype=bool)
    fits: BoolArray = _cumcount(key) + used[key] < free[key]
    return fits


def _cumcount(key: IntArray) -> IntArray:
    """For each element, how many earlier elements have the same key."""
    if not len(key):
        return key
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    lengths = np.diff(np.concatenate((starts, [len(key)])))
    rank_sorted = np.arange(len(key), dtype=np.int64) - np.repeat(starts, lengths)
    out = np.empty(len(key), np.int64)
    out[order] = rank_sorted
    return out
