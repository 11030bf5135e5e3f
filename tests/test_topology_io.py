"""The topology loader: YAML (v1) -> Topology values, and FILE:LINE:COL diagnostics."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
import yaml

from xdptui.model.topology import (
    BondSpec,
    Loc,
    NicSpec,
    Range,
    TunSpec,
    VethSpec,
    XdpSpec,
)
from xdptui.model.units import LINE, Rate
from xdptui.sim.engine import Simulator
from xdptui.topology_io import (
    CommandValidator,
    Diagnostic,
    TopologyError,
    load_topology,
    loads_topology,
)

FULL = """\
name: full house
description: every kind of device
seed: 7
cpus: 16
devices:
  eth0: {type: nic, driver: ice, speed: 100G, queues: 2, ring: 512, irq_cpus: [0, 3]}
  eth1: {type: nic, driver: ixgbe, speed: 10G, up: false, mtu: 3000, tx_ring: 1024}
  bond0:
    type: bond
    mode: 802.3ad
    xmit_hash_policy: layer3+4
    slaves: [eth0, eth1]
    miimon: 50
    xdp: {program: redirect_map, mode: native, params: {map: tx_ports, key: 1}}
  tap0: {type: tun, mode: tap, queues: 2, tx_queue_len: 1000, reader: 2Mpps, xdp: xdp_pass}
  veth0: {type: veth, peer: veth1}
  veth2: {type: veth, peer: veth3, queues: 2}
  veth3: {type: veth, peer: veth2, xdp: {program: redirect, params: {dev: eth1}}}
maps:
  tx_ports:
    type: devmap
    max_entries: 64
    entries:
      1: {dev: tap0, egress: xdp_pass}
      0: eth1
traffic:
  - name: gen0
    to: eth0
    rate: 14.88Mpps
    count: 100
    start: 1ms
    size: [64, 576, 1500]
    proto: tcp
    src_mac: 00:11:22:33:44:00-00:11:22:33:44:ff
    dst_mac: 02:00:00:00:00:01
    src_ip: 10.0.0.0/24
    dst_ip: 198.18.0.1-198.18.0.254
    src_port: 1024-65535
    dst_port: 80
    vlan: 100
    flows: 1024
    random: true
  - {name: vm, from: veth1, rate: 40Gbps, gso: 0.3}
timeline:
  - {at: 5ms, do: "ip link set dev eth1 up"}
  - {at: 2ms, do: "ip link set dev eth1 down"}
  - {at: 2ms, do: "ethtool -L eth0 combined 1"}
lessons:
  - title: Bond hairpin
    steps:
      - text: Watch the rings
        commands: ["ip link set dev eth0 down", "ip link set dev eth0 up"]
      - text: Just talk
