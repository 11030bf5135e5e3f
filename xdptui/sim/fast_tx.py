"""Transmit rings in fast mode: what a step's frames do to a NIC's TX rings and the wire
(line rate, frame + 20 bytes of preamble and gap, the driver's frame-rate limit) and to a
tap's rings and its reader (``tun_do_read``). Frames a full ring refuses are counted where the
kernel counts them (``Datapath.refused``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.sim.batch import Rows
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev.netdev import NetDev, Refusal
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import Batch, TxRing, batch_left, offer_polls
from xdptui.sim.dev.tun import Tun
from xdptui.sim.fast_burst import Feed, fifo_wire, ring_offers
from xdptui.sim.kconst import WIRE_OVERHEAD
from xdptui.sim.splitting import take_rows
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass
class Played:
    """A port's transmit rings as NAPI's loop ran them this step (its own XDP_TX, its card's
    DMA charged as they left: ``napi.card_charge``): the frames each ring took and refused,
    what is still queued and when the wire is free (ps)."""

    took: IntArray
    lost: IntArray
    left: list[Batch]
    free_ps: int
    took_tx: IntArray  # of ``took``, the port's own XDP_TX (the rest: ``ndo_xdp_xmit``)


@dataclass
class Claim:
    """Frames offered to a device's transmit rings during a step, settled when they drain:
    all onto ``ring``, or each row onto its own ring (``rings``, indexes into ``dev.tx``)."""

    ring_dev: NetDev
    ring: TxRing | None
    rows: Rows
    ref: Refusal
    rings: IntArray | None = None


def drain(
    world: World,
    dp: Datapath,
    claims: list[Claim],
    dt: int,
    feeds: list[Feed] | None = None,
    t0: int = 0,
    played: dict[str, Played] | None = None,
) -> None:
    """Transmit rings take what they have room for and drain at line rate (frame + 20
    bytes of preamble and gap), sharing the wire; a tap's reader takes frames at its rate.
    Where a NIC's wire cannot send all that is offered, the offers come at the feeding
    instances' polls (``fast_burst``). Refused frames are counted where the kernel counts them
    (``Datapath.refused``), each ring's shared among the claims that offered frames to it."""
    by_dev: dict[str, list[Claim]] = {}
    tx_by_card: dict[str, int] = {}
    for cl in claims:
        by_dev.setdefault(cl.ring_dev.name, []).append(cl)
    wire_bytes = world.entries.wire_bytes
    for dev in world.devices.values():
        if not isinstance(dev, Nic | Tun) or not dev.tx:
            continue
        rings = dev.tx
        mine = by_dev.get(dev.name, [])
        if isinstance(dev, Tun) and _play_tap(world, dp, dev, mine, t0, t0 + dt):
            continue
        if isinstance(dev, Nic) and played and dev.name in played:
            _played(world, dp, dev, mine, played[dev.name], t0 + dt)
            continue
        if isinstance(dev, Nic) and _play_wire(world, dp, dev, mine, t0, t0 + dt, tx_by_card):
            continue
        R = len(rings)
        offered = np.zeros((len(mine), R), np.int64)
        offered_b = np.zeros((len(mine), R))
        for k, cl in enumerate(mine):
            wire = cl.rows.count * wire_bytes[cl.rows.entry]
            if cl.rings is None:
                assert cl.ring is not None
                offered[k, cl.ring.index] = cl.rows.total
                offered_b[k, cl.ring.index] = float(wire.sum())
            else:
                offered[k] = np.bincount(cl.rings, weights=cl.rows.count, minlength=R)
                offered_b[k] = np.bincount(cl.rings, weights=wire, minlength=R)
        occ = np.array(rings.column(TxRing.occ), dtype=np.int64)
        inc = offered.sum(axis=0)
        if not inc.any() and not occ.any():
            continue
        occ_b = np.array(rings.column(TxRing.occ_bytes), dtype=np.float64)
        demand = occ + inc
        demand_b = occ_b + offered_b.sum(axis=0)
        credit = np.array(rings.column(TxRing.credit), dtype=np.float64)
        size = np.array(rings.column(TxRing.size), dtype=np.int64)
        refused = None
        if isinstance(dev, Tun):
            out, credit = drain_tap(dev, demand, credit, dt)
        else:
            saturated = _saturated(dev, demand, demand_b, dt)
            out, credit = drain_wire(dev, demand, demand_b, credit, dt)
            if saturated and feeds is not None and isinstance(dev, Nic):
                out, credit, refused = _bursts(dp, dev, feeds, occ, inc, demand, demand_b,
                                               credit, size, t0, t0 + dt)  # fmt: skip
        out_b = np.where(demand > 0, demand_b * out / np.maximum(demand, 1), 0.0)
        left = demand - out
        left_b = demand_b - out_b
        if refused is None:
            refused = np.minimum(np.maximum(left - size, 0), inc)
        mean_left = np.where(left > 0, left_b / np.maximum(left, 1), 0.0)
        for i in np.flatnonzero((demand > 0) | (credit != 0)).tolist():
            r = rings[i]
            r.occ = int(left[i] - refused[i])
            r.occ_bytes = float(left_b[i] - refused[i] * mean_left[i])
            r.credit = float(credit[i])
            r.sent += int(out[i])
            r.sent_wire += float(out_b[i])
            r.dropped += int(refused[i])
        if len(mine):
            lost = take_rows(offered.T.copy(), refused).T.sum(axis=1)
            for cl, n_lost in zip(mine, lost.tolist(), strict=True):
                ok = cl.rows.head(cl.rows.total - n_lost)
                dp.accounts.accepted(cl.ref, ok, into_rx=False)
                dp.accounts.refused(cl.ref, dev, n_lost, ok.total)
        if isinstance(dev, Nic):  # (what is queued is counts now, not played batches)
            dev.wire_batches = []
        if isinstance(dev, Tun):  # the reader is busy with what is left (``rings.batch_left``)
            for r in rings:
                dev.reader_free_ps[r.index] = 1000 * (t0 + dt) + r.occ * dev.reader_ps()
        sent = int(out.sum())
        dev.add("tx_packets", sent)
        dev.add("tx_bytes", round(float(out_b.sum())) - WIRE_OVERHEAD * sent)
        if isinstance(dev, Nic) and dev.card in world.cards:
            tx_by_card[dev.card] = tx_by_card.get(dev.card, 0) + sent
    for name, sent in tx_by_card.items():  # the DMA the frames sent this step took
        card = world.cards[name]
        card.tat += round((sent - card.tx_ahead) * card.tx_weight * card.s)
        card.tx_ahead = 0


