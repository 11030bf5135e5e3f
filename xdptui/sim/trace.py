"""Follow one frame through the data path (per-packet identity only for traced packets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdptui.model.views import FlowInfo, TraceHop

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator


def list_flows(sim: Simulator, limit: int) -> tuple[FlowInfo, ...]:
    out: list[FlowInfo] = []
    for src in sim.world.sources:
        for i in range(min(limit, src.spec.flows)):
            out.append(FlowInfo(src.spec.name, i, f"{src.spec.name} flow {i}"))
    return tuple(out)


def trace_frame(sim: Simulator, source: str, flow: int) -> tuple[TraceHop, ...]:
    return (TraceHop(sim.now_ns, source, "wire", f"flow {flow}: tracing is being built"),)
