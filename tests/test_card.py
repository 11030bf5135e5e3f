"""The card's DMA rule is written once (``nic.gcra``, one frame); exact mode's batch form
(``Card.trial``, closed form over runs) must take exactly the frames the rule takes one by one,
and leave the card at the same TAT -- keeping up, behind, and catching up again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.sim.dev.nic import Card, gcra


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=1, max_size=300),  # gaps between arrivals, ns
    st.sampled_from([5e6, 20e6, 50e6, 200e6]),  # frames/s the card moves
    st.integers(1, 40),  # burst allowance, frames
    st.integers(0, 30_000),  # TAT at the start, ps
)
def test_the_batch_form_takes_what_the_rule_takes_frame_by_frame(gaps, pps, burst, tat0):
    arrivals = np.cumsum(np.array(gaps, dtype=np.int64))
    card = Card("c", rx_pps=pps, tx_weight=1.0, burst=burst, tat=tat0)
    keep, tat = card.trial(arrivals)
    tau = burst * card.s
    want, t = [], tat0
    for a in arrivals.tolist():
        took = gcra(t, a * 1000, card.s, tau)
        want.append(took >= 0)
        t = took if took >= 0 else t
    assert keep.tolist() == want and tat == t


def merged_by_hand(
    card: Card, arrivals: list[int], departures: list[int]
) -> tuple[list[bool], int]:
    """The card's rule one frame at a time, in time order -- a frame leaving at the instant
    another arrives goes first: ``gcra`` for an arrival, ``max(tat, d) + c`` for a departure."""
    s, tau, c = card.s, card.burst * card.s, round(card.tx_weight * card.s)
    events = sorted(
        [(d * 1000, 0, -1) for d in departures] + [(a * 1000, 1, i) for i, a in enumerate(arrivals)]
    )
    keep, tat = [False] * len(arrivals), card.tat
    for t, arrival, i in events:
        if not arrival:
            tat = max(tat, t) + c
            continue
        took = gcra(tat, t, s, tau)
        if took >= 0:
            keep[i], tat = True, took
    return keep, tat


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=0, max_size=200),  # gaps between arrivals, ns
    st.lists(st.integers(0, 600), min_size=0, max_size=200),  # gaps between departures, ns
    st.sampled_from([5e6, 20e6, 50e6]),  # frames/s the card moves
    st.sampled_from([0.5, 1.0, 1.3]),  # a sent frame's DMA, in received frames
    st.integers(1, 40),  # burst allowance, frames
    st.integers(0, 30_000),  # TAT at the start, ps
)
def test_frames_sent_meanwhile_take_their_dma_in_time_order(gaps, dgaps, pps, weight, burst, tat0):
    """The card's ports transmit while frames arrive: ``Card.trial`` with the departures
    takes exactly what the rule takes frame by frame in time order, and ends at its TAT."""
    arrivals = np.cumsum(np.array(gaps, dtype=np.int64))
    departures = np.cumsum(np.array(dgaps, dtype=np.int64))
    card = Card("c", rx_pps=pps, tx_weight=weight, burst=burst, tat=tat0)
    keep, tat = card.trial(arrivals, departures)
    want, t = merged_by_hand(card, arrivals.tolist(), departures.tolist())
    assert keep.tolist() == want and tat == t


def test_the_compiled_card_takes_the_same_frames(monkeypatch):
    """Once a process has taken many frames one by one the loop is compiled; what it takes
    does not change."""
    from xdptui.sim import jit
    from xdptui.sim.dev import nic

    rng = np.random.default_rng(7)
    cases = [
        (np.cumsum(rng.integers(0, 300, 500)), np.cumsum(rng.integers(0, 500, 300)), tat0)
        for tat0 in (0, 20_000, 900_000)
    ]
    monkeypatch.delenv("XDPTUI_NO_JIT", raising=False)
    monkeypatch.setattr(nic, "GCRA_COMPILED", 0)
    for arrivals, departures, tat0 in cases:
        card = Card("c", rx_pps=20e6, tx_weight=1.0, burst=16, tat=tat0)
        card.trial(arrivals, departures)  # the first call compiles
        assert jit.compiled(nic)
        keep, tat = card.trial(arrivals, departures)
        want, t = merged_by_hand(card, arrivals.tolist(), departures.tolist())
        assert keep.tolist() == want and tat == t


KEEPS_UP = """
name: a card that keeps up with rings that overflow
cpus: 4
devices:
  eth0: {type: nic, driver: ice, queues: 4, ring: 64, xdp: xdp_pass}
