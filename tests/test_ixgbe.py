"""ixgbe's XDP TX rings (seed ixgbe-xdp-many-cpus.txt): one per CPU up to 64, shared as
cpu % 64 under tx_lock for 65..128 CPUs, ENOMEM above 128; rings exist only with a program."""

from __future__ import annotations

import pytest
from conftest import counters, sim_of

IXGBE = """
name: ixgbe
cpus: {cpus}
devices:
  eth0: {{type: nic, driver: ixgbe, speed: 10G, queues: 4{xdp}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64}}
"""


def ixgbe(cpus: int, prog: str | None = "xdp_tx"):  # type: ignore[no-untyped-def]
    return sim_of(IXGBE.format(cpus=cpus, xdp=f", xdp: {prog}" if prog else ""))


def rings(sim) -> list[tuple[int, tuple[int, ...], bool]]:  # type: ignore[no-untyped-def]
    return [(r.ring, r.cpus, r.locked) for r in sim.frame().device("eth0").xdp_tx_rings]


def test_ixgbe_64_cpus_one_ring_per_cpu_without_lock():
    sim = ixgbe(64)
    got = rings(sim)
    assert len(got) == 64
    assert all(cpus == (ring,) and not locked for ring, cpus, locked in got)


def test_ixgbe_96_cpus_share_rings_cpu_mod_64_under_lock():
    sim = ixgbe(96)
    got = rings(sim)
    assert len(got) == 64
    assert got[0] == (0, (0, 64), True)
    assert got[31] == (31, (31, 95), True)
    assert got[32] == (32, (32,), True)
    cpu70 = sim.frame().cpus[70]
    assert ("eth0", 6, True) in cpu70.xdp_tx_rings


def test_ixgbe_128_cpus_every_ring_shared_by_two():
    got = rings(ixgbe(128))
    assert len(got) == 64 and all(len(cpus) == 2 and locked for _, cpus, locked in got)
    assert got[5][1] == (5, 69)


def test_ixgbe_130_cpus_attach_fails_with_enomem():
    sim = ixgbe(130, prog=None)
    res = sim.submit("ip link set dev eth0 xdp obj xdp_tx")
    assert not res.ok and res.errno == "ENOMEM"
    assert res.reply == "RTNETLINK answers: Cannot allocate memory"
    assert sim.frame().device("eth0").xdp is None
    assert rings(sim) == []


@pytest.mark.parametrize("cpus", [64, 96])
def test_ixgbe_xdp_tx_rings_exist_only_while_a_program_is_attached(cpus: int):
    sim = ixgbe(cpus, prog=None)
    assert rings(sim) == []
    assert sim.submit("ip link set dev eth0 xdp obj xdp_tx").ok
    assert len(rings(sim)) == 64
    assert sim.submit("ip link set dev eth0 xdp off").ok
    assert rings(sim) == []


def test_ixgbe_attach_resets_rings_and_blips_the_link():
    sim = ixgbe(8, prog=None)
    sim.run_until(1_000_000)
    before = counters(sim, "eth0")["rx_packets"]
    assert sim.submit("ip link set dev eth0 xdp obj xdp_drop").ok
    dev = sim.frame().device("eth0")
    assert not dev.carrier  # ixgbe_setup_tc: rings re-allocated, link down
    sim.run_until(2_000_000)
    assert counters(sim, "eth0")["rx_packets"] == before  # nothing received while down
    sim.run_until(5_000_000)
    assert sim.frame().device("eth0").carrier
    assert counters(sim, "eth0")["xdp_drop"] > 0
    assert sim.world.sources[0].lost > 0


def test_ixgbe_program_swap_is_hitless():
    sim = ixgbe(8, prog="xdp_drop")
    sim.run_until(1_000_000)
    assert sim.submit("ip -force link set dev eth0 xdp obj xdp_pass").ok
    assert sim.frame().device("eth0").carrier
    assert not any("link down" in e.cmd for e in sim.frame().events)
    sim.run_until(2_000_000)
    c = counters(sim, "eth0")
    waiting = sum(q.occupancy for q in sim.frame().device("eth0").queues)
    assert c["xdp_drop"] + c["xdp_pass"] == c["rx_packets"] == 2000 - waiting
    assert c["rx_dropped"] == 0


def test_ixgbe_shared_rings_cost_the_lock():
    # The same load on CPUs 0-3: with 96 CPUs their rings are shared under tx_lock.
    busy = {}
    for cpus in (64, 96):
        sim = ixgbe(cpus)
        sim.run_until(2_000_000)
        frame = sim.frame()
        busy[cpus] = sum(c.busy for c in frame.cpus[:4])
        eth0 = frame.device("eth0")
        waiting = sum(q.occupancy for q in eth0.queues) + sum(
            r.occupancy for r in eth0.xdp_tx_rings
        )
        assert counters(sim, "eth0")["tx_packets"] + waiting == 2000
    assert busy[96] > busy[64]
