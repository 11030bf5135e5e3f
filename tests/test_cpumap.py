"""cpumap (``kernel/bpf/cpumap.c``): map updates with the kernel's errnos, the sender's bulk
queue of 8, the target's ptr_ring and the kthread's batches of 8, in both modes."""

from __future__ import annotations

import math

import pytest
from conftest import topo

from xdptui.sim.cpumap import CPU_MAP_BULK_SIZE, CPUMAP_BATCH, QSIZE_MAX, CpuMapEntry
from xdptui.sim.engine import Simulator
from xdptui.topology_io import TopologyError

BASE = """
name: cpumap test
cpus: 4
devices:
  eth0: {{type: nic, driver: i40e, queues: 1, irq_cpus: [0],
         xdp: {{program: redirect_cpu, params: {{map: cpus, cpu: {cpu}}}}}}}
maps:
  cpus: {{type: cpumap, max_entries: 4, entries: {{2: {{qsize: {qsize}{prog}}}}}}}
traffic:
  - {{name: t, to: eth0, rate: {rate}, size: 64, proto: udp, flows: 64, src_port: 1000-1063,
     count: {count}}}
"""


def cpumap_sim(exact: bool, cpu: int = 2, qsize: int = 2048, prog: str = "", rate: str = "1Mpps",
           count: int = 1000) -> Simulator:  # fmt: skip
    p = f", prog: {prog}" if prog else ""
    text = BASE.format(cpu=cpu, qsize=qsize, prog=p, rate=rate, count=count)
    return Simulator(topo(text), exact=exact)


def tallies(sim: Simulator) -> tuple[dict[str, int], dict[str, int]]:
    r = sim.report()["tracepoints"]
    (enq,) = r["xdp_cpumap_enqueue"]
    (kth,) = r["xdp_cpumap_kthread"]
    return enq, kth


# ------------------------------------------------------------ map updates


@pytest.mark.parametrize(
    ("line", "errno"),
    [
        ("bpftool map update name cpus key 4 value qsize 64", "E2BIG"),  # key >= max_entries
        ("bpftool map update name cpus key 3 value qsize 16385", "EOVERFLOW"),
        ("bpftool map update name cpus key 1 value qsize 64 noexist", "EEXIST"),
        # __cpu_map_load_bpf_program's EINVAL, reported by cpu_map_update_elem as ENOMEM
        ("bpftool map update name cpus key 3 value qsize 64 prog xdp_tx", "ENOMEM"),
        ("bpftool map update name cpus key 3 value eth0", "EINVAL"),  # a device, not a qsize
        ("bpftool map delete name cpus key 9", "EINVAL"),
    ],
)
def test_refused_updates_answer_the_kernels_errno(line: str, errno: str):
    sim = cpumap_sim(True)
    res = sim.submit(line)
    assert not res.ok and res.errno == errno, res


def test_a_cpu_that_is_not_possible_is_enodev():
    """``cpu_map_update_elem``: key 5 of an 8-entry map on a 4-CPU host -> ENODEV (the range
    check, E2BIG, comes first and passes)."""
    text = BASE.format(cpu=2, qsize=64, prog="", rate="1Mpps", count=10).replace(
        "max_entries: 4", "max_entries: 8"
    )
    sim = Simulator(topo(text), exact=True)
    assert sim.submit(f"bpftool map update name cpus key 5 value qsize {QSIZE_MAX}").errno == (
        "ENODEV"
    )
    assert sim.submit(f"bpftool map update name cpus key 3 value qsize {QSIZE_MAX}").ok


def test_qsize_zero_empties_the_slot_and_frames_fall_back_to_aborted():
    """qsize 0 is a delete: ``bpf_redirect_map`` misses and returns its flags' action (0,
    XDP_ABORTED), so the driver drops with xdp_exception."""
    sim = cpumap_sim(True, count=200)
    assert sim.submit("bpftool map update name cpus key 2 value qsize 0").ok
    sim.run_until(2_000_000)
    r = sim.report()
    assert r["maps"]["cpus"]["entries"] == {}
    assert r["devices"]["eth0"]["counters"]["xdp_aborted"] == 200
    assert not r["tracepoints"].get("xdp_cpumap_enqueue")


def test_topology_refuses_a_key_out_of_range_and_an_unknown_program():
    bad = BASE.format(cpu=2, qsize=64, prog=", prog: xdp_tx", rate="1Mpps", count=10).replace(
        "2: {qsize", "4: {qsize"
    )
    with pytest.raises(TopologyError) as err:
        topo(bad, "bad.yaml")
    text = str(err.value)
    assert "bad.yaml:8:" in text and "key 4" in text and "E2BIG" in text
    wrong = BASE.format(cpu=2, qsize=64, prog=", prog: xdp_tx", rate="1Mpps", count=10)
    with pytest.raises(TopologyError) as err:
        topo(wrong, "bad.yaml")
    text = str(err.value)
    assert "unknown cpumap program 'xdp_tx'" in text and "valid: drop_port, xdp_aborted" in text


