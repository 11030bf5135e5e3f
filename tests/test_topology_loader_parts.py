"""The topology loader's parts, each used alone: the node reader, the program resolver and the
device loader work without the document loader around them (it only composes them)."""

from __future__ import annotations

from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node

from xdptui.model.limits import DRIVER_LIMITS
from xdptui.model.topology import Loc, NicSpec, VethSpec
from xdptui.topology_devices import DeviceLoader
from xdptui.topology_nodes import NodeReader
from xdptui.topology_programs import ProgramResolver
from xdptui.topology_yaml import Diagnostic


def compose(text: str) -> Node:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert node is not None
    return node


def value_of(root: Node, key: str) -> Node:
    assert isinstance(root, MappingNode)
    return next(v for k, v in root.value if k.value == key)


def test_node_reader_alone_reports_an_out_of_range_port_at_its_line_and_column():
    reader = NodeReader("t.yaml")
    root = compose("traffic:\n  dst_port: 70000\n")
    port = value_of(value_of(root, "traffic"), "dst_port")
    assert reader.integer(port, "traffic.dst_port", 0, 65535) is None
    # "  dst_port: " is 12 characters: the value starts on line 2, column 13.
    assert reader.diagnostics == [
        Diagnostic(Loc("t.yaml", 2, 13), "traffic.dst_port: 70000 is out of range; valid: 0..65535")
    ]


def test_node_reader_alone_checks_references_against_the_names_it_was_given():
    reader = NodeReader("t.yaml")
    reader.device_names = ["eth0", "tap0"]
    assert reader.device_ref(compose("tap0"), "to") == "tap0"
    assert reader.device_ref(compose("eth9"), "to") is None
    assert [str(d) for d in reader.diagnostics] == [
        "t.yaml:1:1: error: to: unknown device 'eth9' (did you mean 'eth0'?); devices: eth0, tap0"
    ]


def test_program_resolver_alone_resolves_a_python_program_beside_the_topology(tmp_path: Path):
    (tmp_path / "progs").mkdir()
    (tmp_path / "progs" / "count.py").write_text("def xdp(ctx):\n    return 2\n")
    reader = NodeReader(str(tmp_path / "t.yaml"))
    programs = ProgramResolver(reader, tmp_path)
    resolved = programs.program(compose("progs/count.py:xdp"), "xdp", ["xdp_pass"], "program")
    assert resolved == f"{(tmp_path / 'progs' / 'count.py').resolve()}:xdp"
    assert programs.program(compose("xdp_pass"), "xdp", ["xdp_pass"], "program") == "xdp_pass"
    assert reader.diagnostics == []


def test_program_resolver_alone_writes_a_commands_program_back_as_its_file(tmp_path: Path):
    (tmp_path / "count.py").write_text("def xdp(ctx):\n    return 2\n")
    reader = NodeReader(str(tmp_path / "t.yaml"))
    programs = ProgramResolver(reader, tmp_path)
    command = "ip link set dev eth0 xdp obj count.py:xdp"
    found = programs.in_command(compose(repr(command)), "timeline[0].do", command)
    assert found == f"ip link set dev eth0 xdp obj {(tmp_path / 'count.py').resolve()}:xdp"
    missing = "ip link set dev eth0 xdp obj gone.py:xdp"
    assert programs.in_command(compose(repr(missing)), "timeline[0].do", missing) == missing
    assert len(reader.diagnostics) == 1
    assert "user program file 'gone.py' not found" in reader.diagnostics[0].message


def test_device_loader_alone_bounds_nic_queues_by_the_cpus_it_is_given(tmp_path: Path):
    text = "eth0: {type: nic, driver: ixgbe, queues: 3}\n"
    # ethtool -L takes at most one channel per CPU (and ixgbe's own 64): 3 queues need 3 CPUs.
    assert DRIVER_LIMITS["ixgbe"].max_queues >= 3
    reader = NodeReader("t.yaml")
    devices = DeviceLoader(reader, ProgramResolver(reader, tmp_path), cpus=3).devices(compose(text))
    assert reader.diagnostics == []
    assert isinstance(devices[0], NicSpec) and devices[0].queues == 3

    reader = NodeReader("t.yaml")
    devices = DeviceLoader(reader, ProgramResolver(reader, tmp_path), cpus=2).devices(compose(text))
    assert isinstance(devices[0], NicSpec) and devices[0].queues is None  # one pass goes on
    assert len(reader.diagnostics) == 1
    assert reader.diagnostics[0].loc == Loc("t.yaml", 1, 42)
    assert reader.diagnostics[0].message.startswith(
        "devices.eth0.queues: 3 is out of range; valid: 1..2"
    )


def test_device_loader_alone_declares_a_veths_unlisted_peer_to_the_reader(tmp_path: Path):
    reader = NodeReader("t.yaml")
    loader = DeviceLoader(reader, ProgramResolver(reader, tmp_path), cpus=4)
    devices = loader.devices(compose("veth0: {type: veth, peer: veth1}\n"))
    # veth_newlink creates both ends, so the peer exists and can be referred to.
    assert [(d.name, d.peer) for d in devices if isinstance(d, VethSpec)] == [
        ("veth0", "veth1"),
        ("veth1", "veth0"),
    ]
    assert reader.device_names == ["veth0", "veth1"]
    assert reader.diagnostics == []
