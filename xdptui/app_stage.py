"""The simulation on screen: a simulator paced in real time, its frames made into views.

:class:`Stage` owns the simulator (anything with the :class:`SimulatorLike` interface) and the
:class:`~xdptui.pacing.Pacer`; it takes frames, keeps the window every rate is measured over,
chooses the engine's granularity for the clock speed, and hands the screen its views. It knows
nothing of keys or dialogs: the app (``xdptui.app``) sets its clock (``speed_ns_per_s``,
``paused``) and tells it when to tick.

Pacing: every ``1/fps`` s the app's frame timer calls :meth:`Stage.tick`, which asks the pacer
to advance the simulation by ``speed * real elapsed`` simulated ns, stopping when the tick's
wall-clock budget (half a frame period) is spent. What could not be done is dropped, not owed,
so the app never freezes input; the header then shows the achieved real-time factor.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from xdptui.model.commands import Command
from xdptui.model.views import FlowInfo, Frame, PacketView, QueueRef, TraceHop
from xdptui.pacing import REAL_TIME, Pacer
from xdptui.widgets.history import RateHistory, push_history
from xdptui.widgets.project import HeaderView, Highlight, PanelState, Projection, header_view
from xdptui.widgets.project_paths import FollowView
from xdptui.widgets.rates import RateSamples, RatesView, push_sample, window_base, window_for

T = TypeVar("T")
EXACT_MAX_SPEED = 1_000_000  # ns of simulated time per second at and below which exact mode runs
EXACT_FRAMES_PER_S = 50_000  # above that speed, exact mode still runs if this covers the load


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
    def expect(self, t_end: int) -> None: ...
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


class Screenlike(Protocol):
    """Where the views go (``xdptui.screens.main.MainScreen``)."""

    def show(self, views: Projection) -> None: ...
    def show_header(self, view: HeaderView) -> None: ...


class Stage:
    """The simulation on screen: pacing, frames, the rates' window, the engine's mode, and
    what the frames carry for the panels (a followed packet, a zoomed queue, a marked event).

    Args:
        sim: the simulator.
        screen: where views and the header go.
        panel_state: what the rest of the app adds to a frame (focus, plan, lesson), asked
            for whenever views are made.
        fps: frames per second of the app's frame timer (the pacer's budget is half a frame).
        clock: the real clock the pacing measures (tests inject one).
    """

    def __init__(
        self,
        sim: SimulatorLike,
        screen: Screenlike,
        panel_state: Callable[[Stage], PanelState],
        *,
        fps: float,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.sim = sim
        self.screen = screen
        self._panel_state = panel_state
        self.pacer = Pacer(clock, fps)
        self.speed_ns_per_s = REAL_TIME
        self.paused = False
        self._frame: Frame | None = None
        self._prev: Frame | None = None  # the rates' window base
        self._last: Frame | None = None  # the frame shown before the newest
        self.history = RateHistory()
        self._samples = RateSamples()
        self.follow: FlowInfo | None = None
        """The flow whose next frame is followed (its hops come with every redraw)."""
        self.follow_view: FollowView | None = None
        self.zoom_ref: QueueRef | None = None
        """The queue the Zoom tab shows (its slots come with every frame)."""
        self.zoom_label = ""
        self.highlight: Highlight | None = None
        """What the event selected in the event list concerns (marked in the panels)."""
        self.busy = False
        """Work on the simulator runs in a thread (:meth:`off_loop`)."""
        self.frames_drawn = 0
        """New frames handed to the screen so far (``xdptui bench ui`` reads it)."""
        self.last_frame_at = 0.0
        """``time.perf_counter()`` when the newest frame was handed to the screen."""

    @property
    def frame(self) -> Frame | None:
        """The newest frame on screen."""
        return self._frame

    async def off_loop(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the simulator in a thread, the event loop free to draw; the frame
        timer's ticks skip meanwhile (nothing else may touch the simulator)."""
        self.busy = True
        try:
            return await asyncio.to_thread(work, *args)
        finally:
            self.busy = False

    # --- time ----------------------------------------------------------------------------------

    def tick(self) -> int:
        """Advance the simulation for the real time elapsed (nothing while paused); the
        simulated ns done. An engine failure propagates: the app stops the clock."""
        if self.paused or self.busy:
            return 0
        self.sim.expect(self.sim.now_ns + self.speed_ns_per_s)  # a second of the clock ahead
        return self.pacer.tick(self.sim, self.speed_ns_per_s)

    def choose_mode(self) -> None:
        """Slow motion shows the kernel's state poll by poll (exact mode); faster speeds move
        in steps of many polls (fast mode), unless the offered load is light enough for exact
        mode to keep up (at most :data:`EXACT_FRAMES_PER_S` frames per real second). Switching
        moves no counter; only the header says which mode runs."""
        speed = self.speed_ns_per_s
        frame = self._frame if self._frame is not None else self.sim.frame()
        offered = sum(src.pps for src in frame.sources if not src.stopped)
        light = speed < REAL_TIME and offered * speed / 1e9 <= EXACT_FRAMES_PER_S
        self.sim.exact = speed <= EXACT_MAX_SPEED or light

    def clock_changed(self) -> None:
        """The speed or the pause changed: measure from now, rechoose the mode."""
        self.pacer.reset()
        self.choose_mode()
        self.show_header()

    # --- frames and views ------------------------------------------------------------------

    def refresh(self) -> None:
        """Take a frame from the simulator and show it (panels skip unchanged views); while
        the clock runs, a live frame (the engine's last whole step)."""
        frame = self.sim.frame(live=not self.paused, zoom=self.zoom_ref)
        if self._frame is None or frame.seq != self._frame.seq:
            if self._frame is not None and frame.t_ns < self._frame.t_ns:
                self.history = RateHistory()  # time went back: a rewind, a restart
            # Every rate on screen is over one window of simulated time ending at this frame.
            window = window_for(self.speed_ns_per_s)
            self._samples = push_sample(self._samples, frame, window)
            self._prev = window_base(self._samples, frame, window)
            self.history = push_history(
                self.history, RatesView(self._prev, frame), frame, window // 2
            )
            self._last = self._frame
            self._frame = frame
            self.show_views()
            self.frames_drawn += 1
            self.last_frame_at = time.perf_counter()
        self.show_header()

    def time_moved(self) -> None:
        """After a jump in simulated time (a step back, a restart): retrace, redraw."""
        if self.follow is not None:
            self.retrace()
        self.refresh()

    def projection(self) -> Projection | None:
        """The views of the newest frame under the app's state."""
        if self._frame is None:
            return None
        return Projection(self._prev, self._frame, self._panel_state(self), self._last)

    def show_views(self) -> None:
        views = self.projection()
        if views is not None:
            self.screen.show(views)

    def show_header(self) -> None:
        if self._frame is None:
            return
        rtf = self.pacer.rtf if self.pacer.behind else None
        window = self._frame.t_ns - self._prev.t_ns if self._prev is not None else 0
        self.screen.show_header(
            header_view(
                self._frame,
                speed_ns_per_s=self.speed_ns_per_s,
                paused=self.paused,
                rtf=rtf,
                window_ns=window,
            )
        )

    # --- a followed packet ---------------------------------------------------------------

    def start_following(self, flow: FlowInfo) -> None:
        """Follow ``flow``'s next frame: its hops from ``sim.trace`` go to the paths panel."""
        self.follow = flow
        self.retrace()
        self.show_views()

    def stop_following(self) -> None:
        self.follow = None
        self.follow_view = None

    def retrace(self) -> None:
        flow = self.follow
        if flow is None:
            return
        hops = self.sim.trace(flow.source, flow.flow)
        packet = self.sim.packet(flow.source, flow.flow, hops)
        self.follow_view = FollowView(flow.label, hops, packet)
