"""The machine's kernel as the oracle for device counters: each scenario is built for real in a
throwaway network namespace (veth pairs, taps written through /dev/net/tun, the programs of
progs.c) and the same scenario is run in xdptui; the counts must be equal (never rates).

Compared per device: ``ip -s link`` packets, bytes and drops (``rx_*``/``tx_*``) and every
``ethtool -S`` counter but ``peer_ifindex``. Skips with the reason where the
machine cannot build the scenarios (not root, no clang/bpftool/ethtool, no veth or tun).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import sim_of
from kernel_oracle_net import kernel, why_not

from xdptui.sim.engine import Simulator
from xdptui.sim.show import ethtool_stats

WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
LINK = ("rx_packets", "rx_bytes", "rx_dropped", "tx_packets", "tx_bytes", "tx_dropped")


def seen(counts: dict[str, Any]) -> dict[str, int]:
    """The compared counters of one device, zeros left out."""
    out = {k: v for k, v in counts.items() if k in LINK or k.startswith("ethtool:")}
    return {k: v for k, v in out.items() if v and k != "ethtool:peer_ifindex"}


def packets(counts: dict[str, Any]) -> dict[str, int]:
    """``seen`` without the byte counts (what a test names by hand)."""
    return {k: v for k, v in seen(counts).items() if "bytes" not in k}


def sim_counts(sim: Simulator, dev: str) -> dict[str, int]:
    d = sim.world.devices[dev]
    out = {k: d.counters[k] for k in LINK}
    for name, value in ethtool_stats(sim.world, d) or ():
        out[f"ethtool:{name}"] = value
    return seen(out)


def run(text: str, *commands: str) -> Simulator:
    sim = sim_of(text)
    for cmd in commands:
        res = sim.submit(cmd)
        assert res.ok, (cmd, res.reply)
    sim.run_until(5_000_000)
    return sim


def same(name: str, sim: Simulator, devs: tuple[str, ...]) -> None:
    k = kernel(name)
    assert {d: sim_counts(sim, d) for d in devs} == {d: seen(k[d]) for d in devs}


VETH_TX = """
name: veth-tx
cpus: 1
devices:
  va: {{type: veth, peer: vb, xdp: xdp_tx}}
  vb: {{type: veth, peer: va{peer}}}
traffic:
  - {{name: app, from: vb, rate: 100Kpps, count: 100}}
"""


def test_veth_xdp_tx_without_a_peer_program_is_refused_at_the_bulk_flush():
    same("veth_tx_no_peer_prog", run(VETH_TX.format(peer="")), ("va", "vb"))


def test_veth_xdp_tx_with_a_peer_program_reaches_the_peer():
    same("veth_tx_peer_pass", run(VETH_TX.format(peer=", xdp: xdp_pass")), ("va", "vb"))


REDIRECT = """
name: redirect-veth
cpus: 1
devices:
  vi: {{type: veth, peer: vs}}
  vs: {{type: veth, peer: vi, xdp: {{program: redirect_map, params: {{map: dm}}}}}}
  va: {{type: veth, peer: vb}}
  vb: {{type: veth, peer: va{peer}}}
maps:
  dm: {{type: devmap, max_entries: 8, entries: {{0: {entry}}}}}
traffic:
  - {{name: app, from: vi, rate: 100Kpps, count: 100}}
