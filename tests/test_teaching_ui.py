"""What a room sees while a lecturer steps: the zoom on a ring and on a bulk queue, the event
list's filters and selection, a followed frame's packet detail, help and long output in a
pane that scrolls, every tab at 80x24, the lesson bar expanded and the presenter zoom.

The app runs on the real engine, paused and stepped with ``.``; assertions are on what the
panels render, checked against the engine's frame.
"""

from __future__ import annotations

import re

from conftest import TOPOLOGIES
from test_app import rendered
from test_dashboard import choose
from textual.containers import ScrollableContainer
from textual.pilot import Pilot

from xdptui.app import XdpApp, make_app
from xdptui.screens.output import OutputScreen

DEVMAP = str(TOPOLOGIES / "devmap_egress.yaml")
DUAL_PORT = str(TOPOLOGIES / "dual_port.yaml")
ROUTER = str(TOPOLOGIES / "bpf_router.yaml")
SMALL = (80, 24)
BIG = (140, 45)


async def step(pilot: Pilot[None], n: int) -> None:
    for _ in range(n):
        await pilot.press(".")
    await pilot.pause()


async def zoom_on(pilot: Pilot[None], label: str) -> None:
    """``z``, then the queue whose label starts with ``label``."""
    await pilot.press("z")
    await pilot.pause()
    from textual.widgets import OptionList

    options = pilot.app.screen.query_one(OptionList).options
    (key,) = [o.id for o in options if str(o.prompt).startswith(label)]
    assert key is not None
    await choose(pilot, key)


def zoom_text(app: XdpApp) -> str:
    return rendered(app.main_screen.zoom_panel)


# --- zoom on a queue ------------------------------------------------------------------------


async def test_the_zoom_on_an_rx_ring_marks_head_tail_and_each_descriptor_per_poll() -> None:
    app = make_app(DEVMAP)
    async with app.run_test(size=BIG) as pilot:
        await step(pilot, 6)
        await zoom_on(pilot, "eth0 RX q0")
        assert app.main_screen.active_tab == "zoom"
        for _ in range(3):
            assert app.frame is not None
            q = app.frame.device("eth0").queues[0]
            text = zoom_text(app)
            assert f"{q.occupancy}/{q.ring_size} in use" in text
            grid = "\n".join(line for line in text.splitlines() if re.match(r"\s+\d+ [·■HT]", line))
            # every descriptor in the ring is one cell (H marks the head's, T the free tail)
            assert grid.count("■") + grid.count("H") == q.occupancy
            assert grid.count("H") == 1 and grid.count("T") == 1
            assert f"XDP_REDIRECT→eth1 {q.occupancy}" in text
            await step(pilot, 1)


async def test_the_zoom_on_a_bulk_queue_shows_the_bulks_of_its_last_poll() -> None:
    app = make_app(DEVMAP)
    async with app.run_test(size=BIG) as pilot:
        await step(pilot, 6)
        await zoom_on(pilot, "bulk queue cpu0 eth0→eth1")
        text = zoom_text(app)
        bulks = [int(n) for n in re.findall(r"^bulk \d+ \[■+·*\]\s+(\d+)", text, re.MULTILINE)]
        poll = re.search(r"its last poll, at .*: cpu0 polled eth0 q0: (\d+) frames", text)
        assert poll is not None and bulks
        # a 64-frame poll: three bulks sent full at the 17th frame, the rest at the poll's end
        assert sum(bulks) == int(poll.group(1))
        assert all(n <= 16 for n in bulks)
        assert text.count("17th frame: bq_xmit_all") == len(bulks) - 1
        assert "poll end: xdp_do_flush" in text
        assert app.frame is not None
        (bq,) = app.frame.bulk_queues
        assert re.search(rf"flushes \(bq_xmit_all\)\s+{bq.flushes}\b", text)


