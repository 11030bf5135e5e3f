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
from xdptui.sim.splitting import within_runs
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
    times: IntArray,
    key: IntArray,
    port: IntArray,
    free: IntArray,
    card: Card | None,
    ports: int,
    dep: IntArray | None = None,
) -> tuple[BoolArray, BoolArray]:
    """Frames in arrival order (``times``, each bound for ring ``key`` of port number ``port``
    with ``free`` slots): which take a descriptor (``keep``) and which a full ring refuses
    before any DMA (``full``); the others the card had no DMA for. The frames its ports
    sent at (sorted) times ``dep`` meanwhile take their DMA in time order among them
    (``Card.trial``), so where time is cut does not change what the card takes."""
    nkeys = len(free)
    n = len(times)
    keep = np.zeros(n, dtype=bool)
    full = np.zeros(n, dtype=bool)
    if card is None:
        keep = _fits(key, free, np.zeros(nkeys, np.int64))
        return keep, ~keep
    keep, full = _with_card(times, key, port, free, card, ports, dep)
    return keep, _full_first(keep, full, key, free)


def _with_card(
    times: IntArray,
    key: IntArray,
    port: IntArray,
    free: IntArray,
    card: Card,
    ports: int,
    dep: IntArray | None,
) -> tuple[BoolArray, BoolArray]:
    """``admission`` through a card. A frame whose ring is full when it arrives is refused
    before any DMA and takes no part in the card's arbitration: a trial over the frames in
    order tells when each ring fills; the first frame to reach a ring filled before it ends
    the trial, the frames before its instant are committed and the rest tried again without
    that ring's frames from it on."""
    nkeys = len(free)
    n = len(times)
    keep = np.zeros(n, dtype=bool)
    full = np.zeros(n, dtype=bool)
    if dep is None:
        dep = np.zeros(0, np.int64)
    live = free[key] > 0  # rings full already: refused from the start
    full[~live] = True
    if live.all():
        took_all, tat = card.trial(times, dep)
        took_all, rr = arbitrate(took_all, times, port, card.rr, ports)
        if (np.bincount(key[took_all], minlength=nkeys) <= free).all():
            card.tat, card.rr = tat, rr  # no ring fills before a frame reaches it: kept
            return took_all, full
    start = j = 0  # j: the departures charged so far
    while start < n:
        cand = np.flatnonzero(live[start:]) + start
        if not len(cand):
            break
        took_mask, tat = card.trial(times[cand], dep[j:])
        took_mask, rr = arbitrate(took_mask, times[cand], port[cand], card.rr, ports)
        took = cand[took_mask]
        room = free - np.bincount(key[keep], minlength=nkeys)
        first = _first_at_a_full_ring(cand, took, key, room, n)
        if first < 0:
            card.tat, card.rr = tat, rr
            keep[took] = True
            return keep, full
        # commit what arrived before that frame's instant (the arbiter's grants at that
        # instant are made again without it: its ring refuses it before any DMA)
        g = int(np.searchsorted(times, times[first], side="left"))
        before = cand[cand < g]
        upto = int(np.searchsorted(dep, times[first], side="right"))  # they leave before it
        got = card.admit(times[before], dep[j:upto])
        j = max(j, upto)
        got, card.rr = arbitrate(got, times[before], port[before], card.rr, ports)
        keep[before[got]] = True
        later = np.arange(first, n)
        mine = later[(key[later] == key[first]) & live[later]]
        full[mine] = True  # the ring is full: no descriptor, no DMA
        live[mine] = False
        start = g
    card.charge_sent(dep[j:])  # what left after the last frame the card could take
    return keep, full


def _first_at_a_full_ring(
    cand: IntArray, took: IntArray, key: IntArray, room: IntArray, n: int
) -> int:
    """The first of the frames ``cand`` to reach a ring that frames the card took before it
    (``took``, in order) filled, ``room`` slots free before them; -1 if none does."""
    fill = np.full(len(room), n, np.int64)  # per ring: the frame that fills it
    fill[room <= 0] = -1
    rank = _cumcount(key[took])  # each taken frame's place among its ring's
    last = took[rank == room[key[took]] - 1]
    fill[key[last]] = last
    after = cand[cand > fill[key[cand]]]
    return int(after[0]) if len(after) else -1


def _full_first(keep: BoolArray, full: BoolArray, key: IntArray, free: IntArray) -> BoolArray:
    """A frame whose ring was already full when it arrived is refused before any DMA
    (``rx_dropped``), even when the card had no DMA for it either: the refusal is the ring's,
    whatever batch the frame came in. (The card's TAT does not move for a frame it refuses,
    so this changes only whose refusal it is.)"""
    refused = ~keep & ~full
    if not refused.any():
        return full
    before = _cumcount(key, keep)  # kept before each frame on its own ring
    out: BoolArray = full | (refused & (before >= free[key]))
    return out


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


def _cumcount(key: IntArray, weight: BoolArray | None = None) -> IntArray:
    """For each element, how many earlier elements have the same key (those ``weight``
    marks, when given)."""
    if not len(key):
        return key
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    lengths = np.diff(np.concatenate((starts, [len(key)])))
    if weight is None:
        rank_sorted = within_runs(lengths)
    else:
        w = weight[order].astype(np.int64)
        upto = np.cumsum(w) - w  # marked elements before each one, over every key
        rank_sorted = upto - np.repeat(upto[starts], lengths)
    out = np.empty(len(key), np.int64)
    out[order] = rank_sorted
    return out