"""


@pytest.mark.parametrize(
    ("name", "peer", "commands"),
    [
        ("redirect_veth_peer_prog", ", xdp: xdp_drop", ()),
        ("redirect_veth_no_peer_prog", "", ()),
        ("redirect_veth_peer_down", ", xdp: xdp_drop", ("ip link set dev vb down",)),
        ("redirect_veth_target_down", ", xdp: xdp_drop", ("ip link set dev va down",)),
    ],
)
def test_redirect_into_a_veth_through_a_devmap(name: str, peer: str, commands: tuple[str, ...]):
    sim = run(REDIRECT.format(peer=peer, entry="va"), *commands)
    same(name, sim, ("vs", "va", "vb"))


GENERIC_REDIRECT = REDIRECT.replace("redirect_map, params", "redirect_map, mode: generic, params")


@pytest.mark.parametrize(
    ("name", "peer", "commands"),
    [
        ("redirect_generic_veth_peer_prog", ", xdp: xdp_pass", ()),
        ("redirect_generic_veth_no_peer_prog", "", ()),
        ("redirect_generic_veth_peer_down", "", ("ip link set dev vb down",)),
        ("redirect_generic_veth_target_down", ", xdp: xdp_drop", ("ip link set dev va down",)),
    ],
)
def test_generic_xdp_redirect_into_a_veth(name: str, peer: str, commands: tuple[str, ...]):
    """generic_xdp_tx -> veth_xmit, whatever va's carrier: into vb's ring (a native program),
    its backlog, or, vb down, dropped by ``__dev_forward_skb2`` (va's ``tx_dropped`` and vb's
    ``rx_dropped``)."""
    sim = run(GENERIC_REDIRECT.format(peer=peer, entry="va"), *commands)
    same(name, sim, ("vs", "va", "vb"))


def test_the_stack_sending_into_a_veth_whose_peer_is_down():
    """va's carrier is off: ``__dev_queue_xmit`` drops each skb (va's ``tx_dropped``) before
    ``veth_xmit``; vb counts nothing."""
    text = VETH_TX.format(peer="").replace(", xdp: xdp_tx", "").replace("from: vb", "from: va")
    sim = run(text, "ip link set dev vb down")
    same("stack_veth_peer_down", sim, ("va", "vb"))


def test_the_stack_sending_into_a_tap_no_process_holds():
    """No queue attached, no carrier: dropped as out of a veth whose peer is down."""
    text = """
name: tap-no-reader
cpus: 1
devices:
  tap0: {type: tun, mode: tap, queues: 1}
traffic:
  - {name: app, from: tap0, rate: 100Kpps, count: 100}
"""
    same("stack_tap_no_reader", run(text), ("tap0",))


@pytest.mark.parametrize(
    ("name", "egress"),
    [("egress_drop", "xdp_drop"), ("egress_pass", "xdp_pass"), ("egress_abort", "xdp_aborted")],
)
def test_devmap_egress_program_verdicts(name: str, egress: str):
    text = REDIRECT.format(peer=", xdp: xdp_pass", entry=f"{{dev: va, egress: {egress}}}")
    same(name, run(text), ("vs", "va", "vb"))


def test_broadcast_with_exclude_ingress():
    text = """
        name: broadcast
        cpus: 1
        devices:
          vi: {type: veth, peer: vs}
          vs: {type: veth, peer: vi, xdp: {program: redirect_map_multi, params: {map: dm}}}
          va: {type: veth, peer: vb}
          vb: {type: veth, peer: va, xdp: xdp_pass}
          vc: {type: veth, peer: vd}
          vd: {type: veth, peer: vc, xdp: xdp_pass}
        maps:
          dm: {type: devmap, max_entries: 8, entries: {0: vs, 1: va, 2: vc}}
        traffic:
          - {name: app, from: vi, rate: 100Kpps, count: 100}
    """
    same("broadcast_exclude_ingress", run(text), ("vs", "va", "vb", "vc", "vd"))


MAPS = """
name: maps
cpus: 1
devices:
  va: {type: veth, peer: vb}
maps:
  dm: {type: devmap, max_entries: 8}
  dmh: {type: devmap_hash, max_entries: 8}
