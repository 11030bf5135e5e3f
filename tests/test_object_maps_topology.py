"""A topology's ``maps: {NAME: {type: object, entries: [...]}}`` fills a map of an object a
device attaches at start, before traffic starts, as ``bpftool map update`` would.

The object is the shipped examples/bpf/drop_ports_map.o (a hash map ``drop_ports``: key the
destination port, __u16 in host order, value __u32, non-zero drops). Its verdicts depend on
what the map holds, so the report's counters say whether the topology filled it: every frame
to a listed port is XDP_DROP from the first one, the rest XDP_PASS. Bad entries are refused by
``xdptui check`` in bpftool's words at the file, line and field that gave them."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT
from jsonschema import Draft202012Validator

from xdptui import cli
from xdptui.commands import validate
from xdptui.model.topology_spec import schema
from xdptui.netns_export import lab_script
from xdptui.sim.engine import Simulator
from xdptui.topology_io import TopologyError, load_topology

OBJ = ROOT / "examples" / "bpf" / "drop_ports_map.o"
DNS, WEB = 700, 500  # frames to UDP port 53 and TCP port 80


def write(tmp_path: Path, maps: str, xdp: str = "drop_ports_map.o", extra_dev: str = "") -> Path:
    shutil.copy(OBJ, tmp_path / OBJ.name)
    doc = (
        "name: port filter\nseed: 3\ndevices:\n"
        f"  eth0: {{type: nic, driver: ice, speed: 25G, queues: 2, xdp: {xdp}}}\n"
        + (f"{extra_dev}\n" if extra_dev else "")
        + "maps:\n"
        + textwrap.indent(textwrap.dedent(maps), "  ")
        + "traffic:\n"
        f"  - {{name: dns, to: eth0, rate: 1Mpps, proto: udp, dst_port: 53, count: {DNS}}}\n"
        f"  - {{name: web, to: eth0, rate: 1Mpps, proto: tcp, dst_port: 80, count: {WEB}}}\n"
    )
    path = tmp_path / "filter.yaml"
    path.write_text(doc)
    return path


FILLED = """\
drop_ports:
  type: object
  entries:
    - {key: hex 35 00, value: hex 01 00 00 00}
