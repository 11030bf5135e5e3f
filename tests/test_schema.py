"""`xdptui schema topology|report`: the schemas accept what ships and what a run writes, and
refuse what `xdptui check` refuses; each is generated from the format's one declaration."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TOPOLOGIES
from jsonschema import Draft202012Validator

from xdptui import cli, report
from xdptui.commands import validate
from xdptui.model.units import UnitError, parse_duration_ns, parse_rate, parse_speed_bps
from xdptui.model.views import COUNTERS
from xdptui.sim.engine import Simulator
from xdptui.topology_io import TopologyError, load_topology, loads_topology

SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))
BASE = """\
devices:
  eth0: {type: nic, driver: ice, speed: 25G, queues: 2}
  bond0: {type: bond, mode: active-backup, slaves: [eth0]}
  tap0: {type: tun, mode: tap, reader: 1Mpps}
  veth0: {type: veth, peer: veth1, xdp: {program: xdp_pass, mode: generic}}
maps:
  tx: {type: devmap, max_entries: 4, entries: {0: eth0, 1: {dev: tap0, egress: xdp_pass}}}
traffic:
  - {name: a, to: eth0, rate: 2Mpps, proto: udp, src_ip: 10.0.0.1-10.0.0.9, dst_port: 80}
timeline:
  - {at: 1ms, do: "ip link set dev eth0 down"}
lessons:
  - {title: t, steps: [{text: s, commands: ["ip link set dev eth0 up"]}]}
