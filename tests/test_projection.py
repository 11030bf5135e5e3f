"""The pure projections behind the dashboard panels: paths, counters crosswalk, sparkline
history, bond, lesson, drop explanations and bulk-queue gauges. Plain asserts, no Textual."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import sim_of
from fake_sim import FakeSim

from xdptui.model.topology import Lesson, LessonStep
from xdptui.model.views import (
    BulkQueueView,
    DevmapXmitView,
    Frame,
    MapEntryView,
    MapView,
    RedirectErrView,
    TracepointsView,
)
from xdptui.sim.engine import Simulator
from xdptui.widgets.crosswalk import crosswalk_source, project_counters
from xdptui.widgets.history import RateHistory, project_sparklines, push_history
from xdptui.widgets.project import PanelState, Projection, project
from xdptui.widgets.project_bond import project_bond, split_share
from xdptui.widgets.project_lesson import project_lesson
from xdptui.widgets.project_paths import FollowView, project_paths, weight_of
from xdptui.widgets.rates import RatesView
from xdptui.widgets.sparklines import spark


def two_frames(dt: int = 1_000_000) -> tuple[FakeSim, Frame, Frame]:
    sim = FakeSim()
    sim.advance(1_000_000)
    before = sim.frame()
    sim.advance(dt)
    return sim, before, sim.frame()


# --- paths ---------------------------------------------------------------------------------


def test_a_bond_box_holds_its_slaves_with_their_verdict_arrows() -> None:
    _, before, after = two_frames()
    view = project_paths(before, after)
    assert [box.name for box in view.boxes] == ["bond0"]
    eth0, eth1 = view.boxes[0].children
    assert eth0.program == "xdp_tx native ⇐ bond0"
    assert eth0.inbound is not None and eth0.inbound.rate == pytest.approx(10_000_000)
    labels = [a.label for a in eth0.verdicts]
    assert labels == ["XDP_TX", "XDP_REDIRECT"]
    redirect = eth0.verdicts[1]
    assert redirect.target_dev == "eth1"
    assert "via bond0 xdp_master_redirect" in redirect.note
    assert redirect.rate == pytest.approx(5_000_000)
    assert eth1.verdicts[0].label == "XDP_TX"


def test_ring_full_drops_hang_off_the_rx_hop_in_red() -> None:
    _, before, after = two_frames()
    eth0 = project_paths(before, after).boxes[0].children[0]
    assert eth0.inbound is not None
    (loss,) = eth0.inbound.losses
    assert loss.what.startswith("ring full")
    assert loss.rate == pytest.approx(100_000)


def test_a_refused_redirect_shows_its_errno_at_the_redirect_hop() -> None:
    _, before, after = two_frames()
    tp = replace(
        after.tracepoints,
        xdp_redirect_err=(RedirectErrView("eth0", "ENETDOWN", 500),),
    )
    after = replace(after, tracepoints=tp)
    eth0 = project_paths(before, after).boxes[0].children[0]
    refused = [a for a in eth0.verdicts if any("ENETDOWN" in loss.what for loss in a.losses)]
    assert refused and refused[0].label == "XDP_REDIRECT"


def test_arrow_weight_grows_with_the_rate() -> None:
    assert [weight_of(r) for r in (None, 0, 50_000, 1e6, 2e7)] == [0, 0, 1, 2, 3]


def test_devmaps_get_a_box_listing_their_entries() -> None:
    sim = FakeSim()
    frame = replace(
        sim.frame(),
        maps=(MapView("tx_ports", "devmap", 64, (MapEntryView(0, "eth1", "xdp_pass"),)),),
    )
    box = project_paths(None, frame).boxes[-1]
    assert box.name == "tx_ports" and "devmap 1/64 entries" in box.kind
    assert box.notes == ("key 0 → eth1  egress xdp_pass",)


def test_the_followed_packets_devices_are_marked() -> None:
    sim = FakeSim()
    follow = FollowView("gen0 flow 1", sim.trace("gen0", 1))
    view = project_paths(None, sim.frame(), follow=follow)
    bond0 = view.boxes[0]
    assert bond0.on_path and all(child.on_path for child in bond0.children)
    assert view.follow is follow


# --- counters crosswalk ----------------------------------------------------------------------


def test_every_counter_names_where_it_lives_on_a_real_host() -> None:
    _, before, after = two_frames()
    view = project_counters(before, after, focus="eth0")
    (eth0,) = view.devices
    rows = {row.name: row for row in eth0.rows}
    assert rows["rx_packets"].rate == pytest.approx(10_000_000)
    assert "rtnl_link_stats64.rx_packets" in rows["rx_packets"].source
    assert "xdp:xdp_exception" in rows["xdp_aborted"].source
    assert all(row.source for row in eth0.rows)
    assert "xdp_fast_path" not in rows  # tun/tap only


def test_a_counter_the_engine_does_not_keep_reads_not_modelled_not_zero() -> None:
    sim = FakeSim()
    frame = sim.frame()
    eth0 = frame.device("eth0")
    tap = replace(eth0, name="tap0", type="tun", driver=None, master=None)
    frame = replace(frame, devices=(*frame.devices, tap))
    (row_view,) = project_counters(None, frame, focus="tap0").devices
    fast = next(row for row in row_view.rows if row.name == "xdp_fast_path")
    assert fast.total is None and fast.applicable
    assert "tun_build_skb" in fast.source


def test_a_bonds_verdict_counters_are_not_applicable() -> None:
    (bond0,) = project_counters(None, FakeSim().frame(), focus="bond0").devices
    rows = {row.name: row for row in bond0.rows}
    assert not rows["xdp_tx"].applicable and rows["xdp_tx"].source.startswith("n/a")
    assert rows["rx_packets"].applicable


def test_driver_specific_names_win_over_the_generic_one() -> None:
    assert crosswalk_source("nic", "mlx5", "xdp_drop").startswith("ethtool -S: rx_xdp_drop ")
    assert crosswalk_source("veth", None, "xdp_tx") == "ethtool -S: rx_queue_N_xdp_tx"
    assert "no driver counter" in crosswalk_source("nic", "ice", "xdp_drop")


# --- sparklines -----------------------------------------------------------------------------


def test_history_adds_one_sample_per_frame_and_keeps_the_newest() -> None:
    sim = FakeSim()
    history = RateHistory()
    prev = sim.frame()
    for _ in range(5):
        sim.advance(100_000)
        frame = sim.frame()
        history = push_history(history, RatesView(prev, frame), frame, capacity=3)
        prev = frame
    eth0 = next(s for s in history.series if s.name == "eth0")
    assert eth0.rx == pytest.approx((10_000_000,) * 3)
    assert len(history.all_drops) == 3
    assert push_history(history, RatesView(prev, prev), prev) is history  # no time passed


def test_sparklines_list_every_device_before_any_sample() -> None:
    view = project_sparklines(RateHistory(), FakeSim().frame(), focus="eth1")
    assert [row.name for row in view.rows] == ["eth0", "eth1", "bond0"]
    assert [row.focused for row in view.rows] == [False, True, False]


def test_spark_scales_to_the_largest_sample() -> None:
    assert spark((0.0, 5.0, 10.0), 3) == "▁▅█"
    assert spark((0.0, 0.0), 4) == "▁▁"
    assert spark((1.0, 2.0, 3.0, 4.0), 2) == "▇█"


# --- bond ------------------------------------------------------------------------------------


def test_bond_view_splits_each_slaves_xdp_tx_and_redirect() -> None:
    _, before, after = two_frames()
    view = project_bond(before, after, focus="eth1")
    assert view.focus == "bond0"  # a slave focuses its bond
    (bond0,) = view.bonds
    eth0 = bond0.slaves[0]
    assert eth0.tx_rate == pytest.approx(5_000_000)
    assert split_share(eth0.xdp_tx_rate, eth0.redirect_rate) == pytest.approx(0.5)
    assert split_share(None, None) is None


# --- lessons ---------------------------------------------------------------------------------

LESSONS = (
    Lesson(
        "Links",
        (
            LessonStep("Look at the paths."),
            LessonStep("Pull eth1.", ("ip link set dev eth1 down", "bogus")),
        ),
    ),
)


def test_lesson_view_shows_the_step_and_how_its_commands_went() -> None:
    before = project_lesson(LESSONS, 0, 1)
    assert (before.step, before.steps, before.text) == (1, 2, "Pull eth1.")
    assert [row.status for row in before.commands] == ["pending", "pending"]
    after = project_lesson(
        LESSONS,
        0,
        1,
        (("ip link set dev eth1 down", True, None, ""), ("bogus", False, "EINVAL", "Error: x")),
    )
    assert [row.status for row in after.commands] == ["ok", "failed"]
    assert after.commands[1].errno == "EINVAL"


def test_lesson_positions_are_clamped_and_no_lessons_is_minus_one() -> None:
    assert project_lesson(LESSONS, 5, 9).step == 1
    assert project_lesson((), 0, 0).lesson == -1


# --- drops and rings -------------------------------------------------------------------------


def test_every_drop_row_carries_its_cause_and_fix() -> None:
    _, before, after = two_frames()
    drops = project(before, after).drops
    ring = drops.ring_full[0]
    assert "napi_poll" in ring.explanation.cause and "ethtool -L" in ring.explanation.fix
    assert "XDP TX ring was full" in drops.xdp_exception[0].explanation.cause
    assert "DEV_MAP_BULK_SIZE" in drops.devmap_xmit[0].explanation.cause
    assert drops.summary is not None
    assert drops.summary.redirect_per_s == pytest.approx(5_000_000)


def test_devmap_drops_explain_a_full_target_ring() -> None:
    sim = FakeSim()
    frame = sim.frame()
    frame = replace(
        frame,
        tracepoints=TracepointsView(
            xdp_devmap_xmit=(DevmapXmitView("eth0", "eth1", 90, 10, 0, 10),)
        ),
    )
    row = project(None, frame).drops.devmap_xmit[0]
    assert "took fewer frames" in row.explanation.cause
    assert row.bulk_avg == pytest.approx(10.0)


def test_bulk_queues_are_gauges_and_cpu_map_entries() -> None:
    frame = replace(
        FakeSim().frame(),
        bulk_queues=(BulkQueueView(3, "eth0", "eth1", 1000, 100, 9.6, "xdp_pass"),),
    )
    views = project(None, frame)
    bq = [row for row in views.rings.rows if row.kind == "bq"]
    assert [row.label for row in bq] == ["bq cpu3 eth0→eth1 ⇢xdp_pass"]
    assert bq[0].occupancy == 10 and bq[0].size == 16
    assert views.cpus.rows[3].bulk_queues == ("bq→eth1",)


FIRST_ENQUEUER = """
name: first enqueuer
cpus: 2
devices:
  eth0: {{type: nic, driver: ice, queues: 1, xdp: weird.py:key_by_port_parity}}
  eth1: {{type: nic, driver: ice, queues: 1, xdp: xdp_pass}}
