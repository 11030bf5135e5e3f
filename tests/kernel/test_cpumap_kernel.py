"""The machine's kernel as the oracle for cpumap (kernel/bpf/cpumap.c): frames an XDP program
sends to another CPU with ``bpf_redirect_map``, and the map's update rules.

Built for real by ``netns_run.py`` (its ``cpumap_*`` scenarios): vs of a veth pair vi/vs runs
x_cpumap natively (every frame to cpu_map[1]); 100 frames are sent out of vi by a sender pinned
to CPU 0, so vs's NAPI poll (the softirq of the sending CPU) enqueues them on CPU 0 for the
kthread of CPU 1. The tracepoints xdp:xdp_cpumap_enqueue, xdp:xdp_cpumap_kthread and
xdp:xdp_exception are read from a tracefs instance of the scenario's own. Also x_cpumap run
by BPF_PROG_TEST_RUN in live-frames mode, and the errnos of BPF_MAP_UPDATE_ELEM and
BPF_MAP_CREATE on cpumaps.

Asserted is what the kernel's rules make certain, never one run's timing:

- bq_enqueue keeps each CPU's frames for an entry in a bulk of CPU_MAP_BULK_SIZE (8) and moves
  a full one to the entry's ptr_ring before it queues a 9th (bq_flush_to_queue: one enqueue
  hit); xdp_do_flush at the end of the NAPI poll (__cpu_map_flush) moves the rest and wakes
  the kthread. A veth poll carries the frames veth_xmit queued since the last one: here one
  per send(), as the softirq runs when the sender's dev_queue_xmit enables bottom halves, but
  a poll deferred to ksoftirqd carries several. So over a veth only the sums and the bounds
  are certain; the live-frames test run (batches of 64, xdp_do_flush after each) gives the
  exact bulks.
- cpu_map_kthread_run takes at most CPUMAP_BATCH (8) frames off the ring per hit, and ``sched``
  is 1 when it slept before the batch: both depend on when the kthread runs. A wake-up that
  finds the ring already drained gives a hit of 0 frames.
- The kthread hit's xdp_pass/xdp_drop/xdp_redirect count the entry program's verdicts
  (cpu_map_bpf_prog_run_xdp): without a program they stay 0, the frames going to the stack
  uncounted. Its ``drops`` are failed skb allocations only, never the program's XDP_DROP.
- The ring (qsize 192) holds more than the 100 frames sent, so no enqueue ever drops.

The simulator's side runs the same scenarios in xdptui (a topology with a ``cpumap`` map, the
built-in program ``redirect_cpu``, ``bpftool map update ... value qsize N [prog P]``) and
compares it with these; it skips until the simulator has cpumap (``redirect_cpu`` in its
catalog). Skips with the reason where the machine cannot build the scenarios.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import sim_of
from kernel_oracle_net import kernel, why_not
from test_kernel_oracle import packets, run, seen, sim_counts

from xdptui.model.catalog import program_info


def _why_not() -> str | None:
    if (why := why_not()) is not None:
        return why
    if not {0, 1} <= os.sched_getaffinity(0):
        return "needs CPUs 0 and 1 (frames go from CPU 0 to the kthread of CPU 1)"
    if "\ttracefs\n" not in Path("/proc/filesystems").read_text():
        return "no tracefs (the cpumap tracepoints are read from a tracefs instance)"
    return None


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")

N = 100  # frames each traffic scenario of netns_run.py sends
BULK = 8  # CPU_MAP_BULK_SIZE: frames bq_enqueue keeps per CPU before bq_flush_to_queue
BATCH = 8  # CPUMAP_BATCH: frames cpu_map_kthread_run takes off the ring at most per pass
LIVE_BATCH = 64  # the batch_size cpumap_live_frames gives BPF_PROG_TEST_RUN
SENDER, TARGET = 0, 1  # the CPU netns_run.py pins its sender to; the key (CPU) x_cpumap uses

# The verdicts (xdp_pass, xdp_drop) cpu_map[1]'s program gives on the kthread.
VERDICTS = {
    "cpumap_pass": (0, 0),  # no program: cpu_map_bpf_prog_run returns before any count
    "cpumap_prog_pass": (N, 0),  # c_pass
    "cpumap_prog_drop": (N // 2, (N + 1) // 2),  # c_drop_udp9; frames 0, 2, 4... to port 9
}


def only(rows: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("name", VERDICTS)
def test_every_frame_crosses_to_the_kthread_of_the_target_cpu(name: str):
    k = kernel(name)
    assert k["update"] == ""
    enq = only(k["xdp_cpumap_enqueue"])
    assert (enq["cpu"], enq["to_cpu"], enq["processed"], enq["drops"]) == (SENDER, TARGET, N, 0)
    kt = only(k["xdp_cpumap_kthread"])
    passed, dropped = VERDICTS[name]
    assert (kt["cpu"], kt["processed"], kt["drops"]) == (TARGET, N, 0)
    assert (kt["xdp_pass"], kt["xdp_drop"], kt["xdp_redirect"]) == (passed, dropped, 0)
    assert k["xdp_exception"] == []


@pytest.mark.parametrize("name", VERDICTS)
def test_the_ingress_veth_counts_every_frame_as_redirected(name: str):
    k = kernel(name)
    assert packets(k["vs"]) == {
        "rx_packets": N,
        "ethtool:rx_queue_0_xdp_packets": N,
        "ethtool:rx_queue_0_xdp_redirect": N,
    }
    assert packets(k["vi"]) == {"tx_packets": N}


@pytest.mark.parametrize("name", VERDICTS)
def test_bulks_and_kthread_batches_stay_within_their_sizes(name: str):
    k = kernel(name)
    bulks, batches = k["enqueue_bulks"], k["kthread_batches"]
    assert sum(bulks) == N and all(1 <= b <= BULK for b in bulks)
    assert math.ceil(N / BULK) <= len(bulks) == only(k["xdp_cpumap_enqueue"])["hits"] <= N
    kt = only(k["xdp_cpumap_kthread"])
    assert sum(batches) == N and all(0 <= b <= BATCH for b in batches)
    assert math.ceil(N / BATCH) <= len(batches) == kt["hits"]
    assert 1 <= kt["sched"] <= kt["hits"]  # asleep on an empty ring when the first frame came


def poll_bulks(frames: int) -> list[int]:
    """The bulks one NAPI poll of ``frames`` frames moves: full ones as the next frame comes
    (bq_enqueue), the rest at its end (xdp_do_flush)."""
    full, rest = divmod(frames, BULK)
    return [BULK] * full + ([rest] if rest else [])


def test_live_frames_bulks_are_full_but_for_each_polls_last():
    try:
        k = kernel("cpumap_live_frames")
    except RuntimeError as exc:  # (a kernel may refuse BPF_F_TEST_XDP_LIVE_FRAMES to us)
        if "PermissionError" not in str(exc):
            raise
        last = str(exc).strip().splitlines()[-1]
        pytest.skip(f"this kernel refuses BPF_PROG_TEST_RUN with live frames: {last}")
    polls = [min(LIVE_BATCH, N - start) for start in range(0, N, LIVE_BATCH)]
    bulks = [b for frames in polls for b in poll_bulks(frames)]
    assert k["enqueue_bulks"] == bulks
    enq = only(k["xdp_cpumap_enqueue"])
    assert (enq["cpu"], enq["to_cpu"], enq["processed"], enq["drops"]) == (SENDER, TARGET, N, 0)
    assert enq["hits"] == len(bulks)
    kt = only(k["xdp_cpumap_kthread"])
    assert (kt["cpu"], kt["processed"], kt["drops"], kt["xdp_pass"]) == (TARGET, N, 0, 0)
    assert all(b <= BATCH for b in k["kthread_batches"])


def test_a_missing_entry_gives_the_flags_verdict_xdp_aborted():
    """__bpf_xdp_redirect_map finds no cpu_map[1]: the program returns its flags' low bits (0,
    XDP_ABORTED); veth_xdp_rcv_one fires xdp_exception and counts an XDP drop."""
    k = kernel("cpumap_missing_entry")
    assert (k["xdp_cpumap_enqueue"], k["xdp_cpumap_kthread"]) == ([], [])
    assert k["xdp_exception"] == [{"action": "ABORTED", "dev": "vs", "hits": N}]
    assert packets(k["vs"]) == {
        "rx_packets": N,
        "ethtool:rx_queue_0_xdp_packets": N,
        "ethtool:rx_queue_0_xdp_drops": N,
    }


# The kernel's answers, each by the first check that refuses it (cpu_map_update_elem: flags >
# BPF_EXIST EINVAL; key >= max_entries E2BIG; BPF_NOEXIST EEXIST, an array has every key;
# qsize > 16384 EOVERFLOW; key not a possible CPU ENODEV; qsize 0 deletes; then
# __cpu_map_entry_alloc, whose failures all read ENOMEM: __cpu_map_load_bpf_program's EINVAL
# for a program not of expected_attach_type BPF_XDP_CPUMAP included. cpu_map_alloc: value size
# not 4 or 8, or max_entries 0, EINVAL; max_entries > NR_CPUS E2BIG.) Lookups: the entry's
# qsize and program, ENOENT where there is none.
UPDATE_ERRORS = {
    "cm key out of range": "E2BIG",
    "cm key out of range with qsize 16385": "E2BIG",
    "cm key out of range with BPF_NOEXIST": "E2BIG",
    "cm flags > BPF_EXIST": "EINVAL",
    "cm flags > BPF_EXIST with key out of range": "EINVAL",
    "cm BPF_NOEXIST": "EEXIST",
    "cm BPF_NOEXIST with qsize 16385": "EEXIST",
    "cm qsize 16385": "EOVERFLOW",
    "cm qsize 16384": "",
    "cm BPF_EXIST on a used key": "",
    "cm BPF_EXIST on an empty key": "",
    "cm lookup of an entry": "qsize=256",
    "cm prog is not a cpumap program": "ENOMEM",
    "cm prog is a devmap program": "ENOMEM",
    "cm lookup after a refused update": "qsize=256",
    "cm prog c_pass": "",
    "cm lookup of an entry with c_pass": "qsize=192 prog=c_pass",
    "cm prog c_pass with qsize 16385": "EOVERFLOW",
    "cm qsize 0": "",
    "cm lookup after qsize 0": "ENOENT",
    "cm qsize 0 on an empty key": "",
    "cm lookup of a key out of range": "ENOENT",
    "cm64 key past the possible CPUs": "ENODEV",
    "cm64 key past the possible CPUs with qsize 16385": "EOVERFLOW",
    "cm64 key past the possible CPUs with a bad prog": "ENODEV",
    "cm64 key of a possible CPU": "",
    "cm4 create (value size 4)": "",
    "cm4 qsize 192": "",
    "cm4 qsize 192 and c_pass (only qsize is read)": "",
    "cm4 lookup": "qsize=192",
    "create value size 6": "EINVAL",
    "create value size 12": "EINVAL",
    "create max_entries 0": "EINVAL",
    "create max_entries NR_CPUS": "",
    "create max_entries NR_CPUS + 1": "E2BIG",
}


def test_cpumap_update_and_create_errors_in_the_order_of_the_checks():
    assert kernel("cpumap_update_errors") == UPDATE_ERRORS


# ------------------------------------------------------------------ the simulator, held to it
# The contract xdptui's cpumap is to meet; adjust here when it lands. Its report's rows:
# tracepoints.xdp_cpumap_enqueue {cpu, to_cpu, processed, drops, hits} and
# tracepoints.xdp_cpumap_kthread {cpu, processed, drops, sched, xdp_pass, xdp_drop,
# xdp_redirect, hits}. Timing is compared only within the kernel's bounds.

sim_cpumap = pytest.mark.skipif(
    program_info("redirect_cpu") is None,
    reason="the simulator has no cpumap yet (no built-in program redirect_cpu)",
)

CPUMAP = """
name: cpumap
cpus: 2
devices:
  vi: {{type: veth, peer: vs}}
  vs: {{type: veth, peer: vi, xdp: {{program: redirect_cpu, params: {{map: cpu_map, cpu: 1}}}}}}
