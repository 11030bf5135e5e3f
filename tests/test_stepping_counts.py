"""While stepping, the panels show numbers, not ``-``: every rate over the simulated time so far
when that is shorter than the window, and beside it each count's total and what the last
``.`` (one poll) added. Also: the drops line counts the program's XDP_DROP, and bulk-avg is
over the window (none when nothing was flushed in it)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import TOPOLOGIES, sim_of
from test_app import rendered

from xdptui.app import XdpApp, make_app
from xdptui.sim.engine import Simulator
from xdptui.widgets.bond import BondPanel
from xdptui.widgets.drops import DropsPanel
from xdptui.widgets.paths import PathsPanel
from xdptui.widgets.project_paths import project_paths
from xdptui.widgets.rates import RatesView
from xdptui.widgets.sparklines import SparklinesPanel

SIZE = (120, 40)
DUAL_PORT = str(TOPOLOGIES / "dual_port.yaml")


def engine(app: XdpApp) -> Simulator:
    assert isinstance(app.sim, Simulator)
    return app.sim


def last_poll(app: XdpApp) -> dict[str, Any]:
    return [e for e in engine(app).events() if e["kind"] == "napi_poll"][-1]


async def test_34_steps_on_dual_port_show_rates_and_counts_in_every_panel() -> None:
    """The lesson's first 34 polls (~58 µs): Rates, Paths, Drops and the Bond tab's
    XDP_TX-vs-redirect split all read numbers."""
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(34):
            await pilot.press(".")
        await pilot.pause()
        frame = app.frame
        assert frame is not None and frame.exact and frame.t_ns < 100_000
        screen = app.main_screen
        paths = rendered(screen.query_one(PathsPanel))
        rates = rendered(screen.query_one(SparklinesPanel))
        assert "wire" in paths and " - " not in paths.split("wire", 1)[1].split("\n", 1)[0]
        eth0_rates = next(line for line in rates.splitlines() if line.startswith("eth0"))
        assert "-" not in eth0_rates.replace("eth0", "")  # rates and counts, no dash
        await pilot.press("5")
        await pilot.pause()
        bond = rendered(screen.query_one(BondPanel))
        assert "so far" in bond and "+ step" in bond
        assert "[················]" not in bond  # the split is drawn
        await pilot.press("4")
        await pilot.pause()
        drops = rendered(screen.query_one(DropsPanel))
        summary = next(line for line in drops.splitlines() if "Summary" in line)
        assert "-" not in summary and "redir (" in summary


async def test_one_dot_adds_exactly_that_polls_frames_to_its_devices_arrow() -> None:
    app = make_app(DUAL_PORT)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(6):
            await pilot.press(".")
            await pilot.pause()
            poll = last_poll(app)
            views = app.stage.projection()
            assert views is not None and views.paths.counting
            boxes = {b.name: b for b in views.paths.boxes[0].children}  # bond0's slaves
            for name, box in boxes.items():
                assert box.inbound is not None
                want = poll["frames"] if name == poll["dev"] else 0
                assert box.inbound.step == want  # NICs count rx_packets as the poll takes them
                assert box.inbound.total == dict(app.frame.device(name).counters)["rx_packets"]


def test_a_rate_is_over_the_time_so_far_when_that_is_shorter_than_the_window() -> None:
    sim = Simulator.from_file(DUAL_PORT)
    sim.exact = True
    first = sim.frame()
    sim.run_until(20_000)  # 20 µs: shorter than any window
    now = sim.frame()
    rates = RatesView(first, now)
    got = dict(now.device("eth0").counters)["rx_packets"]
    assert rates.window_ns == 20_000
    assert rates.counter("eth0", "rx_packets", got) == got * 1e9 / 20_000


def test_the_drops_line_counts_the_programs_xdp_drop() -> None:
    """A port whose program drops everything: its drop rate is the XDP_DROP rate (the Rates
    panel said 'all drops 0pps' beside 'XDP_DROP 1Mpps')."""
    from xdptui.widgets.history import device_rates, host_drops

    sim = sim_of(
        """
        name: drop all
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: xdp_drop}
        traffic:
          - {name: g, to: eth0, rate: 1Mpps}
        """
    )
    sim.run_until(1_000_000)
    before = sim.frame()
    sim.run_until(2_000_000)
    after = sim.frame()
    rates = RatesView(before, after)
    _, _, drops = device_rates(rates, after, "eth0")
    assert drops is not None and abs(drops - 1_000_000) < 10_000
    host = host_drops(rates, after)
    assert host is not None and abs(host - 1_000_000) < 10_000


def test_bulk_avg_is_over_the_window_and_absent_when_nothing_flushed() -> None:
    sim = sim_of(
        """
        name: redirect then stop
        devices:
          eth0: {type: nic, driver: ice, queues: 1,
                 xdp: {program: redirect_map, params: {map: out}}}
          eth1: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
        maps:
          out: {type: devmap, max_entries: 4, entries: {0: eth1}}
        traffic:
          - {name: g, to: eth0, rate: 5Mpps, flows: 64}
        timeline:
          - {at: 2ms, do: "pktgen eth0 stop"}
        """
    )
    sim.run_until(1_000_000)
    a = sim.frame()
    sim.run_until(1_500_000)
    b = sim.frame()
    (arrow,) = [v for v in project_paths(a, b).boxes[0].verdicts if v.label == "XDP_REDIRECT"]
    assert "bulk-avg" in arrow.note
    sim.run_until(3_000_000)
    c = sim.frame()
    sim.run_until(3_500_000)
    d = sim.frame()  # nothing redirected between c and d
    (idle,) = [v for v in project_paths(c, d).boxes[0].verdicts if v.label == "XDP_REDIRECT"]
    assert idle.rate == 0 and "bulk-avg" not in idle.note


# --- ixgbe with more than 64 CPUs: rings shared, the lock's cost -----------------------------


async def test_j_lists_the_cpus_sharing_each_locked_ring_as_the_report_does() -> None:
    from xdptui.widgets.cpus import CpuMap

    app = make_app(str(TOPOLOGIES / "ixgbe_many_cpus.yaml"))
    async with app.run_test(size=SIZE) as pilot:
        engine(app).advance(300_000)
        app.stage.refresh()
        rings = engine(app).report()["devices"]["eth0"]["xdp_tx_rings"]
        panel = app.main_screen.query_one(CpuMap)
        for ring in rings[:3]:
            await pilot.press("j")
            await pilot.pause()
            assert app.main_screen.active_tab == "rings"
            assert panel.ring == f"eth0:tx{ring['ring']}"
            text = rendered(panel)
            listed = sorted(
                int(line.split()[0].lstrip("▶").removeprefix("cpu"))
                for line in text.splitlines()
                if line.strip().lstrip("▶").startswith("cpu")
            )
            assert listed == ring["cpus"] and ring["locked"]
            assert any(c >= 64 for c in listed)  # CPU 64 and up, beside their partner


def test_the_lock_share_of_the_cpus_adds_up_to_every_xdp_tx_frame_times_the_lock() -> None:
    """ixgbe_many_cpus XDP_TXes every frame into rings shared by two CPUs: the CPUs' lock
    shares add up to the port's XDP_TX rate times the cost of one lock (uncontended plus one
    more sharer, sim/costs.py)."""
    from xdptui.sim import costs
    from xdptui.widgets.project import lock_shares

    sim = Simulator.from_file(str(TOPOLOGIES / "ixgbe_many_cpus.yaml"))
    sim.run_until(2_000_000)
    before = sim.frame()
    sim.run_until(4_000_000)
    after = sim.frame()
    rates = RatesView(before, after)
    shares = lock_shares(after, rates)
    assert len(shares) == 96
    tx = (
        dict(after.device("eth0").counters)["xdp_tx"]
        - dict(before.device("eth0").counters)["xdp_tx"]
    )
    lock_ns = costs.LOCK_UNCONTENDED + costs.LOCK_PER_SHARER * (2 - 1)
    want = tx / 0.002 * lock_ns / 1e9
    assert abs(sum(shares.values()) - want) < 0.02 * want


def test_a_veths_refusals_count_once_in_its_drops_and_the_hosts() -> None:
    """eth0's two queues redirect 6 Mpps into veth0; veth1 passes what its ring takes and
    its ring refuses the rest. A refusal is veth0's ``xdp_xmit_errors`` and ``tx_dropped`` and
    veth1's ``rx_dropped`` (``veth_get_stats64``): the Rates panel once summed all three, so
    the host lost three times what it lost. What the host loses is what eth0's source
    offered less what reached veth1's program (in a steady state: the rings' fill holds)."""
    from xdptui.widgets.history import device_rates, host_drop_counts, host_drops

    sim = sim_of(
        """
        name: a port into a veth
        cpus: 2
        devices:
          eth0: {type: nic, driver: i40e, queues: 2,
                 xdp: {program: redirect, params: {dev: veth0}}}
          veth0: {type: veth, peer: veth1}
          veth1: {type: veth, peer: veth0, xdp: xdp_pass}
        traffic:
          - {name: g, to: eth0, rate: 6Mpps, flows: 16, src_port: 1000-1015}
        """
    )
    sim.run_until(2_000_000)
    before = sim.frame()
    sim.run_until(12_000_000)  # (ten ms: what the rings hold changes by a few hundred at most)
    after = sim.frame()
    rates = RatesView(before, after)
    got = rates.counter("veth1", "xdp_pass", dict(after.device("veth1").counters)["xdp_pass"])
    assert got is not None and 2e6 < got < 5e6  # veth1's CPU cannot take all of it
    lost = 6e6 - got
    host = host_drops(rates, after)
    assert host is not None and host == pytest.approx(lost, rel=0.02)
    _, _, veth0 = device_rates(rates, after, "veth0")
    redirected = rates.counter("eth0", "xdp_redirect", after.device("eth0").counter("xdp_redirect"))
    assert veth0 is not None and redirected is not None
    assert veth0 == pytest.approx(redirected - got, rel=0.02)  # what veth1's ring refused
    total, _ = host_drop_counts(rates, after)
    c = {d.name: dict(d.counters) for d in after.devices}
    assert total == c["veth0"]["tx_dropped"] + c["eth0"]["rx_dropped"]
