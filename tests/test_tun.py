"""tun/tap with XDP (drivers/net/tun.c, seed tun-xdp.txt): which writes take the fast path,
the verdicts on both paths, XDP_TX back to userspace, redirects out of and into a tap."""

from __future__ import annotations

import pytest
from conftest import counters, sim_of

TAP = """
name: tap
cpus: 2
devices:
  tap0: {{type: tun, mode: {mode}, queues: {queues}, reader: {reader}{opts}, xdp: {prog}}}
  eth0: {{type: nic, driver: ixgbe, speed: 10G, queues: 1, xdp: xdp_pass}}
traffic:
  - {{name: vm, to: tap0, rate: {rate}, count: 1000, flows: 4{traffic}}}
"""


def tap(
    prog: str = "xdp1",
    mode: str = "tap",
    opts: str = "",
    traffic: str = "",
    reader: str = "10Mpps",
    queues: int = 1,
    rate: str = "1Mpps",
):  # type: ignore[no-untyped-def]
    sim = sim_of(
        TAP.format(
            prog=prog,
            mode=mode,
            opts=opts,
            traffic=traffic,
            reader=reader,
            queues=queues,
            rate=rate,
        )
    )
    sim.run_until(10_000_000)
    return sim


def paths(sim) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    c = counters(sim, "tap0")
    return c["xdp_fast_path"], c["xdp_generic_path"]


def reasons(sim) -> dict[str, int]:  # type: ignore[no-untyped-def]
    tap = sim.frame().device("tap0").tap
    assert tap is not None
    return {k: v for k, v in tap.slow_path if v}


def test_small_nonblocking_writes_take_the_fast_path():
    sim = tap()
    assert paths(sim) == (1000, 0)
    c = counters(sim, "tap0")
    assert c["xdp_drop"] == 1000 and c["rx_dropped"] == 1000  # tun_xdp_act: rx_dropped++


@pytest.mark.parametrize(
    ("opts", "traffic", "reason"),
    [
        ("", ", gso: 1.0", "gso"),
        ("", ", size: 3500", "too big"),
        (", blocking: true", "", "blocking"),
        (", zerocopy: true", "", "zerocopy"),
        (", sndbuf: 212992", "", "sndbuf"),
        (", napi_frags: true", "", "napi frags"),
    ],
)
def test_each_tun_can_build_skb_condition_sends_writes_to_the_slow_path(
    opts: str, traffic: str, reason: str
):
    sim = tap(opts=opts, traffic=traffic)
    assert paths(sim) == (0, 1000)
    assert reasons(sim) == {reason: 1000}
    c = counters(sim, "tap0")
    # generic XDP drops the skb: xdp_drop, but not tun's rx_dropped
    assert c["xdp_drop"] == 1000 and c["rx_dropped"] == 0


def test_fast_path_limit_leaves_the_virtio_net_header_out():
    # tun_get_user takes the 12-byte vnet header off len first; tun_can_build_skb then needs
    # SKB_DATA_ALIGN(len + 64 TUN_RX_PAD + 256 headroom) + 320 <= 4096: len <= 3456
    assert paths(tap(traffic=", size: 3456")) == (1000, 0)
    assert paths(tap(traffic=", size: 3457")) == (0, 1000)
    assert paths(tap(opts=", vnet_hdr: false", traffic=", size: 3456")) == (1000, 0)


def test_gso_share_splits_the_paths():
    fast, slow = paths(tap(traffic=", gso: 0.25"))
    assert (fast, slow) == (750, 250)


def test_l3_tun_has_no_native_xdp():
    sim = tap(mode="tun", prog="xdp_drop")
    assert sim.frame().device("tap0").xdp.mode == "generic"  # type: ignore[union-attr]
    assert reasons(sim) == {"tun (L3)": 1000}
    res = sim.submit("ip link set dev tap0 xdpgeneric off")
    assert res.ok
    res = sim.submit("ip link set dev tap0 xdpdrv obj xdp_drop")
    assert res.errno == "EOPNOTSUPP"
    assert res.reply == "Error: Underlying driver does not support XDP in native mode."


