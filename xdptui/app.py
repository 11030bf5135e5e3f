"""The Textual app: the only code that knows both the simulator and the widgets.

``XdpApp`` is the keys, the clock and the frame timer; each job is an object of its own that it
composes: the :class:`~xdptui.app_stage.Stage` (the simulation on screen: pacing, frames, views,
the engine's mode), the :class:`~xdptui.app_console.Console` (command lines to the simulator),
the :class:`~xdptui.app_actions.DeviceActions` (the keys that change the host, each a dialog) and
the :class:`~xdptui.app_lessons.Guide` (lessons and plans). Keys, footer entries,
command-palette entries and the help page's key list all come from one table,
:data:`~xdptui.app_commands.APP_COMMANDS`. Every action ends as a command line sent to the
simulator, so the event log shows it as if typed.

The frame timer is re-armed after each frame for the next deadline, so a frame that runs a
little late does not cost the next one (Textual's interval timers skip a tick that is late).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, ClassVar

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.command import CommandPalette
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input

from xdptui.app_actions import DeviceActions, gso_supported, reader_rate_text
from xdptui.app_commands import APP_COMMANDS, AppCommand
from xdptui.app_console import Console
from xdptui.app_lessons import Guide
from xdptui.app_stage import EXACT_MAX_SPEED, SimulatorLike, Stage
from xdptui.model.topology import Topology
from xdptui.model.views import Frame
from xdptui.pacing import BEHIND, REAL_TIME, SPEEDS, Pacer
from xdptui.screens.dialogs import HelpScreen
from xdptui.screens.main import MainScreen
from xdptui.screens.palette import SafeCommandPalette
from xdptui.screens.trust import TrustScreen
from xdptui.widgets.command_line import CommandLine
from xdptui.widgets.event_list import EventListPanel, EventSelected, NextEvent, matches
from xdptui.widgets.key_bar import KeyBar, KeyBarView, KeyHint
from xdptui.widgets.messages import DeviceClicked
from xdptui.widgets.project import PanelState, highlight_of

__all__ = [
    "APP_COMMANDS",
    "BEHIND",
    "EXACT_MAX_SPEED",
    "LESSON_SPEED",
    "REAL_TIME",
    "SPEEDS",
    "AppCommand",
    "Pacer",
    "SimulatorLike",
    "XdpApp",
    "ask_trust",
    "gso_supported",
    "make_app",
    "reader_rate_text",
]

LOG = logging.getLogger("xdptui")
MIN_DELAY_S = 0.001
NEXT_EVENT_POLLS = 5_000  # how far ] looks for the next event of a kind
STREAM_KINDS: dict[str, tuple[str, ...]] = {
    "poll": ("napi_poll",),
    "write": ("tun_write",),
    "flush": ("bq_flush",),
    "drop": ("drop",),
    "command": ("command", "lesson"),
}
"""The event list's kind filters as event-stream kinds ("all": every kind)."""
KEY_ACTIONS = frozenset(command.action.split("(")[0] for command in APP_COMMANDS)
"""The app's own actions (key, palette): none runs while a dialog is open."""
LESSON_SPEED = 10_000
"""The slow motion a topology with lessons opens in (10 µs of simulated time per second: on
a 10 Mpps port, a few NAPI polls a second)."""


