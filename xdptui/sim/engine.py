"""The headless simulator: one datapath run at two granularities, commands, the event stream,
checkpoints and rewind.

``Simulator(topology)`` builds the host, attaches the topology's programs and schedules its
timeline. Time advances with ``run_until(t)`` / ``advance(dt)``; ``exact`` chooses the mode at
any instant: exact mode (``xdptui.sim.exact``) processes every NAPI poll as an event, fast mode
(``xdptui.sim.fast``) moves steps of many polls by arithmetic. ``submit(line)`` applies a
command now. ``frame()`` is an immutable snapshot for the UI, ``report()`` the JSON report,
``events()`` the event stream. The whole state is copied for checkpoints (its logs and inputs
shared, so a copy costs the same at any point of history), so ``rewind(t)`` restores the one
before ``t`` and replays; runs never depend on how time is cut.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from xdptui.commands import parse
from xdptui.model.commands import CommandResult, MapUpdate, XdpSet
from xdptui.model.errors import KernelError, UsageError
from xdptui.model.topology import BondSpec, Topology
from xdptui.model.views import (
    EventView,
    FlowInfo,
    Frame,
    PacketView,
    QueueRef,
    StreamEventView,
    TraceHop,
)
from xdptui.sim import show
from xdptui.sim.bond.bond_main import Bond
from xdptui.sim.clock import TimedEntry, Timers, next_timeline, schedule_timeline
from xdptui.sim.control import Control, format_kernel_error
from xdptui.sim.datapath import Datapath
from xdptui.sim.events import STEP_KINDS, EventStream
from xdptui.sim.exact import Exact
from xdptui.sim.exact_io import ExactIO
from xdptui.sim.fast import Fast, FastIO
from xdptui.sim.history import Inputs
from xdptui.sim.modes import last_boundary, switch_mode
from xdptui.sim.snapshot import build_frame, stream_views
from xdptui.sim.state import Checkpoint, State, copy_state
from xdptui.sim.world import World, build_world

__all__ = ["CommandResult", "Simulator"]

CHECKPOINT_EXACT_NS = 250_000  # a checkpoint at least this often in exact mode (``,`` replays
# at most this much to go one poll back)
CHECKPOINT_FAST_NS = 100_000_000  # ... and in fast mode (a step under way included: a
# checkpoint only ever waiting for a step to end on ``now`` hardly came at all)
CHECKPOINTS_MAX = 64
STREAM_VIEWS = 400  # newest event-stream records a frame carries (the app's event list)
INPUTS_MAX = 4_096  # inputs kept for replay; beyond, the oldest checkpoint goes with the
# inputs only it needed (``Simulator._forget_oldest``)
UNDO_MAX = 256  # polls ``step_back`` can undo exactly, one state copy each
STEP_LIMIT_NS = 1_000_000_000  # ``step_poll`` looks this far ahead for the next poll
BACK_LOOKBACK_NS = (200_000, 2_000_000, 20_000_000)  # replayed in exact mode to find polls to
# step back over after fast mode, which has none of its own


class Simulator:
    """A running simulation of one topology. Deterministic: same topology, seed and commands
    at the same simulated times give the same counters, whatever the mode switches and
    however time is cut."""

    def __init__(
        self,
        topology: Topology,
        *,
        exact: bool = False,
        devmap_egress: str = "flush",
        trust: bool = True,
        poll_by_poll: bool = False,
        max_step_ns: int | None = None,
        timed_steps: bool = True,
    ) -> None:
        if not trust:
            from xdptui.trust import UntrustedTopology, user_programs

            named = user_programs(topology)
            if named:
                raise UntrustedTopology(topology, named)
        self.topology = topology
        self.trust = trust
        self.timed_steps = timed_steps
        _ = max_step_ns
        self._devmap_egress = devmap_egress
        self.state = st = self._fresh_state(exact or poll_by_poll)
        self.control = self._control()
        self.checkpoints: list[Checkpoint] = []
        self._seq = 0
        self._last_frame_t = 0
        self._last_busy = np.zeros(st.world.nr_cpus)
        self._last_share = np.zeros(st.world.nr_cpus)  # the last interval's busy shares
        self._last_polls = np.zeros(st.world.nr_cpus, dtype=np.int64)
        self._preview: tuple[int, int, State] | None = None
        self._views: dict[int, tuple[dict[str, Any], StreamEventView]] = {}
        self._undo: list[Checkpoint] = []  # the state before each step_poll, newest last
        self._step_starts: list[Checkpoint] = []  # the state right after each start_step
        self._timeline: tuple[TimedEntry, ...] = ()  # the timed timeline, in firing order
        self._boot_copies = False  # boot's commands: a state copy each only after a refusal
        self._reach = 0  # how far a caller that keeps advancing expects to go (``expect``)
        try:
            self._boot()
        except _BootRefused:
            # A topology command was refused: boot again from a fresh state, each command all
            # or nothing (a copy before each), so the refusal is recorded and undone alone.
            self._boot_copies = True
            self.state = self._fresh_state(st.is_exact)
            self.control = self._control()
            self._boot()
        st = self.state
        inputs, stream = st.inputs, st.stream
        boot_ck = Checkpoint(st.now, inputs.count, None, stream.seq, polls=st.exact.polls)
        boot_ck.is_exact = st.is_exact

        def reboot() -> State:
            """The state right after boot, built again (what a copy then would have been:
            the simulator's inputs and event stream shared)."""
            twin = Simulator(
                self.topology,
                exact=boot_ck.is_exact,
                devmap_egress=self._devmap_egress,
                trust=self.trust,
                timed_steps=self.timed_steps,
            )
            return copy_state(twin.state, stream, inputs)

        boot_ck.build = reboot
        self.checkpoints = [boot_ck]
        self._boot_ck = boot_ck

    def _fresh_state(self, exact: bool) -> State:
        """The topology's host as built, before boot: nothing enslaved, attached or filled."""
        world = build_world(self.topology)
        world.devmap_egress = self._devmap_egress
        dp = Datapath(world, _NoIO())
        stream = EventStream()
        st = State(
            world=world,
            dp=dp,
            exact=Exact(world, dp, stream),
            fast=Fast(world, dp),
            timers=Timers(),
            is_exact=exact,
            stream=stream,
        )
        dp.io = ExactIO(st.exact) if st.is_exact else FastIO(st.fast)
        return st

    @classmethod
    def from_file(cls, path: str | Path, seed: int | None = None, trust: bool = False) -> Simulator:
        """Load a topology file and build its simulator (``seed`` overrides the file's)."""
        from xdptui.commands import validate
        from xdptui.topology_io import load_topology

        topo = load_topology(path, validate_command=validate)
        if seed is not None:
            topo = dataclasses.replace(topo, seed=seed)
        return cls(topo, trust=trust)

    # ------------------------------------------------------------ state access

    @property
    def world(self) -> World:
        """The host as it is at ``now`` (read it; change it only through commands)."""
        return self.view().world

    @property
    def now_ns(self) -> int:
        return self.state.now

    @property
    def exact(self) -> bool:
        return self.state.is_exact

    @exact.setter
    def exact(self, on: bool) -> None:
        if on == self.state.is_exact:
            return
        self._input("mode", "exact" if on else "fast")
        self._switch(on)

    def _control(self) -> Control:
        return Control(self.state.world, self._now, self._schedule, self._log)

    # ------------------------------------------------------------ boot

    def _boot(self) -> None:
        """Enslave the topology's slaves, fill its maps, attach its programs (as a boot script
        would, slaves still down), start each bond's MII monitor and schedule the timeline."""
        topo = self.topology
        st = self.state
        self.control.booting = True
        for spec in topo.devices:
            if not isinstance(spec, BondSpec):
                continue
            bond = st.world.devices[spec.name]
            assert isinstance(bond, Bond)
            for name in spec.slaves:
                try:
                    self.control.enslave(bond, st.world.devices[name])
                except KernelError as exc:
                    result = CommandResult(False, exc.errno.name, format_kernel_error(exc))
                    self._record(f"ip link set dev {name} master {bond.name}", result, "topology")
            if bond.miimon_ms > 0:
                st.timers.add(bond.miimon_ms * 1_000_000, "miimon", bond.name)
        for mspec in topo.maps:
            for m in mspec.entries:
                line = f"bpftool map update name {mspec.name} key {m.key} value {m.dev}"
                line += f" egress {m.egress}" if m.egress else ""
                self._apply(line, MapUpdate(mspec.name, m.key, m.dev, m.egress), "topology")
        for cspec in topo.cpumaps:
            for ce in cspec.entries:
                line = f"bpftool map update name {cspec.name} key {ce.key} value qsize {ce.qsize}"
                line += f" prog {ce.prog}" if ce.prog else ""
                update = MapUpdate(cspec.name, ce.key, "", qsize=ce.qsize, cpu_prog=ce.prog)
                self._apply(line, update, "topology")
        keyword = {"native": "xdpdrv", "generic": "xdpgeneric", "offload": "xdpoffload"}
        for spec in topo.devices:
            if spec.xdp is None:
                continue
            kw = keyword.get(spec.xdp.mode or "", "xdp")
            line = f"ip link set dev {spec.name} {kw} obj {spec.xdp.program}"
            line += "".join(f" param {k}={v}" for k, v in spec.xdp.params)
            self._apply(line, XdpSet(spec.name, kw, spec.xdp.program, spec.xdp.params), "topology")
        self._fill_object_maps()
        self.control.booting = False
        self._timeline = schedule_timeline(st.timers, topo.timeline)
        if self.timed_steps and topo.lessons:
            # Nobody drives the lesson: its steps start at their own ``at:`` times.
            for j, step in enumerate(topo.lessons[0].steps):
                if step.at_ns is not None:
                    st.timers.add(step.at_ns, "step", 0, j)
        for src in st.world.sources:
            if src.start_ns > 0:
                st.timers.add(src.start_ns, "anchor")
        self._rates()
        st.dp.compile()
        st.fast.grid.restart(0)
        if st.is_exact:
            st.exact.rearm_all(0)

    def _fill_object_maps(self) -> None:
        """A topology's ``type: object`` maps, once the programs are attached: each element
        as ``bpftool map update`` sets it (``name M`` when one loaded object has the map,
        else ``id N`` for each copy), so a refusal is bpftool's and lands in the log."""
        for mspec in self.topology.object_maps:
            found = [m for m in show.object_maps(self.state.world) if m.name == mspec.name]
            refs: list[tuple[str, int | None]] = []
            refs += [(f"name {mspec.name}", None)] if len(found) == 1 else []
            refs = refs or [(f"id {m.map_id}", m.map_id) for m in found]
            refs = refs or [(f"name {mspec.name}", None)]  # not loaded: bpftool's ENOENT
            for e in mspec.entries:
                for ref, map_id in refs:
                    if e.value_map is not None:
                        value = self._inner_ref(found, map_id, e.value_map)
                        line = f"bpftool map update {ref} key {e.key} value {value[0]} {value[1]}"
                        c = MapUpdate(mspec.name, 0, "", None, 0, map_id, e.key_bytes, None, value)
                    else:
                        line = f"bpftool map update {ref} key {e.key} value {e.value}"
                        c = MapUpdate(
                            mspec.name, 0, "", None, 0, map_id, e.key_bytes, e.value_bytes
                        )
                    self._apply(line, c, "topology")

    def _inner_ref(
        self, outers: list[show.ObjMap], outer_id: int | None, name: str
    ) -> tuple[str, str]:
        """``value {map: NAME}`` as bpftool's ``MAP``: ``name NAME`` when one loaded map has
        that name, else ``id N`` of the copy that belongs to the outer map's own load."""
        world = self.state.world
        named = [m for m in show.object_maps(world) if m.name == name]
        if len(named) <= 1:
            return ("name", name)
        outer = next((m for m in outers if outer_id in (None, m.map_id)), None)
        for p in show.loaded_programs(world):
            obj = p.prog.obj
            if obj is None or outer is None or not any(x is outer.map for x in obj.maps):
                continue
            for i in range(len(obj.maps)):
                if obj.map_name(i) == name:
                    return ("id", str(obj.map_ids[i]))
        return ("name", name)

    def _rates(self) -> None:
        """Each source's pacing at its current rate (frames per 1000 s, exact integers)."""
        for src in self.state.world.sources:
            src.milli = round(self.state.world.source_pps(src) * 1000)

    # ------------------------------------------------------------ time

    def _now(self) -> int:
        return self.state.now

    def _schedule(self, at_ns: int, kind: str, *arg: str | int) -> None:
        self.state.timers.add(at_ns, kind, *arg)

    def expect(self, t_end: int) -> None:
        """A caller that advances in small pieces (the app's running clock) expects to go on
        to ``t_end``: fast mode then compiles NAPI's loop as soon as the polls to come pay for
        it, instead of running its first polls as plain Python. Nothing else changes (the
        compiled loop gives the same results)."""
        self._reach = t_end

    def run_until(self, t_end: int) -> None:
        """Advance to simulated time ``t_end`` (ns): every event at or before it happens."""
        self._undo.clear()
        self.state.fast.expect(max(t_end, self._reach))
        self._run(t_end)

    def _run(self, t_end: int, max_polls: int | None = None) -> bool:
        """``run_until``; with ``max_polls`` (exact mode) it stops right after the poll that
        brings the poll count to it (True), mid-instant if other events share its time."""
        st = self.state
        while True:
            nxt = st.timers.peek()
            target = min(t_end, nxt)
            if self._data(target, commit=nxt <= t_end, max_polls=max_polls):
                self._preview = None
                return True
            st.now = max(st.now, target)
            if nxt > t_end:
                break
            while st.timers.peek() == nxt:
                self._fire(st.timers.pop())
            self._after_change()
        self._program_failures()
        self._preview = None
        self._maybe_checkpoint()
        return False

    def advance(self, dt_ns: int) -> None:
        self.run_until(self.now_ns + max(0, int(dt_ns)))

    def _data(self, t: int, commit: bool, max_polls: int | None = None) -> bool:
        """Move the data path to ``t``: exact mode through every event at or before it (or
        up to the poll ``max_polls``: True); fast mode in grid steps (exactly to ``t`` when
        something happens there)."""
        st = self.state
        if st.is_exact:
            if st.exact.run(t, max_polls):
                st.now = max(st.now, st.exact.now)
                st.exact.settle(st.now)
                return True
            st.exact.settle(t)
            return False
        end = t if commit else last_boundary(st.fast, st.committed, t)
        if end > st.committed:
            st.fast.run(st.committed, end)
            st.committed = end
        return False

    def _fire(self, timer: Any) -> None:
        st = self.state
        kind = timer.kind
        if kind == "timeline":
            entry = self.topology.timeline[next_timeline(st.timers, self._timeline, timer)]
            self.submit(entry.do, origin="timeline")
        elif kind == "miimon":
            bond = st.world.devices.get(str(timer.arg[0]))
            if isinstance(bond, Bond):
                self.control.mii_monitor(bond)
                st.timers.add(st.now + bond.miimon_ms * 1_000_000, "miimon", bond.name)
        elif kind == "carrier":
            self.control.carrier_back(str(timer.arg[0]), int(timer.arg[1]))
        elif kind == "step":
            self._start_step(int(timer.arg[0]), int(timer.arg[1]))
        elif kind == "input":
            _, _, what, data = st.inputs[int(timer.arg[0])]
            if what == "cmd":
                origin, _, line = data.partition(" ")
                self._submit(line, origin, log_input=False)
            elif what == "step":
                lesson, step = data.split()
                self._start_step(int(lesson), int(step))
            else:
                self._switch(data == "exact")
        st.world.touch() if kind == "anchor" else None

    def _after_change(self) -> None:
        """After commands: new pacing, recompiled paths, re-armed interrupts, and fast mode
        resolving the transient finely."""
        st = self.state
        self._rates()
        if st.dp.compiled_epoch != st.world.epoch:
            st.dp.compile()
            st.fast.grid.restart(st.now)
        if st.is_exact:
            st.exact.rearm_all(st.now)
        else:
            st.fast.napi.mark_change(st.now)
        self._program_failures()

    def _program_failures(self) -> None:
        """Programs the data path detached because they failed: each an event in the log, the
        report's ``events`` and the event stream (``prog_fail``)."""
        st = self.state
        for exc, where in st.dp.failures:
            text = f"program {exc.prog_name} (id {exc.prog_id}) {exc.why}"
            reply = f"{text}; detached from {', '.join(where) or 'nothing'}"
            ev = EventView(st.now, f"# {exc.prog_name} failed", False, "EINVAL", reply, "system")
            st.log.append(ev)
            st.commands.append(ev)
            st.stream.emit(
                {
                    "t_ns": st.now,
                    "kind": "prog_fail",
                    "prog": exc.prog_name,
                    "id": exc.prog_id,
                    "error": exc.why,
                    "detached": where,
                }
            )
        st.dp.failures.clear()

    def step_poll(self) -> bool:
        """Exactly one NAPI poll forward -- the next poll on any CPU, in time order (exact
        mode); when several polls share an instant it stops after the first. False (and no
        change) when no poll comes within a second of simulated time."""
        if not self.exact:
            self.exact = True
        st = self.state
        undo = Checkpoint(st.now, st.inputs.count, copy_state(st), st.stream.seq)
        if not self._run(st.now + STEP_LIMIT_NS, max_polls=st.exact.polls + 1):
            self._restore(undo, undo.state)
            return False
        self._undo = [*self._undo[-(UNDO_MAX - 1) :], undo]
        return True

    def step_until(self, match: Callable[[dict[str, Any]], bool], max_polls: int) -> bool:
        """Poll by poll (exact mode) until the event stream gains a record ``match`` takes,
        at most ``max_polls`` polls: True when one came. ``step_back`` then goes back one
        poll, as after any run."""
        if not self.exact:
            self.exact = True
        self._undo.clear()
        seen = self.state.stream.seq
        for _ in range(max_polls):
            if not self._run(self.state.now + STEP_LIMIT_NS, max_polls=self.state.exact.polls + 1):
                break
            self._maybe_checkpoint()  # so that stepping back replays little
            found = any(match(r) for r in self.state.stream.since(seen))
            seen = self.state.stream.seq
            if found:
                return True
        return False

    def step_back(self) -> bool:
        """One NAPI poll back: exactly the state right after the poll before the last one,
        which is the state before the last ``step_poll`` when nothing else moved the clock
        since. After running, the checkpoint before that poll is replayed up to it, stopping
        between two polls of one instant. Fast mode has no polls of its own: after it, the
        last ``BACK_LOOKBACK_NS`` are replayed in exact mode first (the two modes agree within
        1 %), so there are polls to step over. Inputs logged later stay logged and happen
        again as time passes them. False when there is no earlier poll."""
        if self._undo:
            undo = self._undo.pop()
            self._restore(undo, undo.state)
            return True
        if not self.exact:
            self.exact = True
        now = self.state.now
        for lookback in BACK_LOOKBACK_NS:
            if self._exact_polls_since_switch() >= 2 or not self._exact_since():
                break
            self._exact_from(max(0, now - lookback), now)
        if self._back_to_poll(self.state.exact.polls - 1):
            return True
        self.run_until(now)
        return False

    def _exact_since(self) -> int | None:
        """When exact mode last began (0: built in it), None while in fast mode."""
        if not self.state.is_exact:
            return None
        modes = [i for i in self.state.inputs if i[2] == "mode" and i[0] <= self.state.now]
        return modes[-1][0] if modes else 0

    def _exact_polls_since_switch(self, enough: int = 2) -> int:
        """Polls of the event stream since exact mode last began (counted up to ``enough``)."""
        since = self._exact_since()
        if since is None:
            return 0
        now, count = self.state.now, 0
        for record in reversed(self.state.stream.records):
            if record["t_ns"] < since or count >= enough:
                break
            if record["kind"] in STEP_KINDS and record["t_ns"] <= now:
                count += 1
        return count

    def _exact_from(self, t0: int, now: int) -> None:
        """The past again, in exact mode from ``t0`` on: the mode switches logged after ``t0``
        give way to one into exact mode at ``t0``, and the checkpoint before it is replayed up
        to, not into, the instant ``now`` (exact mode had not polled since it began, so
        whatever polls the replay finds at ``now`` itself come after the present).
        Checkpoints after ``t0`` held the fast-mode past and go."""
        st = self.state
        t0 = max(t0, self.checkpoints[0].t)
        inputs = [i for i in st.inputs if not (i[2] == "mode" and i[0] > t0)]
        modes = [i for i in inputs if i[2] == "mode"]
        if not (modes[-1][3] == "exact" if modes else self.checkpoints[0].is_exact):
            st.timers.seq += 1
            inputs = sorted([*inputs, (t0, st.timers.seq, "mode", "exact")])
        st.inputs = st.inputs.replaced(inputs)
        self.checkpoints = [c for c in self.checkpoints if c.t <= t0]
        ck = max(self.checkpoints, key=lambda c: (c.t, c.inputs))
        self._restore(ck, copy_state(ck.state, st.stream))
        self.run_until(t0)
        self._checkpoint()
        self.run_until(max(t0, now - 1))

    def _back_to_poll(self, target: int) -> bool:
        """The state right after exact poll number ``target``: the latest checkpoint before
        it, replayed until that poll (a checkpoint right after it, when none is before)."""
        st = self.state
        now = st.now
        if target < 0:
            return False
        usable = [c for c in self.checkpoints if c.t <= now and c.polls <= target]
        before = [c for c in usable if c.polls < target]
        usable = before or [c for c in usable if c.is_exact]
        if not usable:
            return False
        ck = max(usable, key=lambda c: (c.t, c.inputs))
        self._restore(ck, copy_state(ck.state, st.stream))
        if self.state.exact.polls < target:
            self._run(now, max_polls=target)
        return True

    def restart(self) -> None:
        """Back to t = 0 as built: same seed and timeline, no inputs (the app's ``home``)."""
        boot = self._boot_ck
        stream = self.state.stream
        stream.truncate(boot.stream_seq)
        self.state = copy_state(boot.state, stream)
        self.state.inputs = Inputs()
        self.control = self._control()
        self.checkpoints = [boot]
        self._undo = []
        self._step_starts = []
        self._preview = None
        self._last_frame_t = 0
        self._last_busy = self.state.dp.cpu.busy_ns.copy()
        self._last_share = np.zeros_like(self._last_busy)
        self._last_polls = self.state.dp.cpu.polls.copy()

    # ------------------------------------------------------------ lessons

    def start_step(self, lesson: int, step: int) -> None:
        """A lesson step begins now (an input, logged for replay): its ``at: step`` timeline
        entries run, in file order."""
        st = self.state
        self._data(st.now, commit=True)
        self._input("step", f"{lesson} {step}")
        self._start_step(lesson, step)
        self._after_change()
        st = self.state
        ck = Checkpoint(st.now, st.inputs.count, copy_state(st), st.stream.seq)
        ck.state.inputs = st.inputs.copy()  # its own: back_to_step forgets what came later
        self._step_starts.append(ck)

    def _start_step(self, lesson: int, step: int) -> None:
        st = self.state
        st.lesson = (lesson, step, st.now)
        st.stream.emit({"t_ns": st.now, "kind": "lesson", "lesson": lesson, "step": step})
        for entry in self.topology.timeline:
            if entry.step == (lesson, step):
                self._submit(entry.do, "timeline", log_input=False)

    def back_to_step(self, lesson: int, step: int) -> bool:
        """Exactly the state just after ``step`` of ``lesson`` last started, forgetting
        everything after it (the app's previous-step key). False if it never started."""
        for i in range(len(self._step_starts) - 1, -1, -1):
            ck = self._step_starts[i]
            if ck.state.lesson is None or ck.state.lesson[:2] != (lesson, step):
                continue
            del self._step_starts[i + 1 :]
            stream = self.state.stream
            stream.truncate(ck.stream_seq)
            self.state = copy_state(ck.state, stream)
            self.state.inputs = ck.state.inputs.copy()
            self.control = self._control()
            self.checkpoints = [
                c for c in self.checkpoints if c.t <= ck.t and c.inputs <= ck.inputs
            ]
            self._undo = []
            self._preview = None
            return True
        return False

    # ------------------------------------------------------------ modes

    def _switch(self, exact: bool) -> None:
        st = self.state
        if exact:
            self._data(st.now, commit=True)
        switch_mode(st, exact)
        self._preview = None

    # ------------------------------------------------------------ commands

    def submit(self, line: str, origin: str = "user") -> CommandResult:
        """Apply one command line now; the reply reads like the real tool's."""
        return self._submit(line, origin, log_input=origin != "timeline")

    def _submit(self, line: str, origin: str, log_input: bool) -> CommandResult:
        st = self.state
        if log_input:
            self._data(st.now, commit=True)
            self._input("cmd", f"{origin} {line}")
        try:
            command = parse(line)
        except UsageError as exc:
            result = CommandResult(False, exc.errno.name, str(exc))
            self._record(line, result, origin)
            return result
        result = self._apply(line, command, origin)
        if log_input:
            self._after_change()
        return result

    def _input(self, kind: str, data: str) -> None:
        """Log an input (a user command, a mode switch) for replay after a rewind. After a
        rewind the inputs logged later than now are a future this input replaces."""
        st = self.state
        last = st.inputs.last()
        if last is not None and last[0] > st.now:  # in time order: only after a rewind
            keep = st.inputs.first + sum(1 for i in st.inputs if i[0] <= st.now)
            st.inputs.truncate(keep)  # in place: every copy of the state shares the log
            st.timers.heap = [
                tm for tm in st.timers.heap if tm.kind != "input" or int(tm.arg[0]) < keep
            ]
            heapq.heapify(st.timers.heap)
            self.checkpoints = [c for c in self.checkpoints if c.t <= st.now]
        self._checkpoint()
        st.timers.seq += 1
        st.inputs.append((st.now, st.timers.seq, kind, data))

    def _apply(self, line: str, command: Any, origin: str) -> CommandResult:
        """Apply a command all or nothing: a refusal restores the state from before it, so
        whatever the command had validated, built or changed before it was refused is gone.
        Boot takes no copy until a command is refused (``_BootRefused``: boot starts over)."""
        careful = self._boot_copies or not self.control.booting
        before = copy_state(self.state) if careful else None
        try:
            reply = self.control.apply(command)
            result = CommandResult(True, None, reply, command)
        except KernelError as exc:
            if before is None:
                raise _BootRefused from exc
            result = CommandResult(False, exc.errno.name, format_kernel_error(exc), command)
            booting = self.control.booting
            for f in fields(State):  # in place: callers up the stack hold this state object
                setattr(self.state, f.name, getattr(before, f.name))
            self.control = self._control()
            self.control.booting = booting
        self._record(line, result, origin)
        return result

    def _record(self, line: str, result: CommandResult, origin: str) -> None:
        st = self.state
        ev = EventView(st.now, line, result.ok, result.errno, result.reply, origin)
        st.log.append(ev)
        st.commands.append(ev)
        st.stream.emit(
            {
                "t_ns": st.now,
                "kind": "command",
                "cmd": line,
                "ok": result.ok,
                "errno": result.errno,
                "origin": origin,
            }
        )

    def _log(self, text: str) -> None:
        self.state.log.append(EventView(self.state.now, text, True, None, "", "system"))

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        """Events numbered above ``since``, in order (exact mode records every poll, flush and
        drop; both modes record commands)."""
        return self.state.stream.since(since)

    # ------------------------------------------------------------ checkpoints

    def _checkpoint(self) -> None:
        st = self.state
        ck = Checkpoint(st.now, st.inputs.count, copy_state(st), st.stream.seq)
        self.checkpoints = [c for c in self.checkpoints if c.t != st.now]
        self.checkpoints.append(ck)
        self.checkpoints.sort(key=lambda c: c.t)
        if len(self.checkpoints) > CHECKPOINTS_MAX:  # thin out the middle, keep the oldest
            del self.checkpoints[1]
        if st.inputs.kept > INPUTS_MAX and len(self.checkpoints) > 2:
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        """The oldest checkpoint goes (t = 0 at first; ``restart`` still has the boot's): the
        next becomes the earliest a rewind restores, and the inputs before it, which only a
        replay from the one gone would need, are let go. The history kept, and what it
        costs, stays bounded however long the session runs."""
        del self.checkpoints[0]
        floor = self.checkpoints[0].inputs
        self.state.inputs.forget_before(floor)
        self._undo = [u for u in self._undo if u.inputs >= floor]

    def _maybe_checkpoint(self) -> None:
        every = CHECKPOINT_EXACT_NS if self.exact else CHECKPOINT_FAST_NS
        due = not self.checkpoints or self.state.now - self.checkpoints[-1].t >= every
        if due:
            self._checkpoint()

    def rewind(self, t_ns: int) -> None:
        """Go back to time ``t_ns``: restore the checkpoint before it and replay the inputs
        logged since. Later inputs stay logged and happen again as time passes them, unless
        a new input replaces that future. Not before the oldest checkpoint kept: t = 0 until
        ``INPUTS_MAX`` inputs were logged, later the time ``_forget_oldest`` left."""
        t_ns = max(self.checkpoints[0].t, t_ns)
        ck = max((c for c in self.checkpoints if c.t <= t_ns), key=lambda c: c.t)
        self._restore(ck, copy_state(ck.state, self.state.stream))
        self.run_until(t_ns)

    def _restore(self, ck: Checkpoint, state: State) -> None:
        """``state`` (a copy of ``ck``'s) becomes the present; the inputs logged since the
        checkpoint are scheduled again, and the events after it are forgotten (they happen
        again)."""
        inputs = self.state.inputs
        stream = self.state.stream
        stream.truncate(ck.stream_seq)
        self.state = state
        self.state.stream = stream
        self.state.inputs = inputs
        self.control = self._control()
        for index in range(ck.inputs, inputs.count):
            t, seq, _, _ = inputs[index]
            self.state.timers.add(t, "input", index, seq=seq)
        self._preview = None

    def previous_poll_ns(self) -> int | None:
        """When the poll before the last one (at or before now) started: ``step_back`` ends
        right after that poll (``rewind`` to this time also runs any other poll of that
        instant)."""
        now, seen = self.state.now, 0
        for record in reversed(self.state.stream.records):
            if record["kind"] in STEP_KINDS and record["t_ns"] <= now:
                seen += 1
                if seen == 2:
                    return int(record["t_ns"])
        return None

    # ------------------------------------------------------------ looking

    def view(self) -> State:
        """The state at ``now`` for someone to look at: fast mode's steps end on its grid, so
        the part of a step up to now is run on a copy."""
        st = self.state
        if st.is_exact or st.committed >= st.now:
            return st
        if self._preview is not None and self._preview[0] == st.now:
            return self._preview[2]
        peek = copy_state(st)
        peek.fast.run(peek.committed, peek.now)
        peek.committed = peek.now
        self._preview = (st.now, 0, peek)
        return peek

    def fork(self) -> Simulator:
        """A simulator on a copy of this one's state at ``now`` (no checkpoints, same
        topology): what-if runs and traces that leave this one untouched."""
        other = object.__new__(Simulator)
        other.topology = self.topology
        other.trust = self.trust
        other.state = copy_state(self.view(), EventStream())
        other.state.inputs = other.state.inputs.copy()  # its own from now on
        other.control = other._control()
        other.checkpoints = []
        other.timed_steps = self.timed_steps
        other._timeline = self._timeline
        other._undo = []
        other._views = {}
        other._step_starts = []
        other._boot_ck = self._boot_ck
        other._seq = 0
        other._last_frame_t = other.state.now
        other._last_busy = other.state.dp.cpu.busy_ns.copy()
        other._last_share = np.zeros_like(other._last_busy)
        other._last_polls = other.state.dp.cpu.polls.copy()
        other._preview = None
        other._boot_copies = True
        other._reach = 0  # (a fork's runs are short: what-ifs and traces)
        return other

    def flows(self, limit: int = 64) -> tuple[FlowInfo, ...]:
        """Flows a user can follow (the first ``limit`` of each source)."""
        from xdptui.sim.trace import list_flows

        return list_flows(self.view().world, limit)

    def packet(self, source: str, flow: int, hops: tuple[TraceHop, ...] = ()) -> PacketView | None:
        """The next frame of ``flow`` of ``source``: its bytes and headers before and after
        the program it meets first (None: no such flow). ``hops`` (what :meth:`trace`
        returned): a real program's run there gives the bytes it left."""
        from xdptui.sim.packet import packet_view

        return packet_view(self.view(), source, flow, hops)

    def trace(self, source: str, flow: int) -> tuple[TraceHop, ...]:
        """Follow the next frame of ``flow`` of ``source``: exact mode runs a copy of the
        state until that frame's journey ends; its hops are the records it left."""
        from xdptui.sim.trace import trace_frame

        return trace_frame(self, source, flow)

    def frame(self, live: bool = False, zoom: QueueRef | None = None) -> Frame:
        """An immutable snapshot; CPU busy shares cover the time since the previous frame
        (one at the same instant: the interval before it).
        ``live``: a running display's frame -- in fast mode the state at the end of the last
        whole step (its time is the frame's ``t_ns``), which spares running the step's
        remainder on a copy every frame. ``zoom``: a queue whose slots the frame carries."""
        self._seq += 1
        st = self.state if live and not self.state.is_exact else self.view()
        t = st.committed if st is self.state and not st.is_exact else st.now
        span = t - self._last_frame_t
        polls = st.dp.cpu.polls - self._last_polls
        if span > 0:
            self._last_share = (st.dp.cpu.busy_ns - self._last_busy) / span
            self._last_frame_t = t
            self._last_busy = st.dp.cpu.busy_ns.copy()
        elif span < 0:  # time went back (a rewind): the next interval starts here
            self._last_frame_t = t
            self._last_busy = st.dp.cpu.busy_ns.copy()
        # A frame at the same instant as the last (polls stepped one by one at one
        # nanosecond) has no interval of its own: it shows the last one's shares, and the
        # next interval covers its polls' time.
        share = self._last_share
        stream = self._recent_events(st)
        frame = build_frame(st, self._seq, np.clip(share, 0.0, 1.0), polls, t, stream)
        if zoom is not None:
            from xdptui.sim.zoom import zoom_view

            frame = dataclasses.replace(frame, zoom=zoom_view(st, zoom))
        self._last_polls = st.dp.cpu.polls.copy()
        return frame

    def _recent_events(self, st: State) -> tuple[StreamEventView, ...]:
        """The newest records of the event stream as views, converting only new ones (a
        rewind replaces records: a view is kept only for the very record it was made from)."""
        records = st.stream.records
        recent = [records[i] for i in range(max(0, len(records) - STREAM_VIEWS), len(records))]
        cache = self._views
        first = next(
            (i for i, r in enumerate(recent) if cache.get(id(r), (None,))[0] is not r),
            len(recent),
        )
        fresh = stream_views(recent[first:])
        self._views = {id(r): cache[id(r)] for r in recent[:first]}
        self._views.update((id(r), (r, v)) for r, v in zip(recent[first:], fresh, strict=True))
        return tuple(self._views[id(r)][1] for r in recent)

    def report(self) -> dict[str, Any]:
        """The JSON report (v1) at ``now``."""
        from xdptui.sim.report import build_report

        view = self.view()
        return dict(build_report(self.frame(), view.world, view.commands))


class _BootRefused(Exception):
    """A topology command was refused during a boot that took no state copies."""


class _NoIO:
    def tx(self, *args: Any) -> int:
        raise AssertionError("no mode is running")

    def tx_many(self, *args: Any) -> int:
        raise AssertionError("no mode is running")

    def tx_bulks(self, *args: Any) -> None:
        raise AssertionError("no mode is running")

    def rx(self, *args: Any) -> int:
        raise AssertionError("no mode is running")

    def wake(self, *args: Any) -> None:
        raise AssertionError("no mode is running")
