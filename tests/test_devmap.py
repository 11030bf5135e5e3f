"""Devmaps (kernel/bpf/devmap.c, seed devmap-prog-on-flush.txt): map rules, the per-CPU bulk
queue flushed at poll end, egress programs run on the bulk, broadcast, redirect errors."""

from __future__ import annotations

import pytest
from conftest import counters, sim_of

from xdptui.sim.devmap import DevMap, DevmapEntry
from xdptui.sim.engine import Simulator
from xdptui.sim.kconst import BPF_EXIST

MAP = """
name: devmap
cpus: 2
devices:
  eth0: {{type: nic, driver: ice, queues: 1, xdp: {{program: {prog}, params: {{{params}}}}}}}
  eth1: {{type: nic, driver: ice, queues: 1, xdp: xdp_pass}}
  eth2: {{type: nic, driver: ice, queues: 1{eth2}}}
maps:
  tx_ports:
    type: {mtype}
    max_entries: 4
    entries: {{{entries}}}
traffic:
  - {{name: g, to: eth0, rate: {rate}, count: {count}, flows: 2, src_port: 1000-1001{extra}}}
"""


def devmap(
    entries: str = "0: eth1",
    prog: str = "redirect_map",
    params: str = "map: tx_ports",
    rate: str = "1Mpps",
    count: int = 1000,
    eth2: str = ", xdp: xdp_pass",
    mtype: str = "devmap",
    extra: str = "",
    **kw: object,
):  # type: ignore[no-untyped-def]
    return sim_of(
        MAP.format(
            entries=entries,
            prog=prog,
            params=params,
            rate=rate,
            count=count,
            eth2=eth2,
            mtype=mtype,
            extra=extra,
        ),
        **kw,
    )


def xmit(sim):  # type: ignore[no-untyped-def]
    return {(m.from_dev, m.to_dev): m for m in sim.frame().tracepoints.xdp_devmap_xmit}


def exc(sim) -> dict[tuple[str, str], int]:  # type: ignore[no-untyped-def]
    return {(x.dev, x.action): x.count for x in sim.frame().tracepoints.xdp_exception}


def errs(sim) -> dict[tuple[str, str], int]:  # type: ignore[no-untyped-def]
    return {(r.dev, r.err): r.count for r in sim.frame().tracepoints.xdp_redirect_err}


def test_redirect_map_sends_through_the_entry_device():
    sim = devmap()
    sim.run_until(5_000_000)
    m = xmit(sim)[("eth0", "eth1")]
    assert (m.sent, m.drops, m.err) == (1000, 0, 0)
    assert counters(sim, "eth1")["tx_packets"] == 1000


def test_bulk_of_16_and_flush_at_poll_end():
    # 10 Kpps: frames 100 us apart, more than rx-usecs (50 us): each interrupt, each poll
    # and so each flush carries one frame
    light = devmap(rate="10Kpps", count=200)
    light.run_until(21_000_000)
    assert xmit(light)[("eth0", "eth1")].flushes == 200
    heavy = devmap(rate="100Mpps", count=10**9)
    heavy.run_until(2_000_000)
    m = xmit(heavy)[("eth0", "eth1")]
    assert 15.5 <= (m.sent + m.drops) / m.flushes <= 16.0  # polls of 64 = 4 bulks of 16


def test_missing_key_returns_the_fallback_verdict_without_a_redirect_tracepoint():
    sim = devmap(entries="3: eth1")
    sim.run_until(5_000_000)
    assert counters(sim, "eth0")["xdp_aborted"] == 1000
    assert exc(sim) == {("eth0", "XDP_ABORTED"): 1000}
    assert errs(sim) == {} and sim.frame().tracepoints.xdp_redirect == 0
    passing = devmap(entries="3: eth1", params="map: tx_ports, flags: 2")
    passing.run_until(5_000_000)
    assert counters(passing, "eth0")["xdp_pass"] == 1000


def test_redirect_errors_follow_the_enqueue_checks():
    no_prog = devmap(entries="0: eth2", eth2="")
    no_prog.run_until(5_000_000)
    assert errs(no_prog) == {("eth0", "EOPNOTSUPP"): 1000}
    down = devmap(entries="0: eth2", eth2=", xdp: xdp_pass, up: false")
    down.run_until(5_000_000)
    assert errs(down) == {("eth0", "ENETDOWN"): 1000}
    assert exc(down) == {("eth0", "XDP_REDIRECT"): 1000}
    mtu = devmap(entries="0: eth2", eth2=", xdp: xdp_pass, mtu: 1000", extra=", size: 1500")
    mtu.run_until(5_000_000)
    assert errs(mtu) == {("eth0", "EMSGSIZE"): 1000}