def _play_tap(world: World, dp: Datapath, tap: Tun, claims: list[Claim], t0: int, t1: int) -> bool:
    """A tap's rings when every frame offered to them is an ``ndo_xdp_xmit`` whose polls NAPI's
    loop ran: the polls' bulks played in time order through ``rings.offer_polls`` -- exact
    mode's rule, so the same frames get in, the same calls meet a full ring and the reader has
    read the same frames. Returns False (nothing done) otherwise."""
    for cl in claims:
        x = cl.ref.xmit
        if cl.ref.kind != "xmit" or x is None or x.sched is None or cl.ring is None:
            return False
    s = tap.reader_ps()
    wire_bytes = world.entries.wire_bytes
    at0, at1 = 1000 * t0, 1000 * t1
    for ring in tap.tx:
        mine = [cl for cl in claims if cl.ring is ring]
        held0 = ring.occ
        free = tap.reader_free_ps[ring.index]
        queued = [(0, free - (held0 - 1) * s, held0, s)] if held0 else []
        if held0 and batch_left(queued[0], at0) < held0:  # (left by the fluid rule)
            free = at0 + held0 * s
            queued = [(0, at0 + s, held0, s)]
        off = offer_polls(
            [ring.size], free, queued, *_polls_of(mine, lambda cl, cpu: 0),
            np.full(len(mine), s, np.int64), np.zeros(len(mine)),
        )  # fmt: skip
        free = off.free_ps
        left = sum(batch_left(b, at1) for b in off.queued)
        acc, full = off.took, off.full
        new_b = 0.0
        for k, cl in enumerate(mine):
            x = cl.ref.xmit
            assert x is not None
            ok = cl.rows.head(int(acc[k]))
            new_b += float((ok.count * wire_bytes[ok.entry]).sum())
            dp.accounts.accepted(cl.ref, ok, into_rx=False)
            x.full_calls = int(full[k])
            lost = cl.rows.total - ok.total
            ring.dropped += lost
            dp.accounts.refused(cl.ref, tap, lost, ok.total)
        taken = int(acc.sum())
        gone = held0 + taken - left
        if gone <= held0:  # first in, first read
            out_b = ring.occ_bytes * gone / held0 if held0 else 0.0
        else:
            out_b = ring.occ_bytes + new_b * (gone - held0) / taken
        ring.occ_bytes = ring.occ_bytes + new_b - out_b
        ring.occ = left
        ring.credit = 0.0
        ring.sent += gone
        ring.sent_wire += out_b
        tap.reader_free_ps[ring.index] = free
        tap.add("tx_packets", gone)
        tap.add("tx_bytes", round(out_b) - WIRE_OVERHEAD * gone)
    return True


