"""The cards' DMA budget in fast mode (``Card``, shared by a card's ports): how many of a step's
arrivals get past it, as exact mode applies it -- frames a full ring refuses take no DMA; of
the rest, what the card cannot move is ``rx_missed_errors`` -- and only those reach the rings
and the CPUs.

A card whose CPUs, polling full rings, would need more DMA than it has (their transmits take it
too) does not settle at a steady rate; it cycles (``cycle``), and each step follows that cycle
phase by phase:

A. the rings are full and every CPU polls full budgets; each free slot is refilled at once and
   every other arrival is ``rx_dropped`` (ring full), while the card falls behind by what it
   cannot move, up to its burst allowance (``Card.burst``);
B. the card is as far behind as it may be: the CPUs' transmits take most of its DMA, the little
   left refills the rings slower than the CPUs empty them, and an arrival that finds a free slot
   but no DMA is ``rx_missed_errors``;
W. a ring runs empty: the poll that finds less than its budget completes and re-arms the
   interrupt, which waits ``rx-usecs`` after the last one; meanwhile nothing is polled nor sent,
   the card catches up, the ring refills and overflows -- and A starts again.

The phases are those of a fluid (frames as rates, in ns): between two events -- a ring full or
empty, an interrupt, the card's backlog at its allowance or gone -- every rate is constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.sim.dev.nic import Card, Nic
from xdptui.sim.fast_shapes import DevFacts, Facts, Work
from xdptui.sim.splitting import share, take_rows
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

EPS = 1e-6  # frames, or ns: what counts as none left
MAX_EVENTS = 100_000  # a step's phase changes at most (a safety net; a cycle has a handful)
POLLING = -1.0  # ``Cycle.wait`` of an instance that is not waiting for its interrupt


def card_admit(
    world: World,
    facts: Facts,
    work: Work,
    t0: int,
    t1: int,
    steps: int,
    skip: set[str] | None = None,
) -> None:
    """Every card's arrivals this step (but ``skip``'s: NAPI's loop applies their DMA): what
    gets past its DMA stays in ``work.arr`` (and ``work.kept``); the rest is counted where
    the kernel counts it."""
    dt = t1 - t0
    arrived = work.arr.sum(axis=1)
    by_card: dict[str, list[int]] = {}
    for i, dev in enumerate(work.devs):
        if isinstance(dev, Nic) and dev.card in world.cards and arrived[i]:
            if skip and dev.card in skip:
                continue
            by_card.setdefault(dev.card, []).append(i)
    for name, rows in by_card.items():
        idx = np.array(rows, np.int64)
        card = world.cards[name]
        unit, tx_share = _cpu_facts(facts, work, idx)
        ports = world.card_ports(name)
        wires = sum(_wire_frames(d, dt) for d in ports)
        mu = _poll_rates(work, idx, unit)
        if cycling(card, arrived[idx] / dt, mu, tx_share):
            _cycle(work, idx, card, mu, tx_share, t0, t1, steps)
        else:
            _steady(work, idx, card, unit, tx_share, wires, t0, t1, steps)


def _cpu_facts(facts: Facts, work: Work, idx: IntArray) -> tuple[FloatArray, FloatArray]:
    """Per instance: CPU ns per frame in full polls, and frames sent out of the card's ports
    per frame taken."""
    unit = np.empty(len(idx))
    tx_share = np.empty(len(idx))
    weight = np.array([work.rxqs[i].weight for i in idx], np.float64)
    for sel, f in _by_device(facts, work, idx):
        Di = work.held[idx[sel]] + work.arr[idx[sel]]
        total = np.maximum(Di.sum(axis=1), 1)
        unit[sel] = Di @ f.cost / total + facts.flush_many(f, Di, weight[sel])
        unit[sel] += f.poll / weight[sel]
        tx_share[sel] = Di @ f.tx_out / total
    return unit, tx_share


def _by_device(facts: Facts, work: Work, idx: IntArray) -> list[tuple[IntArray, DevFacts]]:
    seen: dict[str, list[int]] = {}
    for k, i in enumerate(idx.tolist()):
        seen.setdefault(work.devs[i].name, []).append(k)
    return [
        (np.array(ks, np.int64), facts.dev_facts(work.devs[idx[ks[0]]])) for _, ks in seen.items()
    ]


def _poll_rates(work: Work, idx: IntArray, unit: FloatArray) -> FloatArray:
    """Frames per ns each instance's CPU polls while it has frames (round-robin with the
    card's other instances on that CPU)."""
    cpu = work.cpu[idx]
    per_cpu = np.bincount(cpu, weights=unit)
    out: FloatArray = 1.0 / np.maximum(per_cpu[cpu], 1e-9)
    return out


