"""Real XDP objects in the data path: verdict counts, map counters and output bytes follow the
program's logic and the configured traffic, in both modes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, TOPOLOGIES, topo

from xdptui.bpf import vm
from xdptui.sim.core import derived
from xdptui.sim.dev.nic import Nic
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

OBJECTS = ROOT / "topologies" / "bpf"
MODES = [pytest.param(False, id="fast"), pytest.param(True, id="exact")]


def _sim(tmp_path: Path, text: str, exact: bool = False, **files: str) -> Simulator:
    """A simulator on ``text`` written beside copies of the shipped objects (``bpf/*.o``)."""
    shutil.copytree(OBJECTS, tmp_path / "bpf", dirs_exist_ok=True)
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    return Simulator(topo(text, str(tmp_path / "t.yaml")), exact=exact)


def _dump(sim: Simulator, name: str) -> list[dict[str, Any]]:
    res = sim.submit(f"bpftool -j map dump name {name}")
    assert res.ok, res.reply
    out: list[dict[str, Any]] = json.loads(res.reply)
    return out


def _u64(hexes: list[str], at: int) -> int:
    return int.from_bytes(bytes(int(x, 16) for x in hexes[at : at + 8]), "little")


def _ipv4_ok(frame: bytes, ip: int = 14) -> bool:
    words = [int.from_bytes(frame[i : i + 2], "big") for i in range(ip, ip + 20, 2)]
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


COUNT_PROTO = """
    cpus: 4
    devices:
      eth0: {type: nic, driver: ice, speed: 25G, queues: 4, xdp: bpf/count_proto.o}
    traffic:
      - {name: g, to: eth0, rate: 1Mpps, count: 3000, size: [64, 128], proto: udp, flows: 60,
         src_ip: 198.18.0.1-198.18.0.60, src_port: 1000-1059}
"""


@pytest.mark.parametrize("exact", MODES)
def test_per_cpu_counters_advance_by_the_frames_each_cpu_polled(tmp_path: Path, exact: bool):
    """count_proto.c adds 1 and the frame's length to proto_stats[17] on the CPU running it:
    a CPU's counters are the frames its NAPI took from the queues whose IRQ it serves."""
    sim = _sim(tmp_path, COUNT_PROTO, exact)
    sim.run_until(6_000_000)
    rep = sim.report()
    eth0 = rep["devices"]["eth0"]
    assert eth0["counters"]["xdp_pass"] == eth0["counters"]["rx_packets"] == 3000
    polled = [0] * 4
    for q in eth0["queues"]:
        polled[q["cpu"]] += q["rx_packets"]
    (elem,) = [e for e in _dump(sim, "proto_stats") if e["key"][0] == "0x11"]
    packets = [_u64(v["value"], 0) for v in elem["values"]]
    assert packets == polled
    # frame n is entry n % 60, sizes alternate 64, 128: 1500 of each
    assert sum(_u64(v["value"], 8) for v in elem["values"]) == 1500 * 64 + 1500 * 128
    (obj,) = rep["objects"]
    assert obj["per_frame"] is None and obj["approximated"] == 0
    (only,) = obj["maps"]["proto_stats"]["elements"]
    assert only["key"] == "11000000"


SWAPPED = (  # veth0's program: XDP_DROP (1) for a frame whose source is the traffic's destination
    "import numpy as np\n"
    "def swapped(ctx):\n"
    "    return np.where(ctx.src_mac == 0x002233445566, 1, 2)\n"
)
BOUNCE = """
    cpus: 2
    devices:
      veth0: {{type: veth, peer: veth1, xdp: check.py:swapped}}
      veth1: {{type: veth, peer: veth0, xdp: bpf/mac_swap.o}}
    traffic:
      - {{name: app, from: veth0, rate: {rate}, size: [64, 300], flows: 8,{count}
         src_mac: 00:11:22:33:44:55, dst_mac: 00:22:33:44:55:66}}
"""


def test_the_next_hop_sees_the_swapped_macs(tmp_path: Path):
    """mac_swap.c on veth1 bounces each frame with its MACs swapped; veth0's program (Python,
    over header rows) drops exactly the frames whose source is the traffic's destination."""
    text = BOUNCE.format(rate="1Mpps", count=" count: 1000,")
    sim = _sim(tmp_path, text, **{"check.py": SWAPPED})
    sim.run_until(3_000_000)
    c0 = sim.report()["devices"]["veth0"]["counters"]
    c1 = sim.report()["devices"]["veth1"]["counters"]
    assert c1["xdp_tx"] == 1000
    assert c0["xdp_drop"] == 1000 and c0["xdp_pass"] == 0
    # veth1's ring holds the app's skbs, counted without their Ethernet header (skb->len);
    # its XDP_TX frames reach veth0's ring whole (veth_xdp_rcv's xdp_bytes, both)
    assert c1["rx_bytes"] == 500 * (64 - 14) + 500 * (300 - 14)
    assert c1["tx_bytes"] == 500 * 64 + 500 * 300


@pytest.mark.parametrize("exact", MODES)
def test_an_encapsulation_grows_what_the_wire_carries(tmp_path: Path, exact: bool):
    """encap_ipip.c pushes a 20-byte outer IPv4 header (bpf_xdp_adjust_head) and XDP_TXes:
    every frame leaves 20 bytes longer, and what leaves is IPIP (protocol 4)."""
    text = """
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, speed: 10G, queues: 2, xdp: bpf/encap_ipip.o}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, count: 2000, size: 100, flows: 16}
    """
    sim = _sim(tmp_path, text, exact)
    hops = sim.trace("g", 3)
    sim.run_until(4_000_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert c["xdp_tx"] == c["tx_packets"] == 2000
    assert c["tx_bytes"] == 2000 * 120
    (run,) = [h.program for h in hops if h.program is not None]
    assert len(run.after) == len(run.before) + 20 == 120
    assert run.after[23] == 4 and run.after[14 + 20 + 9] == 17  # IPIP around UDP
    assert _ipv4_ok(run.after)


ROUTER = """
    cpus: 2
    devices:
      eth0: {type: nic, driver: ice, speed: 25G, queues: 2, xdp: bpf/router_stats.o}
      eth1: {type: nic, driver: ice, speed: 25G, queues: 2, xdp: xdp_pass}
      eth2: {type: nic, driver: ice, speed: 25G, queues: 2, xdp: xdp_pass}
    maps:
      tx_port: {type: devmap, max_entries: 4, entries: {0: eth1, 1: eth2}}
    traffic:
      - {name: g, to: eth0, rate: 2Mpps, size: 64, flows: 8, dst_ip: 10.0.0.0-10.0.0.3,
         count: COUNT}
"""


def test_a_redirect_sends_the_rewritten_frame(tmp_path: Path):
    """router_stats.c decrements the TTL (fixing the checksum) and rewrites the MACs before
    bpf_redirect_map: the frames in eth1's and eth2's TX rings carry TTL 63, the router's
    source MAC and a valid header checksum (1G ports, so their rings hold frames)."""
    slow = ROUTER.replace("COUNT", "40000").replace("rate: 2Mpps", "rate: 10Mpps")
    for port in ("eth1", "eth2"):
        slow = slow.replace(
            f"{port}: {{type: nic, driver: ice, speed: 25G",
            f"{port}: {{type: nic, driver: ice, speed: 1G",
        )
    sim = _sim(tmp_path, slow, exact=True)
    sim.run_until(300_000)
    e = sim.world.entries
    data = derived.frame_bytes(e)
    seen = 0
    for name in ("eth1", "eth2"):
        nic = sim.world.devices[name]
        assert isinstance(nic, Nic)
        for ring in nic.tx:
            for entry in ring.fifo.column("entry").tolist():
                frame = data[entry]
                assert frame[22] == 63 and frame[6:12] == bytes.fromhex("0200000000fe")
                assert _ipv4_ok(frame)
                seen += 1
    assert seen > 0


@pytest.mark.parametrize("exact", MODES)
def test_router_counters_and_verdicts_follow_the_traffic(tmp_path: Path, exact: bool):
    """4000 frames over destinations .0 .. .3 (flow i -> 10.0.0.(i % 4)): 1000 per slot,
    counted in slot_stats; slots 0 and 1 redirect to eth1 and eth2, 2 and 3 pass."""
    sim = _sim(tmp_path, ROUTER.replace("COUNT", "4000"), exact)
    sim.run_until(5_000_000)
    rep = sim.report()
    d = rep["devices"]
    assert d["eth0"]["counters"]["xdp_redirect"] == 2000
    assert d["eth0"]["counters"]["xdp_pass"] == 2000
    assert d["eth1"]["counters"]["tx_packets"] == d["eth2"]["counters"]["tx_packets"] == 1000
    for elem in _dump(sim, "slot_stats"):
        assert sum(_u64(v["value"], 0) for v in elem["values"]) == 1000
        assert sum(_u64(v["value"], 8) for v in elem["values"]) == 1000 * 64


RR = """
    cpus: 1
    devices:
      eth0: {type: nic, driver: ice, speed: 10G, queues: 1, xdp: bpf/rr_devmap.o}
      eth1: {type: nic, driver: ice, speed: 10G, queues: 1, xdp: xdp_pass}
      eth2: {type: nic, driver: ice, speed: 10G, queues: 1, xdp: xdp_pass}
    maps:
      rr_ports: {type: devmap, max_entries: 2, entries: {0: eth1, 1: eth2}}
    traffic:
      - {name: g, to: eth0, rate: 1Mpps, count: 1001, size: 64, flows: 4}
"""


def test_a_program_reading_state_it_writes_runs_frame_by_frame_in_exact_mode(tmp_path: Path):
    """rr_devmap.c alternates slots with a per-CPU counter it reads and advances: frame k goes
    to slot k % 2 whatever its flow, so eth1 sends 501 of 1001 frames and eth2 500."""
    sim = _sim(tmp_path, RR, exact=True)
    sim.run_until(3_000_000)
    d = sim.report()["devices"]
    assert d["eth1"]["counters"]["tx_packets"] == 501
    assert d["eth2"]["counters"]["tx_packets"] == 500
    (elem,) = _dump(sim, "rr_next")
    assert _u64(elem["values"][0]["value"] + ["0x00"] * 4, 0) == 1001
    show = sim.submit("bpftool prog show").reply
    assert "run frame by frame in exact mode (stores into rr_next)" in show
    (obj,) = sim.report()["objects"]
    assert obj["frames_run"] == 1001 and obj["approximated"] == 0


def test_fast_mode_approximates_a_stateful_program_and_says_so(tmp_path: Path):
    sim = _sim(tmp_path, RR, exact=False)
    sim.run_until(3_000_000)
    d = sim.report()["devices"]
    one, two = d["eth1"]["counters"]["tx_packets"], d["eth2"]["counters"]["tx_packets"]
    assert one + two == 1001
    assert one == pytest.approx(500, rel=0.15) and two == pytest.approx(500, rel=0.15)
    (obj,) = sim.report()["objects"]
    assert obj["per_frame"] == "stores into rr_next" and obj["approximated"] > 0
    assert "fast mode approximated" in sim.submit("bpftool prog show").reply


def test_a_live_swap_changes_verdicts_and_counters_from_that_instant():
    """bpf_reflector: mac_swap.o until 3 ms, count_proto.o after: every poll before the swap
    is all XDP_TX, every poll after it all XDP_PASS, and proto_stats counts exactly the
    frames of the polls after it."""
    sim = Simulator(load_topology(TOPOLOGIES / "bpf_reflector.yaml"), exact=True)
    sim.run_until(5_000_000)
    polls = [e for e in sim.events() if e["kind"] == "napi_poll" and e["frames"]]
    before = [p for p in polls if p["t_ns"] < 3_000_000]
    after = [p for p in polls if p["t_ns"] >= 3_000_000]
    assert before and after
    assert all(set(p["verdicts"]) == {"XDP_TX"} for p in before)
    assert all(set(p["verdicts"]) == {"XDP_PASS"} for p in after)
    passed = sum(p["verdicts"]["XDP_PASS"] for p in after)
    (elem,) = [e for e in _dump(sim, "proto_stats") if e["key"][0] == "0x11"]
    assert sum(_u64(v["value"], 0) for v in elem["values"]) == passed


def test_a_stateless_program_runs_once_per_flow_table_entry(tmp_path: Path, monkeypatch):
    """count_proto over 60 entries and ~12,000 frames: the interpreter sees each entry's frame
    once (a probe), never each frame."""
    ran: list[int] = []
    real = vm.run_batch

    def counting(prog: Any, packets: list[bytes], **kw: Any) -> Any:
        ran.append(len(packets))
        return real(prog, packets, **kw)

    monkeypatch.setattr(vm, "run_batch", counting)
    sim = _sim(tmp_path, COUNT_PROTO.replace("count: 3000", "count: 12000"))
    sim.run_until(20_000_000)
    assert sim.report()["devices"]["eth0"]["counters"]["xdp_pass"] == 12000
    assert sum(ran) <= 60


@pytest.mark.parametrize("name", ["bpf_reflector", "bpf_router"])
def test_runs_do_not_depend_on_how_time_is_cut_or_rewound(name: str):
    t = load_topology(TOPOLOGIES / f"{name}.yaml")
    whole = Simulator(t, exact=True)
    whole.run_until(6_000_000)
    cut = Simulator(t, exact=True)
    cut.run_until(2_500_000)
    cut.run_until(6_000_000)
    again = Simulator(t, exact=True)
    again.run_until(5_000_000)
    again.rewind(1_500_000)
    again.run_until(6_000_000)
    reports = [json.dumps(s.report(), sort_keys=True) for s in (whole, cut, again)]
    assert reports[0] == reports[1] == reports[2]


def test_entries_hold_the_bytes_a_source_sends():
    """The vectorised frame builder gives ``build_frame_bytes``' frames, checksums included."""
    from xdptui.bpf import build_frame_bytes

    sim = Simulator(load_topology(TOPOLOGIES / "bpf_router.yaml"))
    e = sim.world.entries
    data = derived.frame_bytes(e)
    for j in (0, 5, 31):
        mac = lambda v: ":".join(f"{(int(v) >> s) & 255:02x}" for s in range(40, -8, -8))  # noqa: E731
        ip = lambda v: ".".join(str((int(v) >> s) & 255) for s in (24, 16, 8, 0))  # noqa: E731
        want = build_frame_bytes(
            src_mac=mac(e.src_mac[j]),
            dst_mac=mac(e.dst_mac[j]),
            src_ip=ip(e.src_ip[j]),
            dst_ip=ip(e.dst_ip[j]),
            proto=int(e.proto[j]),
            src_port=int(e.src_port[j]),
            dst_port=int(e.dst_port[j]),
            size=int(e.size[j]),
        )
        assert data[j] == want


def test_a_rewritten_frame_parses_back_into_its_headers(tmp_path: Path):
    sim = _sim(tmp_path, ROUTER.replace("COUNT", "100"), exact=True)
    sim.run_until(1_000_000)
    e = sim.world.entries
    made = np.arange(e.sources_end, len(e))
    assert len(made)
    assert (e.src_mac[made] == 0x0200000000FE).all()
    assert (e.dst_ip[made] >> 8 == 0x0A0000).all()  # 10.0.0.x, as sent
    assert (e.size[made] == 64).all()


BARE = """
    cpus: 2
    devices:
      eth0: {type: nic, driver: ice, queues: 2, xdp: xdp_pass}
      eth1: {type: nic, driver: ice, queues: 2}
      veth0: {type: veth, peer: veth1}
      veth1: {type: veth, peer: veth0}
    maps:
      ports: {type: devmap, max_entries: 2, entries: {0: veth0}}
"""


def test_loading_refusals_carry_the_kernels_errno_and_change_nothing(tmp_path: Path):
    sim = _sim(tmp_path, BARE)
    before = (dict(sim.world.maps), sim.world.next_map_id, sim.world.next_prog_id)
    cases = [
        ("ip link set dev eth1 xdp obj bpf/nope.o", "ENOENT", "failed to open object file"),
        ("ip link set dev eth1 xdp obj bpf/egress_vlan_tag.o", "EINVAL", "can not be attached"),
        ("ip link set dev eth1 xdp obj bpf/mac_swap.o sec tc", "ENOENT", "no program or section"),
        ("ip link set dev eth1 xdp obj bpf/mac_swap.o param x=1", "EINVAL", "takes no params"),
        ("ip link set dev eth0 xdp obj bpf/router_stats.o", "EBUSY", "already attached"),
        ("bpftool map update name ports key 1 value veth0 egress bpf/mac_swap.o", "EINVAL", ""),
        ("bpftool map dump name slot_stats", "ENOENT", "get map by name"),
        ("bpftool map dump id 42", "ENOENT", "get map by id 42"),
    ]
    for line, errno, words in cases:
        res = sim.submit(line)
        assert (res.ok, res.errno) == (False, errno), (line, res.reply)
        assert words in res.reply, (line, res.reply)
    assert "tx_port" not in sim.world.maps  # router_stats.o's devmap was not created
    assert (dict(sim.world.maps), sim.world.next_map_id) == before[:2]


def test_a_devmap_the_object_declares_must_match_the_hosts(tmp_path: Path):
    sim = _sim(tmp_path, BARE.replace("ports:", "tx_port:"))
    res = sim.submit("ip link set dev eth1 xdp obj bpf/router_stats.o")
    assert res.errno == "EINVAL" and "couldn't reuse map 'tx_port'" in res.reply


def test_an_objects_maps_are_listed_and_dumped_by_id_and_name(tmp_path: Path):
    sim = _sim(tmp_path, BARE)
    assert sim.submit("ip link set dev eth1 xdp obj bpf/router_stats.o sec xdp").ok
    shown = sim.submit("bpftool map show").reply
    assert "1: devmap  name ports" in shown
    # the declared maps first (tx_port made on the host), then libbpf's global data map
    assert "2: percpu_array  name slot_stats  flags 0x0" in shown
    assert "3: devmap  name tx_port  flags 0x80" in shown
    assert "4: array  name router_s.rodata  flags 0x480" in shown  # internal_map_name
    assert (
        sim.submit("bpftool map dump id 2").reply
        == sim.submit("bpftool map dump name slot_stats").reply
    )
    prog = json.loads(sim.submit("bpftool -j prog show").reply)[-1]
    assert prog["name"] == "xdp_router_stat" and prog["map_ids"] == [2, 3, 4]
    assert sim.submit("bpftool map update name tx_port key 1 value veth0").ok


def test_a_topology_names_objects_beside_it_and_check_verifies_them(tmp_path: Path):
    from xdptui.topology_io import TopologyError

    shutil.copytree(OBJECTS, tmp_path / "bpf")
    (tmp_path / "bpf" / "junk.o").write_bytes(b"not an ELF file")
    bad = {
        "eth0: {type: nic, xdp: {program: xdp_pass, section: xdp}}": "section applies to",
        "eth0: {type: nic, xdp: {program: bpf/mac_swap.o, params: {a: 1}}}": "takes no params",
        "eth0: {type: nic, xdp: bpf/junk.o}": "not an ELF object",
        "eth0: {type: nic, xdp: ../bpf/mac_swap.o}": "file '../bpf/mac_swap.o' not found",
        "eth0: {type: nic, xdp: {program: bpf/mac_swap.o, section: nope}}": "no program",
    }
    for device, words in bad.items():
        path = tmp_path / "t.yaml"
        path.write_text(f"devices:\n  {device}\n")
        with pytest.raises(TopologyError) as info:
            load_topology(path)
        assert words in str(info.value), (device, str(info.value))
    path = tmp_path / "t.yaml"
    path.write_text("devices:\n  eth0: {type: nic, xdp: {program: bpf/mac_swap.o, section: xdp}}\n")
    spec = load_topology(path).devices[0].xdp
    assert spec is not None and spec.program == f"{tmp_path / 'bpf' / 'mac_swap.o'}:xdp"


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang to build the program")
def test_a_program_indexing_a_map_value_by_a_packet_byte_is_refused_at_load(tmp_path: Path):
    """fault_map_index.c indexes a one-u64 map value by a payload byte (0..255, so up to
    byte 2040): the verifier refuses it at load with the kernel's message, whatever traffic
    the topology sends (a short frame that never reaches the read changes nothing)."""
    import subprocess

    obj = tmp_path / "fault.o"
    src = ROOT / "tests" / "programs" / "fault_map_index.c"
    inc = "-I/usr/include/x86_64-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", inc, "-c", str(src), "-o", str(obj)]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        pytest.skip("clang could not build the program (libbpf headers missing?)")
    text = """
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, size: SIZE}
    """
    for size in ("100", "60"):
        sim = _sim(tmp_path, text.replace("SIZE", size))
        res = sim.submit(f"ip -force link set dev eth0 xdp obj {obj}")
        assert res.errno == "EACCES"
        assert "invalid access to map value, value_size=8 off=2040 size=8" in res.reply
        assert "max value is outside of the allowed memory range" in res.reply


@pytest.mark.parametrize("exact", MODES)
def test_a_stateful_programs_run_does_not_depend_on_cuts_or_rewinds(tmp_path: Path, exact: bool):
    """rr_devmap's counter and pinned outcomes are state: copied with checkpoints, replayed."""
    text = RR.replace("count: 1001", "count: 3000")
    runs = []
    for cuts in ((2_500_000,), (700_000, 1_900_000, 2_500_000)):
        sim = _sim(tmp_path, text, exact)
        for t in cuts:
            sim.run_until(t)
        runs.append(sim)
    back = _sim(tmp_path, text, exact)
    back.run_until(2_000_000)
    back.rewind(900_000)
    back.run_until(2_500_000)
    runs.append(back)
    reports = [json.dumps(s.report(), sort_keys=True) for s in runs]
    assert reports[0] == reports[1] == reports[2]


def test_the_shipped_topologies_carry_the_examples_objects():
    for obj in OBJECTS.glob("*.o"):
        assert obj.read_bytes() == (ROOT / "examples" / "bpf" / obj.name).read_bytes(), obj.name


async def test_the_follow_view_shows_a_programs_run_on_the_frame() -> None:
    """In the app, following a frame through bpf_router lists router_stats.o's run: the frame
    in and out and the per-CPU counter it wrote."""
    from test_app import open_tab
    from test_dashboard import SIZE, choose, paths

    from xdptui.app import make_app

    app = make_app(str(TOPOLOGIES / "bpf_router.yaml"), paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "drops")
        await pilot.press("f")
        await pilot.pause()
        await choose(pilot, "pktgen:0")
        # Exact mode narrow: the event strip and the packet panel share the screen, so the
        # follow view is a few rows tall; read it as a user does, scrolling down a page at a time.
        panel = app.main_screen.paths_panel
        pages = []
        for top in range(0, panel.virtual_size.height, max(1, panel.size.height)):
            panel.scroll_to(y=top, animate=False, immediate=True)
            await pilot.pause()
            pages.append(paths(app))
        text = "\n".join(pages)
        assert "xdp_router_stats (id 1) ran" in text
        assert "frame in  (64 B)" in text and "frame out (64 B)" in text
        assert "map slot_stats [00 00 00 00] cpu" in text


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang to build the program")
@pytest.mark.parametrize("exact", MODES)
def test_a_redirect_checks_the_size_the_program_left(tmp_path: Path, exact: bool):
    """encap_redirect.c grows each frame by 20 bytes and redirects it to eth1 (MTU 1500, so
    xdp_ok_fwd_dev takes up to 1518 bytes): 1400-byte frames go, 1500-byte ones become
    EMSGSIZE (xdp_redirect_err) -- judged on the frame the program left, not the one it got."""
    import subprocess

    obj = tmp_path / "encap_redirect.o"
    src = ROOT / "tests" / "programs" / "encap_redirect.c"
    inc = "-I/usr/include/x86_64-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", inc, "-c", str(src), "-o", str(obj)]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        pytest.skip("clang could not build the program (libbpf headers missing?)")
    text = """
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, speed: 25G, queues: 1, xdp: encap_redirect.o}
          eth1: {type: nic, driver: ice, speed: 25G, queues: 1, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 100Kpps, count: 1000, size: [1400, 1500]}
    """
    sim = _sim(tmp_path, text, exact)
    sim.run_until(12_000_000)
    rep = sim.report()
    assert rep["devices"]["eth1"]["counters"]["tx_packets"] == 500
    assert rep["devices"]["eth1"]["counters"]["tx_bytes"] == 500 * 1420
    errs = {(x["dev"], x["err"]): x["count"] for x in rep["tracepoints"]["xdp_redirect_err"]}
    assert errs == {("eth0", "EMSGSIZE"): 500}


def test_check_lists_the_objects_a_topology_loads_and_trace_prints_their_runs():
    from test_cli import xdptui

    res = xdptui("check", str(TOPOLOGIES / "bpf_router.yaml"))
    assert res.returncode == 0
    assert "names 2 BPF objects (verified; they run in xdptui's eBPF interpreter" in res.stdout
    assert f"devices.eth0.xdp: {TOPOLOGIES / 'bpf' / 'router_stats.o'}" in res.stdout
    res = xdptui("trace", str(TOPOLOGIES / "bpf_router.yaml"), "--at", "1ms", "--json")
    hops = json.loads(res.stdout)["hops"]
    (run,) = [h["program"] for h in hops if "program" in h]
    assert run["name"] == "xdp_router_stats" and run["action"] == "XDP_REDIRECT"
    assert bytes.fromhex(run["after"])[22] == 63  # the TTL it left
    assert run["maps"][0]["map"] == "slot_stats" and run["maps"][0]["kind"] == "write"


def test_a_veth_bouncing_rewritten_frames_is_the_same_in_both_modes(tmp_path: Path):
    """mac_swap.c on veth1 at 4 Mpps, its ring overflowing: NAPI's loop feeds veth0 the frames
    the object left (MACs swapped), as exact mode does, so veth0's Python program drops all of
    them in fast mode too."""
    from xdptui.modes_check import compare

    text = BOUNCE.format(rate="4Mpps", count="")
    sim = _sim(tmp_path, text, **{"check.py": SWAPPED})
    c = compare(sim.topology, [1_000_000, 2_000_000, 3_000_000])
    assert c.compared > 100 and c.differing == ()
    sim.run_until(3_000_000)
    c0 = sim.report()["devices"]["veth0"]["counters"]
    assert c0["xdp_drop"] > 5000 and c0["xdp_pass"] == 0
