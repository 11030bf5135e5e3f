"""AF_XDP (``net/xdp/xsk.c``, ``xskmap.c``, ``xsk_buff_pool.c``): the receive rules of a socket
bound to a queue -- a fill descriptor per frame, room in the RX ring, the checks of
``xsk_rcv_check`` -- in both modes, with the kernel's errnos and ``XDP_STATISTICS`` names."""

from __future__ import annotations

import json

import pytest
from conftest import topo

from xdptui.sim.engine import Simulator
from xdptui.sim.xsk import XDP_PACKET_HEADROOM
from xdptui.topology_io import TopologyError

BASE = """
name: xsk test
cpus: 2
devices:
  eth0: {{type: nic, driver: {driver}, queues: 2, irq_cpus: [0, 1], mtu: {mtu},
         xdp: {{program: xsk_redirect, params: {{map: xsks}}}}}}
  xsk0: {{type: xsk, dev: eth0, queue: {queue}, mode: {mode}, frames: {frames},
         frame_size: {frame_size}, fill: {fill}, rx: {rx}{reader}}}
maps:
  xsks: {{type: xskmap, max_entries: 4, entries: {{0: xsk0}}}}
traffic:
  - {{name: t, to: eth0, rate: {rate}, size: {size}, proto: udp, flows: 64,
     src_port: 1000-1063, count: {count}}}
"""


def xsk_text(
    queue: int = 0,
    mode: str = "copy",
    frames: int = 4096,
    frame_size: int = 4096,
    fill: int = 2048,
    rx: int = 2048,
    reader: str = "",
    rate: str = "1Mpps",
    size: int = 64,
    count: int = 1000,
    driver: str = "ice",
    mtu: int = 1500,
) -> str:
    r = f", reader: {reader}" if reader else ""
    return BASE.format(
        queue=queue, mode=mode, frames=frames, frame_size=frame_size, fill=fill, rx=rx,
        reader=r, rate=rate, size=size, count=count, driver=driver, mtu=mtu,
    )  # fmt: skip


def run(text: str, exact: bool, ns: int = 3_000_000) -> dict:
    sim = Simulator(topo(text), exact=exact)
    sim.run_until(ns)
    return sim.report()


def queue0(report: dict) -> int:
    """The frames RSS put on eth0's queue 0 (the socket's)."""
    return next(q["rx_packets"] for q in report["devices"]["eth0"]["queues"] if q["queue"] == 0)


def redirect_err(report: dict, err: str) -> int:
    hits = report["tracepoints"]["xdp_redirect_err"]
    return sum(h["count"] for h in hits if h["dev"] == "eth0" and h["err"] == err)


MODES = pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])


@MODES
def test_the_fill_ring_runs_dry_without_a_reader(exact: bool):
    """Copy mode, nobody reads: each of the ``frames`` chunks on the fill ring takes one
    frame (``xsk_buff_alloc``); every later frame finds none -- ``rx_dropped`` and
    ``rx_fill_ring_empty_descs`` once each (``__xp_alloc``), ENOMEM from ``xdp_do_redirect``."""
    frames = 64
    r = run(xsk_text(frames=frames, fill=2048, rx=2048), exact)
    n = queue0(r)
    assert n > frames
    k = r["xsks"]["xsk0"]["counters"]
    assert k["rx_packets"] == frames
    assert k["rx_dropped"] == k["rx_fill_ring_empty_descs"] == n - frames
    assert k["rx_ring_full"] == 0
    assert redirect_err(r, "ENOMEM") == n - frames
    rings = r["xsks"]["xsk0"]["rings"]
    assert rings["rx"]["entries"] == frames and rings["fill"]["entries"] == 0
    assert r["xsks"]["xsk0"]["umem"]["rx"] == frames


@MODES
def test_a_full_rx_ring_refuses_with_enobufs_and_keeps_one_chunk(exact: bool):
    """RX ring of 64, nobody reads: 64 frames land; then each frame gets a chunk and finds no
    descriptor (``xskq_prod_reserve_desc``): ``rx_ring_full``, ENOBUFS, and the chunk goes to
    the pool's free list (``xp_free``), where the next frame takes it again -- so the fill
    ring lost exactly one more chunk than the RX ring holds."""
    rx = 64
    r = run(xsk_text(frames=1024, fill=1024, rx=rx), exact)
    n = queue0(r)
    x = r["xsks"]["xsk0"]
    assert x["counters"]["rx_packets"] == rx
    assert x["counters"]["rx_ring_full"] == n - rx == redirect_err(r, "ENOBUFS")
    assert x["counters"]["rx_dropped"] == x["counters"]["rx_fill_ring_empty_descs"] == 0
    assert x["umem"] == {
        "fill": 1024 - rx - 1,
        "kernel": 1,
        "rx": rx,
        "user": 0,
        "tx": 0,
        "comp": 0,
    }
    assert x["rings"]["fill"]["consumer"] == rx + 1