def cycling(card: Card, lam: FloatArray, mu: FloatArray, tx_share: FloatArray) -> bool:
    """Whether the card cycles: some CPU cannot poll all its queue's arrivals (its ring fills),
    and what the CPUs then take needs more DMA than the card has -- though what they send
    alone does not (else sending takes it all and the rings never refill: a steady state)."""
    if not (lam > mu).any():
        return False
    polled = np.minimum(lam, mu)
    sent = float(polled @ tx_share) * card.tx_weight
    return (float(polled.sum()) + sent) * card.s > 1000.0 > sent * card.s


def _steady(
    work: Work,
    idx: IntArray,
    card: Card,
    unit: FloatArray,
    tx_share: FloatArray,
    wires: int,
    t0: int,
    t1: int,
    steps: int,
) -> None:
    """The card at a steady rate: of what the CPUs and the rings could take, the card takes
    what its DMA allows (``Card.admit_count``); what the rings would refuse anyway is dropped
    there, and only what the card took reaches them."""
    dt = t1 - t0
    arrived = work.arr[idx].sum(axis=1)
    waiting = work.held[idx].sum(axis=1)
    sizes = np.array([work.rxqs[i].size for i in idx], np.int64)
    room = np.maximum(0, (dt / np.maximum(unit, 1e-9)).astype(np.int64) + sizes - waiting)
    offered = np.minimum(arrived, room).astype(np.float64)
    # transmit takes DMA too: each frame taken sends r frames out of the card's ports
    # (XDP_TX, redirects to them), at most what their wires carry this step
    r = float(tx_share @ offered) / max(float(offered.sum()), 1.0)
    taken, card.tx_ahead = card.admit_count(int(offered.sum()), t0, t1, r, wires)
    if taken >= offered.sum():
        return
    missed = (offered - share(taken, offered)).astype(np.int64)
    full = arrived - offered.astype(np.int64)
    _cut(work, idx, missed, full, steps)


def _cut(work: Work, idx: IntArray, missed: IntArray, full: IntArray, steps: int) -> None:
    """Take the card's refusals (``missed``) and the full rings' (``full``) out of the
    arrivals, and count them."""
    arrived = work.arr[idx].sum(axis=1)
    lost = missed + full
    work.arr[idx] -= take_rows(work.arr[idx], lost, steps)
    work.kept[idx] = (arrived - lost) / np.maximum(arrived, 1)
    for k, i in enumerate(idx.tolist()):
        dev, rxq = work.devs[i], work.rxqs[i]
        if missed[k] > 0:
            dev.add("rx_missed_errors", int(missed[k]))  # port discards
        if full[k] > 0:
            rxq.rx_dropped += int(full[k])
            dev.add("rx_dropped", int(full[k]))