"""


def run(path: Path) -> tuple[dict[str, int], Simulator]:
    sim = Simulator(load_topology(path, validate_command=validate))
    sim.run_until(3_000_000)
    return sim.report()["devices"]["eth0"]["counters"], sim


def test_filled_map_drops_the_listed_port_from_the_first_frame(tmp_path: Path) -> None:
    counters, sim = run(write(tmp_path, FILLED))
    assert counters["rx_packets"] == DNS + WEB
    assert counters["xdp_drop"] == DNS  # port 53 (key 35 00) is in the map
    assert counters["xdp_pass"] == WEB
    (obj,) = sim.report()["objects"]
    assert obj["maps"]["drop_ports"]["elements"] == [{"key": "3500", "value": "01000000"}]


def test_without_the_entry_the_same_program_drops_nothing(tmp_path: Path) -> None:
    counters, _ = run(write(tmp_path, "drop_ports: {type: object}\n"))
    assert counters["xdp_drop"] == 0
    assert counters["xdp_pass"] == DNS + WEB


def test_the_fill_is_a_bpftool_map_update_at_start_in_the_log(tmp_path: Path) -> None:
    maps = """\
    drop_ports:
      type: object
      entries:
        - {key: 0x35 0, value: 1 0 0 0}
        - {key: hex 0050, value: hex 00 00 00 00}
    """
    counters, sim = run(write(tmp_path, maps))
    lines = [(e["t_ns"], e["cmd"], e["ok"]) for e in sim.events() if e["kind"] == "command"]
    update = "bpftool map update name drop_ports"
    assert (0, f"{update} key 0x35 0 value 1 0 0 0", True) in lines
    assert (0, f"{update} key hex 0050 value hex 00 00 00 00", True) in lines
    assert counters["xdp_drop"] == DNS  # port 80's value is 0: passed
    dump = sim.submit("bpftool map dump name drop_ports").reply
    assert dump.splitlines()[-1] == "Found 2 elements"


def test_each_device_attaching_the_object_gets_its_copy_filled(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        FILLED,
        extra_dev="  eth1: {type: nic, driver: ice, speed: 25G, queues: 2, xdp: drop_ports_map.o}",
    )
    dns1 = "  - {name: dns1, to: eth1, rate: 1Mpps, proto: udp, dst_port: 53, count: 300}\n"
    path.write_text(path.read_text() + dns1)
    sim = Simulator(load_topology(path, validate_command=validate))
    sim.run_until(3_000_000)
    updates = [e["cmd"] for e in sim.events() if "map update" in e.get("cmd", "")]
    # libbpf creates an object's maps afresh at each load: two maps named drop_ports
    assert updates == [
        "bpftool map update id 1 key hex 35 00 value hex 01 00 00 00",
        "bpftool map update id 2 key hex 35 00 value hex 01 00 00 00",
    ]
    assert sim.report()["devices"]["eth1"]["counters"]["xdp_drop"] == 300


def errors_of(path: Path) -> list[str]:
    with pytest.raises(TopologyError) as info:
        load_topology(path, validate_command=validate)
    return [str(d) for d in info.value.diagnostics]


def test_wrong_sizes_are_bpftools_refusals_at_the_field(tmp_path: Path) -> None:
    maps = """\
    drop_ports:
      type: object
      entries:
        - {key: hex 35, value: hex 01 00 00 00}
        - {key: hex 35 00, value: hex 01}
        - {key: hex 35 00, value: 0x01 0 zz 0}
    """
    path = write(tmp_path, maps)
    assert errors_of(path) == [
        f"{path}:9:15: error: maps.drop_ports.entries[0].key: bpftool map update: "
        "Error: key expected 2 bytes got 1",
        f"{path}:10:33: error: maps.drop_ports.entries[1].value: bpftool map update: "
        "Error: value expected 4 bytes got 1",
        f"{path}:11:33: error: maps.drop_ports.entries[2].value: bpftool map update: "
        "Error: error parsing byte: zz",
    ]


def test_a_map_no_attached_object_has_is_named_with_the_valid_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "ports: {type: object, entries: [{key: 1 0, value: 1 0 0 0}]}\n")
    (err,) = errors_of(path)
    assert err == (
        f"{path}:6:3: error: maps.ports: no BPF object a device attaches at start has a map "
        "'ports'; valid: drop_ports"
    )
    path = write(tmp_path, FILLED, xdp="xdp_pass")
    (err,) = errors_of(path)
    assert err.endswith("valid: none (no device attaches a BPF object)")


def test_an_object_map_takes_no_max_entries(tmp_path: Path) -> None:
    path = write(tmp_path, "drop_ports: {type: object, max_entries: 8}\n")
    (err,) = errors_of(path)
    assert "maps.drop_ports.max_entries: an object's map has the max_entries its object" in err


def test_check_prints_the_refusal_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "drop_ports: {type: object, entries: [{key: 53, value: 1 0 0 0}]}\n")
    with pytest.raises(SystemExit) as done:
        cli.main(["check", str(path)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "error: maps.drop_ports.entries[0].key: bpftool map update: " in err
    assert "Error: key expected 2 bytes got 1" in err
    assert "Traceback" not in err


def test_the_schema_takes_an_object_map_and_refuses_its_max_entries() -> None:
    v = Draft202012Validator(schema())
    doc = {
        "devices": {"eth0": {"type": "nic", "driver": "ice", "xdp": "f.o"}},
        "maps": {"drop_ports": {"type": "object", "entries": [{"key": "hex 35 00", "value": "1"}]}},
    }
    assert not list(v.iter_errors(doc))
    doc["maps"] = {"drop_ports": {"type": "object", "max_entries": 4}}
    assert list(v.iter_errors(doc))


def test_export_fills_the_pinned_map_after_loading_the_object(tmp_path: Path) -> None:
    script = lab_script(load_topology(write(tmp_path, FILLED), validate_command=validate), 10**6)
    lines = script.splitlines()
    load = next(i for i, ln in enumerate(lines) if ln.startswith("bpftool prog loadall"))
    assert lines[load].endswith("pinmaps $LAB/objmaps/obj0")
    update = lines.index(
        "bpftool map update pinned $LAB/objmaps/obj0/drop_ports key hex 35 00 value hex 01 00 00 00"
    )
    assert update > load


def test_check_says_which_object_maps_it_fills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, FILLED)
    assert cli.main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{path}: fills map drop_ports of an attached object with 1 element at start "
        "(bpftool map update)"
    ) in out.splitlines()


# -- map-in-map: value {map: NAME} -------------------------------------------------------------

MIM = ROOT / "tests" / "bpf_progs" / "mim_proto.c"
needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")


def mim_topology(tmp_path: Path, entries: str, extra: str = "") -> Path:
    """mim_proto.o on eth0: slot 0 of mim_slots holds inner_a from the object's .values; UDP
    frames from 16 source MACs, half of them (odd last byte) looking in slot 1."""
    import os
    import subprocess

    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    obj = tmp_path / "mim_proto.o"
    subprocess.run(
        ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-c", str(MIM), "-o", str(obj)],
        check=True,
    )
    path = tmp_path / "mim.yaml"
    path.write_text(
        "seed: 5\ndevices:\n"
        "  eth0: {type: nic, driver: ice, queues: 2, xdp: mim_proto.o:mim_proto}\n"
        f"{extra}maps:\n  mim_slots:\n    type: object\n    entries:\n{entries}"
        "traffic:\n  - {name: g, to: eth0, rate: 1Mpps, count: 1000, proto: udp, "
        "src_mac: 00:11:22:33:44:00-00:11:22:33:44:0f, flows: 16}\n"
    )
    return path


def counts(sim: Simulator, name: str) -> dict[str, str]:
    (obj,) = sim.report()["objects"]
    return {e["key"]: e["value"] for e in obj["maps"][name]["elements"]}


@needs_clang
@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
def test_an_inner_map_put_in_a_slot_counts_its_half_of_the_frames(
    tmp_path: Path, exact: bool
) -> None:
    path = mim_topology(tmp_path, "      - {key: 1 0 0 0, value: {map: inner_b}}\n")
    sim = Simulator(load_topology(path, validate_command=validate))
    sim.exact = exact
    sim.run_until(2_000_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert (c["xdp_pass"], c["xdp_tx"], c["xdp_drop"]) == (500, 500, 0)
    udp = (17).to_bytes(4, "little").hex()
    assert counts(sim, "inner_a") == {udp: (500).to_bytes(8, "little").hex()}
    assert counts(sim, "inner_b") == {udp: (500).to_bytes(8, "little").hex()}
    ids = {name: m["id"] for name, m in sim.report()["objects"][0]["maps"].items()}
    assert counts(sim, "mim_slots") == {
        bytes(4).hex(): ids["inner_a"].to_bytes(4, "little").hex(),
        (1).to_bytes(4, "little").hex(): ids["inner_b"].to_bytes(4, "little").hex(),
    }
    (event,) = [e for e in sim.report()["events"] if e["cmd"].startswith("bpftool")]
    assert event["cmd"] == "bpftool map update name mim_slots key 1 0 0 0 value name inner_b"


@needs_clang
def test_an_empty_slot_drops_until_bpftool_puts_a_map_in_it_and_rewind_undoes_it(
    tmp_path: Path,
) -> None:
    path = mim_topology(tmp_path, "")
    sim = Simulator(load_topology(path, validate_command=validate))
    sim.exact = True
    sim.run_until(300_000)
    before = sim.report()
    assert sim.submit("bpftool map dump name mim_slots").reply.endswith("Found 1 element")
    done = sim.submit("bpftool map update name mim_slots key 1 0 0 0 value name inner_b")
    assert done.ok, done.reply
    sim.run_until(2_000_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert c["xdp_drop"] == before["devices"]["eth0"]["counters"]["xdp_drop"] > 0
    assert c["xdp_tx"] > 0 and c["xdp_pass"] + c["xdp_tx"] + c["xdp_drop"] == 1000
    after = counts(sim, "inner_b")
    sim.rewind(250_000)  # before the command: slot 1 empty again, inner_b never counted
    assert counts(sim, "inner_b") == {}
    assert len(counts(sim, "mim_slots")) == 1
    sim.run_until(300_000)
    sim.submit("bpftool map update name mim_slots key 1 0 0 0 value name inner_b")
    sim.run_until(2_000_000)
    assert counts(sim, "inner_b") == after


@needs_clang
@pytest.mark.parametrize(
    ("line", "errno", "reply"),
    [
        (
            "bpftool map update name mim_slots key 1 0 0 0 value name inner_small",
            "EINVAL",
            "Error: update failed: Invalid argument",
        ),
        (
            "bpftool map update name mim_slots key 1 0 0 0 value name inner_b exist",
            "EINVAL",
            "Error: update failed: Invalid argument",
        ),
        (
            "bpftool map update name mim_slots key 2 0 0 0 value name inner_b",
            "E2BIG",
            "Error: update failed: Argument list too long",
        ),
        (
            "bpftool map update name mim_slots key 1 0 0 0 value id 999",
            "ENOENT",
            "Error: get map by id (999): No such file or directory",
        ),
        (
            "bpftool map update name mim_slots key 1 0 0 0 value 1 0 0 0",
            "EINVAL",
            "Error: expected 'id', 'name' or 'pinned', got: '1'?",
        ),
        (
            "bpftool map delete name mim_slots key 1 0 0 0",
            "ENOENT",
            "Error: delete failed: No such file or directory",
        ),
        (
            "bpftool map update name mim_slots key 1 0 0 0 value name",
            "EINVAL",
            "Error: not enough value arguments for map in map",
        ),
        (
            "bpftool map update name inner_a key 1 0 0 0 value name inner_b",
            "EINVAL",
            "Error: error parsing byte: name",
        ),
    ],
    ids=[
        "incompatible",
        "flags",
        "index",
        "no-such-id",
        "bytes",
        "delete-empty",
        "no-map",
        "map-into-array",
    ],
)
def test_bpftool_refusals_on_an_array_of_maps_are_the_kernels(
    tmp_path: Path, line: str, errno: str, reply: str
) -> None:
    sim = Simulator(load_topology(mim_topology(tmp_path, ""), validate_command=validate))
    res = sim.submit(line)
    assert (res.ok, res.errno, res.reply) == (False, errno, reply)


@needs_clang
def test_value_id_names_the_inner_map_and_lookup_shows_its_id(tmp_path: Path) -> None:
    sim = Simulator(load_topology(mim_topology(tmp_path, ""), validate_command=validate))
    (obj,) = sim.report()["objects"]
    inner_b = obj["maps"]["inner_b"]["id"]
    assert sim.submit(f"bpftool map update name mim_slots key 1 0 0 0 value id {inner_b}").ok
    got = sim.submit("bpftool map lookup name mim_slots key 1 0 0 0").reply
    assert got == f"key: 01 00 00 00  value: {inner_b:02x} 00 00 00"
    assert sim.submit("bpftool map delete name mim_slots key 1 0 0 0").ok
    assert sim.submit("bpftool map lookup name mim_slots key 1 0 0 0").errno == "ENOENT"


@needs_clang
def test_map_in_map_entries_are_checked_at_the_field(tmp_path: Path) -> None:
    entries = (
        "      - {key: 1 0 0 0, value: {map: inner_small}}\n"
        "      - {key: 1 0 0 0, value: {map: nosuch}}\n"
        "      - {key: 1 0 0 0, value: 5 0 0 0}\n"
    )
    extra_map = "  inner_a:\n    type: object\n    entries:\n"
    extra_map += "      - {key: 1 0 0 0, value: {map: inner_b}}\n"
    path = mim_topology(tmp_path, entries)
    text = path.read_text().replace("traffic:", extra_map + "traffic:")
    path.write_text(text)
    errors = errors_of(path)
    assert any(
        "entries[0].value: bpftool map update: Error: update failed: Invalid argument "
        "('inner_small' is an array of key 4B value 8B max_entries 128" in e
        for e in errors
    ), errors
    assert any("entries[1].value: no map 'nosuch' in the object" in e for e in errors)
    assert any(
        "entries[2].value: mim_slots is an array_of_maps: its value is a map" in e for e in errors
    )
    assert any(
        "maps.inner_a.entries[0].value: {map: inner_b} is a value for an array" in e for e in errors
    )


def test_the_schema_takes_an_inner_map_as_an_object_maps_value() -> None:
    validator = Draft202012Validator(schema())
    doc = {
        "devices": {"eth0": {"type": "nic", "driver": "ice"}},
        "maps": {
            "outer": {"type": "object", "entries": [{"key": "0 0 0 0", "value": {"map": "a"}}]}
        },
    }
    assert not list(validator.iter_errors(doc))
    doc["maps"]["outer"]["entries"][0]["value"] = {"mop": "a"}  # type: ignore[index]
    assert list(validator.iter_errors(doc))


@needs_clang
def test_export_puts_the_inner_map_pinned_beside_the_outer_one(tmp_path: Path) -> None:
    path = mim_topology(tmp_path, "      - {key: 1 0 0 0, value: {map: inner_b}}\n")
    script = lab_script(load_topology(path, validate_command=validate), 10**6)
    assert (
        "bpftool map update pinned $LAB/objmaps/obj0/mim_slots key 1 0 0 0 "
        "value pinned $LAB/objmaps/obj0/inner_b"
    ) in script.splitlines()
