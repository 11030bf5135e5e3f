"""``xdptui check`` ok means ``xdptui run`` works: every bound the commands or the engine enforce
is enforced by the loader too, at the offending line, with the valid range.

The bounds live in one place, ``xdptui.model.limits``; the tests here tie that module to the
engine's own numbers and commands, and walk each case a user met as the user meets it: ``check``
exits 2 with ``FILE:LINE:COL: error:`` naming the field and what is valid, and the largest
valid value checks ok and runs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import topo

from xdptui import cli, report
from xdptui.model import limits
from xdptui.sim import control, drivers, traffic
from xdptui.sim.engine import Simulator


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``xdptui check`` on ``text`` as a file: (exit status, stdout, stderr)."""
    path = tmp_path / "topo.yaml"
    path.write_text(textwrap.dedent(text))
    try:
        status = cli.main(["check", str(path)])
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err.replace(str(path), "topo.yaml")


def runs(tmp_path: Path, text: str, duration_ns: int = 2_000_000) -> Simulator:
    """Load ``text`` as ``check`` does and run it; every boot command must have succeeded."""
    path = tmp_path / "topo.yaml"
    path.write_text(textwrap.dedent(text))
    sim = Simulator(cli.load(str(path)))
    sim.run_until(duration_ns)
    report.build_report(sim)
    report.summary(sim.frame())
    failed = [(e.cmd, e.reply) for e in sim.frame().events if not e.ok]
    assert failed == []
    return sim


# --- one module, the engine's numbers ------------------------------------------------------


def test_driver_limits_are_the_driver_profiles() -> None:
    assert set(limits.DRIVER_LIMITS) == set(drivers.DRIVERS)
    for name, profile in drivers.DRIVERS.items():
        row = limits.DRIVER_LIMITS[name]
        assert (row.max_queues, row.rx_ring_max, row.native_xdp) == (
            profile.max_queues,
            profile.rx_ring_max,
            profile.native_xdp,
        ), name


def test_table_and_mtu_limits_are_the_engines() -> None:
    assert limits.MAX_TABLE_ENTRIES == traffic.MAX_TABLE_ENTRIES
    assert limits.GSO_GRAIN == traffic.GSO_GRAIN
    assert limits.XDP_MAX_MTU == control.XDP_MAX_MTU


@pytest.mark.parametrize("driver", sorted(limits.DRIVER_LIMITS))
def test_the_commands_take_exactly_the_limits(driver: str) -> None:
    """ethtool -L / -G and ip link set mtu accept the edge of each range and refuse past it."""
    sim = Simulator(topo(f"cpus: 512\ndevices:\n  eth0: {{type: nic, driver: {driver}}}\n"))
    top = limits.max_channels(driver, 512)
    assert sim.submit(f"ethtool -L eth0 combined {top}").ok
    assert not sim.submit(f"ethtool -L eth0 combined {top + 1}").ok
    ring = limits.DRIVER_LIMITS[driver].rx_ring_max
    assert sim.submit(f"ethtool -G eth0 rx {ring}").ok
    assert not sim.submit(f"ethtool -G eth0 rx {ring + 1}").ok
    assert not sim.submit(f"ethtool -G eth0 rx {limits.RING_MIN - 1}").ok
    assert sim.submit(f"ip link set dev eth0 mtu {limits.MTU_MAX}").ok
    assert not sim.submit(f"ip link set dev eth0 mtu {limits.MTU_MAX + 1}").ok
    assert not sim.submit(f"ip link set dev eth0 mtu {limits.MTU_MIN - 1}").ok


def test_flow_table_entries_is_what_the_engine_builds() -> None:
    for flows, sizes, gso in ((3, (64, 128), 0.0), (7, (64,), 0.3), (20, (64, 1500, 9000), 1.0)):
        spec = topo(
            f"devices: {{eth0: {{type: nic}}}}\ntraffic:\n"
            f"  - {{name: g, to: eth0, flows: {flows}, size: {list(sizes)}, gso: {gso}}}\n"
        ).traffic[0]
        import numpy as np

        table = traffic.build_flow_table(spec, np.random.default_rng(0))
        assert len(table) == limits.flow_table_entries(flows, len(sizes), gso)


