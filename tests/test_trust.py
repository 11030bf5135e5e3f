"""Trust (DESIGN.md): a topology's Python programs run only after the user agrees.

Each program in these tests writes a marker file when it is imported, so "ran" and "did not
run" are facts on disk, not assumptions: ``check`` lists and runs none, ``run`` refuses without
``--trust``, the app asks first (and imports nothing on Quit), paths resolve against the
topology's directory only, and ``serve`` refuses Python programs unless allowed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import ClassVar

import pytest
from fake_sim import FakeClock, FakeSim
from textual.widgets import Button, Static

from xdptui import cli
from xdptui.app import TrustApp, XdpApp
from xdptui.screens.trust import TrustScreen
from xdptui.topology_io import TopologyError, load_topology
from xdptui.trust import consent_lines, user_programs

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """\
import numpy as np
from pathlib import Path
from typing import ClassVar

Path({marker!r}).write_text(__file__)


def prog(ctx):
    return np.full(len(ctx.size), 2)
"""

TOPOLOGY = """\
name: shared
devices:
  eth0: {{type: nic, xdp: progs/mine.py:prog}}
  eth1: {{type: nic}}
maps:
  m: {{type: devmap, max_entries: 4, entries: {{0: {{dev: eth1, egress: near.py:prog}}}}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps}}
timeline:
  - {{at: 1ms, do: "ip -force link set dev eth0 xdp obj {timeline}"}}
lessons:
  - title: l
    steps:
      - {{text: a, commands: ["ip link set dev eth1 xdpgeneric obj progs/mine.py:prog"]}}
"""


def write_program(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PROGRAM.format(marker=str(marker)))


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A topology directory with two programs; each marks ``ran-<name>`` when imported."""
    folder = tmp_path / "shared"
    write_program(folder / "progs" / "mine.py", tmp_path / "ran-mine")
    write_program(folder / "near.py", tmp_path / "ran-near")
    (folder / "topo.yaml").write_text(TOPOLOGY.format(timeline="near.py:prog"))
    return folder / "topo.yaml"


def ran(tmp_path: Path) -> set[str]:
    return {p.name.removeprefix("ran-") for p in tmp_path.glob("ran-*")}


def xdptui(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


# --- check lists, runs none ------------------------------------------------------------------


def test_check_lists_every_program_and_runs_none(shared: Path, tmp_path: Path) -> None:
    res = xdptui("check", str(shared))
    assert res.returncode == 0, res.stderr
    folder = shared.parent.resolve()
    lines = res.stdout.splitlines()
    assert lines[1] == (
        f"{shared}: names 4 Python programs; run and the app run them only with --trust "
        "(the app asks first):"
    )
    assert lines[2:] == [
        f"  {shared}:3:3: devices.eth0.xdp: {folder}/progs/mine.py (function prog)",
        f"  {shared}:6:47: maps.m.entries.0.egress: {folder}/near.py (function prog)",
        f"  {shared}:10:5: timeline do: {folder}/near.py (function prog)",
        f"  lessons[0].steps[0].commands[0]: {folder}/progs/mine.py (function prog)",
    ]
    assert ran(tmp_path) == set()


def test_a_topology_without_programs_lists_none() -> None:
    res = xdptui("check", str(ROOT / "topologies" / "dual_port.yaml"))
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 1


# --- run: --trust or nothing -----------------------------------------------------------------


def test_run_refuses_without_trust_and_lists_the_resolved_files(
    shared: Path, tmp_path: Path
) -> None:
    res = xdptui("run", str(shared), "--duration", "2ms")
    folder = shared.parent.resolve()
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        f"xdptui run: {shared} names Python programs; they would run with your rights:",
        f"  {folder}/progs/mine.py: prog() (named by devices.eth0.xdp, "
        "lessons[0].steps[0].commands[0])",
        f"  {folder}/near.py: prog() (named by maps.m.entries.0.egress, timeline do)",
        "Read them, then run again with --trust to run them (nothing was run).",
    ]
    assert ran(tmp_path) == set()


def test_run_with_trust_runs_them(shared: Path, tmp_path: Path) -> None:
    res = xdptui("run", str(shared), "--duration", "2ms", "--trust", "--json", "-")
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == {"mine", "near"}