maps:
  cpu_map: {{type: cpumap, max_entries: 4{entries}}}
traffic:
  - {{name: app, from: vi, rate: 100Kpps, count: 100, dst_port: 9-10, flows: 2}}
"""
ENTRIES = {  # each scenario's cpu_map[1], with the built-in program like its own
    "cpumap_pass": ", entries: {1: {qsize: 192}}",
    "cpumap_prog_pass": ", entries: {1: {qsize: 192, prog: xdp_pass}}",
    "cpumap_prog_drop": ", entries: {1: {qsize: 192, prog: drop_port}}",  # port 9
    "cpumap_missing_entry": "",
}
SUMMED = ("processed", "drops", "xdp_pass", "xdp_drop", "xdp_redirect")


@sim_cpumap
@pytest.mark.parametrize("name", ENTRIES)
def test_sim_cpumap_counts_equal_the_kernels(name: str):
    k = kernel(name)
    sim = run(CPUMAP.format(entries=ENTRIES[name]))
    tp = sim.report()["tracepoints"]
    assert {d: sim_counts(sim, d) for d in ("vs", "vi")} == {d: seen(k[d]) for d in ("vs", "vi")}
    exc = k["xdp_exception"]
    assert tp["xdp_exception"] == [
        {"dev": r["dev"], "action": f"XDP_{r['action']}", "count": r["hits"]} for r in exc
    ]

    def enqueued(rows: list[dict[str, Any]]) -> tuple[set[int], int, int]:
        to_cpus = {r["to_cpu"] for r in rows}
        return to_cpus, sum(r["processed"] for r in rows), sum(r["drops"] for r in rows)

    # The enqueue rows' cpu (where vs's poll ran) is left out: the kernel's is where
    # netns_run.py pinned its sender.
    assert enqueued(tp["xdp_cpumap_enqueue"]) == enqueued(k["xdp_cpumap_enqueue"])
    ours = {r["cpu"]: tuple(r[f] for f in SUMMED) for r in tp["xdp_cpumap_kthread"]}
    assert ours == {r["cpu"]: tuple(r[f] for f in SUMMED) for r in k["xdp_cpumap_kthread"]}
    frames = sum(r["processed"] for r in tp["xdp_cpumap_enqueue"])
    hits = sum(r["hits"] for r in tp["xdp_cpumap_enqueue"])
    assert math.ceil(frames / BULK) <= hits <= frames
    assert sum(r["hits"] for r in tp["xdp_cpumap_kthread"]) >= math.ceil(frames / BATCH)


MAPS = """
name: cpumaps
cpus: 2
devices:
  va: {type: veth, peer: vb}
