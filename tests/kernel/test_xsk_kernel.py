"""The machine's kernel as the oracle for AF_XDP receive in copy mode (net/xdp/xsk.c,
xsk_buff_pool.c, xsk_queue.h): frames an XDP program redirects into an XSKMAP.

Built for real by ``xsk_run.py`` (see its docstring; the parameters of each scenario are its
``SCENARIOS``, read here with ``scenario_params``): vs of a veth pair vi/vs runs x_xsk
natively (``bpf_redirect_map(&xsks_map, rx_queue_index, XDP_PASS)``); an AF_XDP socket set up
with raw syscalls (``xsk_sock.c``) is bound in copy mode, its fill ring holding
min(frames, fill) chunks; 200 frames are sent out of vi and land on vs's queue 0.

Asserted is what the kernel's rules make certain, each frame taken in turn (a veth's NAPI
poll runs x_xsk on one frame after another; xsk_flush between them changes no count):

- No socket at the frame's key: __bpf_xdp_redirect_map returns the flags' action, XDP_PASS;
  the frame goes up the stack, no redirect tracepoint fires.
- xsk_rcv_check, in order: a socket never bound is ENXIO; one bound to another device or
  queue than the frame's rxq EINVAL (neither counted by the socket); a frame longer than the
  rx frame size (chunk - XDP_PACKET_HEADROOM - umem headroom: __xsk_pool_get_rx_frame_size)
  ENOSPC and rx_dropped.
- __xsk_rcv (copy): xsk_buff_alloc takes the pool's free list first, then the fill ring; with
  neither, xp_alloc counts the fill ring's queue_empty_descs (rx_fill_ring_empty_descs) and
  __xsk_rcv rx_dropped, ENOMEM. Then xskq_prod_reserve_desc: an rx ring holding ``rx``
  descriptors is full, rx_ring_full (xs->rx_queue_full), ENOBUFS, and the chunk goes to the
  free list (xsk_buff_free -> xp_free), where the next frame takes it: a full rx ring costs
  the fill ring one chunk, not one per frame.
- The failures all end in xdp_do_redirect's error path: xdp:xdp_redirect_err with that errno,
  and veth_xdp_rcv_skb counts the frame in rx_drops (``ethtool -S``: rx_queue_0_drops, and
  ``ip -s link``'s rx_dropped), not in xdp_drops. A delivered frame fires xdp:xdp_redirect
  and counts in rx_queue_0_xdp_redirect.
- A reader that gives every chunk back to the fill ring before the next burst of ``pace``
  frames (xsk_run.py waits for it) never lets the fill ring run dry when a burst fits in
  the chunks it has.

The simulator's side builds the same scenarios as topologies (a ``type: xsk`` device, an
``xskmap``, the built-in program ``xsk_redirect``) and compares its counts with these; it skips
until the simulator has AF_XDP (``xsk_redirect`` in its catalog). Skips with the reason where
the machine cannot build the scenarios (not root, no clang/bpftool, no AF_XDP, no tracefs).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kernel_oracle_xsk import kernel, why_not
from test_kernel_oracle import packets, run, seen, sim_counts
from xsk_run import SCENARIOS, scenario_params

from xdptui.model.catalog import program_info

WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")

XDP_PACKET_HEADROOM = 256  # include/uapi/linux/bpf.h: the headroom xp_alloc leaves in a chunk
RX_QUEUE = 0  # the queue every frame lands on (vi has one tx queue): x_xsk's key
COUNTERS = (  # struct xdp_statistics, as xsk_getsockopt(XDP_STATISTICS) fills it
    "rx_dropped",
    "rx_invalid_descs",
    "tx_invalid_descs",
    "rx_ring_full",
    "rx_fill_ring_empty_descs",
    "tx_ring_empty_descs",
)


def rules(p: dict[str, Any]) -> Counter[str]:
    """Each of the scenario's frames through x_xsk and xsk_rcv in turn, by the rules of the
    module docstring: the socket's counters, ``delivered`` (descriptors written to the rx
    ring), ``rx_ring`` (left there at the end), ``received`` (taken off it by the reader),
    ``stack`` (XDP_PASS) and ``err:ERRNO`` per failed redirect."""
    frame_size = p["chunk"] - XDP_PACKET_HEADROOM - p["headroom"]
    fill = min(p["frames"], p["fill"])  # chunks on the fill ring
    free = 0  # chunks on the pool's free list
    c: Counter[str] = Counter()
    for i in range(p["n"]):
        size = p["sizes"][i % len(p["sizes"])]
        err = ""
        if p["key"] != RX_QUEUE:
            c["stack"] += 1
        elif p["bind"] is None:
            err = "ENXIO"
        elif (p["bind"], p["queue"]) != ("vs", RX_QUEUE):
            err = "EINVAL"
        elif size > frame_size:
            err = "ENOSPC"
            c["rx_dropped"] += 1
        elif not free and not fill:
            err = "ENOMEM"
            c["rx_dropped"] += 1
            c["rx_fill_ring_empty_descs"] += 1
        else:
            if free:
                free -= 1
            else:
                fill -= 1
            if c["rx_ring"] == p["rx"]:
                err = "ENOBUFS"
                c["rx_ring_full"] += 1
                free += 1
            else:
                c["rx_ring"] += 1
                c["delivered"] += 1
        if err:
            c[f"err:{err}"] += 1
        burst_done = i % p["pace"] == p["pace"] - 1 or i == p["n"] - 1
        if p["reader"] == "recycle" and burst_done:
            c["received"] += c["rx_ring"]
            fill += c["rx_ring"]
            c["rx_ring"] = 0
    return c


def expected_socket(p: dict[str, Any]) -> dict[str, int]:
    r = rules(p)
    return {k: r[k] for k in (*COUNTERS, "rx_ring", "received")}


def test_the_rules_worked_by_hand():
    """The rules, worked by hand for the first scenarios: 64 chunks for 200 frames leave 136
    to find the fill ring empty; an rx ring of 64 leaves 136 to find it full."""
    a = rules(scenario_params("xsk_fill_ring_empty"))
    assert (a["delivered"], a["rx_dropped"], a["rx_fill_ring_empty_descs"]) == (64, 136, 136)
    b = rules(scenario_params("xsk_rx_ring_full"))
    assert (b["delivered"], b["rx_ring_full"], b["rx_dropped"]) == (64, 136, 0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_socket_statistics_follow_the_rules(name: str):
    """XDP_STATISTICS and the rx ring (descriptors in it: producer - consumer; taken by the
    reader) as the rules count them."""
    p = scenario_params(name)
    k = kernel(name)["xsk"]
    assert k["prefill"] == min(p["frames"], p["fill"])
    assert {key: k[key] for key in (*COUNTERS, "rx_ring", "received")} == expected_socket(p)


@pytest.mark.parametrize("name", SCENARIOS)
def test_redirects_and_their_errors_follow_the_rules(name: str):
    """xdp:xdp_redirect per delivered frame, xdp:xdp_redirect_err per failed one by its errno,
    the stack's frames (XDP_PASS), no xdp:xdp_exception."""
    k = kernel(name)
    r = rules(scenario_params(name))
    errs = {key.removeprefix("err:"): v for key, v in r.items() if key.startswith("err:")}
    assert k["xdp_redirect_err"] == errs
    assert (k["xdp_redirect"], k["stack"], k["xdp_exception"]) == (r["delivered"], r["stack"], 0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_veth_counts_a_failed_redirect_as_an_rx_drop(name: str):
    """veth_xdp_rcv: every frame is an XDP packet; a redirect that fails is one of rx_drops
    (veth_xdp_rcv_skb), which ``ip -s link`` adds to rx_dropped."""
    p = scenario_params(name)
    k = kernel(name)
    r = rules(p)
    failed = p["n"] - r["delivered"] - r["stack"]
    assert packets(k["vs"]) == {
        key: v
        for key, v in {
            "rx_packets": p["n"],
            "rx_dropped": failed,
            "ethtool:rx_queue_0_xdp_packets": p["n"],
            "ethtool:rx_queue_0_xdp_redirect": r["delivered"],
            "ethtool:rx_queue_0_drops": failed,
        }.items()
        if v
    }
    assert packets(k["vi"]) == {"tx_packets": p["n"]}


# ------------------------------------------------------------------ the simulator, held to it
# The contract xdptui's AF_XDP is to meet (docs/design.md); adjust here when it lands. A
# ``type: xsk`` device with {dev, queue, mode, frames, frame_size, fill, rx, tx, comp, reader,
# need_wakeup}: its report counters rx_packets (descriptors written to the rx ring) and the
# XDP_STATISTICS names; ``reader`` absent: it never reads; the fill ring starts with
# min(frames, fill) chunks. Not expressible there, so left out: a socket never bound
# (xsk_unbound) and umem headroom (xsk_umem_headroom).

sim_xsk = pytest.mark.skipif(
    program_info("xsk_redirect") is None,
    reason="the simulator has no AF_XDP yet (no built-in program xsk_redirect)",
)
SIM_SCENARIOS = [name for name in SCENARIOS if name not in ("xsk_unbound", "xsk_umem_headroom")]
SIM_READER = "10Mpps"  # "recycle": far faster than the 100Kpps the frames come at

XSK = """
name: {name}
cpus: 1
devices:
  vi: {{type: veth, peer: vs, mtu: {mtu}}}
  vs: {{type: veth, peer: vi, mtu: {mtu}, queues: {queues},
        xdp: {{program: xsk_redirect, params: {{map: xsks}}}}}}{other}
  xsk0: {{type: xsk, dev: {bind}, queue: {queue}, mode: copy, frames: {frames},
          frame_size: {chunk}, fill: {fill}, rx: {rx}{reader}}}
maps:
  xsks: {{type: xskmap, max_entries: 64{entries}}}
traffic:
  - {{name: app, from: vi, rate: 100Kpps, count: {n}, size: {sizes}}}
"""
OTHER = """
  {dev}: {{type: veth, peer: vp}}
  vp: {{type: veth, peer: {dev}}}"""


def sim_topology(name: str) -> str:
    """Scenario ``name`` as a topology of the contract."""
    p = scenario_params(name)
    other = "" if p["bind"] in ("vs", None) else OTHER.format(dev=p["bind"])
    return XSK.format(
        **p
        | {
            "name": name.replace("_", "-"),
            "other": other,
            "reader": f", reader: {SIM_READER}" if p["reader"] == "recycle" else "",
            "entries": "" if p["key"] is None else f", entries: {{{p['key']}: xsk0}}",
            "sizes": list(p["sizes"]),
        }
    )


@sim_xsk
@pytest.mark.parametrize("name", SIM_SCENARIOS)
def test_sim_xsk_counts_equal_the_kernels(name: str):
    k = kernel(name)
    sim = run(sim_topology(name))
    rep = sim.report()
    ours = rep["xsks"]["xsk0"]["counters"]  # a socket, not a net device: the report's xsks
    assert {c: ours.get(c, 0) for c in ("rx_packets", *COUNTERS)} == {
        "rx_packets": k["xsk"]["rx_ring"] + k["xsk"]["received"],
        **{c: k["xsk"][c] for c in COUNTERS},
    }
    errs = {(x["dev"], x["err"]): x["count"] for x in rep["tracepoints"]["xdp_redirect_err"]}
    assert errs == {("vs", e): n for e, n in k["xdp_redirect_err"].items()}
    assert rep["tracepoints"]["xdp_exception"] == []
    ours_dev = {d: sim_counts(sim, d) for d in ("vs", "vi")}
    theirs = {d: seen(k[d]) for d in ("vs", "vi")}
    if scenario_params(name)["queues"] > 1:  # xdptui keeps a veth's XDP stats per device,
        # shown on a one-queue veth only: compare the link's counters
        theirs["vs"] = {c: v for c, v in theirs["vs"].items() if not c.startswith("ethtool:")}
        ours_dev["vs"] = {c: v for c, v in ours_dev["vs"].items() if not c.startswith("ethtool:")}
    assert ours_dev == theirs