maps:
  tx_ports:
    type: devmap
    max_entries: 2
    entries: {{0: eth1, 1: {{dev: eth1, egress: xdp_drop}}}}
traffic:
  - {{name: g, to: eth0, rate: {rate}, count: {count}, flows: 3, src_port: 1001-1003}}
"""


def _bulk_queue(sim: Simulator) -> tuple[str, str | None]:
    """The Rings tab's one bulk-queue gauge: its label and the program it names."""
    (row,) = [r for r in project(None, sim.frame()).rings.rows if r.kind == "bq"]
    return row.label, row.program


def test_rings_tab_names_no_program_when_the_first_enqueuer_since_the_flush_has_none() -> None:
    """bq_enqueue (kernel/bpf/devmap.c) keeps ``bq->xdp_prog`` of the first frame enqueued
    since ``__dev_flush`` and ``bq_xmit_all`` runs it on the whole bulk. Keys 0 (no egress
    program) and 1 (xdp_drop) both point at eth1; frames come as keys 1, 0, 1 (src ports
    1001-1003, flows in order). At 1 Mpps on ice (rx-usecs 50 us) the first frame has a poll
    of its own -- its bulk runs xdp_drop -- and the other two wait for the next interrupt and
    share one bulk whose first enqueuer is key 0: no program, both sent."""
    sim = sim_of(FIRST_ENQUEUER.format(rate="1Mpps", count=3), exact=True)
    sim.run_until(10_000)  # the first poll has flushed, the second has not run
    assert _bulk_queue(sim) == ("bq cpu0 eth0→eth1 ⇢xdp_drop", "xdp_drop")
    sim.run_until(1_000_000)
    polls = [e["frames"] for e in sim.events() if e["kind"] == "napi_poll"]
    assert polls == [1, 2]
    assert _bulk_queue(sim) == ("bq cpu0 eth0→eth1", None)
    (m,) = sim.frame().tracepoints.xdp_devmap_xmit
    assert (m.sent, m.egress_drops) == (2, 1)