def _play_wire(
    world: World, dp: Datapath, nic: Nic, claims: list[Claim], t0: int, t1: int,
    tx_by_card: dict[str, int],
) -> bool:  # fmt: skip
    """A port's XDP rings when every frame offered to them is an ``ndo_xdp_xmit`` whose polls
    NAPI's loop ran, and no card shares its DMA with the port's receive side (a card of its
    own that receives nothing: what it sends only charges the DMA, ``gcra_sent``, never
    delays it): the polls' bulks played in time order through ``rings.offer_polls`` --
    exact mode's rings and wire (the frames sent, into ``tx_by_card``). Returns False
    (nothing done) otherwise."""
    card = world.cards.get(nic.card or "")
    if card is not None and not _sends_only(world, nic):
        return False
    if not nic.running or not nic.tx:
        return False
    occ: list[int] = nic.tx.column(TxRing.occ)
    if not claims and not any(occ) and not nic.wire_batches:
        return True  # nothing queued, nothing offered
    for cl in claims:
        x = cl.ref.xmit
        if cl.ref.kind != "xmit" or x is None:
            return False
        if x.scheds is None and (x.sched is None or cl.ring is None):
            return False
    wire_bytes = world.entries.wire_bytes
    s_of = [_service(nic, cl.rows, wire_bytes) for cl in claims]
    batches, free = queued(nic, 1000 * t0)
    mean = np.array([_mean_wire(cl.rows, wire_bytes) for cl in claims] or [0.0])

    def ring_of(cl: Claim, cpu: int) -> int:  # (a devmap flush: its CPU's XDP ring)
        return int(nic.ring_of_cpu[cpu]) if cl.ring is None else cl.ring.index

    off = offer_polls(
        [r.size for r in nic.tx], free, batches, *_polls_of(claims, ring_of),
        np.array(s_of, np.int64), mean,
    )  # fmt: skip
    for k, cl in enumerate(claims):
        x = cl.ref.xmit
        assert x is not None
        ok = cl.rows.head(int(off.took[k]))
        dp.accounts.accepted(cl.ref, ok, into_rx=False)
        x.full_calls = int(off.full[k])
        dp.accounts.refused(cl.ref, nic, cl.rows.total - ok.total, ok.total)
    before = nic.counters["tx_packets"]
    _sent(nic, off.ring_took, off.ring_lost, off.ring_bytes, off.queued, off.free_ps, t1)
    if card is not None:
        tx_by_card[card.name] = nic.counters["tx_packets"] - before  # (its one port)
    return True


def _sends_only(world: World, nic: Nic) -> bool:
    """Whether ``nic`` is its card's one port and receives nothing."""
    return world.card_ports(nic.card) == [nic] and not any(
        world.lands_on(s) is nic for s in world.sources
    )


def queued(nic: Nic, at0: int) -> tuple[list[Batch], int]:
    """What a port's XDP rings hold at ``at0`` (ps) as batches on its wire, and when the wire
    is free: the batches a played step left (``Nic.wire_batches``), or, where the rings were
    left by the fluid rule, their frames sent one after the other from ``at0``."""
    # (a batch all of whose frames left before ``at0`` is gone: a port the loop did not play
    # meanwhile -- down, its rings emptied -- left its last ones behind)
    batches = [wb for wb in nic.wire_batches if batch_left(wb, at0) > 0]
    held = [0] * len(nic.tx)  # by ring (a ring's index is its row)
    for wb in batches:
        held[wb[0]] += batch_left(wb, at0)
    if held == nic.tx.column(TxRing.occ):
        return batches, nic.wire_free_ps
    batches, free = [], at0
    for r in nic.tx:
        if r.occ:
            s = int(nic.service_ps(np.array([max(1, round(r.occ_bytes / r.occ))]))[0])
            batches.append((r.index, free + s, r.occ, s))
            free += r.occ * s
    return batches, free


