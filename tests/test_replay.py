"""A replayed capture as a traffic source: frames byte for byte (their bytes decide RSS and
verdicts), in order, at a rate or as captured, looped or not, in both modes; bad captures are
refused at their line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bpf_kernel_oracle as kern
import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Packet
from scapy.utils import wrpcap, wrpcapng

from xdptui import Simulator
from xdptui.sim.hashing import DEFAULT_RSS_KEY
from xdptui.topology_io import TopologyError, load_topology

ROOT = Path(__file__).resolve().parent.parent
DROP_PORT = ROOT / "examples" / "bpf" / "drop_port.o"
T0 = 1_700_000_000.0
GAP_S = 20e-6


def frames() -> list[Packet]:
    """IPv4 UDP/TCP (some to port 53, which drop_port.o drops), IPv6, a VLAN tag, an ARP."""
    mac = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}
    out: list[Packet] = []
    for i in range(24):
        l4 = UDP(sport=1000 + i, dport=53 if i % 3 == 0 else 80)
        if i % 5 == 4:
            l4 = TCP(sport=1000 + i, dport=53 if i % 2 else 443)
        out.append(Ether(**mac) / IP(src=f"10.0.0.{i + 1}", dst="10.0.9.9") / l4 / (b"p" * i))
    for i in range(6):
        out.append(
            Ether(**mac) / IPv6(src=f"2001:db8::{i + 1}", dst="2001:db8::99") / UDP(dport=53 + i)
        )
    out.append(Ether(**mac) / Dot1Q(vlan=7) / IP(src="10.1.0.1", dst="10.0.9.9") / UDP(dport=53))
    out.append(Ether(dst="ff:ff:ff:ff:ff:ff", src=mac["src"]) / ARP(pdst="10.0.9.9"))
    for k, p in enumerate(out):
        p.time = T0 + k * GAP_S
    return out


def write(tmp: Path, kind: str, packets: list[Packet] | None = None) -> Path:
    packets = frames() if packets is None else packets
    path = tmp / f"cap.{kind}"
    (wrpcapng if kind == "pcapng" else wrpcap)(str(path), packets)
    return path


def topo(tmp: Path, source: str, xdp: str = "xdp_pass", queues: int = 4) -> Path:
    (tmp / "drop_port.o").write_bytes(DROP_PORT.read_bytes())
    path = tmp / "t.yaml"
    path.write_text(
        "name: replay\ncpus: 4\ndevices:\n"
        f"  eth0: {{type: nic, driver: ice, queues: {queues}, xdp: {xdp}}}\n"
        f"traffic:\n  - {{name: cap, to: eth0, {source}}}\n"
    )
    return path


def counters(path: Path, exact: bool, t_ns: int = 5_000_000) -> dict[str, int]:
    sim = Simulator.from_file(path)
    sim.exact = exact
    sim.run_until(t_ns)
    out: dict[str, int] = sim.report()["devices"]["eth0"]["counters"]
    return out


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_replay_sends_each_captured_frame_once_with_its_own_bytes(
    tmp_path: Path, kind: str
) -> None:
    write(tmp_path, kind)
    c = counters(topo(tmp_path, f"pcap: cap.{kind}"), exact=True)
    packets = frames()
    assert c["rx_packets"] == len(packets)
    assert c["rx_bytes"] == sum(len(bytes(p)) for p in packets)


def test_as_captured_keeps_the_captured_gaps(tmp_path: Path) -> None:
    write(tmp_path, "pcapng")
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcapng, start: 1ms"))
    src = sim.world.sources[0]
    n = len(frames())
    at = src.arrival_ns(0, n)
    gap = round(GAP_S * 1e9)
    assert at[0] == 1_000_001  # one nanosecond after the source starts
    assert np.all(np.diff(at) == gap)
    assert src.emitted_until(1_000_000 + 5 * gap) == 5  # frames 0..4 have arrived (0 at +1 ns)


def test_a_loop_restarts_one_mean_gap_after_the_last_frame(tmp_path: Path) -> None:
    write(tmp_path, "pcap")
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap, loop: true"))
    src = sim.world.sources[0]
    n = len(frames())
    at = src.arrival_ns(0, 2 * n)
    assert np.all(np.diff(at) == round(GAP_S * 1e9))


def test_a_capture_at_a_given_rate_is_paced_like_any_source(tmp_path: Path) -> None:
    write(tmp_path, "pcap")
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap, loop: true, rate: 1Mpps"))
    sim.exact = True
    sim.run_until(5_000_000)
    assert sim.report()["traffic"]["cap"]["emitted"] == 5000  # 1 Mpps for 5 ms


def test_without_loop_the_capture_plays_once(tmp_path: Path) -> None:
    write(tmp_path, "pcap")
    c = counters(topo(tmp_path, "pcap: cap.pcap, rate: 1Mpps"), exact=False)
    assert c["rx_packets"] == len(frames())


def test_captured_bytes_decide_the_rss_queue(tmp_path: Path) -> None:
    """Each frame lands on reta[hash % 512]: the Toeplitz hash of its own addresses and ports
    (IPv6 too), computed here independently from the bytes with the RSS spec's bit loop."""
    packets = frames()
    write(tmp_path, "pcap", packets)
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap", queues=4))
    sim.run_until(5_000_000)
    key = int.from_bytes(DEFAULT_RSS_KEY, "big")

    def toeplitz(data: bytes) -> int:
        h, bits = 0, len(DEFAULT_RSS_KEY) * 8
        for i in range(len(data) * 8):
            if data[i // 8] >> (7 - i % 8) & 1:
                h ^= (key >> (bits - 32 - i)) & 0xFFFFFFFF
        return h

    want = [0, 0, 0, 0]
    for p in packets:
        if IP in p and (UDP in p or TCP in p):
            l4 = p[UDP] if UDP in p else p[TCP]
            data = bytes(p[IP])[12:20] + bytes(l4)[:4]
        elif IPv6 in p:
            data = bytes(p[IPv6])[8:40] + bytes(p[UDP])[:4]
        else:
            data = b""  # not IP: hash 0
        want[(toeplitz(data) if data else 0) % 512 % 4] += 1
    got = [q["rx_packets"] for q in sim.report()["devices"]["eth0"]["queues"]]
    assert got == want


def test_fast_and_exact_agree_on_a_bursty_capture(tmp_path: Path) -> None:
    """Bursts of 200 frames 10 ns apart, then quiet: fast mode's polls follow the captured
    arrivals as exact mode's do."""
    base = frames()
    packets = []
    for burst in range(5):
        for k in range(200):
            p = base[k % len(base)].copy()
            p.time = T0 + burst * 1e-3 + k * 1e-8
            packets.append(p)
    write(tmp_path, "pcapng", packets)
    path = topo(tmp_path, "pcap: cap.pcapng, loop: true", xdp="drop_port.o", queues=2)
    fast, exact = counters(path, False, 20_000_000), counters(path, True, 20_000_000)
    for name, value in exact.items():
        assert abs(fast[name] - value) <= max(2, 0.01 * value), (name, fast[name], value)


def test_pktgen_changes_a_captures_rate_but_not_its_frames(tmp_path: Path) -> None:
    write(tmp_path, "pcap")
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap, loop: true"))
    assert sim.submit("pktgen eth0 rate 2Mpps").ok
    refused = sim.submit("pktgen eth0 size 128")
    assert (refused.ok, refused.errno) == (False, "EINVAL")
    assert "replays a capture" in refused.reply
    assert sim.submit("pktgen eth0 rate as-captured").ok


def test_a_bad_capture_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "junk.pcap").write_bytes(b"not a capture at all")
    path = topo(tmp_path, "pcap: junk.pcap, size: 64")
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    text = str(err.value)
    assert "traffic[0].pcap" in text and "neither pcap nor pcapng" in text
    assert "traffic[0].size" in text and "captured bytes decide it" in text
    path = topo(tmp_path, "pcap: missing.pcapng")
    with pytest.raises(TopologyError, match="can't be read"):
        load_topology(path)


