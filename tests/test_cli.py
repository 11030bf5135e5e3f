"""The command line as a user meets it: exit codes, messages, the JSON report's shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import TOPOLOGIES

CONTRACT_COUNTERS = {
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "rx_missed_errors",
    "xdp_drop",
    "xdp_pass",
    "xdp_tx",
    "xdp_redirect",
    "xdp_aborted",
    "xdp_tx_errors",
    "xdp_xmit",
    "xdp_xmit_errors",
    "tx_packets",
    "tx_bytes",
    "tx_dropped",
}


def xdptui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args], capture_output=True, text=True, timeout=120
    )


def test_check_accepts_every_shipped_topology():
    for path in sorted(TOPOLOGIES.glob("*.yaml")):
        res = xdptui("check", str(path))
        assert res.returncode == 0, res.stderr
        assert ": ok" in res.stdout


def test_check_reports_every_error_with_file_line_col(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncpus: 2\ndevices:\n  eth0: {type: nic, driver: ixgbee, queus: 2}\n")
    res = xdptui("check", str(bad))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"{bad}:4:") and ": error: " in line for line in lines)
    assert "did you mean 'ixgbe'" in res.stderr and "did you mean 'queues'" in res.stderr
    assert "Traceback" not in res.stderr


def test_timeline_commands_are_checked_by_check(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ndevices:\n  eth0: {type: nic}\n"
        "timeline:\n  - {at: 1ms, do: 'ip link sett dev eth0 up'}\n"
    )
    res = xdptui("check", str(bad))
    assert res.returncode == 2
    assert f"{bad}:5:" in res.stderr and "sett" in res.stderr


def test_run_json_to_stdout_has_the_contract_shape():
    res = xdptui("run", str(TOPOLOGIES / "dual_port.yaml"), "--duration", "35ms", "--json", "-")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["report"] == 1 and data["sim_ns"] == 35_000_000 and data["seed"] == 7
    eth0 = data["devices"]["eth0"]
    assert set(eth0["counters"]) == CONTRACT_COUNTERS
    assert eth0["xdp"] == {"program": "l4lb", "mode": "native", "inherited_from": "bond0"}
    assert eth0["master"] == "bond0"
    bond = data["devices"]["bond0"]
    assert (bond["mode"], bond["xmit_hash_policy"]) == ("802.3ad", "layer3+4")
    assert bond["slaves"] == ["eth0", "eth1"] and bond["active_slave"] == "eth0"
    assert {"queue", "cpu", "rx_packets", "rx_dropped", "ring_peak"} <= set(eth0["queues"][0])
    assert {"ring", "cpus", "locked", "sent", "dropped"} <= set(eth0["xdp_tx_rings"][0])
    assert set(data["tracepoints"]) == {
        "xdp_exception",
        "xdp_redirect_err",
        "xdp_devmap_xmit",
        "xdp_bulk_tx",
    }
    down = [e for e in data["events"] if e["cmd"] == "ip link set dev eth1 carrier off"]
    assert down == [
        {
            "t_ns": 30_000_000,
            "cmd": "ip link set dev eth1 carrier off",
            "ok": True,
            "errno": None,
            "reply": "",
        }
    ]
    assert "dual-port" in res.stderr  # the summary goes to stderr with --json -


def test_run_seed_override_and_bad_arguments():
    res = xdptui(
        "run", str(TOPOLOGIES / "line_rate.yaml"), "--duration", "1ms", "--seed", "5", "--json", "-"
    )
    assert json.loads(res.stdout)["seed"] == 5
    res = xdptui("run", str(TOPOLOGIES / "line_rate.yaml"), "--duration", "10 parsecs")
    assert res.returncode == 2 and "duration" in res.stderr and "Traceback" not in res.stderr
    res = xdptui("run", "/nonexistent.yaml")
    assert res.returncode == 2 and "/nonexistent.yaml:1:1: error:" in res.stderr


def test_run_summary_names_an_object_by_its_file_name() -> None:
    """The xdp column shows the object's file name (cut to fit, the mode kept), never the
    start of the absolute path the topology resolved it to."""
    topo = TOPOLOGIES / "bpf_router.yaml"
    res = xdptui("run", str(topo), "--duration", "1ms")
    row = next(line for line in res.stdout.splitlines() if line.startswith("eth0 "))
    assert "router_sta…/native" in row and "/work" not in row and str(topo.parent) not in row


def test_bench_modes_compares_every_tally_of_both_modes_at_each_instant():
    """``xdptui bench modes``: dual_port sampled at 1 and 2 ms in both modes -- every device
    counter, queue, ring and tracepoint tally of the report at each instant -- and none apart
    by more than 1 % or 2 frames."""
    res = xdptui("bench", "modes", str(TOPOLOGIES / "dual_port.yaml"), "--sim-time", "2ms",
                 "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)
    assert row["instants_ns"] == [1_000_000, 2_000_000]
    report = json.loads(xdptui("run", str(TOPOLOGIES / "dual_port.yaml"), "--duration", "2ms",
                               "--json", "-").stdout)  # fmt: skip
    per_instant = sum(len(q) for d in report["devices"].values() for q in d.get("queues", []))
    assert row["tallies_compared"] > 2 * per_instant  # at both instants, queues and more
    assert row["tallies_differing"] == 0 and row["differing"] == []


# --- shipped topologies by bare name (what a pipx user has) ---------------------------------


def xdptui_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_topologies_lists_every_shipped_topology_with_its_name_one_per_line(tmp_path: Path):
    import yaml

    res = xdptui_in(tmp_path, "topologies")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    shipped = sorted(TOPOLOGIES.glob("*.yaml"))
    assert [line.split()[0] for line in lines] == [p.stem for p in shipped]
    for line, path in zip(lines, shipped, strict=True):
        doc = yaml.safe_load(path.read_text())
        assert f" {doc['name']}: " in line
        # the description's first words, on the same line
        assert " ".join(doc["description"].split()[:4]) in line


def test_a_bare_name_runs_the_shipped_topology_from_any_directory(tmp_path: Path):
    res = xdptui_in(tmp_path, "run", "bond_redirect", "--duration", "1ms", "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["topology"] == "redirect into a bond"
    for name in ("dual_port", "dual_port.yaml"):
        res = xdptui_in(tmp_path, "check", name)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith(str(TOPOLOGIES / "dual_port.yaml")), res.stdout


def test_a_real_file_wins_over_a_shipped_name(tmp_path: Path):
    (tmp_path / "dual_port").write_text("name: mine\ndevices:\n  eth0: {type: nic}\n")
    res = xdptui_in(tmp_path, "check", "dual_port")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("dual_port: ok (mine:"), res.stdout


def test_an_unknown_bare_name_lists_the_valid_ones(tmp_path: Path):
    res = xdptui_in(tmp_path, "run", "dual_prot")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "no shipped topology" in res.stderr and "'dual_prot'" in res.stderr
    for path in TOPOLOGIES.glob("*.yaml"):
        assert path.stem in res.stderr
    res = xdptui_in(tmp_path, "dual_prot")  # the app's form
    assert res.returncode == 2 and "no shipped topology" in res.stderr


def test_topologies_dir_names_the_folders_with_the_topologies_and_the_examples(tmp_path: Path):
    res = xdptui_in(tmp_path, "topologies", "--dir")
    assert res.returncode == 0, res.stderr
    where = dict(line.split(None, 1) for line in res.stdout.splitlines())
    assert (Path(where["topologies"]) / "dual_port.yaml").is_file()
    assert (Path(where["examples"]) / "bpf" / "mac_swap.c").is_file()
    assert (Path(where["examples"]) / "bpf" / "Makefile").is_file()