def _cycle(
    work: Work,
    idx: IntArray,
    card: Card,
    mu: FloatArray,
    tx_share: FloatArray,
    t0: int,
    t1: int,
    steps: int,
) -> None:
    """The card's instances through this step's phases (``cycle``): what the card lets into
    the rings, what the CPUs take (``work.cycle``, which their polls then follow), the
    interrupts they wait for."""
    dt = t1 - t0
    rxqs = [work.rxqs[i] for i in idx]
    arrived = work.arr[idx].sum(axis=1)
    held = work.held[idx].sum(axis=1)
    wait = np.array([float(q.fast_irq - t0) if q.fast_irq > t0 else POLLING for q in rxqs])
    idle = np.array([q.fast_irq < t0 for q in rxqs], bool)
    last = np.array([float(q.last_irq - t0) for q in rxqs])
    s_ns = card.s / 1000.0
    out = cycle(
        Rates(arrived / dt, mu, tx_share, s_ns, card.tx_weight, card.burst * s_ns),
        np.array([q.size for q in rxqs], np.float64),
        np.array([q.weight for q in rxqs], np.float64),
        np.array([q.itr_ns for q in rxqs], np.float64),
        State(held.astype(np.float64), wait, last, max(0.0, card.tat / 1000.0 - t0), idle),
        float(dt),
    )
    sizes = np.array([q.size for q in rxqs], np.int64)
    served = np.minimum(np.round(out.served).astype(np.int64), held + arrived)
    end = np.clip(np.round(out.state.h).astype(np.int64), 0, sizes)
    admitted = np.clip(served + end - held, 0, arrived)
    served = np.minimum(served, held + admitted)
    missed = np.minimum(np.round(out.missed).astype(np.int64), arrived - admitted)
    full = arrived - admitted - missed
    _cut(work, idx, missed, full, steps)
    for k, i in enumerate(idx.tolist()):
        w = out.state.wait[k]
        work.cycle[i] = (int(served[k]), int(np.ceil(t0 + w)) if w >= 0 else t1)
        work.rxqs[i].last_irq = round(t0 + out.state.last[k])
    card.tat = round((t1 + out.state.b) * 1000)
    card.tx_ahead = round(out.tx)


@dataclass(frozen=True)
class Rates:
    """A card's instances: arrivals (``lam``) and polls (``mu``) in frames per ns, frames each
    taken frame sends out of the card's ports (``r``); the card's ns per received frame
    (``s``), a sent frame's weight (``k``) and its allowance (``tau``, ns of backlog)."""

    lam: FloatArray
    mu: FloatArray
    r: FloatArray
    s: float
    k: float
    tau: float


@dataclass
class State:
    """Frames in each ring (``h``), when each instance's interrupt fires (``wait``, ns from
    the step's start; ``POLLING``: it is not waiting), its last interrupt (``last``), the
    card's backlog (``b``, ns) and the instances whose interrupt is armed but idle."""

    h: FloatArray
    wait: FloatArray
    last: FloatArray
    b: float
    idle: BoolArray


@dataclass
class Cycle:
    served: FloatArray
    missed: FloatArray
    state: State
    tx: float


