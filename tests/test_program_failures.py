"""A Python program that fails later -- raises, exits, returns the wrong thing or hangs when a
change makes it run again -- is detached where it runs, and says so: in the log, the report's
``events``, the event stream; the simulation, ``xdptui run`` and the app go on.

The programs pass the attach check (16 flow-table entries) and fail once ``pktgen eth0 flows
1000`` makes the flow table larger, as a program with a size-dependent bug would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import xdptui.sim.programs
from xdptui.sim.engine import Simulator

PROGRAMS = """
import numpy as np

def _fine(ctx):
    return np.full(len(ctx), 2)  # XDP_PASS

def raises(ctx):
    if len(ctx) > 64:
        raise ValueError("too many rows")
    return _fine(ctx)

def exits(ctx):
    if len(ctx) > 64:
        raise SystemExit(3)
    return _fine(ctx)

def interrupts(ctx):
    if len(ctx) > 64:
        raise KeyboardInterrupt
    return _fine(ctx)

def returns_none(ctx):
    return None if len(ctx) > 64 else _fine(ctx)

def returns_floats(ctx):
    return np.full(len(ctx), 2.5) if len(ctx) > 64 else _fine(ctx)

def sleeps(ctx):
    if len(ctx) > 64:
        import time
        time.sleep(60)
    return _fine(ctx)

def spins(ctx):
    while len(ctx) > 64:
        pass
    return _fine(ctx)
"""

WHY = {
    "raises": "raised ValueError('too many rows')",
    "exits": "called sys.exit(3)",
    "interrupts": "raised KeyboardInterrupt",
    "returns_none": "must return one integer action per row",
    "returns_floats": "must return one integer action per row",
    "sleeps": "ran longer than",
    "spins": "ran longer than",
}


def topology(tmp_path: Path, func: str, egress: bool = False) -> Path:
    (tmp_path / "progs.py").write_text(PROGRAMS)
    if egress:  # eth0 redirects into eth1 through a devmap whose entry has the egress program
        body = f"""
devices:
  eth0: {{type: nic, driver: ice, queues: 2, xdp: {{program: redirect_map, params: {{map: tx}}}}}}
  eth1: {{type: nic, driver: ice, queues: 2, xdp: xdp_pass}}
maps:
  tx: {{type: devmap, max_entries: 4, entries: {{0: {{dev: eth1, egress: "progs.py:{func}"}}}}}}
"""
    else:
        body = f"""
devices:
  eth0: {{type: nic, driver: ice, queues: 2, xdp: "progs.py:{func}"}}
"""
    path = tmp_path / "t.yaml"
    path.write_text(
        f"""name: failing program
cpus: 2
{body.strip()}
traffic:
  - {{name: a, to: eth0, rate: 1Mpps, size: 64, flows: 16}}
timeline:
  - {{at: 1ms, do: "pktgen eth0 flows 1000"}}
"""
    )
    return path


@pytest.fixture(autouse=True)
def short_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xdptui.sim.programs, "PROGRAM_TIME_LIMIT_S", 0.3)


@pytest.mark.parametrize("func", sorted(WHY))
def test_a_program_that_fails_after_a_change_is_detached_and_reported(
    tmp_path: Path, func: str
) -> None:
    sim = Simulator.from_file(topology(tmp_path, func), trust=True)
    sim.run_until(3_000_000)
    report = sim.report()
    failed = [e for e in report["events"] if not e["ok"] and "failed" in e["cmd"]]
    assert len(failed) == 1, report["events"]
    assert failed[0]["t_ns"] == 1_000_000
    assert failed[0]["errno"] == "EINVAL"
    assert WHY[func] in failed[0]["reply"] and "detached from eth0" in failed[0]["reply"]
    assert report["devices"]["eth0"]["xdp"] is None
    # the frames after it go up the stack: 1 Mpps for the 2 ms after the failure
    assert report["devices"]["eth0"]["counters"]["rx_packets"] >= 2_900
    stream = [e for e in sim.events() if e["kind"] == "prog_fail"]
    assert [(e["id"], e["detached"]) for e in stream] == [(1, ["eth0 (native)"])]


def test_a_failing_egress_program_leaves_its_devmap_entry_without_one(tmp_path: Path) -> None:
    sim = Simulator.from_file(topology(tmp_path, "raises", egress=True), trust=True)
    sim.run_until(3_000_000)
    report = sim.report()
    failed = [e for e in report["events"] if not e["ok"] and "failed" in e["cmd"]]
    assert len(failed) == 1 and "map tx key 0 (egress)" in failed[0]["reply"]
    assert sim.submit("bpftool map dump name tx").reply.count("egress") == 0
    # eth1 still takes the redirected frames: the entry stays
    assert report["devices"]["eth1"]["counters"]["tx_packets"] >= 2_900


def test_a_program_that_exits_at_import_is_a_refused_attach(tmp_path: Path) -> None:
    path = topology(tmp_path, "raises")
    (tmp_path / "progs.py").write_text("import sys\nsys.exit(5)\n")
    sim = Simulator.from_file(path, trust=True)
    sim.run_until(1_000)
    events = sim.report()["events"]
    assert not events[0]["ok"] and "importing it called sys.exit(5)" in events[0]["reply"]


def test_run_goes_on_past_a_failing_program(tmp_path: Path) -> None:
    path = topology(tmp_path, "exits")
    out = subprocess.run(
        [sys.executable, "-m", "xdptui", "run", str(path), "--trust", "--duration", "3ms"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "called sys.exit(3); detached from eth0 (native)" in out.stdout
    assert "Traceback" not in out.stderr


async def test_the_app_stays_up_and_logs_the_failure(tmp_path: Path) -> None:
    """Typed in the app: the command succeeds, the program fails on the larger table, the log
    says so, and the app goes on stepping."""
    from xdptui.app import make_app
    from xdptui.widgets.events import EventLog

    app = make_app(str(topology(tmp_path, "raises")), paused=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("colon")
        app.main_screen.command_line.value = "pktgen eth0 flows 1000"
        await pilot.press("enter")
        await pilot.pause(0.3)
        await pilot.press(".")
        await pilot.pause(0.3)
        log = app.screen.query_one(EventLog)
        text = "\n".join(log.render_line(y).text for y in range(log.size.height))
        assert "progs.py:raises failed" in text
        assert app.is_running and app.sim.report()["devices"]["eth0"]["xdp"] is None