def test_bench_sim_needs_trust_too(shared: Path, tmp_path: Path) -> None:
    res = xdptui("bench", "sim", str(shared), "--sim-time", "1ms")
    assert res.returncode == 2 and "--trust" in res.stderr
    assert ran(tmp_path) == set()


def test_the_python_api_needs_trust_too(shared: Path, tmp_path: Path) -> None:
    """``Simulator.from_file`` runs a file's programs only with ``trust=True``."""
    from xdptui import Simulator
    from xdptui.trust import UntrustedTopology

    with pytest.raises(UntrustedTopology) as refused:
        Simulator.from_file(shared)
    assert len(refused.value.programs) == 4 and "trust=True" in str(refused.value)
    assert ran(tmp_path) == set()
    Simulator.from_file(shared, trust=True).run_until(1_000_000)
    assert ran(tmp_path) == {"mine", "near"}


def test_a_timeline_program_is_the_one_beside_the_topology_not_in_the_current_directory(
    shared: Path, tmp_path: Path
) -> None:
    """``obj near.py:prog`` in a timeline names the topology's neighbour even when the current
    directory holds a file of the same name (that copy must never be imported)."""
    cwd = tmp_path / "elsewhere"
    write_program(cwd / "near.py", tmp_path / "ran-impostor")
    res = xdptui("run", str(shared), "--duration", "2ms", "--trust", "--json", "-", cwd=cwd)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == {"mine", "near"}
    topology = load_topology(shared)
    assert topology.timeline[0].do == (
        f"ip -force link set dev eth0 xdp obj {shared.parent.resolve()}/near.py:prog"
    )


# --- paths: relative to the topology, absolute and ../ like any other -------------------


@pytest.mark.parametrize(
    "program",
    ["{abs}/outside.py:prog", "../outside.py:prog", "progs/../../outside.py:prog", "link.py:prog"],
)
@pytest.mark.parametrize("where", ["xdp", "timeline", "lesson", "egress"])
def test_absolute_and_parent_paths_are_paths_like_any_other(
    tmp_path: Path, program: str, where: str
) -> None:
    """DESIGN's Trust: a shared ``../common/`` folder (as xdp-tutorial lays its lessons out)
    or an absolute path names a program like a path beside the topology does; ``check``
    resolves and lists it and runs nothing, and ``run`` needs ``--trust`` to import it."""
    folder = tmp_path / "topo"
    (folder / "progs").mkdir(parents=True)
    write_program(tmp_path / "outside.py", tmp_path / "ran-outside")
    (folder / "link.py").symlink_to(tmp_path / "outside.py")
    program = program.format(abs=tmp_path)
    text = {
        "xdp": f"devices:\n  eth0: {{type: nic, xdp: {program}}}\n",
        "timeline": "devices: {eth0: {type: nic}}\ntimeline:\n"
        f"  - {{at: 1ms, do: 'ip link set dev eth0 xdp obj {program}'}}\n",
        "lesson": "devices: {eth0: {type: nic}}\nlessons:\n  - title: t\n    steps:\n"
        f"      - {{text: x, commands: ['ip link set dev eth0 xdp obj {program}']}}\n",
        "egress": "devices: {eth0: {type: nic}}\nmaps:\n"
        f"  m: {{type: devmap, max_entries: 1, "
        f"entries: {{0: {{dev: eth0, egress: {program}}}}}}}\n",
    }[where]
    path = folder / "t.yaml"
    path.write_text(text)
    res = xdptui("check", str(path))
    assert res.returncode == 0, res.stderr
    assert str((tmp_path / "outside.py").resolve()) in res.stdout
    assert not (tmp_path / "ran-outside").exists()
    res = xdptui("run", str(path), "--duration", "2ms")
    assert res.returncode == 2 and "--trust" in res.stderr
    assert not (tmp_path / "ran-outside").exists()


def test_a_missing_program_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("devices:\n  eth0: {type: nic, xdp: ../nowhere.py:prog}\n")
    res = xdptui("check", str(path))
    assert res.returncode == 2
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"{path}:2:") and "user program file '../nowhere.py' not found" in line
    assert ran(tmp_path) == set()


