"""Bonding with XDP as bond_main.c does it (seed bond-xdp.txt, reference section 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import counters, sim_of

from xdptui.model.views import BondView
from xdptui.report import build_report
from xdptui.sim.engine import Simulator
from xdptui.sim.hashing import FlowHeaders, bond_xmit_hash

BOND = """
name: bond
cpus: {cpus}
devices:
  eth0: {{type: nic, driver: ice, queues: 1, irq_cpus: [0]}}
  eth1: {{type: nic, driver: ice, queues: 1, irq_cpus: [1]}}
  {extra}
  bond0: {{type: bond, mode: {mode}, xmit_hash_policy: {policy}, slaves: [{slaves}],
          xdp: {prog}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, count: {count}, flows: {flows}{traffic}}}
"""


def bond_view(sim: Simulator) -> BondView:
    view = sim.frame().device("bond0").bond
    assert view is not None
    return view


def bond(
    mode: str = "balance-rr",
    policy: str = "layer2",
    prog: str = "xdp_tx",
    slaves: str = "eth0, eth1",
    count: int = 1000,
    extra: str = "",
    cpus: int = 2,
    traffic: str = "",
    timeline: str = "",
    flows: int = 1,
):  # type: ignore[no-untyped-def]
    text = BOND.format(
        mode=mode,
        policy=policy,
        prog=prog,
        slaves=slaves,
        count=count,
        extra=extra,
        cpus=cpus,
        traffic=traffic,
        flows=flows,
    )
    return sim_of(text + timeline)


def split(sim) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    c = counters(sim, "eth0")
    return c["xdp_tx"], c["xdp_redirect"]


def test_bond_program_is_pushed_to_every_slave_and_shown_inherited():
    sim = bond()
    frame = sim.frame()
    for name in ("eth0", "eth1"):
        view = frame.device(name).xdp
        assert view is not None and (view.program, view.inherited_from) == ("xdp_tx", "bond0")
    assert "xdp" not in sim.submit("ip link show dev eth0").reply.split("qdisc")[0]
    assert "xdp/id:" in sim.submit("ip link show dev bond0").reply


def test_bond_rr_first_frame_on_a_cpu_goes_to_slave_1():
    # rr_tx_counter is pre-incremented: the first frame yields id 1, the second slave.
    sim = bond(count=1)
    sim.run_until(2_000_000)
    assert split(sim) == (0, 1)
    assert counters(sim, "eth1")["xdp_xmit"] == 1


def test_bond_rr_alternates_between_slaves():
    sim = bond(count=1001)
    sim.run_until(5_000_000)
    tx, redirect = split(sim)
    assert (tx, redirect) == (500, 501)
    assert counters(sim, "eth0")["tx_packets"] == 500
    assert counters(sim, "eth1")["tx_packets"] == 501


def test_bond_rr_down_slave_share_goes_to_the_next_usable_slave():
    # ids cycle 1, 2, 0 over 3 slaves; eth2 can't transmit, so id 2 wraps to eth0.
    sim = bond(
        slaves="eth0, eth1, eth2",
        count=3000,
        extra="eth2: {type: nic, driver: ice, queues: 1, irq_cpus: [0]}",
        timeline="timeline:\n  - {at: 0ms, do: 'ip link set dev eth2 carrier off'}\n",
    )
    sim.run_until(10_000_000)
    tx, redirect = split(sim)
    assert (tx, redirect) == (2000, 1000)
    assert counters(sim, "eth1")["xdp_xmit"] == 1000


def test_bond_rr_igmp_goes_to_active_slave():
    sim = bond(count=500, traffic=", proto: igmp")
    sim.run_until(5_000_000)
    assert bond_view(sim).active_slave == "eth0"
    assert split(sim) == (500, 0)


def test_bond_active_backup_sends_everything_out_of_the_active_slave():
    sim = bond(
        mode="active-backup",
        count=1000,
        traffic="}\n  - {name: h, to: eth1, rate: 1Mpps, count: 400, flows: 1",
    )
    sim.run_until(5_000_000)
    assert split(sim) == (1000, 0)
    c1 = counters(sim, "eth1")
    # the program on the backup slave still runs on all it receives; XDP_TX goes to eth0
    assert (c1["rx_packets"], c1["xdp_redirect"], c1["xdp_tx"]) == (400, 400, 0)
    assert counters(sim, "eth0")["tx_packets"] == 1400


def test_bond_xor_layer2_worked_example_uses_second_slave():
    # dst 00:22:33:44:55:66 ^ src 00:11:22:33:44:55 ^ 0x0800 = 0x66^0x55^0x800 = 2099; 2099 % 2 = 1
    sim = bond(mode="balance-xor", policy="layer2", count=700)
    sim.run_until(5_000_000)
    assert split(sim) == (0, 700)


def test_bond_8023ad_layer3_4_spreads_flows_by_hash():
    sim = bond(
        mode="802.3ad", policy="layer3+4", count=6400, flows=64, traffic=", src_port: 1000-1063"
    )
    sim.run_until(10_000_000)
    ports = np.arange(1000, 1064, dtype=np.uint16)
    headers = FlowHeaders.make(
        src_mac=0x001122334455,
        dst_mac=0x002233445566,
        src_ip=0xC6120001,
        dst_ip=0x0A000001,
        proto=17,
        src_port=ports,
        dst_port=80,
    )
    to_second = int(np.count_nonzero(bond_xmit_hash("layer3+4", headers) % 2 == 1))
    assert 0 < to_second < 64
    assert split(sim) == ((64 - to_second) * 100, to_second * 100)


@pytest.mark.parametrize(
    ("mode", "policy"),
    [
        ("broadcast", "layer2"),
        ("balance-tlb", "layer2"),
        ("balance-alb", "layer2"),
        ("balance-xor", "vlan+srcmac"),
        ("802.3ad", "vlan+srcmac"),
    ],
)
def test_bond_xdp_refused_in_modes_without_native_support(mode: str, policy: str):
    sim = bond(mode=mode, policy=policy)
    ev = next(e for e in sim.frame().events if "bond0 xdp" in e.cmd)
    assert (ev.ok, ev.errno) == (False, "EOPNOTSUPP")
    assert ev.reply == "Error: No native XDP support for the current bonding mode."
    assert sim.frame().device("eth0").xdp is None


def test_bond_attach_rolls_back_when_a_slave_lacks_xdp_support():
    sim = bond(
        prog="xdp_pass", slaves="eth0, eth2", extra="eth2: {type: nic, driver: generic, queues: 1}"
    )
    ev = next(e for e in sim.frame().events if "bond0 xdp" in e.cmd)
    assert ev.errno == "EOPNOTSUPP" and ev.reply == "Error: Slave device does not support XDP."
    # eth0 got the program first and was rolled back
    assert sim.frame().device("eth0").xdp is None
    assert sim.frame().device("bond0").xdp is None


def test_bond_attach_refused_when_a_slave_has_its_own_program():
    sim = bond(prog="xdp_pass", slaves="eth0")
    assert sim.submit("ip link set dev bond0 xdp off").ok
    assert sim.submit("ip link set dev eth1 down").ok
    assert sim.submit("ip link set dev eth1 xdp obj xdp_drop").ok
    assert sim.submit("ip link set dev eth1 master bond0").ok  # no bond program: allowed
    res = sim.submit("ip link set dev bond0 xdp obj xdp_tx")
    assert res.errno == "EOPNOTSUPP"
    assert res.reply == "Error: Slave has XDP program loaded, please unload before enslaving."
    assert sim.frame().device("eth0").xdp is None  # rolled back
    assert sim.frame().device("eth1").xdp.program == "xdp_drop"  # type: ignore[union-attr]


def test_attach_to_a_slave_while_the_bond_has_a_program_is_eexist():
    sim = bond()
    res = sim.submit("ip -force link set dev eth0 xdp obj xdp_drop")
    assert res.errno == "EEXIST"
    assert res.reply == "Error: Cannot attach when an upper device already has a program."


def test_enslave_rules():
    sim = bond(slaves="eth0", extra="eth2: {type: nic, driver: generic, queues: 1}")
    res = sim.submit("ip link set dev eth1 master bond0")
    assert (res.errno, res.reply) == ("EPERM", "Error: Device can not be enslaved while up.")
    sim.submit("ip link set dev eth1 down")
    assert sim.submit("ip link set dev eth1 master bond0").ok
    assert sim.frame().device("eth1").xdp.inherited_from == "bond0"  # type: ignore[union-attr]
    assert sim.frame().device("eth1").up  # bond_enslave opens the slave
    sim.submit("ip link set dev eth2 down")
    res = sim.submit("ip link set dev eth2 master bond0")
    assert (res.errno, res.reply) == ("EOPNOTSUPP", "Error: Slave does not support XDP.")
    assert sim.frame().device("eth2").master is None


def test_release_removes_the_program_and_closes_the_slave():
    sim = bond()
    assert sim.submit("ip link set dev eth1 nomaster").ok
    dev = sim.frame().device("eth1")
    assert dev.xdp is None and dev.master is None and not dev.up
    assert bond_view(sim).slaves == ("eth0",)


def test_bond_mode_change_rules():
    sim = bond()
    res = sim.submit("ip link set dev bond0 type bond mode active-backup")
    assert res.errno == "ENOTEMPTY"
    for s in ("eth0", "eth1"):
        sim.submit(f"ip link set dev {s} nomaster")
    res = sim.submit("ip link set dev bond0 type bond mode active-backup")
    assert res.errno == "EBUSY"
    sim.submit("ip link set dev bond0 down")
    res = sim.submit("ip link set dev bond0 type bond mode broadcast")
    assert (res.errno, res.reply) == ("EOPNOTSUPP", "RTNETLINK answers: Operation not supported")
    assert bond_view(sim).mode == "balance-rr"
    assert sim.submit("ip link set dev bond0 type bond mode 1").ok
    assert bond_view(sim).mode == "active-backup"


def test_xmit_hash_policy_changes_live_except_vlan_srcmac_under_xdp():
    sim = bond(mode="802.3ad", policy="layer2", count=10**9)
    sim.run_until(1_000_000)
    assert split(sim)[1] > 0 and split(sim)[0] == 0  # layer2 worked example: second slave
    assert sim.submit("ip link set dev bond0 type bond xmit_hash_policy layer3+4").ok
    res = sim.submit("ip link set dev bond0 type bond xmit_hash_policy vlan+srcmac")
    assert res.errno == "EOPNOTSUPP"
    assert bond_view(sim).xmit_hash_policy == "layer3+4"


def test_active_backup_failover_waits_for_miimon():
    sim = bond(
        mode="active-backup, miimon: 100",
        count=10**9,
        traffic="}\n  - {name: h, to: eth1, rate: 1Mpps, count: 1000000000, flows: 1",
        timeline="timeline:\n  - {at: 10ms, do: 'ip link set dev eth0 down'}\n",
    )
    sim.run_until(99_000_000)
    # until the 100 ms MII tick, eth1's XDP_TX is still redirected to the down eth0
    errs = {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}
    assert errs[("eth1", "ENETDOWN")] == pytest.approx(89_000, abs=10)
    assert bond_view(sim).active_slave == "eth0"
    sim.run_until(101_000_000)
    assert bond_view(sim).active_slave == "eth1"
    assert any("making interface the new active one" in e.cmd for e in sim.frame().events)
    before = counters(sim, "eth1")["xdp_tx"]
    sim.run_until(110_000_000)
    assert counters(sim, "eth1")["xdp_tx"] - before == pytest.approx(9000, abs=10)


def test_bond_down_turns_xdp_tx_into_aborted():
    sim = bond(count=100, timeline="timeline:\n  - {at: 0ms, do: 'ip link set dev bond0 down'}\n")
    sim.run_until(5_000_000)
    c = counters(sim, "eth0")
    assert c["xdp_aborted"] == 100 and c["xdp_tx"] == 0
    exc = {(x.dev, x.action): x.count for x in sim.frame().tracepoints.xdp_exception}
    assert exc == {("eth0", "XDP_ABORTED"): 100}


def test_redirect_into_a_bond_picks_a_slave_per_frame():
    sim = sim_of("""
        name: into bond
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          eth2: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: bond0}}}
          bond0: {type: bond, mode: balance-rr, slaves: [eth0, eth1], xdp: xdp_pass}
        traffic:
          - {name: g, to: eth2, rate: 1Mpps, count: 1000}
    """)
    sim.run_until(5_000_000)
    assert counters(sim, "eth0")["xdp_xmit"] == 500
    assert counters(sim, "eth1")["xdp_xmit"] == 500
    bond = sim.frame().device("bond0")
    assert bond.bond is not None and bond.bond.tx_down == 1000


def test_redirect_into_a_bond_needs_every_slave_to_take_it():
    sim = sim_of("""
        name: into bond without program
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth2: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: bond0}}}
          bond0: {type: bond, mode: balance-rr, slaves: [eth0]}
        traffic:
          - {name: g, to: eth2, rate: 1Mpps, count: 100}
    """)
    sim.run_until(5_000_000)
    errs = {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}
    assert errs == {("eth2", "EOPNOTSUPP"): 100}


def test_stack_tx_through_rr_bond_shares_the_counter_with_xdp():
    sim = sim_of("""
        name: stack rr
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: balance-rr, slaves: [eth0, eth1]}
        traffic:
          - {name: app, from: bond0, rate: 1Mpps, count: 1001}
    """)
    sim.run_until(5_000_000)
    assert counters(sim, "eth1")["tx_packets"] == 501  # first frame: id 1
    assert counters(sim, "eth0")["tx_packets"] == 500
    bond = sim.frame().device("bond0")
    assert bond.bond is not None and bond.bond.tx_down == 1001
    assert bond.counter("tx_packets") == 1001  # bond_get_stats: the slaves' sum


def test_nested_bond_propagates_to_the_leaves():
    sim = sim_of("""
        name: nested
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          inner: {type: bond, mode: active-backup, slaves: [eth0, eth1]}
          outer: {type: bond, mode: active-backup, slaves: [inner], xdp: xdp_drop}
    """)
    assert sim.frame().device("eth0").xdp.program == "xdp_drop"  # type: ignore[union-attr]
    assert sim.frame().device("inner").xdp.inherited_from == "outer"  # type: ignore[union-attr]
    assert sim.submit("ip link set dev outer xdp off").ok
    assert sim.frame().device("eth0").xdp is None
    assert sim.frame().device("inner").xdp is None


# ------------------------------------------------------------ bond_get_stats


def _ab_pass_bond() -> Simulator:
    return sim_of("""
        name: active-backup stats
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: active-backup, miimon: 100ms, slaves: [eth0, eth1]}
        traffic:
          - {name: a, to: eth0, rate: 1Mpps, count: 300}
          - {name: b, to: eth1, rate: 1Mpps, count: 200}
    """)


def test_bond_counters_are_the_sum_of_active_and_backup_slaves():
    sim = _ab_pass_bond()
    sim.run_until(5_000_000)
    bond = sim.frame().device("bond0")
    # bond_get_stats folds every slave's rtnl_link_stats64, backup included: 300 + 200
    assert bond.counter("rx_packets") == 300 + 200
    # bond_should_deliver_exact_match: only the active slave's frames go up through the bond
    assert bond.bond is not None and bond.bond.rx_up == 300
    report = build_report(sim)
    assert report["devices"]["bond0"]["rx_up"] == 300
    assert report["devices"]["bond0"]["counters"]["rx_packets"] == 500


def test_bond_keeps_a_released_slaves_counters():
    sim = _ab_pass_bond()
    sim.run_until(5_000_000)
    res = sim.submit("ip link set dev eth1 nomaster")
    assert res.ok, res.reply
    # bond_get_stats: bond->bond_stats keeps what was folded in before the release
    assert sim.frame().device("bond0").counter("rx_packets") == 500


def test_ip_s_link_on_a_bond_shows_the_slaves_sum_and_ethtool_has_no_stats():
    sim = _ab_pass_bond()
    sim.run_until(5_000_000)
    res = sim.submit("ip -j -s link show dev bond0")
    assert res.ok, res.reply
    (link,) = json.loads(res.reply)
    assert link["stats64"]["rx"]["packets"] == 500
    res = sim.submit("ethtool -S bond0")  # bonding has no get_ethtool_stats
    assert res.ok and res.reply == "no stats available"


# ------------------------------------------------------------ bond_xdp_xmit


def _into_ab_bond(exact: bool) -> Simulator:
    sim = sim_of("""
        name: into an active-backup bond whose active slave is down
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          eth2: {type: nic, driver: ice, queues: 1, xdp: {program: redirect, params: {dev: bond0}}}
          bond0: {type: bond, mode: active-backup, miimon: 0, slaves: [eth0, eth1], xdp: xdp_pass}
        traffic:
          - {name: g, to: eth2, rate: 1Mpps, count: 1000}
    """)
    if exact:
        sim.exact = True
    res = sim.submit("ip link set dev eth0 down")
    assert res.ok, res.reply
    return sim


@pytest.mark.parametrize("exact", [True, False])
def test_redirect_into_a_bond_whose_slave_is_down_is_refused_with_enetdown(exact: bool) -> None:
    sim = _into_ab_bond(exact)
    sim.run_until(5_000_000)
    # miimon 0: the bond never notices; bond_xmit_activebackup_slave_get still returns eth0,
    # whose ndo_xdp_xmit answers -ENETDOWN for the first frame of every bulk: nothing queued
    assert counters(sim, "eth0")["tx_packets"] == 0
    (m,) = [m for m in sim.frame().tracepoints.xdp_devmap_xmit if m.to_dev == "bond0"]
    assert m.sent == 0 and m.drops == 1000
    assert m.err == m.flushes  # every bulk failed on its first frame: bond_xdp_xmit < 0
    assert counters(sim, "eth0")["xdp_xmit_errors"] == m.flushes  # one frame handed per bulk


def test_bond_rr_xmit_stops_at_the_first_refused_frame() -> None:
    from xdptui.model.errors import Errno
    from xdptui.sim.bond.bond_main import Bond, BondLogic

    sim = sim_of("""
        name: rr
        cpus: 1
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: balance-rr, slaves: [eth0, eth1]}
    """)
    bond = sim.world.devices["bond0"]
    assert isinstance(bond, Bond)
    lg = BondLogic(bond, sim.world.devices)
    # ids (counter % 2): 1 refuses. Bulk 1 starts at counter 1 -> id 1: nothing sent, the
    # counter stops at 1. Every later bulk: counter 2k -> id 0 sent, 2k+1 -> id 1 breaks.
    sent, first, stopped, counter = lg.rr_bulks(0, 16, 10, {"eth0": None, "eth1": Errno.ENXIO})
    assert (sent, first, stopped) == (9 / 10, 1 / 10, 1.0) and counter == 1 + 9 * 2


# ------------------------------------------------------------ bond_option_mode_set: miimon


@pytest.mark.parametrize(
    ("mode", "miimon"),
    [
        ("802.3ad", 100),
        ("balance-tlb", 100),
        ("balance-alb", 100),
        ("active-backup", 0),
        ("balance-rr", 0),
        ("balance-xor", 0),
        ("broadcast", 0),
    ],
)
def test_miimon_default_follows_bond_option_mode_set(mode: str, miimon: int) -> None:
    sim = sim_of(f"""
        name: miimon default
        devices:
          eth0: {{type: nic, driver: ice, queues: 1}}
          bond0: {{type: bond, mode: {mode}, slaves: [eth0]}}
    """)
    assert bond_view(sim).miimon == miimon


def test_mode_change_to_8023ad_starts_mii_monitoring_at_100ms() -> None:
    sim = sim_of("""
        name: empty bond
        devices:
          bond0: {type: bond, mode: active-backup, up: false}
    """)
    assert bond_view(sim).miimon == 0
    res = sim.submit("ip link set dev bond0 type bond mode 802.3ad")
    assert res.ok, res.reply
    assert bond_view(sim).miimon == 100


def test_check_warns_about_active_backup_without_miimon(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from xdptui.cli import main

    path = tmp_path / "ab.yaml"
    path.write_text(
        "name: ab\ndevices:\n  eth0: {type: nic, driver: ice}\n"
        "  bond0: {type: bond, mode: active-backup, slaves: [eth0]}\n"
    )
    assert main(["check", str(path)]) == 0
    assert "bond0: active-backup without miimon" in capsys.readouterr().err
    path.write_text(path.read_text().replace("slaves:", "miimon: 100, slaves:"))
    assert main(["check", str(path)]) == 0
    assert "miimon" not in capsys.readouterr().err


# ------------------------------------------------------------ replies and flags


def test_bond_option_errors_read_as_iproute2_prints_the_extack() -> None:
    sim = bond(count=10)
    res = sim.submit("ip link set dev bond0 type bond mode active-backup")
    # bond_opt_error_interpret (v6.0+): NL_SET_ERR_MSG_ATTR, iproute2 adds the full stop
    assert (res.errno, res.reply) == (
        "ENOTEMPTY",
        "Error: unable to set option because the bond device has slaves.",
    )
    for s in ("eth0", "eth1"):
        assert sim.submit(f"ip link set dev {s} nomaster").ok
    res = sim.submit("ip link set dev bond0 type bond mode active-backup")
    assert (res.errno, res.reply) == (
        "EBUSY",
        "Error: unable to set option because the bond is up.",
    )


def test_a_tap_slave_takes_the_bonds_program() -> None:
    sim = sim_of("""
        name: tap slave
        devices:
          tap0: {type: tun, mode: tap, reader: 1Mpps}
          bond0: {type: bond, mode: active-backup, miimon: 100, slaves: [tap0], xdp: xdp_pass}
    """)
    assert not [e for e in sim.frame().events if not e.ok]
    tap = sim.world.devices["tap0"]  # tap_netdev_ops has ndo_bpf and ndo_xdp_xmit
    assert tap.xdp["native"].inherited_from == "bond0"


@pytest.mark.parametrize(
    "line",
    [
        "ip link set dev eth0 xdpgeneric off",
        "ip link set dev eth0 xdpgeneric obj xdp_drop",
        "ip link set dev eth0 xdp off",
    ],
)
def test_xdp_on_or_off_on_a_slave_of_a_bond_with_a_program_is_eexist(line: str) -> None:
    sim = bond(count=10)
    res = sim.submit(line)
    # dev_xdp_attach: the upper-device check comes before anything about the slave's own state
    assert (res.errno, res.reply) == (
        "EEXIST",
        "Error: Cannot attach when an upper device already has a program.",
    )


def test_ip_link_show_carries_master_and_slave_flags() -> None:
    sim = bond(count=10)
    links = {x["ifname"]: x for x in json.loads(sim.submit("ip -j link show").reply)}
    assert "MASTER" in links["bond0"]["flags"] and "SLAVE" not in links["bond0"]["flags"]
    assert "SLAVE" in links["eth0"]["flags"] and links["eth0"]["master"] == "bond0"


# ------------------------------------------------------------ 802.3ad link events


def test_8023ad_slave_whose_carrier_comes_back_waits_for_the_next_mii_tick() -> None:
    sim = bond(
        mode="802.3ad",
        policy="layer3+4",
        count=10**9,
        flows=64,
        timeline="timeline:\n"
        "  - {at: 30ms, do: 'ip link set dev eth1 carrier off'}\n"
        "  - {at: 60ms, do: 'ip link set dev eth1 carrier on'}\n",
    )
    assert bond_view(sim).miimon == 100  # bond_option_mode_set's default for 802.3ad
    sim.run_until(31_000_000)
    assert bond_view(sim).usable_slaves == ("eth0",)  # NETDEV_CHANGE: arrays rebuilt at once
    sim.run_until(99_000_000)
    # carrier back at 60 ms, but bond_update_speed_duplex failed at the loss: BOND_LINK_FAIL
    assert bond_view(sim).usable_slaves == ("eth0",)
    sim.run_until(101_000_000)  # the MII tick at 100 ms: BOND_LINK_BACK -> UP
    assert bond_view(sim).usable_slaves == ("eth0", "eth1")


def test_balance_xor_slave_whose_carrier_comes_back_is_usable_at_once() -> None:
    sim = bond(
        mode="balance-xor, miimon: 100",
        policy="layer3+4",
        count=10**9,
        flows=64,
        timeline="timeline:\n"
        "  - {at: 30ms, do: 'ip link set dev eth1 carrier off'}\n"
        "  - {at: 60ms, do: 'ip link set dev eth1 carrier on'}\n",
    )
    sim.run_until(61_000_000)
    # no MII tick in between: slave->link is still UP, NETDEV_CHANGE rebuilds the array
    assert bond_view(sim).usable_slaves == ("eth0", "eth1")
