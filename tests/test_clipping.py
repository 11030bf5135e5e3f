"""Nothing a room needs is cut, at 120x40 and 80x24, on every shipped topology: every line of
every panel on every tab fits the panel's width (the CPUs panel's XDP TX column, the rings' drop
counts, the devices' counters, the Drops sections), the taps panel shows all its lines (at
120x40: at 80x24 the whole tab has about 12 rows and the panels scroll), the
Drops tab's "why" and "fix" are whole, a followed frame's hop lines fit, the header keeps the
seed and the key bar ends with ``? all keys``.

The app runs on the real engine, paused and stepped with ``.``; what is checked is what the
panels draw at that size (a line panel wider than its content region scrolls sideways, i.e.
the room does not see its end).
"""

from __future__ import annotations

import pytest
from conftest import TOPOLOGIES
from test_app import open_tab, rendered
from test_dashboard import choose
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import OptionList

from xdptui.app import XdpApp, make_app
from xdptui.topology_io import load_topology
from xdptui.widgets.header import SimHeader
from xdptui.widgets.key_bar import KeyBar
from xdptui.widgets.lines import LinePanel

SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))
SIZES = [(120, 40), (80, 24)]
TABS = ("paths", "devices", "rings", "drops", "bond")


def shown(widget: Widget) -> bool:
    return all(node.display for node in widget.ancestors_with_self) and widget.size.width > 0


def too_wide(app: XdpApp, tab: str) -> list[str]:
    """The panels of ``tab`` whose widest line is wider than the panel (cut at its edge)."""
    return [
        f"{tab}: {type(panel).__name__} draws {panel.virtual_size.width} cells "
        f"in {panel.size.width}"
        for panel in app.main_screen.panels_of(tab)
        if isinstance(panel, LinePanel)
        and shown(panel)
        and panel.virtual_size.width > panel.size.width
    ]


async def polls(pilot: Pilot[None], n: int) -> None:
    for _ in range(n):
        await pilot.press(".")
    await pilot.pause()


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
async def test_nothing_important_is_cut(path) -> None:  # type: ignore[no-untyped-def]
    """One app per topology, checked at each size in turn (the terminal resized between)."""
    seed = load_topology(path).seed
    app = make_app(str(path), paused=True)
    cut: list[str] = []
    async with app.run_test(size=SIZES[0]) as pilot:
        for size in SIZES:
            await pilot.resize_terminal(*size)
            await polls(pilot, 8)
            cut += [f"{size[0]}x{size[1]} {c}" for c in await cut_at(app, pilot, size, seed)]
    assert cut == []


async def cut_at(app: XdpApp, pilot: Pilot[None], size: tuple[int, int], seed: int) -> list[str]:
    assert f"seed {seed}" in rendered(app.screen.query_one(SimHeader))
    assert rendered(app.screen.query_one(KeyBar)).rstrip().endswith("? all keys")
    cut: list[str] = []
    for tab in TABS:
        await open_tab(pilot, tab)
        cut += too_wide(app, tab)
        if tab == "rings" and size == (120, 40):  # at 80x24 the tab has ~12 rows: it scrolls
            taps = app.main_screen.taps_panel
            if shown(taps) and taps.virtual_size.height > taps.size.height:
                cut.append(
                    f"rings: the taps panel has {taps.virtual_size.height} lines in "
                    f"{taps.size.height}"
                )
        if tab == "drops":
            text = rendered(app.main_screen.drops_panel)
            if "▶ " in text and "  fix " not in text:
                cut.append("drops: the selected row's why/fix is cut")
    # a followed frame: its hop lines on the Paths tab
    await pilot.press("f")
    await pilot.pause()
    first = app.screen.query_one(OptionList).options[0].id
    assert first is not None
    await choose(pilot, first)
    await open_tab(pilot, "paths")
    cut += too_wide(app, "paths")
    return cut
