"""The command lines the app's keys and dialogs send: the same language a user types."""

from __future__ import annotations

from dataclasses import replace

from test_plans import bond, frame_with

from xdptui import actions
from xdptui.commands import validate
from xdptui.model.views import XdpView


def test_attach_swap_and_detach_commands_parse() -> None:
    eth = replace(bond(), name="eth0", type="nic", xdp=XdpView("xdp_pass", "generic"))
    commands = [
        actions.attach_command("eth0", "redirect", "dev=eth1"),
        actions.swap_command(eth, "xdp_drop"),
        actions.detach_command(eth),
        actions.link_command(eth),
        actions.pktgen_command("eth0", "5Mpps", "128", "16"),
    ]
    assert commands == [
        "ip link set dev eth0 xdp obj redirect param dev=eth1",
        "ip -force link set dev eth0 xdpgeneric obj xdp_drop",
        "ip link set dev eth0 xdpgeneric off",
        "ip link set dev eth0 down",
        "pktgen eth0 rate 5Mpps size 128 flows 16",
    ]
    for command in commands:
        assert validate(command) is None, command


def test_a_native_program_is_detached_with_plain_xdp_off() -> None:
    assert actions.detach_command(bond()) == "ip link set dev bond0 xdp off"


def test_empty_traffic_fields_are_left_out() -> None:
    assert actions.pktgen_command("eth0", rate="1Mpps") == "pktgen eth0 rate 1Mpps"


def test_which_devices_each_action_offers() -> None:
    slave = replace(
        bond(), name="eth0", type="nic", master="bond0", xdp=XdpView("l4lb", "native", "bond0")
    )
    free = replace(bond(), name="eth2", type="nic", xdp=None)
    frame = frame_with(bond(), slave, free)
    assert [d.name for d in actions.attachable(frame)] == ["eth2"]
    assert [d.name for d in actions.with_program(frame)] == ["bond0"]
