"""The conventions a kernel engineer reaches for: help, ip -j, bpftool prog/net/-j, ethtool -S."""

from __future__ import annotations

import json
from typing import Any

from conftest import sim_of

from xdptui.commands import COMMAND_HELP, TOOLS, parse
from xdptui.completion import CompletionContext, complete
from xdptui.report import build_report
from xdptui.sim.engine import Simulator

HOST = """
name: conventions
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2}
  eth1: {type: nic, driver: mlx5, queues: 2}
  eth2: {type: nic, driver: i40e, queues: 2}
  eth3: {type: nic, driver: ixgbe, queues: 2}
  lo0: {type: nic, driver: generic, queues: 1}
  veth0: {type: veth, peer: veth1}
  veth1: {type: veth, peer: veth0}
maps:
  tx_ports: {type: devmap, max_entries: 4, entries: {0: eth1, 1: {dev: veth0, egress: xdp_pass}}}
traffic:
  - {name: g, to: eth0, rate: 1Mpps, count: 500}
"""


def ok(sim: Simulator, line: str) -> str:
    res = sim.submit(line)
    assert res.ok, res.reply
    return res.reply


def js(sim: Simulator, line: str) -> Any:
    return json.loads(ok(sim, line))


# ------------------------------------------------------------------ help


def test_help_lists_every_command_word_the_parser_accepts() -> None:
    sim = sim_of(HOST)
    reply = ok(sim, "help")
    firsts = {line.split()[0] for line in reply.splitlines() if line and not line[0].isspace()}
    assert firsts == set(TOOLS)
    for synopsis, _ in COMMAND_HELP:
        assert synopsis in reply
    for word in TOOLS:  # each word parses to something other than "unknown command"
        res = sim.submit(word)
        assert "unknown command" not in res.reply


def test_help_of_one_command_prints_its_synopses() -> None:
    sim = sim_of(HOST)
    reply = ok(sim, "help ip")
    assert "ip [-j] [-s] [-d] link show [dev DEV]" in reply
    assert all(line.startswith(("ip ", " ")) for line in reply.splitlines())
    assert "bpftool [-j] prog show" in ok(sim, "help bpftool")
    assert "ethtool -S DEV" in ok(sim, "help ethtool")
    assert ok(sim, "help pktgen").startswith("pktgen DEV rate R")
    assert ok(sim, "help reader").startswith("reader TAP rate R")


def test_help_of_an_unknown_word_names_the_valid_ones() -> None:
    res = sim_of(HOST).submit("help bogus")
    assert not res.ok and res.errno == "EINVAL"
    assert all(word in res.reply for word in TOOLS)


def test_errors_that_suggest_help_are_true() -> None:
    sim = sim_of(HOST)
    assert "type help" in sim.submit("frobnicate").reply
    assert sim.submit("ip link set dev").reply.endswith('Try option "help"')
    assert sim.submit("help").ok
    for line in ("ip help", "ip -help", "ip link help", "bpftool help", "ethtool -h"):
        assert ok(sim, line) == ok(sim, "help " + line.split()[0])


# ------------------------------------------------------------------ ip -j link show


def test_ip_json_link_show_has_iproute2s_keys() -> None:
    sim = sim_of(HOST)
    rows = js(sim, "ip -j link show")
    assert [r["ifname"] for r in rows] == list(sim.world.devices)
    first = rows[0]
    assert list(first) == [
        "ifindex",
        "ifname",
        "flags",
        "mtu",
        "qdisc",
        "operstate",
        "linkmode",
        "group",
        "txqlen",
        "link_type",
        "address",
        "broadcast",
    ]
    assert first["flags"] == ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
    assert first["operstate"] == "UP" and first["link_type"] == "ether"
    veth = next(r for r in rows if r["ifname"] == "veth0")
    assert veth["link"] == "veth1" and veth["qdisc"] == "noqueue"


