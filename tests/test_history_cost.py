"""History costs O(1) per command: a checkpoint (a copy of the state) stores as much after
2,000 commands as after 100, whether they came from the timeline or the user, and a timeline
of 2,000 entries waits in the state as one timer. Measured as the bytes a copy keeps alive
(tracemalloc), never as time. What the user sees of the history stays whole: the report lists
every command, the log the newest ``LOG_MAX`` lines, and a rewind replays the same past."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from xdptui.sim import engine
from xdptui.sim.engine import Simulator
from xdptui.sim.history import CHUNK, Chain
from xdptui.sim.state import LOG_MAX, copy_state
from xdptui.topology_io import loads_topology

STEP_NS = 5_000  # one timeline entry every 5 us
HOST = """\
name: flaps
seed: 1
cpus: 2
devices:
  eth0: {type: nic, driver: ice, speed: 10G, queues: 2, ring: 512, irq_cpus: [0, 1],
         xdp: xdp_pass}
  eth1: {type: nic, driver: ice, speed: 10G, queues: 2, ring: 512, irq_cpus: [0, 1]}
traffic:
  - {name: app, to: eth0, rate: 100Kpps, size: 64, proto: udp, src_ip: 10.0.0.1,
     dst_ip: 10.0.0.2, src_port: 1000-1063, dst_port: 80, flows: 64}
