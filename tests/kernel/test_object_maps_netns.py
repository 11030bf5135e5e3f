"""A topology's ``type: object`` map in the lab ``xdptui export --netns`` builds: the script
loads the object with its maps pinned and fills the map with ``bpftool map update``, and the
kernel drops what the simulator drops.

veth0 runs examples/bpf/drop_ports_map.o with ports 53 and 443 in its map; the local stack
sends out of veth1 to ports 50-55 and 440-445. Skips with the reason where the machine cannot
build the lab (not root, no BPF, missing tools).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_oracle_net import why_not

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
ROOT = Path(__file__).resolve().parents[2]

TOPOLOGY = """\
name: port filter lab
cpus: 2
devices:
  veth0: {type: veth, peer: veth1, xdp: drop_ports_map.o}
  veth1: {type: veth, peer: veth0, xdp: xdp_pass}
maps:
  drop_ports:
    type: object
    entries:
      - {key: hex 35 00, value: hex 01 00 00 00}
      - {key: 0xbb 0x01, value: 1 0 0 0}
traffic:
  - {name: dns, from: veth1, rate: 100Kpps, count: 60, flows: 6, dst_port: 50-55}
  - {name: web, from: veth1, rate: 100Kpps, count: 60, flows: 6, dst_port: 440-445, proto: tcp}
"""


def test_the_lab_drops_what_the_simulator_drops(tmp_path: Path) -> None:
    (tmp_path / "drop_ports_map.o").write_bytes(
        (ROOT / "examples/bpf/drop_ports_map.o").read_bytes()
    )
    (tmp_path / "lab.yaml").write_text(TOPOLOGY)
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "export", "--netns", str(tmp_path / "lab.yaml"),
         "-o", str(tmp_path / "lab.sh"), "--duration", "5ms"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    run = subprocess.run(
        ["bash", str(tmp_path / "lab.sh")], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-1500:]
    kernel = json.loads(run.stdout)["veth0"]
    sim = Simulator(load_topology(tmp_path / "lab.yaml"))
    sim.run_until(20_000_000)
    counters = sim.report()["devices"]["veth0"]["counters"]
    assert counters["xdp_drop"] == 20  # ports 53 and 443: one flow in six of each source
    assert kernel.get("ethtool:rx_queue_0_xdp_drops", 0) == counters["xdp_drop"]
    assert kernel["rx_packets"] == counters["rx_packets"]