def test_egress_program_verdicts_are_counted_where_the_kernel_counts_them():
    drop = devmap(entries="0: {dev: eth1, egress: xdp_drop}")
    drop.run_until(5_000_000)
    m = xmit(drop)[("eth0", "eth1")]
    assert (m.sent, m.drops) == (0, 1000)  # drops include the egress program's
    assert counters(drop, "eth1")["tx_packets"] == 0
    aborted = devmap(entries="0: {dev: eth1, egress: xdp_aborted}")
    aborted.run_until(5_000_000)
    assert exc(aborted) == {("eth1", "XDP_ABORTED"): 1000}  # on the tx device
    assert xmit(aborted)[("eth0", "eth1")].drops == 1000


def test_first_enqueuers_program_runs_on_the_whole_bulk():
    # Two flows alternate; key 0 (pass) and key 1 (drop) both point at eth1. Every bulk runs
    # the program of the poll's first enqueuer: a bulk is sent whole or dropped whole, though
    # it holds frames of both keys (exact mode shows each flush).
    entries = "0: {dev: eth1, egress: xdp_pass}, 1: {dev: eth1, egress: xdp_drop}"
    heavy = devmap(
        entries=entries, prog="weird.py:key_by_port_parity", params="", rate="100Mpps", count=10**9
    )
    heavy.exact = True
    heavy.run_until(1_000_000)
    flushes = [e for e in heavy.events() if e["kind"] == "bq_flush"]
    assert len(flushes) > 100 and any(f["frames"] == 16 for f in flushes)
    assert all(f["sent"] in (0, f["frames"]) for f in flushes)
    assert {f["egress"] for f in flushes} == {"xdp_pass", "xdp_drop"}
    # At light load (frames further apart than rx-usecs) every frame is its own bulk: flow
    # 1's frames meet xdp_drop.
    light = devmap(
        entries=entries, prog="weird.py:key_by_port_parity", params="", rate="10Kpps", count=200
    )
    light.run_until(21_000_000)
    m = xmit(light)[("eth0", "eth1")]
    assert (m.sent, m.drops) == (100, 100)
    # Before the patch each frame met its own entry's program at enqueue, saturated or not.
    before = devmap(
        entries=entries,
        prog="weird.py:key_by_port_parity",
        params="",
        rate="100Mpps",
        count=10**9,
        devmap_egress="enqueue",
    )
    before.run_until(2_000_000)
    c1 = counters(before, "eth1")
    assert abs(c1["xdp_xmit"] - counters(before, "eth0")["xdp_redirect"] / 2) <= 64


def test_broadcast_skips_invalid_entries_and_excludes_the_ingress_and_its_bond():
    sim = sim_of("""
        name: broadcast
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: {program: redirect_map_multi,
                 params: {map: ports}}}
          eth1: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
          eth2: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
          eth3: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: active-backup, slaves: [eth0, eth2]}
        maps:
          ports:
            type: devmap_hash
            max_entries: 8
            entries: {2: eth0, 3: eth1, 4: eth2, 5: eth3, 6: bond0}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps, count: 400}
    """)
    sim.run_until(5_000_000)
    sent = {b: m.sent for (a, b), m in xmit(sim).items()}
    # eth0 is the ingress, bond0 its upper device; eth3 has no program (no NDO_XMIT): skipped
    assert sent == {"eth1": 400, "eth2": 400}
    assert errs(sim) == {} and sim.frame().tracepoints.xdp_redirect == 400


def test_live_map_update_and_delete_under_traffic():
    sim = devmap(count=10**9)
    sim.run_until(1_000_000)
    assert sim.submit("bpftool map update name tx_ports key 0 value eth2").ok
    sim.run_until(2_000_000)
    assert xmit(sim)[("eth0", "eth2")].sent > 0
    assert sim.submit("bpftool map delete name tx_ports key 0").ok
    before = counters(sim, "eth0")["xdp_aborted"]
    sim.run_until(3_000_000)
    assert counters(sim, "eth0")["xdp_aborted"] - before == 1000  # 1 Mpps for 1 ms


def test_map_command_errors():
    sim = devmap(mtype="devmap")
    res = sim.submit("bpftool map update name tx_ports key 9 value eth1")
    assert (res.errno, res.reply) == ("E2BIG", "Error: update failed: Argument list too long")
    res = sim.submit("bpftool map update name tx_ports key 1 value eth1 noexist")
    assert res.errno == "EEXIST"
    res = sim.submit("bpftool map update name tx_ports key 1 value eth1 egress redirect")
    assert res.errno == "EINVAL" and "BPF_XDP_DEVMAP" in res.reply
    res = sim.submit("bpftool map update name tx_prots key 1 value eth1")
    assert res.errno == "ENOENT" and "did you mean 'tx_ports'" in res.reply
    hashed = devmap(mtype="devmap_hash")
    res = hashed.submit("bpftool map delete name tx_ports key 7")
    assert (res.errno, res.reply) == ("ENOENT", "Error: delete failed: No such file or directory")
    for key in (1, 2, 3):
        assert hashed.submit(f"bpftool map update name tx_ports key {key} value eth1").ok
    res = hashed.submit("bpftool map update name tx_ports key 9 value eth1")
    assert res.errno == "E2BIG"  # max_entries 4 items


