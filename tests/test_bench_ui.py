"""``xdptui bench ui`` prints its figures (their values are measured, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = ("--seconds", "0.3", "--json")


def test_bench_ui_reports_requested_and_achieved_fps_rtf_and_cpu_share() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "bench", "ui", "topologies/veth_pair.yaml", *QUICK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(figures) == {"requested_fps", "achieved_fps", "sim_realtime_factor", "cpu_share"}
    assert figures["requested_fps"] == 30.0
    assert all(isinstance(value, float) and value >= 0 for value in figures.values())
