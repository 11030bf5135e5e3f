"""Following a packet: the hops it takes through the data path as the simulator is now."""

from __future__ import annotations

from conftest import TOPOLOGIES, topo

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology


def sim_at(name: str, t: int = 1_000_000) -> Simulator:
    sim = Simulator(load_topology(TOPOLOGIES / f"{name}.yaml"))
    sim.run_until(t)
    return sim


def test_flows_are_listed_with_their_five_tuple():
    flows = sim_at("dual_port").flows(2)
    assert flows[0].label == "clients-a #0: udp 198.18.0.1:1024 -> 10.0.0.1:80"
    assert [f.source for f in flows] == ["clients-a", "clients-a", "clients-b", "clients-b"]


def test_trace_follows_xdp_tx_through_the_bond_hash_to_a_slave():
    sim = sim_at("dual_port")
    hops = sim.trace("clients-a", 1)
    stages = [h.stage for h in hops]
    assert stages[:3] == ["wire", "rx_ring", "napi"]
    assert any("xdp_master_redirect" in h.detail for h in hops)
    assert hops[-1].stage == "wire"
    times = [h.t_ns for h in hops]
    assert times == sorted(times) and times[0] >= sim.now_ns


def test_trace_shows_a_redirect_failure_with_its_errno():
    sim = sim_at("redirect_errors", 12_000_000)  # key 0 -> eth2 without a program
    hops = sim.trace("mix", 0)
    assert hops[-1].stage == "drop" and "EOPNOTSUPP" in hops[-1].detail


def test_trace_of_a_tap_write_names_the_path():
    hops = sim_at("tun_vm").trace("vm", 0)
    assert any("tun_build_skb (fast path)" in h.detail for h in hops)


def test_trace_rejects_unknown_flows():
    sim = sim_at("line_rate")
    assert sim.trace("nope", 0)[0].detail == "no such traffic source"
    assert "flow must be" in sim.trace("pktgen", 5000)[0].detail


def test_trace_of_an_af_xdp_writers_frame_starts_at_its_kick_and_ends_where_vi_counts_it():
    sim = sim_at("af_xdp_tx")
    hops = sim.trace("app", 0)
    assert "written to xsk0's TX ring" in hops[0].detail and "sendto" in hops[0].detail
    assert hops[0].t_ns == 1 + 32 * 32_000  # the next kick: one every 32 us from 1 ns
    assert hops[-1].dev == "vi" and hops[-1].stage == "stack"
    before = sim.report()["devices"]["vi"]["counters"]["xdp_pass"]
    sim.run_until(hops[-1].t_ns + 1)
    assert sim.report()["devices"]["vi"]["counters"]["xdp_pass"] > before


VETH = """
name: a veth the stack and generic XDP send into
cpus: 1
devices:
  eth0: {type: nic, driver: i40e, speed: 40G, queues: 1,
         xdp: {program: redirect, mode: generic, params: {dev: veth0}}}
  veth0: {type: veth, peer: veth1}
  veth1: {type: veth, peer: veth0}
traffic:
  - {name: g, to: eth0, rate: 1Mpps, flows: 4}
  - {name: app, from: veth0, rate: RATE, flows: 4}
"""


def _veth_sim(rate: str, *commands: str) -> Simulator:
    sim = Simulator(topo(VETH.replace("RATE", rate)))
    for cmd in commands:
        assert sim.submit(cmd).ok
    sim.run_until(1_000_000)
    return sim


def test_a_trace_ends_where_a_veth_without_its_peer_drops_the_frame():
    # veth1 down: veth0 has no carrier, so the stack's skb dies at __dev_queue_xmit; generic
    # XDP's redirect reaches veth_xmit anyway and __dev_forward_skb2 drops it there -- each
    # the hop the counters (tx_dropped) name
    sim = _veth_sim("100Kpps", "ip link set dev veth1 down")
    stack, generic = sim.trace("app", 0)[-1], sim.trace("g", 0)[-1]
    assert (stack.dev, stack.stage) == ("veth0", "drop") and "no carrier" in stack.detail
    assert (generic.dev, generic.stage) == ("veth0", "drop") and "veth1 is down" in generic.detail


def test_a_trace_ends_where_a_veths_full_backlog_refuses_the_frame():
    sim = _veth_sim("8Mpps")  # more than veth1's CPU takes: its backlog stays full
    hops = sim.trace("app", 0)
    assert [h.stage for h in hops[-2:]] == ["rx_ring", "drop"]
    assert "the backlog (input queue 1001/1001" in hops[-2].detail
    assert "enqueue_to_backlog" in hops[-1].detail