@MODES
def test_a_reader_that_keeps_up_loses_nothing(exact: bool):
    r = run(xsk_text(frames=256, fill=256, rx=256, reader="4Mpps", rate="1Mpps"), exact)
    n = queue0(r)
    k = r["xsks"]["xsk0"]["counters"]
    assert k["rx_packets"] == n > 0
    assert k["rx_dropped"] == k["rx_ring_full"] == 0
    assert redirect_err(r, "ENOMEM") == redirect_err(r, "ENOBUFS") == 0


@MODES
def test_a_slow_reader_gets_what_it_can_read_plus_the_umem(exact: bool):
    """A reader at R takes about R x t descriptors and gives each chunk back to the fill
    ring; with a small UMEM (it all ends up in the RX ring) the socket receives what was read
    plus the chunks in the rings now, and the fill ring's misses are the rest."""
    frames = 512
    r = run(xsk_text(frames=frames, fill=512, rx=2048, reader="250Kpps", rate="2Mpps",
                     count=6000), exact)  # fmt: skip
    x = r["xsks"]["xsk0"]
    n = queue0(r)
    read = x["rings"]["rx"]["consumer"]
    assert abs(read - 250_000 * r["sim_ns"] / 1e9) <= 250_000 * 0.1e-3  # started within 0.1 ms
    assert x["counters"]["rx_packets"] == read + x["rings"]["rx"]["entries"]
    assert x["counters"]["rx_fill_ring_empty_descs"] == n - x["counters"]["rx_packets"]
    assert sum(x["umem"].values()) == frames


@MODES
def test_frames_of_a_queue_without_a_socket_go_up_the_stack(exact: bool):
    """``bpf_redirect_map(&xsks, rx_queue_index, XDP_PASS)``: queue 1 has no socket, so its
    frames take the flags' action, XDP_PASS, with no redirect tracepoint."""
    r = run(xsk_text(reader="4Mpps"), exact)
    q1 = next(q["rx_packets"] for q in r["devices"]["eth0"]["queues"] if q["queue"] == 1)
    assert q1 > 0
    assert r["devices"]["eth0"]["counters"]["rx_packets"] >= q1  # passed frames became skbs
    assert r["xsks"]["xsk0"]["counters"]["rx_packets"] == queue0(r)


@MODES
def test_a_socket_bound_to_another_queue_is_einval(exact: bool):
    """``xsk_rcv_check`` -> ``xsk_dev_queue_valid``: the socket at key 0 is bound to queue 1,
    so queue 0's frames fail with EINVAL; queue 1's find no socket at key 1 and pass."""
    r = run(xsk_text(queue=1, reader="4Mpps"), exact)
    assert redirect_err(r, "EINVAL") == queue0(r) > 0
    assert r["xsks"]["xsk0"]["counters"]["rx_packets"] == 0


@MODES
def test_a_frame_longer_than_the_chunk_is_enospc(exact: bool):
    """Chunks of 2048 bytes hold 2048 - XDP_PACKET_HEADROOM of frame: a longer one is
    ``rx_dropped`` and ENOSPC (``xsk_rcv_check``)."""
    size = 2048 - XDP_PACKET_HEADROOM + 1
    r = run(xsk_text(frame_size=2048, size=size, mtu=2000, reader="4Mpps"), exact)
    n = queue0(r)
    assert n > 0 and redirect_err(r, "ENOSPC") == n
    k = r["xsks"]["xsk0"]["counters"]
    assert k["rx_dropped"] == n and k["rx_packets"] == 0


def test_both_modes_agree_and_time_splits_do_not_matter():
    text = xsk_text(frames=512, fill=512, rx=1024, reader="600Kpps", rate="3Mpps", count=20000)
    exact = run(text, True, 5_000_000)
    fast = run(text, False, 5_000_000)
    for name in ("counters", "rings", "umem"):
        assert fast["xsks"]["xsk0"][name] == exact["xsks"]["xsk0"][name], name
    sim = Simulator(topo(text), exact=False)
    for t in range(700_000, 5_000_000, 700_000):
        sim.run_until(t)
    sim.run_until(5_000_000)
    assert json.dumps(sim.report(), sort_keys=True) == json.dumps(fast, sort_keys=True)


