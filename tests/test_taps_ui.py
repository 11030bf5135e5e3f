"""The UI for taps, traffic sources and the reader: the Taps panel (fast/generic split with the
slow-path reasons, verdicts per path, tap rings toward userspace), the traffic editor's live
defaults, GSO and reader fields, and the Paths view's "lost: link down" at the wire hop.
Clock paused, stepped by hand; assertions on what the widgets render."""

from __future__ import annotations

import re

from conftest import TOPOLOGIES
from test_app import open_tab, rendered
from textual.widgets import Input, OptionList

from xdptui.app import XdpApp, make_app
from xdptui.screens.dialogs import TrafficScreen
from xdptui.widgets.events import EventLog

SIZE = (160, 60)
TUN_VM = str(TOPOLOGIES / "tun_vm.yaml")


def run_for(app: XdpApp, ns: int, steps: int = 2) -> None:
    """Advance the paused simulation in ``steps`` slices, taking a frame after each."""
    for _ in range(steps):
        app.sim.advance(ns // steps)
        app.stage.refresh()


async def test_the_taps_panel_shows_the_path_split_reasons_verdicts_and_rings() -> None:
    app = make_app(TUN_VM, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        run_for(app, 3_000_000)
        await open_tab(pilot, "rings")
        await pilot.press(".")
        await pilot.pause()
        taps = rendered(app.main_screen.taps_panel)
        assert "tap0 · tap · 2 queues · writer write · reader 4Mpps · xdp1 native" in taps
        # 10 % GSO writes: about 9 in 10 on the fast path (the window is one poll long)
        assert re.search(r"fast 1\.8\d*Mpps 9\d% · generic (1\d\d|200)Kpps \d+%", taps), taps
        assert re.search(r"generic   gso (1\d\d|200)Kpps", taps), taps
        assert "fast: XDP_DROP" in taps and "generic: XDP_DROP" in taps
        assert "tap ring q0→user" in taps and "reader 2Mpps/q" in taps
        # tap1's reader (1 Mpps) can't keep up with 3 Mpps: its ring stays (nearly) full
        assert re.search(r"tap ring q0→user \[#+\.?\] (4[5-9]\d|500)/500", taps), taps
        view = app.main_screen.rings_panel.view
        assert view is not None
        labels = [row.label for row in view.rows]
        assert "tap1 tap q0→user 1Mpps" in labels
        assert "tap0 q0 cpu0" not in labels  # a tap's write side is no descriptor ring


async def test_pktgen_gso_moves_the_split() -> None:
    app = make_app(TUN_VM, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        run_for(app, 2_000_000)
        app.commands.submit("pktgen tap0 gso 0.5")
        run_for(app, 2_000_000)
        await open_tab(pilot, "rings")
        taps = rendered(app.main_screen.taps_panel)
        assert "fast 1Mpps 50%" in taps and "generic 1Mpps 50%" in taps


async def test_the_taps_panel_is_hidden_without_taps() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "rings")
        assert not app.main_screen.taps_panel.display
        assert app.main_screen.taps_panel not in app.main_screen.panels_of("rings")


async def test_the_traffic_editor_takes_the_live_source_and_sets_gso() -> None:
    app = make_app(TUN_VM, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        app.commands.submit("pktgen tap0 rate 3Mpps")
        await pilot.press("t")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TrafficScreen)
        values = [screen.query_one(f"#{n}", Input) for n in ("rate", "size", "flows", "gso")]
        assert [v.value for v in values] == ["3Mpps", "", "40", "0.1"]  # size: a mix, kept
        assert not values[3].disabled
        gso = values[3]
        gso.focus()
        await pilot.press(*["backspace"] * len(gso.value), *"0.5", "enter")
        await pilot.pause()
        assert "✓ $ pktgen tap0 gso 0.5" in rendered(app.main_screen.query_one(EventLog))
        assert app.sim.frame().sources[0].gso == 0.5


async def test_the_traffic_editor_slows_a_taps_reader_and_its_ring_overflows() -> None:
    app = make_app(TUN_VM, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        index = next(i for i, o in enumerate(options.options) if o.id == "tap0")
        options.highlighted = index
        await pilot.pause()
        reader = app.screen.query_one("#reader", Input)
        assert reader.value == "4Mpps" and not reader.disabled
        index = next(i for i, o in enumerate(options.options) if o.id == "tap1")
        options.highlighted = index
        await pilot.pause()
        assert app.screen.query_one("#rate", Input).disabled  # no source writes into tap1
        reader.focus()
        await pilot.press(*["backspace"] * len(reader.value), *"200Kpps", "enter")
        await pilot.pause()
        assert "✓ $ reader tap1 rate 200Kpps" in rendered(app.main_screen.query_one(EventLog))
        run_for(app, 3_000_000)
        await open_tab(pilot, "rings")
        tap1 = rendered(app.main_screen.taps_panel).split("tap1 ·")[1]
        assert "reader 200Kpps" in tap1 and "read 200Kpps" in tap1
        assert re.search(r" (4[89]\d|500)/500", tap1), tap1


async def test_the_paths_view_counts_frames_lost_while_the_link_was_down() -> None:
    app = make_app(str(TOPOLOGIES / "bond_failover.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        run_for(app, 1_000_000)
        app.commands.submit("ip link set dev eth1 down")
        run_for(app, 2_000_000)
        await open_tab(pilot, "paths")
        text = rendered(app.main_screen.paths_panel)
        assert "lost: link down" in text