@pytest.mark.parametrize("exact", [False, True])
def test_rings_tab_names_the_last_bulks_first_enqueuers_program_in_both_modes(
    exact: bool,
) -> None:
    """At 10 Kpps frames are further apart than rx-usecs: every poll, and so every bulk, holds
    one frame, which meets its own entry's program. Five frames come as keys 1, 0, 1, 1, 0:
    three are dropped by xdp_drop, two sent, and the last bulk's first enqueuer is key 0, so
    the Rings tab names no program, not the xdp_drop earlier bulks of the same queue ran."""
    sim = sim_of(FIRST_ENQUEUER.format(rate="10Kpps", count=5), exact=exact)
    sim.run_until(5_000_000)
    (m,) = sim.frame().tracepoints.xdp_devmap_xmit
    assert (m.sent, m.egress_drops) == (2, 3)
    assert _bulk_queue(sim) == ("bq cpu0 eth0→eth1", None)


def test_a_projection_computes_only_the_views_asked_for() -> None:
    frame = FakeSim().frame()
    lazy = Projection(None, frame, PanelState(focus="nope"))
    assert lazy.state.focus is None  # unknown devices are ignored
    assert "rings" not in lazy.__dict__
    assert lazy.rings == project(None, frame).rings
    assert "rings" in lazy.__dict__ and "paths" not in lazy.__dict__