def test_a_subdirectory_is_fine_and_a_missing_file_is_named(tmp_path: Path) -> None:
    write_program(tmp_path / "sub" / "p.py", tmp_path / "ran-p")
    path = tmp_path / "t.yaml"
    path.write_text(
        "devices: {eth0: {type: nic}}\ntimeline:\n"
        "  - {at: 1ms, do: 'ip link set dev eth0 xdp obj sub/../sub/p.py:prog'}\n"
        "  - {at: 2ms, do: 'ip -force link set dev eth0 xdp obj sub/none.py:prog'}\n"
    )
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    (diag,) = info.value.diagnostics
    assert str(diag).startswith(f"{path}:4:19: error: timeline[1].do: user program file ")
    assert "sub/none.py' not found" in str(diag)


# --- the app asks first ----------------------------------------------------------------------


async def test_the_trust_screen_lists_the_files_and_quit_runs_nothing() -> None:
    lines = ["/srv/t/progs/mine.py: prog() (named by devices.eth0.xdp)"]
    app = TrustApp("t.yaml", lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TrustScreen)
        shown = [str(s.render()) for s in screen.query(Static)]
        assert lines[0] in shown
        assert app.focused is screen.query_one("#trust-no", Button)  # Quit is the default
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value is False


async def test_the_trust_screen_continue_agrees() -> None:
    app = TrustApp("t.yaml", ["/srv/t/p.py: prog() (named by timeline do)"])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.click("#trust-yes")
        await pilot.pause()
    assert app.return_value is True