def test_the_reader_command_changes_its_speed_and_stops_it():
    sim = Simulator(topo(xsk_text(frames=256, fill=256, rx=2048, count=100000)), exact=True)
    assert sim.submit("reader xsk0 rate 4Mpps").ok
    sim.run_until(1_000_000)
    before = sim.report()["xsks"]["xsk0"]
    assert before["counters"]["rx_dropped"] == 0
    assert sim.submit("reader xsk0 stop").ok
    sim.run_until(2_000_000)
    after = sim.report()["xsks"]["xsk0"]
    assert after["rings"]["rx"]["consumer"] == before["rings"]["rx"]["consumer"]
    assert after["counters"]["rx_dropped"] > 0  # the 256 chunks ran out


# ------------------------------------------------------------ the topology's checks


def bad(text: str) -> str:
    with pytest.raises(TopologyError) as err:
        topo(text, "bad.yaml")
    return str(err.value)


def test_zero_copy_needs_a_driver_that_has_it():
    text = xsk_text(mode="zerocopy").replace("driver: ice", "driver: generic")
    msg = bad(text)
    assert "bad.yaml:" in msg and "EOPNOTSUPP" in msg and "valid: copy" in msg
    ok = topo(xsk_text(mode="zerocopy"))
    assert ok.xsks[0].mode == "zerocopy"
    default = topo(xsk_text().replace("mode: copy, ", ""))
    assert default.xsks[0].mode == "zerocopy"  # ice: the kernel tries zero-copy first


def test_bind_checks_queue_device_and_one_socket_per_queue():
    assert "EINVAL" in bad(xsk_text(queue=2)) and "valid: 0..1" in bad(xsk_text(queue=2))
    two = xsk_text().replace("maps:", "  xsk1: {type: xsk, dev: eth0, queue: 0, mode: copy}\nmaps:")
    assert "EBUSY" in bad(two)
    nodev = xsk_text().replace("dev: eth0, queue", "dev: eth9, queue")
    assert "ENODEV" in bad(nodev)


def test_xskmap_entries_are_checked():
    assert "E2BIG" in bad(xsk_text().replace("{0: xsk0}", "{4: xsk0}"))
    assert "not an AF_XDP socket" in bad(xsk_text().replace("{0: xsk0}", "{0: eth0}"))


def test_a_socket_is_not_a_net_device():
    msg = bad(xsk_text().replace("mode: copy,", "mode: copy, mtu: 1500,"))
    assert "not a net device" in msg
    # and a program cannot redirect to it by name
    msg = bad(xsk_text().replace("program: xsk_redirect, params: {map: xsks}",
                                 "program: redirect, params: {dev: xsk0}"))  # fmt: skip
    assert "unknown device 'xsk0'" in msg


# ------------------------------------------------------------ a real object, bpftool


OBJECT = """
name: xsk object
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2, irq_cpus: [0, 1], xdp: ../../examples/bpf/af_xdp_port.o}
  xsk0: {type: xsk, dev: eth0, queue: 0, mode: copy, reader: 10Mpps}
  xsk1: {type: xsk, dev: eth0, queue: 1, mode: copy, reader: 10Mpps}
maps:
  xsks_map: {type: xskmap, max_entries: 64, entries: {0: xsk0}}
traffic:
  - {name: t, to: eth0, rate: 1Mpps, size: 64, proto: udp, flows: 64, src_port: 1000-1063,
     dst_port: 4241-4242, count: 6400}
"""


@MODES
def test_a_real_object_redirects_into_its_xskmap(exact: bool):
    """examples/bpf/af_xdp_port.o: UDP to 4242 goes to the socket of its queue
    (``bpf_map_lookup_elem`` on the XSKMAP, then ``bpf_redirect_map(&xsks_map,
    rx_queue_index, XDP_PASS)``), the rest passes; its XSKMAP is bound to the host's by name.
    Queue 1's socket is not in the map, so its share of port 4242 passes too."""
    sim = Simulator(topo(OBJECT), exact=exact)
    sim.run_until(8_000_000)
    r = sim.report()
    eth0 = r["devices"]["eth0"]["counters"]
    got = r["xsks"]["xsk0"]["counters"]["rx_packets"]
    # every other flow is to port 4242 (3200 frames), RSS puts some on queue 1
    assert got == eth0["xdp_redirect"] and 0 < got < 3200
    assert got <= queue0(r) and eth0["xdp_pass"] == 6400 - got
    assert r["xsks"]["xsk1"]["counters"]["rx_packets"] == 0


