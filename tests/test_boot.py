"""Boot: the topology's own commands, applied as a boot script would, each all or nothing.

Boot copies no state while its commands are accepted; a refused one sends it back to a fresh
host to apply them again one by one, so the refusal is recorded and undone alone."""

from __future__ import annotations

from conftest import topo

from xdptui.sim.engine import Simulator

REFUSED_AT_BOOT = """
name: one attach the kernel refuses
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2, xdp: {program: xdp_drop, mode: offload}}
  eth1: {type: nic, driver: i40e, queues: 2, xdp: xdp_pass}
maps:
  tx: {type: devmap, max_entries: 4, entries: {0: eth1}}
traffic:
  - {name: g, to: eth0, rate: 1Mpps}
"""


def test_a_refused_topology_command_is_recorded_and_undone_alone():
    """``xdpoffload`` on an ice port: ``dev_xdp_attach`` with a program loaded for no
    offload device is EINVAL. eth0 stays without a program (its frames go up the stack); the
    devmap entry and eth1's program, applied before and after it, are in place."""
    sim = Simulator(topo(REFUSED_AT_BOOT))
    boot = [(e.cmd, e.ok, e.errno) for e in sim.frame().events if e.origin == "topology"]
    assert boot == [
        ("bpftool map update name tx key 0 value eth1", True, None),
        ("ip link set dev eth0 xdpoffload obj xdp_drop", False, "EINVAL"),
        ("ip link set dev eth1 xdp obj xdp_pass", True, None),
    ]
    w = sim.world
    assert w.devices["eth0"].prog is None
    assert w.devices["eth1"].prog is not None
    assert w.maps["tx"].lookup(0) is not None
    sim.run_until(1_000_000)
    eth0 = sim.frame().device("eth0")
    c = dict(eth0.counters)
    # 1 Mpps for 1 ms: polled up the stack or still in a ring, none dropped by a program
    assert c["rx_packets"] + sum(q.occupancy for q in eth0.queues) == 1000
    assert c.get("xdp_drop", 0) == 0


def test_a_boot_with_a_refusal_reports_as_one_without_it_would_plus_the_refusal():
    """The refused command changes nothing: the same topology without it gives the same
    counters."""
    with_refusal = Simulator(topo(REFUSED_AT_BOOT))
    without = Simulator(
        topo(REFUSED_AT_BOOT.replace("xdp: {program: xdp_drop, mode: offload}", "mtu: 1500"))
    )
    for sim in (with_refusal, without):
        sim.run_until(2_000_000)
    a, b = with_refusal.report(), without.report()
    assert a["devices"] == b["devices"]
