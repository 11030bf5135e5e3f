"""veth pairs: a send on one end is RX on the peer; XDP frames need the receiving end's NAPI,
which exists only while that end has an XDP program (veth_xdp_xmit, veth_set_xdp_features)."""

from __future__ import annotations

import random

import pytest
from conftest import counters, sim_of

from xdptui.sim.dev.veth import backlog_room, process_queue_after
from xdptui.sim.kconst import NAPI_POLL_WEIGHT, NETDEV_MAX_BACKLOG
from xdptui.sim.show import ethtool_stats

NIC_TO_VETH = """
name: nic-veth
cpus: 2
devices:
  eth0: {{type: nic, driver: ice, queues: 2, xdp: {{program: redirect, params: {{dev: veth0}}}}}}
  veth0: {{type: veth, peer: veth1}}
  veth1: {{type: veth, peer: veth0{peer_xdp}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, count: 2000}}
"""


def test_redirect_into_veth_needs_an_xdp_program_on_its_peer():
    sim = sim_of(NIC_TO_VETH.format(peer_xdp=""))
    sim.run_until(5_000_000)
    errs = {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}
    assert errs == {("eth0", "EOPNOTSUPP"): 2000}
    assert counters(sim, "veth1")["rx_packets"] == 0


def test_redirect_into_veth_runs_the_peer_program_on_the_same_cpu():
    sim = sim_of(NIC_TO_VETH.format(peer_xdp=", xdp: xdp_drop"))
    sim.run_until(5_000_000)
    assert counters(sim, "veth0")["xdp_xmit"] == 2000
    assert counters(sim, "veth0")["tx_packets"] == 2000
    assert counters(sim, "veth1")["rx_packets"] == 2000
    assert counters(sim, "veth1")["xdp_drop"] == 2000
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert (m.from_dev, m.to_dev, m.sent, m.drops) == ("eth0", "veth0", 2000, 0)


def test_stack_send_out_of_veth_arrives_on_the_peer():
    sim = sim_of("""
        name: stack
        cpus: 2
        devices:
          veth0: {type: veth, peer: veth1}
        traffic:
          - {name: app, from: veth0, rate: 100Kpps, count: 500}
    """)
    sim.run_until(10_000_000)
    assert counters(sim, "veth0")["tx_packets"] == 500
    assert counters(sim, "veth1")["rx_packets"] == 500
    assert counters(sim, "veth1")["xdp_pass"] == 0  # no program: straight up the stack


