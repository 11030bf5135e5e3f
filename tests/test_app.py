"""The first screen, driven with Pilot against the fake simulator, and the pure projection.

Every app test starts paused with an injected real-time clock, so nothing moves unless the test
moves it; assertions are on what the widgets draw.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fake_sim import POLL_NS, FakeClock, FakeSim
from textual.pilot import Pilot
from textual.widget import Widget

from xdptui.app import APP_COMMANDS, SPEEDS, Pacer, XdpApp, make_app
from xdptui.widgets.cpus import CpuMap
from xdptui.widgets.devices import DevicesTable
from xdptui.widgets.drops import DropsPanel
from xdptui.widgets.events import EventLog
from xdptui.widgets.format import (
    format_count,
    format_cpus,
    format_pps,
    format_rtf,
    format_sim_time,
    format_speed,
)
from xdptui.widgets.header import SimHeader
from xdptui.widgets.key_bar import KeyBar
from xdptui.widgets.project import DEVICE_COUNTERS, project, rate
from xdptui.widgets.rings import RingsPanel, gauge_cells

SIZE = (120, 40)
DUAL_PORT = Path(__file__).resolve().parent.parent / "topologies" / "dual_port.yaml"


def rendered(widget: Widget) -> str:
    """The visible text of a widget, line by line, as the compositor would draw it."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def make(sim: FakeSim | None = None, clock: FakeClock | None = None) -> tuple[XdpApp, FakeSim]:
    sim = sim or FakeSim()
    return XdpApp(sim, paused=True, clock=clock or FakeClock()), sim


def header(app: XdpApp) -> str:
    return rendered(app.screen.query_one(SimHeader))


TAB_KEYS = {"paths": "1", "devices": "2", "rings": "3", "drops": "4", "bond": "5", "lesson": "6"}


async def open_tab(pilot: Pilot[None], tab: str) -> None:
    """Press the tab's number key and let the tab lay out."""
    await pilot.press(TAB_KEYS[tab])
    await pilot.pause()


# --- the clock keys ------------------------------------------------------------------------


async def test_space_toggles_pause() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        assert "PAUSED" in header(app)
        await pilot.press("space")
        await pilot.pause()
        assert not app.paused
        assert "PAUSED" not in header(app)
        await pilot.press("space")
        await pilot.pause()
        assert "PAUSED" in header(app)


async def test_dot_steps_one_poll_and_the_header_time_moves() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        assert "t 0ns" in header(app)
        await pilot.press(".")
        await pilot.pause()
        assert sim.step_calls == 1
        assert f"t {format_sim_time(POLL_NS)}" in header(app)
        await pilot.press(".", ".")
        await pilot.pause()
        assert sim.step_calls == 3
        assert "t 3.000µs" in header(app)


async def test_dot_pauses_a_running_clock_before_stepping() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert not app.paused
        await pilot.press(".")
        await pilot.pause()
        assert app.paused
        assert sim.step_calls == 1
        assert "PAUSED" in header(app)


async def test_plus_and_minus_change_the_speed_label() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        assert "1 s/s" in header(app)
        await pilot.press("-")
        await pilot.pause()
        assert "100 ms/s" in header(app)
        for _ in range(10):
            await pilot.press("-")
        await pilot.pause()
        assert "1 µs/s" in header(app)
        await pilot.press("+")
        await pilot.pause()
        assert "10 µs/s" in header(app)
        for _ in range(10):
            await pilot.press("+")
        await pilot.pause()
        assert "1 s/s" in header(app)
        assert app.speed_ns_per_s == SPEEDS[-1]


async def test_q_quits() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


# --- the command line ----------------------------------------------------------------------


async def test_colon_command_enter_submits_and_the_reply_is_logged() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        command_line = app.main_screen.command_line
        assert not command_line.display
        await pilot.press(":")
        await pilot.pause()
        assert command_line.display and command_line.has_focus
        await pilot.press(*"ip link set dev eth0 xdp off")
        await pilot.press("enter")
        await pilot.pause()
        assert sim.submitted == [("ip link set dev eth0 xdp off", "user")]
        log = rendered(app.screen.query_one(EventLog))
        assert "ip link set dev eth0 xdp off" in log
        assert "EOPNOTSUPP  RTNETLINK answers:" in log
        assert not command_line.display


async def test_keys_typed_in_the_command_line_do_not_drive_the_clock() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(":")
        await pilot.press(*"q. +")
        await pilot.pause()
        assert app.is_running and app.paused
        assert sim.step_calls == 0
        assert app.main_screen.command_line.value == "q. +"