async def test_the_zoom_on_an_af_xdp_socket_shows_its_rings_and_its_umem_by_owner() -> None:
    """An AF_XDP socket: its four rings with their indices and the UMEM's chunks by owner,
    the numbers the engine's frame holds; entries = producer - consumer on every ring."""
    app = make_app(str(TOPOLOGIES / "af_xdp_fill.yaml"))
    async with app.run_test(size=BIG) as pilot:
        await step(pilot, 12)
        await zoom_on(pilot, "xsk0 AF_XDP socket")
        assert app.main_screen.active_tab == "zoom"
        assert app.frame is not None
        (x,) = app.frame.xsks
        text = zoom_text(app)
        assert "xsk0: AF_XDP socket on eth0 q0" in text
        for r in x.rings:
            assert r.entries == r.producer - r.consumer
            assert f"{r.entries}/{r.size}  prod {r.producer} cons {r.consumer}" in text
        owners = dict(x.owners)
        assert sum(owners.values()) == x.frames
        assert f"F fill ring {owners['fill']}" in text and f"R RX ring {owners['rx']}" in text
        assert re.search(rf"rx_packets\s+{x.counter('rx_packets'):,}", text)


# --- the event list -------------------------------------------------------------------------


async def test_the_event_list_filters_by_kind_and_marks_the_selected_events_queue() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=BIG) as pilot:
        await step(pilot, 4)
        panel = app.main_screen.event_list  # beside the tabs at 140 columns
        panel.focus()
        await pilot.press("k")  # polls only
        await pilot.pause()
        lines = [ln for ln in rendered(panel).splitlines() if re.match(r"\s+\d[\d.]*[nµm]?s ", ln)]
        assert lines and all("polled" in ln for ln in lines)
        await pilot.press("up")  # the newest poll
        await pilot.pause()
        mark = app.stage.highlight
        assert mark is not None and mark.dev in ("eth0", "eth1") and mark.cpu is not None
        await pilot.press("3")
        await pilot.pause()
        view = app.main_screen.rings_panel.view
        assert view is not None
        (marked,) = [row.label for row in view.rows if row.marked and " q" in row.label]
        assert marked == f"{mark.dev} q{mark.queue} cpu{mark.cpu}"
        cpus = app.main_screen.cpu_map.view
        assert cpus is not None
        assert [row.cpu for row in cpus.rows if row.marked] == [mark.cpu]


async def test_right_bracket_runs_to_exactly_the_next_flush() -> None:
    app = make_app(DEVMAP)
    async with app.run_test(size=BIG) as pilot:
        await step(pilot, 1)
        panel = app.main_screen.event_list
        panel.focus()
        await pilot.press("k", "k")  # flushes
        await pilot.pause()
        assert panel.kind == "flush"
        assert app.frame is not None
        before = sum(bq.flushes for bq in app.frame.bulk_queues)
        await pilot.press("right_square_bracket")
        await pilot.pause()
        after = sum(bq.flushes for bq in app.frame.bulk_queues)
        # the poll that flushed: up to four bulks of a 64-frame poll, at least one
        assert 1 <= after - before <= 4
        assert app.paused


# --- packet detail --------------------------------------------------------------------------


async def test_the_packet_detail_shows_a_real_programs_rewrite() -> None:
    """router_stats.o decrements the TTL and rewrites the MACs: the headers before and after
    it, and the rewritten bytes marked, as the program's run left them."""
    app = make_app(ROUTER)
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("f")
        await pilot.pause()
        await choose(pilot, "pktgen:0")
        text = rendered(app.main_screen.packet_panel)
        assert "router_stats.o: XDP_REDIRECT→eth1" in text
        assert "before the program" in text and "after the program" in text
        assert re.search(r"ttl\s+64", text) and re.search(r"ttl\s+63", text)
        assert re.search(r"src\s+02:00:00:00:00:fe", text)  # the router's MAC
        app.main_screen.packet_panel.scroll_end(animate=False)
        await pilot.pause()
        assert "bytes after the program (rewritten marked)" in rendered(
            app.main_screen.packet_panel
        )


# --- help, long output, completion ----------------------------------------------------------