"""


def write(tmp_path: Path, text: str, name: str = "topo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def errors(tmp_path: Path, text: str, validate: CommandValidator | None = None) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(TopologyError) as info:
        load_topology(path, validate)
    return [str(d) for d in info.value.diagnostics]


def one_error(tmp_path: Path, text: str, validate: CommandValidator | None = None) -> str:
    """The single diagnostic, without the directory part of the file name."""
    found = errors(tmp_path, text, validate)
    assert len(found) == 1, found
    return found[0].removeprefix(f"{tmp_path}/")


NIC = "  eth0: {type: nic}\n"


# --- a valid topology ---------------------------------------------------------------------


def test_full_topology_top_level_values(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    assert topo.name == "full house"
    assert topo.description == "every kind of device"
    assert (topo.seed, topo.cpus) == (7, 16)
    assert topo.source == str(tmp_path / "topo.yaml")
    names = [d.name for d in topo.devices]
    assert names == ["eth0", "eth1", "bond0", "tap0", "veth0", "veth1", "veth2", "veth3"]


def test_full_topology_nics(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    eth0, eth1 = topo.device("eth0"), topo.device("eth1")
    assert eth0 == NicSpec(
        name="eth0", driver="ice", speed_bps=100_000_000_000, queues=2, ring=512,
        irq_cpus=(0, 3),
    )  # fmt: skip
    assert isinstance(eth1, NicSpec)
    assert (eth1.driver, eth1.speed_bps, eth1.up, eth1.mtu) == ("ixgbe", 10**10, False, 3000)
    assert (eth1.queues, eth1.ring, eth1.tx_ring) == (None, None, 1024)
    assert eth0.loc == Loc(str(tmp_path / "topo.yaml"), 6, 3)


def test_full_topology_bond_and_tun(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    assert topo.device("bond0") == BondSpec(
        name="bond0", mode="802.3ad", xmit_hash_policy="layer3+4", slaves=("eth0", "eth1"),
        miimon_ms=50,
        xdp=XdpSpec("redirect_map", "native", (("key", "1"), ("map", "tx_ports"))),
    )  # fmt: skip
    assert topo.device("tap0") == TunSpec(
        name="tap0", mode="tap", queues=2, tx_queue_len=1000, reader=Rate("pps", 2e6),
        xdp=XdpSpec("xdp_pass"),
    )  # fmt: skip


def test_veth_peer_not_listed_is_synthesized_after_its_declarer(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    veth1 = topo.device("veth1")
    assert veth1 == VethSpec(name="veth1", peer="veth0")
    assert (veth1.loc.line, veth1.loc.col) == (16, 29)  # the peer value that declared it
    assert topo.device("veth0") == VethSpec(name="veth0", peer="veth1")


def test_veth_listed_on_both_sides_keeps_own_settings(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    assert topo.device("veth2") == VethSpec(name="veth2", peer="veth3", queues=2)
    assert topo.device("veth3") == VethSpec(
        name="veth3", peer="veth2", xdp=XdpSpec("redirect", None, (("dev", "eth1"),))
    )


def test_full_topology_maps_sorted_by_key(tmp_path: Path) -> None:
    (tx_ports,) = load_topology(write(tmp_path, FULL)).maps
    assert (tx_ports.name, tx_ports.type, tx_ports.max_entries) == ("tx_ports", "devmap", 64)
    assert [(e.key, e.dev, e.egress) for e in tx_ports.entries] == [
        (0, "eth1", None),
        (1, "tap0", "xdp_pass"),
    ]
    assert tx_ports.entries[0].loc.line == 25


def test_full_topology_traffic_ranges_and_cidr(tmp_path: Path) -> None:
    gen0, vm = load_topology(write(tmp_path, FULL)).traffic
    assert (gen0.name, gen0.to, gen0.from_) == ("gen0", "eth0", None)
    assert gen0.rate == Rate("pps", 14.88e6)
    assert (gen0.count, gen0.start_ns, gen0.sizes, gen0.proto) == (
        100,
        1_000_000,
        (64, 576, 1500),
        "tcp",
    )
    assert gen0.src_mac == Range(0x001122334400, 0x0011223344FF)
    assert gen0.dst_mac == Range(0x020000000001, 0x020000000001)
    assert gen0.src_ip == Range(0x0A000001, 0x0A0000FE)  # 10.0.0.0/24 -> .1 .. .254
    assert gen0.dst_ip == Range(0xC6120001, 0xC61200FE)
    assert gen0.src_port == Range(1024, 65535)
    assert gen0.dst_port == Range(80, 80)
    assert (gen0.vlan, gen0.flows, gen0.random, gen0.gso) == (100, 1024, True, 0.0)
    assert (vm.from_, vm.to, vm.rate, vm.gso, vm.sizes) == (
        "veth1",
        None,
        Rate("bps", 40e9),
        0.3,
        (64,),
    )


def test_full_topology_timeline_sorted_stably_and_lessons(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, FULL))
    assert [(e.at_ns, e.do) for e in topo.timeline] == [
        (2_000_000, "ip link set dev eth1 down"),
        (2_000_000, "ethtool -L eth0 combined 1"),
        (5_000_000, "ip link set dev eth1 up"),
    ]
    (lesson,) = topo.lessons
    assert lesson.title == "Bond hairpin"
    assert [(s.text, s.commands) for s in lesson.steps] == [
        ("Watch the rings", ("ip link set dev eth0 down", "ip link set dev eth0 up")),
        ("Just talk", ()),
    ]


def test_validate_command_sees_every_timeline_and_lesson_command(tmp_path: Path) -> None:
    seen: list[str] = []

    def validate(cmd: str) -> None:
        seen.append(cmd)

    load_topology(write(tmp_path, FULL), validate)
    assert len(seen) == 5 and "ethtool -L eth0 combined 1" in seen


def test_defaults_and_name_from_file_stem(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, "devices:\n  eth0: {type: nic}\n", name="lab.yaml"))
    assert (topo.name, topo.seed, topo.cpus, topo.maps, topo.traffic) == ("lab", 1, 4, (), ())
    assert topo.devices == (NicSpec(name="eth0"),)


def test_traffic_defaults(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0}}\n"))
    (src,) = topo.traffic
    assert (src.rate, src.sizes, src.flows, src.proto, src.count) == (LINE, (64,), 1, "udp", None)


def test_bond_numbers_normalize_to_kernel_names(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}  bond0: {{type: bond, mode: 1, xmit_hash_policy: 2, slaves: [eth0]}}\n"
    bond = load_topology(write(tmp_path, text)).device("bond0")
    assert isinstance(bond, BondSpec)
    assert (bond.mode, bond.xmit_hash_policy) == ("active-backup", "layer2+3")


@pytest.mark.parametrize(
    ("cidr", "first", "last"),
    [
        ("10.0.0.0/30", 0x0A000001, 0x0A000002),
        ("10.0.0.0/31", 0x0A000000, 0x0A000001),
        ("10.0.0.7/32", 0x0A000007, 0x0A000007),
        ("10.1.0.0/16", 0x0A010001, 0x0A01FFFE),
    ],
)
def test_cidr_takes_usable_hosts_up_to_slash_30(
    tmp_path: Path, cidr: str, first: int, last: int
) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, dst_ip: {cidr}}}\n"
    assert load_topology(write(tmp_path, text)).traffic[0].dst_ip == Range(first, last)


def test_nested_bond_is_allowed(tmp_path: Path) -> None:
    text = """\
    devices:
      eth0: {type: nic}
      bond1: {type: bond, slaves: [eth0]}
      bond0: {type: bond, mode: active-backup, slaves: [bond1], primary: bond1}
    """
    bond0 = load_topology(write(tmp_path, text)).device("bond0")
    assert isinstance(bond0, BondSpec) and bond0.primary == "bond1"


def test_user_program_resolved_relative_to_the_yaml_file(tmp_path: Path) -> None:
    (tmp_path / "progs").mkdir()
    (tmp_path / "progs" / "mine.py").write_text("def prog(batch): ...\n")
    text = "devices:\n  eth0: {type: nic, xdp: {program: progs/mine.py:prog, params: {x: 3}}}\n"
    eth0 = load_topology(write(tmp_path, text)).device("eth0")
    resolved = (tmp_path / "progs" / "mine.py").resolve()
    assert eth0.xdp == XdpSpec(f"{resolved}:prog", None, (("x", "3"),))


def test_loads_topology_from_text() -> None:
    topo = loads_topology("devices: {eth0: {type: nic}}\n")
    assert (topo.name, topo.source) == ("topology", "<input>")
    with pytest.raises(TopologyError) as info:
        loads_topology("devices: {eth0: {type: nik}}\n", "mem.yaml")
    assert str(info.value).startswith(
        "mem.yaml:1:24: error: devices.eth0.type: unknown device type 'nik'"
    )


def test_diagnostic_str_format() -> None:
    diag = Diagnostic(Loc("a.yaml", 3, 5), "devices.eth0: boom")
    assert str(diag) == "a.yaml:3:5: error: devices.eth0: boom"


# --- broken files: one diagnostic each, exact location ---------------------------------------


def test_unknown_driver_suggests_and_lists_drivers(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic, driver: ice2}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:2:29: error: devices.eth0.driver: unknown driver 'ice2' (did you mean 'ice'?); "
        "valid: ixgbe, i40e, ice, mlx5, generic"
    )


def test_misspelt_device_key(tmp_path: Path) -> None:
    text = "devices:\n  eth0:\n    type: nic\n    queus: 8\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:5: error: devices.eth0: unknown key 'queus' (did you mean 'queues'?)"
    )


def test_key_of_another_device_type_lists_valid_keys(tmp_path: Path) -> None:
    text = "devices:\n  v0: {type: veth, peer: v1, xxx: 1}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith("topo.yaml:2:30: error: devices.v0: unknown key 'xxx'; valid for a veth:")
    assert "peer, queues" in msg


def test_unknown_top_level_key(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}trafic: []\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:1: error: unknown top-level key 'trafic' (did you mean 'traffic'?)"
    )


def test_missing_devices(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "name: x\nseed: 3\n")
    assert msg.startswith("topo.yaml:1:1: error: missing required key 'devices'")


def test_empty_devices(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices: {}\n") == (
        "topo.yaml:1:10: error: devices: at least one device is needed"
    )


def test_missing_device_type(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices:\n  eth0: {driver: ice}\n") == (
        "topo.yaml:2:3: error: devices.eth0: missing required key 'type' "
        "(nic, veth, bond, tun, xsk)"
    )


def test_queues_out_of_range(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices:\n  eth0: {type: nic, queues: 300}\n") == (
        "topo.yaml:2:29: error: devices.eth0.queues: 300 is out of range; valid: 1..4 "
        "(ethtool -L takes 1..4 on ice with 4 CPUs: the driver's 256 queues, at most one per CPU)"
    )


def test_wrong_type_for_integer(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices:\n  eth0: {type: nic, queues: [8]}\n") == (
        "topo.yaml:2:29: error: devices.eth0.queues: expected an integer 1..4, got a list"
    )


def test_ring_must_be_power_of_two(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  eth0: {type: nic, ring: 500}\n")
    assert msg.startswith("topo.yaml:2:27: error: devices.eth0.ring: 500 is not a power of two")
    assert msg.endswith("valid on ice: 64, 128, 256, 512, 1024, 2048, 4096")


def test_irq_cpu_beyond_nr_cpus(tmp_path: Path) -> None:
    text = "cpus: 2\ndevices:\n  eth0: {type: nic, queues: 2, irq_cpus: [0, 2]}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:46: error: devices.eth0.irq_cpus[1]: 2 is out of range; valid: 0..1"
    )


def test_irq_cpus_one_per_queue(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic, queues: 4, irq_cpus: [0, 1]}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith("topo.yaml:2:42: error: devices.eth0.irq_cpus: lists 2 CPUs but")
    assert "4 queues" in msg


def test_bad_speed_reports_unit_error(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices:\n  eth0: {type: nic, speed: fast}\n") == (
        "topo.yaml:2:28: error: devices.eth0.speed: 'fast' is not a link speed "
        "(use 1G, 10G, 25G, 40G, 100G or 200G)"
    )


def test_bad_bool(tmp_path: Path) -> None:
    assert one_error(tmp_path, "devices:\n  eth0: {type: nic, up: maybe}\n") == (
        "topo.yaml:2:25: error: devices.eth0.up: expected true or false, got 'maybe'"
    )


def test_veth_peer_that_points_elsewhere(tmp_path: Path) -> None:
    text = "devices:\n  veth0: {type: veth, peer: veth1}\n  veth1: {type: veth, peer: veth2}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:2:29: error: devices.veth0.peer: 'veth1' is listed with peer 'veth2', "
        "not 'veth0'"
    )


def test_veth_peer_that_is_not_a_veth(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}  veth0: {{type: veth, peer: eth0}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:29: error: devices.veth0.peer: 'eth0' is a nic, not a veth; "
        "a veth's peer is a veth"
    )


def test_veth_without_peer(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  veth0: {type: veth}\n")
    assert msg.startswith("topo.yaml:2:3: error: devices.veth0: missing required key 'peer'")


def test_bond_unknown_slave_suggests(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}  bond0: {{type: bond, slaves: [eht0]}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:32: error: devices.bond0.slaves[0]: unknown device 'eht0' "
        "(did you mean 'eth0'?); devices: eth0, bond0"
    )


def test_traffic_to_a_bond_names_its_slaves(tmp_path: Path) -> None:
    """A bond has no wire: frames arrive on its slaves (their rx_handler, bond_handle_frame).
    This used to load and then fail with a traceback on the first step."""
    text = (
        f"devices:\n{NIC}  eth1: {{type: nic}}\n  bond0: {{type: bond, slaves: [eth0, eth1]}}\n"
        "traffic:\n  - {name: a, to: bond0, rate: 1Mpps}\n"
    )
    assert one_error(tmp_path, text) == (
        "topo.yaml:6:19: error: traffic[0].to: 'bond0' is a bond: frames from the wire arrive "
        "on its slaves; give one of them (eth0, eth1), a source for each slave the link partner "
        "sends to"
    )


def test_bond_slave_of_two_bonds(tmp_path: Path) -> None:
    text = (
        "devices:\n"
        f"{NIC}  bond0: {{type: bond, slaves: [eth0]}}\n"
        f"  bond1: {{type: bond, slaves: [eth0]}}\n"
    )
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:4:32: error: devices.bond1.slaves[0]: 'eth0' is already a slave of bond0"
    )
    assert "EBUSY" in msg


def test_bond_enslaving_itself(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  bond0: {type: bond, slaves: [bond0]}\n")
    assert msg.startswith(
        "topo.yaml:2:32: error: devices.bond0.slaves[0]: cannot enslave bond to itself"
    )


def test_bond_loop(tmp_path: Path) -> None:
    text = (
        "devices:\n  bond0: {type: bond, slaves: [bond1]}\n  bond1: {type: bond, slaves: [bond0]}\n"
    )
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:3:32: error: devices.bond1.slaves[0]: enslaving 'bond0' would make a loop"
    )
    assert "bond0 -> bond1 -> bond0" in msg


def test_packets_per_slave_only_in_balance_rr(tmp_path: Path) -> None:
    text = (
        "devices:\n"
        f"{NIC}  bond0:\n"
        "    type: bond\n"
        "    mode: active-backup\n"
        "    packets_per_slave: 2\n"
    )
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:6:5: error: devices.bond0.packets_per_slave: "
        "packets_per_slave is only valid in balance-rr mode"
    )
    assert "EACCES" in msg


def test_bond_primary_must_be_a_slave(tmp_path: Path) -> None:
    text = (
        "devices:\n"
        f"{NIC}  bond0: {{type: bond, mode: active-backup, slaves: [eth0], primary: eth1}}\n"
    )
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:69: error: devices.bond0.primary: 'eth1' is not a slave of bond0 "
        "(did you mean 'eth0'?); slaves: eth0"
    )


def test_bond_mode_number_out_of_range(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  bond0: {type: bond, mode: 7}\n")
    assert msg.startswith(
        "topo.yaml:2:29: error: devices.bond0.mode: unknown bond mode 7; valid: balance-rr"
    )
    assert "(or 0-6)" in msg


def test_unknown_program_suggests(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  eth0: {type: nic, xdp: xdp_txx}\n")
    assert msg.startswith(
        "topo.yaml:2:26: error: devices.eth0.xdp: unknown program 'xdp_txx' (did you "
        "mean 'xdp_tx'?); "
        "valid: xdp_pass, xdp_drop, xdp_tx"
    )
    assert msg.endswith("path/to/file.py:function, or a BPF object path/to/file.o")


def test_unknown_param_suggests_and_lists_params(tmp_path: Path) -> None:
    text = """\
    devices:
      eth0:
        type: nic
        xdp:
          program: drop_port
          params: {prot: 53}
    """
    assert one_error(tmp_path, text) == (
        "topo.yaml:6:16: error: devices.eth0.xdp.params: unknown param 'prot' for drop_port "
        "(did you mean 'port'?); valid: port"
    )


def test_missing_required_param(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  eth0: {type: nic, xdp: redirect_map}\n")
    assert msg.startswith(
        "topo.yaml:2:26: error: devices.eth0.xdp: redirect_map needs param 'map' (devmap name)"
    )


def test_dev_param_must_name_a_device(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic, xdp: {program: redirect, params: {dev: eth9}}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:2:60: error: devices.eth0.xdp.params.dev: unknown device 'eth9' "
        "(did you mean 'eth0'?); devices: eth0"
    )


def test_map_param_must_name_a_map(tmp_path: Path) -> None:
    text = """\
    devices:
      eth0: {type: nic, xdp: {program: redirect_map, params: {map: tx_port}}}
    maps:
      tx_ports: {type: devmap, max_entries: 4}
    """
    assert one_error(tmp_path, text) == (
        "topo.yaml:2:64: error: devices.eth0.xdp.params.map: unknown map 'tx_port' "
        "(did you mean 'tx_ports'?); maps: tx_ports"
    )


def test_int_param_must_be_an_integer(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic, xdp: {program: drop_port, params: {port: http}}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:2:62: error: devices.eth0.xdp.params.port: expected an integer, got 'http'"
    )


BROADCAST_TO_ITSELF = """\
cpus: 1
devices:
  eth0: {type: nic, driver: i40e, queues: 1,
         xdp: {program: redirect_map_multi, params: {map: ports, exclude_ingress: FLAG}}}
  eth1: {type: nic, driver: i40e, queues: 1, xdp: xdp_pass}
