"""The data path with real objects against the machine's kernel: the same .o attached with
``ip link set dev ... xdp obj`` to a veth pair in a throwaway network namespace, the same frames
sent, and what the kernel counts in the object's maps, the tag it gives the program and the
bytes the peer receives compared with the simulator's. Skips with the reason where the machine
cannot (not root, no BPF, no ``unshare``/``ip``/``bpftool``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from typing import Any

import bpf_kernel_oracle as kern
import pytest
from conftest import ROOT, topo

from xdptui.sim.core import derived
from xdptui.sim.engine import Simulator

OBJECTS = ROOT / "topologies" / "bpf"


def _why_not() -> str | None:
    why = kern.available()
    if why is not None:
        return why
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    res = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if res.returncode != 0:
        return "unshare -n is not permitted here"
    return None


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")

# Runs inside `unshare -n`: a veth pair, objects attached, frames sent from veth0 with an
# AF_PACKET socket, what veth0 receives back captured, the programs' maps dumped by bpftool.
NETNS_SCRIPT = textwrap.dedent(
    r"""
    import json, socket, subprocess, sys, time
    args = json.loads(sys.stdin.read())
    def sh(*cmd):
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
    sh("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
    for dev, obj in args["attach"].items():
        sh("ip", "link", "set", "dev", dev, "xdp", "obj", obj, "sec", "xdp")
    sh("ip", "link", "set", "dev", "veth0", "up")
    sh("ip", "link", "set", "dev", "veth1", "up")
    time.sleep(0.2)
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    rx.bind(("veth0", 0))
    rx.settimeout(0.05)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind(("veth0", 0))
    for frame in args["frames"]:
        tx.send(bytes.fromhex(frame))
    got = []
    deadline = time.time() + 2
    while time.time() < deadline and len(got) < args["expect"]:
        try:
            data, addr = rx.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING:
            got.append(data.hex())
    out = {"received": got, "progs": {}}
    for dev in args["attach"]:
        link = json.loads(sh("ip", "-j", "-d", "link", "show", "dev", dev))[0]
        prog_id = link["xdp"]["prog"]["id"]
        prog = json.loads(sh("bpftool", "-j", "prog", "show", "id", str(prog_id)))
        maps = {}
        for map_id in prog.get("map_ids", []):
            info = json.loads(sh("bpftool", "-j", "map", "show", "id", str(map_id)))
            maps[info["name"]] = json.loads(sh("bpftool", "-j", "map", "dump", "id", str(map_id)))
        out["progs"][dev] = {"tag": prog["tag"], "maps": maps}
    print(json.dumps(out))
    """
)


def _kernel(attach: dict[str, str], frames: list[bytes], expect: int) -> dict[str, Any]:
    doc = {"attach": attach, "frames": [f.hex() for f in frames], "expect": expect}
    res = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", NETNS_SCRIPT],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if res.returncode != 0:
        pytest.skip(f"kernel oracle: the namespace set-up failed: {res.stderr.strip()[-300:]}")
    out: dict[str, Any] = json.loads(res.stdout)
    return out


VETH = """
    cpus: 1
    devices:
      veth0: {type: veth, peer: veth1, xdp: PROG0}
      veth1: {type: veth, peer: veth0, xdp: PROG1}
    traffic:
      - {name: app, from: veth0, rate: 100Kpps, count: COUNT, size: [64, 200, 1000], flows: 6,
         src_ip: 10.9.0.1-10.9.0.6, dst_ip: 10.9.1.1, src_port: 5000-5005, dst_port: 53,
         src_mac: 02:00:00:00:00:01, dst_mac: 02:00:00:00:00:02}
"""


def _sim(prog0: str, prog1: str, count: int, run: bool = True) -> Simulator:
    text = VETH.replace("PROG0", prog0).replace("PROG1", prog1).replace("COUNT", str(count))
    sim = Simulator(topo(text, str(ROOT / "topologies" / "inline.yaml")), exact=True)
    if run:
        sim.run_until(count * 10_000 + 2_000_000)
    return sim


def _frames(sim: Simulator, count: int) -> list[bytes]:
    """The frames the simulator's source sent, in order (frame n is entry n % L)."""
    src = sim.world.sources[0]
    data = derived.frame_bytes(sim.world.entries)
    return [data[src.offset + n % len(src.table)] for n in range(count)]


def _sum_key(dump: list[dict[str, Any]], key0: int, field: int) -> int:
    for elem in dump:
        if int(elem["key"][0], 16) == key0:
            return sum(
                int.from_bytes(bytes(int(b, 16) for b in v["value"][field : field + 8]), "little")
                for v in elem["values"]
            )
    return 0


def test_counters_and_tag_match_the_kernel_for_the_same_frames():
    """count_proto.o on veth1: the kernel's proto_stats[17] (summed over CPUs) and the
    simulator's, after the same 90 frames; and the program tag bpftool shows."""
    count = 90
    sim = _sim("xdp_pass", "bpf/count_proto.o", count)
    kernel = _kernel({"veth1": str(OBJECTS / "count_proto.o")}, _frames(sim, count), 0)
    ours = json.loads(sim.submit("bpftool -j map dump name proto_stats").reply)
    theirs = kernel["progs"]["veth1"]["maps"]["proto_stats"]
    for field in (0, 8):
        assert _sum_key(ours, 17, field) == _sum_key(theirs, 17, field)
    assert _sum_key(ours, 17, 0) == count
    shown = json.loads(sim.submit("bpftool -j prog show").reply)
    ours_tag = next(p["tag"] for p in shown if p["name"] == "xdp_count_proto")
    assert ours_tag == kernel["progs"]["veth1"]["tag"]


def test_xdp_tx_on_a_veth_delivers_the_swapped_frame_the_kernel_delivers():
    """mac_swap.o on veth1 bounces each frame to veth0 (whose own program, count_proto.o,
    passes it up): the bytes veth0's stack receives are the simulator's output frames."""
    count = 6
    sim = _sim("bpf/count_proto.o", "bpf/mac_swap.o", count)
    kernel = _kernel(
        {"veth0": str(OBJECTS / "count_proto.o"), "veth1": str(OBJECTS / "mac_swap.o")},
        _frames(sim, count),
        count,
    )
    c = sim.report()["devices"]["veth0"]["counters"]
    assert c["xdp_pass"] == count
    fresh = _sim("bpf/count_proto.o", "bpf/mac_swap.o", count, run=False)
    ours = []
    for flow in range(count):  # frame n of the source is flow n: its first frame
        hops = fresh.trace("app", flow)
        ours.append(next(h.program for h in hops if h.program is not None).after.hex())
    assert sorted(kernel["received"]) == sorted(ours)
    assert _sum_key(kernel["progs"]["veth0"]["maps"]["proto_stats"], 17, 0) == count
