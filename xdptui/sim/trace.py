"""Follow one frame: the exact-mode record of its journey, never a second implementation.

``trace_frame`` copies the simulator's state, switches the copy to exact mode, marks the next
frame of the chosen flow and runs the copy until that frame's journey ends -- dropped, up the
stack, onto the wire or to a tap's reader. The data path records a hop wherever it decides
something about the marked frame (``Datapath.hop``), so a trace is exactly what the counters
count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from xdptui.model.views import FlowInfo, ProgramRunView, TraceHop
from xdptui.sim.exact import ident

if TYPE_CHECKING:
    from xdptui.sim.state import State
    from xdptui.sim.world import World

TRACE_HORIZON_NS = 200_000_000  # give up on a frame that has not finished after this long


class Forkable(Protocol):
    """What tracing needs of a simulator: a copy to run ahead (``Simulator``)."""

    state: State

    @property
    def now_ns(self) -> int: ...
    @property
    def world(self) -> World: ...
    @property
    def exact(self) -> bool: ...
    @exact.setter
    def exact(self, value: bool) -> None: ...
    def fork(self) -> Forkable: ...
    def run_until(self, t_ns: int) -> None: ...


def _ip(v: int) -> str:
    return ".".join(str((v >> s) & 255) for s in (24, 16, 8, 0))


def list_flows(world: World, limit: int) -> tuple[FlowInfo, ...]:
    """The first ``limit`` flows of every source, labelled with their 5-tuple."""
    out: list[FlowInfo] = []
    e = world.entries
    for src in world.sources:
        for i in range(min(limit, src.spec.flows)):
            j = src.offset + i
            label = (
                f"{src.spec.name} #{i}: {src.spec.proto} {_ip(int(e.src_ip[j]))}:"
                f"{int(e.src_port[j])} -> {_ip(int(e.dst_ip[j]))}:{int(e.dst_port[j])}"
            )
            out.append(FlowInfo(src.spec.name, i, label))
    return tuple(out)


def trace_frame(sim: Forkable, source: str, flow: int) -> tuple[TraceHop, ...]:
    """The hops of the next frame of ``flow`` of ``source``, from now on."""
    now = sim.now_ns
    src = next((s for s in sim.world.sources if s.spec.name == source), None)
    if src is None:
        return (TraceHop(now, source, "drop", "no such traffic source"),)
    flows = src.spec.flows
    if not 0 <= flow < flows:
        return (TraceHop(now, source, "drop", f"flow must be 0..{flows - 1}"),)
    fork = sim.fork()
    fork.exact = True
    st = fork.state
    src = st.world.sources[src.index]
    n = src.emitted + (flow - src.emitted) % flows
    if src.stopped or (src.spec.count is not None and n >= src.spec.count) or src.milli <= 0:
        return (TraceHop(now, source, "drop", f"{source} sends no more frames of flow {flow}"),)
    t_arr = int(src.arrival_ns(n, n + 1)[0])
    dp = st.dp
    dp.watch = int(ident(src.index, np.array([n], np.int64))[0])
    size = int(st.world.entries.size[src.offset + n % len(src.table)])
    where = f"sent by the local stack out of {src.device}" if src.local else "from the wire"
    if src.writer is not None:  # an AF_XDP socket's writer (xsk.XskWriter)
        where = (
            f"written to {src.spec.from_}'s TX ring, sent out of {src.device} by sendto "
            f"(__xsk_generic_xmit)"
        )
    dp.hop(t_arr, src.device, "wire", f"{source} frame {n} (flow {flow}, {size} bytes), {where}")
    limit = t_arr + TRACE_HORIZON_NS
    while not dp.watch_done:
        nxt = min(st.exact.next_time(), st.timers.peek(), limit)
        fork.run_until(max(nxt, fork.now_ns + 1))
        if fork.now_ns >= limit and not dp.watch_done:
            dp.hop(limit, source, "drop", "still in flight after 200 ms", end=True)
    return tuple(
        TraceHop(t, dev, stage, detail, prog if isinstance(prog, ProgramRunView) else None)
        for t, dev, stage, detail, prog in dp.hops
    )
