"""RX rings: RSS spreads flows over queues, a saturated CPU fills its ring, a full ring drops."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import counters, sim_of

from xdptui.sim.hashing import default_reta, rss_queue, toeplitz_hash

ONE_QUEUE = """
name: overflow
cpus: 1
devices:
  eth0: {type: nic, driver: ice, speed: 100G, queues: 1, ring: 512, xdp: xdp_drop}
traffic:
  - {name: g, to: eth0, rate: 100Mpps, size: 64}
"""


def test_full_rx_ring_drops_what_the_cpu_cannot_take():
    sim = sim_of(ONE_QUEUE)
    sim.run_until(1_000_000)
    c = counters(sim, "eth0")
    q = sim.frame().device("eth0").queues[0]
    offered = 100_000  # 100 Mpps for 1 ms
    assert c["rx_packets"] + c["rx_dropped"] + q.occupancy == offered
    assert q.peak == 512 and q.occupancy == 512
    assert q.rx_dropped == c["rx_dropped"]
    # once polling back to back (the first interrupt after the first frame waits rx-usecs),
    # one E810 queue on one CPU drops 48.6 Mpps (the bond seed's single-queue XDP_DROP row)
    sim.run_until(2_000_000)
    rate = (counters(sim, "eth0")["rx_packets"] - c["rx_packets"]) / 1e-3 / 1e6
    assert abs(rate - 48.6) / 48.6 < 0.02


def test_ring_below_capacity_never_drops():
    sim = sim_of(ONE_QUEUE.replace("100Mpps", "10Mpps"))
    sim.run_until(1_000_000)
    c = counters(sim, "eth0")
    q = sim.frame().device("eth0").queues[0]
    assert c["rx_dropped"] == 0
    # every frame was polled or waits for the next interrupt (at most rx-usecs' worth: 50 us)
    assert c["rx_packets"] + q.occupancy == 10_000
    assert q.occupancy <= 10_000_000 * 50e-6
    # 500 frames arrive between interrupts: the ring peaks near that, below its 512 slots
    assert 400 < q.peak < 512


def test_rss_spreads_flows_by_toeplitz_hash_and_reta():
    sim = sim_of("""
        name: rss
        cpus: 4
        devices:
          eth0: {type: nic, driver: ice, queues: 4, xdp: xdp_drop}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, flows: 8, src_ip: 198.18.0.1-198.18.0.8,
             src_port: 5000-5007, dst_ip: 10.0.0.1, dst_port: 80, count: 800}
    """)
    sim.run_until(2_000_000)
    got = [q.rx_packets for q in sim.frame().device("eth0").queues]
    # Expected from the RSS rule itself: queue = RETA[toeplitz(4-tuple) % 512], RETA i % 4.
    src = np.arange(8, dtype=np.uint32) + 0xC6120001
    h = toeplitz_hash(
        src,
        np.full(8, 0x0A000001, dtype=np.uint32),
        np.arange(5000, 5008, dtype=np.uint16),
        np.full(8, 80, dtype=np.uint16),
    )
    queues = rss_queue(h, default_reta(512, 4))
    expected = np.bincount(queues, minlength=4) * 100
    assert got == expected.tolist()


def test_queue_interrupt_binding_decides_the_polling_cpu():
    sim = sim_of("""
        name: irq
        cpus: 4
        devices:
          eth0: {type: nic, driver: ice, queues: 2, irq_cpus: [3, 1], xdp: xdp_drop}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, flows: 64, src_ip: 198.18.0.1-198.18.0.64}
    """)
    sim.run_until(1_000_000)
    frame = sim.frame()
    assert [q.cpu for q in frame.device("eth0").queues] == [3, 1]
    assert frame.cpus[3].rx_queues == (("eth0", 0),)
    assert frame.cpus[0].rx_queues == () and frame.cpus[0].busy == 0.0
    assert frame.cpus[3].busy > 0 and frame.cpus[1].busy > 0


def test_ethtool_ring_resize_changes_ring_size():
    sim = sim_of(ONE_QUEUE)
    assert sim.submit("ethtool -G eth0 rx 1024").ok
    sim.run_until(1_000_000)
    assert sim.frame().device("eth0").queues[0].peak == 1024
    bad = sim.submit("ethtool -G eth0 rx 100000")
    assert not bad.ok and bad.errno == "EINVAL"
    assert sim.frame().device("eth0").queues[0].ring_size == 1024


def test_ethtool_channels_reshapes_rss():
    sim = sim_of(ONE_QUEUE.replace("cpus: 1", "cpus: 4").replace("100Mpps", "1Mpps"))
    assert sim.submit("ethtool -L eth0 combined 4").ok
    assert len(sim.frame().device("eth0").queues) == 4
    res = sim.submit("ethtool -L eth0 combined 5")
    assert not res.ok and res.errno == "EINVAL"
    assert len(sim.frame().device("eth0").queues) == 4


def test_an_rx_ring_holds_two_sources_frames_in_arrival_order():
    # The NIC writes descriptors in the order frames reach it, whichever sender they come
    # from. One queue gets port 1 every 100 ns (passed) and port 2 every 500 ns (dropped,
    # drop_even_ports): any 64 consecutive arrivals hold 10 or 11 of port 2, so every full
    # poll (64 from the ring's head) drops 10 or 11 -- never a run of one sender's frames.
    sim = sim_of(
        """
