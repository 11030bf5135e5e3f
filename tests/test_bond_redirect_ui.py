"""The redirect-into-a-bond story as a room sees it (topologies/bond_redirect.yaml): frames
redirected through a devmap entry that is a bond go down by ``bond_xdp_xmit`` to the active
slave, and when that slave goes down the Drops tab says why the devmap frees whole bulks.

The app runs on the real engine, paused and stepped; assertions are on the rendered panels,
checked against the engine's frame.
"""

from __future__ import annotations

from conftest import TOPOLOGIES
from test_app import open_tab, rendered
from textual.pilot import Pilot

from xdptui.app import XdpApp, make_app

BOND_REDIRECT = str(TOPOLOGIES / "bond_redirect.yaml")


def tab_text(app: XdpApp) -> str:
    screen = app.main_screen
    return "\n".join(rendered(p) for p in screen.panels_of(screen.active_tab))


async def polls(pilot: Pilot[None], n: int) -> None:
    for _ in range(n):
        await pilot.press(".")
    await pilot.pause()


async def test_frames_redirected_into_the_bond_go_down_by_bond_xdp_xmit_to_the_active_slave() -> (
    None
):
    app = make_app(BOND_REDIRECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await polls(pilot, 12)
        assert app.frame is not None
        xmit = app.frame.device("eth1").counter("xdp_xmit")
        assert xmit > 0 and app.frame.device("eth2").counter("xdp_xmit") == 0
        await open_tab(pilot, "paths")
        text = tab_text(app)
        assert "bond0 bq → bond_xdp_xmit" in text and "slaves (bond_xdp_xmit)" in text
        # nothing goes through the bond's stack path: no skb arrows at all
        assert "bond_start_xmit" not in text and "delivered up" not in text
        await open_tab(pilot, "bond")
        text = tab_text(app)
        assert "active slave eth1" in text
        (eth1,) = [line for line in text.splitlines() if line.split()[:1] == ["eth1"]]
        assert "active" in eth1
        (so_far,) = [line for line in text.splitlines() if line.split()[:2] == ["so", "far"]][:1]
        assert so_far.split()[-1] == str(xmit)  # XMIT IN of eth1, the active slave


async def test_the_drops_tab_says_the_active_slave_refused_the_bulk_until_the_mii_tick() -> None:
    app = make_app(BOND_REDIRECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await polls(pilot, 4)
        await pilot.press("n")  # step 2: eth1 down
        await pilot.pause()
        await polls(pilot, 8)
        assert app.frame is not None and not app.frame.device("eth1").up
        await open_tab(pilot, "drops")
        text = " ".join(tab_text(app).split())
        assert "eth0->bond0" in text
        assert "bond_xdp_xmit handed the first frame of whole bulks (drv_err) to the active " in (
            text
        )
        assert "slave (eth1)" in text and "ENETDOWN" in text and "miimon 10ms" in text
        # past the MII tick at 10 ms the bond fails over to eth2
        app.sim.run_until(11_000_000)
        await polls(pilot, 1)
        await open_tab(pilot, "bond")
        assert "active slave eth2" in tab_text(app)


def test_a_flush_the_down_slave_refused_carries_its_errno_in_the_stream_and_the_list() -> None:
    """``bq_xmit_all``'s ``trace_xdp_devmap_xmit(..., sent, drops, err)``: while eth1 is down
    and still the active slave, ``bond_xdp_xmit`` returns eth1's -ENETDOWN for each bulk:
    nothing sent, the whole bulk dropped, err ENETDOWN; before it, err is none. The event list
    names the errno."""
    from xdptui.sim.engine import Simulator
    from xdptui.widgets.event_list import describe

    sim = Simulator.from_file(BOND_REDIRECT)
    sim.exact = True
    sim.run_until(3_000_000)
    seen = sim.state.stream.seq
    before = [r for r in sim.events() if r["kind"] == "bq_flush" and r["to"] == "bond0"]
    assert before and all(r["err"] is None and r["drops"] == 0 for r in before)
    assert sim.submit("ip link set dev eth1 down").ok
    sim.run_until(6_000_000)  # the MII monitor sees it at 10 ms
    after = [r for r in sim.events(seen) if r["kind"] == "bq_flush" and r["to"] == "bond0"]
    assert after and all(r["err"] == "ENETDOWN" for r in after)
    assert all(r["sent"] == 0 and r["drops"] == r["frames"] for r in after)
    views = [e for e in sim.frame().stream if e.kind == "bq_flush" and e.target == "bond0"]
    _, detail = describe(views[-1])
    assert "refused by bond0's ndo_xdp_xmit (ENETDOWN)" in detail