"""


def schema_of(fmt: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "schema", fmt], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    schema: dict[str, Any] = json.loads(res.stdout)
    return schema


@pytest.fixture(scope="module")
def topology_schema() -> dict[str, Any]:
    """`xdptui schema topology`, run once."""
    schema = schema_of("topology")
    Draft202012Validator.check_schema(schema)
    return schema


@pytest.fixture(scope="module")
def report_schema() -> dict[str, Any]:
    """`xdptui schema report`, run once."""
    schema = schema_of("report")
    Draft202012Validator.check_schema(schema)
    return schema


@pytest.fixture(scope="module")
def topology_validator(topology_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(topology_schema)


@pytest.fixture(scope="module")
def report_validator(report_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(report_schema)


def as_editor_sees(text: str) -> Any:
    """The YAML as JSON values: keys become strings (``0:`` is the key "0"), as in an editor."""
    return json.loads(json.dumps(yaml.safe_load(text)))


def schema_errors(validator: Draft202012Validator, text: str) -> list[str]:
    return [e.message for e in validator.iter_errors(as_editor_sees(text))]


def loader_errors(text: str, tmp_path: Path) -> list[str]:
    try:
        loads_topology(text, str(tmp_path / "t.yaml"), validate_command=validate)
    except TopologyError as exc:
        return [d.message for d in exc.diagnostics]
    return []


def test_the_schemas_carry_draft_id_title_and_descriptions(
    topology_schema: dict[str, Any], report_schema: dict[str, Any]
) -> None:
    for fmt, schema in (("topology", topology_schema), ("report", report_schema)):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"https://xdptui.dev/schema/{fmt}-v1.json"
        assert schema["title"] and schema["additionalProperties"] is False
    topology = topology_schema
    assert topology["required"] == ["devices"]
    assert all("description" in p for p in topology["properties"].values())
    assert all("description" in p for p in topology["$defs"]["nic"]["properties"].values())


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_topology_validates(
    path: Path, topology_validator: Draft202012Validator
) -> None:
    assert schema_errors(topology_validator, path.read_text()) == []


def test_the_base_case_is_valid_for_both(
    topology_validator: Draft202012Validator, tmp_path: Path
) -> None:
    assert schema_errors(topology_validator, BASE) == []
    assert loader_errors(BASE, tmp_path) == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_report_of_every_shipped_topology_validates(
    path: Path, report_validator: Draft202012Validator
) -> None:
    sim = Simulator(load_topology(path, validate_command=validate))
    sim.run_until(1_000_000)
    data = json.loads(report.dumps(report.build_report(sim)))
    errors = [e.message for e in report_validator.iter_errors(data)]
    assert errors == []


def test_the_report_xdptui_run_writes_validates(
    report_validator: Draft202012Validator, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    assert (
        cli.main(["run", str(TOPOLOGIES / "tun_vm.yaml"), "--duration", "1ms", "--json", str(out)])
        == 0
    )
    data = json.loads(out.read_text())
    assert list(report_validator.iter_errors(data)) == []
    del data["devices"]["tap0"]["counters"]["xdp_fast_path"]  # taps may lack their own
    assert list(report_validator.iter_errors(data)) == []
    del data["devices"]["eth0"]["counters"]["rx_packets"]
    data["devices"]["eth0"]["colour"] = "red"
    data.pop("events")
    messages = " ".join(e.message for e in report_validator.iter_errors(data))
    assert "'rx_packets' is a required property" in messages
    assert "'colour' was unexpected" in messages
    assert "'events' is a required property" in messages


def test_the_report_schema_requires_the_contract_keys(report_schema: dict[str, Any]) -> None:
    schema = report_schema
    assert schema["required"] == [
        "report", "topology", "seed", "sim_ns", "devices", "maps", "tracepoints", "traffic",
        "events",
    ]  # fmt: skip
    device = schema["properties"]["devices"]["additionalProperties"]
    assert device["required"] == [
        "type", "up", "carrier", "master", "xdp", "counters", "queues", "xdp_tx_rings"
    ]  # fmt: skip
    assert device["properties"]["counters"]["required"] == list(COUNTERS)
    assert schema["properties"]["report"]["const"] == 1


BAD = [
    ("top-level key", "devices:", "devics:\n  x: {type: nic}\ndevices:", "devics"),
    ("device key", "queues: 2}", "queus: 2}", "queus"),
    ("key of another type", "queues: 2}", "queues: 2, peer: x}", "peer"),
    ("device type", "type: bond,", "type: bnod,", "bnod"),
    ("driver", "driver: ice", "driver: ixgbee", "ixgbee"),
    ("bond mode", "mode: active-backup", "mode: active-backpu", "active-backpu"),
    ("tun mode", "mode: tap", "mode: tapp", "tapp"),
    ("xdp mode", "mode: generic", "mode: generc", "generc"),
    ("xdp key", "mode: generic}", "mode: generic, prams: {}}", "prams"),
    ("map type", "type: devmap,", "type: devmapp,", "devmapp"),
    ("map entry key", "egress: xdp_pass", "egres: xdp_pass", "egres"),
    ("traffic key", "rate: 2Mpps", "rat: 2Mpps", "rat"),
    ("proto", "proto: udp", "proto: upd", "upd"),
    ("rate", "rate: 2Mpps", "rate: 2Mpp", "2Mpp"),
    ("speed", "speed: 25G", "speed: 25Q", "25Q"),
    ("duration", "at: 1ms", "at: 1mz", "1mz"),
    ("timeline key", "do: ", "doo: ", "doo"),
    ("lesson key", "title: t", "titel: t", "titel"),
    ("step key", "text: s", "txt: s", "txt"),
    ("both to and from", "to: eth0,", "to: eth0, from: eth0,", "from"),
    ("a range", "dst_port: 80", "dst_port: 70000", "70000"),
]


@pytest.mark.parametrize(("old", "new", "word"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_mistake_is_refused_by_the_schema_and_by_check(
    old: str,
    new: str,
    word: str,
    topology_validator: Draft202012Validator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert old in BASE
    text = BASE.replace(old, new, 1)
    assert schema_errors(topology_validator, text), f"the schema accepts {new!r}"
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SystemExit) as info:
        cli.main(["check", str(path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert word in err and "error:" in err and "Traceback" not in err


def valid_list(message: str) -> list[str]:
    """The loader's ``...; valid: a, b, c`` (up to any parenthesis) as a list."""
    found = re.search(r"valid(?: for an? \w+)?: ([^()\n]+)", message)
    assert found, message
    return [v.strip() for v in found.group(1).split(",")]


ENUMS = [
    ("device type", "type: nic,", "type: zzz,", ("$defs", None, "type")),
    ("driver", "driver: ice", "driver: zzz", ("$defs", "nic", "driver")),
    ("tun mode", "mode: tap", "mode: zzz", ("$defs", "tun", "mode")),
    ("xdp mode", "mode: generic", "mode: zzz", ("xdp",)),
    ("map type", "type: devmap,", "type: zzz,", ("maps",)),
    ("proto", "proto: udp", "proto: zzz", ("traffic", "proto")),
]


