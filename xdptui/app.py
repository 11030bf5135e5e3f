"""The Textual app: the only code that knows both the simulator and the widgets.

``XdpApp`` owns a simulator (anything with the :class:`SimulatorLike` interface), paces it from a
frame timer, projects each new frame into views (``widgets.project``) and hands them to the
screen. Keys, footer entries, command-palette entries and the help page's key list all come from
one table, :data:`~xdptui.app_commands.APP_COMMANDS`. Every action ends as a command line sent to
the simulator (``xdptui.actions``, ``xdptui.plans``), so the event log shows it as if typed.

Pacing: every ``1/fps`` s the frame timer asks the :class:`~xdptui.pacing.Pacer` to advance the
simulation by ``speed * real elapsed`` simulated ns, stopping when the tick's wall-clock budget
(half a frame period) is spent. What could not be done is dropped, not owed, so the app never
freezes input; the header then shows the achieved real-time factor (``RTF 0.42``). The timer is
re-armed after each frame for the next deadline, so a frame that runs a little late does not
cost the next one (Textual's interval timers skip a tick that is late).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, ClassVar

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.command import CommandPalette
from textual.screen import Screen
from textual.widget import Widget

from xdptui.app_actions import ActionsApp, gso_supported, reader_rate_text
from xdptui.app_base import EXACT_MAX_SPEED, SimulatorLike
from xdptui.app_commands import APP_COMMANDS, AppCommand
from xdptui.model.topology import Topology
from xdptui.pacing import BEHIND, REAL_TIME, SPEEDS, Pacer
from xdptui.screens.dialogs import (
    HelpScreen,
    PickScreen,
)
from xdptui.screens.palette import SafeCommandPalette
from xdptui.screens.trust import TrustScreen
from xdptui.widgets.event_list import EventListPanel, EventSelected, NextEvent, matches
from xdptui.widgets.project import highlight_of
from xdptui.widgets.project_lesson import Outcome

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

NEXT_EVENT_POLLS = 5_000  # how far ] looks for the next event of a kind
STREAM_KINDS: dict[str, tuple[str, ...]] = {
    "poll": ("napi_poll",),
    "flush": ("bq_flush",),
    "drop": ("drop",),
    "command": ("command", "lesson"),
}
"""The event list's kind filters as event-stream kinds ("all": every kind)."""
LESSON_SPEED = 10_000
"""The slow motion a topology with lessons opens in (10 µs of simulated time per second: on
a 10 Mpps port, a few NAPI polls a second)."""


class XdpApp(ActionsApp):
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

    def on_mount(self) -> None:
        if self.lessons:
            # The lesson owns its timeline from t = 0: its first step starts now (make_app
            # has already chosen the speed and the pause, which the command line overrides).
            self._begin_step(self.lesson, 0, settings=False)
        super().on_mount()

    # --- clock actions -----------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    def action_step(self) -> None:
        """``.``: exactly one NAPI poll forward (the next on any CPU, in time order)."""
        self.paused = True
        if not self.sim.step_poll():
            self.notify("no NAPI poll within a second of simulated time", timeout=4)
        self._run_plan_step()
        self.refresh_frame()

    def action_step_back(self) -> None:
        """``,``: one NAPI poll back (exactly the state before the last ``.``)."""
        self.paused = True
        if not self.sim.step_back():
            self.notify("no earlier NAPI poll to go back to", timeout=4)
        self.time_moved()

    def action_restart(self) -> None:
        """``home``: t = 0 again, same seed and timeline; a lesson starts its first step."""
        self.sim.restart()
        self.plan = None
        self._outcomes.clear()
        if self.lessons:
            self._begin_step(self.lesson, 0)
        self._choose_mode()  # the restarted engine runs the mode it was built with
        self.time_moved()

    def action_faster(self) -> None:
        self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)

    def action_slower(self) -> None:
        self.speed_index = max(self.speed_index - 1, 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "faster" and self.speed_index == len(SPEEDS) - 1:
            return None  # shown, greyed out
        if action == "slower" and self.speed_index == 0:
            return None
        # Not in the footer without lessons: a topology without them has no use for the keys.
        lesson_key = action in ("lesson_step", "lesson_run", "lessons", "lesson_expand")
        return bool(self.lessons) or not lesson_key

    # --- lessons -----------------------------------------------------------------------------

    def _begin_step(self, lesson: int, step: int, *, settings: bool = True) -> None:
        """Start ``step`` of ``lesson`` in the engine (its ``at: step`` timeline entries run)
        and, with ``settings``, take the step's clock speed and pause."""
        steps = self.lessons[lesson].steps
        self.lesson, self.step = lesson, step
        if not steps:
            return
        self.sim.start_step(lesson, step)
        if settings:
            self._step_settings(lesson, step)
        if self.is_running:
            self.refresh_frame()

    def _step_settings(self, lesson: int, step: int) -> None:
        shown = self.lessons[lesson].steps[step]
        if shown.speed_ns_per_s is not None:
            self.speed_index = SPEEDS.index(shown.speed_ns_per_s)
        if shown.pause:
            self.paused = True

    def action_lesson_step(self, delta: int) -> None:
        """``n`` starts the next step now; ``p`` goes back to when the previous step started
        (exactly that state, the later story forgotten), paused."""
        if not self.lessons:
            return
        lesson, step = self.lesson_position()
        steps = len(self.lessons[lesson].steps)
        target = max(0, min(steps - 1, step + delta))
        if target == step:
            return
        if delta < 0 and self.sim.back_to_step(lesson, target):
            self.lesson, self.step = lesson, target
            self._step_settings(lesson, target)
            self.paused = True
            self.time_moved()
            return
        self._begin_step(lesson, target)

    def action_lesson_run(self) -> None:
        """Submit the shown step's commands, in order, as if typed (origin ``lesson``)."""
        if not self.lessons:
            return
        lesson, step = self.lesson_position()
        if not self.lessons[lesson].steps:
            return
        shown = self.lessons[lesson].steps[step]
        outcomes: list[Outcome] = []
        for command in shown.commands:
            result = self.submit_command(command, origin="lesson")
            outcomes.append((command, result.ok, result.errno, result.reply))
        self._outcomes[(lesson, step)] = tuple(outcomes)
        self._show_views()

    def action_lesson_expand(self) -> None:
        self._main.lesson_bar.toggle()

    def action_lessons(self) -> None:
        if not self.lessons:
            return

        def picked(key: object) -> None:
            if isinstance(key, str) and key.isdigit():
                self._begin_step(int(key), 0)
                self._main.show_tab("lesson")
                self._show_views()

        items = [
            (str(i), f"{lesson.title}  ({len(lesson.steps)} steps)")
            for i, lesson in enumerate(self.lessons)
        ]
        self.push_screen(PickScreen("Which lesson?", items), picked)

    # --- the event list ----------------------------------------------------------------------

    @on(EventSelected)
    def _event_selected(self, message: EventSelected) -> None:
        self.highlight = highlight_of(message.event)
        self._show_views()

    @on(NextEvent)
    def _next_event(self, message: NextEvent) -> None:
        """``]``: poll by poll to the next event the list's filters let through."""
        self.paused = True
        kinds = STREAM_KINDS.get(message.kind)
        device = message.device

        def wanted(record: dict[str, Any]) -> bool:
            if kinds is not None and record["kind"] not in kinds:
                return False
            names = (record.get("dev"), record.get("from"), record.get("to"))
            return device is None or device in names

        found = self.sim.step_until(wanted, NEXT_EVENT_POLLS)
        self._run_plan_step()
        self.refresh_frame()
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