traffic:
  - {name: g, to: eth0, rate: RATE, flows: 64, src_port: 1000-1063}
"""


@pytest.mark.parametrize("rate", ["30Mpps", "200Mpps"])  # the card keeps up / falls behind
def test_a_card_that_keeps_up_lets_its_queues_take_their_frames_one_queue_at_a_time(
    monkeypatch: pytest.MonkeyPatch, rate: str
) -> None:
    """NAPI's loop applies a card's DMA frame by frame (``napi.card_admit``) unless the
    card keeps up (``napi.card_keeps_up``: the source's frames never come closer than the
    card's DMA per frame, and the card is free when the step's first frame arrives). Then no
    frame is missed, its queues take their arrivals one queue at a time, and the card's TAT is
    that of the last frame it took (``napi.card_tat``): the report and the TAT after every
    step are those of frame by frame, with the rings overflowing (CPU-bound)."""
    from conftest import topo

    from xdptui.sim import fast_napi, napi
    from xdptui.sim.engine import Simulator

    t = topo(KEEPS_UP.replace("RATE", rate))
    shortcuts: list[int] = []
    tat = napi.card_tat

    def spy(*args: Any) -> int:
        shortcuts.append(1)
        return tat(*args)

    step = fast_napi.FastNapi.step

    def run() -> tuple[Simulator, list[int]]:
        tats: list[int] = []

        def stepped(self: fast_napi.FastNapi, *args: Any) -> set[int]:
            done = step(self, *args)
            tats.append(self.world.cards["eth0"].tat)
            return done

        monkeypatch.setattr(fast_napi.FastNapi, "step", stepped)
        sim = Simulator(t)
        sim.run_until(3_000_000)
        return sim, list(tats)  # (a report's preview steps a copy)

    monkeypatch.setattr(napi, "card_tat", spy)
    lazy, lazy_tats = run()
    monkeypatch.setattr(napi, "card_keeps_up", lambda *a: False)
    strict, strict_tats = run()
    assert bool(shortcuts) == (rate == "30Mpps")  # the shortcut ran only where it holds
    assert lazy.report()["devices"] == strict.report()["devices"]
    assert len(lazy_tats) > 5 and lazy_tats == strict_tats
    assert lazy.world.devices["eth0"].counters["rx_dropped"] > 0  # the rings overflowed


def test_a_frame_at_a_full_ring_takes_no_part_in_the_cards_arbitration():
    """Two ports' frames reach the card at the same nanoseconds and it has DMA for one of
    each pair (no burst allowance, one frame's DMA between instants). Port 0's ring has one
    free slot: its first frame fills it, and its later frames arrive at a full ring -- refused
    before any DMA, no part of the arbiter's choice. So only the first instant is contended
    (port 0 served first, then the arbiter turns to port 1); port 1 gets every later frame
    and the arbiter stays on port 1."""
    from xdptui.sim.exact_admit import admission

    card = Card("c", rx_pps=100e6, tx_weight=1.0, burst=0)  # 10 ns of DMA a frame
    n = 4
    times = np.repeat(np.arange(n, dtype=np.int64) * 10, 2)
    port = np.tile(np.array([0, 1], np.int64), n)
    keep, full = admission(times, port.copy(), port, np.array([1, 10]), card, 2)
    assert keep.tolist() == [True, False] + [False, True] * (n - 1)
    assert full.tolist() == [False, False] + [True, False] * (n - 1)
    assert card.rr == 1
