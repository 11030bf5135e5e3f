"""Shared helpers: build a topology from YAML text and run it headless."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from xdptui.commands import validate
from xdptui.model.topology import Topology
from xdptui.sim.engine import Simulator
from xdptui.topology_io import loads_topology

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = ROOT / "topologies"
PROGRAMS = Path(__file__).resolve().parent / "programs"


def topo(text: str, filename: str | None = None) -> Topology:
    """A topology from (dedented) YAML text; relative paths resolve next to this file."""
    return loads_topology(
        textwrap.dedent(text), filename or str(PROGRAMS / "inline.yaml"), validate_command=validate
    )


def sim_of(text: str, **kwargs: object) -> Simulator:
    return Simulator(topo(text), **kwargs)  # type: ignore[arg-type]


def counters(sim: Simulator, dev: str) -> dict[str, int]:
    return dict(sim.world.devices[dev].counters)


@pytest.fixture
def make_sim():  # type: ignore[no-untyped-def]
    return sim_of
