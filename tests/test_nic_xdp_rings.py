"""The XDP TX rings of ice and mlx5 as their drivers lay them out: ice's per-RX-queue XDP_TX
ring (ice_map_xdp_rings / ice_xdp_ring_from_qid), its ring count and lock
(ice_vsi_determine_xdp_res, ice_xdp_locking_key), mlx5e_xdp_xmit's per-CPU channel and
mlx5e_set_xdp_feature (v6.19), mlx5's two XDPSQs per channel and its ethtool -S counters."""

from __future__ import annotations

import pytest
from conftest import counters, sim_of

from xdptui.sim.show import ethtool_stats
from xdptui.widgets.project import project


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


MLX5_VERDICTS = """
name: mlx5 verdicts
cpus: 2
devices:
  eth0: {type: nic, driver: mlx5, speed: 10G, queues: 1, irq_cpus: [1], tx_ring: 64,
         xdp: weird.py:verdict_by_port_mod8}
  eth1: {type: nic, driver: ice, queues: 1}
  eth2: {type: nic, driver: mlx5, queues: 1, xdp: xdp_pass}
  eth3: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
  eth4: {type: nic, driver: mlx5, queues: 1, xdp: {program: xdp_drop, mode: generic}}
  eth5: {type: nic, driver: ice, queues: 1, irq_cpus: [0],
         xdp: {program: redirect, params: {dev: eth0}}}
maps:
  tx_ports: {type: devmap, max_entries: 4, entries: {1: eth1, 2: eth2, 3: eth3}}
traffic:
  - {name: mix, to: eth0, rate: 2Mpps, count: 8000, flows: 8, src_port: 1000-1007}
  - {name: bounce, to: eth0, rate: 10Mpps, src_port: 1002}
  - {name: flood, to: eth5, rate: 20Mpps, src_port: 2000}
  - {name: gen, to: eth4, rate: 1Mpps, count: 500}
"""


def test_mlx5_rx_xdp_drop_counts_aborts_and_failed_xdp_tx_and_redirects():
    # mlx5e_xdp_handle (v6.19): XDP_TX that mlx5e_xmit_xdp_buff cannot queue and a redirect
    # xdp_do_redirect refuses `goto xdp_abort`: trace_xdp_exception, then fall through to
    # XDP_DROP's rq->stats->xdp_drop++; rq->stats->xdp_redirect counts only the redirects
    # xdp_do_redirect took. eth0 (polled on CPU 1) gets 8000 frames of eight verdict classes,
    # 1000 each: DROP, ABORTED, TX, PASS, and bpf_redirect_map keys 0-3 -- key 0 is missing
    # (the fallback XDP_ABORTED), key 1 is an ice port without a program (__xdp_enqueue:
    # EOPNOTSUPP, synchronous), key 2 an mlx5 port of one channel (its mlx5e_xdp_xmit answers
    # ENXIO to CPU 1 at flush, after xdp_do_redirect took the frames), key 3 an ice port with a
    # program. 10 Mpps of XDP_TX and 20 Mpps redirected in from eth5 fill eth0's 10G wire, so
    # XDP_TX frames meet a full SQ. Generic XDP on eth4 never reaches mlx5e_xdp_handle.
    sim = sim_of(MLX5_VERDICTS, exact=True)
    sim.run_until(5_000_000)
    f = sim.frame()
    c = counters(sim, "eth0")
    stats = dict(ethtool_stats(sim.world, sim.world.devices["eth0"]) or ())
    exceptions = {(x.dev, x.action): x.count for x in f.tracepoints.xdp_exception}
    errors = {(e.dev, e.err): e.count for e in f.tracepoints.xdp_redirect_err}
    xmit = {(m.from_dev, m.to_dev): m for m in f.tracepoints.xdp_devmap_xmit}
    failed_tx = exceptions[("eth0", "XDP_TX")]
    assert failed_tx > 0
    assert failed_tx == c["xdp_tx"] - stats["rx_xdp_tx_xmit"]
    assert errors == {("eth0", "EOPNOTSUPP"): 1000}
    assert exceptions[("eth0", "XDP_ABORTED")] == 2000
    assert exceptions[("eth0", "XDP_REDIRECT")] == 1000
    assert xmit[("eth0", "eth2")].drops == 1000  # bq_xmit_all: not eth0's RQ's to count
    assert stats["rx_xdp_drop"] == 1000 + 2000 + 1000 + failed_tx
    assert stats["rx_xdp_redirect"] == 2000
    generic = dict(ethtool_stats(sim.world, sim.world.devices["eth4"]) or ())
    assert counters(sim, "eth4")["xdp_drop"] == 500
    assert generic["rx_xdp_drop"] == 0


MLX5_SQS = """
name: mlx5 sqs
cpus: 4
devices:
  eth0: {type: nic, driver: mlx5, speed: 10G, queues: 2, tx_ring: 256, xdp: xdp_tx}
  eth1: {type: nic, driver: ice, queues: 4, xdp: {program: redirect, params: {dev: eth0}}}
traffic:
  - {name: bounce, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64}
  - {name: flood, to: eth1, rate: 40Mpps, flows: 64, src_ip: 198.19.0.1-198.19.0.64}
"""


