"""Command lines to the simulator: the one way the app changes the host.

:class:`Console` sends a line (typed, from a key's dialog, a lesson or a plan) to the simulator,
refuses Python programs where the session forbids them, remembers what the dialogs offer next
(user programs seen, the traffic each ``pktgen`` left), redraws, and opens a long reply in a pane
that scrolls. It also answers the command line's completion.
"""

from __future__ import annotations

import logging
from typing import Any

from textual.app import App

from xdptui.app_stage import CommandResultLike, Stage
from xdptui.commands import programs_named
from xdptui.completion import CompletionContext, complete
from xdptui.model.catalog import PROGRAMS, is_user_program
from xdptui.model.commands import CommandResult, Pktgen, XdpSet
from xdptui.model.topology import Topology
from xdptui.screens.output import OutputScreen, opens_pane

LOG = logging.getLogger("xdptui")
NO_USER_PROGRAMS = (
    "Error: Python programs are disabled in this session (--no-user-programs; xdptui serve "
    "runs them only when started with --allow-user-programs); built-in programs work"
)

TrafficFields = tuple[str, str, str, str]
"""A source's ``pktgen`` fields as the traffic editor shows them: rate, size, flows, gso."""


class Console:
    """Command lines in, replies out.

    Args:
        stage: the simulation on screen (redrawn after every command).
        app: the Textual app (notifications, the long-reply pane).
        topology: where map names and the traffic editor's defaults come from.
        allow_user_programs: False refuses every command that loads a Python program, typed
            ones included, before the simulator sees it (``xdptui serve`` without
            ``--allow-user-programs``: a browser user must not run code on the server).
    """

    def __init__(
        self,
        stage: Stage,
        app: App[Any],
        topology: Topology | None,
        *,
        allow_user_programs: bool = True,
    ) -> None:
        self.stage = stage
        self.app = app
        self.topology = topology
        self.allow_user_programs = allow_user_programs
        self.user_programs: list[str] = []
        """User programs attached so far (the program picker offers them)."""
        self.pktgen: dict[str, TrafficFields] = {}
        """What each ``pktgen`` left per device (the traffic editor's defaults)."""

    def submit(self, text: str, origin: str = "user") -> CommandResultLike:
        """Send ``text`` to the simulator and redraw (its reply lands in the event log)."""
        refused = self._refused(text)
        if refused is not None:
            return refused
        return self._answered(text, origin, *self._apply(text, origin))

    async def submit_off_loop(self, text: str, origin: str = "user") -> CommandResultLike:
        """:meth:`submit` with the engine's part in a thread: the screen keeps drawing, and
        the app, awaiting this, takes its next key only when the command is done."""
        refused = self._refused(text)
        if refused is not None:
            return refused
        return self._answered(text, origin, *await self.stage.off_loop(self._apply, text, origin))

    def _refused(self, text: str) -> CommandResultLike | None:
        if not self.allow_user_programs and any(map(is_user_program, programs_named(text))):
            self.app.notify(NO_USER_PROGRAMS, title=text, severity="error", timeout=10)
            return CommandResult(False, "EPERM", NO_USER_PROGRAMS)
        return None

    def _apply(self, text: str, origin: str) -> tuple[CommandResultLike, bool]:
        """The engine's part: the command, then the followed packet's new hops; and whether
        the engine failed (a bug, not a refusal)."""
        try:
            result = self.stage.sim.submit(text, origin=origin)
        except Exception as exc:  # a bug in the engine, not a refusal: keep the app up
            LOG.error("the simulator failed on %r", text, exc_info=exc)
            reply = f"xdptui: the simulator failed on this command: {type(exc).__name__}: {exc}"
            return CommandResult(False, None, reply), True
        if self.stage.follow is not None:
            self.stage.retrace()
        return result, False

    def _answered(
        self, text: str, origin: str, result: CommandResultLike, failed: bool
    ) -> CommandResultLike:
        """What the app does with an answer: remember, rechoose the mode, redraw, and open a
        long reply in its pane."""
        app, stage = self.app, self.stage
        if failed:
            app.notify(result.reply, title=text, severity="error", timeout=15)
            return result
        command = result.command
        program = command.prog if result.ok and isinstance(command, XdpSet) else None
        if program is not None and is_user_program(program) and program not in self.user_programs:
            self.user_programs.append(program)
        if result.ok and isinstance(command, Pktgen) and not command.stop:
            self._remember_pktgen(command)
        if result.ok and isinstance(command, Pktgen):
            stage.choose_mode()  # the load changed: can exact mode still keep up?
        stage.refresh()
        if origin == "user" and opens_pane(result.reply, app.size.width):
            app.push_screen(OutputScreen(text, result.reply, result.ok))
        return result

    def _remember_pktgen(self, command: Pktgen) -> None:
        old = self.pktgen.get(command.dev, self.traffic_defaults().get(command.dev, ("",) * 4))
        self.pktgen[command.dev] = (
            old[0] if command.rate is None else str(command.rate),
            old[1] if command.size is None else str(command.size),
            old[2] if command.flows is None else str(command.flows),
            old[3] if command.gso is None else f"{command.gso:g}",
        )

    # --- what the topology declares --------------------------------------------------------

    def traffic_devices(self) -> list[str]:
        """Devices the topology's sources send to or from, in file order."""
        topo = self.topology
        if topo is None:
            return []
        return list(dict.fromkeys(t.to or t.from_ or "" for t in topo.traffic if t.to or t.from_))

    def traffic_defaults(self) -> dict[str, TrafficFields]:
        """Each traffic device's first source as the file declares it."""
        topo = self.topology
        out: dict[str, TrafficFields] = {}
        if topo is None:
            return out
        for t in topo.traffic:
            dev = t.to or t.from_
            if dev and dev not in out:
                out[dev] = (str(t.rate), str(t.sizes[0]), str(t.flows), f"{t.gso:g}")
        return out

    # --- completion ----------------------------------------------------------------------------

    def complete(self, line: str) -> tuple[int, tuple[str, ...]]:
        answer = complete(line, self.completion_context())
        return answer.start, answer.candidates

    def completion_context(self) -> CompletionContext:
        """Names the command line completes: devices and bonds of the newest frame, the
        topology's maps and traffic devices, built-in and user programs."""
        frame = self.stage.frame
        devices = frame.devices if frame is not None else ()
        topo = self.topology
        maps = tuple(
            dict.fromkeys(
                [
                    *(m.name for m in (frame.maps if frame is not None else ())),
                    *(m.name for m in (topo.maps if topo is not None else ())),
                    *(m.name for m in (topo.cpumaps if topo is not None else ())),
                ]
            )
        )
        return CompletionContext(
            devices=tuple(dev.name for dev in devices),
            bonds=tuple(d.name for d in devices if d.type == "bond"),
            maps=maps,
            programs=(*(p.name for p in PROGRAMS), *self.user_programs),
            traffic_devices=tuple(self.traffic_devices()),
            taps=tuple(d.name for d in devices if d.type == "tun"),
            cpumaps=tuple(
                dict.fromkeys(
                    [
                        *(
                            m.name
                            for m in (frame.maps if frame is not None else ())
                            if m.type == "cpumap"
                        ),
                        *(m.name for m in (topo.cpumaps if topo is not None else ())),
                    ]
                )
            ),
            xskmaps=tuple(
                m.name for m in (frame.maps if frame is not None else ()) if m.type == "xskmap"
            ),
            xsks=tuple(x.name for x in (frame.xsks if frame is not None else ())),
        )