# ------------------------------------------------------------ the data path


@pytest.mark.parametrize("exact", [True, False])
def test_every_frame_reaches_the_kthread_when_it_keeps_up(exact: bool):
    sim = cpumap_sim(exact, count=1000)
    sim.run_until(3_000_000)
    enq, kth = tallies(sim)
    assert enq["cpu"] == 0 and enq["to_cpu"] == 2
    assert enq["processed"] == 1000 and enq["drops"] == 0
    # without a program the kthread's verdict fields stay 0 (cpu_map_bpf_prog_run)
    assert kth["processed"] == 1000 and kth["xdp_pass"] == kth["xdp_drop"] == 0


def test_each_poll_flushes_ceil_k_over_8_bulks_and_the_kthread_takes_8_at_a_time():
    """Exact mode, poll by poll: a poll of k frames makes ceil(k / 8) flushes
    (``cpu_map_enqueue`` at the ninth, ``__cpu_map_flush`` at the end); every kthread batch
    takes at most ``CPUMAP_BATCH``."""
    sim = cpumap_sim(True, count=1000, rate="4Mpps")
    sim.run_until(3_000_000)
    polls = [e for e in sim.events() if e["kind"] == "napi_poll" and e["frames"]]
    flushes = [e for e in sim.events() if e["kind"] == "cpumap_enqueue"]
    assert len(flushes) == sum(math.ceil(p["frames"] / CPU_MAP_BULK_SIZE) for p in polls)
    assert all(f["frames"] <= CPU_MAP_BULK_SIZE for f in flushes)
    batches = [e for e in sim.events() if e["kind"] == "cpumap_kthread"]
    assert all(0 < b["frames"] <= CPUMAP_BATCH for b in batches)
    assert sum(b["frames"] for b in batches) == 1000
    enq, kth = tallies(sim)
    assert enq["hits"] == len(flushes) and kth["hits"] == len(batches)
    assert kth["sched"] == sum(b["sched"] for b in batches) >= 1


@pytest.mark.parametrize("exact", [True, False])
def test_a_kthread_that_cannot_keep_up_fills_its_ring_and_enqueue_drops(exact: bool):
    """6 Mpps to one CPU that passes each frame up as an skb: the kthread is busy all the
    time, the ring is full and the rest is dropped at enqueue: processed = passed + in the
    ring, dropped = offered - (passed + ring)."""
    sim = cpumap_sim(exact, qsize=256, rate="6Mpps", count=30000)
    sim.run_until(4_000_000)
    enq, kth = tallies(sim)
    ring = sim.frame().tracepoints.xdp_cpumap_kthread[0].ring
    assert enq["drops"] > 0
    assert enq["processed"] - enq["drops"] == kth["processed"] + ring
    assert ring <= 256
    busy = sim.frame().tracepoints.xdp_cpumap_kthread[0].busy_ns
    assert busy > 0.9 * 4_000_000


@pytest.mark.parametrize("exact", [True, False])
def test_the_entry_program_runs_on_the_target_cpu(exact: bool):
    sim = cpumap_sim(exact, prog="xdp_drop", count=500)
    sim.run_until(2_000_000)
    _, kth = tallies(sim)
    assert kth["xdp_drop"] == 500 and kth["xdp_pass"] == 0


def test_ptr_ring_frees_consumed_slots_in_batches_of_16():
    """``__ptr_ring_discard_one``: 8 frames consumed from a 64-slot ring free nothing yet
    (the producer still sees them); 16 free 16; at the ring's end the rest is freed."""
    e = CpuMapEntry(2, 64)
    assert e.batch == 16
    e.consumed(8)
    assert e.lag == 8
    e.consumed(8)
    assert e.lag == 0
    e.consumed(40)  # to slot 56: 8 consumed past the last zeroing
    assert e.lag == 8
    e.consumed(8)  # slot 64: the ring's end frees them all
    assert e.lag == 0 and e.head == 0
    small = CpuMapEntry(2, 16)
    assert small.batch == 1  # a batch larger than half the ring is 1


