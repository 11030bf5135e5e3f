"""The numbers on screen, read off the panels as a room reads them: the same rate at every clock
speed (every rate is over a window of simulated time), and the same value for the same thing
in every tab (one view, :class:`~xdptui.widgets.rates.RatesView`, feeds them all).

The app runs on the real engine with a clock the test moves: each tick is 0.25 s of real time
(the pacer's cap on one tick) or a frame period at real time.
"""

from __future__ import annotations

import re

import pytest
from conftest import TOPOLOGIES
from fake_sim import FakeClock
from test_app import header, rendered
from textual.pilot import Pilot

from xdptui.app import REAL_TIME, XdpApp
from xdptui.commands import validate
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

SIZE = (160, 45)
SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def value(text: str) -> float:
    """``4.96Mpps`` / ``4.96M/s`` / ``0pps`` as frames per second."""
    m = re.fullmatch(r"([\d.]+)([KMG]?)(?:pps|/s)", text)
    assert m is not None, text
    return float(m.group(1)) * SI[m.group(2)]


def found(pattern: str, text: str) -> list[float]:
    """Every rate the pattern's group captures in ``text``, line by line."""
    return [value(m.group(1)) for m in re.finditer(pattern, text, re.MULTILINE)]


def app_on(name: str, speed: int, clock: FakeClock) -> XdpApp:
    """The app as ``make_app`` builds it, on a clock the test moves, paused at t = 0."""
    topology = load_topology(TOPOLOGIES / f"{name}.yaml", validate_command=validate)
    return XdpApp(
        Simulator(topology, timed_steps=False),
        paused=True,
        speed_ns_per_s=speed,
        clock=clock,
        topology=topology,
    )


async def run(pilot: Pilot[None], app: XdpApp, clock: FakeClock, sim_ns: int, dt: float) -> None:
    """Let the clock run until ``sim_ns`` of simulated time, ``dt`` real seconds a tick."""
    app.paused = False
    await pilot.pause()
    assert app.frame is not None
    while app.frame.t_ns < sim_ns:
        clock.t += dt
        app.tick()
    app.paused = True
    await pilot.pause()


async def tab_text(pilot: Pilot[None], app: XdpApp, key: str) -> str:
    await pilot.press(key)
    await pilot.pause()
    return "\n".join(rendered(p) for p in app.main_screen.panels_of(app.main_screen.active_tab))


@pytest.mark.parametrize(
    ("speed", "dt", "sim_ns", "window"),
    [
        (1_000, 0.25, 1_150_000, r"rates/1(\.0\d)?ms"),  # 1 µs/s: 4,600 ticks, exact mode
        (1_000_000, 0.25, 3_000_000, r"rates/1(\.0\d)?ms"),  # 1 ms/s, exact mode
        # real time, fast mode: paused, the frame is the present, off the steps' grid, so the
        # window reaches back to the sample before it (100 ms and up to a sample's gap more)
        (REAL_TIME, 1 / 30, 400_000_000, r"rates/1[0-2]\dms"),
    ],
    ids=["1us/s", "1ms/s", "real-time"],
)
async def test_dual_port_shows_the_offered_load_at_every_speed(
    speed: int, dt: float, sim_ns: int, window: str
) -> None:
    """10 Mpps offered on each port: RX on Paths (the wire arrow), Devices and the Rates
    sparklines read 10 Mpps within 5 % at 1 µs/s, 1 ms/s and real time."""
    clock = FakeClock()
    app = app_on("dual_port", speed, clock)
    async with app.run_test(size=SIZE) as pilot:
        await run(pilot, app, clock, sim_ns, dt)
        assert app.frame is not None and app.frame.exact == (speed != REAL_TIME)
        assert re.search(window, header(app))  # the window's length, about
        offered = [s.pps for s in app.frame.sources]
        assert offered == [10e6, 10e6]
        paths = await tab_text(pilot, app, "1")
        wire = found(r"wire\s+━+\s+(\S+)[^▶\n]* ━+▶ RX", paths)
        sparks = found(r"^eth\d\s+RX\s+\S*\s+(\S+pps)", paths)
        devices = await tab_text(pilot, app, "2")
        rx = found(r"^eth\d .*?l4lb native\s+(\S+pps)", devices)
        assert len(wire) == len(sparks) == len(rx) == 2
        for shown in (*wire, *sparks, *rx):
            assert shown == pytest.approx(10e6, rel=0.05)


async def test_every_tab_shows_the_same_numbers_on_devmap_egress() -> None:
    """Step 2 of devmap_egress (key 0's egress program drops every bulk): what eth0 redirects,
    what the egress program drops and what eth1 sends read the same on Paths, Rates,
    Devices, Counters, Rings and Drops."""
    clock = FakeClock()
    app = app_on("devmap_egress", 1_000_000, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")  # step 2: key 0 gets egress xdp_drop
        await pilot.pause()
        await run(pilot, app, clock, 3_000_000, 0.25)
        assert "rates/1ms" in header(app)

        paths = await tab_text(pilot, app, "1")
        (redirected,) = found(r"XDP_REDIRECT ━+\s+(\S+)[^▶\n]* ━+▶ eth1 bq", paths)
        (egress_dropped,) = found(r"✗ dropped by egress xdp_drop .*? (\S+pps)  total", paths)
        (all_drops,) = found(r"^all drops\s+\S*\s+(\S+pps)", paths)
        eth1_tx = found(r"^│ TX\s+╌+\s+(\S+)[^▷\n]* ╌+▷ wire", paths)  # eth0's and eth1's

        devices = await tab_text(pilot, app, "2")
        row = r"^{dev} .*?native\s+" + r"(\S+pps)\s+" * 8
        eth0 = re.search(row.format(dev="eth0"), devices, re.MULTILINE)
        eth1 = re.search(row.format(dev="eth1"), devices, re.MULTILINE)
        assert eth0 is not None and eth1 is not None
        # RX RX_DROP PASS DROP TX REDIR XMIT TX_OUT
        eth0_redir = value(eth0.group(6))
        eth1_xmit, eth1_out = value(eth1.group(7)), value(eth1.group(8))
        (counter_redirect,) = found(r"^  xdp_redirect\s+(\S+pps)", devices)

        rings = await tab_text(pilot, app, "3")
        (bq_dropped,) = found(r"bq cpu0 eth0→eth1 .*✗(\S+pps)", rings)

        drops = await tab_text(pilot, app, "4")
        summary = re.search(
            r"Summary\s+(\S+) redir(?: \([^)]*\))?\s+(\S+) err,drop(?: \([^)]*\))?\s+(\S+) xmit",
            drops,
        )
        assert summary is not None
        devmap = re.search(r"^  eth0->eth1\s+(\S+)\s+(\S+)\s+", drops, re.MULTILINE)
        assert devmap is not None

        assert redirected > 4e6  # 5 Mpps offered, all redirected
        assert (
            redirected
            == eth0_redir
            == counter_redirect
            == value(summary.group(1))
            == egress_dropped
            == bq_dropped
            == all_drops
            == value(summary.group(2))
            == value(devmap.group(2))
        )
        assert eth1_xmit == eth1_out == value(summary.group(3)) == value(devmap.group(1)) == 0
        assert eth1_tx == [0.0, 0.0]
