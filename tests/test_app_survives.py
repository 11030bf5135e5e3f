"""The app stays up: a panel that fails to draw, the palette's page keys after a resize, a
simulator that raises, an event history that keeps growing, and random keys and resizes.

Every test asserts on what the user sees (the panel's line, a notification, the log's lines)
and that the app is still running and answering keys afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
import textual.app
import textual.pilot
from fake_sim import FakeClock, FakeSim
from keymash import KEYS, mash
from textual._wait import wait_for_idle
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widget import Widget

import xdptui.app
from xdptui.app import SafeCommandPalette, XdpApp, make_app
from xdptui.model.views import EventView
from xdptui.widgets.devices import DevicesTable
from xdptui.widgets.events import MAX_EVENTS, EventLog
from xdptui.widgets.header import SimHeader
from xdptui.widgets.project import Projection

SIZE = (120, 40)
TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"


def rendered(widget: Widget) -> str:
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def first_line(widget: Widget) -> str:
    return widget.render_line(0).text.strip()


def toasts(app: XdpApp) -> list[str]:
    return [str(toast.render()) for toast in app.screen.query("Toast")]


def make(sim: FakeSim | None = None) -> tuple[XdpApp, FakeSim]:
    sim = sim or FakeSim()
    return XdpApp(sim, paused=True, clock=FakeClock()), sim


async def still_answers(app: XdpApp, pilot: Pilot[None]) -> None:
    """The app is running and a key still does what it says (one NAPI poll forward)."""
    assert app.is_running
    before = app.sim.now_ns
    await pilot.press(".")
    await pilot.pause()
    assert app.sim.now_ns > before


# --- a panel that fails to draw ------------------------------------------------------------


async def test_a_panel_whose_drawing_raises_shows_why_and_the_app_runs_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: DevicesTable, view: object, width: int) -> object:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(DevicesTable, "build", broken)
    app, _ = make()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one(DevicesTable)
        assert rendered(table).startswith(
            "this panel failed to draw (ZeroDivisionError: division by zero)"
        )
        assert any("The devices panel failed to draw" in t for t in toasts(app))
        await still_answers(app, pilot)
    assert "panel devices failed to draw" in caplog.text
    assert "ZeroDivisionError" in caplog.text  # with its traceback


async def test_a_view_that_cannot_be_made_is_shown_in_its_panel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Projection) -> object:
        raise KeyError("eth9")

    monkeypatch.setattr(Projection, "drops", property(broken))
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        await pilot.pause()
        drops = app.main_screen.drops_panel
        assert rendered(drops).startswith("this panel failed to draw (KeyError: 'eth9')")
        await still_answers(app, pilot)


async def test_a_header_that_fails_to_render_is_one_line_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: SimHeader, part: str) -> object:
        raise ValueError("no such component")

    monkeypatch.setattr(SimHeader, "_style", broken)
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        header = app.screen.query_one(SimHeader)
        assert rendered(header).startswith("this panel failed to draw (ValueError")
        await still_answers(app, pilot)


async def test_a_simulator_that_raises_pauses_the_clock_and_says_so() -> None:
    def explode(dt_ns: int) -> None:
        raise RuntimeError("engine bug")

    clock = FakeClock()
    sim = FakeSim(on_advance=explode)
    app = XdpApp(sim, paused=True, clock=clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("space")  # run: the next frame's advance raises
        clock.t += 0.1
        app.tick()
        await pilot.pause()
        assert app.paused
        assert any("The simulation stopped: RuntimeError: engine bug" in t for t in toasts(app))
        sim.on_advance = None
        await still_answers(app, pilot)


# --- the command palette's page keys ------------------------------------------------------


PAGE_KEYS = [["ctrl+p", "down"], ["ctrl+p", "s"], ["ctrl+p"]]


@pytest.mark.parametrize("keys", PAGE_KEYS)
async def test_palette_page_keys_after_a_resize_keep_the_app_up(keys: list[str]) -> None:
    app, _ = make()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        assert isinstance(app.screen, SafeCommandPalette)
        await pilot.resize_terminal(120, 2)
        await pilot.pause()
        await pilot.press("pagedown", "pageup", "pagedown")
        await pilot.resize_terminal(*SIZE)
        await pilot.pause()
        await pilot.press("pagedown", "pageup")
        await pilot.pause()
        assert isinstance(app.screen, SafeCommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        await still_answers(app, pilot)


async def test_textual_s_own_palette_still_has_the_page_bug() -> None:
    """The upstream bug the workaround is for (Textual 8.2.8): when this starts failing, a
    Textual release fixed ``OptionList._move_page`` and :class:`SafeCommandPalette` can go."""

    class Stock(XdpApp):
        CSS_PATH = str(Path(xdptui.app.__file__).parent / "app.tcss")

        def action_command_palette(self) -> None:
            self.push_screen(CommandPalette(id="--command-palette"))

    app = Stock(FakeSim(), paused=True, clock=FakeClock())
    with pytest.raises(KeyError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p", "down")
            await pilot.pause()
            await pilot.resize_terminal(120, 2)
            await pilot.pause()
            await pilot.press("pagedown")
            await pilot.pause()


# --- what the app keeps of the event history ----------------------------------------------


def event(i: int) -> EventView:
    command = f"ip link set dev eth1 {'up' if i % 2 else 'down'}"
    return EventView(i * 1_000, command, True, None, "", "user")


async def test_the_event_log_keeps_the_newest_events_only() -> None:
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(EventLog)
        sim.events.extend(event(i) for i in range(3 * MAX_EVENTS))
        app.stage.refresh()
        await pilot.pause()
        assert log.virtual_size.height == MAX_EVENTS + 1  # one line each, and the marker
        log.scroll_home(animate=False)
        await pilot.pause()
        assert first_line(log) == f"… {2 * MAX_EVENTS} earlier events not shown"
        for batch in range(3):  # appended as they arrive, still bounded
            sim.events.extend(event(3 * MAX_EVENTS + batch * 10 + i) for i in range(10))
            app.stage.refresh()
            await pilot.pause()
        assert log.virtual_size.height == MAX_EVENTS + 1
        log.scroll_home(animate=False)
        await pilot.pause()
        assert first_line(log) == f"… {2 * MAX_EVENTS + 30} earlier events not shown"
        log.scroll_end(animate=False)
        await pilot.pause()
        newest = sim.events[-1]
        assert rendered(log).rstrip().splitlines()[-1].endswith(newest.cmd)


async def test_a_history_that_is_replaced_is_drawn_again() -> None:
    """An engine that keeps only its newest events hands a list that no longer just grows."""
    app, sim = make()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(EventLog)
        sim.events.extend(event(i) for i in range(5))
        app.stage.refresh()
        await pilot.pause()
        sim.events[:] = [event(i) for i in range(100, 105)]
        app.stage.refresh()
        await pilot.pause()
        assert "100.000µs" in rendered(log) and log.virtual_size.height == 5


def test_the_command_line_history_is_bounded() -> None:
    from xdptui.widgets.command_line import HISTORY, CommandLine

    line = CommandLine()
    for i in range(HISTORY + 50):
        line.remember(f"ip link set dev eth{i} up")
    assert len(line.history) == HISTORY
    assert line.history[-1] == f"ip link set dev eth{HISTORY + 49} up"


# --- random keys and resizes ---------------------------------------------------------------


# Every shipped topology takes 6 minutes on a 2-core machine (veth_pair alone 90 s): the
# teaching stories and tun_vm here; tests/keymash.py takes any list of files.
@pytest.mark.parametrize("topology", ["bond_redirect.yaml", "dual_port.yaml", "tun_vm.yaml"])
async def test_random_keys_and_resizes_never_take_the_app_down(
    topology: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty keys of the key-masher (tests/keymash.py runs the long version); counted in keys,
    not seconds, so a slow machine presses them all too. While the clock runs the app is never
    idle, so the harness's wait for idleness after each key is cut to a tenth of a second
    (keys come faster than a second apart: the app has less time between them, not more)."""

    def hurried(min_sleep: float = 0.0, max_sleep: float = 1.0) -> Coroutine[Any, Any, None]:
        return wait_for_idle(min_sleep, min(max_sleep, 0.1))

    monkeypatch.setattr(textual.app, "wait_for_idle", hurried)
    monkeypatch.setattr(textual.pilot, "wait_for_idle", hurried)
    app = make_app(str(TOPOLOGIES / topology), paused=True)
    rng = random.Random(topology)
    async with app.run_test(size=SIZE) as pilot:
        stats = await mash(app, pilot, rng, keys=40, seconds=600.0)
        assert stats.keys == 40 and app.is_running
        while not isinstance(app.screen, type(app.main_screen)):
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press(".")
        await pilot.pause()
    assert app.return_code in (None, 0)
    assert KEYS  # the masher's alphabet covers the app's bindings (checked in keymash)