@pytest.mark.parametrize("exact", [True, False])
def test_fast_and_exact_agree_on_a_spread(exact: bool):
    """The shipped lesson's second step in small: four CPUs, each within its means."""
    text = (
        BASE.format(cpu=2, qsize=2048, prog="", rate="8Mpps", count=40000)
        .replace(
            "program: redirect_cpu, params: {map: cpus, cpu: 2}",
            "program: redirect_cpu, params: {map: cpus, cpus: [1, 2, 3]}",
        )
        .replace("2: {qsize: 2048}", "1: {qsize: 2048}, 2: {qsize: 2048}, 3: {qsize: 2048}")
    )
    sims = {}
    for ex in (True, False):
        sims[ex] = Simulator(topo(text), exact=ex)
        sims[ex].run_until(6_000_000)
    a = sims[True].report()["tracepoints"]
    b = sims[False].report()["tracepoints"]
    for key in ("xdp_cpumap_enqueue", "xdp_cpumap_kthread"):
        for x, y in zip(a[key], b[key], strict=True):
            for f in ("processed", "drops", "xdp_pass"):
                if f in x:
                    assert abs(x[f] - y[f]) <= max(0.01 * x[f], 2), (key, f, x, y)
    assert sum(k["processed"] for k in a["xdp_cpumap_kthread"]) == 40000
    assert {k["cpu"] for k in a["xdp_cpumap_kthread"]} == {1, 2, 3}


# ------------------------------------------------------------ on screen


def test_the_screen_shows_the_ptr_ring_the_kthread_and_the_arrow_to_it():
    """What the panels draw is the report's numbers: the Paths arrow to CPU 2's kthread
    carries what CPU 0 enqueued and its ring-full drops; the Rings panel the ptr_ring's fill;
    the CPU map the kthread on CPU 2 and CPU 0's bulk queue toward it."""
    from xdptui.widgets.project import project
    from xdptui.widgets.project_paths import project_paths

    sim = cpumap_sim(True, qsize=256, rate="6Mpps", count=30000)
    sim.run_until(2_000_000)
    before = sim.frame()
    sim.run_until(3_000_000)
    after = sim.frame()
    enq, kth = tallies(sim)
    (eth0,) = [b for b in project_paths(before, after).boxes if b.name == "eth0"]
    (arrow,) = [a for a in eth0.verdicts if "kthread" in a.target]
    assert arrow.target.startswith("cpu2 kthread") and arrow.total == enq["processed"]
    assert arrow.losses[0].total == enq["drops"] > 0
    views = project(before, after)
    (ring,) = [r for r in views.rings.rows if r.kind == "ptr_ring"]
    assert (ring.size, ring.sent, ring.dropped) == (256, kth["processed"], enq["drops"])
    assert ring.occupancy == after.tracepoints.xdp_cpumap_kthread[0].ring > 0
    cpus = {row.cpu: row for row in views.cpus.rows}
    assert "kthread:cpus" in cpus[2].rx_queues and "bq→cpu2" in cpus[0].bulk_queues
    # the Drops tab lists the ring-full drops and counts them in xdp-monitor's err,drop total
    (row,) = views.drops.cpumap
    assert (row.dev, row.key, row.count) == ("cpu0->cpu2", "ptr_ring full", enq["drops"])
    assert views.drops.summary is not None
    assert views.drops.summary.err_drop_total == enq["drops"]


OBJECT = """
name: cpumap object
cpus: 6
devices:
  eth0: {type: nic, driver: i40e, queues: 1, irq_cpus: [0], xdp: ../../examples/bpf/cpu_spread.o}
maps:
  cpu_map:
    type: cpumap
    max_entries: 8
    entries: {2: {qsize: 256}, 3: {qsize: 256}, 5: {qsize: 256, prog: xdp_drop}}
traffic:
  - {name: t, to: eth0, rate: 4Mpps, size: 64, proto: udp, flows: 64, src_port: 1000-1063,
     count: 6400}
"""


@pytest.mark.parametrize("exact", [True, False])
def test_a_real_object_spreads_by_its_own_rule(exact: bool):
    """examples/bpf/cpu_spread.o: bpf_redirect_map(&cpu_map, 2 + sport % 4, XDP_PASS), its
    cpumap bound to the host's by name. Ports 1000-1063 give each CPU 2-5 a quarter; key 4 has
    no entry, so its quarter falls back to XDP_PASS on eth0; CPU 5's entry drops."""
    sim = Simulator(topo(OBJECT), exact=exact)
    sim.run_until(4_000_000)
    r = sim.report()
    per = {k["cpu"]: k for k in r["tracepoints"]["xdp_cpumap_kthread"]}
    quarter = 6400 // 4
    assert set(per) == {2, 3, 5}
    assert per[2]["processed"] == per[3]["processed"] == quarter
    assert per[5]["xdp_drop"] == quarter and per[5]["xdp_pass"] == 0
    assert r["devices"]["eth0"]["counters"]["xdp_pass"] == quarter
    assert r["devices"]["eth0"]["counters"]["xdp_redirect"] == 3 * quarter


