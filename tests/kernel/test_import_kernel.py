"""`xdptui import` of a real network namespace: a veth pair, a tap, a devmap and a clang-built
object attached, read over netlink (and bpftool, ethtool) in the namespace and from its saved
outputs; the topology passes check and its devices, queues, attachments and devmap entries are
the namespace's (as `ip -j -d link show` and `bpftool` show them there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_oracle_net import obj, why_not

from xdptui.commands import validate
from xdptui.model.topology import TunSpec, VethSpec
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")

BUILD = """
set -e
ip link add va numrxqueues 2 type veth peer name vb
ip link set va up; ip link set vb up
ip tuntap add dev tp0 mode tap
ip link set tp0 up
ip link set dev va xdp obj {obj} program x_redir
id=$(bpftool -j prog show | {py} -c 'import json,sys; \
print([p["id"] for p in json.load(sys.stdin) if p["name"]=="x_redir"][-1])')
map=$(bpftool -j prog show id $id | {py} -c 'import json,sys; \
print(json.load(sys.stdin)["map_ids"][0])')
tp=$(ip -j link show tp0 | {py} -c 'import json,sys; print(json.load(sys.stdin)[0]["ifindex"])')
bpftool map update id $map key 0 0 0 0 value $tp 0 0 0 0 0 0 0
ip -j -d link show > {out}/ip.json
bpftool -j prog show id $id > {out}/prog.json
{py} -m xdptui import -o {out}/lab/host.yaml --obj x_redir={obj}
{py} -m xdptui import --save {out}/saved
"""


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("import")
    (out / "lab").mkdir()
    script = BUILD.format(obj=obj(), out=out, py=sys.executable)
    res = subprocess.run(["unshare", "-n", "bash", "-c", script], capture_output=True, text=True)
    assert res.returncode == 0, f"building the namespace failed: {res.stderr[-800:]}"
    return out


def test_import_of_a_namespace_passes_check_and_equals_it(namespace: Path) -> None:
    topo = load_topology(namespace / "lab" / "host.yaml", validate_command=validate)
    links = [d for d in json.loads((namespace / "ip.json").read_text()) if d["ifname"] != "lo"]
    prog = json.loads((namespace / "prog.json").read_text())
    assert [d.name for d in topo.devices] == [d["ifname"] for d in links]
    by = {d.name: d for d in topo.devices}
    va, vb, tp = by["va"], by["vb"], by["tp0"]
    assert isinstance(va, VethSpec) and isinstance(vb, VethSpec) and isinstance(tp, TunSpec)
    assert (va.peer, vb.peer) == ("vb", "va")
    assert (va.queues, tp.mode, tp.tx_queue_len) == (2, "tap", 1000)
    assert va.xdp is not None and va.xdp.mode == "native"
    assert va.xdp.program.endswith("objects/progs.o:x_redir")
    assert vb.xdp is None and tp.xdp is None
    (dm,) = topo.maps
    assert (dm.name, dm.type, [(e.key, e.dev) for e in dm.entries]) == (
        "dm",
        "devmap",
        [(0, "tp0")],
    )
    # The simulated host runs the same code: the same name and tag as the kernel's.
    sim = Simulator(topo)
    shown = json.loads(sim.submit("bpftool -j prog show").reply)
    assert [(p["name"], p["tag"]) for p in shown] == [(prog["name"], prog["tag"])]
    # ifindexes follow the namespace's order
    assert [sim.world.devices[d["ifname"]].ifindex for d in links] == [d["ifindex"] for d in links]


def test_saved_outputs_import_to_the_same_topology(namespace: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "xdptui", "import", "--from", str(namespace / "saved"),
         "--obj", f"x_redir={obj()}", "-o", str(namespace / "lab" / "saved.yaml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    live = (namespace / "lab" / "host.yaml").read_text().splitlines()
    saved = (namespace / "lab" / "saved.yaml").read_text().splitlines()
    body = next(i for i, line in enumerate(live) if line.startswith("cpus:"))
    assert saved[body:] == live[body:]  # only the header says where it came from
