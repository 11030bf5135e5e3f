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

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import ClassVar, Protocol

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.command import CommandList, CommandPalette
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input

from xdptui import actions
from xdptui.app_commands import APP_COMMANDS, AppCommand
from xdptui.commands import programs_named
from xdptui.completion import CompletionContext, complete
from xdptui.model.catalog import PROGRAMS, is_user_program
from xdptui.model.commands import Command, CommandResult, Pktgen, XdpSet
from xdptui.model.topology import Lesson, Topology
from xdptui.model.views import DeviceView, FlowInfo, Frame, TraceHop
from xdptui.pacing import BEHIND, REAL_TIME, SPEEDS, Pacer
from xdptui.plans import PlanRunner, bond_mode_change_plan, bond_mode_command
from xdptui.screens.dialogs import (
    BondModeScreen,
    DirectAttempt,
    HelpScreen,
    PickScreen,
    ProgramChoice,
    ProgramScreen,
    TrafficChoice,
    TrafficScreen,
)
from xdptui.screens.main import MainScreen
from xdptui.screens.trust import TrustScreen
from xdptui.widgets.command_line import CommandLine
from xdptui.widgets.format import format_pps
from xdptui.widgets.history import RateHistory, push_history
from xdptui.widgets.messages import DeviceClicked
from xdptui.widgets.project import PanelState, Projection, header_view
from xdptui.widgets.project_bond import PlanRow
from xdptui.widgets.project_lesson import Outcome
from xdptui.widgets.project_paths import FollowView

__all__ = [
    "APP_COMMANDS",
    "BEHIND",
    "REAL_TIME",
    "SPEEDS",
    "AppCommand",
    "Pacer",
    "SimulatorLike",
    "XdpApp",
    "ask_trust",
    "make_app",
]


MIN_DELAY_S = 0.001
EXACT_MAX_SPEED = 1_000_000  # ns of simulated time per second at and below which exact mode runs
LOG = logging.getLogger("xdptui")
NO_USER_PROGRAMS = (
    "Error: Python programs are disabled in this session (--no-user-programs; xdptui serve "
    "runs them only when started with --allow-user-programs); built-in programs work"
)


class CommandResultLike(Protocol):
    """What ``submit`` answers: ``xdptui.sim.engine.CommandResult``."""

    @property
    def ok(self) -> bool: ...
    @property
    def errno(self) -> str | None: ...
    @property
    def reply(self) -> str: ...
    @property
    def command(self) -> Command | None: ...


class SimulatorLike(Protocol):
    """The engine interface the app drives (``xdptui.sim.engine.Simulator``)."""

    @property
    def now_ns(self) -> int: ...
    def advance(self, dt_ns: int) -> None: ...
    def step_poll(self) -> bool: ...

    exact: bool

    def submit(self, cmd: str, origin: str = "user") -> CommandResultLike: ...
    def frame(self, live: bool = False) -> Frame: ...
    def flows(self, limit: int = 64) -> tuple[FlowInfo, ...]: ...
    def trace(self, source: str, flow: int) -> tuple[TraceHop, ...]: ...


