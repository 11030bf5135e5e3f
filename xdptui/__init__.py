"""xdptui: a live, deterministic simulation of the Linux XDP data path in your terminal.

``xdptui.Simulator`` is the headless engine (``xdptui.sim.engine.Simulator``), imported on
first use so that the command line starts without loading it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator

__all__ = ["Simulator"]


def __getattr__(name: str) -> Any:
    if name == "Simulator":
        from xdptui.sim.engine import Simulator

        return Simulator
    raise AttributeError(f"module 'xdptui' has no attribute {name!r}")
