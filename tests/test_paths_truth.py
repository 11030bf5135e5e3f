"""What the Paths tab draws is what the kernel did: a bond box draws only the frames that went
through the bond itself (its ``rx_packets``/``tx_packets`` are its slaves' sums), a redirect
into a bond is ``bond_xdp_xmit``, and a tap's writes are the writer's ``tun_get_user`` calls
(their own event kind), not NAPI polls."""

from __future__ import annotations

from typing import Any

from conftest import TOPOLOGIES, sim_of
from test_app import rendered

from xdptui.app import make_app
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology
from xdptui.widgets.paths import PathsPanel
from xdptui.widgets.project_paths import Arrow, DeviceBox, project_paths

SIZE = (120, 40)


def frames(sim: Simulator, t1: int, t2: int) -> tuple[Any, Any]:
    sim.run_until(t1)
    before = sim.frame()
    sim.run_until(t2)
    return before, sim.frame()


def box(boxes: tuple[DeviceBox, ...], name: str) -> DeviceBox:
    for b in boxes:
        if b.name == name:
            return b
        try:
            return box(b.children, name)
        except KeyError:
            pass
    raise KeyError(name)


def arrows(b: DeviceBox) -> list[Arrow]:
    return [a for a in (b.inbound, *b.verdicts, b.outbound) if a is not None]


def test_a_bond_whose_slaves_xdp_tx_everything_draws_no_stack_traffic() -> None:
    """dual_port: l4lb XDP_TXes every frame, so nothing goes up or down through bond0
    (rx_up = tx_down = 0), although its rx_packets/tx_packets (its slaves' sums) are busy."""
    sim = Simulator(load_topology(TOPOLOGIES / "dual_port.yaml"))
    before, after = frames(sim, 1_000_000, 2_000_000)
    bond = after.device("bond0")
    assert bond.bond is not None and bond.bond.rx_up == bond.bond.tx_down == 0
    assert dict(bond.counters)["rx_packets"] > 0  # bond_get_stats: the slaves' RX
    view = project_paths(before, after)
    assert arrows(box(view.boxes, "bond0")) == []
    assert arrows(box(view.boxes, "eth0"))  # the slaves keep theirs


def test_a_bond_draws_frames_delivered_up_and_sent_down_by_the_stack() -> None:
    sim = sim_of(
        """
        name: bond up and down
        devices:
          eth0: {type: nic, driver: ice, queues: 1, xdp: xdp_pass}
          eth1: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: balance-xor, slaves: [eth0, eth1]}
        traffic:
          - {name: in, to: eth0, rate: 1Mpps}
          - {name: out, from: bond0, rate: 500Kpps}
        """
    )
    before, after = frames(sim, 1_000_000, 2_000_000)
    info = after.device("bond0").bond
    assert info is not None and info.rx_up > 0 and info.stack_down == info.tx_down > 0
    bond = box(project_paths(before, after).boxes, "bond0")
    assert bond.inbound is not None and bond.inbound.target == "stack (delivered up)"
    assert bond.inbound.rate is not None and abs(bond.inbound.rate - 1_000_000) < 20_000
    assert bond.outbound is not None and bond.outbound.target == "slaves (bond_start_xmit)"
    assert bond.outbound.rate is not None and abs(bond.outbound.rate - 500_000) < 20_000
    assert bond.verdicts == ()  # nothing was redirected into it


def test_a_redirect_into_a_bond_is_bond_xdp_xmit_not_bond_start_xmit() -> None:
    sim = sim_of(
        """
        name: into a bond
        devices:
          eth0: {type: nic, driver: ice, queues: 1}
          eth1: {type: nic, driver: ice, queues: 1}
          bond0: {type: bond, mode: balance-xor, xmit_hash_policy: layer3+4,
                  slaves: [eth0, eth1], xdp: xdp_pass}
          eth2: {type: nic, driver: ice, queues: 1,
                 xdp: {program: redirect_map, params: {map: out}}}
        maps:
          out: {type: devmap, max_entries: 4, entries: {0: bond0}}
        traffic:
          - {name: in, to: eth2, rate: 2Mpps, flows: 64}
        """
    )
    before, after = frames(sim, 1_000_000, 2_000_000)
    info = after.device("bond0").bond
    assert info is not None and info.tx_down > 0 and info.stack_down == 0
    view = project_paths(before, after)
    (into,) = [a for a in box(view.boxes, "eth2").verdicts if a.label == "XDP_REDIRECT"]
    assert into.target == "bond0 bq → bond_xdp_xmit"
    bond = box(view.boxes, "bond0")
    assert bond.outbound is None  # no skb went down through bond_start_xmit
    (xmit,) = bond.verdicts
    assert xmit.target == "slaves (bond_xdp_xmit)" and xmit.total == info.tx_down
    assert xmit.rate is not None and abs(xmit.rate - 2_000_000) < 40_000


