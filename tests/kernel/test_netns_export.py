"""`xdptui export --netns`: the lab script, run for real, counts what the simulator counts.

The topology: a NIC (a veth pair on the lab's kernel) redirecting a replayed capture through a
devmap with a clang-built object, a veth pair with drop_port.o on one end and the built-in
xdp_pass on the other, a pktgen-like source sent by the local stack, and a tap. The script's
JSON (``ip -s link`` and ``ethtool -S`` per device) is compared with the simulator's report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_oracle_net import obj, why_not
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcapng

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
ROOT = Path(__file__).resolve().parents[2]

TOPOLOGY = """\
name: lab
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 1, xdp: {program: progs.o, section: x_redir}}
  veth0: {type: veth, peer: veth1, xdp: drop_port.o}
  veth1: {type: veth, peer: veth0, xdp: xdp_pass}
  tap0: {type: tun, mode: tap, reader: 1Mpps}
maps:
  dm: {type: devmap, max_entries: 8, entries: {0: veth1}}
traffic:
  - {name: cap, to: eth0, pcap: cap.pcapng, rate: 100Kpps}
  - {name: gen, from: veth1, rate: 100Kpps, count: 60, flows: 6, dst_port: 50-55}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, int]], Path]:
    d = tmp_path_factory.mktemp("lab")
    (d / "progs.o").write_bytes(obj().read_bytes())
    (d / "drop_port.o").write_bytes((ROOT / "examples/bpf/drop_port.o").read_bytes())
    packets = []
    for i in range(40):
        l4 = UDP(dport=53 if i % 4 == 0 else 80) if i % 3 else TCP(dport=53)
        p = Ether() / IP(src=f"10.0.0.{i + 1}", dst="10.0.9.9") / l4
        p.time = 1_700_000_000 + i * 1e-5
        packets.append(p)
    wrpcapng(str(d / "cap.pcapng"), packets)
    (d / "lab.yaml").write_text(TOPOLOGY)
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "export", "--netns", str(d / "lab.yaml"),
         "-o", str(d / "lab.sh"), "--duration", "5ms"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    run = subprocess.run(["bash", str(d / "lab.sh")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-1500:]
    return json.loads(run.stdout), d


def test_the_lab_scripts_counts_equal_the_simulators(
    lab: tuple[dict[str, dict[str, int]], Path],
) -> None:
    kernel, d = lab
    sim = Simulator(load_topology(d / "lab.yaml"))
    sim.run_until(20_000_000)
    report = sim.report()
    assert all(e["ok"] for e in report["events"]), report["events"]
    for dev, k in kernel.items():
        c = report["devices"][dev]["counters"]
        got = {
            "rx_packets": k["rx_packets"],
            "tx_packets": k["tx_packets"],
            "xdp_drop": k.get("ethtool:rx_queue_0_xdp_drops", 0),
            "xdp_redirect": k.get("ethtool:rx_queue_0_xdp_redirect", 0),
            "xdp_xmit": k.get("ethtool:tx_queue_0_xdp_xmit", 0),
        }
        want = {
            "rx_packets": c["rx_packets"],
            "tx_packets": c["tx_packets"],
            "xdp_drop": c["xdp_drop"] + c["xdp_aborted"],
            "xdp_redirect": c["xdp_redirect"],
            "xdp_xmit": c["xdp_xmit"],
        }
        assert got == want, dev
    assert report["devices"]["veth0"]["counters"]["xdp_drop"] > 0  # the verdicts are mixed
    assert report["devices"]["eth0"]["counters"]["xdp_redirect"] == 40


def test_the_script_says_what_a_laptop_cannot_build(
    lab: tuple[dict[str, dict[str, int]], Path],
) -> None:
    text = (lab[1] / "lab.sh").read_text()
    assert "# eth0: a NIC (ice) here; on a laptop a veth pair: eth0 and the wire weth0" in text
    assert "drop_port.o: the object the topology names, byte for byte" in text