def cycle(
    rates: Rates,
    size: FloatArray,
    weight: FloatArray,
    itr: FloatArray,
    st: State,
    dt: float,
) -> Cycle:
    """The card's instances over ``dt`` ns, event to event (times from the step's start):
    an interrupt polls full budgets while the ring holds one (``weight``); a poll that finds
    less completes and the next interrupt comes ``itr`` after the last one -- at once if that
    long has passed, then ``itr`` later; a polling CPU takes ``mu``. The card takes every
    arrival for a ring with room while it is less than ``tau`` behind; at ``tau`` it moves
    what its transmits leave, shared between the rings with room in proportion to their
    arrivals (its arbitration between ports is fair)."""
    n = len(size)
    h = st.h.copy()
    wait = st.wait.copy()
    last = st.last.copy()
    b = st.b
    served = np.zeros(n)
    missed = np.zeros(n)
    tx = 0.0
    t = 0.0
    lam, mu, r, s, k, tau = rates.lam, rates.mu, rates.r, rates.s, rates.k, rates.tau
    # an armed, idle instance: its interrupt fires with the first arrival
    for i in np.flatnonzero(st.idle & (wait < 0)).tolist():
        last[i] = 0.0
        if h[i] < weight[i]:
            served[i] += h[i]
            h[i] = 0.0
            wait[i] = itr[i]
    for _ in range(MAX_EVENTS):
        if t >= dt - EPS:
            break
        polling = wait < 0
        cons = np.where(polling, mu, 0.0)
        full = h >= size - EPS
        cap = np.where(full, np.minimum(cons, lam), lam)
        txr = float(cons @ r)
        rx, limited = _card_share(cap, lam, b, txr, s, k, tau)
        dh = rx - cons
        dry = polling & (h <= EPS) & (dh < -EPS)
        if dry.any():  # the poll found less than its budget: napi_complete_done
            for i in np.flatnonzero(dry).tolist():
                if t - last[i] >= itr[i]:
                    last[i] = t
                    wait[i] = t + itr[i]
                else:
                    wait[i] = last[i] + itr[i]
            continue
        db = 0.0 if limited else s * (float(rx.sum()) + k * txr) - 1.0
        if b <= EPS and db < 0:
            db = 0.0
        step = dt - t
        step = min(step, float((wait[~polling] - t).min(initial=step)))
        grow = (dh > EPS) & ~full
        step = min(step, float(((size - h)[grow] / dh[grow]).min(initial=step)))
        sink = (dh < -EPS) & (h > EPS)
        step = min(step, float((h[sink] / -dh[sink]).min(initial=step)))
        if db > 0 and b < tau - EPS:
            step = min(step, (tau - b) / db)
        elif db < 0:
            step = min(step, (b - tau) / -db if b > tau + EPS else b / -db)
        step = max(step, 0.0)
        lost = (lam - rx) * step
        missed += np.where(full & (rx >= cap - EPS), 0.0, lost)
        served += cons * step
        tx += txr * step
        h = np.clip(h + dh * step, 0.0, size)
        b = max(0.0, b + db * step)
        if abs(b - tau) < EPS:
            b = tau
        t += step
        due = ~polling & (wait <= t + EPS)
        for i in np.flatnonzero(due).tolist():  # the interrupt: a poll
            last[i] = wait[i]
            if h[i] >= weight[i]:
                wait[i] = POLLING
            else:
                served[i] += h[i]
                h[i] = 0.0
                wait[i] = last[i] + itr[i]
    return Cycle(served, missed, State(h, wait, last, b, np.zeros(n, bool)), tx)


def _card_share(
    cap: FloatArray, lam: FloatArray, b: float, txr: float, s: float, k: float, tau: float
) -> tuple[FloatArray, bool]:
    """What the card takes for each ring per ns (``cap``: what the ring could take), and
    whether its DMA is the limit (it stays ``tau`` behind)."""
    if b < tau - EPS or s * (float(cap.sum()) + k * txr) <= 1.0:
        return cap, False
    if b > tau + EPS:
        return np.zeros_like(cap), False
    avail = 1.0 / s - k * txr
    if avail <= 0:
        return np.zeros_like(cap), False
    # shares in proportion to the arrivals, none more than its ring takes
    ratio = np.where(lam > 0, cap / np.maximum(lam, 1e-300), 0.0)
    order = np.argsort(ratio)
    rs, cs, ls = ratio[order], cap[order], lam[order]
    below = np.concatenate(([0.0], np.cumsum(cs)))[:-1]
    above = ls[::-1].cumsum()[::-1]
    fits = below + rs * above >= avail
    j = int(np.argmax(fits)) if fits.any() else len(rs)
    if j >= len(rs):
        return cap, False
    level = (avail - below[j]) / max(above[j], 1e-300)
    out: FloatArray = np.minimum(cap, level * lam)
    return out, True


def _wire_frames(nic: Nic, dt: int) -> int:
    """Frames of the smallest size a port's wire (and its driver) can send in ``dt``."""
    pps = nic.speed_bps / (8.0 * 84)
    if nic.drv.tx_pps_max:
        pps = min(pps, nic.drv.tx_pps_max)
    return int(pps * dt / 1e9)