def test_a_taps_way_in_is_what_the_writer_wrote_whatever_the_program_did() -> None:
    """tun_vm: the VM writes 2 Mpps into tap0, whose xdp1 drops them all; tun_xdp_act leaves
    rx_packets at 0 and counts the drops in rx_dropped, which is not a second loss."""
    sim = Simulator(load_topology(TOPOLOGIES / "tun_vm.yaml"), trust=True)
    before, after = frames(sim, 1_000_000, 2_000_000)
    tap0 = box(project_paths(before, after).boxes, "tap0")
    assert dict(after.device("tap0").counters)["rx_packets"] == 0
    assert tap0.inbound is not None and tap0.inbound.label == "userspace write"
    assert tap0.inbound.rate is not None and abs(tap0.inbound.rate - 2_000_000) < 20_000
    assert tap0.inbound.losses == ()
    (drop,) = [a for a in tap0.verdicts if a.label == "XDP_DROP"]
    assert drop.rate is not None and abs(drop.rate - 2_000_000) < 20_000
    assert any(note.startswith("rx_dropped ") and "tun_xdp_act" in note for note in tap0.notes)


def test_tap_writes_are_their_own_event_kind_on_the_writers_cpu() -> None:
    sim = Simulator(load_topology(TOPOLOGIES / "tun_vm.yaml"), trust=True, exact=True)
    sim.run_until(200_000)
    events = sim.events()
    writes = [e for e in events if e["kind"] == "tun_write"]
    polls = [e for e in events if e["kind"] == "napi_poll"]
    assert writes and all(e["dev"] in ("tap0", "tap1") for e in writes)
    assert all(e["dev"] not in ("tap0", "tap1") for e in polls)  # no tap "polls"
    assert all(e["frames"] > 0 for e in writes)  # no empty 1 ns "poll" after a write
    first = writes[0]
    assert set(first) >= {"t_ns", "cpu", "dev", "queue", "frames", "writer", "fast", "generic"}
    assert first["fast"] + first["generic"] == first["frames"]
    assert sum(e["verdicts"].get("XDP_DROP", 0) for e in writes if e["dev"] == "tap0") == sum(
        e["frames"] for e in writes if e["dev"] == "tap0"
    )


async def test_the_paths_tab_draws_no_bond_traffic_on_dual_port() -> None:
    app = make_app(str(TOPOLOGIES / "dual_port.yaml"), paused=True, speed_ns_per_s=1_000_000_000)
    async with app.run_test(size=SIZE) as pilot:
        sim = app.sim
        assert isinstance(sim, Simulator)
        sim.advance(2_000_000)
        app.stage.refresh()
        await pilot.pause()
        text = rendered(app.screen.query_one(PathsPanel))
        assert "bond_start_xmit" not in text and "delivered up" not in text
        assert "XDP_TX" in text  # the slaves' own paths are there


def test_a_veths_refused_frames_are_not_called_a_full_ring_when_its_program_is_gone() -> None:
    """veth_pair's step 2 takes veth0's program away: veth1's XDP_TX into veth0 fails with
    -ENXIO (no NAPI on veth0), which veth0 shows as rx_dropped with its ring empty; the Paths
    tab names the ways a veth without a native program refuses, not a full ring."""
    sim = Simulator(load_topology(TOPOLOGIES / "veth_pair.yaml"))
    before, after = frames(sim, 4_000_000, 5_000_000)  # (headless: step 2 at 3 ms)
    assert dict(after.device("veth0").counters)["rx_dropped"] > 0
    (loss,) = box(project_paths(before, after).boxes, "veth0").inbound.losses  # type: ignore[union-attr]
    assert loss.what == "no XDP here, backlog full or down (rx_dropped)" and loss.total > 0


def test_a_ports_way_in_shows_what_its_card_missed() -> None:
    """line_rate's E810 card cannot take all it is offered: its DMA falls behind and misses
    frames before any ring (``rx_missed_errors``). The wire's arrow in the Paths tab carries
    what the rings took, so the missed frames are its loss, beside the rings' own."""
    sim = Simulator(load_topology(TOPOLOGIES / "line_rate.yaml"))
    before, after = frames(sim, 4_000_000, 5_000_000)
    for dev in after.devices:
        missed = dict(dev.counters).get("rx_missed_errors", 0)
        if dev.type != "nic" or not missed:
            continue
        inbound = box(project_paths(before, after).boxes, dev.name).inbound
        assert inbound is not None
        shown = {loss.what: loss.total for loss in inbound.losses}
        assert shown["NIC limit, missed (rx_missed_errors)"] == missed
        break
    else:
        raise AssertionError("line_rate's card missed nothing")