def test_veth_xdp_tx_reaches_the_peer_only_while_it_has_a_program():
    text = (
        ROOT_VETH := """
        name: bounce
        cpus: 2
        devices:
          veth0: {type: veth, peer: veth1, xdp: xdp_drop}
          veth1: {type: veth, peer: veth0, xdp: xdp_tx}
        traffic:
          - {name: app, from: veth0, rate: 100Kpps, count: 400}
        timeline:
          - {at: 2ms, do: "ip link set dev veth0 xdp off"}
    """
    )
    assert ROOT_VETH
    sim = sim_of(text)
    sim.run_until(10_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert c1["xdp_tx"] == 400
    # 100 Kpps, frame n at (n + 1) x 10 us: the 199 frames before 2 ms bounce back and are
    # dropped by veth0's program. The 200th, polled by veth1 at 2 ms itself, is in veth0's
    # ring as the program goes: veth_napi_del frees it, counted nowhere. The 200 after it
    # fail with -ENXIO.
    assert c0["xdp_drop"] == 199
    assert c0["rx_packets"] == 199
    assert c1["xdp_tx_errors"] == 200


def test_veth_xdp_tx_without_a_peer_program_fails_the_bulk_with_enxio():
    sim = sim_of("""
        name: bounce
        cpus: 1
        devices:
          veth0: {type: veth, peer: veth1}
          veth1: {type: veth, peer: veth0, xdp: xdp_tx}
        traffic:
          - {name: app, from: veth0, rate: 100Kpps, count: 300}
    """)
    sim.run_until(10_000_000)
    f = sim.frame()
    # veth_xdp_flush_bq: veth_xdp_xmit finds no rq->napi on veth0 -> -ENXIO, every frame of
    # the bulk dropped; xdp:xdp_bulk_tx carries the error and xdp_exception stays silent
    assert f.tracepoints.xdp_exception == ()
    bulk = {(b.dev, b.err): (b.sent, b.drops) for b in f.tracepoints.xdp_bulk_tx}
    assert bulk == {("veth1", "ENXIO"): (0, 300)}
    # rq xdp_tx_err: veth_get_stats64 shows it as veth1's tx_dropped and veth0's rx_dropped
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert (c1["xdp_tx_errors"], c1["tx_dropped"], c0["rx_dropped"]) == (300, 300, 300)
    stats = dict(ethtool_stats(sim.world, sim.world.devices["veth1"]) or ())
    assert (stats["rx_queue_0_xdp_tx"], stats["rx_queue_0_xdp_tx_errors"]) == (0, 300)


def test_redirect_into_a_veth_whose_peer_is_down_is_the_targets_tx_dropped():
    sim = sim_of(NIC_TO_VETH.format(peer_xdp=", xdp: xdp_drop"))
    assert sim.submit("ip link set dev veth1 down").ok
    sim.run_until(5_000_000)
    # veth_ndo_xdp_xmit: veth_xdp_xmit returns -ENXIO (no rq->napi) before any rq stats;
    # the whole bulk goes to priv->dropped, veth0's tx_dropped
    c0 = counters(sim, "veth0")
    assert (c0["tx_dropped"], c0["xdp_xmit"], c0["xdp_xmit_errors"]) == (2000, 0, 0)
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert (m.to_dev, m.sent, m.drops) == ("veth0", 0, 2000)


def test_veth_peer_down_takes_carrier_away():
    sim = sim_of("""
        name: carrier
        cpus: 1
        devices:
          veth0: {type: veth, peer: veth1}
    """)
    assert sim.frame().device("veth0").carrier
    assert sim.submit("ip link set dev veth1 down").ok
    assert not sim.frame().device("veth0").carrier
    assert sim.submit("ip link set dev veth1 up").ok
    assert sim.frame().device("veth0").carrier


BUSY_VETH = """
name: a veth ring kept full
cpus: 1
devices:
  eth0: {type: nic, driver: i40e, speed: 40G, queues: 1,
         xdp: {program: redirect, params: {dev: veth0}}}
  veth0: {type: veth, peer: veth1}
  veth1: {type: veth, peer: veth0, xdp: xdp_pass}
traffic:
  - {name: g, to: eth0, rate: 8Mpps, size: 64}
"""


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("ip link set dev veth1 xdp off", "XDP program removed"),
        ("ip link set dev veth1 down", "down"),
    ],
)
def test_what_a_veths_ring_holds_is_freed_uncounted_when_its_napi_goes(
    exact: bool, how: str, why: str
):
    # veth_disable_xdp (the program removed while up; veth_close with a program attached)
    # -> veth_napi_del -> ptr_ring_cleanup(veth_ptr_free): the frames the rq's ring held are
    # freed, never polled, in no statistic (xdp_packets, and so rx_packets, count polled ones)
    sim = sim_of(BUSY_VETH, exact=exact)
    sim.run_until(999_000)
    held = sum(q.occupancy for q in sim.frame().device("veth1").queues)
    assert held > 0  # xdp_pass up the stack is slower than eth0 sends: the ring is busy
    before = counters(sim, "veth1")
    assert sim.submit(how).ok
    sim.run_until(2_000_000)
    after = counters(sim, "veth1")
    assert after["rx_packets"] == before["rx_packets"]
    assert after["xdp_pass"] == before["xdp_pass"]
    assert after["rx_dropped"] == before["rx_dropped"]
    # veth_get_stats64: veth0's tx_packets are veth1's rq xdp_packets, so never the freed
    assert counters(sim, "veth0")["tx_packets"] == after["rx_packets"]
    assert sum(q.occupancy for q in sim.frame().device("veth1").queues) == 0
    said = [e.cmd for e in sim.frame().events if "veth_napi_del" in e.cmd]
    assert said == [f"veth1: {why}: veth_napi_del freed the {held} frames its rings held"]


