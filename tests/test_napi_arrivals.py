"""``napi.queue_frames``: how many of a source's first n frames land on a queue, counted from
the queue's sorted table positions -- the same count whatever the count it is told it is at
least (right, stale, or wrong), since the loop gallops on from that hint."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.sim import napi

tables = st.integers(2, 300).flatmap(
    lambda L: st.tuples(st.just(L), st.sets(st.integers(0, L - 1), min_size=1, max_size=min(L, 80)))
)


@settings(deadline=None)  # (compiled, a first call compiles its signature)
@given(tables, st.integers(0, 5_000), st.integers(-50, 5_000))
def test_a_queue_s_arrivals_are_its_table_entries_below_each_cycle_s_rest(
    table: tuple[int, set[int]], n: int, hint: int
) -> None:
    L, positions = table
    tab = np.array(sorted(positions), np.int32)
    m = len(tab)
    ins = np.zeros((1, napi.I_WIDTH), np.int64)
    ins[0, napi.I_M] = m
    ins[0, napi.I_SRC] = 0
    src = np.zeros((1, napi.S_WIDTH), np.int64)
    src[0, napi.S_L] = L
    # frame k of the source lands on the queue when its table index k % L is one of the queue's
    expected = sum(1 for k in range(n) if k % L in positions)
    assert napi.queue_frames(ins, tab, src, 0, n) == expected
    assert napi.queue_frames(ins, tab, src, 0, n, max(hint, 0)) == expected
    assert napi.queue_frames(ins, tab, src, 0, n, expected) == expected  # (the usual: arrived)