def test_bpftool_map_show_and_dump():
    sim = devmap(entries="0: eth1, 2: {dev: eth2, egress: xdp_drop}")
    show = sim.submit("bpftool map show").reply
    assert "devmap  name tx_ports" in show and "max_entries 4" in show
    dump = sim.submit("bpftool map dump name tx_ports").reply.splitlines()
    assert dump[0].startswith("key: 00 00 00 00  value: 03 00 00 00 00 00 00 00")
    assert dump[1].startswith("key: 02 00 00 00  value: 04 00 00 00")
    assert dump[-1] == "Found 2 elements"


def test_report_lists_map_entries():
    from xdptui.report import build_report

    sim = devmap(entries="0: eth1, 1: {dev: eth2, egress: xdp_pass}")
    maps = build_report(sim)["maps"]
    assert maps["tx_ports"]["entries"] == {
        "0": {"dev": "eth1", "egress": None},
        "1": {"dev": "eth2", "egress": "xdp_pass"},
    }


# ------------------------------------------------------------ generic broadcast, updates, walk


def _generic_broadcast(first: str, second: str) -> Simulator:
    return sim_of(f"""
        name: generic broadcast
        cpus: 2
        devices:
          eth0: {{type: nic, driver: ice, queues: 1, xdp: {{program: redirect_map_multi,
                 mode: generic, params: {{map: ports}}}}}}
          eth1: {{type: nic, driver: ice, queues: 1}}
          eth2: {{type: nic, driver: ice, queues: 1, mtu: 1000}}
        maps:
          ports: {{type: devmap, max_entries: 4, entries: {{1: {first}, 2: {second}}}}}
        traffic:
          - {{name: small, to: eth0, rate: 1Mpps, count: 300, size: 64}}
          - {{name: big, to: eth0, rate: 1Mpps, count: 200, size: 1500}}
    """)


@pytest.mark.parametrize(
    ("first", "second", "eth1_gets", "eth2_gets"),
    [
        # eth2 (mtu 1000: xdp_ok_fwd_dev takes up to 1018 bytes) first: the 1500-byte skbs
        # stop there with EMSGSIZE and never reach eth1
        ("eth2", "eth1", 300, 300),
        # eth1 first: every skb reaches it, then the big ones stop at eth2
        ("eth1", "eth2", 500, 300),
    ],
)
def test_generic_broadcast_checks_each_skb_against_each_target(
    first: str, second: str, eth1_gets: int, eth2_gets: int
) -> None:
    sim = _generic_broadcast(first, second)
    sim.run_until(5_000_000)
    assert counters(sim, "eth1")["tx_packets"] == eth1_gets
    assert counters(sim, "eth2")["tx_packets"] == eth2_gets
    assert errs(sim) == {("eth0", "EMSGSIZE"): 200}  # one per refused skb


def test_devmap_hash_update_with_bpf_exist_inserts_an_absent_key() -> None:
    m = DevMap("h", "devmap_hash", 4, 1)
    m.update(3, DevmapEntry("eth1"), BPF_EXIST)  # __dev_map_hash_update_elem: no ENOENT
    assert m.lookup(3) == DevmapEntry("eth1")


def test_devmap_hash_walks_a_bucket_newest_first() -> None:
    m = DevMap("h", "devmap_hash", 4, 1)  # 4 buckets: key & 3
    for key in (1, 5, 9, 0):
        m.update(key, DevmapEntry(f"d{key}"))
    assert [k for k, _ in m.walk()] == [0, 9, 5, 1]  # hlist_add_head_rcu
    m.update(1, DevmapEntry("again"))  # the old node is unlinked, the new one goes first
    assert [k for k, _ in m.walk()] == [0, 1, 9, 5]


def test_devmap_update_checks_key_range_and_flags_before_the_egress_program() -> None:
    sim = devmap(mtype="devmap")
    res = sim.submit("bpftool map update name tx_ports key 9 value eth1 egress redirect")
    assert res.errno == "E2BIG"  # __dev_map_update_elem before __dev_map_alloc_node
    res = sim.submit("bpftool map update name tx_ports key 1 value eth1 egress redirect noexist")
    assert res.errno == "EEXIST"
    res = sim.submit("bpftool map update name tx_ports key 1 value eth1 egress redirect")
    assert res.errno == "EINVAL"