def _played(world: World, dp: Datapath, nic: Nic, claims: list[Claim], p: Played, t1: int) -> None:
    """A port's rings as NAPI's loop ran them: each ring's frames taken go to the claims
    that offered frames to it, in order, and the rest were refused."""
    wire_bytes = world.entries.wire_bytes
    budgets = {"tx": p.took_tx.copy(), "xmit": p.took - p.took_tx}
    new_b = np.zeros(len(nic.tx))
    for cl in claims:
        budget = budgets["tx" if cl.ref.kind == "tx" else "xmit"]
        on = cl.rings if cl.rings is not None else np.full(len(cl.rows), _ring(cl), np.int64)
        for r in np.unique(on).tolist():
            part = cl.rows.where(on == r)
            ok = part.head(min(int(budget[r]), part.total))
            budget[r] -= ok.total
            new_b[r] += float((ok.count * wire_bytes[ok.entry]).sum())
            dp.accounts.accepted(cl.ref, ok, into_rx=False)
            dp.accounts.refused(cl.ref, nic, part.total - ok.total, ok.total)
    _sent(nic, p.took, p.lost, new_b, p.left, p.free_ps, t1)


def _ring(cl: Claim) -> int:
    assert cl.ring is not None
    return cl.ring.index


def _sent(
    nic: Nic, taken: IntArray, lost: IntArray, new_b: FloatArray, left: list[Batch], free: int,
    t1: int,
) -> None:  # fmt: skip
    """A port's rings after a played step: what left by ``t1`` is sent (``tx_packets``), what
    is still queued stays, what the rings refused is counted on them."""
    at1 = 1000 * t1
    left = [wb for wb in left if batch_left(wb, at1) > 0]
    sent_all = 0
    sent_b = 0.0
    for r in nic.tx:
        i = r.index
        still = sum(batch_left(wb, at1) for wb in left if wb[0] == i)
        gone = r.occ + int(taken[i]) - still
        total_b = r.occ_bytes + float(new_b[i])
        out_b = total_b * gone / max(r.occ + int(taken[i]), 1)
        r.occ, r.occ_bytes = still, total_b - out_b
        r.credit = 0.0
        r.sent += gone
        r.sent_wire += out_b
        r.dropped += int(lost[i])
        sent_all += gone
        sent_b += out_b
    nic.wire_batches = left
    nic.wire_free_ps = free
    nic.add("tx_packets", sent_all)
    nic.add("tx_bytes", round(sent_b) - WIRE_OVERHEAD * sent_all)


def _mean_wire(rows: Rows, wire_bytes: IntArray) -> float:
    return float((rows.count * wire_bytes[rows.entry]).sum()) / max(rows.total, 1)


def _service(nic: Nic, rows: Rows, wire_bytes: IntArray) -> int:
    """Ps of wire per frame of these rows (their mean frame: exact where they are alike)."""
    return int(nic.service_ps(np.array([max(1, round(_mean_wire(rows, wire_bytes)))]))[0])