"""


def test_devmap_update_errors():
    k = kernel("update_errors")
    sim = sim_of(MAPS)

    def upd(args: str) -> str:
        res = sim.submit(f"bpftool map update name {args}")
        return "" if res.ok else str(res.errno)

    ours = {
        "dm key out of range": upd("dm key 8 value va"),
        "dm BPF_NOEXIST": upd("dm key 8 value va noexist"),
        "dm ok": upd("dm key 0 value va"),
        "dm BPF_NOEXIST on a used slot": upd("dm key 0 value va noexist"),
        "dm egress is not a devmap program": upd("dm key 2 value va egress redirect"),
        "dmh ok": upd("dmh key 100 value va"),
        "dmh BPF_NOEXIST on a used key": upd("dmh key 100 value va noexist"),
    }
    assert ours == {name: k[name] for name in ours}


def test_devmap_update_check_order():
    k = kernel("update_errors")
    sim = sim_of(MAPS)

    def upd(args: str) -> str:
        res = sim.submit(f"bpftool map update name {args}")
        return "" if res.ok else str(res.errno)

    upd("dm key 0 value va")
    ours = {
        "dm key out of range with a bad egress": upd("dm key 9 value va egress redirect"),
        "dmh BPF_EXIST on a new key": upd("dmh key 101 value va exist"),
    }
    assert ours == {name: k[name] for name in ours}


GENERIC_VETH = """
name: generic-veth
cpus: 1
devices:
  va: {type: veth, peer: vb}
  vb: {type: veth, peer: va}
traffic:
  - {name: app, from: vb, rate: 100Kpps, count: 100}
"""


@pytest.mark.parametrize(
    ("name", "prog"), [("generic_veth_drop", "xdp_drop"), ("generic_veth_tx", "xdp_tx")]
)
def test_generic_xdp_on_a_veth(name: str, prog: str):
    sim = run(GENERIC_VETH, f"ip link set dev va xdpgeneric obj {prog}")
    same(name, sim, ("va", "vb"))


@pytest.mark.parametrize(
    ("name", "prog"),
    [("native_veth_drop", "xdp_drop"), ("native_veth_abort", "xdp_aborted"),
     ("native_veth_pass", "xdp_pass")],
)  # fmt: skip
def test_native_xdp_on_a_veth_the_stack_sends_into(name: str, prog: str):
    """The skbs ``veth_xmit`` puts into va's ring, each through its program
    (``veth_xdp_rcv_skb``)."""
    sim = run(GENERIC_VETH, f"ip link set dev va xdpdrv obj {prog}")
    same(name, sim, ("va", "vb"))


TAP = """
name: tap
cpus: 1
devices:
  tap0: {{type: tun, mode: tap, queues: 1, reader: 1pps, vnet_hdr: {vnet}{opts}{xdp}}}
  va: {{type: veth, peer: vb}}
  vb: {{type: veth, peer: va}}
maps:
  dm: {{type: devmap, max_entries: 8, entries: {{0: va}}}}
traffic:
  - {{name: vm, to: tap0, rate: 100Kpps, count: 100, size: {size}}}
"""


@pytest.mark.parametrize(
    ("name", "prog", "size", "opts"),
    [
        ("tap_fast_drop", "xdp_drop", 64, ""),
        ("tap_fast_drop_at_limit", "xdp_drop", 3456, ""),
        ("tap_slow_drop_above_limit", "xdp_drop", 3457, ""),
        ("tap_vnet_fast_drop_at_limit", "xdp_drop", 3456, "vnet"),
        ("tap_vnet_slow_drop_above_limit", "xdp_drop", 3457, "vnet"),
        ("tap_slow_drop_blocking", "xdp_drop", 64, ", blocking: true"),
        ("tap_fast_pass", "xdp_pass", 64, ""),
        ("tap_fast_tx", "xdp_tx", 64, ""),
        ("tap_fast_abort", "xdp_aborted", 64, ""),
        ("tap_fast_redirect_err", "{program: redirect_map, params: {map: dm}}", 64, ""),
        ("tap_generic_drop", "generic", 64, ""),
    ],
)
def test_tap_xdp_on_writes_through_dev_net_tun(name: str, prog: str, size: int, opts: str):
    vnet = "true" if opts == "vnet" else "false"
    opts = "" if opts == "vnet" else opts
    if prog == "generic":
        sim = run(
            TAP.format(vnet=vnet, opts=opts, xdp="", size=size),
            "ip link set dev tap0 xdpgeneric obj xdp_drop",
        )
    else:
        sim = run(TAP.format(vnet=vnet, opts=opts, xdp=f", xdp: {prog}", size=size))
    same(name, sim, ("tap0",))
