"""Snapshot tests of the main screens, built by the CLI's factory (``make_app``) paused, at a fixed
size and seed, stepped with ``.`` so every frame is the same on every run.

Regenerate after a deliberate change with ``pytest tests/test_snapshots.py --snapshot-update``
and review the SVGs (an engine change that moves a counter changes them too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_dashboard import BENCH
from textual.pilot import Pilot
from textual.widgets import OptionList

from xdptui.app import XdpApp, make_app

SIZE = (140, 45)
TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
DUAL_PORT = str(TOPOLOGIES / "dual_port.yaml")
STEPS = [".", ".", "."]


def test_paths_tab(snap_compare: Any) -> None:
    assert snap_compare(make_app(DUAL_PORT, paused=True), press=STEPS, terminal_size=SIZE)


def test_devices_and_counters_tab(snap_compare: Any) -> None:
    app = make_app(DUAL_PORT, paused=True)
    assert snap_compare(app, press=[*STEPS, "2"], terminal_size=SIZE)


def test_rings_and_cpus_tab(snap_compare: Any) -> None:
    app = make_app(DUAL_PORT, paused=True)
    assert snap_compare(app, press=[*STEPS, "3"], terminal_size=SIZE)


def test_drops_tab_after_the_peer_loses_its_program(snap_compare: Any) -> None:
    """veth_pair.yaml removes veth0's program at 3 ms: veth1's XDP_TX then fails."""

    async def past_the_timeline(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, XdpApp)
        for dt in (4_000_000, 1_000_000):  # fixed chunks: the same frames every run
            app.sim.advance(dt)
            app.refresh_frame()
        await pilot.press("4")
        await pilot.pause()

    app = make_app(str(TOPOLOGIES / "veth_pair.yaml"), paused=True)
    assert snap_compare(app, run_before=past_the_timeline, terminal_size=SIZE)


def test_bond_mode_refusal_and_legal_sequence(snap_compare: Any) -> None:
    async def refuse(pilot: Pilot[None]) -> None:
        await pilot.press(*STEPS, "5", "b")
        await pilot.pause()
        screen = pilot.app.screen
        screen.query_one("#modes", OptionList).highlighted = 5  # balance-tlb
        # Enter on the policy applies (a clicked button would flash its pressed look for a
        # wall-clock fifth of a second, which a screenshot may or may not catch).
        screen.query_one("#policies", OptionList).focus()
        await pilot.press("enter")
        await pilot.pause()

    app = make_app(DUAL_PORT, paused=True)
    assert snap_compare(app, run_before=refuse, terminal_size=SIZE)


def test_bond_tab_during_the_legal_sequence(snap_compare: Any) -> None:
    async def half_way(pilot: Pilot[None]) -> None:
        await pilot.press(*STEPS, "b")
        await pilot.pause()
        pilot.app.screen.query_one("#modes", OptionList).highlighted = 0  # balance-rr
        await pilot.click("#apply")
        await pilot.pause()
        await pilot.click("#run")
        await pilot.pause()
        await pilot.press(".", ".", ".")

    app = make_app(DUAL_PORT, paused=True)
    assert snap_compare(app, run_before=half_way, terminal_size=SIZE)


def test_lesson_tab(snap_compare: Any, tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(BENCH)
    app = make_app(str(path), paused=True)
    assert snap_compare(app, press=[".", "n", "r", "6"], terminal_size=SIZE)
