"""ifindex redirects (bpf_redirect): the checks of __xdp_enqueue in order, the per-CPU bulk
queue of 16 flushed at the end of the poll, and ndo_xdp_xmit's sent prefix."""

from __future__ import annotations

from conftest import counters, sim_of

PAIR = """
name: redirect
cpus: 4
devices:
  eth0: {{type: nic, driver: ice, queues: 4, xdp: {{program: redirect, params: {{dev: eth1}}}}}}
  eth1: {{type: {target}}}
traffic:
  - {{name: g, to: eth0, rate: {rate}, size: {size}, flows: 64, src_ip: 198.18.0.1-198.18.0.64,
     count: {count}}}
"""


def pair(target: str, rate: str = "1Mpps", size: int = 64, count: int = 4000):  # type: ignore[no-untyped-def]
    return sim_of(PAIR.format(target=target, rate=rate, size=size, count=count))


def errs(sim) -> dict[tuple[str, str], int]:  # type: ignore[no-untyped-def]
    return {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}


def xmit(sim):  # type: ignore[no-untyped-def]
    return {(m.from_dev, m.to_dev): m for m in sim.frame().tracepoints.xdp_devmap_xmit}


def test_redirect_to_nic_without_program_is_eopnotsupp():
    # ice (like ixgbe) advertises NDO_XMIT only while it has an XDP program.
    sim = pair("nic, driver: ice")
    sim.run_until(10_000_000)
    assert errs(sim) == {("eth0", "EOPNOTSUPP"): 4000}
    exc = {(x.dev, x.action): x.count for x in sim.frame().tracepoints.xdp_exception}
    assert exc == {("eth0", "XDP_REDIRECT"): 4000}
    assert counters(sim, "eth0")["xdp_redirect"] == 4000  # the verdict is still counted
    assert counters(sim, "eth1")["tx_packets"] == 0


def test_redirect_to_nic_with_program_goes_through_ndo_xdp_xmit():
    sim = pair("nic, driver: ice, xdp: xdp_pass")
    sim.run_until(10_000_000)
    assert errs(sim) == {}
    assert counters(sim, "eth1")["xdp_xmit"] == 4000
    assert counters(sim, "eth1")["tx_packets"] == 4000
    m = xmit(sim)[("eth0", "eth1")]
    assert (m.sent, m.drops, m.err) == (4000, 0, 0)
    assert sim.frame().tracepoints.xdp_redirect == 4000


def test_redirect_target_down_is_enetdown():
    sim = pair("nic, driver: ice, xdp: xdp_pass, up: false")
    sim.run_until(10_000_000)
    assert errs(sim) == {("eth0", "ENETDOWN"): 4000}


def test_redirect_frame_longer_than_target_mtu_is_emsgsize():
    # xdp_ok_fwd_dev: len > mtu + ETH_HLEN + VLAN_HLEN = 1000 + 18
    sim = sim_of("""
        name: mtu
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 2,
                 xdp: {program: redirect, params: {dev: eth1}}}
          eth1: {type: nic, driver: ice, mtu: 1000, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, size: [1000, 1500], count: 1000}
    """)
    sim.run_until(5_000_000)
    assert errs(sim) == {("eth0", "EMSGSIZE"): 500}
    assert counters(sim, "eth1")["tx_packets"] == 500


def test_redirect_to_missing_ifindex_is_einval():
    sim = sim_of(
        PAIR.format(target="nic", rate="1Mpps", size=64, count=100).replace(
            "{program: redirect, params: {dev: eth1}}", "weird.py:redirect_nowhere"
        )
    )
    sim.run_until(5_000_000)
    assert errs(sim) == {("eth0", "EINVAL"): 100}


def test_bulk_queue_flushes_at_poll_end_at_light_load():
    # 10 Kpps: frames 100 us apart, more than rx-usecs (50 us): every interrupt's poll finds
    # one frame, so every flush at the end of a poll carries one frame.
    sim = pair("nic, driver: ice, xdp: xdp_pass", rate="10Kpps", count=200)
    sim.run_until(21_000_000)
    m = xmit(sim)[("eth0", "eth1")]
    assert m.sent == 200
    assert m.flushes == 200


def test_bulk_queue_sends_16_at_a_time_when_saturated():
    # 100 Mpps into 4 queues saturates the CPUs: polls of 64 frames = 4 flushes of 16.
    sim = pair("nic, driver: ice, xdp: xdp_pass", rate="100Mpps", count=10**9)
    sim.run_until(2_000_000)
    m = xmit(sim)[("eth0", "eth1")]
    avg = (m.sent + m.drops) / m.flushes
    assert 15.5 <= avg <= 16.0


def test_ndo_xdp_xmit_refuses_what_the_tx_ring_cannot_hold():
    # 20 Mpps of 64B redirected into a 10G port (14.88 Mpps line rate): the XDP ring fills,
    # the driver sends a prefix, devmap frees and counts the rest as drops.
    sim = sim_of("""
        name: overflow
        cpus: 4
        devices:
          eth0: {type: nic, driver: ice, queues: 4, xdp: {program: redirect, params: {dev: eth1}}}
          eth1: {type: nic, driver: ixgbe, speed: 10G, queues: 4, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 20Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64}
    """)
    sim.run_until(5_000_000)
    m = xmit(sim)[("eth0", "eth1")]
    c1 = counters(sim, "eth1")
    assert m.drops > 0
    assert c1["xdp_xmit_errors"] == m.drops
    assert c1["xdp_xmit"] == m.sent + m.drops
    # what left eth1 is its line rate: 10e9 / (84 * 8) frames per second
    line = 10e9 / (84 * 8)
    assert abs(c1["tx_packets"] / 5e-3 - line) / line < 0.01


def test_i40e_ndo_xdp_xmit_past_its_queue_pairs_is_enxio():
    # i40e_xdp_xmit uses xdp_rings[smp_processor_id()]: CPUs 2 and 3 have none on a
    # 2-queue-pair i40e, so their bulks fail whole (drv_err in xdp-monitor).
    sim = sim_of("""
        name: enxio
        cpus: 4
        devices:
          eth0: {type: nic, driver: ice, queues: 4, xdp: {program: redirect, params: {dev: eth1}}}
          eth1: {type: nic, driver: i40e, speed: 40G, queues: 2, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64, count: 4000}
    """)
    sim.run_until(10_000_000)
    m = xmit(sim)[("eth0", "eth1")]
    per_cpu = [q.rx_packets for q in sim.frame().device("eth0").queues]
    assert m.sent == per_cpu[0] + per_cpu[1]
    assert m.drops == per_cpu[2] + per_cpu[3]
    assert m.err > 0
    assert counters(sim, "eth1")["xdp_xmit_errors"] == m.drops


def test_generic_redirect_takes_the_skb_path_without_bulk_queue():
    sim = sim_of("""
        name: generic
        cpus: 2
        devices:
          eth0: {type: nic, driver: generic, queues: 2,
                 xdp: {program: redirect, params: {dev: eth1}}}
          eth1: {type: nic, driver: generic}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, count: 1000}
    """)
    sim.run_until(5_000_000)
    assert sim.frame().device("eth0").xdp.mode == "generic"  # type: ignore[union-attr]
    assert sim.frame().tracepoints.xdp_devmap_xmit == ()
    assert errs(sim) == {}
    assert counters(sim, "eth1")["tx_packets"] == 1000
