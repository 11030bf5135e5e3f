"""Same topology + seed + commands = the same report, byte for byte."""

from __future__ import annotations

import dataclasses

from conftest import TOPOLOGIES, topo

from xdptui import report
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

RANDOM = """
name: random flows
seed: 11
cpus: 4
devices:
  eth0: {type: nic, driver: ice, queues: 4, xdp: xdp_drop}
traffic:
  - {name: g, to: eth0, rate: 5Mpps, flows: 64, random: true, src_ip: 198.18.0.0/16,
     src_port: 1024-65535}
"""


def run(t, ns: int = 2_000_000) -> str:  # type: ignore[no-untyped-def]
    sim = Simulator(t)
    sim.run_until(ns // 2)
    sim.submit("ip -force link set dev eth0 xdp obj xdp_pass")
    sim.run_until(ns)
    return report.dumps(report.build_report(sim))


def test_same_seed_gives_byte_identical_reports():
    t = load_topology(TOPOLOGIES / "dual_port.yaml")
    assert run(t) == run(t)


def test_random_flows_follow_the_seed():
    t = topo(RANDOM)
    queues = []
    for seed in (11, 11, 12):
        sim = Simulator(dataclasses.replace(t, seed=seed))
        sim.run_until(1_000_000)
        queues.append([q.rx_packets for q in sim.frame().device("eth0").queues])
    assert queues[0] == queues[1]
    assert queues[0] != queues[2]
