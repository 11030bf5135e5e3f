"""Time as a control, driven with Pilot against the real engine: a lesson topology opens
paused at t = 0 in slow motion; ``.`` is exactly one NAPI poll; ``,`` is exactly the state
before it; ``home`` is t = 0 again with the same seed and timeline."""

from __future__ import annotations

from typing import Any

from conftest import TOPOLOGIES
from test_app import header

from xdptui.app import LESSON_SPEED, REAL_TIME, XdpApp, make_app
from xdptui.model.views import Frame
from xdptui.sim.engine import Simulator

SIZE = (120, 40)
DUAL_PORT = str(TOPOLOGIES / "dual_port.yaml")


def fingerprint(frame: Frame) -> str:
    """Everything the screen draws from a frame, but its sequence number and CPU busy shares
    and polls per CPU (both are over the time since the previous frame, not state)."""
    return repr(
        (
            frame.t_ns,
            frame.devices,
            frame.tracepoints,
            frame.bulk_queues,
            frame.maps,
            frame.sources,
            frame.events,
            frame.lesson,
            frame.exact,
            [(c.cpu, c.rx_queues, c.xdp_tx_rings) for c in frame.cpus],
        )
    )


def engine(app: XdpApp) -> Simulator:
    assert isinstance(app.sim, Simulator)
    return app.sim


def polls(app: XdpApp, since: int = 0) -> list[dict[str, Any]]:
    return [e for e in engine(app).events(since) if e["kind"] == "napi_poll"]


async def test_a_lesson_topology_opens_paused_at_t0_in_slow_motion() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.paused and app.speed_ns_per_s == LESSON_SPEED
        frame = app.frame
        assert frame is not None and frame.t_ns == 0 and frame.exact
        assert frame.lesson is not None and (frame.lesson.lesson, frame.lesson.step) == (0, 0)
        text = header(app)
        assert "t 0ns" in text and "PAUSED" in text and "10 µs/s exact" in text
        assert not polls(app)


async def test_a_topology_without_lessons_opens_running_at_real_time(tmp_path: Any) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(
        "name: plain\ndevices:\n  eth0: {type: nic, driver: ice, queues: 1, xdp: xdp_drop}\n"
        "traffic:\n  - {name: g, to: eth0, rate: 1Mpps}\n"
    )
    app = make_app(str(path))
    assert not app.paused and app.speed_ns_per_s == REAL_TIME


async def test_speed_and_paused_override_how_a_lesson_opens() -> None:
    app = make_app(DUAL_PORT, speed_ns_per_s=REAL_TIME)
    assert not app.paused and app.speed_ns_per_s == REAL_TIME
    app = make_app(DUAL_PORT, paused=True, speed_ns_per_s=1_000_000)
    assert app.paused and app.speed_ns_per_s == 1_000_000


async def test_dot_is_exactly_one_poll_and_the_ring_moves_by_what_it_took_and_what_arrived() -> (
    None
):
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(12):
            before = app.frame
            seq = engine(app).state.stream.seq
            await pilot.press(".")
            await pilot.pause()
            after = app.frame
            assert before is not None and after is not None and after.t_ns >= before.t_ns
            (poll,) = polls(app, seq)  # exactly one poll, the next in time order
            assert poll["t_ns"] == after.t_ns
            assert poll["ring_after"] == poll["ring_before"] - poll["frames"]
            dev = poll["dev"]
            # the device's rings: + the frames its source sent meanwhile, - what the poll took
            occupied = sum(q.occupancy for q in after.device(dev).queues)
            was = sum(q.occupancy for q in before.device(dev).queues)
            (src,) = [s for s in after.sources if s.device == dev]
            (old,) = [s for s in before.sources if s.device == dev]
            assert occupied - was == (src.emitted - old.emitted) - poll["frames"]
            polled = after.device(dev).queues[poll["queue"]]
            assert (
                polled.rx_packets - before.device(dev).queues[poll["queue"]].rx_packets
                == (poll["frames"])
            )


async def test_comma_returns_exactly_the_state_before_the_dot() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        shots = []
        for _ in range(6):
            assert app.frame is not None
            shots.append(fingerprint(app.frame))
            await pilot.press(".")
            await pilot.pause()
        for want in reversed(shots):
            await pilot.press(",")
            await pilot.pause()
            assert app.frame is not None and fingerprint(app.frame) == want
        assert app.frame.t_ns == 0


