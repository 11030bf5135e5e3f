"""Scale: flow tables of a million entries, costs that follow flow classes, RSS at 64 queues."""

from __future__ import annotations

from conftest import ROOT, TOPOLOGIES

from xdptui import Simulator
from xdptui.model.limits import MAX_TABLE_ENTRIES
from xdptui.topology_io import load_topology

BENCH = ROOT / "benchmarks"


def queue_frames(sim: Simulator, dev: str) -> list[int]:
    return [q.rx_packets for q in sim.frame().device(dev).queues]


def test_classes_do_not_grow_with_flows() -> None:
    """What a fast-mode step iterates over is the flow classes: the same scenario with 64 or
    65,536 flows per source has the same classes (a class per verdict path, not per flow)."""
    few = Simulator(load_topology(BENCH / "scale_4x64_64flows.yaml"))
    many = Simulator(load_topology(BENCH / "scale_4x64.yaml"))
    assert len(many.world.entries) == 1024 * len(few.world.entries)
    assert len(many.state.dp.classes) == len(few.state.dp.classes)


def test_a_source_of_a_million_flows_runs() -> None:
    sim = Simulator(load_topology(TOPOLOGIES / "syn_flood.yaml"))
    assert len(sim.world.entries) == MAX_TABLE_ENTRIES == 1 << 20
    sim.run_until(2_000_000)
    eth0 = sim.frame().device("eth0")
    c = dict(eth0.counters)
    # 60 Mpps for 2 ms, every frame to port 80: polled and dropped by the program, or still
    # waiting in a ring; none lost
    assert sim.report()["traffic"]["flood"]["emitted"] == 120_000
    assert c["rx_packets"] + sum(q.occupancy for q in eth0.queues) == 120_000
    assert c["xdp_drop"] == c["rx_packets"] and c["rx_dropped"] == 0


def test_rss_spreads_a_million_sources_over_every_queue() -> None:
    sim = Simulator(load_topology(TOPOLOGIES / "syn_flood.yaml"))
    sim.run_until(10_000_000)
    frames = queue_frames(sim, "eth0")
    assert len(frames) == 64 and min(frames) > 0
    # random sources, a uniform hash: every queue within 20 % of an even 1/64 share
    even = sum(frames) / 64
    assert max(frames) < 1.2 * even and min(frames) > 0.8 * even


def test_one_flow_is_one_queue_and_one_cpu() -> None:
    """RSS balances flows, not packets: a flood from one address and port lands on one queue,
    whose CPU cannot drop 60 Mpps; that ring overflows (rx_dropped) while the others idle."""
    sim = Simulator(load_topology(TOPOLOGIES / "syn_flood.yaml"))
    sim.run_until(2_000_000)
    assert sim.submit("pktgen eth0 flows 1").ok
    before = queue_frames(sim, "eth0")
    c0 = dict(sim.frame().device("eth0").counters)
    sim.run_until(12_000_000)
    gained = [b - a for a, b in zip(before, queue_frames(sim, "eth0"), strict=True)]
    assert sum(1 for g in gained if g > 512) == 1  # the others only drain what they held
    c1 = dict(sim.frame().device("eth0").counters)
    dropped = c1["rx_dropped"] - c0["rx_dropped"]
    polled = c1["rx_packets"] - c0["rx_packets"]
    assert dropped > 0 and polled > 0
    # 60 Mpps for 10 ms, all accounted for but what the rings held at either end
    assert abs(dropped + polled - 600_000) <= 64 * 512