STACK_OUT_OF_VETH = """
name: the stack sending out of veth0
cpus: 1
devices:
  veth0: {type: veth, peer: veth1}
  veth1: {type: veth, peer: veth0}
traffic:
  - {name: app, from: veth0, rate: 100Kpps, count: 300}
"""


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("how", "dropped", "lost"),
    [("ip link set dev veth1 down", 300, 0), ("ip link set dev veth0 down", 0, 300)],
    ids=["peer down: no carrier", "itself down"],
)
def test_the_stack_sending_out_of_a_veth_that_cannot_send(
    exact: bool, how: str, dropped: int, lost: int
):
    # veth1 down takes veth0's carrier: dev_deactivate left veth0 the noop qdisc, where
    # __dev_queue_xmit drops each skb (veth0's tx_dropped, QDISC_DROP); veth0 itself down:
    # packet_snd fails with -ENETDOWN and no device counts them (the source's
    # lost_link_down). Either way veth_xmit never runs and veth1 counts nothing.
    sim = sim_of(STACK_OUT_OF_VETH, exact=exact)
    assert sim.submit(how).ok
    sim.run_until(5_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert (c0["tx_packets"], c0["tx_dropped"]) == (0, dropped)
    assert (c1["rx_packets"], c1["rx_dropped"]) == (0, 0)
    assert sim.report()["traffic"]["app"]["lost_link_down"] == lost


GENERIC_INTO_VETH = NIC_TO_VETH.replace("program: redirect,", "program: redirect, mode: generic,")


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize("peer_xdp", ["", ", xdp: xdp_drop"], ids=["no program", "native"])
def test_generic_redirect_into_a_veth_whose_peer_is_down_counts_on_both_ends(
    exact: bool, peer_xdp: str
):
    # generic_xdp_tx calls veth_xmit whatever veth0's carrier; __dev_forward_skb2 refuses
    # each skb for vb being down: veth1's rx_dropped (dev_core_stats_rx_dropped_inc) and
    # veth0's tx_dropped (priv->dropped), the whole source's 2000 frames
    sim = sim_of(GENERIC_INTO_VETH.format(peer_xdp=peer_xdp), exact=exact)
    assert sim.submit("ip link set dev veth1 down").ok
    sim.run_until(5_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert (c0["tx_packets"], c0["tx_dropped"]) == (0, 2000)
    assert (c1["rx_packets"], c1["rx_dropped"]) == (0, 2000)


FLOOD_INTO_VETH = """
name: the stack flooding a veth
cpus: 1
devices:
  veth0: {type: veth, peer: veth1}
  veth1: {type: veth, peer: veth0PEER}
traffic:
  - {name: app, from: veth0, rate: 8Mpps, size: 64, flows: 32, src_port: 4000-4031}
"""


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("peer", "backlog"),
    [("", True), (", xdp: {program: xdp_pass, mode: generic}", True), (", xdp: xdp_pass", False)],
    ids=["no program", "generic", "native"],
)
def test_skbs_a_full_veth_queue_refuses_count_on_the_peer_only_from_its_backlog(
    exact: bool, peer: str, backlog: bool
):
    # veth_xmit's NET_RX_DROP is the sender's priv->dropped either way; enqueue_to_backlog
    # (no native program: __netif_rx) also counts skb->dev's rx_dropped, a full ptr_ring
    # (native: veth_xdp_rx) does not
    sim = sim_of(FLOOD_INTO_VETH.replace("PEER", peer), exact=exact)
    sim.run_until(2_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert c0["tx_dropped"] > 1000  # more than veth1's CPU takes
    assert c1["rx_dropped"] == (c0["tx_dropped"] if backlog else 0)


BYTES = """
name: bytes through the rings
cpus: 1
devices:
  veth0: {type: veth, peer: veth1, xdp: xdp_drop}
  veth1: {type: veth, peer: veth0PEER}
traffic:
  - {name: app, from: veth0, rate: 100Kpps, count: 300, size: 200}
"""


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("peer", "ring"),
    [(", xdp: xdp_tx", True), (", xdp: {program: xdp_tx, mode: generic}", False), ("", False)],
    ids=["native", "generic", "none"],
)
def test_what_a_veth_counts_in_bytes(exact: bool, peer: str, ring: bool):
    # veth_xdp_rcv counts an skb's skb->len, which __dev_forward_skb left without its
    # 14-byte Ethernet header, and an xdp_frame's whole length: veth1's ring (native)
    # holds the app's skbs, veth0's ring holds veth1's XDP_TX frames. Without a native
    # program on veth1 the skbs go to its backlog, counted whole on both ends
    # (dev_sw_netstats_tx_add with the length veth_xmit took).
    sim = sim_of(BYTES.replace("PEER", peer), exact=exact)
    sim.run_until(5_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    skb = 200 - 14 if ring else 200
    assert (c1["rx_packets"], c1["rx_bytes"]) == (300, 300 * skb)
    assert c0["tx_bytes"] == 300 * skb
    stats1 = dict(ethtool_stats(sim.world, sim.world.devices["veth1"]) or ())
    assert stats1["rx_queue_0_xdp_bytes"] == (300 * skb if ring else 0)
    if peer:  # veth1's XDP_TX into veth0's ring: native, xdp_frames of their whole length;
        # generic (generic_xdp_tx -> veth_xmit), skbs
        back = 200 if ring else 200 - 14
        stats0 = dict(ethtool_stats(sim.world, sim.world.devices["veth0"]) or ())
        assert (c0["rx_packets"], c0["rx_bytes"]) == (300, 300 * back)
        assert stats0["rx_queue_0_xdp_bytes"] == 300 * back
        assert c1["tx_bytes"] == 300 * back


GENERIC_FLOOD = BUSY_VETH.replace("program: redirect,", "program: redirect, mode: generic,")


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    "text",
    [BUSY_VETH, GENERIC_FLOOD.replace(", xdp: xdp_pass", ""), FLOOD_INTO_VETH.replace("PEER", "")],
    ids=["ring", "backlog, generic redirect", "backlog, the stack"],
)
def test_a_veths_tx_is_its_peers_rx_at_every_instant(exact: bool, text: str):
    # veth_get_stats64 reads one counter for both: frames through the peer's ring are the
    # rq's xdp_packets (counted as its NAPI takes them), frames into its backlog the
    # sender's sw stats (counted as veth_xmit queues them) -- even while the queue is busy
    sim = sim_of(text, exact=exact)
    busy = 0
    for at in range(250_000, 2_000_001, 250_000):
        sim.run_until(at)
        c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
        assert (c0["tx_packets"], c0["tx_bytes"]) == (c1["rx_packets"], c1["rx_bytes"])
        busy += sum(q.occupancy for q in sim.frame().device("veth1").queues) > 0
    assert busy  # (the queue held frames at some of these instants)


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("how", "why"),
    [("ip link set dev veth1 down", "down"), ("ip link set dev veth1 xdp obj xdp_pass",
                                               "native program attached")],
)  # fmt: skip
def test_a_veths_backlog_is_the_cpus(exact: bool, how: str, why: str):
    # the skbs veth_xmit queued without rq->napi wait in the CPU's backlog: dev_close and
    # veth_enable_xdp leave them to process_backlog, up the stack -- counted when queued,
    # never dropped, and never through the new native program
    sim = sim_of(FLOOD_INTO_VETH.replace("PEER", ""), exact=exact)
    sim.run_until(999_000)
    held = sum(q.occupancy for q in sim.frame().device("veth1").queues)
    assert held > 0
    before = counters(sim, "veth1")
    assert sim.submit(how).ok
    after = counters(sim, "veth1")
    assert (after["rx_packets"], after["rx_dropped"]) == (
        before["rx_packets"],
        before["rx_dropped"],
    )
    assert after["xdp_pass"] == 0
    assert sum(q.occupancy for q in sim.frame().device("veth1").queues) == 0
    said = [e.cmd for e in sim.frame().events if "process_backlog" in e.cmd]
    assert said == [f"veth1: {why}: process_backlog takes the {held} skbs its backlog held"]
    sim.run_until(2_000_000)
    c0, c1 = counters(sim, "veth0"), counters(sim, "veth1")
    assert c0["tx_packets"] == c1["rx_packets"]