async def test_a_command_the_simulator_fails_on_is_a_failed_reply_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, sim = make()

    def broken(cmd: str, origin: str = "user") -> object:
        raise OverflowError("Python int too large to convert to C long")

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        monkeypatch.setattr(sim, "submit", broken)
        await pilot.press("colon")
        app.main_screen.command_line.value = "pktgen tap0 rate 1Gpps"
        await pilot.press("enter")
        await pilot.pause()
        assert any("the simulator failed on this command: OverflowError" in t for t in toasts(app))
        monkeypatch.undo()
        await still_answers(app, pilot)


async def test_an_engine_that_fails_then_cannot_draw_keeps_the_last_frame_up() -> None:
    """Pausing shows the present -- except when the engine just failed: then the last frame
    drawn stays, and a simulator that cannot make another is not asked to."""

    class Broken(FakeSim):
        failed = False

        def frame(self, live: bool = False, zoom: object = None) -> Any:  # type: ignore[override]
            if self.failed:
                raise RuntimeError("no frame either")
            return super().frame(live, zoom)  # type: ignore[arg-type]

    def explode(dt_ns: int) -> None:
        sim.failed = True
        raise RuntimeError("engine bug")

    clock = FakeClock()
    sim = Broken(on_advance=explode)
    app = XdpApp(sim, paused=True, clock=clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("space")
        clock.t += 0.1
        app.tick()
        await pilot.pause()
        assert app.paused
        assert any("The simulation stopped: RuntimeError: engine bug" in t for t in toasts(app))
        assert "PAUSED" in rendered(app.screen.query_one(SimHeader))