def test_xdp_tx_goes_back_to_userspace_on_queue_cpu_mod_numqueues():
    sim = tap(prog="xdp_tx", queues=2)
    c = counters(sim, "tap0")
    assert c["xdp_tx"] == 1000 and c["tx_packets"] == 1000
    rings = sim.frame().device("tap0").xdp_tx_rings
    # queue q's writer runs on CPU q % 2, so its XDP_TX lands on ring (q % 2) % 2 = q
    assert [r.sent for r in rings] == [q.rx_packets for q in sim.frame().device("tap0").queues]


def test_xdp_tx_into_a_full_tap_ring_counts_tx_dropped():
    # 1000 frames written in 1 ms, bounced by XDP_TX; a 100-slot ring and a 50 Kpps reader
    # take 100 + 50 of them; every other tun_xdp_xmit call (one frame each) meets a full ring.
    sim = tap(prog="xdp_tx", reader="50Kpps", opts=", tx_queue_len: 100")
    c = counters(sim, "tap0")
    assert c["tx_packets"] in (150, 151)  # the reader's last fraction of a frame
    assert c["tx_dropped"] == c["xdp_tx_errors"] == 1000 - c["tx_packets"]


def test_redirect_from_a_tap_flushes_after_every_write():
    sim = tap(prog="{program: redirect, params: {dev: eth0}}")
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert (m.from_dev, m.to_dev, m.sent, m.flushes) == ("tap0", "eth0", 1000, 1000)
    assert counters(sim, "eth0")["tx_packets"] == 1000


def test_vhost_batches_one_flush_per_batch():
    sim = tap(prog="{program: redirect, params: {dev: eth0}}", opts=", writer: vhost", rate="2Mpps")
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert m.sent == 1000 and m.flushes < 1000 / 8


def test_redirect_error_from_the_fast_path_fires_redirect_err_and_counts_rx_dropped():
    sim = tap(prog="{program: redirect, params: {dev: eth0}}", rate="1Mpps")
    assert counters(sim, "tap0")["rx_packets"] == 1000  # tun_xdp_act: redirected -> RX stats
    text = TAP.format(
        prog="{program: redirect, params: {dev: eth0}}",
        mode="tap",
        opts="",
        traffic="",
        reader="10Mpps",
        queues=1,
        rate="1Mpps",
    )
    sim = sim_of(text)
    assert sim.submit("ip link set dev eth0 down").ok
    sim.run_until(12_000_000)
    assert sim.frame().tracepoints.xdp_exception == ()
    c = counters(sim, "tap0")
    # tun_xdp_act: a failed xdp_do_redirect is rx_dropped, not rx_packets
    assert (c["rx_dropped"], c["rx_packets"]) == (1000, 0)


def test_frames_redirected_into_a_tap_overflow_its_ring():
    sim = sim_of("""
        name: into tap
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: tap0}}}
          tap0: {type: tun, mode: tap, queues: 1, tx_queue_len: 500, reader: 1Mpps}
        traffic:
          - {name: g, to: eth0, rate: 3Mpps, count: 30000}
    """)
    sim.run_until(10_000_000)
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    c = counters(sim, "tap0")
    ring = sim.frame().device("tap0").xdp_tx_rings[0]
    # the reader's 1 Mpps for 10 ms, less the time before the second interrupt (rx-usecs
    # 50 us) when the ring had nothing for it
    assert 10_000 - 51 <= c["tx_packets"] <= 10_000
    waiting = sim.frame().device("eth0").queues[0].occupancy  # the last frames arrive at 10 ms
    assert m.sent + m.drops + waiting == 30_000 and m.drops == c["xdp_xmit_errors"]
    assert m.sent == c["tx_packets"] + ring.occupancy
    # tx_dropped: once per ndo_xdp_xmit call that met a full ring, not per refused frame
    assert 0 < c["tx_dropped"] <= m.flushes < m.drops


def test_redirect_into_a_tap_without_a_reader_is_enxio():
    sim = sim_of("""
        name: no reader
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: tap0}}}
          tap0: {type: tun, mode: tap}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, count: 100}
    """)
    sim.run_until(5_000_000)
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert (m.sent, m.drops) == (0, 100) and m.err > 0