def test_opening_the_app_without_trust_asks_and_quit_imports_nothing(
    shared: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked: list[list[str]] = []

    def ask(path: str, programs: list[str]) -> bool:
        asked.append(list(programs))
        return False

    monkeypatch.setattr("xdptui.app.ask_trust", ask)
    with pytest.raises(SystemExit) as info:
        cli.main([str(shared)])
    assert info.value.code == 2
    assert asked == [consent_lines(user_programs(load_topology(shared)))]
    assert "you did not agree to run its Python programs" in capsys.readouterr().err
    assert ran(tmp_path) == set()


def test_opening_the_app_with_trust_does_not_ask(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ask(path: str, programs: list[str]) -> bool:
        raise AssertionError("--trust must not ask")

    started: list[XdpApp] = []
    monkeypatch.setattr("xdptui.app.ask_trust", ask)
    monkeypatch.setattr(XdpApp, "run", lambda self: started.append(self))
    assert cli.main([str(shared), "--trust"]) == 0
    assert len(started) == 1 and started[0].commands.allow_user_programs
    assert ran(tmp_path) == {"mine", "near"}  # the simulator attached them


# --- serve -------------------------------------------------------------------------------


async def test_without_user_programs_a_typed_python_program_is_refused() -> None:
    sim = FakeSim()
    app = XdpApp(sim, paused=True, clock=FakeClock(), allow_user_programs=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        for line in ("ip link set dev eth0 xdp obj /tmp/evil.py:run", "ip link show"):
            await pilot.press("colon")
            await pilot.pause()
            app.main_screen.command_line.value = line
            await pilot.press("enter")
            await pilot.pause()
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert any("Python programs are disabled in this session" in t for t in toasts)
        result = app.commands.submit("bpftool map update name m key 0 value eth1 egress x.py:f")
        assert (result.ok, result.errno) == (False, "EPERM")
        assert "--allow-user-programs" in result.reply
    assert [cmd for cmd, _ in sim.submitted] == ["ip link show"]


def test_serve_refuses_a_topology_with_programs(shared: Path, tmp_path: Path) -> None:
    res = xdptui("serve", str(shared), "--port", str(free_port()))
    assert res.returncode == 2
    assert "serve runs no Python programs unless started with --allow-user-programs" in res.stderr
    res = xdptui("serve", str(shared), "--allow-user-programs", "--port", str(free_port()))
    assert res.returncode == 2 and "start serve again with --trust" in res.stderr
    assert ran(tmp_path) == set()


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http", "1" * 400])
def test_serve_refuses_a_port_at_once(port: str) -> None:
    start = time.monotonic()
    res = xdptui("serve", f"--port={port}")
    assert res.returncode == 2
    assert "argument --port:" in res.stderr and "valid: 1..65535" in res.stderr
    assert time.monotonic() - start < 30


def test_serve_refuses_a_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("localhost", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = xdptui("serve", "--port", str(port))
    assert res.returncode == 2
    assert f"cannot listen on localhost:{port}:" in res.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_beyond_localhost_warns_and_pages_use_the_public_url(tmp_path: Path) -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    port = free_port()
    public = f"http://classroom.example:{port}"
    log = tmp_path / "stderr"
    with log.open("w") as err:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "xdptui",
                "serve",
                "--host",
                "0.0.0.0",
                "--port",
                str(port),
                "--public-url",
                public,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            page = ""
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not page:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as reply:
                        page = reply.read().decode()
                except OSError:
                    time.sleep(0.2)
        finally:
            server.terminate()
            server.wait(timeout=10)
    assert "ws://classroom.example" in page
    assert (
        f"xdptui serve: warning: listening on 0.0.0.0:{port}, beyond this machine: anyone who "
        "can reach it can open the app (Python programs stay disabled)"
    ) in log.read_text()


class FakeServer:
    """Stands in for textual-serve's Server: records what each browser's app would run."""

    made: ClassVar[list[dict[str, object]]] = []

    def __init__(self, command: str, **kwargs: object) -> None:
        FakeServer.made.append({"command": command, **kwargs})

    def serve(self) -> None:
        pass


@pytest.mark.parametrize(
    ("flags", "child_flags"),
    [([], ["--no-user-programs"]), (["--allow-user-programs"], [])],
)
def test_each_browser_session_runs_the_app_with_the_servers_rules(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], child_flags: list[str]
) -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    monkeypatch.setattr("textual_serve.server.Server", FakeServer)
    FakeServer.made.clear()
    path = ROOT / "topologies" / "dual_port.yaml"
    port = free_port()
    assert cli.main(["serve", str(path), "--port", str(port), *flags]) == 0
    (made,) = FakeServer.made
    command = str(made["command"]).split()
    assert command[1:5] == ["-m", "xdptui", "app", str(path)]
    assert command[5:] == child_flags
    assert (made["host"], made["port"], made["public_url"]) == ("localhost", port, None)


def test_a_topology_from_text_resolves_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a topology that is not a file (``loads_topology(text)``) uses the current
    directory, as the engine does for it."""
    from xdptui.topology_io import loads_topology

    write_program(tmp_path / "p.py", tmp_path / "ran-p")
    monkeypatch.chdir(tmp_path)
    topology = loads_topology("devices: {eth0: {type: nic, xdp: p.py:prog}}\n")
    (program,) = user_programs(topology)
    assert (program.file, program.function, program.where) == (
        tmp_path.resolve() / "p.py",
        "prog",
        "devices.eth0.xdp",
    )
    assert ran(tmp_path) == set()


@pytest.mark.parametrize(
    ("command", "errno"),
    [
        ("bpftool map update name dm key 9 value eth1 egress {p}", "E2BIG"),  # past max_entries
        ("bpftool map update name dm key 0 value eth1 egress {p} noexist", "EEXIST"),
        ("bpftool map update name dh key 9 value eth1 egress {p}", "E2BIG"),  # the hash is full
        ("bpftool map update name dh key 1 value eth1 egress {p} noexist", "EEXIST"),
    ],
)
def test_a_refused_map_update_never_imports_its_egress_program(
    tmp_path: Path, command: str, errno: str
) -> None:
    """The refusal of ``bpftool map update ... egress USER.py:f`` is decided from the map,
    the key and the flags; only an update that happens loads (imports) the program."""
    from xdptui.sim.engine import Simulator

    marker = tmp_path / "imported"
    (tmp_path / "eg.py").write_text(PROGRAM.format(marker=str(marker)))
    topo = tmp_path / "t.yaml"
    topo.write_text(
        "devices:\n  eth0: {type: nic}\n  eth1: {type: nic}\n"
        "maps:\n  dm: {type: devmap, max_entries: 4, entries: {0: eth1}}\n"
        "  dh: {type: devmap_hash, max_entries: 1, entries: {1: eth1}}\n"
    )
    sim = Simulator.from_file(str(topo))
    res = sim.submit(command.format(p=tmp_path / "eg.py:prog"))
    assert not res.ok and res.errno == errno, res
    assert not marker.exists()
    prog = tmp_path / "eg.py:prog"
    assert sim.submit(f"bpftool map update name dm key 1 value eth1 egress {prog}").ok
    assert marker.exists()