async def test_escape_closes_the_command_line_without_submitting() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(":", *"ethtool -L eth0 combined 4", "escape")
        await pilot.pause()
        assert sim.submitted == []
        assert not app.main_screen.command_line.display


async def test_a_successful_command_shows_its_effect_while_paused() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(":", *"ip link set dev eth1 down", "enter")
        await open_tab(pilot, "devices")
        devices = rendered(app.screen.query_one(DevicesTable))
        eth1 = next(line for line in devices.splitlines() if line.startswith("eth1"))
        assert "down" in eth1
        assert "✓ $ ip link set dev eth1 down" in rendered(app.screen.query_one(EventLog))


async def test_command_history_recalls_the_previous_command() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(":", *"ip link set dev eth1 down", "enter")
        await pilot.press(":", "up")
        await pilot.pause()
        assert app.main_screen.command_line.value == "ip link set dev eth1 down"


# --- panels --------------------------------------------------------------------------------


async def test_rings_panel_draws_a_gauge_per_rx_queue_and_xdp_tx_ring() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        sim.advance(2_000_000)
        app.stage.refresh()
        await open_tab(pilot, "rings")
        rings = app.screen.query_one(RingsPanel)
        text = rendered(rings)
        assert "eth0 q0 cpu0" in text
        q3 = next(line for line in text.splitlines() if line.lstrip().startswith("eth0 q3 cpu3"))
        assert "[" in q3 and "|" in q3  # the peak marker
        assert "/512 peak 480 drop 200" in q3
        assert rings.virtual_size.height == 8 + 16 + 8 + 8  # scrolls to eth1's rings


async def test_shared_xdp_tx_rings_are_marked_locked() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "rings")
        cpus = rendered(app.screen.query_one(CpuMap))
        cpu3 = next(line for line in cpus.splitlines() if line.lstrip().startswith("cpu3 "))
        assert "eth0:q3" in cpu3
        assert "eth0:tx3 eth1:tx3🔒" in cpu3
        rings = app.screen.query_one(RingsPanel)
        rings.scroll_to(y=24, animate=False, immediate=True)
        await pilot.pause()
        assert "eth1 tx0 cpu0,8🔒" in rendered(rings)


async def test_clicking_a_device_focuses_its_rings_and_a_second_click_clears() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "devices")
        table = app.screen.query_one(DevicesTable)
        rings = app.screen.query_one(RingsPanel)
        row = next(
            y for y, line in enumerate(rendered(table).splitlines()) if line.startswith("eth1")
        )
        offset = (3, row + table.content_region.y - table.region.y)
        await pilot.click(DevicesTable, offset=offset)
        await pilot.pause()
        assert app.focus_device == "eth1"
        await open_tab(pilot, "rings")
        text = rendered(rings)
        assert "eth1 q0 cpu8" in text and "eth0 q0" not in text
        assert rings.border_title == "Rings: eth1"
        await open_tab(pilot, "devices")
        await pilot.click(DevicesTable, offset=offset)
        await pilot.pause()
        assert app.focus_device is None
        await open_tab(pilot, "rings")
        assert "eth0 q0 cpu0" in rendered(rings)


async def test_devices_table_shows_xdp_inheritance_and_rates() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        sim.advance(1_000_000)
        app.stage.refresh()
        sim.advance(1_000_000)
        app.stage.refresh()
        await open_tab(pilot, "devices")
        lines = rendered(app.screen.query_one(DevicesTable)).splitlines()
        assert lines[0].split()[:4] == ["DEV", "TYPE", "LINK", "XDP"]
        eth0 = lines.index(next(line for line in lines if line.startswith("eth0")))
        assert "nic/ice" in lines[eth0] and "xdp_tx native" in lines[eth0]
        assert "10Mpps" in lines[eth0]  # one frame per 100 ns
        assert "master bond0" in lines[eth0 + 1] and "⇐ from bond0" in lines[eth0 + 1]
        assert "20K" in lines[eth0 + 1]  # rx_packets after 2 ms


async def test_drops_panel_lists_tracepoint_buckets() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        sim.advance(3_200_000)
        app.stage.refresh()
        await open_tab(pilot, "drops")
        text = rendered(app.screen.query_one(DropsPanel))
        assert "eth0 q3 cpu3" in text  # ring full
        assert "eth1 XDP_TX" in text  # xdp_exception
        assert "eth0->eth1" in text and "16.0" in text  # devmap_xmit bulk-avg


