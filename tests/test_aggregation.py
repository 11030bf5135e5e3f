"""Long aggregated steps and poll-by-poll steps give the same counters (within 1 %)."""

from __future__ import annotations

import pytest
from conftest import TOPOLOGIES, topo

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

SATURATED = """
name: saturated tx
cpus: 4
devices:
  eth0: {type: nic, driver: ice, queues: 4, ring: 512, xdp: xdp_tx}
  eth1: {type: nic, driver: ixgbe, speed: 10G, queues: 4, xdp: xdp_pass}
  eth2: {type: nic, driver: ice, queues: 2, xdp: {program: redirect, params: {dev: eth1}}}
traffic:
  - {name: a, to: eth0, rate: 120Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64}
  - {name: b, to: eth2, rate: 30Mpps, size: [64, 1500], flows: 32, src_ip: 198.19.0.1-198.19.0.32}
"""


def all_counters(sim: Simulator) -> dict[str, int]:
    out: dict[str, int] = {}
    for dev in sim.world.devices.values():
        for key, value in dev.counters.items():
            out[f"{dev.name}.{key}"] = value
    for row in sim.frame().tracepoints.xdp_devmap_xmit:
        out[f"{row.from_dev}>{row.to_dev}.sent"] = row.sent
        out[f"{row.from_dev}>{row.to_dev}.drops"] = row.drops
        out[f"{row.from_dev}>{row.to_dev}.flushes"] = row.flushes
    return out


def assert_close(a: dict[str, int], b: dict[str, int]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        # 1 % of the value, with a floor of a couple of rings' worth for counters near zero
        slack = max(0.01 * max(a[key], b[key]), 1100)
        assert abs(a[key] - b[key]) <= slack, (key, a[key], b[key])


@pytest.mark.parametrize(
    "source",
    [SATURATED, str(TOPOLOGIES / "dual_port.yaml"), str(TOPOLOGIES / "veth_pair.yaml")],
)
@pytest.mark.parametrize("step_ns", [10_000_000, 33_000_000])  # headless / the app's frame
def test_aggregated_and_poll_by_poll_runs_agree(source: str, step_ns: int):
    t = load_topology(source) if source.endswith(".yaml") else topo(source)
    fast = Simulator(t, max_step_ns=step_ns)
    slow = Simulator(t, poll_by_poll=True)
    fast.run_until(3_000_000)
    slow.run_until(3_000_000)
    assert fast.datapath.steps * 100 < slow.datapath.steps
    a, b = all_counters(fast), all_counters(slow)
    assert sum(a.values()) > 1_000_000 or "veth" in t.name
    assert_close(a, b)


def test_chunking_of_advance_does_not_change_results():
    t = topo(SATURATED)
    one = Simulator(t)
    one.advance(2_000_000)
    many = Simulator(t)
    for _ in range(200):
        many.advance(10_000)
    assert (
        all_counters(one) == all_counters(many)
        or assert_close(all_counters(one), all_counters(many)) is None
    )