def test_pktgen_gso_share_moves_writes_to_the_generic_path():
    sim = sim_of("""
        name: gso live
        cpus: 1
        devices:
          tap0: {type: tun, mode: tap, reader: 1Mpps, xdp: xdp1}
        traffic:
          - {name: vm, to: tap0, rate: 1Mpps, flows: 4}
    """)
    sim.run_until(2_000_000)
    assert paths(sim) == (2000, 0)
    assert sim.submit("pktgen tap0 gso 0.5").ok
    sim.run_until(4_000_000)
    assert paths(sim) == (3000, 1000)


def test_verdicts_are_tallied_per_path():
    sim = tap(traffic=", gso: 0.25")
    view = sim.frame().device("tap0").tap
    assert view is not None
    verdicts = dict(view.verdicts_by_path)
    assert (verdicts["fast.XDP_DROP"], verdicts["generic.XDP_DROP"]) == (750, 250)


def test_slowing_the_reader_overflows_the_tap_ring():
    sim = sim_of("""
        name: slow reader
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: tap0}}}
          tap0: {type: tun, mode: tap, tx_queue_len: 500, reader: 2Mpps}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps}
    """)
    sim.run_until(2_000_000)
    assert sim.frame().tracepoints.xdp_devmap_xmit[0].drops == 0
    assert sim.submit("reader tap0 rate 200Kpps").ok
    sim.run_until(6_000_000)
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    # tun_xdp_xmit fills the ring at each flush; between flushes the 200 Kpps reader takes one
    # frame every 5 us, so at any instant the ring is full but for the last few microseconds'
    occ = sim.frame().device("tap0").xdp_tx_rings[0].occupancy
    assert m.drops > 0 and 500 - 100_000 // 5_000 <= occ <= 500
    assert sim.submit("reader tap0 stop").ok
    res = sim.submit("reader eth0 rate 1Mpps")
    assert not res.ok


def test_the_taps_help_states_the_fast_path_limit_the_kernel_arithmetic_gives():
    from xdptui.sim.dev.tun import FAST_PATH_MAX
    from xdptui.widgets.taps import TapsPanel

    # PAGE_SIZE 4096 - 320 skb_shared_info = 3776, already 64-aligned; minus 64 + 256 pads
    assert FAST_PATH_MAX == 4096 - 320 - 64 - 256 == 3456
    assert f"**{FAST_PATH_MAX} bytes**" in TapsPanel.HELP


def test_fast_path_drop_counts_only_rx_dropped_and_generic_non_pass_counts_nothing():
    # tun_xdp_act: XDP_DROP on the page is rx_dropped and never rx_packets
    c = counters(tap(prog="xdp_drop"), "tap0")
    assert (c["rx_packets"], c["rx_dropped"]) == (0, 1000)
    # do_xdp_generic: a non-PASS verdict on the slow path returns before any RX stats
    c = counters(tap(prog="xdp_drop", opts=", blocking: true"), "tap0")
    assert (c["rx_packets"], c["rx_dropped"]) == (0, 0)
    # XDP_PASS on either path: tun_get_user's dev_sw_netstats_rx_add
    c = counters(tap(prog="xdp_pass", opts=", blocking: true"), "tap0")
    assert (c["rx_packets"], c["rx_dropped"]) == (1000, 0)


def test_fast_path_xdp_tx_counts_rx_packets():
    # tun_xdp_act (v6.6+): a frame tun_xdp_tx queued is in the RX stats
    c = counters(tap(prog="xdp_tx"), "tap0")
    assert (c["rx_packets"], c["rx_dropped"]) == (1000, 0)


VHOST = """
name: vhost
cpus: 2
devices:
  tap0: {{type: tun, mode: tap, queues: 1, reader: 10Mpps, writer: vhost,
         xdp: {{program: redirect, params: {{dev: tap1}}}}}}
  tap1: {{type: tun, mode: tap, queues: 1, reader: 10Mpps, tx_queue_len: 5000, mtu: 9000}}
traffic:
  - {{name: vm, to: tap0, rate: 1Mpps, count: 1000, flows: 4, size: {size}}}
"""


