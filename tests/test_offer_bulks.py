"""``rings.offer_bulks``: bulks offered to transmit rings that one server drains in queueing
order (a port's wire over its XDP rings, ``ExactIO.tx`` + ``departures``), checked against
the rule taken frame by frame -- a frame holds its ring slot until it has left -- and the
compiled loop against the plain one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.sim.dev import rings


def frame_by_frame(sizes, free, times, ring_of, bulks, service):
    """Each frame in turn: its ring's slots held by frames not yet left; the server sends
    the queued frames one after the other, d = max(d_prev, ready) + s."""
    deps: list[list[int]] = [[] for _ in sizes]  # departure (ps) of each frame queued, per ring
    got = []
    for t, r, k, s in zip(times, ring_of, bulks, service, strict=True):
        at = 1000 * t
        inside = sum(1 for d in deps[r] if d > at)  # left once its time is past
        a = max(0, min(k, sizes[r] - inside))
        for _ in range(a):
            free = max(free, at) + s
            deps[r].append(free)
        got.append(a)
    return got, free, deps


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 2), st.integers(1, 12), st.integers(1, 3)),
        min_size=1,
        max_size=60,
    ),
    st.lists(st.integers(1, 20), min_size=3, max_size=3),
)
def test_offer_bulks_is_the_frame_by_frame_rule(bulks, sizes):
    bulks.sort(key=lambda b: b[0])
    times = np.array([b[0] for b in bulks], np.int64)
    ring_of = np.array([b[1] for b in bulks], np.int64)
    k = np.array([b[2] for b in bulks], np.int64)
    service = np.array([b[3] * 1700 for b in bulks], np.int64)
    got, free, left = rings.offer_bulks(sizes, 0, [], times, ring_of, k, service)
    want_got, want_free, deps = frame_by_frame(sizes, 0, times, ring_of, k, service)
    assert got.tolist() == want_got and free == want_free
    # what is still queued after the last bulk: the frames not yet left then, per ring
    at = 1000 * int(times[-1])
    for r in range(3):
        still = sum(rings.batch_left(b, at) for b in left if b[0] == r)
        assert still == sum(1 for d in deps[r] if d > at)


def test_the_compiled_loop_gives_what_the_plain_one_gives(monkeypatch):
    from xdptui.sim import jit

    rng = np.random.default_rng(3)
    n = 5000  # more than offer_bulks compiles for
    times = np.sort(rng.integers(0, 200_000, n)).astype(np.int64)
    ring_of = rng.integers(0, 4, n).astype(np.int64)
    k = rng.integers(1, 17, n).astype(np.int64)
    service = np.full(n, 6720, np.int64)
    sizes = [512, 512, 256, 64]

    def go():
        return rings.offer_bulks(sizes, 0, [], times, ring_of, k, service)

    plain_fn = getattr(rings._offer, "py_func", rings._offer)  # (compiled already, or not)
    with monkeypatch.context() as m:
        m.setenv("XDPTUI_NO_JIT", "1")
        m.setattr(rings, "_offer", plain_fn)
        for name in rings.WIRE_RULES:
            fn = getattr(rings, name)
            m.setattr(rings, name, getattr(fn, "py_func", fn))
        plain = go()
    jit.compile_functions(rings, (*rings.WIRE_RULES, "_offer"), inline=rings.WIRE_RULES)
    assert hasattr(rings._offer, "py_func")  # compiled now
    got, free, left = go()
    assert got.tolist() == plain[0].tolist() and free == plain[1] and left == plain[2]