def test_mlx5_xdp_tx_and_redirects_use_each_channels_two_xdpsqs():
    # mlx5e_open_queues (v6.19): a channel with a program has two XDPSQs -- the RQ's own
    # rq_xdpsq, where mlx5e_xdp_handle's XDP_TX goes (stats rx_xdp_tx_*), and the channel's
    # xdpsq, where mlx5e_xdp_xmit puts what CPU c redirected into channel c (tx_xdp_*; CPUs 2
    # and 3 have no channel on the 2-channel eth0: -ENXIO before any SQ). 40 Mpps redirected
    # in from eth1 fill the xdpsqs of CPUs 0 and 1; 1 Mpps of XDP_TX on their own SQs, far less
    # than their share of the 10G wire, never meet a full one. mlx5e_xmit_xdp_frame counts
    # xmit per frame queued and full per refusal; mlx5e_xdp_xmit's loop stops at its first
    # refusal, so tx_xdp_full is one per call (per bulk flush) that met a full xdpsq.
    sim = sim_of(MLX5_SQS, exact=True)
    sim.run_until(2_000_000)
    f = sim.frame()
    got = rings(sim)
    assert {r: (got[r].cpus, got[r].rx_queues) for r in got} == {
        0: ((), (0,)),
        1: ((0,), ()),
        2: ((), (1,)),
        3: ((1,), ()),
    }
    labels = [row.label for row in project(None, f).rings.rows if row.kind == "tx"]
    assert labels[:4] == ["eth0 tx0 rxq0", "eth0 tx1 cpu0", "eth0 tx2 rxq1", "eth0 tx3 cpu1"]
    c = counters(sim, "eth0")
    stats = dict(ethtool_stats(sim.world, sim.world.devices["eth0"]) or ())
    per_q = [q.rx_packets for q in f.device("eth0").queues]
    for ring, q in ((0, 0), (2, 1)):  # every XDP_TX frame of queue q is on its rq_xdpsq
        assert got[ring].dropped == 0
        assert got[ring].sent + got[ring].occupancy == per_q[q]
    assert stats["rx_xdp_tx_xmit"] == c["xdp_tx"] == sum(per_q)
    assert stats["rx_xdp_tx_full"] == 0
    refused = got[1].dropped + got[3].dropped
    assert got[1].dropped > 0 and got[3].dropped > 0
    (m,) = f.tracepoints.xdp_devmap_xmit
    assert stats["tx_xdp_xmit"] == m.sent
    flushes = [e for e in sim.events() if e["kind"] == "bq_flush"]
    assert m.err == sum(1 for e in flushes if e["cpu"] >= 2)  # -ENXIO, no xdpsq
    full_calls = sum(1 for e in flushes if e["cpu"] < 2 and e["drops"])
    assert stats["tx_xdp_full"] == full_calls < refused


MLX5_LINK = """
name: mlx5 link stats
cpus: 2
devices:
  eth0: {type: nic, driver: mlx5, speed: 10G, queues: 1, xdp: weird.py:verdict_by_port_mod8}
  eth1: {type: nic, driver: mlx5, speed: 10G, queues: 1, xdp: {program: xdp_drop, mode: generic}}
traffic:
  - {name: mixed, to: eth0, rate: 1Mpps, count: 4000, size: 100, flows: 4,
     src_port: 1000-1003}
  - {name: plain, to: eth1, rate: 1Mpps, count: 1000, size: 100}
  - {name: out, from: eth0, rate: 1Mpps, count: 500, size: 200}
"""


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_mlx5_ip_link_rx_and_tx_are_the_rqs_skbs_and_the_regular_sqs(exact: bool):
    # mlx5e_get_stats -> mlx5e_fold_sw_stats64 (v6.19): RX is the RQs' rq_stats->packets, which
    # mlx5e_complete_rx_cqe counts only for a frame that became an skb; TX the regular SQs'.
    # eth0's native program drops, aborts, bounces (XDP_TX on its XDPSQ) and passes 1000 frames
    # each: RX shows the 1000 passed, TX only the 500 the stack sent. Generic XDP runs
    # on an skb already built: eth1's 1000 frames all count, though the program drops them.
    from xdptui.sim.show import link_facts

    sim = sim_of(MLX5_LINK, exact=exact)
    sim.run_until(10_000_000)
    c = counters(sim, "eth0")
    assert (c["xdp_pass"], c["xdp_tx"], c["rx_packets"]) == (1000, 1000, 4000)
    rx = link_facts(sim.world, sim.world.devices["eth0"]).stats
    assert (rx["rx"]["packets"], rx["rx"]["bytes"]) == (1000, 1000 * 100)
    assert (rx["tx"]["packets"], rx["tx"]["bytes"]) == (500, 500 * 200)
    ethtool = dict(ethtool_stats(sim.world, sim.world.devices["eth0"]) or ())
    assert (ethtool["rx_packets"], ethtool["tx_packets"]) == (1000, 500)
    assert ethtool["rx_xdp_tx_xmit"] == 1000
    generic = link_facts(sim.world, sim.world.devices["eth1"]).stats
    assert generic["rx"]["packets"] == 1000 == counters(sim, "eth1")["xdp_drop"]