def vhost_run(size: str, exact: bool):  # type: ignore[no-untyped-def]
    sim = sim_of(VHOST.format(size=size))
    sim.exact = exact
    sim.run_until(5_000_000)
    return sim


def test_vhost_net_build_xdp_takes_frames_up_to_3380_bytes():
    import numpy as np

    from xdptui.sim.dev.vhost_net import BATCH_MAX, batch_limit, builds_xdp
    from xdptui.widgets.taps import TapsPanel

    # SKB_DATA_ALIGN(len + pad) + 320 <= 4096, len = frame + 12 (sock_hlen, the vnet header),
    # pad = SKB_DATA_ALIGN(NET_SKB_PAD 64 + XDP_PACKET_HEADROOM 256 + 12) = 384
    assert BATCH_MAX == (4096 - 320) // 64 * 64 - 384 - 12 == 3380
    assert builds_xdp(np.array([3380, 3381]), vnet_hdr=True, xdp=True).tolist() == [True, False]
    # no vnet header on the tap: vhost supplies it, sock_hlen 0 -> pad 320, tun's own 3456
    assert batch_limit(vnet_hdr=False, xdp=True) == 3776 - 320 == 3456
    assert f"**{BATCH_MAX} bytes**" in TapsPanel.HELP


def handle_tx_copy(batched: list[bool], done: int = 0) -> list[int]:
    """drivers/vhost/net.c handle_tx_copy with every buffer waiting: the sizes of its sends."""
    out: list[int] = []
    batch = 0
    for ok in batched:
        if done == 64:  # nvq->done_idx == VHOST_NET_BATCH: vhost_tx_batch
            if batch:
                out.append(batch)
            batch = done = 0
        if ok:  # vhost_net_build_xdp: one more xdp_buff in the batch
            batch += 1
        else:  # -ENOSPC: send the batch so far, then this buffer alone
            if batch:
                out.append(batch)
                batch = done = 0
            out.append(1)
        done += 1
    if batch:
        out.append(batch)
    return out


def test_vhost_sends_follow_handle_tx_copy():
    import numpy as np

    from xdptui.sim.dev.vhost_net import first_send, sends

    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(0, 300))
        big = rng.random() * (0.05 if trial % 3 else 1.0)
        batched = rng.random(n) >= big
        done = int(rng.integers(0, 64))
        want = handle_tx_copy(batched.tolist(), done)
        assert sends(batched, done).tolist() == want
        if n:
            assert first_send(batched, done) == want[0]


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_vhost_writes_too_big_for_a_batch_go_alone_with_a_flush_each(exact: bool):
    small = vhost_run("3380", exact)
    m = small.frame().tracepoints.xdp_devmap_xmit[0]
    assert m.sent == 1000 and m.flushes < 1000 / 8  # batched: one flush per vhost batch
    big = vhost_run("3381", exact)  # vhost_net_build_xdp refuses it; tun_build_skb takes it
    m = big.frame().tracepoints.xdp_devmap_xmit[0]
    assert (m.sent, m.flushes) == (1000, 1000)
    assert counters(big, "tap0")["xdp_fast_path"] == 1000
    generic = vhost_run("3457", exact)  # too big for tun_can_build_skb too: generic XDP
    assert paths(generic) == (0, 1000)
    assert generic.frame().tracepoints.xdp_devmap_xmit == ()


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_vhost_a_big_write_sends_the_batch_before_it(exact: bool):
    # 3 small frames, then one vhost_net_build_xdp refuses, repeated: every big write is a
    # send (and a flush) of its own and ends the batch of small ones before it
    sim = vhost_run("[64, 64, 64, 3400]", exact)
    m = sim.frame().tracepoints.xdp_devmap_xmit[0]
    assert m.sent == 1000
    assert m.flushes >= 250 + 250  # 250 big writes alone, and at least 250 batches
    assert m.flushes <= 250 + 250 * 3  # at most every small frame sent alone