class XdpApp(App[None]):
    """The live XDP data-path simulation, with its keys.

    Args:
        sim: the simulator (``xdptui.sim.engine.Simulator`` or a test double).
        title: the terminal title (default: the topology name).
        fps: frames per second of the frame timer.
        paused: start with the clock stopped (tests do).
        speed_ns_per_s: one of :data:`SPEEDS`; real time by default.
        clock: the real clock the pacing measures (``time.perf_counter``; tests inject one).
        topology: where lessons, map names and the traffic editor's defaults come from; a
            topology with lessons starts its first lesson's first step when the app opens.
        allow_user_programs: False refuses every command that loads a Python program, typed
            ones included, before the simulator sees it (``xdptui serve`` without
            ``--allow-user-programs``: a browser user must not run code on the server).
    """

    CSS_PATH = "app.tcss"
    TITLE = "xdptui"
    BINDINGS: ClassVar[list[BindingType]] = [command.binding() for command in APP_COMMANDS]

    paused: reactive[bool] = reactive(False, init=False, bindings=True)
    """The simulated clock is stopped; ``.`` still single-steps."""
    speed_index: reactive[int] = reactive(len(SPEEDS) - 1, init=False, bindings=True)
    """Index into :data:`SPEEDS`."""
    focus_device: reactive[str | None] = reactive(None, init=False)
    """The device the panels focus on (None: all)."""

    def __init__(
        self,
        sim: SimulatorLike,
        *,
        title: str | None = None,
        fps: float = 30.0,
        paused: bool = False,
        speed_ns_per_s: int = REAL_TIME,
        clock: Callable[[], float] = time.perf_counter,
        topology: Topology | None = None,
        allow_user_programs: bool = True,
    ) -> None:
        if fps <= 0:
            raise ValueError("fps must be positive")
        if speed_ns_per_s not in SPEEDS:
            raise ValueError(f"speed must be one of {SPEEDS}")
        super().__init__()
        # A room wants the new state at once: no sliding tab underline (0.3 s per tab key).
        self.animation_level = "none"
        self.fps = fps
        self.topology = topology
        self._title = title
        self.set_reactive(XdpApp.paused, paused)
        self.set_reactive(XdpApp.speed_index, SPEEDS.index(speed_ns_per_s))
        self._timer: Timer | None = None
        self._deadline: float | None = None
        self._engine_failed = False  # pausing then keeps the last frame (the engine stopped)
        self.commands: Console
        self._main = MainScreen(complete=lambda line: self.commands.complete(line))
        self.stage = Stage(sim, self._main, self._panel_state, fps=fps, clock=clock)
        self.stage.speed_ns_per_s = speed_ns_per_s
        self.stage.paused = paused
        self.commands = Console(self.stage, self, topology, allow_user_programs=allow_user_programs)
        lessons = topology.lessons if topology is not None else ()
        self.guide = Guide(self.stage, self.commands, self, self._main, lessons, self._set_clock)
        self.actions = DeviceActions(
            self.stage,
            self.commands,
            self,
            self._main,
            focus=lambda: self.focus_device,
            set_focus=self._set_focus,
            start_plan=self.guide.start_plan,
        )

    # --- state -------------------------------------------------------------------------------

    @property
    def sim(self) -> SimulatorLike:
        return self.stage.sim

    @property
    def speed_ns_per_s(self) -> int:
        return SPEEDS[self.speed_index]

    @property
    def frame(self) -> Frame | None:
        """The newest frame on screen."""
        return self.stage.frame

    @property
    def main_screen(self) -> MainScreen:
        return self._main

    def get_default_screen(self) -> Screen[None]:
        return self._main

    def _panel_state(self, stage: Stage) -> PanelState:
        """What the app adds to a frame for the panels."""
        guide = self.guide
        lesson, step = guide.position()
        return PanelState(
            focus=self.focus_device,
            follow=stage.follow_view,
            plan_title=guide.plan_title(),
            plan=guide.plan_rows(),
            lessons=guide.lessons,
            lesson=lesson,
            step=step,
            outcomes=guide.step_outcomes(),
            history=stage.history,
            highlight=stage.highlight,
            zoom=stage.zoom_label,
        )

    def _set_clock(self, speed_ns_per_s: int | None, pause: bool) -> None:
        if speed_ns_per_s is not None:
            self.speed_index = SPEEDS.index(speed_ns_per_s)
        if pause:
            self.paused = True

    def _set_focus(self, device: str | None) -> None:
        self.focus_device = device

    def on_mount(self) -> None:
        if self.guide.lessons:
            # The lesson owns its timeline from t = 0: its first step starts now (make_app
            # has already chosen the speed and the pause, which the command line overrides).
            self.guide.begin(self.guide.lesson, 0, settings=False)
        self.stage.pacer.reset()
        self.stage.choose_mode()
        self._arm()
        self.stage.refresh()
        self._show_keys()
        if self._title is not None:
            self.title = self._title
        elif self.stage.frame is not None:
            self.title = f"xdptui: {self.stage.frame.name}"

    # --- the frame timer ---------------------------------------------------------------------

    def _arm(self) -> None:
        """Schedule the next frame at its deadline.

        A frame that ran late is followed at once by the next (each still bounded by the
        pacer's budget, and each a separate timer task, so input is handled in between); after
        a stall longer than ``Pacer.MAX_STALL_S`` the deadlines start again from now.
        """
        if self.paused or self._timer is not None:
            return
        period = 1 / self.fps
        now = time.perf_counter()
        if self._deadline is None or now - self._deadline > Pacer.MAX_STALL_S:
            self._deadline = now + period
        # Never 0: Textual's timer divides by its interval.
        self._timer = self.set_timer(max(MIN_DELAY_S, self._deadline - now), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._deadline is not None:
            self._deadline += 1 / self.fps
        self.tick()
        self._arm()

    def tick(self) -> None:
        """One frame: advance the simulation for the real time elapsed, then redraw."""
        if self.paused or self.stage.busy:
            return
        try:
            done = self.stage.tick()
        except Exception as exc:
            # The engine failed: stop the clock, say so, keep the app (and the last frame) up.
            LOG.error("the simulation failed", exc_info=exc)
            self._engine_failed = True
            self.paused = True
            self._engine_failed = False
            self.notify(
                f"The simulation stopped: {type(exc).__name__}: {exc}",
                title="Simulation error",
                severity="error",
                timeout=15,
            )
            return
        if done > 0:
            self.guide.run_plan_step()
        self.stage.refresh()

    def _show_keys(self) -> None:
        """The key bar: the keys the footer would show, Run or Pause as the clock is."""
        hints: list[KeyHint] = []
        for command in APP_COMMANDS:
            if not command.show:
                continue
            name = command.action.split("(")[0]
            state = self._key_state(name)
            if state is False:
                continue
            label = command.description
            if name == "toggle_pause" and not self.paused:
                label = "Pause"
            key = command.key_display or command.key.split(",")[0]
            hints.append(KeyHint(key, label, command.action, state is not None))
        self._main.show_keys(KeyBarView(tuple(hints)))

    @on(KeyBar.Pressed)
    async def _key_clicked(self, message: KeyBar.Pressed) -> None:
        await self.run_action(message.action)

    def watch_paused(self, paused: bool) -> None:
        self.stage.paused = paused
        self._show_keys()
        if paused:
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
            if self._engine_failed:
                self.stage.show_header()
            else:  # the present, not the last whole step a running clock drew
                self.stage.refresh()
            return
        self._deadline = None
        self.stage.clock_changed()
        if self.is_running:
            self._arm()

    def watch_speed_index(self) -> None:
        self.stage.speed_ns_per_s = self.speed_ns_per_s
        self.stage.clock_changed()
        self._show_keys()

    def watch_focus_device(self) -> None:
        self.stage.show_views()

    # --- clock actions -----------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    # The engine's part of a clock key runs in a thread: the screen keeps drawing while it
    # works, and the app takes its next key (or frame tick) only when the action is done, so
    # nothing else touches the simulator meanwhile.

    async def action_step(self) -> None:
        """``.``: exactly one NAPI poll forward (the next on any CPU, in time order)."""
        self.paused = True
        if not await self.stage.off_loop(self.sim.step_poll):
            self.notify("no NAPI poll within a second of simulated time", timeout=4)
        self.guide.run_plan_step()
        self.stage.refresh()

    async def action_step_back(self) -> None:
        """``,``: one NAPI poll back (exactly the state after the poll before the last one)."""
        self.paused = True
        if not await self.stage.off_loop(self.sim.step_back):
            self.notify("no earlier NAPI poll to go back to", timeout=4)
        await self._retrace()
        self.stage.refresh()

    async def action_restart(self) -> None:
        """``home``: t = 0 again, same seed and timeline; a lesson starts its first step."""
        await self.stage.off_loop(self.sim.restart)
        self.guide.restart()
        self.stage.choose_mode()  # the restarted engine runs the mode it was built with
        await self._retrace()
        self.stage.refresh()

    async def _retrace(self) -> None:
        """A followed packet's hops from the new state (a trace runs a fork of the engine)."""
        if self.stage.follow is not None:
            await self.stage.off_loop(self.stage.retrace)

    def action_faster(self) -> None:
        self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)

    def action_slower(self) -> None:
        self.speed_index = max(self.speed_index - 1, 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in KEY_ACTIONS and self.screen_stack and self.screen_stack[-1] is not self._main:
            # A dialog is open: the app's keys stay with it (Textual would still run them
            # under a modal, so a word typed into the wrong place took a link down).
            return False
        return self._key_state(action)

    def _key_state(self, action: str) -> bool | None:
        """True: the key acts; None: shown greyed out; False: not offered here."""
        if action == "faster" and self.speed_index == len(SPEEDS) - 1:
            return None  # shown, greyed out
        if action == "slower" and self.speed_index == 0:
            return None
        # Not in the footer without lessons: a topology without them has no use for the keys.
        lesson_key = action in ("lesson_step", "lesson_run", "lessons", "lesson_expand")
        return bool(self.guide.lessons) or not lesson_key

    # --- the keys that change the host (DeviceActions) ---------------------------------------

    def action_attach(self) -> None:
        self.actions.attach()

    def action_swap(self) -> None:
        self.actions.swap()

    def action_detach(self) -> None:
        self.actions.detach()

    def action_link(self) -> None:
        self.actions.link()

    def action_traffic(self) -> None:
        self.actions.traffic()

    def action_bond_mode(self) -> None:
        self.actions.bond_mode()

    def action_zoom(self) -> None:
        self.actions.zoom()

    def action_follow(self) -> None:
        self.actions.pick_flow()

    def action_write_pcap(self) -> None:
        self.actions.write_pcap()

    # --- lessons (Guide) ---------------------------------------------------------------------

    def action_lesson_step(self, delta: int) -> None:
        self.guide.move(delta)

    def action_lesson_run(self) -> None:
        self.guide.run_step()

    def action_lesson_expand(self) -> None:
        self._main.lesson_bar.toggle()

    def action_lessons(self) -> None:
        self.guide.pick()

    # --- the command line (Console) ----------------------------------------------------------

    def action_command_line(self) -> None:
        self._main.open_command_line()

    @on(Input.Submitted, "#command-line")
    async def _command_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self._main.close_command_line()
        if text:
            self._main.command_line.remember(text)
            await self.commands.submit_off_loop(text)

    @on(CommandLine.Cancelled)
    def _command_cancelled(self) -> None:
        self._main.close_command_line()

    # --- focus and mouse ---------------------------------------------------------------------

    @on(DeviceClicked)
    def _device_clicked(self, event: DeviceClicked) -> None:
        self.focus_device = None if self.focus_device == event.device else event.device

    def action_unfocus(self) -> None:
        self.focus_device = None
        self.stage.stop_following()
        self.stage.show_views()

    def action_jump_ring(self) -> None:
        """``j``: the Rings & CPUs tab, the CPUs sharing the next locked XDP TX ring marked."""
        if self._main.active_tab != "rings":
            self._main.show_tab("rings")
            self.call_after_refresh(self._main.cpu_map.action_jump_ring)
        else:
            self._main.cpu_map.action_jump_ring()

    def action_presenter(self) -> None:
        self._main.toggle_presenter()

    def action_show_tab(self, tab: str) -> None:
        self._main.show_tab(tab)

    # --- the event list ----------------------------------------------------------------------

    def _event_list(self) -> EventListPanel | None:
        """The event list on screen, or None (then a note says where it is)."""
        panel = self._main.shown_event_list()
        if panel is None:
            self.notify("the event list shows at slow speeds (-) and while stepping (.)", timeout=4)
        return panel

    def action_event_kind(self) -> None:
        """``k`` from anywhere: the event list's next kind filter."""
        panel = self._event_list()
        if panel is not None:
            panel.action_cycle_kind()

    def action_event_device(self) -> None:
        """``i`` from anywhere: the event list's next device filter."""
        panel = self._event_list()
        if panel is not None:
            panel.action_cycle_device()

    def action_event_next(self) -> None:
        """``]`` from anywhere: run to the next event the event list's filters let through."""
        panel = self._event_list()
        if panel is not None:
            panel.action_next_event()

    @on(EventSelected)
    def _event_selected(self, message: EventSelected) -> None:
        self.stage.highlight = highlight_of(message.event)
        self.stage.show_views()

    @on(NextEvent)
    async def _next_event(self, message: NextEvent) -> None:
        """``]``: poll by poll to the next event the list's filters let through."""
        self.paused = True
        kinds = STREAM_KINDS.get(message.kind)
        device = message.device

        def wanted(record: dict[str, Any]) -> bool:
            if kinds is not None and record["kind"] not in kinds:
                return False
            names = (record.get("dev"), record.get("from"), record.get("to"))
            return device is None or device in names

        found = await self.stage.off_loop(self.sim.step_until, wanted, NEXT_EVENT_POLLS)
        self.guide.run_plan_step()
        self.stage.refresh()
        frame = self.frame
        if not found or frame is None:
            self.notify(f"no such event in the next {NEXT_EVENT_POLLS} polls", timeout=4)
            return
        panel = message.control
        if isinstance(panel, EventListPanel):
            hits = [e for e in frame.stream if matches(e, message.kind, device)]
            if hits:
                panel.select_seq(hits[-1].seq)

    # --- help and the palette ----------------------------------------------------------------

    def help_markdown(self) -> str:
        """The focused panel's help (or the visible tab's panels'), then every key."""
        focused = self.focused
        panels: list[Widget] = []
        shown = self._main.panels_of(self._main.active_tab)
        if focused is not None and (focused in shown or focused is self._main.event_log):
            panels = [focused]
        else:
            panels = [*shown, self._main.event_log]
        parts = [str(getattr(type(panel), "HELP", "") or "") for panel in panels]
        keys = ["## Keys", "", "| key | action | |", "| --- | --- | --- |"]
        for command in APP_COMMANDS:
            key = command.key_display or command.key.split(",")[0]
            keys.append(f"| `{key}` | {command.title} | {command.help} |")
        keys += ["", "`ctrl+p` opens the command palette: every action above, by name."]
        return "\n\n".join([*parts, "\n".join(keys)])

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_markdown()))

    def action_command_palette(self) -> None:
        """The command palette, with its page keys made safe (:class:`SafeCommandPalette`)."""
        if self.use_command_palette and not isinstance(self.screen, CommandPalette):
            self.push_screen(SafeCommandPalette(id="--command-palette"))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        for command in APP_COMMANDS:
            yield SystemCommand(
                command.title, command.help, partial(self.run_action, command.action)
            )
        ours = {command.title for command in APP_COMMANDS}
        for system_command in super().get_system_commands(screen):
            if system_command.title not in ours:
                yield system_command