def _enum_in(schema: dict[str, Any], where: tuple[str | None, ...]) -> list[str]:
    props = schema["properties"]
    if where[0] == "$defs":
        _, kind, key = where
        if kind is None:
            values: list[str] = props["devices"]["additionalProperties"]["properties"][key]["enum"]
            return values
        return list(schema["$defs"][kind]["properties"][key]["enum"])
    if where == ("xdp",):
        xdp = schema["$defs"]["veth"]["properties"]["xdp"]["anyOf"][1]
        return list(xdp["properties"]["mode"]["enum"])
    if where == ("maps",):
        return list(props["maps"]["additionalProperties"]["properties"]["type"]["enum"])
    return list(props["traffic"]["items"]["properties"]["proto"]["enum"])


@pytest.mark.parametrize(("old", "new", "where"), [e[1:] for e in ENUMS], ids=[e[0] for e in ENUMS])
def test_each_enum_is_what_the_loader_accepts(
    old: str,
    new: str,
    where: tuple[str | None, ...],
    topology_schema: dict[str, Any],
    tmp_path: Path,
) -> None:
    errors = loader_errors(BASE.replace(old, new, 1), tmp_path)
    assert len(errors) == 1, errors
    assert valid_list(errors[0]) == _enum_in(topology_schema, where)


@pytest.mark.parametrize("kind", ["nic", "veth", "bond", "tun"])
def test_each_device_types_keys_are_what_the_loader_accepts(
    kind: str, topology_schema: dict[str, Any], tmp_path: Path
) -> None:
    errors = loader_errors(f"devices:\n  d0: {{type: {kind}, peer: p0, zzz: 1}}\n", tmp_path)
    unknown = [e for e in errors if "zzz" in e]
    assert len(unknown) == 1, errors
    assert valid_list(unknown[0]) == list(topology_schema["$defs"][kind]["properties"])


def test_top_level_keys_are_what_the_loader_accepts(
    topology_schema: dict[str, Any], tmp_path: Path
) -> None:
    errors = loader_errors("zzz: 1\ndevices: {eth0: {type: nic}}\n", tmp_path)
    assert len(errors) == 1, errors
    assert valid_list(errors[0]) == list(topology_schema["properties"])


UNIT_SAMPLES = {
    "duration": (parse_duration_ns, ["4ms", "1.5us", "10 s", "250", "2µs", "4m", "ms", "-1ms"]),
    "rate": (parse_rate, ["2Mpps", "40gbps", "line", "LINE", "1.5Kpps", "2M", "pps", "fast"]),
    "speed": (parse_speed_bps, ["100G", "25g", "40Gbps", "1bps", "10T", "100", "G", "10Q"]),
}


@pytest.mark.parametrize("unit", list(UNIT_SAMPLES))
def test_unit_patterns_accept_what_the_parsers_accept(
    unit: str, topology_schema: dict[str, Any]
) -> None:
    schema = topology_schema
    traffic = schema["properties"]["traffic"]["items"]["properties"]
    sub = {
        "duration": traffic["start"],
        "rate": traffic["rate"],
        "speed": schema["$defs"]["nic"]["properties"]["speed"],
    }[unit]
    parse, samples = UNIT_SAMPLES[unit]
    for text in samples:
        try:
            parse(text)
            parsed = True
        except UnitError:
            parsed = False
        assert Draft202012Validator(sub).is_valid(text) == parsed, text


def test_schema_with_a_bad_format_exits_2_with_a_message() -> None:
    for args in (["schema", "yaml"], ["schema"]):
        res = subprocess.run(
            [sys.executable, "-m", "xdptui", *args], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 2
        assert res.stderr.startswith("xdptui schema: error:") and "Traceback" not in res.stderr
        assert res.stdout == ""


def test_the_readme_modeline_works_with_a_yaml_file() -> None:
    text = textwrap.dedent(
        """\
        # yaml-language-server: $schema=./xdptui-topology.schema.json
        devices: {eth0: {type: nic}}
        """
    )
    readme = (TOPOLOGIES.parent / "README.md").read_text()
    assert text.splitlines()[0] in readme
    assert "xdptui schema topology > xdptui-topology.schema.json" in readme
    assert loads_topology(text).devices[0].name == "eth0"