maps:
  ports: {type: devmap, max_entries: 2, entries: {0: eth0, 1: eth1}}
traffic:
  - {name: g, to: eth0, rate: 1Mpps}
"""


@pytest.mark.parametrize(
    ("flag", "to_itself"), [("0", True), ("'false'", True), ("true", False), ('"1"', False)]
)
def test_a_flag_param_takes_0_1_true_or_false_quoted_or_not(
    tmp_path: Path, flag: str, to_itself: bool
) -> None:
    """``exclude_ingress`` (BPF_F_EXCLUDE_INGRESS): off, eth0's broadcast clones a frame to
    eth0 itself too. A quoted "false" is what the command line takes, so the file does too."""
    path = tmp_path / "topo.yaml"
    path.write_text(BROADCAST_TO_ITSELF.replace("FLAG", flag))
    sim = Simulator(load_topology(path))
    sim.run_until(1_000_000)
    to = {x["to"] for x in sim.report()["tracepoints"]["xdp_devmap_xmit"]}
    assert to == ({"eth0", "eth1"} if to_itself else {"eth1"})


def test_a_flag_param_names_its_values(tmp_path: Path) -> None:
    text = BROADCAST_TO_ITSELF.replace("FLAG", "maybe")
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:83: error: devices.eth0.xdp.params.exclude_ingress: expected 0, 1, true "
        "or false, got 'maybe'"
    )


def test_user_program_file_must_exist(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  eth0: {type: nic, xdp: progs/none.py:prog}\n")
    assert msg.startswith(
        "topo.yaml:2:26: error: devices.eth0.xdp: user program file 'progs/none.py' not found"
    )


def test_bad_xdp_mode(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic, xdp: {program: xdp_pass, mode: nativ}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:2:52: error: devices.eth0.xdp.mode: unknown XDP mode 'nativ' "
        "(did you mean 'native'?); valid: native, generic, offload"
    )


def test_tun_reader_cannot_be_line(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  tap0: {type: tun, reader: line}\n")
    assert msg.startswith(
        "topo.yaml:2:29: error: devices.tap0.reader: 'line' is not a valid rate here"
    )


def test_devmap_key_beyond_max_entries_is_e2big(tmp_path: Path) -> None:
    text = (
        "devices:\n"
        f"{NIC}maps:\n"
        "  m:\n"
        "    type: devmap\n"
        "    max_entries: 4\n"
        "    entries:\n"
        "      4: eth0\n"
    )
    msg = one_error(tmp_path, text)
    assert msg.startswith("topo.yaml:8:7: error: maps.m.entries.4: key 4 is out of range")
    assert "E2BIG" in msg and "valid: 0..3" in msg


def test_devmap_entry_unknown_device(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}maps:\n  m: {{type: devmap, max_entries: 4, entries: {{0: eht0}}}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:50: error: maps.m.entries.0: unknown device 'eht0' (did you mean 'eth0'?); "
        "devices: eth0"
    )


def test_devmap_egress_program_must_be_allowed(tmp_path: Path) -> None:
    text = (
        "devices:\n"
        f"{NIC}maps:\n"
        f"  m: {{type: devmap, max_entries: 4, entries: {{0: {{dev: eth0, egress: xdp_tx}}}}}}\n"
    )
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:4:70: error: maps.m.entries.0.egress: unknown devmap egress program 'xdp_tx'"
    )
    assert "valid: xdp2, xdp_aborted, xdp_drop, xdp_pass" in msg


def test_devmap_hash_max_entries_limit(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}maps:\n  h: {{type: devmap_hash, max_entries: 4294967295}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:39: error: maps.h.max_entries: 4294967295 is out of range; "
        "valid: 1..2147483648"
    )


def test_unknown_map_type(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}maps:\n  m: {{type: devmapp, max_entries: 4}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:13: error: maps.m.type: unknown map type 'devmapp' (did you mean 'devmap'?); "
        "valid: devmap, devmap_hash, cpumap, xskmap, object"
    )


def test_traffic_needs_exactly_one_of_to_and_from(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, from: eth0}}\n  - {{name: h}}\n"
    found = [e.removeprefix(f"{tmp_path}/") for e in errors(tmp_path, text)]
    assert len(found) == 2
    assert found[0].startswith("topo.yaml:4:25: error: traffic[0]: give exactly one of 'to'")
    assert found[1].startswith("topo.yaml:5:5: error: traffic[1]: missing 'to: DEV'")


def test_traffic_unknown_device_suggests(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth1}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:19: error: traffic[0].to: unknown device 'eth1' (did you mean 'eth0'?); "
        "devices: eth0"
    )


def test_traffic_duplicate_name(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0}}\n  - {{name: g, to: eth0}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:5:12: error: traffic[1].name: duplicate source name 'g' (first used "
        "by traffic[0])"
    )


def test_traffic_bad_rate_reports_unit_error(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - name: g\n    to: eth0\n    rate: 10Mbits\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:6:11: error: traffic[0].rate: '10Mbits' is not a rate "
        "(use pps, Kpps, Mpps, bps, Mbps, Gbps or line)"
    )


def test_traffic_backwards_ip_range(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, src_ip: 10.0.0.9-10.0.0.1}}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:4:33: error: traffic[0].src_ip: range 10.0.0.9-10.0.0.1 runs backwards"
    )


def test_traffic_port_out_of_range(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, dst_port: 1024-70000}}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:4:35: error: traffic[0].dst_port: '1024-70000' is not a port 0..65535"
    )


def test_traffic_size_in_mix_out_of_range(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, size: [64, 9601]}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:36: error: traffic[0].size[1]: 9601 is out of range; valid: 60..9600"
    )


def test_traffic_bad_mac(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}traffic:\n  - {{name: g, to: eth0, src_mac: 00:11:22:33:44}}\n"
    msg = one_error(tmp_path, text)
    assert msg.startswith(
        "topo.yaml:4:34: error: traffic[0].src_mac: '00:11:22:33:44' is not a MAC"
    )


def test_timeline_command_error_at_do_value(tmp_path: Path) -> None:
    def validate(cmd: str) -> str | None:
        return None if cmd.startswith("ip ") else f'Object "{cmd.split()[0]}" is unknown'

    text = (
        "devices:\n"
        f"{NIC}timeline:\n"
        f"  - {{at: 1ms, do: ip link set dev eth0 down}}\n"
        f"  - {{at: 2ms, do: ipp link}}\n"
    )
    assert one_error(tmp_path, text, validate) == (
        'topo.yaml:5:19: error: timeline[1].do: Object "ipp" is unknown'
    )


def test_timeline_bad_duration(tmp_path: Path) -> None:
    text = f"devices:\n{NIC}timeline:\n  - {{at: soon, do: x}}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:4:10: error: timeline[0].at: 'soon' is not a duration "
        "(use ns, us, ms or s, e.g. 500us, 2ms)"
    )


def test_lesson_command_is_validated(tmp_path: Path) -> None:
    text = f"""\