def _polls_of(
    claims: list[Claim], ring_of: Callable[[Claim, int], int]
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """The claims' polls as ``rings.offer_polls`` takes them: a sequence per CPU that sent
    them (the polls' times, in order, and their frames), where each sequence starts, its ring
    (``ring_of(claim, cpu)``) and its claim."""
    ts: list[IntArray] = []
    ks: list[IntArray] = []
    rs: list[int] = []
    ws: list[int] = []
    for k, cl in enumerate(claims):
        x = cl.ref.xmit
        assert x is not None
        scheds = x.scheds
        if scheds is None:
            assert x.sched is not None
            scheds = [(x.cpu, *x.sched)]
        for cpu, times, per_poll in scheds:
            if len(times) > 1 and (np.diff(times) < 0).any():  # (polls in time order)
                order = np.argsort(times, kind="stable")
                times, per_poll = times[order], per_poll[order]
            ts.append(times)
            ks.append(per_poll)
            rs.append(ring_of(cl, cpu))
            ws.append(k)
    z = np.zeros(0, np.int64)
    start = np.concatenate(([0], np.cumsum([len(t) for t in ts], dtype=np.int64)))
    return (
        np.concatenate(ts) if ts else z, np.concatenate(ks) if ks else z, start,
        np.array(rs, np.int64), np.array(ws, np.int64),
    )  # fmt: skip


def _wire_caps(nic: NetDev, dt: int) -> tuple[float, float]:
    """Bytes and frames the wire can send in ``dt``."""
    assert isinstance(nic, Nic)
    if not nic.running:
        return 0.0, 0.0
    cap_b = nic.speed_bps / 8.0 * dt / 1e9
    cap_f = nic.drv.tx_pps_max * dt / 1e9 if nic.drv.tx_pps_max else float("inf")
    return cap_b, cap_f


def _saturated(nic: NetDev, demand: IntArray, demand_b: FloatArray, dt: int) -> bool:
    cap_b, cap_f = _wire_caps(nic, dt)
    return cap_b > 0 and (float(demand_b.sum()) > cap_b or int(demand.sum()) > cap_f)


def _bursts(
    dp: Datapath,
    nic: Nic,
    feeds: list[Feed],
    occ: IntArray,
    inc: IntArray,
    demand: IntArray,
    demand_b: FloatArray,
    credit: FloatArray,
    size: IntArray,
    t0: int,
    t1: int,
) -> tuple[IntArray, FloatArray, IntArray]:
    """A saturated wire played over the feeding instances' polls (``fast_burst``): frames
    taken and sent per ring, the fraction of a frame carried to the next step, the frames
    refused."""
    wire = demand_b / np.maximum(demand, 1)
    ns = wire * 8e9 / nic.speed_bps
    if nic.drv.tx_pps_max:
        ns = np.maximum(ns, 1e9 / nic.drv.tx_pps_max)
    ev = ring_offers(dp, nic, feeds, inc, t0, t1)
    took, sent = fifo_wire(t0, t1, ev, occ, size, ns)
    refused = np.clip(np.round(inc - took).astype(np.int64), 0, inc)
    room = occ + inc - refused
    want = sent + credit
    out = np.minimum(np.floor(want + 1e-9).astype(np.int64), room)
    return out, np.where(room > out, want - out, 0.0), refused


def drain_wire(
    nic: NetDev, demand: IntArray, demand_b: FloatArray, credit: FloatArray, dt: int
) -> tuple[IntArray, FloatArray]:
    """The wire serves the rings round-robin by frame: each ring sends the same share of what
    it holds; fractions of a frame carry per ring into the next step."""
    assert isinstance(nic, Nic)
    tot_f = int(demand.sum())
    tot_b = float(demand_b.sum())
    cap_b = cap_f = 0.0
    if nic.running:
        cap_b = nic.speed_bps / 8.0 * dt / 1e9
        cap_f = nic.drv.tx_pps_max * dt / 1e9 if nic.drv.tx_pps_max else float("inf")
    if tot_b <= cap_b and tot_f <= cap_f:
        return demand.copy(), np.zeros_like(credit)
    frac = min(cap_b / tot_b if tot_b else 0.0, cap_f / tot_f if tot_f else 0.0)
    want = demand * frac + credit
    out = np.minimum(np.floor(want + 1e-9).astype(np.int64), demand)
    return out, np.where(demand > out, want - out, 0.0)


def drain_tap(
    tap: Tun, demand: IntArray, credit: FloatArray, dt: int
) -> tuple[IntArray, FloatArray]:
    """The reader (a VM's vhost, a program) takes frames off each queue's ring at its rate
    (``tun_do_read``)."""
    cap = (tap.reader_pps or 0.0) / tap.queues * dt / 1e9
    want = np.minimum(demand.astype(np.float64), cap + credit)
    out = np.floor(want + 1e-9).astype(np.int64)
    left = np.where(demand > out, np.minimum(want - out + (cap - want).clip(0), 1.0), 0.0)
    return out, left
