"""The app's core: a simulator paced from a frame timer, its frames projected into views.

``SimApp`` owns a simulator (anything with the :class:`SimulatorLike` interface), paces it from a
frame timer, projects each new frame into views (``widgets.project``) and hands them to the
screen. Every action ends as a command line sent to the simulator, so the event log shows it as
if typed. The keys and what they do live in the subclasses (``app_actions``, ``app``).

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
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from textual import on
from textual.app import App
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input

from xdptui.commands import programs_named
from xdptui.completion import CompletionContext, complete
from xdptui.model.catalog import PROGRAMS, is_user_program
from xdptui.model.commands import Command, CommandResult, Pktgen, XdpSet
from xdptui.model.topology import Lesson, Topology
from xdptui.model.views import DeviceView, FlowInfo, Frame, PacketView, QueueRef, TraceHop
from xdptui.pacing import REAL_TIME, SPEEDS, Pacer
from xdptui.plans import PlanRunner
from xdptui.screens.dialogs import (
    PickScreen,
)
from xdptui.screens.main import MainScreen
from xdptui.screens.output import LONG_REPLY_LINES, OutputScreen
from xdptui.widgets.command_line import CommandLine
from xdptui.widgets.history import RateHistory, push_history
from xdptui.widgets.messages import DeviceClicked
from xdptui.widgets.project import Highlight, PanelState, Projection, header_view
from xdptui.widgets.project_bond import PlanRow
from xdptui.widgets.project_lesson import Outcome
from xdptui.widgets.project_paths import FollowView
from xdptui.widgets.rates import RateSamples, RatesView, push_sample, window_base, window_for

MIN_DELAY_S = 0.001
EXACT_MAX_SPEED = 1_000_000  # ns of simulated time per second at and below which exact mode runs
EXACT_FRAMES_PER_S = 50_000  # above that speed, exact mode still runs if this covers the load
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
    def step_back(self) -> bool: ...
    def step_until(self, match: Callable[[dict[str, Any]], bool], max_polls: int) -> bool: ...
    def restart(self) -> None: ...
    def start_step(self, lesson: int, step: int) -> None: ...
    def back_to_step(self, lesson: int, step: int) -> bool: ...

    exact: bool

    def submit(self, cmd: str, origin: str = "user") -> CommandResultLike: ...
    def frame(self, live: bool = False, zoom: QueueRef | None = None) -> Frame: ...
    def flows(self, limit: int = 64) -> tuple[FlowInfo, ...]: ...
    def trace(self, source: str, flow: int) -> tuple[TraceHop, ...]: ...
    def packet(
        self, source: str, flow: int, hops: tuple[TraceHop, ...] = ()
    ) -> PacketView | None: ...


class SimApp(App[None]):
    """The simulation on screen: pacing, frames, views, commands and the focus.
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

    TITLE = "xdptui"

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
        self.set_reactive(SimApp.paused, paused)
        self.set_reactive(SimApp.speed_index, SPEEDS.index(speed_ns_per_s))
        self._pacer = Pacer(clock, fps)
        self._frame: Frame | None = None
        self._prev: Frame | None = None
        self._timer: Timer | None = None
        self._deadline: float | None = None
        self._history = RateHistory()
        self._samples = RateSamples()
        self._follow: FlowInfo | None = None
        self._follow_view: FollowView | None = None
        self.zoom_ref: QueueRef | None = None
        """The queue the Zoom tab shows (its slots come with every frame)."""
        self.zoom_label = ""
        self.highlight: Highlight | None = None
        """What the event selected in the event list concerns (marked in the panels)."""
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
        self._choose_mode()
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
        frame = self.sim.frame(live=not self.paused, zoom=self.zoom_ref)
        if self._frame is None or frame.seq != self._frame.seq:
            if self._frame is not None and frame.t_ns < self._frame.t_ns:
                self._history = RateHistory()  # time went back: a rewind, a restart
            # Every rate on screen is over one window of simulated time ending at this frame.
            window = window_for(self.speed_ns_per_s)
            self._samples = push_sample(self._samples, frame, window)
            self._prev = window_base(self._samples, frame, window)
            self._history = push_history(
                self._history, RatesView(self._prev, frame), frame, window // 2
            )
            self._frame = frame
            self._show_views()
            self.frames_drawn += 1
            self.last_frame_at = time.perf_counter()
        self._show_header()

    def lesson_position(self) -> tuple[int, int]:
        """(lesson, step) on at the newest frame: the engine's (a rewind before a step's start
        shows the step before it), else the one last started."""
        frame = self._frame
        if frame is not None and frame.lesson is not None:
            return frame.lesson.lesson, frame.lesson.step
        return self.lesson, self.step

    def time_moved(self) -> None:
        """After a jump in simulated time (a step back, a restart): redraw, retrace."""
        if self._follow is not None:
            self._retrace()
        self.refresh_frame()

    def panel_state(self) -> PanelState:
        """What the app adds to the frame for the panels."""
        lesson, step = self.lesson_position()
        lesson_outcomes = self._outcomes.get((lesson, step))
        return PanelState(
            focus=self.focus_device,
            follow=self._follow_view,
            plan_title=self.plan.summary() if self.plan is not None else "",
            plan=self._plan_rows(),
            lessons=self.lessons,
            lesson=lesson,
            step=step,
            outcomes=lesson_outcomes,
            history=self._history,
            highlight=self.highlight,
            zoom=self.zoom_label,
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
        window = self._frame.t_ns - self._prev.t_ns if self._prev is not None else 0
        self._main.show_header(
            header_view(
                self._frame,
                speed_ns_per_s=self.speed_ns_per_s,
                paused=self.paused,
                rtf=rtf,
                window_ns=window,
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
        self._choose_mode()
        self._show_header()

    def _choose_mode(self) -> None:
        """Slow motion shows the kernel's state poll by poll (exact mode); faster speeds move
        in steps of many polls (fast mode), unless the offered load is light enough for exact
        mode to keep up (at most :data:`EXACT_FRAMES_PER_S` frames per real second). Switching
        moves no counter; only the header says which mode runs."""
        speed = self.speed_ns_per_s
        frame = self._frame if self._frame is not None else self.sim.frame()
        offered = sum(src.pps for src in frame.sources if not src.stopped)
        light = speed < REAL_TIME and offered * speed / 1e9 <= EXACT_FRAMES_PER_S
        self.sim.exact = speed <= EXACT_MAX_SPEED or light

    def watch_focus_device(self) -> None:
        self._show_views()

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
        if result.ok and isinstance(command, Pktgen):
            self._choose_mode()  # the load changed: can exact mode still keep up?
        if self._follow is not None:
            self._retrace()
        self.refresh_frame()
        if origin == "user" and result.reply.count("\n") + 1 > LONG_REPLY_LINES:
            self.push_screen(OutputScreen(text, result.reply, result.ok))
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

    def action_presenter(self) -> None:
        self._main.toggle_presenter()

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

    # --- traffic sources and plans -------------------------------------------------------

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

    # --- a followed packet (the picker lives in app_actions) ------------------------------

    def _retrace(self) -> None:
        flow = self._follow
        if flow is None:
            return
        hops = self.sim.trace(flow.source, flow.flow)
        packet = self.sim.packet(flow.source, flow.flow, hops)
        self._follow_view = FollowView(flow.label, hops, packet)


def _device_label(dev: DeviceView) -> str:
    kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
    xdp = f"  xdp {dev.xdp.program} {dev.xdp.mode}" if dev.xdp else ""
    state = "down" if not dev.up else "up" if dev.carrier else "no-carrier"
    return f"{dev.name:<10} {kind:<10} {state}{xdp}"
