"""Command-line completion: keywords of the command language, then device, bond, map and
program names, filtered by what is typed."""

from __future__ import annotations

import pytest

from xdptui.commands import validate
from xdptui.completion import Completion, CompletionContext, complete

CTX = CompletionContext(
    devices=("eth0", "eth1", "bond0"),
    bonds=("bond0",),
    maps=("tx_ports",),
    traffic_devices=("eth0",),
    taps=("tap0", "tap1"),
)


def candidates(line: str) -> tuple[str, ...]:
    return complete(line, CTX).candidates


def test_an_empty_line_offers_the_tools() -> None:
    assert candidates("") == ("ip", "bpftool", "ethtool", "pktgen", "reader", "writer", "help")


def test_a_partial_word_is_filtered() -> None:
    assert candidates("ip li") == ("link",)
    assert candidates("ip link set dev e") == ("eth0", "eth1")


def test_ip_link_set_offers_the_verbs_and_type_only_for_a_bond() -> None:
    eth = candidates("ip link set dev eth0 ")
    assert {"up", "down", "xdp", "xdpgeneric", "master", "nomaster", "carrier"} <= set(eth)
    assert "type" not in eth
    assert "type" in candidates("ip link set dev bond0 ")


def test_programs_follow_obj_and_their_parameters_follow_param() -> None:
    assert "l4lb" in candidates("ip link set dev eth0 xdp obj ")
    assert candidates("ip link set dev eth0 xdp obj redirect ") == ("param",)
    assert candidates("ip link set dev eth0 xdp obj redirect param ") == ("dev=", "flags=")
    assert candidates("ip link set dev eth0 xdp obj redirect param dev=") == (
        "dev=eth0",
        "dev=eth1",
        "dev=bond0",
    )
    assert candidates("ip link set dev eth0 xdp obj redirect_map param map=") == ("map=tx_ports",)


def test_master_offers_bonds_and_bond_options_offer_modes_and_policies() -> None:
    assert candidates("ip link set dev eth0 master ") == ("bond0",)
    assert "balance-rr" in candidates("ip link set dev bond0 type bond mode ")
    assert candidates("ip link set dev bond0 type bond mode balance-rr ") == ("xmit_hash_policy",)
    assert "vlan+srcmac" in candidates("ip link set dev bond0 type bond xmit_hash_policy ")


def test_bpftool_ethtool_and_pktgen_complete_too() -> None:
    assert candidates("bpftool map update name ") == ("tx_ports",)
    assert candidates("bpftool map update name tx_ports key 0 value ") == ("eth0", "eth1", "bond0")
    assert candidates("ethtool -") == ("-L", "-G", "-S")
    assert candidates("ethtool -L eth0 ") == ("combined",)
    assert candidates("pktgen ") == ("eth0",)
    assert candidates("pktgen eth0 rate 5Mpps ") == ("size", "flows", "gso")


def test_reader_completes_taps_then_rate_or_stop() -> None:
    assert candidates("reader ") == ("tap0", "tap1")
    assert candidates("reader tap1 ") == ("rate", "stop")
    assert candidates("reader tap1 s") == ("stop",)
    assert candidates("reader tap1 rate ") == ()
    assert validate("reader tap1 rate 200Kpps") is None
    assert validate("reader tap1 stop") is None


def test_apply_replaces_the_word_and_waits_after_key_equals() -> None:
    answer = complete("ip link set dev e", CTX)
    assert answer.common_prefix() == "eth"
    assert answer.apply("ip link set dev e", "eth1") == "ip link set dev eth1 "
    param = complete("ip link set dev eth0 xdp obj redirect param d", CTX)
    assert param.apply("ip link set dev eth0 xdp obj redirect param d", "dev=") == (
        "ip link set dev eth0 xdp obj redirect param dev="
    )
    assert Completion(0, ()).common_prefix() == ""


@pytest.mark.parametrize(
    "line",
    [
        "ip link set dev eth0 ",
        "ip link set dev eth0 xdp obj ",
        "ip link set dev bond0 type bond mode ",
        "ethtool -G eth0 ",
        "pktgen eth0 ",
        "reader tap1 ",
    ],
)
def test_completing_a_valid_prefix_gives_lines_the_parser_accepts(line: str) -> None:
    first = complete(line, CTX).candidates[0]
    finished = {
        "up": "",
        "obj": " xdp_pass",
        "xdp_pass": "",
        "balance-rr": "",
        "rx": " 512",
        "rate": " 1Mpps",
    }
    text = (line + first + finished.get(first, "")).strip()
    assert validate(text) is None, text


def test_writer_offers_sockets_then_its_words() -> None:
    ctx = CompletionContext(devices=("vs", "vi"), xsks=("xsk0",))
    assert complete("writer ", ctx).candidates == ("xsk0",)
    assert complete("writer xsk0 ", ctx).candidates == ("batch", "rate", "stop")
    assert complete("writer xsk0 batch 16 ", ctx).candidates == ("rate",)
    assert complete("writer xsk0 stop ", ctx).candidates == ()