async def test_comma_after_running_goes_back_exactly_one_poll() -> None:
    """Paused after a run (the issue's 110.748 µs): each ``,`` takes back one poll, the
    newest, even where two CPUs polled at one instant."""
    app = make_app(DUAL_PORT, paused=True, speed_ns_per_s=1_000_000)
    async with app.run_test(size=SIZE) as pilot:
        engine(app).advance(110_748)
        app.stage.refresh()
        seen = [(p["t_ns"], p["cpu"], p["queue"]) for p in polls(app)]
        for back in (1, 2, 3):
            await pilot.press(",")
            await pilot.pause()
            assert [(p["t_ns"], p["cpu"], p["queue"]) for p in polls(app)] == seen[:-back]
            assert app.frame is not None and app.frame.t_ns == seen[-back - 1][0]


async def test_home_restarts_at_t0_with_the_same_seed_and_timeline() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        assert app.frame is not None
        start = fingerprint(app.frame)
        for key in (".", ".", "n", "n", "."):  # step 3 pulls eth1's cable
            await pilot.press(key)
            await pilot.pause()
        assert app.frame.lesson is not None and app.frame.lesson.step == 2
        assert not app.frame.device("eth1").carrier
        await pilot.press("home")
        await pilot.pause()
        assert app.frame.t_ns == 0 and app.frame.device("eth1").carrier
        assert fingerprint(app.frame) == start
        await pilot.press(".")
        await pilot.pause()
        assert len(polls(app)) == 1


async def test_a_step_starts_its_timeline_entries_and_p_goes_back_to_the_previous_step() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(".", ".", "n")  # step 2: no entries, 1 ms/s
        await pilot.pause()
        assert app.speed_ns_per_s == 1_000_000
        assert app.frame is not None
        at_step2 = fingerprint(app.frame)
        await pilot.press(".", ".", "n")  # step 3: eth1's cable is pulled, now
        await pilot.pause()
        frame = app.frame
        assert frame.lesson is not None and frame.lesson.step == 2
        assert not frame.device("eth1").carrier
        (pulled,) = [e for e in frame.events if e.cmd == "ip link set dev eth1 carrier off"]
        assert pulled.origin == "timeline" and pulled.t_ns == frame.lesson.t_ns == frame.t_ns
        await pilot.press("p")
        await pilot.pause()
        assert app.paused and app.frame is not None and fingerprint(app.frame) == at_step2
        assert app.frame.device("eth1").carrier


async def test_stepping_back_over_a_step_start_shows_the_step_before_it() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(".", "n", ".")
        await pilot.pause()
        assert app.guide.position() == (0, 1)
        await pilot.press(",", ",")
        await pilot.pause()
        assert app.guide.position() == (0, 0)


def test_a_cpu_that_just_polled_is_not_shown_idle_at_the_same_instant() -> None:
    """Stepping polls one by one, several fall on one nanosecond: a frame at the same instant
    as the last has no interval of its own, so it shows the last interval's busy shares (a
    CPU that polled in it is busy), never 0 % because no time passed."""
    sim = Simulator.from_file(DUAL_PORT, seed=7)
    sim.exact = True  # poll by poll
    frames = [sim.frame()]
    while len(frames) < 40:
        sim.step_poll()
        frames.append(sim.frame())
        if frames[-1].t_ns == frames[-2].t_ns and frames[-2].t_ns > frames[-3].t_ns:
            break
    before, same = frames[-2], frames[-1]
    assert same.t_ns == before.t_ns  # two frames at one instant
    busy = {c.cpu: c.busy for c in before.cpus}
    assert any(b > 0 for b in busy.values())  # someone polled in the interval
    assert {c.cpu: c.busy for c in same.cpus} == busy


async def test_pausing_a_running_fast_mode_clock_shows_the_present_the_next_key_acts_on() -> None:
    """While the clock runs, fast mode's frames are its last whole step (a step ends on its
    grid, behind the engine's present); paused, the screen is the present -- what ``,`` and
    ``.`` step from and a command acts on -- not the last step drawn."""
    from fake_sim import FakeClock

    from xdptui.topology_io import load_topology
    from xdptui.widgets.format import format_sim_time

    clock = FakeClock()
    app = XdpApp(Simulator(load_topology(TOPOLOGIES / "line_rate.yaml")), paused=True, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        for _ in range(4):
            clock.t += 0.0013  # 1.3 ms of simulated time a tick at real time: off the step grid
            app.tick()
        sim = engine(app)
        assert not sim.exact and sim.state.committed != sim.now_ns  # the last step drawn lags
        await pilot.press("space")
        await pilot.pause()
        assert app.paused
        assert f"t {format_sim_time(sim.now_ns)} " in header(app)