async def test_event_log_appends_only_new_events() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(EventLog)
        sim.submit("ip link set dev eth1 down", origin="timeline")
        app.stage.refresh()
        await pilot.pause()
        first = log.render_line(0)
        sim.submit("bogus")
        app.stage.refresh()
        await pilot.pause()
        text = rendered(log)
        assert log.render_line(0) is first or log.render_line(0) == first
        assert "@ ip link set dev eth1 down" in text
        assert "EINVAL" in text and "bogus" in text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_every_tab_is_usable_at_small_sizes(size: tuple[int, int]) -> None:
    app, _ = make()
    async with app.run_test(size=size) as pilot:
        for tab in TAB_KEYS:
            await open_tab(pilot, tab)
            for widget in (*app.main_screen.panels_of(tab), app.main_screen.event_log):
                name = f"{tab}: {type(widget).__name__}"
                assert widget.size.height >= 2, name
                assert widget.size.width >= 30, name
            if tab == "rings":
                assert "eth0 q0" in rendered(app.screen.query_one(RingsPanel))


async def test_make_app_drives_the_real_engine() -> None:
    app = make_app(str(DUAL_PORT), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(".")
        await open_tab(pilot, "rings")
        assert app.frame is not None and app.frame.t_ns > 0
        assert app.frame.name in header(app)
        assert "eth0 q0 cpu0" in rendered(app.screen.query_one(RingsPanel))
        assert "cpu0" in rendered(app.screen.query_one(CpuMap))


# --- bindings and the palette ------------------------------------------------------------


async def test_every_binding_has_an_id_and_shows_in_the_key_bar_when_it_fits() -> None:
    app, _ = make()
    async with app.run_test(size=(240, 40)) as pilot:
        await pilot.pause()
        bar = rendered(app.screen.query_one(KeyBar))
        for command in APP_COMMANDS:
            assert command.id
            if command.show and not command.action.startswith("lesson"):
                assert command.description in bar
        assert "all keys" not in bar


async def test_the_key_bar_is_never_clipped_what_does_not_fit_is_left_to_help() -> None:
    app, _ = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        bar = rendered(app.screen.query_one(KeyBar)).rstrip()
        assert bar.endswith("? all keys") and len(bar) <= 80
        assert "space Run" in bar and ". Step" in bar and ", Back" in bar
        await pilot.press("space")
        await pilot.pause()
        assert "space Pause" in rendered(app.screen.query_one(KeyBar))


async def test_the_lesson_keys_show_in_the_footer_of_a_lesson() -> None:
    app = make_app(str(DUAL_PORT), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        footer = rendered(app.screen.query_one(KeyBar))
        for command in APP_COMMANDS:
            if command.show and command.action.startswith("lesson"):
                assert command.description in footer


async def test_commands_are_in_the_palette() -> None:
    app, _ = make()
    async with app.run_test(size=SIZE):
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for command in APP_COMMANDS:
            assert titles.count(command.title) == 1
        assert "Theme" in titles


async def test_palette_step_runs_the_step_action() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        step = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Step"))
        await step.callback()
        await pilot.pause()
        assert sim.step_calls == 1


# --- pacing -------------------------------------------------------------------------------


async def test_tick_advances_speed_times_real_elapsed() -> None:
    """Each tick advances speed x the real time elapsed, and tells the engine that the running
    clock goes on a second of the clock (``Simulator.expect``: fast mode then compiles NAPI's
    loop at once); paused, it does neither."""
    clock = FakeClock()
    app, sim = make(clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        clock.t += 0.1
        app.tick()
        assert sum(sim.advance_calls) == 100_000_000
        assert sim.expected == 1_000_000_000  # (the clock was at 0)
        await pilot.press("-", "-", "-")  # 1 ms/s
        clock.t += 0.2
        app.tick()
        assert sum(sim.advance_calls) == 100_000_000 + 200_000
        assert sim.expected == 100_000_000 + 1_000_000
        await pilot.pause()
        assert "RTF" not in header(app)
        await pilot.press("space")
        before, calls = sim.expected, len(sim.advance_calls)
        clock.t += 0.2
        app.tick()
        assert (sim.expected, len(sim.advance_calls)) == (before, calls)


async def test_a_slow_simulation_is_capped_per_tick_and_shows_rtf() -> None:
    clock = FakeClock()

    def costly(dt_ns: int) -> None:
        clock.t += dt_ns * 10e-9  # 10 ns of wall time per simulated ns: 10x slower than real

    app, sim = make(sim=FakeSim(on_advance=costly), clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        clock.t += 1 / 30
        app.tick()
        budget = 0.5 / 30
        # Work stops once the budget is spent (one chunk of overshoot at most).
        assert sum(sim.advance_calls) * 10e-9 < 2 * budget
        assert sum(sim.advance_calls) < 1_000_000_000 / 30
        await pilot.pause()
        assert "RTF 0." in header(app)


def test_pacer_drops_what_it_could_not_do_instead_of_catching_up() -> None:
    clock = FakeClock()
    sim = FakeSim(on_advance=lambda dt: setattr(clock, "t", clock.t + dt * 1e-7))
    pacer = Pacer(clock, fps=30)
    pacer.reset()
    for _ in range(5):
        clock.t += 1 / 30
        pacer.tick(sim, SPEEDS[-1])
    per_tick = sum(sim.advance_calls) / 5
    assert per_tick < 1_000_000  # far below the 33 ms asked for
    assert pacer.behind and 0 < pacer.rtf < 0.05


def test_pacer_caps_a_stall() -> None:
    clock = FakeClock()
    sim = FakeSim()
    pacer = Pacer(clock, fps=30)
    pacer.reset()
    clock.t += 10.0  # the terminal was suspended
    pacer.tick(sim, SPEEDS[-1])
    assert sum(sim.advance_calls) == int(Pacer.MAX_STALL_S * 1e9)


# --- pure projection and formatting -------------------------------------------------------


def test_project_rates_are_counter_deltas_over_simulated_time() -> None:
    sim = FakeSim()
    sim.advance(1_000_000)
    before = sim.frame()
    sim.advance(500_000)
    after = sim.frame()
    views = project(before, after)
    eth0 = next(row for row in views.devices.rows if row.name == "eth0")
    rx = [heading for heading, _ in DEVICE_COUNTERS].index("RX")
    assert eth0.totals[rx] == 15_000
    assert eth0.rates[rx] == pytest.approx(10_000_000)
    drops = views.drops
    assert drops.ring_full[0].per_s == pytest.approx(100_000)
    assert drops.devmap_xmit[0].sent_per_s == pytest.approx(5_000_000)
    assert drops.devmap_xmit[0].bulk_avg == pytest.approx(16.0, rel=0.01)


def test_project_without_a_previous_frame_has_no_rates() -> None:
    frame = FakeSim().frame()
    views = project(None, frame)
    assert all(r is None for row in views.devices.rows for r in row.rates)
    assert format_pps(None) == "-"


def test_project_filters_rings_to_the_focused_device_and_its_slaves() -> None:
    sim = FakeSim()
    frame = sim.frame()
    assert {row.device for row in project(None, frame, focus="eth0").rings.rows} == {"eth0"}
    assert {row.device for row in project(None, frame, focus="bond0").rings.rows} == {
        "eth0",
        "eth1",
    }
    assert project(None, frame, focus="nope").rings.focus is None


def test_equal_frames_project_to_equal_views() -> None:
    sim = FakeSim()
    a = project(None, sim.frame())
    b = project(None, sim.frame())
    assert a == b
    assert replace(a.rings, focus="eth0") != a.rings


def test_rate_of_a_counter_that_went_backwards_is_zero() -> None:
    assert rate(100, 50, 1_000) == 0
    assert rate(None, 50, 1_000) is None
    assert rate(10, 50, 0) is None


def test_gauge_cells_show_any_occupancy_and_the_peak() -> None:
    assert gauge_cells(0, 512, None, 10) == (0, None)
    assert gauge_cells(1, 512, 512, 10) == (1, 9)
    assert gauge_cells(256, 512, 480, 10) == (5, 9)
    assert gauge_cells(512, 512, 512, 10) == (10, 9)


def test_formats() -> None:
    assert format_sim_time(0) == "0ns"
    assert format_sim_time(12_345) == "12.345µs"
    assert format_sim_time(1_234_567) == "1.234567ms"
    assert format_sim_time(2_000_000_001) == "2.000000001s"
    assert format_speed(1_000) == "1 µs/s"
    assert format_speed(100_000_000) == "100 ms/s"
    assert format_speed(1_000_000_000) == "1 s/s"
    assert format_pps(14_880_000) == "14.9Mpps"
    assert format_pps(14_880_000, digits=4) == "14.88Mpps"
    assert format_pps(999_999) == "1Mpps"
    assert format_count(9_999) == "9999"
    assert format_count(1_234_567) == "1.23M"
    assert format_rtf(0.4213) == "0.42"
    assert format_rtf(0.0031) == "0.0031"
    assert format_cpus((0, 1, 2, 3, 8, 10, 11)) == "0-3,8,10-11"
