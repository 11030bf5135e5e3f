"""The card's DMA rule is written once (``nic.gcra``, one frame); exact mode's batch form
(``Card.trial``, closed form over runs) must take exactly the frames the rule takes one by one,
and leave the card at the same TAT -- keeping up, behind, and catching up again."""

from __future__ import annotations

import numpy as np
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
