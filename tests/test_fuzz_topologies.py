"""Property tests: mutations of every shipped topology never give a traceback.

Three properties over files a careless or hostile user could write, starting from each file in
``topologies/``:

* a mutated document (values replaced by strange ones, keys dropped or misspelt, list items
  doubled) read by ``xdptui check`` exits 0, or 2 with every stderr line ``FILE:LINE:COL: error:``;
* so does a mutated *text* (YAML punctuation inserted, spans deleted, lines doubled);
* a mutation that ``check`` accepts runs (``check`` ok means ``run`` works).

The runs are deterministic (``derandomize``) and bounded for the suite; raise ``FUZZ_EXAMPLES``
in the environment to explore longer by hand.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from xdptui import cli, report
from xdptui.sim.engine import Simulator

TOPOLOGIES = sorted((Path(__file__).resolve().parent.parent / "topologies").glob("*.yaml"))
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

WEIRD: list[object] = [
    None, True, False, 0, -1, 1, 3, 64, 96, 256, 257, 3047, 9702, 9703, 65535, 65536, 65537,
    2**31, 2**32, 2**63, 2**70, 1.5, 1e-9, float("inf"), float("nan"),
    "", "x", "eth0", "eth1", "bond0", "tap0", "1-2", "10.0.0.0/33", "1e999ms", "9" * 400,
    "9" * 400 + "ms", "86400s", "86401s", "10Gpps", "11Gpps", "800G", "801G", "1000000000T",
    "line", "0pps", [], [None], [64, 1500], [64] * 7, {}, {"a": 1}, {"type": "veth"},
    {"type": "nic"}, {"program": "xdp_tx", "mode": "generic"}, "x.py:f", "/etc/x.py:f",
    "../x.py:f", "xdp_tx", "redirect_map", "\0", "802.3ad", "vlan+srcmac",
    "ip link set dev eth0 down", "ethtool -L eth0 combined 64", "ethtool -G eth0 rx 8192",
    "ip link set dev eth0 mtu 9000", "pktgen eth0 rate 10Gpps flows 65536",
    "ip link set dev eth0 xdp obj x.py:f", "&a", "*a", "!!python/object:os.system",
]  # fmt: skip
KEYS = ["queues", "ring", "mtu", "flows", "size", "gso", "rate", "speed", "cpus", "count",
        "tx_queue_len", "start", "xdp", "irq_cpus", "mode", "max_entries", "seed"]  # fmt: skip
YAML_PUNCTUATION = [*":{}[],&*!|>-#'\"%@`\t\n ", "\n  ", ": ", "- ", "&a ", "*a", "<<: "]
DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: \S")


def node_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from node_paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from node_paths(value, (*prefix, i))


def weird_values() -> st.SearchStrategy[object]:
    return st.one_of(
        st.sampled_from(WEIRD),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=24),
    )


@st.composite
def mutated_document(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one to four edits at nodes drawn from the whole tree."""
    doc = yaml.safe_load(yaml.safe_dump(base))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(list(node_paths(doc))))
        if not path:
            continue
        *parent_path, last = path
        parent = doc
        for part in parent_path:
            parent = parent[part]
        op = draw(st.sampled_from(["replace", "replace", "delete", "rename", "double", "add"]))
        if op == "replace":
            parent[last] = draw(weird_values())
        elif op == "delete":
            del parent[last]
        elif op == "rename" and isinstance(parent, dict):
            parent[f"{last}x"] = parent.pop(last)
        elif op == "double" and isinstance(parent, list):
            parent.append(parent[last])
        elif op == "add" and isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(KEYS))] = draw(weird_values())
    return doc


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "double-line"]))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(YAML_PUNCTUATION)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            lines = text.splitlines(keepends=True)
            i = draw(st.integers(0, max(len(lines) - 1, 0)))
            text = "".join([*lines[: i + 1], *lines[i:]])
    return text


@contextlib.contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="xdptui-fuzz-") as name:
        yield Path(name)


def check(text: str, folder: Path) -> tuple[int, str, Path, str]:
    """``xdptui check`` on ``text`` as ``folder``/topo.yaml: (status, stderr, path, stdout)."""
    path = folder / "topo.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(["check", str(path)])
        except SystemExit as exc:
            status = int(exc.code or 0)
    return status, err.getvalue(), path, out.getvalue()


def assert_clean(status: int, stderr: str, path: Path) -> None:
    assert status in (0, 2), stderr
    if status == 0:
        assert stderr == ""
        return
    lines = stderr.splitlines()
    assert lines, "exit 2 needs at least one line"
    for line in lines:
        m = DIAGNOSTIC.match(line)
        assert m is not None, line
        assert m["file"] == str(path) and int(m["line"]) >= 1 and int(m["col"]) >= 1, line


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda p: p.name)
@FUZZ
@given(data=st.data())
def test_mutated_documents_give_file_line_col_errors_never_a_traceback(
    topology: Path, data: st.DataObject
) -> None:
    doc = data.draw(mutated_document(yaml.safe_load(topology.read_text())))
    text = yaml.safe_dump(doc, allow_unicode=True)
    with folder() as where:
        status, stderr, path, _ = check(text, where)
    assert_clean(status, stderr, path)


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda p: p.name)
@FUZZ
@given(data=st.data())
def test_mutated_text_gives_file_line_col_errors_never_a_traceback(
    topology: Path, data: st.DataObject
) -> None:
    text = data.draw(mutated_text(topology.read_text()))
    with folder() as where:
        status, stderr, path, _ = check(text, where)
    assert_clean(status, stderr, path)


@settings(FUZZ, max_examples=3 * EXAMPLES)
@given(data=st.data())
def test_what_check_accepts_runs(data: st.DataObject) -> None:
    """Small mutations that pass ``check`` build a simulator and run 200 µs of it."""
    topology = data.draw(st.sampled_from(TOPOLOGIES))
    doc = data.draw(mutated_document(yaml.safe_load(topology.read_text())))
    with folder() as where:
        status, _, path, _ = check(yaml.safe_dump(doc, allow_unicode=True), where)
        event(f"check exit {status}")
        if status != 0:
            return
        topology = cli.load(str(path))
    sim = Simulator(topology)
    sim.run_until(200_000)
    report.build_report(sim)
    report.summary(sim.frame())
    assert sim.frame().t_ns == 200_000
