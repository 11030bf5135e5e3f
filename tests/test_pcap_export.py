"""pcapng export: `run --pcap DEV:WHAT=OUT` and `trace --pcap OUT`, read back by tcpdump (the
frames) and by a pcapng reader (interfaces and comments)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import RawPcapNgReader, wrpcap

ROOT = Path(__file__).resolve().parent.parent
TCPDUMP = shutil.which("tcpdump")
needs_tcpdump = pytest.mark.skipif(TCPDUMP is None, reason="tcpdump is not installed")


def xdptui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args], capture_output=True, text=True, timeout=300
    )


def tcpdump_frames(path: Path) -> list[bytes]:
    """The frames as tcpdump reads them back (``-r``, hex of each whole frame)."""
    assert TCPDUMP is not None
    out = subprocess.run(
        [TCPDUMP, "-r", str(path), "-nn", "-xx"], capture_output=True, text=True, check=True
    ).stdout
    frames: list[bytes] = []
    for line in out.splitlines():
        if not line.startswith("\t"):
            frames.append(b"")
            continue
        hexpart = line.split(":", 1)[1].split()
        frames[-1] += bytes.fromhex("".join(hexpart))
    return frames


def pcapng_blocks(path: Path) -> list[tuple[str, str, bytes, int]]:
    """(interface, comment, bytes, time in ns) of every packet."""
    out = []
    for data, meta in RawPcapNgReader(str(path)):
        ticks = (meta.tshigh << 32) | meta.tslow
        comment = meta.comments[0].decode() if meta.comments else ""
        out.append((meta.ifname.decode(), comment, bytes(data), ticks))
    return out


def replay_topology(tmp: Path) -> tuple[Path, list[bytes]]:
    packets = []
    for i in range(12):
        p = (
            Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
            / IP(src=f"10.0.0.{i + 1}", dst="10.0.9.9")
            / UDP(sport=4000 + i, dport=53 if i % 3 == 0 else 80)
        )
        p.time = 1_700_000_000 + i * 1e-5
        packets.append(p)
    wrpcap(str(tmp / "in.pcap"), packets)
    (tmp / "drop_port.o").write_bytes((ROOT / "examples/bpf/drop_port.o").read_bytes())
    path = tmp / "t.yaml"
    path.write_text(
        "name: export\ncpus: 2\ndevices:\n"
        "  eth0: {type: nic, driver: ice, queues: 2, xdp: drop_port.o}\n"
        "traffic:\n  - {name: cap, to: eth0, pcap: in.pcap}\n"
    )
    return path, [bytes(p) for p in packets]


@needs_tcpdump
def test_run_pcap_writes_the_dropped_frames_with_their_verdicts(tmp_path: Path) -> None:
    topo, frames = replay_topology(tmp_path)
    drops, every = tmp_path / "drops.pcapng", tmp_path / "all.pcapng"
    res = xdptui(
        "run", str(topo), "--duration", "2ms", "--json", "-",
        "--pcap", f"eth0:drop={drops}", "--pcap", f"eth0:all={every}",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    dropped = [f for f in frames if f[36:38] == (53).to_bytes(2, "big")]
    assert report["devices"]["eth0"]["counters"]["xdp_drop"] == len(dropped)
    assert sorted(tcpdump_frames(drops)) == sorted(dropped)
    assert sorted(tcpdump_frames(every)) == sorted(frames)
    for dev, comment, _, _ in pcapng_blocks(drops):
        assert dev == "eth0"
        assert "returned XDP_DROP" in comment and "NAPI poll on cpu" in comment
    passed = [b for b in pcapng_blocks(every) if "XDP_PASS" in b[1]]
    assert len(passed) == len(frames) - len(dropped)


@needs_tcpdump
def test_run_pcap_tx_holds_what_left_the_device(tmp_path: Path) -> None:
    """dual_port's hairpin: every frame eth1 sent is one its TX counter counted."""
    out = tmp_path / "tx.pcapng"
    res = xdptui(
        "run", str(ROOT / "topologies/dual_port.yaml"), "--duration", "200us", "--json", "-",
        "--pcap", f"eth1:tx={out}",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    sent = json.loads(res.stdout)["devices"]["eth1"]["counters"]["tx_packets"]
    blocks = pcapng_blocks(out)
    times = [b[3] for b in blocks]
    assert times == sorted(times)
    # frames queued by 200 us: those on the wire by then are tx_packets, the rest still queued
    assert 0 < sent <= len(tcpdump_frames(out))
    assert all("TX ring" in b[1] for b in blocks)


@needs_tcpdump
def test_trace_pcap_shows_the_frame_before_and_after_the_program(tmp_path: Path) -> None:
    out = tmp_path / "trace.pcapng"
    res = xdptui(
        "trace", str(ROOT / "topologies/bpf_router.yaml"), "--at", "1ms", "--json",
        "--pcap", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    hops = json.loads(res.stdout)["hops"]
    run = next(h["program"] for h in hops if "program" in h)
    blocks = pcapng_blocks(out)
    assert tcpdump_frames(out) == [b[2] for b in blocks]
    before = next(b for b in blocks if b[1].startswith("before"))
    after = next(b for b in blocks if b[1].startswith("after"))
    assert (before[2].hex(), after[2].hex()) == (run["before"], run["after"])
    assert before[2] != after[2]  # the router rewrote the MACs and the TTL
    assert {b[0] for b in blocks} == {h["dev"] for h in hops}  # an interface per device
    assert blocks[-1][1] == f"{hops[-1]['stage']}: {hops[-1]['detail']}"


def test_a_bad_pcap_argument_is_one_error_line(tmp_path: Path) -> None:
    topo = ROOT / "topologies/dual_port.yaml"
    for arg, says in (
        ("eth9:rx=x.pcapng", "no device 'eth9'"),
        ("eth0:sent=x.pcapng", "WHAT is one of rx, tx, drop, pass, redirect, all"),
        ("eth0", "give DEV:WHAT=OUT.pcapng"),
    ):
        res = xdptui("run", str(topo), "--duration", "10us", "--pcap", arg)
        assert res.returncode == 2
        assert says in res.stderr and "Traceback" not in res.stderr
