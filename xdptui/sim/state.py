"""What evolves in a simulation, as one value: the world, the data path, both modes' state,
the timers and the logs. A checkpoint is a copy of it; a rewind restores one. What only grows
with history (the logs, the inputs) is shared by the copies, so a copy costs the same however
long the simulation has run."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdptui.model.views import EventView
from xdptui.sim.clock import Timers
from xdptui.sim.datapath import Datapath
from xdptui.sim.events import EventStream
from xdptui.sim.exact import Exact
from xdptui.sim.fast import Fast
from xdptui.sim.history import Chain, Inputs
from xdptui.sim.world import World

LOG_MAX = 2_000  # command and system lines kept for the screen's log


@dataclass
class State:
    """Everything that evolves: copied whole for a checkpoint."""

    world: World
    dp: Datapath
    exact: Exact
    fast: Fast
    timers: Timers
    is_exact: bool
    now: int = 0
    committed: int = 0  # fast mode has stepped the data path up to here
    stream: EventStream = field(default_factory=EventStream)
    log: Chain[EventView] = field(default_factory=lambda: Chain(LOG_MAX))  # newest LOG_MAX
    commands: Chain[EventView] = field(default_factory=Chain)  # for the report (never dropped)
    inputs: Inputs = field(default_factory=Inputs)  # the simulator's (every copy shares
    # it; a checkpoint records how many were applied)
    lesson: tuple[int, int, int] | None = None  # the lesson step on: lesson, step, when it began


@dataclass
class Checkpoint:
    """The state at ``t`` (a copy nobody changes: a restore copies it again). The boot's is
    built again only when first needed (``build``: the same topology booted anew, which is
    deterministic), not copied at every start: a copy is most of a large topology's build."""

    t: int
    inputs: int  # inputs[:inputs] were applied in this state
    copied: State | None
    stream_seq: int  # the event stream had reached this record
    build: Callable[[], State] | None = None
    polls: int = 0  # exact mode's polls by then (read without building the state)
    is_exact: bool = False

    def __post_init__(self) -> None:
        if self.copied is not None:
            self.polls, self.is_exact = self.copied.exact.polls, self.copied.is_exact

    @property
    def state(self) -> State:
        if self.copied is None:
            assert self.build is not None
            self.copied, self.build = self.build(), None
        return self.copied


def copy_state(st: State, stream: EventStream | None = None, inputs: Inputs | None = None) -> State:
    """A deep copy sharing what never changes (the topology, flow tables, entries) and what
    only grows (the logs' sealed chunks, the inputs). The event stream is append-only: a copy
    shares it (``stream`` None) or starts a new one; ``inputs``: another simulator's state
    taken over (a boot built again) gets this one's."""
    memo: dict[int, Any] = {id(st.world.topology): st.world.topology}
    memo[id(st.stream)] = st.stream if stream is None else stream
    memo[id(st.inputs)] = st.inputs if inputs is None else inputs
    for dev in st.world.devices.values():  # RSS's queue per entry: replaced, never changed
        q = getattr(dev, "queue_of_entry", None)
        if q is not None:
            memo[id(q)] = q
    return copy.deepcopy(st, memo)
