"""Every shipped topology loads, runs, teaches a lesson whose commands do what its text says."""

from __future__ import annotations

import pytest
from conftest import TOPOLOGIES

from xdptui.commands import validate
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))
# Lesson steps that show a refusal on purpose, with the errno the kernel answers.
REFUSALS = {
    "ip link set dev bond0 type bond xmit_hash_policy vlan+srcmac": "EOPNOTSUPP",
    "ip link set dev bond0 type bond mode balance-rr": "ENOTEMPTY",
    "ip -force link set dev eth0 xdp obj xdp_drop": "EEXIST",
}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_topology_runs_and_its_lesson_commands_answer_as_described(path):  # type: ignore[no-untyped-def]
    topo = load_topology(path, validate_command=validate)
    assert topo.description and topo.lessons
    sim = Simulator(topo)
    sim.run_until(5_000_000)
    assert all(e.ok for e in sim.frame().events if e.origin == "topology"), sim.frame().events
    assert sum(d.counters["rx_packets"] for d in sim.world.devices.values()) > 0
    for lesson in topo.lessons:
        for step in lesson.steps:
            for line in step.commands:
                res = sim.submit(line)
                assert res.ok == (line not in REFUSALS), (line, res.reply)
                if not res.ok:
                    assert res.errno == REFUSALS[line]
    sim.run_until(6_000_000)
