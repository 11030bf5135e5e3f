"""AF_XDP's TX side in copy mode (``net/xdp/xsk.c``: ``xsk_sendmsg`` -> ``__xsk_generic_xmit``):
a source ``from:`` a socket is its writer, which puts ``batch`` descriptors on the TX ring and
kicks the kernel with one ``sendto``; the kernel sends at most 32 a call (``TX_BATCH_SIZE``),
each after reserving a completion-ring slot, out of the socket's veth to the peer."""

from __future__ import annotations

import json

import pytest
from conftest import topo

from xdptui.sim.engine import Simulator
from xdptui.topology_io import TopologyError

BASE = """
name: xsk tx
cpus: 2
devices:
  vs: {{type: veth, peer: vi}}
  vi: {{type: veth, peer: vs, xdp: xdp_drop}}
  xsk0: {{type: xsk, dev: vs, queue: 0, frames: {frames}, fill: {fill}, tx: {tx},
         comp: {comp}, batch: {batch}}}
traffic:
  - {{name: app, from: xsk0, rate: {rate}, size: 64, flows: 8{count}}}
"""

KERNEL_BUDGET = 32  # TX_BATCH_SIZE in net/xdp/xsk.c


def text(
    batch: int = 1,
    tx: int = 2048,
    comp: int = 2048,
    rate: str = "1Mpps",
    frames: int = 4096,
    fill: int = 2048,
    count: int | None = None,
) -> str:
    c = f", count: {count}" if count is not None else ""
    return BASE.format(
        batch=batch, tx=tx, comp=comp, rate=rate, frames=frames, fill=fill, count=c
    )  # fmt: skip


def run(src: str, exact: bool, ns: int) -> dict:
    sim = Simulator(topo(src), exact=exact)
    sim.run_until(ns)
    return sim.report()


def writer_loop(kicks: int, batch: int, tx: int, comp: int, chunks: int) -> dict[str, int]:
    """The writer and the kernel, kick by kick, as xdpsock's loop and ``__xsk_generic_xmit``
    do it: reap the completion ring, write what fits, one sendto."""
    ring = done = sent = not_written = eagain = completions = 0
    for _ in range(kicks):
        done += completions  # the writer reaps every completion before it writes
        completions = 0
        own = chunks - ring  # chunks neither in the TX ring nor in the completion ring
        w = min(batch, tx - ring, own)
        not_written += batch - w
        ring += w
        budget = KERNEL_BUDGET
        while ring:
            if budget == 0 or completions == comp:  # out of budget, or no CQ slot: EAGAIN
                eagain += 1
                break
            budget -= 1
            ring -= 1
            sent += 1
            completions += 1  # veth_xmit frees the skb before sendto returns
    return {"sent": sent, "ring": ring, "comp": completions, "eagain": eagain,
            "not_written": not_written}  # fmt: skip


MODES = pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])


