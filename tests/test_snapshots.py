"""Snapshot tests of the main screens, built by the CLI's factory (``make_app``) paused, at a fixed
size and seed, stepped with ``.`` so every frame is the same on every run.

Regenerate after a deliberate change with ``pytest tests/test_snapshots.py --snapshot-update``
and review the SVGs (an engine change that moves a counter changes them too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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
            app.stage.refresh()
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


# --- teaching views at the two sizes a room meets: a laptop's 80x24 and a projector's 140x45 --

DEVMAP = str(TOPOLOGIES / "devmap_egress.yaml")
ROUTER = str(TOPOLOGIES / "bpf_router.yaml")
SIZES = pytest.mark.parametrize("size", [(80, 24), (140, 45)], ids=["80x24", "140x45"])


async def _zoom_on(pilot: Pilot[None], label: str) -> None:
    await pilot.press(".", ".", ".", ".", ".", ".", "z")
    await pilot.pause()
    options = pilot.app.screen.query_one(OptionList)
    (index,) = [i for i, o in enumerate(options.options) if str(o.prompt).startswith(label)]
    options.highlighted = index
    await pilot.press("enter")
    await pilot.pause()


@SIZES
def test_zoom_on_a_ring(snap_compare: Any, size: tuple[int, int]) -> None:
    async def zoom(pilot: Pilot[None]) -> None:
        await _zoom_on(pilot, "eth0 RX q0")

    assert snap_compare(make_app(DEVMAP, paused=True), run_before=zoom, terminal_size=size)


@SIZES
def test_zoom_on_a_bulk_queue(snap_compare: Any, size: tuple[int, int]) -> None:
    async def zoom(pilot: Pilot[None]) -> None:
        await _zoom_on(pilot, "bulk queue cpu0 eth0→eth1")

    assert snap_compare(make_app(DEVMAP, paused=True), run_before=zoom, terminal_size=size)


@SIZES
def test_event_list_filtered_with_an_event_selected(
    snap_compare: Any, size: tuple[int, int]
) -> None:
    """Flushes only, the newest selected: its CPU and queues marked on Rings & CPUs."""

    async def select(pilot: Pilot[None]) -> None:
        await pilot.press(".", ".", ".", ".", "3")
        await pilot.pause()
        app = pilot.app
        assert isinstance(app, XdpApp)
        screen = app.main_screen
        panel = screen.event_list if screen.event_list.display else screen.event_strip
        panel.focus()
        await pilot.press("k", "k", "up")
        await pilot.pause()

    assert snap_compare(make_app(DEVMAP, paused=True), run_before=select, terminal_size=size)


XDP2 = """\
name: a MAC-swapping reflector
seed: 3
cpus: 2
devices:
  eth0: {type: nic, driver: ice, speed: 25G, queues: 2, xdp: xdp2}
traffic:
  - {name: pktgen, to: eth0, rate: 1Mpps, size: 64, proto: udp, dst_port: 53, flows: 4}
"""


@SIZES
def test_packet_detail_of_a_followed_frame(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path
) -> None:
    """xdp2 swaps the MACs (samples/bpf/xdp2_kern.c): headers before and after, the bytes."""
    path = tmp_path / "xdp2.yaml"
    path.write_text(XDP2)

    async def follow(pilot: Pilot[None]) -> None:
        await pilot.press(".", "f")
        await pilot.pause()
        await pilot.press("enter")  # the first flow: pktgen #0
        await pilot.pause()
        app = pilot.app
        assert isinstance(app, XdpApp)
        app.main_screen.packet_panel.focus()
        await pilot.pause()

    app = make_app(str(path), paused=True)
    assert snap_compare(app, run_before=follow, terminal_size=size)