def test_a_real_objects_cpumap_shows_in_bpftool_and_takes_updates():
    sim = Simulator(topo(OBJECT), exact=True)
    shown = sim.submit("bpftool map show name cpu_map")
    assert shown.ok and "cpumap  name cpu_map" in shown.reply
    assert sim.submit("bpftool map update name cpu_map key 4 value qsize 256").ok
    sim.run_until(4_000_000)
    per = {k["cpu"]: k for k in sim.report()["tracepoints"]["xdp_cpumap_kthread"]}
    assert per[4]["processed"] == 6400 // 4  # the slot filled: its quarter goes to CPU 4 now
    dump = sim.submit("bpftool map dump name cpu_map").reply
    assert "key: 04 00 00 00  value: 00 01 00 00 00 00 00 00  (qsize 256)" in dump


def test_completion_offers_a_cpumaps_value_words():
    from xdptui.completion import CompletionContext, complete

    ctx = CompletionContext(maps=("cpu_map", "tx"), cpumaps=("cpu_map",))
    line = "bpftool map update name cpu_map key 2 value "
    assert complete(line, ctx).candidates == ("qsize",)
    assert complete(line + "qsize 64 ", ctx).candidates == ("prog",)
    assert "xdp_drop" in complete(line + "qsize 64 prog ", ctx).candidates
    # a devmap's value is still a device
    ctx = CompletionContext(devices=("eth0",), maps=("tx",), cpumaps=("cpu_map",))
    assert complete("bpftool map update name tx key 1 value ", ctx).candidates == ("eth0",)


@pytest.mark.parametrize("exact", [True, False])
def test_an_entry_program_with_two_verdicts_splits_its_frames_in_both_modes(exact: bool):
    """``drop_port`` on CPU 2's entry drops UDP to port 9 and passes the rest: flows to ports
    9 and 10 alternate, so half of each kind. Fast mode keeps the flows apart in its classes
    because the entry program tells them apart."""
    text = BASE.format(cpu=2, qsize=256, prog=", prog: drop_port", rate="1Mpps", count=400)
    text = text.replace("src_port: 1000-1063", "dst_port: 9-10")
    sim = Simulator(topo(text), exact=exact)
    sim.run_until(2_000_000)
    _, kth = tallies(sim)
    assert (kth["processed"], kth["xdp_drop"], kth["xdp_pass"]) == (400, 200, 200)


TWO_PORTS = """
name: two ports one cpu
cpus: 4
devices:
  eth0: {type: nic, driver: i40e, queues: 1, irq_cpus: [0],
         xdp: {program: redirect_cpu, params: {map: cpus, cpu: 2}}}
  eth1: {type: nic, driver: i40e, queues: 1, irq_cpus: [0],
         xdp: {program: redirect_cpu, params: {map: cpus, cpu: 2}}}
maps:
  cpus: {type: cpumap, max_entries: 4, entries: {2: {qsize: 64}}}
traffic:
  - {name: a, to: eth0, rate: 3Mpps, size: 64, proto: udp, flows: 16, count: 6000}
  - {name: b, to: eth1, rate: 1Mpps, size: 64, proto: udp, flows: 16, count: 2000}
"""


@pytest.mark.parametrize("exact", [True, False])
def test_two_ports_on_one_cpu_each_show_their_own_arrow_to_the_kthread(exact: bool):
    """The tracepoint knows only the sending CPU (both ports poll on CPU 0); the Paths arrow
    of each port carries that port's frames and that port's ring-full drops, which add up to
    the tracepoint's."""
    from xdptui.widgets.project_paths import project_paths

    sim = Simulator(topo(TWO_PORTS), exact=exact)
    sim.run_until(3_000_000)
    frame = sim.frame()
    (enq,) = sim.report()["tracepoints"]["xdp_cpumap_enqueue"]
    boxes = {b.name: b for b in project_paths(None, frame).boxes}
    arrows = {}
    for name in ("eth0", "eth1"):
        (a,) = [a for a in boxes[name].verdicts if "kthread" in a.target]
        arrows[name] = a
        assert a.total == frame.device(name).counter("xdp_redirect")
    assert arrows["eth0"].total == 6000 and arrows["eth1"].total == 2000
    lost = [a.losses[0].total if a.losses else 0 for a in arrows.values()]
    assert sum(lost) == enq["drops"] > 0
