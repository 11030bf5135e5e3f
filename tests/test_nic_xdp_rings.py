"""The XDP TX rings of ice and mlx5 as their drivers lay them out: ice's per-RX-queue XDP_TX
ring (ice_map_xdp_rings / ice_xdp_ring_from_qid), its ring count and lock
(ice_vsi_determine_xdp_res, ice_xdp_locking_key), mlx5e_xdp_xmit's per-CPU channel and
mlx5e_set_xdp_feature (v6.19), and mlx5's rx_xdp_tx_xmit."""

from __future__ import annotations

from conftest import counters, sim_of

from xdptui.sim.show import ethtool_stats


def rings(sim, dev: str = "eth0"):  # type: ignore[no-untyped-def]
    return {r.ring: r for r in sim.frame().device(dev).xdp_tx_rings}


ICE = """
name: ice
cpus: {cpus}
devices:
  eth0: {{type: nic, driver: ice, queues: {queues}{xdp}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64, count: 4000}}
"""


def ice(cpus: int, queues: int, prog: str | None = "xdp_tx"):  # type: ignore[no-untyped-def]
    return sim_of(ICE.format(cpus=cpus, queues=queues, xdp=f", xdp: {prog}" if prog else ""))


def test_ice_xdp_tx_uses_the_rx_queues_paired_ring_not_the_cpus():
    # 4 CPUs, 2 queues: num_xdp_txq = min(free TX queues, 4) = 4, no lock. ice_map_xdp_rings
    # deals DIV_ROUND_UP(4, 2) = 2 rings to each vector (0-1, 2-3), pushing each on the head
    # of the vector's ring list, so ice_xdp_ring_from_qid finds ring 1 for queue 0 and ring 3
    # for queue 1.
    sim = ice(4, 2)
    sim.run_until(10_000_000)
    got = rings(sim)
    assert {r: got[r].rx_queues for r in got} == {0: (), 1: (0,), 2: (), 3: (1,)}
    per_q = [q.rx_packets for q in sim.frame().device("eth0").queues]
    assert [got[r].sent + got[r].dropped for r in range(4)] == [0, per_q[0], 0, per_q[1]]
    assert sum(per_q) == 4000


def test_ice_ndo_xdp_xmit_ring_is_the_cpus_own():
    # ice_xdp_xmit without the locking key: xdp_rings[smp_processor_id()].
    got = rings(ice(4, 2))
    assert {r: got[r].cpus for r in got} == {0: (0,), 1: (1,), 2: (2,), 3: (3,)}
    assert not any(r.locked for r in got.values())


def test_ice_fewer_free_tx_queues_than_cpus_share_rings_under_lock():
    # 200 CPUs, 64 LAN queues of the PF's 256: 192 free >= 200 / 2, so num_xdp_txq = 192 < 200
    # and ice_xdp_locking_key is on: CPU c sends on ring c % 192, queue q's XDP_TX on q % 192.
    got = rings(ice(200, 64))
    assert len(got) == 192
    assert got[3].cpus == (3, 195) and got[3].locked
    assert got[3].rx_queues == (3,)
    assert got[100].rx_queues == ()


def test_ice_too_few_free_tx_queues_for_half_the_cpus_is_enomem():
    # 200 CPUs, 160 LAN queues: 96 free < 200 / 2 -> "Not enough Tx resources for XDP".
    sim = ice(200, 160, prog=None)
    res = sim.submit("ip link set dev eth0 xdp obj xdp_tx")
    assert not res.ok and res.errno == "ENOMEM"
    assert sim.frame().device("eth0").xdp is None


REDIRECT = """
name: mlx5
cpus: 4
devices:
  eth0: {{type: nic, driver: ice, queues: 4, xdp: {{program: redirect, params: {{dev: eth1}}}}}}
  eth1: {{type: nic, driver: mlx5, queues: 2{xdp}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64, count: 4000}}
"""


def test_mlx5_without_a_program_is_no_redirect_target_since_v6_19():
    # mlx5e_set_xdp_feature (v6.19, d4aa0cc9bd31): NDO_XMIT only with params->xdp_prog, so
    # __xdp_enqueue answers -EOPNOTSUPP for every frame.
    sim = sim_of(REDIRECT.format(xdp=""))
    sim.run_until(10_000_000)
    got = {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}
    assert got == {("eth0", "EOPNOTSUPP"): 4000}
    assert counters(sim, "eth1")["tx_packets"] == 0


def test_mlx5_xdp_xmit_from_a_cpu_past_the_channel_count_is_enxio():
    # mlx5e_xdp_xmit: sq_num = smp_processor_id(); sq_num >= channels.num -> -ENXIO. With 2
    # channels, the bulks of CPUs 2 and 3 (queues 2 and 3 of eth0) fail whole.
    sim = sim_of(REDIRECT.format(xdp=", xdp: xdp_pass"))
    sim.run_until(10_000_000)
    m = {(x.from_dev, x.to_dev): x for x in sim.frame().tracepoints.xdp_devmap_xmit}
    m = m[("eth0", "eth1")]
    per_cpu = [q.rx_packets for q in sim.frame().device("eth0").queues]
    assert m.sent == per_cpu[0] + per_cpu[1] > 0
    assert m.drops == per_cpu[2] + per_cpu[3] > 0
    assert counters(sim, "eth1")["xdp_xmit_errors"] == m.drops


def test_mlx5_rx_xdp_tx_xmit_counts_frames_sent_not_verdicts():
    # mlx5e_xdp_handle: XDP_TX -> mlx5e_xmit_xdp_buff on rq->xdpsq; the SQ counts xmit for a
    # frame it queued and full for one it refused, so rx_xdp_tx_xmit + rx_xdp_tx_full equals
    # the XDP_TX verdicts. The port also gets redirected frames (10 Mpps) on top of its own
    # 10G line of XDP_TX, more than its wire takes, so its rings fill.
    sim = sim_of("""
        name: mlx5tx
        cpus: 2
        devices:
          eth0: {type: nic, driver: mlx5, speed: 10G, queues: 2, tx_ring: 256, xdp: xdp_tx}
          eth1: {type: nic, driver: ice, queues: 2, xdp: {program: redirect, params: {dev: eth0}}}
        traffic:
          - {name: a, to: eth0, rate: line, flows: 64, src_ip: 198.18.0.1-198.18.0.64}
          - {name: b, to: eth1, rate: 10Mpps, flows: 64, src_ip: 198.19.0.1-198.19.0.64}
    """)
    sim.run_until(5_000_000)
    dev = sim.world.devices["eth0"]
    c = counters(sim, "eth0")
    stats = dict(ethtool_stats(sim.world, dev) or ())
    assert c["xdp_tx_errors"] > 0
    assert stats["rx_xdp_tx_xmit"] + stats["rx_xdp_tx_full"] == c["xdp_tx"]
    assert stats["rx_xdp_tx_xmit"] < c["xdp_tx"]
