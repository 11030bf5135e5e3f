"""The dashboard's actions, driven with Pilot with the clock paused and stepped.

Every test starts the app paused, so the simulation only moves when the test presses ``.``;
assertions are on what the panels, dialogs and the event log draw.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fake_sim import FakeClock, FakeSim
from test_app import TAB_KEYS, open_tab, rendered
from textual.pilot import Pilot
from textual.widgets import Button, Input, OptionList, Static

from xdptui.app import APP_COMMANDS, XdpApp, make_app
from xdptui.screens.dialogs import (
    BondModeScreen,
    HelpScreen,
    PickScreen,
    ProgramScreen,
    TrafficScreen,
)
from xdptui.widgets.bond import BondPanel
from xdptui.widgets.drops import DropsPanel
from xdptui.widgets.events import EventLog
from xdptui.widgets.lesson import LessonBar, LessonPanel
from xdptui.widgets.paths import PathsPanel

SIZE = (120, 40)
ROOT = Path(__file__).resolve().parent.parent

BENCH = """\
name: small test bench
description: two ice ports, one without a program, and two lessons
seed: 3
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2, ring: 256}
  eth1: {type: nic, driver: ice, queues: 2, xdp: xdp_pass}
traffic:
  - {name: gen0, to: eth0, rate: 1Mpps, flows: 4, src_ip: 198.18.0.1-198.18.0.4}
lessons:
  - title: Links
    steps:
      - text: Watch eth0 receive.
      - text: Take eth1 down and see its box turn red.
        commands: ["ip link set dev eth1 down"]
  - title: Programs
    steps:
      - text: Drop everything on eth0.
        commands: ["ip link set dev eth0 xdp obj xdp_drop"]
"""


@pytest.fixture
def bench(tmp_path: Path) -> str:
    path = tmp_path / "bench.yaml"
    path.write_text(textwrap.dedent(BENCH))
    return str(path)


def log(app: XdpApp) -> str:
    return rendered(app.main_screen.query_one(EventLog))


def paths(app: XdpApp) -> str:
    return rendered(app.main_screen.paths_panel)


async def choose(pilot: Pilot[None], option_id: str) -> None:
    """Highlight ``option_id`` in the dialog's option list and press enter."""
    options = pilot.app.screen.query_one(OptionList)
    index = next(i for i, opt in enumerate(options.options) if opt.id == option_id)
    options.focus()
    options.highlighted = index
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()


# --- programs -------------------------------------------------------------------------------


async def test_attach_offers_the_device_without_a_program_then_every_builtin(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ProgramScreen)
        listed = [str(opt.prompt) for opt in app.screen.query_one(OptionList).options]
        assert any(p.startswith("xdp_drop") and "drop every frame" in p for p in listed)
        assert any(p.startswith("redirect_map") for p in listed)
        await choose(pilot, "xdp_drop")
        assert "✓ $ ip link set dev eth0 xdp obj xdp_drop" in log(app)
        assert "xdp xdp_drop native" in paths(app)


