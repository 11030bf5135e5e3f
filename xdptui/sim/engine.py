"""The headless simulator: a SimPy clock in integer nanoseconds driving the NumPy data path.

``Simulator(topology)`` builds the host, attaches the topology's programs and schedules its
timeline. ``advance(dt)`` runs the data path in steps that never cross a scheduled event (a
timeline command, a link coming back), each at most ``max_step_ns`` long; ``step_poll()``
advances one NAPI poll. ``submit(line)`` applies a command at the current simulated time.
``frame()`` returns an immutable snapshot for the UI.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from xdptui.commands import parse
from xdptui.model.commands import CommandResult, MapUpdate, XdpSet
from xdptui.model.errors import KernelError, UsageError
from xdptui.model.topology import Topology
from xdptui.model.views import EventView, FlowInfo, Frame, TraceHop
from xdptui.sim.control import Control
from xdptui.sim.datapath import NAPI_BUDGET, Datapath
from xdptui.sim.snapshot import build_frame
from xdptui.sim.world import build_world

__all__ = ["DEFAULT_STEP_NS", "CommandResult", "Simulator"]

DEFAULT_STEP_NS = 10_000_000  # the longest aggregated step when nothing is scheduled sooner
POLL_STEP_NS = 1_000  # poll-by-poll mode: about one full 64-frame poll on a fast port
SETTLE_STEP_NS = 1_000  # after any change, steps restart this short and double while steady


class Simulator:
    """A running simulation of one topology. Deterministic: same topology, seed and commands
    at the same simulated times give the same counters."""

    def __init__(
        self,
        topology: Topology,
        *,
        max_step_ns: int = DEFAULT_STEP_NS,
        poll_by_poll: bool = False,
        devmap_egress: str = "flush",
    ) -> None:
        self.topology = topology
        self.max_step_ns = POLL_STEP_NS if poll_by_poll else max_step_ns
        self.world = build_world(topology)
        self.world.devmap_egress = devmap_egress
        self.datapath = Datapath(self.world)
        self.env = simpy.Environment()
        self.events: list[EventView] = []
        self.control = Control(self.world, self._now, self._schedule, self._log)
        self._seq = 0
        self._epoch_seen = -1
        self._step_ns = SETTLE_STEP_NS
        self._last_frame_t = 0
        self._last_busy = np.zeros(self.world.nr_cpus)
        self._last_polls = np.zeros(self.world.nr_cpus, dtype=np.int64)
        self.control.booting = True
        self._boot_bonds()
        for mspec in topology.maps:
            for mentry in mspec.entries:
                line = f"bpftool map update name {mspec.name} key {mentry.key} value {mentry.dev}"
                if mentry.egress:
                    line += f" egress {mentry.egress}"
                update = MapUpdate(mspec.name, mentry.key, mentry.dev, mentry.egress)
                self._apply(line, update, "topology")
        for spec in topology.devices:
            if spec.xdp is not None:
                keyword = {"native": "xdpdrv", "generic": "xdpgeneric", "offload": "xdpoffload"}
                line = f"ip link set dev {spec.name} {keyword.get(spec.xdp.mode or '', 'xdp')}"
                line += f" obj {spec.xdp.program}"
                for key, value in spec.xdp.params:
                    line += f" param {key}={value}"
                command = XdpSet(
                    spec.name,
                    keyword.get(spec.xdp.mode or "", "xdp"),
                    spec.xdp.program,
                    spec.xdp.params,
                )
                self._apply(line, command, "topology")
        self.control.booting = False
        for entry in topology.timeline:
            self.env.process(self._timeline(entry.at_ns, entry.do))

    def _boot_bonds(self) -> None:
        """Enslave the topology's slaves (as a boot script would, slaves still down) and start
        each bond's MII monitor."""
        from xdptui.model.topology import BondSpec
        from xdptui.sim.bond import Bond

        for spec in self.topology.devices:
            if not isinstance(spec, BondSpec):
                continue
            bond = self.world.devices[spec.name]
            assert isinstance(bond, Bond)
            for name in spec.slaves:
                slave = self.world.devices[name]
                try:
                    self.control.enslave(bond, slave)
                except KernelError as exc:
                    result = CommandResult(False, exc.errno.name, format_kernel_error(exc))
                    self._record(f"ip link set dev {name} master {bond.name}", result, "topology")
            if bond.miimon_ms > 0:
                self.env.process(self._miimon(bond))

    def _miimon(self, bond: Any) -> Generator[simpy.Event, Any, None]:
        period = bond.miimon_ms * 1_000_000
        while True:
            yield self.env.timeout(period)
            self.control.mii_monitor(bond)

    # ------------------------------------------------------------ time

    @property
    def now_ns(self) -> int:
        return int(self.env.now)

    def _now(self) -> int:
        return int(self.env.now)

    def _schedule(self, at_ns: int, action: Callable[[], None]) -> None:
        def proc() -> Generator[simpy.Event, Any, None]:
            yield self.env.timeout(max(0, at_ns - self.now_ns))
            action()

        self.env.process(proc())

    def _timeline(self, at_ns: int, line: str) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(at_ns)
        self.submit(line, origin="timeline")

    def _process_due(self) -> None:
        while self.env.peek() <= self.env.now:
            self.env.step()

    def run_until(self, t_end: int) -> None:
        """Advance to simulated time ``t_end`` (ns)."""
        while True:
            self._process_due()
            now = self.now_ns
            if now >= t_end:
                return
            nxt = min(float(t_end), self.env.peek())
            if self.world.epoch != self._epoch_seen or self._starts_between(now, nxt):
                self._epoch_seen = self.world.epoch
                self._step_ns = SETTLE_STEP_NS
            dt = int(min(nxt - now, self.max_step_ns, self._step_ns))
            if dt <= 0:
                dt = 1
            self.datapath.step(now, dt)
            self.env.run(until=now + dt)
            self._step_ns = min(self._step_ns * 2, self.max_step_ns)

    def _starts_between(self, t0: int, t1: float) -> bool:
        """A source starting in [t0, t1) is a transient worth resolving finely."""
        return any(t0 <= s.start_ns < t1 and s.start_ns > 0 for s in self.world.sources)

    def advance(self, dt_ns: int) -> None:
        self.run_until(self.now_ns + max(0, int(dt_ns)))

    def poll_ns(self) -> int:
        """How long one full NAPI poll takes on the busiest CPU right now (at least 100 ns)."""
        dp = self.datapath
        if dp.compiled_epoch != self.world.epoch:
            dp.compile_paths()
        worst = 0.0
        for dev in self.world.devices.values():
            comp = dp.compiled.get(dev.name)
            if comp is None or dev.rx is None or not len(comp.cost):
                continue
            worst = max(worst, float(comp.cost.mean()))
        return max(100, int(worst * NAPI_BUDGET) or POLL_STEP_NS)

    def step_poll(self) -> None:
        """Single-step: one NAPI poll's worth of simulated time, in one data-path step."""
        dt = self.poll_ns()
        saved = self.max_step_ns
        self.max_step_ns = dt
        try:
            self.advance(dt)
        finally:
            self.max_step_ns = saved

    # ------------------------------------------------------------ commands

    def submit(self, line: str, origin: str = "user") -> CommandResult:
        """Apply one command line now; the reply reads like the real tool's."""
        try:
            command = parse(line)
        except UsageError as exc:
            result = CommandResult(False, exc.errno.name, str(exc))
            self._record(line, result, origin)
            return result
        return self._apply(line, command, origin)

    def _apply(self, line: str, command: Any, origin: str) -> CommandResult:
        try:
            reply = self.control.apply(command)
            result = CommandResult(True, None, reply)
        except KernelError as exc:
            result = CommandResult(False, exc.errno.name, format_kernel_error(exc))
        self._record(line, result, origin)
        return result

    def _record(self, line: str, result: CommandResult, origin: str) -> None:
        self.events.append(
            EventView(self.now_ns, line, result.ok, result.errno, result.reply, origin)
        )

    def _log(self, text: str) -> None:
        self.events.append(EventView(self.now_ns, text, True, None, "", "system"))

    # ------------------------------------------------------------ tracing

    def flows(self, limit: int = 64) -> tuple[FlowInfo, ...]:
        """Flows a user can follow (the first ``limit`` of each source)."""
        from xdptui.sim.trace import list_flows

        return list_flows(self, limit)

    def trace(self, source: str, flow: int) -> tuple[TraceHop, ...]:
        """Follow the next frame of ``flow`` of ``source`` through the data path as it is now,
        with simulated timestamps (``xdptui.sim.trace``)."""
        from xdptui.sim.trace import trace_frame

        return trace_frame(self, source, flow)

    # ------------------------------------------------------------ snapshots

    def frame(self) -> Frame:
        """An immutable snapshot; CPU busy shares cover the time since the previous frame."""
        self._seq += 1
        span = self.now_ns - self._last_frame_t
        busy = self.datapath.cpu.busy_ns - self._last_busy
        polls = self.datapath.cpu.polls - self._last_polls
        share = busy / span if span > 0 else np.zeros_like(busy)
        frame = build_frame(self, self._seq, np.clip(share, 0.0, 1.0), polls)
        self._last_frame_t = self.now_ns
        self._last_busy = self.datapath.cpu.busy_ns.copy()
        self._last_polls = self.datapath.cpu.polls.copy()
        return frame


def format_kernel_error(exc: KernelError) -> str:
    """iproute2 prints the extack as ``Error: MSG.`` and otherwise ``RTNETLINK answers:
    strerror``; lookups that fail in the tool itself print their own line."""
    from xdptui.sim.control import ToolError

    if isinstance(exc, ToolError):
        return exc.extack
    if exc.extack:
        text = exc.extack
        if text.startswith(("Error:", "pktgen", "ethtool")):
            return text
        return f"Error: {text}{'' if text.endswith('.') else '.'}"
    return f"RTNETLINK answers: {exc.errno.strerror}"