def test_xdp_object_mode_and_id_match_bpftool() -> None:
    sim = sim_of(HOST)
    ok(sim, "ip link set dev eth0 xdp obj xdp_tx")
    ok(sim, "ip link set dev lo0 xdp obj xdp_pass")
    (eth0,) = js(sim, "ip -j link show dev eth0")
    (lo0,) = js(sim, "ip -json link show lo0")
    assert eth0["xdp"]["mode"] == 1  # XDP_ATTACHED_DRV
    assert lo0["xdp"]["mode"] == 2  # XDP_ATTACHED_SKB
    assert eth0["xdp"]["attached"] == [{"mode": 1, "prog": eth0["xdp"]["prog"]}]
    progs = {p["name"]: p for p in js(sim, "bpftool -j prog show")}
    assert eth0["xdp"]["prog"]["id"] == progs["xdp_tx"]["id"]
    assert eth0["xdp"]["prog"]["tag"] == progs["xdp_tx"]["tag"]
    assert lo0["xdp"]["prog"]["id"] == progs["xdp_pass"]["id"]
    assert list(eth0)[: eth0.__len__()].index("xdp") == list(eth0).index("mtu") + 1


def test_ip_json_stats64_equal_the_report() -> None:
    sim = sim_of(HOST)
    sim.run_until(2_000_000)
    report = build_report(sim)["devices"]["eth0"]["counters"]
    for line in ("ip -j -s link show dev eth0", "ip -s -j link show dev eth0", "ip -j -s -d link"):
        row = js(sim, line)[0]
        stats = row["stats64"]
        assert list(stats["rx"]) == [
            "bytes",
            "packets",
            "errors",
            "dropped",
            "over_errors",
            "multicast",
        ]
        assert list(stats["tx"]) == [
            "bytes",
            "packets",
            "errors",
            "dropped",
            "carrier_errors",
            "collisions",
        ]
        assert stats["rx"]["packets"] == report["rx_packets"] == 500
        assert stats["rx"]["bytes"] == report["rx_bytes"]
    assert "stats64" not in js(sim, "ip -j link show dev eth0")[0]
    text = ok(sim, "ip -s link show dev eth0").splitlines()
    assert text[2].split()[1] == "500"  # the text rendering reads the same facts


def test_bond_flags_and_master() -> None:
    sim = sim_of(
        """
        name: bond
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 2}
          eth1: {type: nic, driver: ice, queues: 2}
          bond0: {type: bond, mode: active-backup, slaves: [eth0, eth1], xdp: xdp_pass}
        """
    )
    rows = {r["ifname"]: r for r in js(sim, "ip -j link show")}
    assert "MASTER" in rows["bond0"]["flags"] and "SLAVE" in rows["eth0"]["flags"]
    assert rows["eth0"]["master"] == "bond0"
    assert list(rows["eth0"]).index("master") == list(rows["eth0"]).index("qdisc") + 1
    assert rows["bond0"]["xdp"]["mode"] == 1
    assert "xdp" not in rows["eth0"]  # pushed through the slave's ndo_bpf: not in its state
    assert len(js(sim, "bpftool -j prog show")) == 1


# ------------------------------------------------------------------ bpftool prog / net