async def test_help_opens_in_a_pane_that_scrolls_and_help_command_in_the_log() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press(":", *"help", "enter")
        await pilot.pause()
        assert isinstance(app.screen, OutputScreen)
        scroll = app.screen.query_one("#output-scroll", ScrollableContainer)
        assert scroll.max_scroll_y > 0  # longer than the screen: it scrolls
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, OutputScreen)
        await pilot.press(":", *"help ethtool", "enter")
        await pilot.pause()
        # Three lines, but one (66 columns) is wider than an 80-column log: the pane shows it.
        assert isinstance(app.screen, OutputScreen)
        await pilot.press("escape")
        await pilot.resize_terminal(140, 45)
        await pilot.pause()
        await pilot.press(":", *"help ethtool", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, OutputScreen)  # three lines the log can hold
        assert app.frame is not None
        cmd = [e for e in app.frame.events if e.cmd == "help ethtool"][-1]
        assert cmd.ok and "ethtool -S DEV" in cmd.reply


# --- 80x24 ----------------------------------------------------------------------------------


async def test_every_tab_is_usable_at_80x24() -> None:
    """A compact layout: panels lose their side borders (a title rule instead), every tab's
    panels get the full width and rows to show something, the footer keeps the time keys."""
    app = make_app(DEVMAP)
    async with app.run_test(size=SMALL) as pilot:
        await step(pilot, 3)
        await zoom_on(pilot, "eth0 RX q0")
        screen = app.main_screen
        assert screen.has_class("-compact")
        for key in "1234567":
            await pilot.press(key)
            await pilot.pause()
            panels = screen.panels_of(screen.active_tab)
            assert panels, key
            for panel in panels:
                assert panel.size.width >= 78, (key, panel)
                assert panel.size.height >= 3, (key, panel)
                assert panel.styles.border_left[0] in ("", "none"), (key, panel)
                assert rendered(panel).strip(), (key, panel)
        footer = rendered(screen.key_bar)
        for label in ("Run", "Step", "Back", "Next", "t=0", "? all keys"):
            assert label in footer


async def test_e_shows_the_whole_lesson_step_and_again_one_line() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        bar = app.main_screen.lesson_bar
        assert bar.size.height == 1 and "e: read all" in rendered(bar)
        await pilot.press("e")
        await pilot.pause()
        assert app.frame is not None and app.topology is not None
        whole = " ".join(app.topology.lessons[0].steps[0].text.split())
        shown = " ".join(rendered(bar).split())
        assert whole in shown
        await pilot.press("e")
        await pilot.pause()
        assert bar.size.height == 1


async def test_m_gives_one_panel_the_whole_screen_for_the_room() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SMALL) as pilot:
        await step(pilot, 2)
        await pilot.press("3")
        await pilot.pause()
        rings = app.main_screen.rings_panel
        small = rings.size.height
        await pilot.press("m")
        await pilot.pause()
        assert app.main_screen.maximized is rings
        assert rings.size.width == SMALL[0] and rings.size.height > small
        assert "PAUSED" in rendered(app.main_screen.sim_header)  # the header stays
        await pilot.press(".")  # time still runs underneath
        await pilot.pause()
        assert app.main_screen.maximized is rings
        await pilot.press("m")
        await pilot.pause()
        assert app.main_screen.maximized is None and rings.size.height == small


def test_cpu_busy_covers_the_rates_window_not_the_last_few_microseconds():
    """At 100 us/s a frame comes every ~3 us of simulated time; a poll every ~50 us lasting
    a few microseconds. The CPU bar is over the same window as every rate on screen: the
    NAPI time the CPU spent in it over its length -- not the last 3 us, which a poll mostly
    misses (0 %) and sometimes overfills (100 %)."""
    from xdptui.sim.engine import Simulator
    from xdptui.topology_io import load_topology
    from xdptui.widgets.project import _cpus
    from xdptui.widgets.rates import RatesView

    sim = Simulator(load_topology(TOPOLOGIES / "line_rate.yaml"), exact=True)
    sim.run_until(1_000_000)
    base = sim.frame()
    raw = []
    for t in range(1_003_000, 2_000_001, 3_000):
        sim.run_until(t)
        frame = sim.frame()
        raw.append(frame.cpus[0].busy)
    row = _cpus(frame, None, RatesView(base, frame)).rows[0]
    spent = frame.cpus[0].busy_ns - base.cpus[0].busy_ns
    assert row.busy == spent / (frame.t_ns - base.t_ns)
    assert 0.05 < row.busy < 0.5  # xdp_drop of ~7 Mpps on a queue: some of the CPU
    assert sum(r == 0.0 for r in raw) > len(raw) // 2  # what the last 3 us alone would say
