"""No key hurts a live lecture: a key that takes a link or a program away asks first (a list,
even of one device, each line the command it runs); ``:`` opens the command line whatever
was just closed, even when the terminal merged the Escape with it; the app's keys do nothing
under an open dialog; the event list's keys work wherever the focus is."""

from __future__ import annotations

from pathlib import Path

from conftest import TOPOLOGIES

from xdptui.app import XdpApp, make_app
from xdptui.screens.dialogs import PickScreen
from xdptui.screens.main import MainScreen
from xdptui.screens.output import OutputScreen

SIZE = (120, 40)
ONE_PORT = """\
name: one port
devices:
  eth0: {type: nic, driver: ice, queues: 1, xdp: xdp_drop}
traffic:
  - {name: g, to: eth0, rate: 1Mpps}
"""


def one_port(tmp_path: Path) -> XdpApp:
    path = tmp_path / "one.yaml"
    path.write_text(ONE_PORT)
    return make_app(str(path), paused=True)


def commands(app: XdpApp) -> list[str]:
    assert app.frame is not None
    return [e.cmd for e in app.frame.events if e.origin == "user"]


async def test_l_on_a_one_device_topology_asks_before_taking_the_link_down(
    tmp_path: Path,
) -> None:
    app = one_port(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)
        assert app.frame is not None and app.frame.device("eth0").up
        labels = [label for _, label in app.screen.items]
        assert labels == ["eth0       up         → ip link set dev eth0 down"]
        await pilot.press("escape")  # changed my mind
        await pilot.pause()
        assert app.frame.device("eth0").up and commands(app) == []
        await pilot.press("l", "enter")  # now for real
        await pilot.pause()
        assert not app.frame.device("eth0").up
        assert commands(app) == ["ip link set dev eth0 down"]


async def test_d_asks_before_detaching_even_the_only_program(tmp_path: Path) -> None:
    app = one_port(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, PickScreen)
        assert app.frame is not None and app.frame.device("eth0").xdp is not None
        await pilot.press("enter")
        await pilot.pause()
        assert app.frame.device("eth0").xdp is None
        assert commands(app) == ["ip link set dev eth0 xdp off"]


async def test_colon_right_after_escape_opens_the_command_line() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(3):
            app.commands.submit("help")  # the long reply opens its pane
            await pilot.pause()
            assert isinstance(app.screen, OutputScreen)
            await pilot.press("escape", "colon")
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
            assert app.main_screen.command_line.display and app.main_screen.command_line.has_focus
            await pilot.press("escape")
            await pilot.pause()


async def test_an_escape_the_terminal_merged_with_colon_still_closes_and_opens() -> None:
    """tmux (escape-time) hands ESC and a key pressed soon after as one sequence, which
    Textual's parser turns into ``^`` and the key: the ``^`` closes, the ``:`` opens."""
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        app.commands.submit("help")
        await pilot.pause()
        assert isinstance(app.screen, OutputScreen)
        await pilot.press("circumflex_accent", "colon")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        line = app.main_screen.command_line
        assert line.display and line.has_focus and line.value == ""
        await pilot.press("circumflex_accent")  # the same merge inside the command line
        await pilot.pause()
        assert not line.display


async def test_the_apps_keys_do_nothing_while_a_dialog_is_open() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        app.commands.submit("help")
        await pilot.pause()
        assert isinstance(app.screen, OutputScreen)
        await pilot.press("e", "l", "p", "n", "space", "home")  # "help" typed in the wrong place
        await pilot.pause()
        assert isinstance(app.screen, OutputScreen)  # no picker stacked on it
        assert app.frame is not None and app.frame.t_ns == 0 and app.paused
        assert app.guide.position() == (0, 0)
        assert not app.main_screen.lesson_bar.has_class("-expanded")
        assert all(dev.up for dev in app.frame.devices)


async def test_the_palette_still_runs_an_action() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Step one NAPI poll")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.frame is not None and app.frame.t_ns > 0  # one poll ran


async def test_event_list_keys_work_wherever_the_focus_is() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(".", ".")
        await pilot.pause()
        panel = app.main_screen.shown_event_list()
        assert panel is not None and app.focused is not panel
        await pilot.press("k")  # nothing focused: the list still takes it
        await pilot.pause()
        assert panel.kind == "poll"
        await pilot.press("i")
        await pilot.pause()
        assert panel.device is not None
        seq = [e.seq for e in app.frame.stream] if app.frame else []
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.frame is not None and app.frame.stream[-1].seq > seq[-1]


async def test_a_reply_with_tabs_leaves_no_stale_characters_in_the_commands_panel() -> None:
    """bpftool prints its second lines with a tab: the log draws spaces, so every cell of
    the line is written (a raw tab made the terminal skip cells the line API had counted)."""
    from xdptui.widgets.events import EventLog

    app = make_app(str(TOPOLOGIES / "bpf_reflector.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        result = app.commands.submit("bpftool prog")
        assert "\tloaded_at" in result.reply  # as bpftool prints it
        await pilot.pause()
        log = app.screen.query_one(EventLog)
        lines = [log.render_line(y) for y in range(log.size.height)]
        assert all("\t" not in seg.text for line in lines for seg in line)
        text = "\n".join(line.text for line in lines)
        assert "        loaded_at" in text


async def test_a_one_line_reply_wider_than_the_log_opens_in_the_pane() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("colon", *"ip -j link show", "enter")
        await pilot.pause()
        assert isinstance(app.screen, OutputScreen)
        assert app.screen.reply.startswith("[{") and "\n" not in app.screen.reply
        await pilot.press("escape", "colon", *"ip link set dev eth1 mtu 1500", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)  # a short reply stays in the log