class XdpApp(App[None]):
    """The live XDP data-path simulation.

    Args:
        sim: the simulator (``xdptui.sim.engine.Simulator`` or a test double).
        title: the terminal title (default: the topology name).
        fps: frames per second of the frame timer.
        paused: start with the clock stopped (tests do).
        speed_ns_per_s: one of :data:`SPEEDS`; real time by default.
        clock: the real clock the pacing measures (``time.perf_counter``; tests inject one).
        topology: where lessons, map names and the traffic editor's defaults come from.
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
        self.sim = sim
        self.fps = fps
        self.topology = topology
        self.allow_user_programs = allow_user_programs
        self._title = title
        self.set_reactive(XdpApp.paused, paused)
        self.set_reactive(XdpApp.speed_index, SPEEDS.index(speed_ns_per_s))
        self._pacer = Pacer(clock, fps)
        self._frame: Frame | None = None
        self._prev: Frame | None = None
        self._timer: Timer | None = None
        self._deadline: float | None = None
        self._history = RateHistory()
        self._follow: FlowInfo | None = None
        self._follow_view: FollowView | None = None
        self.plan: PlanRunner | None = None
        """The legal-sequence plan being run (or the last one), one command per tick."""
        self.lessons: tuple[Lesson, ...] = topology.lessons if topology is not None else ()
        self.lesson = 0
        self.step = 0
        self._outcomes: dict[tuple[int, int], tuple[Outcome, ...]] = {}
        self._user_programs: list[str] = []
        self._pktgen: dict[str, tuple[str, str, str, str]] = {}
        self._main = MainScreen(complete=self._complete)
        self.frames_drawn = 0
        """New frames handed to the screen so far (``xdptui bench ui`` reads it)."""
        self.last_frame_at = 0.0
        """``time.perf_counter()`` when the newest frame was handed to the screen."""

    # --- state -------------------------------------------------------------------------------

    @property
    def speed_ns_per_s(self) -> int:
        return SPEEDS[self.speed_index]

    @property
    def frame(self) -> Frame | None:
        """The newest frame on screen."""
        return self._frame

    @property
    def main_screen(self) -> MainScreen:
        return self._main

    def get_default_screen(self) -> Screen[None]:
        return self._main

    def on_mount(self) -> None:
        self._pacer.reset()
        self._arm()
        self.refresh_frame()
        if self._title is not None:
            self.title = self._title
        elif self._frame is not None:
            self.title = f"xdptui: {self._frame.name}"

    # --- pacing ------------------------------------------------------------------------------

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
        if self.paused:
            return
        try:
            done = self._pacer.tick(self.sim, self.speed_ns_per_s)
        except Exception as exc:
            # The engine failed: stop the clock, say so, keep the app (and the last frame) up.
            LOG.error("the simulation failed", exc_info=exc)
            self.paused = True
            self.notify(
                f"The simulation stopped: {type(exc).__name__}: {exc}",
                title="Simulation error",
                severity="error",
                timeout=15,
            )
            return
        if done > 0:
            self._run_plan_step()
        self.refresh_frame()

    def refresh_frame(self) -> None:
        """Take a frame from the simulator and show it (panels skip unchanged views); while
        the clock runs, a live frame (the engine's last whole step)."""
        frame = self.sim.frame(live=not self.paused)
        if self._frame is None or frame.seq != self._frame.seq:
            if self._frame is not None and frame.t_ns > self._frame.t_ns:
                # Rates compare frames at different instants; a frame at the same instant
                # (a command while paused) keeps the previous base.
                self._prev = self._frame
                self._history = push_history(self._history, self._prev, frame)
            self._frame = frame
            self._show_views()
            self.frames_drawn += 1
            self.last_frame_at = time.perf_counter()
        self._show_header()

    def panel_state(self) -> PanelState:
        """What the app adds to the frame for the panels."""
        lesson_outcomes = self._outcomes.get((self.lesson, self.step))
        return PanelState(
            focus=self.focus_device,
            follow=self._follow_view,
            plan_title=self.plan.summary() if self.plan is not None else "",
            plan=self._plan_rows(),
            lessons=self.lessons,
            lesson=self.lesson,
            step=self.step,
            outcomes=lesson_outcomes,
            history=self._history,
        )

    def projection(self) -> Projection | None:
        """The views of the newest frame under the app's state."""
        if self._frame is None:
            return None
        return Projection(self._prev, self._frame, self.panel_state())

    def _show_views(self) -> None:
        views = self.projection()
        if views is not None:
            self._main.show(views)

    def _show_header(self) -> None:
        if self._frame is None:
            return
        rtf = self._pacer.rtf if self._pacer.behind else None
        self._main.show_header(
            header_view(
                self._frame, speed_ns_per_s=self.speed_ns_per_s, paused=self.paused, rtf=rtf
            )
        )

    def watch_paused(self, paused: bool) -> None:
        if paused:
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
        else:
            self._pacer.reset()
            self._deadline = None
            self._choose_mode()
            if self.is_running:
                self._arm()
        self._show_header()

    def watch_speed_index(self) -> None:
        self._pacer.reset()
        if not self.paused:
            self._choose_mode()
        self._show_header()

    def _choose_mode(self) -> None:
        """Slow motion shows the kernel's state poll by poll (exact mode); faster speeds move
        in steps of many polls (fast mode). Switching moves no counter."""
        self.sim.exact = self.speed_ns_per_s <= EXACT_MAX_SPEED

    def watch_focus_device(self) -> None:
        self._show_views()

    # --- clock actions -----------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    def action_step(self) -> None:
        self.paused = True
        self.sim.step_poll()
        self._run_plan_step()
        self.refresh_frame()

    def action_faster(self) -> None:
        self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)

    def action_slower(self) -> None:
        self.speed_index = max(self.speed_index - 1, 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "faster" and self.speed_index == len(SPEEDS) - 1:
            return None  # shown, greyed out
        if action == "slower" and self.speed_index == 0:
            return None
        if action in ("lesson_step", "lesson_run", "lessons") and not self.lessons:
            return None
        return True

    # --- commands ----------------------------------------------------------------------------

    def action_command_line(self) -> None:
        self._main.open_command_line()

    def submit_command(self, text: str, origin: str = "user") -> CommandResultLike:
        """Send ``text`` to the simulator and redraw (its reply lands in the event log)."""
        if not self.allow_user_programs and any(map(is_user_program, programs_named(text))):
            self.notify(NO_USER_PROGRAMS, title=text, severity="error", timeout=10)
            return CommandResult(False, "EPERM", NO_USER_PROGRAMS)
        try:
            result = self.sim.submit(text, origin=origin)
        except Exception as exc:  # a bug in the engine, not a refusal: keep the app up
            LOG.error("the simulator failed on %r", text, exc_info=exc)
            reply = f"xdptui: the simulator failed on this command: {type(exc).__name__}: {exc}"
            self.notify(reply, title=text, severity="error", timeout=15)
            return CommandResult(False, None, reply)
        command = result.command
        program = command.prog if result.ok and isinstance(command, XdpSet) else None
        if program is not None and is_user_program(program) and program not in self._user_programs:
            self._user_programs.append(program)  # the program picker offers it from now on
        if result.ok and isinstance(command, Pktgen) and not command.stop:
            self._remember_pktgen(command)
        if self._follow is not None:
            self._retrace()
        self.refresh_frame()
        return result

    def _remember_pktgen(self, command: Pktgen) -> None:
        old = self._pktgen.get(command.dev, self._traffic_defaults().get(command.dev, ("",) * 4))
        self._pktgen[command.dev] = (
            old[0] if command.rate is None else str(command.rate),
            old[1] if command.size is None else str(command.size),
            old[2] if command.flows is None else str(command.flows),
            old[3] if command.gso is None else f"{command.gso:g}",
        )

    def _complete(self, line: str) -> tuple[int, tuple[str, ...]]:
        answer = complete(line, self.completion_context())
        return answer.start, answer.candidates

    def completion_context(self) -> CompletionContext:
        """Names the command line completes: devices and bonds of the newest frame, the
        topology's maps and traffic devices, built-in and user programs."""
        devices = tuple(dev.name for dev in self._frame.devices) if self._frame else ()
        bonds = (
            tuple(d.name for d in self._frame.devices if d.type == "bond") if self._frame else ()
        )
        topo = self.topology
        maps = tuple(
            dict.fromkeys(
                [
                    *(m.name for m in (self._frame.maps if self._frame else ())),
                    *(m.name for m in (topo.maps if topo is not None else ())),
                ]
            )
        )
        traffic = tuple(self._traffic_devices())
        return CompletionContext(
            devices=devices,
            bonds=bonds,
            maps=maps,
            programs=(*(p.name for p in PROGRAMS), *self._user_programs),
            traffic_devices=traffic,
            taps=tuple(d.name for d in self._frame.devices if d.type == "tun")
            if self._frame
            else (),
        )

    @on(Input.Submitted, "#command-line")
    def _command_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self._main.close_command_line()
        if text:
            self._main.command_line.remember(text)
            self.submit_command(text)

    @on(CommandLine.Cancelled)
    def _command_cancelled(self) -> None:
        self._main.close_command_line()

    # --- focus and mouse ---------------------------------------------------------------------

    @on(DeviceClicked)
    def _device_clicked(self, event: DeviceClicked) -> None:
        self.focus_device = None if self.focus_device == event.device else event.device

    def action_unfocus(self) -> None:
        self.focus_device = None
        self._follow = None
        self._follow_view = None
        self._show_views()

    def action_show_tab(self, tab: str) -> None:
        self._main.show_tab(tab)

    # --- device actions ----------------------------------------------------------------------

    def _device(self, name: str) -> DeviceView | None:
        if self._frame is None:
            return None
        for dev in self._frame.devices:
            if dev.name == name:
                return dev
        return None

    def _with_device(
        self,
        candidates: Sequence[DeviceView],
        title: str,
        then: Callable[[DeviceView], object],
        empty: str,
    ) -> None:
        """Run ``then`` on the focused device if it qualifies, the only candidate, or a pick."""
        if not candidates:
            self.notify(empty, severity="warning")
            return
        by_name = {dev.name: dev for dev in candidates}
        if self.focus_device in by_name:
            then(by_name[self.focus_device])
            return
        if len(candidates) == 1:
            then(candidates[0])
            return

        def picked(name: object) -> None:
            if isinstance(name, str) and name in by_name:
                then(by_name[name])

        items = [(dev.name, _device_label(dev)) for dev in candidates]
        self.push_screen(PickScreen(title, items), picked)

    def action_attach(self) -> None:
        frame = self._frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.submit_command(
                        actions.attach_command(dev.name, choice.program, choice.params)
                    )

            self.push_screen(
                ProgramScreen(f"Attach a program to {dev.name}", self._user_programs), done
            )

        self._with_device(
            actions.attachable(frame),
            "Attach a program to which device?",
            chosen,
            "every device has a program: s swaps one, d detaches one",
        )

    def action_swap(self) -> None:
        frame = self._frame
        if frame is None:
            return

        def chosen(dev: DeviceView) -> None:
            current = f" ({dev.xdp.program} {dev.xdp.mode})" if dev.xdp else ""

            def done(choice: object) -> None:
                if isinstance(choice, ProgramChoice) and choice.program:
                    self.submit_command(actions.swap_command(dev, choice.program, choice.params))

            self.push_screen(
                ProgramScreen(f"Swap {dev.name}'s program{current} for", self._user_programs),
                done,
            )

        self._with_device(
            actions.with_program(frame),
            "Swap the program of which device?",
            chosen,
            "no device has a program of its own: a attaches one",
        )

    def action_detach(self) -> None:
        frame = self._frame
        if frame is None:
            return
        self._with_device(
            actions.with_program(frame),
            "Detach the program of which device?",
            lambda dev: self.submit_command(actions.detach_command(dev)),
            "no device has a program of its own",
        )

    def action_link(self) -> None:
        frame = self._frame
        if frame is None:
            return
        self._with_device(
            frame.devices,
            "Take which device up or down?",
            lambda dev: self.submit_command(actions.link_command(dev)),
            "no devices",
        )

    # --- traffic -----------------------------------------------------------------------------

    def _traffic_devices(self) -> list[str]:
        topo = self.topology
        if topo is None:
            return []
        return list(dict.fromkeys(t.to or t.from_ or "" for t in topo.traffic if t.to or t.from_))

    def _traffic_defaults(self) -> dict[str, tuple[str, str, str, str]]:
        topo = self.topology
        out: dict[str, tuple[str, str, str, str]] = {}
        if topo is None:
            return out
        for t in topo.traffic:
            dev = t.to or t.from_
            if dev and dev not in out:
                out[dev] = (str(t.rate), str(t.sizes[0]), str(t.flows), f"{t.gso:g}")
        return out

    def _live_traffic(self) -> dict[str, tuple[str, str, str, str]]:
        """Each source's settings as it runs now (``Frame.sources``): what ``pktgen`` left."""
        frame = self._frame
        out: dict[str, tuple[str, str, str, str]] = {}
        for src in frame.sources if frame is not None else ():
            if src.device in out:
                continue
            # A size mix (64,64,64,1500) has no single pktgen value: empty keeps the mix.
            size = str(src.sizes[0]) if len(set(src.sizes)) == 1 else ""
            out[src.device] = (src.rate, size, str(src.flows), f"{src.gso:g}")
        return out

    def _tap_readers(self) -> dict[str, str]:
        """Each tap's reader rate as ``reader TAP rate R`` takes it (``stop``: none attached)."""
        frame = self._frame
        out: dict[str, str] = {}
        for dev in frame.devices if frame is not None else ():
            if dev.tap is not None:
                out[dev.name] = reader_rate_text(dev.tap.reader_pps)
        return out

    def action_traffic(self) -> None:
        sources = self._traffic_devices()
        readers = self._tap_readers()
        devices = list(dict.fromkeys([*sources, *readers]))
        if not devices:
            self.notify("this topology has no traffic sources or taps", severity="warning")
            return
        if self.focus_device in devices:
            devices.remove(self.focus_device)
            devices.insert(0, self.focus_device)
        defaults = {**self._traffic_defaults(), **self._pktgen, **self._live_traffic()}
        defaults = {dev: value for dev, value in defaults.items() if dev in sources}
        hints = {dev: "(tap: reader only)" for dev in readers if dev not in defaults}

        def done(choice: object) -> None:
            if not isinstance(choice, TrafficChoice):
                return
            sent = False
            old = defaults.get(choice.dev)
            if old is not None:
                new = (choice.rate, choice.size, choice.flows, choice.gso)
                changed = [n if n != o else "" for n, o in zip(new, old, strict=True)]
                if any(changed):
                    self.submit_command(actions.pktgen_command(choice.dev, *changed))
                    sent = True
            if choice.dev in readers and choice.reader and choice.reader != readers[choice.dev]:
                self.submit_command(actions.reader_command(choice.dev, choice.reader))
                sent = True
            if not sent:
                self.notify("nothing changed", timeout=3)

        self.push_screen(
            TrafficScreen(devices, defaults, gso_supported(), readers=readers, hints=hints), done
        )

    # --- bond mode ---------------------------------------------------------------------------

    def action_bond_mode(self) -> None:
        frame = self._frame
        if frame is None:
            return
        bonds = [dev for dev in frame.devices if dev.type == "bond"]
        focus = self._device(self.focus_device) if self.focus_device else None
        if focus is not None and focus.master is not None:
            self.focus_device = focus.master

        def chosen(bond: DeviceView) -> None:
            info = bond.bond
            screen = BondModeScreen(
                bond.name,
                info.mode if info is not None else "",
                info.xmit_hash_policy if info is not None else "",
                partial(self.try_bond_mode, bond.name),
            )
            self.push_screen(screen, self._plan_chosen)

        self._with_device(bonds, "Change which bond?", chosen, "no bond in this topology")

    def try_bond_mode(self, bond: str, mode: str, policy: str | None) -> DirectAttempt:
        """Submit the direct mode command; on a refusal, plan the legal sequence from the
        frame as it is now."""
        frame = self.sim.frame() if self._frame is None else self._frame
        info = frame.device(bond).bond
        current = info.mode if info is not None else None
        command = bond_mode_command(bond, None if mode == current else mode, policy)
        plan = bond_mode_change_plan(frame, bond, mode, policy)
        result = self.submit_command(command)
        return DirectAttempt(command, result.ok, result.errno, result.reply, plan)

    def _plan_chosen(self, plan: object) -> None:
        if isinstance(plan, tuple) and plan and all(isinstance(c, str) for c in plan):
            self.start_plan("legal sequence", tuple(str(c) for c in plan))

    def start_plan(self, title: str, commands: tuple[str, ...]) -> None:
        """Run ``commands`` one per tick (one per ``.`` while paused)."""
        self.plan = PlanRunner(title, commands)
        self._main.show_tab("bond")
        if self.paused:
            self.notify(f"{title}: paused, press . to run one command or space to run", timeout=10)
        self._show_views()

    def _run_plan_step(self) -> None:
        plan = self.plan
        if plan is None or plan.done:
            return
        command = plan.next_command()
        assert command is not None
        result = self.submit_command(command, origin="plan")
        plan.record(result.ok, result.errno, result.reply)
        if plan.done:
            severity = "warning" if plan.stopped else "information"
            self.notify(plan.summary(), severity=severity, timeout=10)

    def _plan_rows(self) -> tuple[PlanRow, ...]:
        plan = self.plan
        if plan is None:
            return ()
        rows: list[PlanRow] = []
        for i, command in enumerate(plan.commands):
            if i < len(plan.results):
                step = plan.results[i]
                rows.append(
                    PlanRow(
                        command,
                        "done" if step.ok else "failed",
                        step.reply if not step.ok else "",
                    )
                )
            elif i == len(plan.results) and not plan.done:
                rows.append(PlanRow(command, "next"))
            else:
                rows.append(PlanRow(command, "pending"))
        return tuple(rows)

    # --- follow a packet ---------------------------------------------------------------------

    def action_follow(self) -> None:
        flows = self.sim.flows()
        if not flows:
            self.notify("no traffic source to follow", severity="warning")
            return
        by_id = {f"{f.source}:{f.flow}": f for f in flows}

        def picked(key: object) -> None:
            if isinstance(key, str) and key in by_id:
                self.follow(by_id[key])

        self.push_screen(
            PickScreen(
                "Follow the next frame of which flow?",
                list((key, flow.label) for key, flow in by_id.items()),
                "its hops show on the Paths tab with simulated timestamps (escape stops)",
            ),
            picked,
        )

    def follow(self, flow: FlowInfo) -> None:
        """Follow ``flow``'s next frame: its hops from ``sim.trace`` go to the paths panel."""
        self._follow = flow
        self._retrace()
        self._main.show_tab("paths")
        self._show_views()

    def _retrace(self) -> None:
        flow = self._follow
        if flow is None:
            return
        hops = self.sim.trace(flow.source, flow.flow)
        self._follow_view = FollowView(flow.label, hops)

    # --- lessons -----------------------------------------------------------------------------

    def action_lesson_step(self, delta: int) -> None:
        if not self.lessons:
            return
        steps = len(self.lessons[self.lesson].steps)
        self.step = max(0, min(steps - 1, self.step + delta)) if steps else 0
        self._show_views()

    def action_lesson_run(self) -> None:
        """Submit the shown step's commands, in order, as if typed (origin ``lesson``)."""
        if not self.lessons or not self.lessons[self.lesson].steps:
            return
        shown = self.lessons[self.lesson].steps[self.step]
        outcomes: list[Outcome] = []
        for command in shown.commands:
            result = self.submit_command(command, origin="lesson")
            outcomes.append((command, result.ok, result.errno, result.reply))
        self._outcomes[(self.lesson, self.step)] = tuple(outcomes)
        self._show_views()

    def action_lessons(self) -> None:
        if not self.lessons:
            return

        def picked(key: object) -> None:
            if isinstance(key, str) and key.isdigit():
                self.lesson = int(key)
                self.step = 0
                self._main.show_tab("lesson")
                self._show_views()

        items = [
            (str(i), f"{lesson.title}  ({len(lesson.steps)} steps)")
            for i, lesson in enumerate(self.lessons)
        ]
        self.push_screen(PickScreen("Which lesson?", items), picked)

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


class SafeCommandPalette(CommandPalette):
    """Textual 8.2.8's palette with PageDown / PageUp that cannot take the app down.

    ``OptionList._move_page`` looks the highlighted option up in a line cache that is only
    filled while the list has a visible region; after a resize that leaves it none (or before
    its first layout) the lookup raises ``KeyError: 0`` and the app exits. Here a page move the
    list cannot make falls back to moving the highlight by a page of options.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pagedown", "safe_page(1)", "Next page", show=False),
        Binding("pageup", "safe_page(-1)", "Previous page", show=False),
    ]

    def action_safe_page(self, direction: int) -> None:
        commands = self.query_one(CommandList)
        count = commands.option_count
        if not count:
            return
        try:
            if direction > 0:
                commands.action_page_down()  # type: ignore[no-untyped-call]
            else:
                commands.action_page_up()  # type: ignore[no-untyped-call]
        except (KeyError, IndexError):
            page = max(commands.scrollable_content_region.height, 1)
            current = commands.highlighted or 0
            commands.highlighted = max(0, min(count - 1, current + direction * page))


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


def _device_label(dev: DeviceView) -> str:
    kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
    xdp = f"  xdp {dev.xdp.program} {dev.xdp.mode}" if dev.xdp else ""
    state = "down" if not dev.up else "up" if dev.carrier else "no-carrier"
    return f"{dev.name:<10} {kind:<10} {state}{xdp}"


def reader_rate_text(pps: float | None) -> str:
    """A tap's reader rate as ``reader TAP rate`` takes it (``stop``: none attached)."""
    if pps is None:
        return "stop"
    return format_pps(pps, digits=4)


def gso_supported() -> bool:
    """Whether the command language takes ``pktgen DEV gso G`` (the traffic editor's GSO field)."""
    from xdptui.commands import validate

    return validate("pktgen eth0 gso 0.5") is None


def make_app(
    path: str,
    *,
    topology: Topology | None = None,
    paused: bool = False,
    fps: float = 30.0,
    allow_user_programs: bool = True,
) -> XdpApp:
    """The app on the topology in ``path`` with a real simulator (the CLI and snapshots use it).

    ``topology``: the already loaded and validated topology of ``path`` (the CLI passes it, so
    the file is read once). The simulator takes steps as long as a frame at real time: the app
    takes a frame at least that often, and every command, timeline event and link change still
    ends a step early (the engine stops at every scheduled event).
    """
    from xdptui.sim.engine import Simulator

    if topology is None:
        from xdptui.commands import validate
        from xdptui.topology_io import load_topology

        topology = load_topology(path, validate_command=validate)
    return XdpApp(
        Simulator(topology),
        title=f"xdptui: {topology.name}",
        fps=fps,
        paused=paused,
        topology=topology,
        allow_user_programs=allow_user_programs,
    )