def test_a_veth_xdp_tx_bulk_error_points_at_the_peers_missing_program() -> None:
    from conftest import TOPOLOGIES

    from xdptui.sim.engine import Simulator
    from xdptui.topology_io import load_topology

    sim = Simulator(load_topology(str(TOPOLOGIES / "veth_pair.yaml")))
    sim.run_until(5_000_000)  # the timeline removed veth0's program at 3 ms
    drops = project(None, sim.frame()).drops
    assert drops.xdp_exception == ()  # veth_xdp_flush_bq fires xdp_bulk_tx, not xdp_exception
    (row,) = drops.xdp_bulk_tx
    assert (row.dev, row.key) == ("veth1", "ENXIO")
    assert "veth0 runs no XDP program" in row.explanation.cause
    assert (
        row.explanation.fix == "attach a program to veth0: ip link set dev veth0 xdp obj xdp_pass"
    )


def test_devmap_drops_made_by_the_egress_program_are_explained_as_such():
    from conftest import TOPOLOGIES

    from xdptui.sim.engine import Simulator
    from xdptui.topology_io import load_topology
    from xdptui.widgets.project import project

    sim = Simulator(load_topology(TOPOLOGIES / "devmap_egress.yaml"))
    sim.run_until(15_000_000)  # lesson step 2 (headless: 10 ms): key 0's egress is xdp_drop
    prev = sim.frame()
    sim.run_until(16_000_000)
    views = project(prev, sim.frame())
    rows = {(r.from_dev, r.to_dev): r for r in views.drops.devmap_xmit}
    why = rows[("eth0", "eth1")].explanation.cause
    assert "xdp_drop ran on each bulk toward eth1 at flush" in why
