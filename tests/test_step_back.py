"""``,`` (``Simulator.step_back``) undoes exactly one ``.``-sized NAPI poll, whatever came
before it: single steps, a run in exact mode, two CPUs polling at one instant, a run in fast
mode (which has no polls of its own), ``]``'s run to the next event."""

from __future__ import annotations

from typing import Any

from conftest import TOPOLOGIES

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

DUAL_PORT = TOPOLOGIES / "dual_port.yaml"


def dual_port(exact: bool) -> Simulator:
    return Simulator(load_topology(DUAL_PORT), exact=exact)


def polls(sim: Simulator) -> list[tuple[Any, ...]]:
    """The poll records of the present's past: when, where and what each took."""
    return [
        (r["t_ns"], r["cpu"], r["dev"], r["queue"], r["frames"], r["ring_before"])
        for r in sim.events()
        if r["kind"] == "napi_poll"
    ]


def test_comma_after_single_steps_is_the_state_before_the_last_step() -> None:
    sim = dual_port(exact=True)
    sim.run_until(50_000)
    reports = []
    for _ in range(4):
        reports.append(sim.report())
        assert sim.step_poll()
    for want in reversed(reports):
        assert sim.step_back()
        assert sim.report() == want


def test_comma_after_a_run_takes_back_exactly_the_last_poll() -> None:
    sim = dual_port(exact=True)
    sim.run_until(110_748)  # a paused run, between polls
    seen = polls(sim)
    assert sim.step_back()
    assert polls(sim) == seen[:-1]
    assert sim.now_ns == seen[-2][0]  # right after the poll before the last one
    assert sim.step_back()
    assert polls(sim) == seen[:-2]
    assert sim.step_poll()  # and . brings back the very same poll
    assert polls(sim) == seen[:-1]


def test_comma_between_two_polls_of_one_instant_takes_back_one() -> None:
    probe = dual_port(exact=True)
    probe.run_until(500_000)
    times = [p[0] for p in polls(probe)]
    shared = [t for t in times if times.count(t) >= 2][-1]  # two CPUs polled at one instant
    sim = dual_port(exact=True)
    sim.run_until(shared)
    seen = polls(sim)
    assert seen[-1][0] == seen[-2][0] == shared
    assert sim.step_back()
    assert polls(sim) == seen[:-1]
    assert sim.now_ns == shared  # still that instant, between its two polls
    assert sim.step_back()
    assert polls(sim) == seen[:-2]


def test_comma_after_fast_mode_replays_exact_mode_and_takes_back_one_poll() -> None:
    sim = dual_port(exact=False)
    sim.run_until(3_000_000)
    assert not polls(sim)  # fast mode records no polls
    assert sim.step_back()
    assert sim.exact
    first = polls(sim)
    assert first and sim.now_ns == first[-1][0] < 3_000_000
    assert sim.step_poll()  # the poll the comma took back: the last before 3 ms
    last = polls(sim)[-1]
    assert len(polls(sim)) == len(first) + 1 and last[0] < 3_000_000
    assert sim.step_back() and polls(sim) == first
    assert sim.step_back() and polls(sim) == first[:-1]


def test_comma_right_after_switching_from_fast_mode_goes_back_in_time() -> None:
    sim = dual_port(exact=False)
    sim.run_until(3_000_000)
    assert sim.step_poll()  # switches to exact mode at 3 ms, one poll
    assert sim.step_back()  # the saved state: exact mode, no poll yet
    assert not polls(sim) and sim.now_ns == 3_000_000
    assert sim.step_back()  # no exact poll to undo since the switch: replayed, one back
    before = polls(sim)
    assert before and sim.now_ns < 3_000_000
    assert sim.step_back() and polls(sim) == before[:-1]


def test_comma_after_running_to_the_next_event_takes_back_one_poll() -> None:
    sim = dual_port(exact=True)
    sim.run_until(100_000)
    start = len(polls(sim))
    counted: list[int] = []

    def fifth_poll(record: dict[str, Any]) -> bool:
        counted.extend([1] if record["kind"] == "napi_poll" else [])
        return len(counted) == 5

    assert sim.step_until(fifth_poll, 5_000)  # ] ran five polls
    seen = polls(sim)
    assert len(seen) == start + 5
    assert sim.step_back()
    assert polls(sim) == seen[:-1]


def test_previous_poll_ns_is_where_a_comma_ends() -> None:
    sim = dual_port(exact=True)
    sim.run_until(110_748)
    seen = polls(sim)
    assert sim.previous_poll_ns() == seen[-2][0]
    sim.step_back()
    assert sim.now_ns == seen[-2][0]


def test_comma_with_no_poll_ever_says_so() -> None:
    sim = dual_port(exact=True)
    assert not sim.step_back()
    assert sim.now_ns == 0
