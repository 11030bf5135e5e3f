"""The cards' DMA budget in fast mode (``Card``, shared by a card's ports): how many of a step's
arrivals get past it, as exact mode applies it -- frames a full ring refuses take no DMA; of
the rest, what the card cannot move is ``rx_missed_errors`` -- and only those reach the rings
and the CPUs."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xdptui.sim.dev.nic import Card, Nic
from xdptui.sim.fast_shapes import DevFacts, Facts, Work
from xdptui.sim.splitting import share, take_rows
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def card_admit(world: World, facts: Facts, work: Work, t0: int, t1: int, steps: int) -> None:
    """Every card's arrivals this step: what gets past its DMA stays in ``work.arr`` (and
    ``work.kept``); the rest is counted where the kernel counts it."""
    dt = t1 - t0
    arrived = work.arr.sum(axis=1)
    by_card: dict[str, list[int]] = {}
    for i, dev in enumerate(work.devs):
        if isinstance(dev, Nic) and dev.card in world.cards and arrived[i]:
            by_card.setdefault(dev.card, []).append(i)
    for name, rows in by_card.items():
        idx = np.array(rows, np.int64)
        card = world.cards[name]
        unit, tx_share = _cpu_facts(facts, work, idx)
        ports = [d for d in world.devices.values() if isinstance(d, Nic) and d.card == name]
        wires = sum(_wire_frames(d, dt) for d in ports)
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


def _wire_frames(nic: Nic, dt: int) -> int:
    """Frames of the smallest size a port's wire (and its driver) can send in ``dt``."""
    pps = nic.speed_bps / (8.0 * 84)
    if nic.drv.tx_pps_max:
        pps = min(pps, nic.drv.tx_pps_max)
    return int(pps * dt / 1e9)