@MODES
@pytest.mark.parametrize(
    ("batch", "tx", "comp"),
    [(1, 2048, 2048), (16, 2048, 2048), (64, 256, 2048), (32, 2048, 16), (200, 512, 64)],
    ids=["one-a-kick", "batch16", "batch64-budget", "comp16", "batch200"],
)
def test_each_sendto_sends_what_the_budget_and_the_completion_ring_allow(
    exact: bool, batch: int, tx: int, comp: int
):
    """1 Mpps offered, 2 ms: a kick every ``batch`` µs. Each sends min(what is on the TX
    ring, 32, free completion slots); what stays behind waits for the next kick, and once
    the TX ring is full the writer cannot write its batch."""
    r = run(text(batch=batch, tx=tx, comp=comp), exact, 2_000_000)
    kicks = -(-2000 // batch)  # the first at 1 ns, then one every batch µs
    want = writer_loop(kicks, batch, tx, comp, 4096 - 2048)
    x = r["xsks"]["xsk0"]
    assert x["counters"]["tx_packets"] == want["sent"]
    assert x["rings"]["tx"]["entries"] == want["ring"]
    assert x["rings"]["comp"]["entries"] == want["comp"]
    assert x["writer"]["sendto"] == kicks
    assert x["writer"]["eagain"] == want["eagain"]
    assert x["writer"]["not_written"] == want["not_written"]
    # every frame sent went out of vs into vi, whose program dropped it
    assert r["devices"]["vs"]["counters"]["tx_packets"] == want["sent"]
    assert r["devices"]["vi"]["counters"]["rx_packets"] == want["sent"]
    assert r["devices"]["vi"]["counters"]["xdp_drop"] == want["sent"]
    umem = x["umem"]
    assert umem["tx"] == want["ring"] and umem["comp"] == want["comp"]
    assert sum(umem.values()) == 4096


@MODES
def test_the_writer_is_limited_by_its_chunks(exact: bool):
    """A UMEM of 2,100 chunks, 2,048 on the fill ring: the writer owns 52 -- the TX ring
    never holds more, however big the batch."""
    r = run(text(batch=100, tx=2048, frames=2100), exact, 1_000_000)
    want = writer_loop(10, 100, 2048, 2048, 52)
    x = r["xsks"]["xsk0"]
    assert x["counters"]["tx_packets"] == want["sent"]
    assert x["rings"]["tx"]["entries"] == want["ring"] <= 52


@MODES
def test_a_count_stops_the_writer(exact: bool):
    r = run(text(batch=16, count=100), exact, 1_000_000)
    assert r["xsks"]["xsk0"]["counters"]["tx_packets"] == 100
    assert r["devices"]["vi"]["counters"]["xdp_drop"] == 100


def test_both_modes_agree_and_time_splits_do_not_matter():
    from xdptui.modes_check import compare

    src = text(batch=64, tx=512, comp=64)
    c = compare(topo(src), [m * 1_000_000 for m in range(1, 6)])
    assert c.compared > 100
    assert c.differing == (), c.differing[:5]
    whole = run(src, False, 5_000_000)
    sim = Simulator(topo(src), exact=False)
    for t in range(300_000, 5_000_000, 300_000):
        sim.run_until(t)
    sim.run_until(5_000_000)
    assert json.dumps(sim.report(), sort_keys=True) == json.dumps(whole, sort_keys=True)


def bad(src: str) -> str:
    with pytest.raises(TopologyError) as err:
        topo(src, "bad.yaml")
    return str(err.value)


def test_a_writer_needs_a_socket_on_a_veth_and_one_per_socket():
    nic = (
        text()
        .replace(
            "vs: {type: veth, peer: vi}\n  vi: {type: veth, peer: vs, xdp: xdp_drop}",
            "eth0: {type: nic, driver: ice, queues: 2}",
        )
        .replace("dev: vs", "dev: eth0")
    )
    msg = bad(nic)
    assert "bad.yaml:" in msg and "traffic[0].from" in msg and "nic/ice" in msg
    assert "modelled on a veth only" in msg
    two = text() + "  - {name: b, from: xsk0, rate: 1Mpps}\n"
    msg = bad(two)
    assert "traffic[1].from" in msg and "already has a writer (source app)" in msg
    assert "unknown device 'xsk9'" in bad(text().replace("from: xsk0", "from: xsk9"))
    assert "batch" in bad(text(batch=0))


def test_the_writer_command_changes_batch_and_pace_from_the_state_it_left():
    """``writer xsk0 batch 16`` after 1 ms of batch 64: the 224 descriptors left behind drain
    16 a call (32 sent, 16 written), then every call empties the ring; both modes agree."""
    reports = []
    for exact in (True, False):
        sim = Simulator(topo(text(batch=64, tx=256)), exact=exact)
        sim.run_until(1_000_000)
        before = sim.report()["xsks"]["xsk0"]
        res = sim.submit("writer xsk0 batch 16 rate 2Mpps")
        assert res.ok and "16 descriptors a sendto" in res.reply
        sim.run_until(2_000_000)
        after = sim.report()["xsks"]["xsk0"]
        kicks = after["writer"]["sendto"] - before["writer"]["sendto"]
        assert kicks == 1_000_000 // 8_000  # a kick every 8 us from 1 ms + 1 ns
        backlog = before["rings"]["tx"]["entries"]
        assert backlog == 224
        sent = after["counters"]["tx_packets"] - before["counters"]["tx_packets"]
        assert sent == backlog + 16 * kicks
        assert after["writer"]["eagain"] - before["writer"]["eagain"] == 224 // 16 - 1
        assert after["rings"]["tx"]["entries"] == 0
        assert sim.submit("writer xsk0 stop").ok
        sim.run_until(3_000_000)
        assert (
            sim.report()["xsks"]["xsk0"]["counters"]["tx_packets"]
            == (after["counters"]["tx_packets"])
        )
        r = sim.report()
        counters = {d: r["devices"][d]["counters"] for d in ("vs", "vi")}
        reports.append(json.dumps([r["xsks"], counters], sort_keys=True))
    assert reports[0] == reports[1]


def test_the_writer_command_answers_like_a_tool():
    sim = Simulator(topo(text()), exact=False)
    assert "no AF_XDP socket xsk9" in sim.submit("writer xsk9 batch 4").reply
    assert 'batch "0" is not valid; valid: 1..4096' in sim.submit("writer xsk0 batch 0").reply
    assert "give a rate in pps" in sim.submit("writer xsk0 rate 1Gbps").reply
    reply = sim.submit("pktgen vs rate 1Mpps").reply
    assert "app is xsk0's writer: use writer xsk0" in reply
    plain = Simulator(topo(text().replace("from: xsk0", "from: vs")), exact=False)
    assert "xsk0 has no writer" in plain.submit("writer xsk0 batch 4").reply


def test_the_run_summary_has_the_writers_line_with_the_reports_counts():
    from xdptui.report import summary

    sim = Simulator(topo(text(batch=64, tx=256)), exact=False)
    sim.run_until(1_000_000)
    x = sim.report()["xsks"]["xsk0"]
    lines = summary(sim.frame()).splitlines()
    (line,) = [ln for ln in lines if "writer 64/sendto" in ln]
    assert f"tx {x['counters']['tx_packets']} " in line
    assert f"sendto {x['writer']['sendto']}  EAGAIN {x['writer']['eagain']}" in line
    assert f"not written {x['writer']['not_written']}" in line and "tx ring 224/256" in line