def test_the_backlogs_closed_form_is_process_backlogs_two_queues():
    # enqueue_to_backlog and process_backlog written out as the kernel has them -- two
    # queues, the input queue's limit, the splice whenever process_queue empties with quota
    # left -- against the counts xdptui keeps (held, and how many of them are in
    # process_queue), over a long mixed sequence of arrivals and polls
    rng = random.Random(7)
    process, inp = 0, 0  # the kernel's two queues' lengths
    held, proc = 0, 0  # xdptui's
    size = NETDEV_MAX_BACKLOG + 1
    for _ in range(20_000):
        if rng.random() < 0.6:  # a burst of skbs from veth_xmit
            n = rng.randrange(1, 200)
            took = 0
            for _ in range(n):  # enqueue_to_backlog: qlen <= max_backlog
                if inp <= NETDEV_MAX_BACKLOG:
                    inp += 1
                    took += 1
            assert min(n, backlog_room(size, held, proc)) == took
            held += took
        else:  # one process_backlog poll
            work = 0
            while True:
                d = min(process, NAPI_POLL_WEIGHT - work)
                process -= d
                work += d
                if work >= NAPI_POLL_WEIGHT or not inp:
                    break
                process, inp = process + inp, 0  # skb_queue_splice_tail_init
            k = min(NAPI_POLL_WEIGHT, held)
            assert k == work
            proc = process_queue_after(proc, held, k)
            held -= k
        assert (held, proc) == (process + inp, process)


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("peer", "backlog"), [("", True), (", xdp: xdp_pass", False)], ids=["backlog", "ring"]
)
def test_what_a_busy_veth_queue_holds(exact: bool, peer: str, backlog: bool):
    # a native program's ptr_ring holds VETH_RING_SIZE (256); the backlog's input queue
    # takes an skb while it holds at most netdev_max_backlog (1000), and process_backlog
    # moves it whole into process_queue, so the backlog holds more than 1001 under load
    # but never twice that
    sim = sim_of(FLOOD_INTO_VETH.replace("PEER", peer), exact=exact)
    sim.run_until(2_000_000)
    (q,) = sim.frame().device("veth1").queues
    dropped = counters(sim, "veth0")["tx_dropped"]
    assert dropped > 1000
    if backlog:
        assert 1001 < q.peak <= 2002
    else:
        assert q.peak == 256
    if exact:  # the drop events say which queue refused them
        where = "backlog_full" if backlog else "veth_ring_full"
        drops = [e for e in sim.events() if e["kind"] == "drop"]
        assert {e["where"] for e in drops} == {where}
        assert sum(e["frames"] for e in drops) == dropped