def test_check_reports_a_bad_capture_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "x.pcapng").write_bytes(b"\x0a\x0d\x0d\x0a" + b"\0" * 8)
    path = topo(tmp_path, "pcap: x.pcapng")
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "check", str(path)], capture_output=True, text=True
    )
    assert res.returncode == 2
    assert res.stderr.startswith(f"{path}:6:") and "Traceback" not in res.stderr


WHY_NOT = kern.available()


@pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_replayed_verdicts_equal_the_kernels_test_run(tmp_path: Path, exact: bool) -> None:
    """The same frames through the same object: BPF_PROG_TEST_RUN of each captured frame in
    the machine's kernel, times the loops played, equals the simulator's verdict counters."""
    packets = frames()
    write(tmp_path, "pcapng", packets)
    loops = 3
    path = topo(
        tmp_path,
        f"pcap: cap.pcapng, loop: true, count: {loops * len(packets)}",
        xdp="drop_port.o",
    )
    with kern.LoadedObject(DROP_PORT) as lo:
        fd = lo.prog_fd("xdp_drop_port")
        kernel = [kern.test_run(fd, bytes(p)).retval for p in packets]
    c = counters(path, exact, 10_000_000)
    names = {1: "xdp_drop", 2: "xdp_pass"}
    want = {names[r]: loops * kernel.count(r) for r in set(kernel)}
    assert set(kernel) <= set(names)
    assert {k: c[k] for k in want} == want
    assert json.dumps(want)  # both verdicts occur in this capture
    assert len(want) == 2


def test_a_capture_of_one_instant_cannot_loop_as_captured(tmp_path: Path) -> None:
    packets = frames()[:3]
    for p in packets:
        p.time = T0
    write(tmp_path, "pcap", packets)
    with pytest.raises(TopologyError, match="has no pace to loop at"):
        load_topology(topo(tmp_path, "pcap: cap.pcap, loop: true"))
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap, loop: true, rate: 1Mpps"))
    refused = sim.submit("pktgen eth0 rate as-captured")
    assert (refused.ok, refused.errno) == (False, "EINVAL")
    once = counters(topo(tmp_path, "pcap: cap.pcap"), exact=True)  # once: all at one instant
    assert once["rx_packets"] == 3


def test_the_packet_pane_dissects_a_captured_frame(tmp_path: Path) -> None:
    write(tmp_path, "pcap")
    sim = Simulator.from_file(topo(tmp_path, "pcap: cap.pcap"))
    view = sim.packet("cap", 24)  # the first IPv6 frame
    assert view is not None
    assert view.data_before == bytes(frames()[24])
    assert view.note.startswith("captured: Ether / IPv6 / UDP 2001:db8::1:")
    assert [layer.name for layer in view.before][:2] == ["Ethernet II", "IPv6"]