maps:
  cpu_map: {type: cpumap, max_entries: 4}
  cm64: {type: cpumap, max_entries: 64}
"""


@sim_cpumap
def test_sim_cpumap_update_errors_equal_the_kernels():
    """``prog redirect``: a built-in that is no cpumap program (x_pass in the kernel);
    ``prog xdp_pass``: one that is (c_pass). Key 2 is past the 2 CPUs of the topology."""
    k = kernel("cpumap_update_errors")
    sim = sim_of(MAPS)

    def upd(args: str) -> str:
        res = sim.submit(f"bpftool map update name {args}")
        return "" if res.ok else str(res.errno)

    ours = {
        "cm key out of range": upd("cpu_map key 4 value qsize 192"),
        "cm key out of range with qsize 16385": upd("cpu_map key 4 value qsize 16385"),
        "cm key out of range with BPF_NOEXIST": upd("cpu_map key 4 value qsize 192 noexist"),
        "cm BPF_NOEXIST": upd("cpu_map key 1 value qsize 192 noexist"),
        "cm BPF_NOEXIST with qsize 16385": upd("cpu_map key 1 value qsize 16385 noexist"),
        "cm qsize 16385": upd("cpu_map key 1 value qsize 16385"),
        "cm qsize 16384": upd("cpu_map key 1 value qsize 16384"),
        "cm BPF_EXIST on a used key": upd("cpu_map key 1 value qsize 256 exist"),
        "cm BPF_EXIST on an empty key": upd("cpu_map key 0 value qsize 192 exist"),
        "cm prog is not a cpumap program": upd("cpu_map key 1 value qsize 192 prog redirect"),
        "cm prog c_pass": upd("cpu_map key 1 value qsize 192 prog xdp_pass"),
        "cm prog c_pass with qsize 16385": upd("cpu_map key 1 value qsize 16385 prog xdp_pass"),
        "cm qsize 0": upd("cpu_map key 1 value qsize 0"),
        "cm qsize 0 on an empty key": upd("cpu_map key 1 value qsize 0"),
        "cm64 key past the possible CPUs": upd("cm64 key 2 value qsize 192"),
        "cm64 key past the possible CPUs with qsize 16385": upd("cm64 key 2 value qsize 16385"),
        "cm64 key past the possible CPUs with a bad prog": upd(
            "cm64 key 2 value qsize 192 prog redirect"
        ),
        "cm64 key of a possible CPU": upd("cm64 key 1 value qsize 192"),
    }
    assert ours == {name: k[name] for name in ours}