# --- each case the issue lists, as check and run meet it -----------------------------------

CASES = {
    "flows above the table": (
        """\
        devices: {eth0: {type: nic}}
        traffic:
          - {name: g, to: eth0,
             flows: 1048577}
        """,
        "topo.yaml:4:13: error: traffic[0].flows: 1048577 is out of range; valid: 1..1048576",
    ),
    "lcm of flows and sizes": (
        """\
        devices: {eth0: {type: nic}}
        traffic:
          - {name: g, to: eth0, size: [64, 128, 256],
             flows: 400000}
        """,
        "topo.yaml:4:13: error: traffic[0].flows: the flow table needs lcm(400000 flows, 3 sizes)"
        " = 1200000 entries, more than the 1048576 a source may have; valid: flows whose table "
        "is at most 1048576 entries, e.g. flows: 399999 (a multiple of 3)",
    ),
    "the GSO grain": (
        """\
        devices: {eth0: {type: tun, reader: 1Mpps}}
        traffic:
          - {name: g, to: eth0, gso: 0.25,
             flows: 1048575}
        """,
        "topo.yaml:4:13: error: traffic[0].flows: the flow table needs lcm(1048575 flows, 1 sizes, "
        "20 for the GSO share) = 4194300 entries",
    ),
    "tx_queue_len past u32": (
        """\
        devices:
          tap0: {type: tun, tx_queue_len: 10000000000000000000}
        """,
        "topo.yaml:2:35: error: devices.tap0.tx_queue_len: 10000000000000000000 is out of "
        "range; valid: 1..4294967295",
    ),
    "ixgbe queues on 4 CPUs": (
        """\
        cpus: 4
        devices:
          eth0: {type: nic, driver: ixgbe, queues: 256}
        """,
        "topo.yaml:3:44: error: devices.eth0.queues: 256 is out of range; valid: 1..4 "
        "(ethtool -L takes 1..4 on ixgbe with 4 CPUs: the driver's 64 queues, at most one per CPU)",
    ),
    "ring past the driver": (
        """\
        devices:
          eth0: {type: nic, driver: ice, ring: 8192}
        """,
        "topo.yaml:2:40: error: devices.eth0.ring: 8192 is out of range; valid: 64..4096 "
        "(ethtool -G takes up to 8160 on ice)",
    ),
    "mtu past the device": (
        """\
        devices:
          eth0: {type: nic, mtu: 65535}
        """,
        "topo.yaml:2:26: error: devices.eth0.mtu: 65535 is out of range; valid: 68..9702",
    ),
    "mtu past one XDP buffer": (
        """\
        devices:
          eth0: {type: nic, mtu: 9000, xdp: xdp_pass}
        """,
        "topo.yaml:2:26: error: devices.eth0.mtu: 9000 is too large for native XDP (its program "
        "xdp_pass); valid: 68..3046",
    ),
    "mtu of a bond's slave": (
        """\
        devices:
          eth0: {type: nic, mtu: 4000}
          bond0: {type: bond, slaves: [eth0], xdp: xdp_tx}
        """,
        "topo.yaml:2:26: error: devices.eth0.mtu: 4000 is too large for native XDP (bond0's "
        "program xdp_tx, pushed to its slaves); valid: 68..3046",
    ),
    "speed in terabits": (
        """\
        devices:
          eth0: {type: nic, speed: 1000000000T}
        """,
        "topo.yaml:2:28: error: devices.eth0.speed: '1000000000T' is out of range; valid: 1M..800G",
    ),
    "rate past 10 Gpps": (
        """\
        devices: {tap0: {type: tun, reader: 1Mpps}}
        traffic: [{name: g, to: tap0, rate: 100000000Mpps}]
        """,
        "topo.yaml:2:37: error: traffic[0].rate: '100000000Mpps' is too fast; valid: up to 10Gpps",
    ),
    "a start a day away": (
        """\
        devices: {eth0: {type: nic}}
        traffic: [{name: g, to: eth0, start: 86401s}]
        """,
        "topo.yaml:2:38: error: traffic[0].start: '86401s' is too long; valid: 0s..86400s",
    ),
    "a seed past 32 bits": (
        """\
        seed: 4294967296
        devices: {eth0: {type: nic}}
        """,
        "topo.yaml:1:7: error: seed: 4294967296 is out of range; valid: 0..4294967295",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_refuses_at_the_line_with_the_valid_range(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = CASES[case]
    status, out, err = check(tmp_path, text, capsys)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines[0]
    assert "Traceback" not in err


def test_the_edges_check_ok_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The largest value of every bound above, in one file: check ok, and a run works."""
    text = """\
        seed: 4294967295
        cpus: 4
        devices:
          eth0: {type: nic, driver: ixgbe, queues: 4, ring: 4096, tx_ring: 4096, mtu: 3046,
                 speed: 800G, xdp: xdp_tx}
          eth1: {type: nic, driver: mlx5, ring: 8192, mtu: 9702}
          eth2: {type: nic, mtu: 4000, xdp: {program: xdp_pass, mode: generic}}
          tap0: {type: tun, tx_queue_len: 4294967295, reader: 10Gpps}
        traffic:
          - {name: a, to: eth0, flows: 65536, count: 9223372036854775807}
          - {name: b, to: eth1, flows: 21845, size: [64, 128, 256]}
          - {name: c, to: tap0, flows: 3276, gso: 0.25, rate: 10Gpps, start: 86400s}
          - {name: d, to: eth2, rate: 10000Gbps, size: 1500}
        timeline:
          - {at: 86400s, do: "ip link set dev eth0 down"}
        """
    status, out, err = check(tmp_path, text, capsys)
    assert (status, err) == (0, "")
    assert "topo.yaml: ok" in out.replace(str(tmp_path) + "/", "")
    sim = runs(tmp_path, text)
    assert sim.frame().t_ns == 2_000_000


def test_irq_cpus_without_queues_are_bounded_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = check(
        tmp_path,
        "cpus: 2\ndevices:\n  eth0: {type: nic, irq_cpus: [0, 1, 0]}\n",
        capsys,
    )
    assert status == 2
    assert err.startswith(
        "topo.yaml:3:31: error: devices.eth0.irq_cpus: lists 3 CPUs, one per queue, but the "
        "device takes at most 2 queues"
    )


def test_a_timeline_pktgen_past_the_rate_limit_is_refused_by_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: check ok, then run died of an int64 overflow in the first step after it."""
    text = """\
        devices: {tap0: {type: tun, reader: 1Mpps}}
        traffic: [{name: g, to: tap0, rate: 1Mpps}]
        timeline:
          - {at: 1ms, do: "pktgen tap0 rate 100000000000000000000Gpps"}
          - {at: 1ms, do: "reader tap0 rate 100000000000000000000Gpps"}
          - {at: 1ms, do: "pktgen tap0 flows 1048577"}
        """
    status, _, err = check(tmp_path, text, capsys)
    assert status == 2
    assert err.splitlines() == [
        'topo.yaml:4:19: error: timeline[0].do: pktgen: rate "100000000000000000000Gpps" is out '
        "of range; valid: above 0, up to 10Gpps",
        'topo.yaml:5:19: error: timeline[1].do: reader: rate "100000000000000000000Gpps" is out '
        "of range; valid: above 0, up to 10Gpps",
        "topo.yaml:6:19: error: timeline[2].do: pktgen: flows must be 1..1048576 (the flow table)",
    ]
    edge = text.replace("100000000000000000000Gpps", "10Gpps").replace("1048577", "1048576")
    sim = runs(tmp_path, edge)
    assert sum(1 for e in sim.frame().events if e.cmd.startswith(("pktgen", "reader"))) == 3