devices:
{NIC}lessons:
  - title: T
    steps:
      - text: hi
        commands: [fine, broken]
"""
    msg = one_error(tmp_path, text, lambda c: "bad command" if c == "broken" else None)
    assert msg == "topo.yaml:7:26: error: lessons[0].steps[0].commands[1]: bad command"


def test_duplicate_key(tmp_path: Path) -> None:
    text = "devices:\n  eth0: {type: nic}\n  eth0: {type: nic}\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:3: error: devices: duplicate key 'eth0' (first at line 2)"
    )


def test_invalid_device_name(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices:\n  averyveryverylongname: {type: nic}\n")
    assert msg.startswith("topo.yaml:2:3: error: devices.averyveryverylongname: device name")
    assert "15 characters" in msg


# --- several problems at once; files that are not topologies ---------------------------------


def test_three_errors_in_one_topology_error(tmp_path: Path) -> None:
    text = """\
    cpus: 0
    devices:
      eth0: {type: nic, driver: ice2}
    traffic:
      - {name: g, to: eth9}
    """
    found = [e.removeprefix(f"{tmp_path}/") for e in errors(tmp_path, text)]
    assert [f.split(": error: ")[0] for f in found] == [
        "topo.yaml:1:7",
        "topo.yaml:3:29",
        "topo.yaml:5:19",
    ]
    assert found[0].endswith("cpus: 0 is out of range; valid: 1..4096")
    assert "devices.eth0.driver" in found[1]
    assert "traffic[0].to: unknown device 'eth9'" in found[2]


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    text = "devices:\n  eth0:\n    type: nic: x\n"
    assert one_error(tmp_path, text) == (
        "topo.yaml:3:14: error: invalid YAML: mapping values are not allowed here"
    )


def test_invalid_yaml_unclosed_flow(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "devices: {eth0: {type: nic}\n")
    assert msg.startswith("topo.yaml:2:1: error: invalid YAML:")


def test_two_documents(tmp_path: Path) -> None:
    msg = one_error(tmp_path, f"devices:\n{NIC}---\nname: x\n")
    assert msg == (
        "topo.yaml:3:1: error: invalid YAML: expected a single document in the stream, "
        "but found another document"
    )


def test_empty_file(tmp_path: Path) -> None:
    msg = one_error(tmp_path, "")
    assert msg.startswith("topo.yaml:1:1: error: the file is empty")


def test_comment_only_file(tmp_path: Path) -> None:
    assert one_error(tmp_path, "# nothing here\n").startswith(
        "topo.yaml:1:1: error: the file is empty"
    )


def test_top_level_list(tmp_path: Path) -> None:
    assert one_error(tmp_path, "- eth0\n- eth1\n") == (
        "topo.yaml:1:1: error: a topology is a mapping (name:, devices:, ...), not a list"
    )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(tmp_path / "nope.yaml")
    (diag,) = info.value.diagnostics
    assert (
        str(diag) == f"{tmp_path}/nope.yaml:1:1: error: can't read file: No such file or directory"
    )


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"name: x\ndescription: caf\xe9\n")
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    assert str(info.value) == f"{path}:2:17: error: invalid YAML: the file is not UTF-8 (byte 0xe9)"


# --- never a traceback --------------------------------------------------------------------

WEIRD: list[object] = [
    None, True, 0, -1, 2**70, 1.5, float("inf"), float("nan"), "", "x", "eth0", "1-2",
    "10.0.0.0/33", "1e999ms", "9" * 400, [], [None], {}, {"a": 1}, {"type": "veth"},
    "line", "x.py:f", "\0", "99999999999999999999G",
]  # fmt: skip


def _mutate(obj: object, rng: random.Random) -> object:
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            roll = rng.random()
            if roll < 0.03:
                continue
            out[f"{key}x" if roll < 0.05 else key] = (
                rng.choice(WEIRD) if roll > 0.95 else _mutate(value, rng)
            )
        return out
    if isinstance(obj, list):
        return [rng.choice(WEIRD) if rng.random() < 0.05 else _mutate(v, rng) for v in obj]
    return rng.choice(WEIRD) if rng.random() < 0.05 else obj


@pytest.mark.parametrize("seed", range(5))
def test_mutated_topologies_give_diagnostics_not_tracebacks(seed: int) -> None:
    rng = random.Random(seed)
    base = yaml.safe_load(FULL)
    for _ in range(100):
        text = yaml.safe_dump(_mutate(base, rng))
        try:
            loads_topology(text, "f.yaml", lambda c: None)
        except TopologyError as exc:
            assert exc.diagnostics
            for diag in exc.diagnostics:
                assert diag.loc.line >= 1 and diag.loc.col >= 1
                assert str(diag).startswith("f.yaml:")


@pytest.mark.parametrize(
    "text",
    [
        "42\n",
        "null\n",
        "&a [*a]\n",
        "devices: &a {x: *a}\n",
        "devices: {eth0: &b {type: veth, peer: *b}}\n",
        "? [a]\n: 1\n",
        "devices:\n  <<: {x: 1}\n",
        "devices: !!python/object:os.system {}\n",
        "devices: {eth0: {type: tun, reader: .inf}}\n",
        "devices: {eth0: {type: nic, speed: .nan, queues: !!int zz}}\n",
        'devices: {eth0: {type: nic, xdp: {program: "a\\0.py:f"}}}\n',
        "\x01\n",
        "devices: [eth0]\nmaps: 3\ntraffic: {a: 1}\ntimeline: x\nlessons: [[]]\n",
        "devices: {eth0: 5, eth1: {type: [nic]}, eth2: {type: bond, slaves: eth0}}\n",
    ],
)
def test_hostile_input_gives_diagnostics(text: str) -> None:
    with pytest.raises(TopologyError) as info:
        loads_topology(text, "h.yaml")
    assert info.value.diagnostics
    assert all(str(d).startswith("h.yaml:") for d in info.value.diagnostics)
