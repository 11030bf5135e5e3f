"""`xdptui import --from DIR`: a colleague's saved outputs (an E810 pair in an 802.3ad bond,
queue IRQs bound to CPUs, a NIC without a profile, a bridge) become a topology that passes
check; what the outputs can't say is said in comments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from xdptui.commands import validate
from xdptui.model.topology import BondSpec, NicSpec
from xdptui.topology_io import load_topology


def link(ifindex: int, name: str, **extra: object) -> dict[str, object]:
    return {"ifindex": ifindex, "ifname": name, "flags": ["BROADCAST", "UP"], "mtu": 1500,
            "link_type": "ether", "txqlen": 1000, **extra}  # fmt: skip


def saved(tmp: Path) -> Path:
    d = tmp / "saved"
    d.mkdir()
    slave = {"info_slave_kind": "bond"}
    links = [
        {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP"], "mtu": 65536,
         "link_type": "loopback"},
        link(2, "ens1f0", master="bond0", linkinfo=slave),
        link(3, "ens1f1", master="bond0", linkinfo=slave),
        link(4, "bond0", linkinfo={"info_kind": "bond", "info_data": {
            "mode": "802.3ad", "miimon": 100, "xmit_hash_policy": "layer3+4"}}),
        link(5, "eno1"),
        link(6, "br0", linkinfo={"info_kind": "bridge"}),
    ]  # fmt: skip
    (d / "ip-link.json").write_text(json.dumps(links))
    (d / "nproc").write_text("8\n")
    for name in ("ens1f0", "ens1f1"):
        (d / f"ethtool-i.{name}").write_text(
            f"driver: ice\nversion: 6.18\nbus-info: 0000:3b:00.{name[-1]}\n"
        )
        (d / f"ethtool.{name}").write_text(f"Settings for {name}:\n\tSpeed: 100000Mb/s\n")
        (d / f"ethtool-l.{name}").write_text(
            "Channel parameters:\nPre-set maximums:\nCombined:\t64\n"
            "Current hardware settings:\nRX:\t\tn/a\nCombined:\t4\n"
        )
        (d / f"ethtool-g.{name}").write_text(
            "Ring parameters:\nPre-set maximums:\nRX:\t\t8160\nTX:\t\t8160\n"
            "Current hardware settings:\nRX:\t\t2048\nTX:\t\t1000\n"
        )
    (d / "ethtool-i.eno1").write_text("driver: e1000e\nbus-info: 0000:00:1f.6\n")
    lines = ["           CPU0 CPU1"]
    aff = []
    for k, name in enumerate(("ens1f0", "ens1f1")):
        for q in range(4):
            irq = 100 + 10 * k + q
            lines.append(f" {irq}:  0  0  IR-PCI-MSI  {irq}-edge  ice-{name}-TxRx-{q}")
            aff.append(f"/proc/irq/{irq}/smp_affinity_list:{(q * 2 + k) % 8}")
    (d / "interrupts").write_text("\n".join(lines) + "\n")
    (d / "smp_affinity_list").write_text("\n".join(aff) + "\n")
    return d


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", "import", *args], capture_output=True, text=True
    )


def test_saved_outputs_become_a_topology_that_passes_check(tmp_path: Path) -> None:
    out = tmp_path / "host.yaml"
    res = run("--from", str(saved(tmp_path)), "-o", str(out))
    assert res.returncode == 0, res.stderr
    topo = load_topology(out, validate_command=validate)
    by = {d.name: d for d in topo.devices}
    assert list(by) == ["ens1f0", "ens1f1", "bond0", "eno1"]
    assert topo.cpus == 8
    bond = by["bond0"]
    assert isinstance(bond, BondSpec)
    assert (bond.mode, bond.xmit_hash_policy, bond.miimon_ms, bond.slaves) == (
        "802.3ad",
        "layer3+4",
        100,
        ("ens1f0", "ens1f1"),
    )
    nic = by["ens1f1"]
    assert isinstance(nic, NicSpec)
    assert (nic.driver, nic.speed_bps, nic.queues, nic.ring) == ("ice", 100_000_000_000, 4, 2048)
    assert nic.irq_cpus == (1, 3, 5, 7)  # each queue's IRQ: the first CPU of its affinity
    assert nic.tx_ring == 512  # 1000 is no power of two: the one below, said in a comment
    text = out.read_text()
    assert "TX ring 1000 taken as 512" in text
    assert "eno1: driver e1000e has no profile here: the generic driver stands in" in text
    assert "br0 (bridge) is not modelled: left out" in text
    assert "traffic can't be read" in text


def test_bad_directories_and_objects_are_one_error_line(tmp_path: Path) -> None:
    res = run("--from", str(tmp_path / "nope"))
    assert res.returncode == 2 and "not a directory of saved outputs" in res.stderr
    (tmp_path / "empty").mkdir()
    res = run("--from", str(tmp_path / "empty"))
    assert res.returncode == 2 and "no ip-link.json" in res.stderr
    res = run("--from", str(saved(tmp_path)), "--obj", "x_redir")
    assert res.returncode == 2 and "give NAME=FILE.o" in res.stderr
    assert "Traceback" not in res.stderr
