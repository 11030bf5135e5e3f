"""The Textual app: the only code that knows both the simulator and the widgets.

``XdpApp`` owns a simulator (anything with the :class:`SimulatorLike` interface), paces it from a
timer, projects each new frame into views (``widgets.project``) and hands them to the screen. Keys,
footer entries and command-palette entries all come from one table, :data:`APP_COMMANDS`.

Pacing: every ``1/fps`` s the timer asks the :class:`Pacer` to advance the simulation by
``speed * real elapsed`` simulated ns, in chunks sized from the measured cost of earlier chunks,
stopping when the tick's wall-clock budget (half a frame period) is spent. What could not be done
is dropped, not owed, so the app never freezes input; the header then shows the achieved real-time
factor (``RTF 0.42``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Protocol

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input

from widgets.command_line import CommandLine
from widgets.devices import DevicesTable
from widgets.project import header_view, project
from xdptui.model.topology import Topology
from xdptui.model.views import Frame
from xdptui.screens.main import MainScreen

SPEEDS: tuple[int, ...] = (
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
)
"""Clock speeds in simulated ns per real second, slow motion (1 µs/s) to real time (1 s/s)."""

REAL_TIME = SPEEDS[-1]
BEHIND = 0.95  # below this share of the requested speed the header shows the RTF


class CommandResultLike(Protocol):
    """What ``submit`` answers: ``xdptui.sim.engine.CommandResult``."""

    @property
    def ok(self) -> bool: ...
    @property
    def errno(self) -> str | None: ...
    @property
    def reply(self) -> str: ...


class SimulatorLike(Protocol):
    """The engine interface the app drives (``xdptui.sim.engine.Simulator``)."""

    @property
    def now_ns(self) -> int: ...
    def advance(self, dt_ns: int) -> None: ...
    def step_poll(self) -> None: ...
    def submit(self, cmd: str, origin: str = "user") -> CommandResultLike: ...
    def frame(self) -> Frame: ...


@dataclass(frozen=True)
class AppCommand:
    """One user command: its key binding, footer label and palette entry in one place."""

    id: str
    key: str
    action: str
    description: str
    title: str
    help: str
    key_display: str | None = None

    def binding(self) -> Binding:
        return Binding(
            self.key,
            self.action,
            self.description,
            key_display=self.key_display,
            tooltip=self.help,
            id=self.id,
        )


APP_COMMANDS: tuple[AppCommand, ...] = (
    AppCommand(
        "toggle-pause",
        "space",
        "toggle_pause",
        "Run/Pause",
        "Pause / resume",
        "Stop or restart the simulated clock",
        key_display="space",
    ),
    AppCommand(
        "step",
        "full_stop",
        "step",
        "Step",
        "Step one NAPI poll",
        "Advance the simulation by one NAPI poll (pauses first)",
        key_display=".",
    ),
    AppCommand(
        "slower",
        "minus",
        "slower",
        "Slower",
        "Slower",
        "Divide the clock speed by ten (down to 1 µs of simulated time per second)",
        key_display="-",
    ),
    AppCommand(
        "faster",
        "plus,equals_sign",
        "faster",
        "Faster",
        "Faster",
        "Multiply the clock speed by ten (up to real time)",
        key_display="+",
    ),
    AppCommand(
        "command-line",
        "colon",
        "command_line",
        "Command",
        "Command line",
        "Type an ip / bpftool / ethtool / pktgen command for the simulator",
        key_display=":",
    ),
    AppCommand("quit", "q", "quit", "Quit", "Quit", "Quit xdptui"),
)


class Pacer:
    """Turns real elapsed time into bounded simulation work.

    ``tick`` advances the simulator by ``speed * elapsed`` (elapsed capped at ``MAX_STALL_S`` so a
    stall is not made up in one go), in chunks whose size is re-estimated from the cost of the
    previous ones so that one chunk takes about a quarter of the budget. It stops at the budget;
    the shortfall is dropped. ``behind`` and ``rtf`` report what was achieved recently.
    """

    MAX_STALL_S = 0.25
    MIN_CHUNK_NS = 1_000
    MAX_CHUNK_NS = 1_000_000_000
    FIRST_CHUNK_NS = 100_000
    DECAY = 0.8  # weight of the past in the achieved-speed average (per tick)

    def __init__(self, clock: Callable[[], float], fps: float, budget_share: float = 0.5) -> None:
        self._clock = clock
        self.budget_s = budget_share / fps
        self._last: float | None = None
        self._carry = 0.0
        self._chunk_ns = self.FIRST_CHUNK_NS
        self._cost_s_per_ns: float | None = None
        self._done = 0.0
        self._wanted = 0.0
        self._speed = REAL_TIME

    def reset(self) -> None:
        """Start measuring from now (on resume or a speed change); forget the lag."""
        self._last = self._clock()
        self._carry = 0.0
        self._done = self._wanted = 0.0

    @property
    def achieved(self) -> float:
        """Recent share of the requested speed actually simulated (1.0 = keeping up)."""
        return self._done / self._wanted if self._wanted > 0 else 1.0

    @property
    def behind(self) -> bool:
        return self.achieved < BEHIND

    @property
    def rtf(self) -> float:
        """Recent simulated time per real time."""
        return self.achieved * self._speed / REAL_TIME

    def tick(self, sim: SimulatorLike, speed_ns_per_s: int) -> int:
        """Advance ``sim`` for the real time since the last tick; returns simulated ns done."""
        now = self._clock()
        if self._last is None:
            self.reset()
            return 0
        if speed_ns_per_s != self._speed:
            self._speed = speed_ns_per_s
            self._done = self._wanted = 0.0
        real = max(0.0, now - self._last)
        self._last = now
        wanted = speed_ns_per_s * real
        target = speed_ns_per_s * min(real, self.MAX_STALL_S) + self._carry
        want = int(target)
        self._carry = target - want
        done = self._advance(sim, want, now + self.budget_s)
        if done < want:
            self._carry = 0.0
        if wanted > 0:
            self._done = self._done * self.DECAY + done
            self._wanted = self._wanted * self.DECAY + wanted
        return done

    def _advance(self, sim: SimulatorLike, want: int, deadline: float) -> int:
        done = 0
        while done < want:
            chunk = min(want - done, self._chunk_ns)
            start = self._clock()
            sim.advance(chunk)
            end = self._clock()
            done += chunk
            spent = end - start
            if spent > 0:
                per_ns = spent / chunk
                cost = self._cost_s_per_ns
                cost = per_ns if cost is None else 0.7 * cost + 0.3 * per_ns
                self._cost_s_per_ns = cost
                self._chunk_ns = int(self.budget_s / 4 / cost)
            elif chunk == self._chunk_ns:
                self._chunk_ns *= 2  # too cheap to measure: take bigger bites
            self._chunk_ns = max(self.MIN_CHUNK_NS, min(self.MAX_CHUNK_NS, self._chunk_ns))
            if end >= deadline:
                break
        return done


class XdpApp(App[None]):
    """The live XDP data-path simulation.

    Args:
        sim: the simulator (``xdptui.sim.engine.Simulator`` or a test double).
        title: the terminal title (default: the topology name).
        fps: frames per second of the pacing timer.
        paused: start with the clock stopped (tests do).
        speed_ns_per_s: one of :data:`SPEEDS`; real time by default.
        clock: the real clock the pacing measures (``time.perf_counter``; tests inject one).
    """

    CSS_PATH = "app.tcss"
    TITLE = "xdptui"
    BINDINGS: ClassVar[list[BindingType]] = [command.binding() for command in APP_COMMANDS]

    paused: reactive[bool] = reactive(False, init=False, bindings=True)
    """The simulated clock is stopped; ``.`` still single-steps."""
    speed_index: reactive[int] = reactive(len(SPEEDS) - 1, init=False, bindings=True)
    """Index into :data:`SPEEDS`."""
    focus_device: reactive[str | None] = reactive(None, init=False)
    """The device whose rings the rings panel shows (None: all)."""

    def __init__(
        self,
        sim: SimulatorLike,
        *,
        title: str | None = None,
        fps: float = 30.0,
        paused: bool = False,
        speed_ns_per_s: int = REAL_TIME,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if fps <= 0:
            raise ValueError("fps must be positive")
        if speed_ns_per_s not in SPEEDS:
            raise ValueError(f"speed must be one of {SPEEDS}")
        super().__init__()
        self.sim = sim
        self.fps = fps
        self._title = title
        self.set_reactive(XdpApp.paused, paused)
        self.set_reactive(XdpApp.speed_index, SPEEDS.index(speed_ns_per_s))
        self._pacer = Pacer(clock, fps)
        self._frame: Frame | None = None
        self._prev: Frame | None = None
        self._timer: Timer | None = None
        self._main = MainScreen()
        self.frames_drawn = 0
        """New frames handed to the screen so far (``xdptui bench ui`` reads it)."""

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
        self._timer = self.set_interval(1 / self.fps, self.tick, pause=self.paused)
        self._pacer.reset()
        self.refresh_frame()
        if self._title is not None:
            self.title = self._title
        elif self._frame is not None:
            self.title = f"xdptui: {self._frame.name}"

    # --- pacing ------------------------------------------------------------------------------

    def tick(self) -> None:
        """One timer tick: advance the simulation for the real time elapsed, then redraw."""
        if self.paused:
            return
        self._pacer.tick(self.sim, self.speed_ns_per_s)
        self.refresh_frame()

    def refresh_frame(self) -> None:
        """Take a frame from the simulator and show it (panels skip unchanged views)."""
        frame = self.sim.frame()
        if self._frame is None or frame.seq != self._frame.seq:
            if self._frame is not None and frame.t_ns > self._frame.t_ns:
                # Rates compare frames at different instants; a frame at the same instant
                # (a command while paused) keeps the previous base.
                self._prev = self._frame
            self._frame = frame
            self._show_views()
            self.frames_drawn += 1
        self._show_header()

    def _show_views(self) -> None:
        if self._frame is not None:
            self._main.show(project(self._prev, self._frame, focus=self.focus_device))

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
        if self._timer is not None:
            if paused:
                self._timer.pause()
            else:
                self._pacer.reset()
                self._timer.resume()
        self._show_header()

    def watch_speed_index(self) -> None:
        self._pacer.reset()
        self._show_header()

    def watch_focus_device(self) -> None:
        self._show_views()

    # --- actions -----------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    def action_step(self) -> None:
        self.paused = True
        self.sim.step_poll()
        self.refresh_frame()

    def action_faster(self) -> None:
        self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)

    def action_slower(self) -> None:
        self.speed_index = max(self.speed_index - 1, 0)

    def action_command_line(self) -> None:
        self._main.open_command_line()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "faster" and self.speed_index == len(SPEEDS) - 1:
            return None  # shown, greyed out
        if action == "slower" and self.speed_index == 0:
            return None
        return True

    def submit_command(self, text: str) -> CommandResultLike:
        """Send ``text`` to the simulator and redraw (its reply lands in the event log)."""
        result = self.sim.submit(text, origin="user")
        self.refresh_frame()
        return result

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

    @on(DevicesTable.DeviceClicked)
    def _device_clicked(self, event: DevicesTable.DeviceClicked) -> None:
        self.focus_device = None if self.focus_device == event.device else event.device

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        for command in APP_COMMANDS:
            yield SystemCommand(
                command.title, command.help, partial(self.run_action, command.action)
            )
        ours = {command.title for command in APP_COMMANDS}
        for system_command in super().get_system_commands(screen):
            if system_command.title not in ours:
                yield system_command


def make_app(
    path: str, *, topology: Topology | None = None, paused: bool = False, fps: float = 30.0
) -> XdpApp:
    """The app on the topology in ``path`` with a real simulator (the CLI and snapshots use it).

    ``topology``: the already loaded and validated topology of ``path`` (the CLI passes it, so
    the file is read once).
    """
    from xdptui.sim.engine import Simulator

    if topology is None:
        from xdptui.topology_io import load_topology

        topology = load_topology(path)
    return XdpApp(Simulator(topology), title=f"xdptui: {topology.name}", fps=fps, paused=paused)