def test_the_xskmap_takes_sockets_and_answers_like_the_kernel():
    sim = Simulator(topo(OBJECT), exact=True)
    shown = sim.submit("bpftool map show name xsks_map")
    assert shown.ok and "xskmap  name xsks_map" in shown.reply and "value 4B" in shown.reply
    dump = sim.submit("bpftool map dump name xsks_map").reply
    assert "Operation not supported  (xdptui: xsk0)" in dump  # xsk_map_lookup_elem_sys_only
    assert sim.submit("bpftool map update name xsks_map key 1 value xsk1").ok
    for line, errno in [
        ("bpftool map update name xsks_map key 64 value xsk1", "E2BIG"),
        ("bpftool map update name xsks_map key 2 value xsk1 exist", "ENOENT"),
        ("bpftool map update name xsks_map key 0 value xsk1 noexist", "EEXIST"),
        ("bpftool map update name xsks_map key 2 value eth0", "EOPNOTSUPP"),
        ("bpftool map delete name xsks_map key 64", "EINVAL"),
    ]:
        res = sim.submit(line)
        assert not res.ok and res.errno == errno, (line, res)
    sim.run_until(8_000_000)
    r = sim.report()
    both = sum(r["xsks"][s]["counters"]["rx_packets"] for s in ("xsk0", "xsk1"))
    assert both == r["devices"]["eth0"]["counters"]["xdp_redirect"] == 3200  # all of 4242
    assert r["xsks"]["xsk1"]["counters"]["rx_packets"] > 0  # queue 1's 4242 now goes to xsk1


def test_completion_offers_sockets_where_a_socket_goes():
    from xdptui.completion import CompletionContext, complete

    ctx = CompletionContext(
        devices=("eth0",), maps=("xsks", "tx"), xskmaps=("xsks",), xsks=("xsk0",), taps=("tap0",)
    )
    assert complete("bpftool map update name xsks key 0 value ", ctx).candidates == ("xsk0",)
    assert complete("bpftool map update name tx key 0 value ", ctx).candidates == ("eth0",)
    assert complete("reader ", ctx).candidates == ("tap0", "xsk0")


VETH = """
name: xsk on veth
cpus: 2
devices:
  vi: {type: veth, peer: vs}
  vs: {type: veth, peer: vi, xdp: {program: xsk_redirect, params: {map: xsks}}}
  xsk0: {type: xsk, dev: vs, queue: 0, mode: copy, frames: 512, fill: 512, rx: 1024,
         reader: 300Kpps}
maps:
  xsks: {type: xskmap, max_entries: 4, entries: {0: xsk0}}
traffic:
  - {name: app, from: vi, rate: 1Mpps, size: 64, flows: 16}
"""


@pytest.mark.parametrize("text", [VETH, OBJECT], ids=["veth", "object"])
def test_fast_equals_exact_every_millisecond(text: str):
    """Every report tally, sockets' rings and UMEM included, sampled every millisecond: a
    veth's polls (fast mode's own arithmetic: the step's polls spread over it) and a NIC's
    (NAPI's loop) give the same story as exact mode's."""
    from xdptui.modes_check import compare

    c = compare(topo(text), [m * 1_000_000 for m in range(1, 9)])
    assert c.compared > 400
    assert c.differing == (), c.differing[:5]


def test_the_run_summary_has_a_line_per_socket_with_the_reports_counts():
    from xdptui.report import summary

    sim = Simulator(topo(xsk_text(frames=64, fill=2048, rx=2048)), exact=False)
    sim.run_until(2_000_000)
    k = sim.report()["xsks"]["xsk0"]["counters"]
    (line,) = [ln for ln in summary(sim.frame()).splitlines() if ln.strip().startswith("xsk0")]
    assert f"rx {k['rx_packets']} " in line and k["rx_packets"] == 64
    assert f"rx_fill_ring_empty_descs {k['rx_fill_ring_empty_descs']}" in line
    assert "fill 0/2048  rx ring 64/2048" in line
