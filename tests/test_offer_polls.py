"""``rings.offer_polls``: polls offering frames to transmit rings that one server drains in
queueing order (a port's wire over its XDP rings, a tap queue's reader: ``ExactIO.tx`` +
``departures``), each poll's frames cut into devmap bulks of at most 16, checked against the
rule taken frame by frame -- a frame holds its ring slot until it has left -- and the
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


def still_queued(queued, r, at):
    """Frames of ring ``r`` the batches still queued have not sent by ``at`` (ps)."""
    return sum(rings.batch_left(b, at) for b in queued if b[0] == r)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 2), st.integers(1, 12), st.integers(1, 3)),
        min_size=1,
        max_size=60,
    ),
    st.lists(st.integers(1, 20), min_size=3, max_size=3),
)
def test_one_bulk_at_a_time_is_the_frame_by_frame_rule(bulks, sizes):
    """A poll of at most 16 frames is one bulk: each its own CPU here (a sequence of one poll,
    its own claim), offered in time order (a tie: in the order given)."""
    bulks.sort(key=lambda b: b[0])
    n = len(bulks)
    times = np.array([b[0] for b in bulks], np.int64)
    ring_of = np.array([b[1] for b in bulks], np.int64)
    k = np.array([b[2] for b in bulks], np.int64)
    service = np.array([b[3] * 1700 for b in bulks], np.int64)
    off = rings.offer_polls(
        sizes, 0, [], times, k, np.arange(n + 1, dtype=np.int64), ring_of,
        np.arange(n, dtype=np.int64), service, np.zeros(n),
    )  # fmt: skip
    want_got, want_free, deps = frame_by_frame(sizes, 0, times, ring_of, k, service)
    assert off.took.tolist() == want_got and off.free_ps == want_free
    assert off.full.tolist() == [int(g < b) for g, b in zip(want_got, k.tolist(), strict=True)]
    # what is still queued after the last bulk: the frames not yet left then, per ring
    at = 1000 * int(times[-1])
    for r in range(3):
        assert still_queued(off.queued, r, at) == sum(1 for d in deps[r] if d > at)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(  # a CPU's polls toward one ring for one claim: (gap in ns, frames) each
        st.tuples(
            st.integers(0, 2),
            st.integers(0, 1),
            st.lists(st.tuples(st.integers(0, 9), st.integers(0, 40)), max_size=10),
        ),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.integers(1, 40), min_size=3, max_size=3),
)
def test_polls_offer_their_frames_as_bulks_of_16_in_time_order(seqs, sizes):
    service = np.array([1700, 5100], np.int64)  # ps of wire a frame, per claim
    mean = np.array([84.0, 1534.5])  # wire bytes a frame, per claim
    times, per_poll, start = [], [], [0]
    for _, _, polls in seqs:
        t = 0
        for gap, k in polls:
            t += gap
            times.append(t)
            per_poll.append(k)
        start.append(len(times))
    off = rings.offer_polls(
        sizes, 0, [], np.array(times, np.int64), np.array(per_poll, np.int64),
        np.array(start, np.int64), np.array([r for r, _, _ in seqs], np.int64),
        np.array([c for _, c, _ in seqs], np.int64), service, mean,
    )  # fmt: skip
    # the bulks, ``bq_enqueue`` cutting each poll's frames at 16, in time order (a tie:
    # the CPUs in the order given), taken frame by frame
    bulks = []
    for j, (r, c, _) in enumerate(seqs):
        for p in range(start[j], start[j + 1]):
            k = per_poll[p]
            while k > 0:
                bulks.append((times[p], j, r, c, min(k, 16)))
                k -= 16
    bulks.sort(key=lambda b: (b[0], b[1]))  # (stable: a poll's bulks stay in order)
    if not bulks:
        assert off.took.tolist() == [0, 0] and off.free_ps == 0 and off.queued == []
        return
    t, _, r, c, k = (np.array(x, np.int64) for x in zip(*bulks, strict=True))
    got_l, free, deps = frame_by_frame(sizes, 0, t, r, k, service[c])
    got = np.array(got_l, np.int64)
    assert off.took.tolist() == np.bincount(c, weights=got, minlength=2).astype(int).tolist()
    assert off.full.tolist() == np.bincount(c, weights=got < k, minlength=2).astype(int).tolist()
    assert off.ring_took.tolist() == np.bincount(r, weights=got, minlength=3).astype(int).tolist()
    lost = np.bincount(r, weights=k - got, minlength=3).astype(int)
    assert off.ring_lost.tolist() == lost.tolist()
    assert off.ring_bytes.tolist() == np.bincount(r, weights=got * mean[c], minlength=3).tolist()
    assert off.free_ps == free
    at = 1000 * int(t[-1])
    for ring in range(3):
        assert still_queued(off.queued, ring, at) == sum(1 for d in deps[ring] if d > at)


def test_the_compiled_loop_gives_what_the_plain_one_gives(monkeypatch):
    rng = np.random.default_rng(3)
    cpus, n = 8, 700  # more polls than offer_polls compiles for
    times = np.sort(rng.integers(0, 200_000, (cpus, n)), axis=1).ravel().astype(np.int64)
    per_poll = rng.integers(0, 41, cpus * n).astype(np.int64)
    start = np.arange(0, cpus * n + 1, n, dtype=np.int64)
    ring_of = rng.integers(0, 4, cpus).astype(np.int64)
    claim = (np.arange(cpus) % 2).astype(np.int64)
    service = np.array([6720, 9000], np.int64)
    mean = np.array([84.0, 120.5])
    sizes = [512, 512, 256, 64]

    def go():
        return rings.offer_polls(
            sizes, 0, [], times, per_poll, start, ring_of, claim, service, mean
        )

    with monkeypatch.context() as m:
        m.setenv("XDPTUI_NO_JIT", "1")
        for name in (*rings.WIRE_RULES, "_sift", "_offer_polls"):
            fn = getattr(rings, name)
            m.setattr(rings, name, getattr(fn, "py_func", fn))  # (compiled already, or not)
        plain = go()
    rings.compile_rules()
    assert hasattr(rings._offer_polls, "py_func")  # compiled now
    got = go()
    assert got.took.tolist() == plain.took.tolist() and got.full.tolist() == plain.full.tolist()
    assert got.ring_took.tolist() == plain.ring_took.tolist()
    assert got.ring_bytes.tolist() == plain.ring_bytes.tolist()
    assert got.free_ps == plain.free_ps and got.queued == plain.queued
    assert plain.full.sum() > 0  # (the rings did fill: the test covers refusals)