async def test_attach_fills_in_a_programs_required_parameters(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        options.highlighted = next(i for i, o in enumerate(options.options) if o.id == "redirect")
        await pilot.pause()
        params = app.screen.query_one("#params", Input)
        assert params.value == "dev="
        params.value = "dev=eth1"
        params.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "✓ $ ip link set dev eth0 xdp obj redirect param dev=eth1" in log(app)


async def test_swap_replaces_the_program_in_place(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ProgramScreen)
        assert "eth1's program (xdp_pass native)" in str(app.screen.query_one("Label").content)
        await choose(pilot, "xdp_tx")
        assert "✓ $ ip -force link set dev eth1 xdp obj xdp_tx" in log(app)
        assert "xdp xdp_tx native" in paths(app)


async def test_detach_removes_the_program(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")  # a list even of one device: enter runs the command shown
        await pilot.pause()
        assert "xdp off" not in log(app)
        await pilot.press("enter")
        await pilot.pause()
        assert "✓ $ ip link set dev eth1 xdp off" in log(app)
        assert "xdp_pass" not in paths(app)


# --- links, focus and the mouse -------------------------------------------------------------


async def click_box(pilot: Pilot[None], app: XdpApp, name: str) -> None:
    panel = app.main_screen.paths_panel
    row = next(y for y, line in enumerate(rendered(panel).splitlines()) if f"─ {name} ·" in line)
    await pilot.click(PathsPanel, offset=(10, row + panel.content_region.y - panel.region.y))
    await pilot.pause()


async def test_clicking_a_box_focuses_the_device_and_l_takes_it_down(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await click_box(pilot, app, "eth1")
        assert app.focus_device == "eth1"
        await pilot.press("l", "enter")  # the focused device comes first in the list
        await pilot.pause()
        assert "✓ $ ip link set dev eth1 down" in log(app)
        eth1 = next(line for line in paths(app).splitlines() if "─ eth1 ·" in line)
        assert "· down" in eth1 and "· up" not in eth1
        await pilot.press("l", "enter")
        await pilot.pause()
        assert "✓ $ ip link set dev eth1 up" in log(app)


async def test_without_a_focus_l_asks_which_device(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)
        await choose(pilot, "eth0")
        assert "✓ $ ip link set dev eth0 down" in log(app)


async def test_focus_filters_the_counters_and_escape_clears_it(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await click_box(pilot, app, "eth0")
        await open_tab(pilot, "devices")
        counters = rendered(app.main_screen.counters_panel)
        assert "eth0 · nic/ice" in counters and "eth1 · nic/ice" not in counters
        await pilot.press("escape")
        await pilot.pause()
        assert app.focus_device is None
        shown = app.main_screen.counters_panel.view
        assert shown is not None and [d.name for d in shown.devices] == ["eth0", "eth1"]


# --- traffic -------------------------------------------------------------------------------


async def test_the_traffic_editor_issues_a_pktgen_command(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, TrafficScreen)
        rate = app.screen.query_one("#rate", Input)
        assert (rate.value, app.screen.query_one("#flows", Input).value) == ("1Mpps", "4")
        assert rate.has_focus
        await pilot.press(*["backspace"] * len(rate.value), *"2Mpps", "enter")
        await pilot.pause()
        text = log(app)
        assert "✓ $ pktgen eth0 rate 2Mpps" in text
        assert "gen0: 2Mpps to eth0" in text
        await pilot.press("t")  # the editor remembers what was sent
        await pilot.pause()
        assert app.screen.query_one("#rate", Input).value == "2Mpps"


# --- following a packet ----------------------------------------------------------------------


async def test_f_follows_a_flow_and_the_paths_panel_lists_its_hops() -> None:
    sim = FakeSim()
    app = XdpApp(sim, paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "drops")
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)
        await choose(pilot, "gen0:1")
        assert sim.traced == [("gen0", 1)]
        assert app.main_screen.active_tab == "paths"
        text = paths(app)
        assert "◆ following gen0 flow 1" in text
        assert "queue 3 on cpu 3" in text and "+1.500µs" in text
        assert "─ eth0 ◆ ·" in text
        await pilot.press("escape")
        await pilot.pause()
        assert "following" not in paths(app)


async def test_a_followed_packet_is_traced_again_after_a_command() -> None:
    sim = FakeSim()
    app = XdpApp(sim, paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        app.actions.follow(sim.flows()[0])
        app.commands.submit("ip link set dev eth1 down")
        await pilot.pause()
        assert sim.traced == [("gen0", 0), ("gen0", 0)]


# --- help ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tab", "kernel_words"),
    [
        ("paths", ("xdp_do_redirect", "bq_enqueue", "xdp_master_redirect", "tun_xdp_act")),
        ("rings", ("napi_poll", "ixgbe_determine_xdp_ring", "bq_xmit_all")),
        ("drops", ("__xdp_enqueue", "bpf_warn_invalid_xdp_action")),
        ("bond", ("bond_xdp_get_xmit_slave", "bond_opt_check_deps")),
        ("devices", ("dev_xdp_attach", "rtnl_link_stats64")),
    ],
)
async def test_question_mark_explains_the_tab_and_names_the_kernel_code(
    tab: str, kernel_words: tuple[str, ...]
) -> None:
    app = XdpApp(FakeSim(), paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, tab)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.markdown
        for word in kernel_words:
            assert word in text, word
        assert "| `a` | Attach a program…" in text
        shown = rendered(app.screen.query_one("#help-text", Static))
        assert "Attach a program" in shown and "| `a` |" not in shown  # drawn, not raw
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


# --- the bond mode switcher ---------------------------------------------------------------


async def test_bond_mode_change_shows_the_refusal_then_runs_the_plan_one_step_per_poll() -> None:
    app = make_app(str(ROOT / "topologies" / "dual_port.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(".")
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BondModeScreen)
        screen.query_one("#modes", OptionList).highlighted = 0  # balance-rr
        await pilot.click("#apply")
        await pilot.pause()
        attempt = str(screen.query_one("#attempt", Static).content)
        assert "ip link set dev bond0 type bond mode balance-rr" in attempt
        assert "ENOTEMPTY" in attempt and "has slaves" in attempt
        assert "The legal sequence (7 commands)" in attempt
        assert "✗ $ ip link set dev bond0 type bond mode balance-rr" in log(app)
        assert not screen.query_one("#run", Button).disabled
        await pilot.click("#run")
        await pilot.pause()
        assert app.main_screen.active_tab == "bond"
        assert app.guide.plan is not None and app.guide.plan.position == 0
        await pilot.press(".", ".", ".")
        await pilot.pause()
        assert app.guide.plan.position == 3
        assert app.frame is not None
        done = [(e.origin, e.cmd, e.ok) for e in app.frame.events]  # what the log lists
        assert ("plan", "ip link set dev bond0 down", True) in done
        assert ("plan", "ip link set dev eth1 nomaster", True) in done
        assert "✓ » ip link set dev eth1 nomaster" in log(app)  # the newest, in sight
        bond = rendered(app.screen.query_one(BondPanel))
        assert "▶ ip link set dev bond0 type bond mode balance-rr" in bond
        await pilot.press(*["."] * 4)
        await pilot.pause()
        assert app.guide.plan.done and not app.guide.plan.stopped
        bond = rendered(app.screen.query_one(BondPanel))
        assert "mode balance-rr" in bond
        assert "legal sequence: done, 7 commands" in bond


async def test_a_direct_change_the_kernel_accepts_needs_no_plan() -> None:
    app = make_app(str(ROOT / "topologies" / "dual_port.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BondModeScreen)
        screen.query_one("#policies", OptionList).highlighted = 0  # layer2: a live change
        await pilot.click("#apply")
        await pilot.pause()
        assert "✓ done" in str(screen.query_one("#attempt", Static).content)
        assert screen.query_one("#run", Button).disabled
        assert "✓ $ ip link set dev bond0 type bond xmit_hash_policy layer2" in log(app)


# --- lessons -------------------------------------------------------------------------------


async def test_a_lesson_steps_forward_runs_its_commands_and_goes_back(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(LessonBar)
        assert bar.display and "Links · step 1/2" in rendered(bar)
        await pilot.press("n")
        await pilot.pause()
        assert "step 2/2" in rendered(bar) and "Take eth1 down" in rendered(bar)
        await pilot.press("r")
        await pilot.pause()
        assert "✓ § ip link set dev eth1 down" in log(app)
        await open_tab(pilot, "lesson")
        assert not bar.display
        panel = rendered(app.screen.query_one(LessonPanel))
        assert "✓ $ ip link set dev eth1 down" in panel
        await pilot.press("p")
        await pilot.pause()
        assert "Watch eth0 receive." in rendered(app.screen.query_one(LessonPanel))


async def test_L_picks_another_lesson(bench: str) -> None:
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)
        await choose(pilot, "1")
        assert app.main_screen.active_tab == "lesson"
        panel = rendered(app.screen.query_one(LessonPanel))
        assert "Programs" in panel and "Drop everything on eth0." in panel


async def test_lesson_keys_are_hidden_without_lessons() -> None:
    app = XdpApp(FakeSim(), paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        assert app.check_action("lesson_run", ()) is False
        assert app.check_action("lesson_step", (1,)) is False
        await pilot.press("n", "r")
        await pilot.pause()
        assert not app.screen.query_one(LessonBar).display
        await open_tab(pilot, "lesson")
        assert "no lessons" in rendered(app.screen.query_one(LessonPanel))


# --- command line, palette, tabs, drops ----------------------------------------------------


async def test_tab_completes_the_command_line_and_the_hint_lists_candidates() -> None:
    app = XdpApp(FakeSim(), paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(":", *"ip li", "tab")
        await pilot.pause()
        line = app.main_screen.command_line
        assert line.value == "ip link "
        await pilot.press(*"set dev e", "tab")
        await pilot.pause()
        assert line.value == "ip link set dev eth"
        listed = app.main_screen.completions
        assert listed.display  # the candidates, in sight above the line
        words = str(listed.content).split()
        assert "eth0" in words and "eth1" in words
        assert "tab again cycles" in str(app.main_screen.command_hint.content)
        await pilot.press("1", " ", *"do", "tab", "enter")
        await pilot.pause()
        assert "✓ $ ip link set dev eth1 down" in log(app)


async def test_the_palette_lists_every_action_and_runs_it() -> None:
    app = XdpApp(FakeSim(), paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for command in APP_COMMANDS:
            assert command.title in commands
            assert commands[command.title].help == command.help
        await commands["Follow a packet…"].callback()
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)


async def test_number_keys_switch_tabs_and_the_event_log_stays() -> None:
    app = XdpApp(FakeSim(), paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        for tab in TAB_KEYS:
            await open_tab(pilot, tab)
            assert app.main_screen.active_tab == tab
            assert app.main_screen.event_log.size.height >= 5


async def test_selecting_a_drop_row_explains_its_cause_and_fix() -> None:
    sim = FakeSim()
    app = XdpApp(sim, paused=True, clock=FakeClock())
    async with app.run_test(size=SIZE) as pilot:
        sim.advance(3_200_000)
        app.stage.refresh()
        await open_tab(pilot, "drops")
        drops = app.screen.query_one(DropsPanel)
        text = rendered(drops)
        assert text.startswith("Summary")
        assert "▶ eth0 q3 cpu3" in text and "napi_poll" in text and "ethtool -L eth0" in text
        drops.focus()
        await pilot.press("down")
        await pilot.pause()
        assert drops.selected == ("exception", "eth1", "XDP_TX")
        assert "XDP TX ring was full" in rendered(drops)


async def test_a_user_program_once_loaded_is_offered_by_the_picker(bench: str) -> None:
    program = f"{ROOT / 'examples' / 'drop_dns.py'}:drop_dns"
    app = make_app(bench, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        app.commands.submit(f"ip link set dev eth0 xdp obj {program}")
        await pilot.pause()
        assert f"✓ $ ip link set dev eth0 xdp obj {program}" in log(app)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)  # eth0 and eth1 both have one now
        await choose(pilot, "eth1")
        assert isinstance(app.screen, ProgramScreen)
        ids = [opt.id for opt in app.screen.query_one(OptionList).options]
        assert ids[-1] == program
        await choose(pilot, program)
        assert f"✓ $ ip -force link set dev eth1 xdp obj {program}" in log(app)