def test_bpftool_prog_show_text_and_json() -> None:
    sim = sim_of(HOST)
    ok(sim, "ip link set dev eth0 xdp obj xdp_tx")
    progs = js(sim, "bpftool -j prog show")
    assert js(sim, "bpftool --pretty prog list") == progs == js(sim, "bpftool -p prog")
    egress = next(p for p in progs if p["name"] == "xdp_pass")  # the devmap entry's program
    xdp_tx = next(p for p in progs if p["name"] == "xdp_tx")
    assert egress["id"] < xdp_tx["id"]  # assigned on load, monotonically
    assert set(xdp_tx) == {
        "id",
        "type",
        "name",
        "tag",
        "gpl_compatible",
        "loaded_at",
        "uid",
        "orphaned",
        "bytes_xlated",
        "jited",
        "bytes_jited",
        "bytes_memlock",
    }
    assert xdp_tx["type"] == "xdp" and len(xdp_tx["tag"]) == 16
    int(xdp_tx["tag"], 16)
    text = ok(sim, "bpftool prog show").splitlines()
    i = text.index(f"{xdp_tx['id']}: xdp  name xdp_tx  tag {xdp_tx['tag']}  gpl")
    assert text[i + 1].startswith("\tloaded_at ") and text[i + 1].endswith("  uid 0")
    assert text[i + 2] == (
        f"\txlated {xdp_tx['bytes_xlated']}B  jited {xdp_tx['bytes_jited']}B  memlock 4096B"
    )
    assert js(sim_of(HOST), "bpftool -j prog show") == [
        {**p, "loaded_at": p["loaded_at"]} for p in progs if p["name"] != "xdp_tx"
    ]  # deterministic


def test_a_redirect_map_program_lists_its_map() -> None:
    sim = sim_of(HOST)
    ok(sim, "ip link set dev eth0 xdp obj redirect_map param map=tx_ports")
    (map_row,) = js(sim, "bpftool -j map show")
    prog = next(p for p in js(sim, "bpftool -j prog show") if p["name"] == "redirect_map")
    assert prog["map_ids"] == [map_row["id"]]
    assert f"map_ids {map_row['id']}" in ok(sim, "bpftool prog show")


def test_bpftool_net() -> None:
    sim = sim_of(HOST)
    ok(sim, "ip link set dev eth0 xdp obj xdp_tx")
    ok(sim, "ip link set dev lo0 xdp obj xdp_drop")
    ifindex = {r["ifname"]: r["ifindex"] for r in js(sim, "ip -j link show")}
    ids = {r["ifname"]: r["xdp"]["prog"]["id"] for r in js(sim, "ip -j link") if "xdp" in r}
    (net,) = js(sim, "bpftool -j net")
    assert list(net) == ["xdp", "tc", "flow_dissector", "netfilter"]
    assert net["xdp"] == [
        {"devname": "eth0", "ifindex": ifindex["eth0"], "mode": "driver", "id": ids["eth0"]},
        {"devname": "lo0", "ifindex": ifindex["lo0"], "mode": "generic", "id": ids["lo0"]},
    ]
    text = ok(sim, "bpftool net show")
    assert text == ok(sim, "bpftool net")
    assert text.splitlines()[:3] == [
        "xdp:",
        f"eth0({ifindex['eth0']}) driver id {ids['eth0']}",
        f"lo0({ifindex['lo0']}) generic id {ids['lo0']}",
    ]
    assert "\ntc:\n" in text and "\nflow_dissector:\n" in text


# ------------------------------------------------------------------ bpftool -j map


def test_bpftool_json_map_show_and_dump() -> None:
    sim = sim_of(HOST)
    (m,) = js(sim, "bpftool -j map show")
    assert m["type"] == "devmap" and m["name"] == "tx_ports" and m["max_entries"] == 4
    assert set(m) >= {"id", "flags", "bytes_key", "bytes_value", "bytes_memlock", "frozen"}
    dump = js(sim, "bpftool -j map dump name tx_ports")
    ifindex = {r["ifname"]: r["ifindex"] for r in js(sim, "ip -j link show")}
    egress = next(p for p in js(sim, "bpftool -j prog show") if p["name"] == "xdp_pass")
    assert dump[0] == {
        "key": ["0x00", "0x00", "0x00", "0x00"],
        "value": [f"0x{ifindex['eth1']:02x}", "0x00", "0x00", "0x00"] + ["0x00"] * 4,
    }
    assert dump[1]["value"][4] == f"0x{egress['id']:02x}"
    assert dump[2] == {
        "key": ["0x02", "0x00", "0x00", "0x00"],
        "value": {"error": "No such file or directory"},
    }
    assert len(dump) == 4