"""


def flap(i: int) -> str:
    return f"ip link set dev eth1 {'down' if i % 2 == 0 else 'up'}"


def flapping(n: int) -> Simulator:
    """The host above with a timeline that takes eth1 down and up ``n`` times."""
    timeline = "".join(f'  - {{at: {(i + 1) * 5}us, do: "{flap(i)}"}}\n' for i in range(n))
    return Simulator(loads_topology(HOST + ("timeline:\n" + timeline if n else "")))


def checkpoint_bytes(sim: Simulator) -> int:
    """The bytes a copy of the present state keeps alive (what a checkpoint stores). Copied
    twice, measured the second time: the first may fill caches every copy shares."""
    copy_state(sim.state)
    gc.collect()
    tracemalloc.start()
    try:
        kept = copy_state(sim.state)
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del kept
    return size


def test_a_checkpoint_stores_as_much_after_2000_timeline_commands_as_after_100() -> None:
    sizes = {}
    for n in (100, 2000):
        sim = flapping(n)
        sim.run_until(STEP_NS + 1)  # the first entry applied, the rest of the timeline ahead
        sizes[n, "ahead"] = checkpoint_bytes(sim)
        sim.run_until((n + 1) * STEP_NS)  # every entry applied
        assert len(sim.report()["events"]) == 1 + n  # the boot's attach, then the timeline
        sizes[n, "done"] = checkpoint_bytes(sim)
    least = min(sizes.values())
    assert max(sizes.values()) < least * 1.05 + 16_384, sizes


def test_a_checkpoint_stores_as_much_after_2000_user_commands_as_after_100() -> None:
    sim = flapping(0)
    sizes = {}
    for i in range(2000):
        sim.advance(2_000)
        assert sim.submit(flap(i)).ok
        if i + 1 in (100, 2000):
            sizes[i + 1] = checkpoint_bytes(sim)
    assert sizes[2000] < sizes[100] * 1.05 + 16_384, sizes


def test_the_report_lists_every_command_and_the_log_the_newest() -> None:
    n = LOG_MAX + 150
    sim = flapping(n)
    sim.run_until((n + 1) * STEP_NS)
    events = sim.report()["events"][1:]  # after the boot's attach of eth0's program
    assert [e["cmd"] for e in events] == [flap(i) for i in range(n)]
    assert [e["t_ns"] for e in events] == [(i + 1) * STEP_NS for i in range(n)]
    shown = sim.frame().events
    assert [e.cmd for e in shown] == [flap(i) for i in range(n - LOG_MAX, n)]


def test_a_rewind_into_a_long_timeline_replays_the_same_past() -> None:
    straight = flapping(600)
    straight.run_until(3_100_000)
    sim = flapping(600)
    sim.run_until(2_000_000)
    sim.rewind(1_234_567)
    assert len(sim.report()["events"]) == 1 + 1_234_567 // STEP_NS
    sim.run_until(3_100_000)
    assert sim.report() == straight.report()


def test_a_refused_command_leaves_the_log_as_it_was_plus_its_own_line() -> None:
    sim = flapping(300)
    sim.run_until(301 * STEP_NS)
    before = sim.report()["events"]
    result = sim.submit("ip link set dev eth9 down")
    assert not result.ok and result.errno == "ENODEV"
    events = sim.report()["events"]
    assert events[:-1] == before
    assert events[-1]["cmd"] == "ip link set dev eth9 down" and events[-1]["errno"] == "ENODEV"


def test_a_copy_of_a_chain_keeps_what_it_had_while_the_original_grows() -> None:
    log: Chain[int] = Chain()
    for i in range(3 * CHUNK + 5):
        log.append(i)
    copy = log.__copy__()
    for i in range(3 * CHUNK + 5, 5 * CHUNK):
        log.append(i)
    copy.append(-1)
    assert list(copy) == [*range(3 * CHUNK + 5), -1]
    assert list(log) == list(range(5 * CHUNK))
    assert log.newest(7) == tuple(range(5 * CHUNK - 7, 5 * CHUNK))


def test_a_bounded_chain_keeps_the_newest_and_lets_the_rest_go() -> None:
    keep = 3 * CHUNK
    log: Chain[int] = Chain(keep)
    for i in range(50 * CHUNK):
        log.append(i)
    assert keep <= len(log) <= keep + CHUNK
    assert list(log) == list(range(50 * CHUNK - len(log), 50 * CHUNK))
    assert log.newest(keep) == tuple(range(50 * CHUNK - keep, 50 * CHUNK))


def user_flaps(sim: Simulator, n: int) -> None:
    """``n`` user commands, one every 2 us."""
    for i in range(n):
        sim.advance(2_000)
        assert sim.submit(flap(i)).ok


def test_inputs_kept_for_replay_are_bounded_and_a_rewind_still_replays_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine, "INPUTS_MAX", 200)
    straight = flapping(0)
    user_flaps(straight, 1000)
    straight.advance(10_000)
    sim = flapping(0)
    user_flaps(sim, 1000)
    assert sim.state.inputs.kept <= 200 and sim.state.inputs.count == 1000
    sim.rewind(sim.now_ns - 41_000)  # 21 commands back (one every 2 us, the last now)
    assert len(sim.report()["events"]) == 1 + 979
    sim.run_until(straight.now_ns)
    assert sim.report() == straight.report()


def test_a_rewind_before_the_oldest_checkpoint_kept_goes_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine, "INPUTS_MAX", 100)
    sim = flapping(0)
    user_flaps(sim, 500)
    oldest = sim.checkpoints[0].t
    assert oldest > 0
    sim.rewind(0)
    assert sim.now_ns == oldest
    sim.restart()  # home still goes back to t = 0 as built
    assert sim.now_ns == 0 and sim.report()["events"] == sim.report()["events"][:1]


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_the_boot_state_is_built_again_when_needed_and_is_the_boot_it_was(exact: bool) -> None:
    """Starting keeps no copy of the booted state (for a large topology most of its build):
    ``home`` (restart) and a rewind to 0 build it again, and what they give is the state a
    fresh boot gives -- the same report at 0 and after the same run; a rewind to 0 replays
    the commands given since."""
    fresh = Simulator(loads_topology(HOST), exact=exact)
    fresh.run_until(300_000)
    sim = Simulator(loads_topology(HOST), exact=exact)
    sim.run_until(200_000)
    assert sim.submit("ip link set dev eth0 xdp off").ok
    sim.run_until(400_000)
    sim.restart()
    assert sim.now_ns == 0
    assert sim.report() == Simulator(loads_topology(HOST), exact=exact).report()
    sim.run_until(300_000)
    assert sim.report() == fresh.report()
    sim.run_until(150_000 + 300_000)
    assert sim.submit("ip link set dev eth0 xdp off").ok  # at 450 us
    sim.run_until(600_000)
    want = sim.report()
    sim.rewind(0)
    sim.run_until(600_000)
    assert sim.report() == want
