"""The app's `w`: the followed packet at each hop, or the focused device's next millisecond,
written as pcapng; and a replayed capture in the traffic editor (its rate only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import RawPcapNgReader, wrpcap
from textual.widgets import Input

from xdptui.app import make_app
from xdptui.screens.dialogs import TrafficScreen

ROOT = Path(__file__).resolve().parent.parent
DUAL_PORT = str(ROOT / "topologies" / "dual_port.yaml")
BIG = (160, 50)


def blocks(path: Path) -> list[tuple[str, str]]:
    return [
        (m.ifname.decode(), m.comments[0].decode() if m.comments else "")
        for _, m in RawPcapNgReader(str(path))
    ]


async def test_w_on_a_focused_device_writes_its_next_millisecond(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(DUAL_PORT, paused=True)
    async with app.run_test(size=BIG) as pilot:
        app.focus_device = "eth1"
        await pilot.press("w")
        await pilot.pause()
        (out,) = tmp_path.glob("xdptui-eth1-*.pcapng")
        got = blocks(out)
        assert got and {dev for dev, _ in got} == {"eth1"}
        assert any("returned XDP_TX" in c for _, c in got)  # its own polls' verdicts
        assert app.sim.now_ns == 0  # recorded on a fork: the app's clock did not move


async def test_w_on_a_followed_packet_writes_its_hops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(DUAL_PORT, paused=True)
    async with app.run_test(size=BIG) as pilot:
        app.actions.follow(app.sim.flows()[0])
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        (out,) = tmp_path.glob("xdptui-clients-a-0-*.pcapng")
        got = blocks(out)
        hops = app.stage.follow_view.hops  # type: ignore[union-attr]
        assert len(got) == len(hops) + 1  # one frame per hop, and the one after l4lb
        assert got[0][1].startswith("wire: ")


async def test_a_replayed_capture_offers_only_its_rate_in_the_traffic_editor(
    tmp_path: Path,
) -> None:
    frames = [Ether() / IP(dst="10.0.0.1") / UDP(dport=80 + k) for k in range(2)]
    for k, p in enumerate(frames):
        p.time = 1.0 + k * 1e-6
    wrpcap(str(tmp_path / "c.pcap"), frames)
    topo = tmp_path / "t.yaml"
    topo.write_text(
        "name: t\ndevices:\n  eth0: {type: nic}\n"
        "traffic:\n  - {name: cap, to: eth0, pcap: c.pcap, loop: true, rate: 1Mpps}\n"
    )
    app = make_app(str(topo), paused=True)
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("t")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TrafficScreen)
        rate, size, flows = (screen.query_one(f"#{n}", Input) for n in ("rate", "size", "flows"))
        assert (rate.disabled, size.disabled, flows.disabled) == (False, True, True)
        rate.value = "as-captured"
        await pilot.press("enter")
        await pilot.pause()
        assert app.sim.frame().sources[0].rate == "as-captured"