# ------------------------------------------------------------------ ethtool -S


def stats(sim: Simulator, dev: str) -> dict[str, int]:
    lines = ok(sim, f"ethtool -S {dev}").splitlines()
    assert lines[0] == "NIC statistics:"
    return {k.strip(): int(v) for k, v in (line.split(":") for line in lines[1:])}


def test_ethtool_names_are_the_drivers() -> None:
    sim = sim_of(HOST)
    sim.run_until(2_000_000)
    ice = stats(sim, "eth0")
    assert ice["rx_queue_0_packets"] + ice["rx_queue_1_packets"] == 500
    assert "xdp_drop" not in ice and "rx_queue_0_drops" not in ice
    assert {
        "rx0_packets",
        "rx_xdp_drop",
        "rx_xdp_redirect",
        "rx_xdp_tx_xmit",
        "tx_xdp_xmit",
    } <= set(stats(sim, "eth1"))
    assert {"rx-0.packets", "rx-1.packets"} <= set(stats(sim, "eth2"))
    assert {"rx_packets", "rx_queue_0_packets"} <= set(stats(sim, "eth3"))
    veth = stats(sim, "veth0")
    assert list(veth) == [
        "peer_ifindex",
        "rx_queue_0_xdp_packets",
        "rx_queue_0_xdp_bytes",
        "rx_queue_0_drops",
        "rx_queue_0_xdp_redirect",
        "rx_queue_0_xdp_drops",
        "rx_queue_0_xdp_tx",
        "rx_queue_0_xdp_tx_errors",
        "tx_queue_0_xdp_xmit",
        "tx_queue_0_xdp_xmit_errors",
    ]
    assert veth["peer_ifindex"] == sim.world.devices["veth1"].ifindex
    assert ok(sim, "ethtool -S lo0") == "no stats available"


def test_mlx5_xdp_counters_follow_the_verdicts() -> None:
    sim = sim_of(HOST.replace("to: eth0, rate: 1Mpps, count: 500", "to: eth1, rate: 1Mpps"))
    ok(sim, "ip link set dev eth1 xdp obj xdp_drop")
    sim.run_until(50_000_000)
    mlx5 = stats(sim, "eth1")
    assert mlx5["rx_xdp_drop"] == build_report(sim)["devices"]["eth1"]["counters"]["xdp_drop"]
    assert mlx5["rx_xdp_drop"] > 0


def test_crosswalk_names_what_ethtool_prints() -> None:
    from xdptui.widgets.crosswalk import crosswalk_source

    sim = sim_of(HOST)
    shown = set(stats(sim, "veth0")) | set(stats(sim, "eth1"))
    for dev_type, driver in (("veth", None), ("nic", "mlx5")):
        for counter in ("xdp_drop", "xdp_tx", "xdp_redirect", "xdp_tx_errors", "xdp_xmit"):
            source = crosswalk_source(dev_type, driver, counter)
            assert source.startswith("ethtool -S: ")
            name = source.removeprefix("ethtool -S: ").split()[0].rstrip(";").replace("_N_", "_0_")
            assert name in shown, (driver, counter, name)


# ------------------------------------------------------------------ parsing and completion


def test_json_options_parse_in_any_order() -> None:
    a = parse("ip -j -s link show dev eth0")
    assert a == parse("ip -s -j link show dev eth0") == parse("ip -json -s link show eth0")


def test_completion_knows_the_new_words() -> None:
    ctx = CompletionContext(devices=("eth0",))
    assert "help" in complete("", ctx).candidates
    assert complete("help ", ctx).candidates == TOOLS
    assert "-j" in complete("ip ", ctx).candidates
    assert set(complete("bpftool ", ctx).candidates) == {"map", "prog", "net", "-j"}
    assert complete("bpftool -j pr", ctx).candidates == ("prog",)
    assert complete("bpftool net ", ctx).candidates == ("show", "list")