class TrustApp(App[bool]):
    """Only the :class:`~xdptui.screens.trust.TrustScreen`: run before the simulator exists, so
    nothing a topology names is imported until the user agrees."""

    TITLE = "xdptui"

    def __init__(self, path: str, programs: Sequence[str]) -> None:
        super().__init__()
        self.path = path
        self.programs = tuple(programs)

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.push_screen(TrustScreen(self.path, self.programs), self.exit)


def ask_trust(path: str, programs: Sequence[str]) -> bool:
    """Show the programs a topology would run with Continue / Quit; True on Continue."""
    return TrustApp(path, programs).run() is True


def make_app(
    path: str,
    *,
    topology: Topology | None = None,
    paused: bool | None = None,
    speed_ns_per_s: int | None = None,
    fps: float = 30.0,
    allow_user_programs: bool = True,
) -> XdpApp:
    """The app on the topology in ``path`` with a real simulator (the CLI and snapshots use it).

    ``topology``: the already loaded and validated topology of ``path`` (the CLI passes it, so
    the file is read once). A topology with lessons opens paused at t = 0 in slow motion (its
    first step's ``speed:``, else :data:`LESSON_SPEED`), others running at real time;
    ``paused`` and ``speed_ns_per_s`` override that (``--paused``, ``--speed``: a speed alone
    opens running). Lesson steps start when the user moves to them, so the simulator's own
    step times (``at:`` of a step, for headless runs) are off.
    """
    from xdptui.sim.engine import Simulator

    if topology is None:
        from xdptui.commands import validate
        from xdptui.topology_io import load_topology

        topology = load_topology(path, validate_command=validate)
    first = topology.lessons[0].steps[0] if topology.lessons and topology.lessons[0].steps else None
    if paused is None:
        paused = first is not None and speed_ns_per_s is None
    if speed_ns_per_s is None:
        speed_ns_per_s = REAL_TIME
        if first is not None:
            speed_ns_per_s = first.speed_ns_per_s or LESSON_SPEED
    return XdpApp(
        Simulator(topology, timed_steps=False),
        title=f"xdptui: {topology.name}",
        fps=fps,
        paused=paused,
        speed_ns_per_s=speed_ns_per_s,
        topology=topology,
        allow_user_programs=allow_user_programs,
    )
