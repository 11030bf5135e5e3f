"""Arguments and files a careless or hostile user gives the command line: each one is a clear
line on stderr and exit status 2, at once -- never a traceback, a hang or a silent guess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINE_RATE = str(ROOT / "topologies" / "line_rate.yaml")


def xdptui(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def refused(res: subprocess.CompletedProcess[str]) -> str:
    """The one stderr line of a refusal (exit 2, nothing on stdout, no traceback)."""
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stdout == ""
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    return line


# --- durations ------------------------------------------------------------------------------


def test_a_duration_without_a_unit_asks_which_unit() -> None:
    line = refused(xdptui("run", LINE_RATE, "--duration", "5"))
    assert line == (
        "xdptui run: error: argument --duration: '5' has no unit; did you mean 5ms, 5us or 5ns? "
        "(units: ns, us, ms, s)"
    )


@pytest.mark.parametrize("digits", [30, 400])
def test_a_duration_with_hundreds_of_digits_is_too_long(digits: int) -> None:
    line = refused(xdptui("run", LINE_RATE, "--duration", "9" * digits + "ms"))
    assert line.startswith("xdptui run: error: argument --duration: '999999999999999999999...'")
    assert line.endswith("is too long; at most 86400s (one day of simulated time)")


@pytest.mark.parametrize("text", ["86401s", "2d", "-5ms", "1e3ms", "five ms", ""])
def test_durations_past_a_day_or_not_durations_are_refused(text: str) -> None:
    line = refused(xdptui("run", LINE_RATE, f"--duration={text}"))
    assert line.startswith("xdptui run: error: argument --duration: ")


def test_bench_sim_time_takes_the_same_durations() -> None:
    line = refused(xdptui("bench", "sim", LINE_RATE, "--sim-time", "100"))
    assert "'100' has no unit; did you mean 100ms, 100us or 100ns?" in line


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "1e400", "3601"])
def test_bench_ui_seconds_are_bounded(seconds: str) -> None:
    line = refused(xdptui("bench", "ui", LINE_RATE, f"--seconds={seconds}"))
    assert "is not a number of seconds 0..3600" in line


# --- seeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["-1", "4294967296", "1" * 400, "0x10", "seven"])
def test_a_seed_outside_32_bits_is_refused(seed: str) -> None:
    line = refused(xdptui("run", LINE_RATE, f"--seed={seed}"))
    assert line.endswith("is not a seed; valid: 0..4294967295")


def test_the_largest_seed_runs() -> None:
    res = xdptui("run", LINE_RATE, "--duration", "1ms", "--seed", "4294967295", "--json", "-")
    assert res.returncode == 0, res.stderr
    assert '"seed": 4294967295' in res.stdout


# --- files that are not topology files -------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "run"])
def test_dev_zero_is_refused_without_reading_it(command: str) -> None:
    start = time.monotonic()
    line = refused(xdptui(command, "/dev/zero", timeout=30))
    assert line == (
        "/dev/zero:1:1: error: can't read file: a character device, not a regular file; "
        "give a topology .yaml file"
    )
    assert time.monotonic() - start < 30


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "topo.yaml"
    os.mkfifo(fifo)
    line = refused(xdptui("check", str(fifo), timeout=30))
    assert line == (
        f"{fifo}:1:1: error: can't read file: a FIFO (named pipe), not a regular file; "
        "give a topology .yaml file"
    )


def test_a_directory_is_refused(tmp_path: Path) -> None:
    line = refused(xdptui("check", str(tmp_path)))
    assert line == (
        f"{tmp_path}:1:1: error: can't read file: a directory, not a regular file; "
        "give a topology .yaml file"
    )


def test_a_file_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (1 << 20) + "\ndevices: {eth0: {type: nic}}\n")
    line = refused(xdptui("check", str(big)))
    assert line == (
        f"{big}:1:1: error: can't read file: the file is larger than 1 MiB, "
        "the most a topology may be"
    )


def test_a_file_of_exactly_one_mebibyte_is_read(tmp_path: Path) -> None:
    text = "devices: {eth0: {type: nic}}\n# "
    path = tmp_path / "edge.yaml"
    path.write_text(text + "x" * ((1 << 20) - len(text) - 1) + "\n")
    assert path.stat().st_size == 1 << 20
    res = xdptui("check", str(path))
    assert res.returncode == 0, res.stderr


# --- YAML anchors and aliases ---------------------------------------------------------------


def billion_laughs(levels: int) -> str:
    """A few KiB that a YAML loader expanding aliases would turn into 9**levels nodes."""
    lines = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*lol{i - 1}"] * 9)
        lines.append(f"lol{i}: &lol{i} [{refs}]")
    return "devices: {eth0: {type: nic}}\n" + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_with_file_line_col(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(40))
    assert path.stat().st_size < 20_000
    start = time.monotonic()
    res = xdptui("check", str(path), timeout=60)
    assert time.monotonic() - start < 30
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[0] == (
        f"{path}:2:7: error: invalid YAML: anchors and aliases are not supported (anchor &lol0); "
        "write the value out where it is used"
    )
    assert lines[2] == (
        f"{path}:3:14: error: invalid YAML: anchors and aliases are not supported (alias *lol0); "
        "write the value out where it is used"
    )
    assert len(lines) == 40 + 39 * 9


def test_xdptui_with_options_first_still_opens_the_app_parser() -> None:
    """``xdptui --trust FILE`` reads like ``xdptui FILE --trust`` (the app's options)."""
    line = refused(xdptui("--paused", "/dev/zero"))
    assert line.startswith("/dev/zero:1:1: error: can't read file: a character device")


def test_control_characters_in_a_value_stay_on_the_error_line(tmp_path: Path) -> None:
    """A value holding a carriage return or a line separator is escaped, so each problem is
    still exactly one FILE:LINE:COL line (found by the fuzzed-topology property test)."""
    path = tmp_path / "cr.yaml"
    path.write_text(
        'devices: {eth0: {type: nic}}\ntraffic: [{name: g, to: eth0, proto: "\\r\\u2028"}]\n'
    )
    line = refused(xdptui("check", str(path)))
    assert line.startswith(f"{path}:2:38: error: traffic[0].proto: unknown proto '\\x0d\\u2028'")


def test_bench_sim_says_what_the_topology_asked_for_and_the_kernel_refused(tmp_path: Path) -> None:
    """Native XDP on 256 ice queues on 256 CPUs is refused at boot (ice_vsi_determine_xdp_res:
    the PF's free TX queues are fewer than half the CPUs, ENOMEM): the run measures a port
    without its program, and the benchmark says so beside its figures."""
    topo = tmp_path / "t.yaml"
    topo.write_text(
        "name: refused\ncpus: 256\ndevices:\n"
        "  eth0: {type: nic, driver: ice, queues: 256, xdp: xdp_drop}\n"
        "traffic:\n  - {name: g, to: eth0, rate: 1Mpps}\n"
    )
    res = xdptui("bench", "sim", str(topo), str(topo), "--sim-time", "10us")
    assert res.returncode == 0, res.stderr
    assert f"{topo}: refused at boot: ip link set dev eth0 xdp obj xdp_drop: ENOMEM" in res.stdout
    res = xdptui("bench", "sim", LINE_RATE, "--sim-time", "10us")
    assert res.returncode == 0 and "refused" not in res.stdout


def test_bench_sim_json_has_the_engine_issue_figures_with_a_checkpoint_s_cost() -> None:
    """CPU time, build time, peak memory and what a copy of the state costs (a checkpoint,
    a rewind, a refused command's rollback), each a measured positive figure."""
    import json

    res = xdptui("bench", "sim", LINE_RATE, "--sim-time", "200us", "--json")
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    for key in ("cpu_s", "build_cpu_s", "peak_rss_mb", "checkpoint_ms"):
        assert got[key] > 0, key