name: two senders
cpus: 1
devices:
  eth0: {type: nic, driver: ixgbe, speed: 10G, queues: 1, xdp: weird.py:drop_even_ports}
traffic:
  - {name: a, to: eth0, rate: 10Mpps, src_port: 1}
  - {name: b, to: eth0, rate: 2Mpps, src_port: 2}
""",
        exact=True,
    )
    sim.run_until(2_000_000)
    full = [e for e in sim.events() if e.get("kind") == "napi_poll" and e["frames"] == 64]
    assert len(full) > 100
    assert {e["verdicts"].get("XDP_DROP", 0) for e in full} <= {10, 11}


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize(
    ("driver", "command"),
    [
        ("ice", "ip link set dev eth0 down"),
        ("ice", "ethtool -G eth0 rx 1024"),
        ("ice", "ethtool -L eth0 combined 2"),
        ("ixgbe", "ip link set dev eth0 xdp off"),  # none <-> some program: ixgbe_setup_tc
    ],
)
def test_frames_the_rx_ring_holds_are_freed_uncounted_when_the_driver_cleans_it(
    driver: str, command: str, exact: bool
) -> None:
    """``ixgbe_clean_rx_ring`` / ``ice_clean_rx_ring`` (a link down, rings re-allocated)
    give the buffers back unread: no counter moves -- not ``rx_dropped``, not
    ``rx_packets`` -- and the log says how many frames went."""
    text = ONE_QUEUE.replace("cpus: 1", "cpus: 2").replace("driver: ice", f"driver: {driver}")
    if driver == "ixgbe":
        text = text.replace("speed: 100G", "speed: 10G").replace("100Mpps", "14Mpps")
        text = text.replace("xdp: xdp_drop", "xdp: xdp_pass")  # the stack's cost: it backs up
    sim = sim_of(text)
    sim.exact = exact
    sim.run_until(1_000_000)
    before = counters(sim, "eth0")
    held = sim.frame().device("eth0").queues[0].occupancy
    assert held > 0  # the premise: the ring holds frames
    assert sim.submit(command).ok
    after = counters(sim, "eth0")
    assert all(q.occupancy == 0 for q in sim.frame().device("eth0").queues)
    for counter in ("rx_dropped", "rx_packets", "rx_missed_errors", "xdp_drop", "xdp_pass"):
        assert after[counter] == before[counter], counter
    what = "1 frame" if held == 1 else f"{held} frames"
    said = [e.cmd for e in sim.frame().events]
    assert any(f"the driver freed the {what} its RX rings held" in line for line in said)
