"""The bond mode-change planner (a pure function of a frame) and the plan runner, then the plan
run for real on the simulator: every command is accepted and the bond ends in the new mode."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import TOPOLOGIES

from xdptui.model.views import BondView, DeviceView, Frame, TracepointsView, XdpView
from xdptui.plans import PlanRunner, bond_mode_change_plan, bond_supports_xdp
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology


def bond(
    mode: str = "802.3ad",
    policy: str = "layer3+4",
    *,
    program: str | None = "l4lb",
    up: bool = True,
    slaves: str = "eth0 eth1",
) -> DeviceView:
    return DeviceView(
        name="bond0",
        ifindex=4,
        type="bond",
        driver=None,
        up=up,
        carrier=True,
        master=None,
        speed_bps=0,
        mtu=1500,
        xdp=XdpView(program, "native") if program else None,
        counters=(),
        bond=BondView(
            mode,
            policy,
            tuple(slaves.split()),
            slaves.split()[0] if slaves else None,
            tuple(slaves.split()),
            100,
        ),
    )


def frame_with(*devices: DeviceView) -> Frame:
    return Frame(
        seq=1,
        t_ns=0,
        name="t",
        description="",
        seed=1,
        nr_cpus=4,
        devices=devices,
        cpus=(),
        tracepoints=TracepointsView(),
        events=(),
        polls=0,
    )


def test_a_mode_xdp_can_run_in_keeps_the_program_through_the_change() -> None:
    plan = bond_mode_change_plan(frame_with(bond()), "bond0", "balance-rr", None)
    assert plan == (
        "ip link set dev bond0 down",
        "ip link set dev eth0 nomaster",
        "ip link set dev eth1 nomaster",
        "ip link set dev bond0 type bond mode balance-rr",
        "ip link set dev eth0 master bond0",
        "ip link set dev eth1 master bond0",
        "ip link set dev bond0 up",
    )


def test_a_mode_without_xdp_detaches_first_and_does_not_reattach() -> None:
    plan = bond_mode_change_plan(frame_with(bond()), "bond0", "balance-tlb", None)
    assert plan[0] == "ip link set dev bond0 xdp off"
    assert plan[-1] == "ip link set dev bond0 up"
    assert not any("obj" in command for command in plan)


def test_the_policy_goes_with_the_mode_command() -> None:
    plan = bond_mode_change_plan(frame_with(bond()), "bond0", "balance-xor", "layer2+3")
    assert "ip link set dev bond0 type bond mode balance-xor xmit_hash_policy layer2+3" in plan


def test_a_policy_the_old_mode_cannot_hash_detaches_and_reattaches_in_the_new_pair() -> None:
    # balance-rr with vlan+srcmac runs XDP; 802.3ad under vlan+srcmac does not, so the mode
    # option (applied before the policy) would be refused with the program loaded.
    start = bond("balance-rr", "vlan+srcmac")
    plan = bond_mode_change_plan(frame_with(start), "bond0", "802.3ad", "layer3+4")
    assert plan[0] == "ip link set dev bond0 xdp off"
    assert plan[-1] == "ip link set dev bond0 xdp obj l4lb"


def test_a_bond_that_is_down_stays_down() -> None:
    plan = bond_mode_change_plan(frame_with(bond(up=False)), "bond0", "balance-rr", None)
    assert "ip link set dev bond0 down" not in plan
    assert "ip link set dev bond0 up" not in plan


def test_only_a_new_policy_is_one_live_command() -> None:
    plan = bond_mode_change_plan(frame_with(bond()), "bond0", "802.3ad", "layer2")
    assert plan == ("ip link set dev bond0 type bond xmit_hash_policy layer2",)
    assert bond_mode_change_plan(frame_with(bond()), "bond0", "802.3ad", None) == ()


def test_an_unhashable_policy_in_a_hash_mode_detaches_first() -> None:
    plan = bond_mode_change_plan(frame_with(bond()), "bond0", "802.3ad", "vlan+srcmac")
    assert plan == (
        "ip link set dev bond0 xdp off",
        "ip link set dev bond0 type bond xmit_hash_policy vlan+srcmac",
    )


def test_a_program_inherited_from_an_upper_bond_is_not_the_bonds_own() -> None:
    nested = replace(bond(), xdp=XdpView("l4lb", "native", inherited_from="bond1"))
    plan = bond_mode_change_plan(frame_with(nested), "bond0", "balance-tlb", None)
    assert "ip link set dev bond0 xdp off" not in plan


def test_only_a_bond_has_a_mode() -> None:
    eth0 = replace(bond(), name="eth0", type="nic", bond=None)
    with pytest.raises(ValueError, match="not a bond"):
        bond_mode_change_plan(frame_with(eth0), "eth0", "balance-rr", None)
    with pytest.raises(KeyError):
        bond_mode_change_plan(frame_with(eth0), "bond9", "balance-rr", None)


def test_xdp_bond_modes_follow_bond_xdp_check() -> None:
    assert bond_supports_xdp("balance-rr", "vlan+srcmac")
    assert bond_supports_xdp("active-backup", "layer2")
    assert not bond_supports_xdp("802.3ad", "vlan+srcmac")
    assert not bond_supports_xdp("broadcast", "layer2")
    assert not bond_supports_xdp("balance-alb", "layer2")


def test_plan_runner_hands_out_commands_in_order_and_stops_at_a_refusal() -> None:
    runner = PlanRunner("t", ("a", "b", "c"))
    assert runner.next_command() == "a"
    runner.record(True, None, "")
    assert runner.next_command() == "b" and runner.position == 1
    runner.record(False, "EPERM", "Error: no.")
    assert runner.done and runner.stopped
    assert runner.next_command() is None
    assert "stopped at step 2/3" in runner.summary() and "EPERM" in runner.summary()
    with pytest.raises(RuntimeError):
        runner.record(True, None, "")


@pytest.mark.parametrize(
    ("mode", "policy", "xdp_after"),
    [("balance-rr", None, "l4lb"), ("balance-tlb", None, None), ("active-backup", None, "l4lb")],
)
def test_the_plan_is_accepted_by_the_simulator_and_changes_the_mode(
    mode: str, policy: str | None, xdp_after: str | None
) -> None:
    sim = Simulator(load_topology(str(TOPOLOGIES / "dual_port.yaml")))
    sim.advance(1_000_000)
    direct = sim.submit(f"ip link set dev bond0 type bond mode {mode}")
    assert not direct.ok and direct.errno == "ENOTEMPTY"
    plan = bond_mode_change_plan(sim.frame(), "bond0", mode, policy)
    for command in plan:
        sim.advance(33_000)
        result = sim.submit(command)
        assert result.ok, (command, result.errno, result.reply)
    sim.advance(1_000_000)
    after = sim.frame().device("bond0")
    info = after.bond
    assert info is not None
    assert info.mode == mode
    assert info.slaves == ("eth0", "eth1")
    assert after.up
    assert (after.xdp.program if after.xdp else None) == xdp_after


def test_the_reattach_keeps_the_programs_params_and_mode() -> None:
    start = replace(
        bond("balance-rr", "vlan+srcmac"),
        xdp=XdpView("redirect", "native", params=(("dev", "eth0"), ("flags", "0"))),
    )
    plan = bond_mode_change_plan(frame_with(start), "bond0", "802.3ad", "layer3+4")
    assert plan[0] == "ip link set dev bond0 xdp off"
    assert plan[-1] == "ip link set dev bond0 xdp obj redirect param dev=eth0 param flags=0"


def test_a_generic_program_is_detached_and_reattached_as_generic() -> None:
    start = replace(
        bond("balance-rr", "vlan+srcmac"), xdp=XdpView("l4lb", "generic", params=(("x", "1"),))
    )
    plan = bond_mode_change_plan(frame_with(start), "bond0", "802.3ad", "layer3+4")
    assert plan[0] == "ip link set dev bond0 xdpgeneric off"
    assert plan[-1] == "ip link set dev bond0 xdpgeneric obj l4lb param x=1"
