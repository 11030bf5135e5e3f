"""Every shipped lesson, step by step, as a room sees it: the engine starts each step (as the
app's ``n`` does), runs a while in exact mode, and what the step's text says holds on the
engine's views -- the bond's mode and active slave, where the frames go, what is refused.

Rates are counter deltas over the step's run; each assertion follows from the kernel rule the
text names and the scenario's own numbers (offered rates, flow counts), never from a number
copied out of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import TOPOLOGIES

from xdptui.commands import validate
from xdptui.model.views import DeviceView, EventView, Frame, XskView
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology


@dataclass
class Step:
    """One lesson step as it ran: frames at its start and end, and what changed between."""

    index: int
    before: Frame
    after: Frame
    maps: dict[str, list[dict[str, Any]]]

    @property
    def seconds(self) -> float:
        return (self.after.t_ns - self.before.t_ns) / 1e9

    def dev(self, name: str) -> DeviceView:
        return self.after.device(name)

    def delta(self, dev: str, counter: str) -> int:
        return self.after.device(dev).counter(counter) - self.before.device(dev).counter(counter)

    def pps(self, dev: str, counter: str) -> float:
        return self.delta(dev, counter) / self.seconds

    def commands(self) -> list[EventView]:
        """The commands the step ran (its ``at: step`` timeline entries)."""
        return [e for e in self.after.events if e.t_ns == self.before.t_ns and e.origin != "system"]

    def tracepoint(self, kind: str, dev: str, key: str) -> int:
        def count(frame: Frame) -> int:
            tp = frame.tracepoints
            if kind == "redirect_err":
                return sum(e.count for e in tp.xdp_redirect_err if (e.dev, e.err) == (dev, key))
            if kind == "bulk_tx":  # drops of a veth's XDP_TX bulks, by error
                return sum(b.drops for b in tp.xdp_bulk_tx if (b.dev, b.err) == (dev, key))
            return sum(e.count for e in tp.xdp_exception if (e.dev, e.action) == (dev, key))

        return count(self.after) - count(self.before)

    def devmap(self, src: str, dst: str, field: str) -> int:
        def value(frame: Frame) -> int:
            rows = [
                d for d in frame.tracepoints.xdp_devmap_xmit if (d.from_dev, d.to_dev) == (src, dst)
            ]
            return int(getattr(rows[0], field)) if rows else 0

        return value(self.after) - value(self.before)


def walk(
    name: str, run_ms: tuple[float, ...], dumps: tuple[str, ...] = (), exact: bool = True
) -> Iterator[Step]:
    """Start each step of the first lesson in turn and run it ``run_ms[i]`` ms (exact mode,
    the reference, unless ``exact`` is False); at each step's end the maps named in ``dumps``
    are dumped (those that exist then), as ``r`` would."""
    topology = load_topology(TOPOLOGIES / f"{name}.yaml", validate_command=validate)
    sim = Simulator(topology, exact=exact, timed_steps=False)
    steps = topology.lessons[0].steps
    assert len(run_ms) == len(steps), "one run length per step"
    for i, ms in enumerate(run_ms):
        sim.start_step(0, i)
        before = sim.frame()
        assert before.lesson is not None and (before.lesson.lesson, before.lesson.step) == (0, i)
        sim.advance(int(ms * 1e6))
        probe = sim.fork()  # commands of its own would join the step's events
        maps = {m: dump(probe, m) for m in dumps if probe.submit(f"bpftool map show name {m}").ok}
        yield Step(i, before, sim.frame(), maps)


def dump(sim: Simulator, name: str) -> list[dict[str, Any]]:
    """``bpftool -j map dump name NAME``, as the step's ``r`` runs it."""
    res = sim.submit(f"bpftool -j map dump name {name}")
    assert res.ok, res.reply
    out: list[dict[str, Any]] = json.loads(res.reply)
    return out


def u64(hexes: list[str], at: int) -> int:
    return int.from_bytes(bytes(int(x, 16) for x in hexes[at : at + 8]), "little")


def offered(frame: Frame, device: str) -> float:
    return sum(s.pps for s in frame.sources if s.device == device)


def test_bond_modes() -> None:
    s1, s2, s3, s4 = walk("bond_modes", (1, 1, 1, 1))
    bond = s1.dev("bond0").bond
    assert bond is not None and (bond.mode, bond.xmit_hash_policy) == ("balance-xor", "layer2")
    # layer2: one hash for every flow -> every frame eth0 takes leaves by eth2
    rx = s1.delta("eth0", "rx_packets")
    assert rx > 0 and s1.delta("eth1", "tx_packets") == 0 and s1.delta("eth0", "tx_packets") == 0
    assert s1.delta("eth2", "xdp_xmit") == pytest.approx(rx, abs=64)
    # layer3+4: the 64 flows spread over the three slaves
    bond = s2.dev("bond0").bond
    assert bond is not None and bond.xmit_hash_policy == "layer3+4"
    rx = s2.delta("eth0", "rx_packets")
    for slave in ("eth0", "eth1", "eth2"):
        assert s2.delta(slave, "tx_packets") > rx / 6
    # vlan+srcmac refused while the program is loaded; nothing changes
    (cmd,) = s3.commands()
    assert "vlan+srcmac" in cmd.cmd and not cmd.ok and cmd.errno == "EOPNOTSUPP"
    bond = s3.dev("bond0").bond
    assert bond is not None and bond.xmit_hash_policy == "layer3+4"
    # a mode change with slaves: ENOTEMPTY, traffic goes on
    (cmd,) = s4.commands()
    assert "mode balance-rr" in cmd.cmd and cmd.errno == "ENOTEMPTY"
    bond = s4.dev("bond0").bond
    assert bond is not None and bond.mode == "balance-xor"
    assert s4.pps("eth0", "rx_packets") == pytest.approx(offered(s4.after, "eth0"), rel=0.05)


def test_bond_failover() -> None:
    s1, s2, s3 = walk("bond_failover", (5, 150, 150))
    bond = s1.dev("bond0").bond
    assert bond is not None and bond.active_slave == "eth0"
    # the backup still runs l4lb on all it receives; its XDP_TX goes to the active slave
    assert s1.delta("eth1", "xdp_redirect") == s1.delta("eth1", "rx_packets") > 0
    assert s1.delta("eth0", "xdp_xmit") == s1.devmap("eth1", "eth0", "sent") > 0
    # eth0 down: ENETDOWN until the next MII tick (miimon 100 ms), then eth1 active
    assert [c.cmd for c in s2.commands()] == ["ip link set dev eth0 down"]
    assert s2.tracepoint("redirect_err", "eth1", "ENETDOWN") > 0
    bond = s2.dev("bond0").bond
    assert bond is not None and bond.active_slave == "eth1"
    tick = next(e.t_ns for e in s2.after.events if "new active one" in e.cmd)
    assert s2.before.t_ns < tick <= s2.before.t_ns + 100_000_000
    # eth0 back as a backup: eth1 stays active, eth0's XDP_TX is now redirected to eth1
    bond = s3.dev("bond0").bond
    assert bond is not None and bond.active_slave == "eth1" and "eth0" not in bond.usable_slaves
    assert s3.delta("eth0", "xdp_redirect") > 0 and s3.devmap("eth0", "eth1", "sent") > 0
    assert s3.tracepoint("redirect_err", "eth1", "ENETDOWN") == 0


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fast"])
def test_bond_redirect(exact: bool) -> None:
    # step 2 starts at 4 ms; the MII monitor ticks every 10 ms from boot: eth1's failure is
    # seen at 10 ms. Step 3 starts at 14 ms; eth1's return is seen at the 20 ms tick.
    s1, s2, s3 = walk("bond_redirect", (4, 10, 10), exact=exact)
    offer = offered(s1.after, "eth0")
    # bond_xdp_xmit: every frame of every bulk goes to the active slave, eth1, one by one
    bond = s1.dev("bond0").bond
    assert bond is not None and (bond.mode, bond.active_slave) == ("active-backup", "eth1")
    sent = s1.devmap("eth0", "bond0", "sent")
    assert sent == pytest.approx(offer * s1.seconds, rel=0.02)
    assert s1.devmap("eth0", "bond0", "drops") == 0 and s1.devmap("eth0", "bond0", "err") == 0
    assert s1.delta("eth1", "xdp_xmit") == sent and s1.delta("eth2", "xdp_xmit") == 0
    assert s1.delta("eth1", "tx_packets") == pytest.approx(sent, abs=64)
    assert s1.delta("eth2", "tx_packets") == 0
    # nothing went through the bond's stack path: no skb up (bond_handle_frame), none down
    assert bond.rx_up == 0 and bond.stack_down == 0 and bond.tx_down >= sent
    # eth1 down: until the 10 ms tick the bond still picks eth1, which refuses the first frame
    # of each bulk (-ENETDOWN); bond_xdp_xmit returns the error, bq_xmit_all frees the bulk
    assert [c.cmd for c in s2.commands()] == ["ip link set dev eth1 down"]
    tick = next(e.t_ns for e in s2.after.events if "new active one" in e.cmd)
    assert tick == 10_000_000
    blind = (tick - s2.before.t_ns) / 1e9
    drops = s2.devmap("eth0", "bond0", "drops")
    assert drops == pytest.approx(offer * blind, rel=0.02)
    assert s2.devmap("eth0", "bond0", "err") == s2.delta("eth1", "xdp_xmit_errors") > 0
    assert s2.delta("eth1", "tx_packets") == 0
    # from the tick, eth2 is the active slave and sends the rest
    bond = s2.dev("bond0").bond
    assert bond is not None and bond.active_slave == "eth2"
    eth2 = s2.delta("eth2", "xdp_xmit")
    assert eth2 == s2.devmap("eth0", "bond0", "sent")
    assert eth2 == pytest.approx(offer * (s2.seconds - blind), rel=0.02)
    # eth1 back: a backup from the next tick (no primary), eth2 stays active
    assert [c.cmd for c in s3.commands()] == ["ip link set dev eth1 up"]
    bond = s3.dev("bond0").bond
    assert bond is not None and bond.active_slave == "eth2"
    assert s3.delta("eth1", "xdp_xmit") == 0 and s3.devmap("eth0", "bond0", "drops") == 0
    assert s3.delta("eth2", "xdp_xmit") == pytest.approx(offer * s3.seconds, rel=0.02)


def test_dual_port() -> None:
    # step 4 runs past the next MII tick (miimon 100 ms from boot; the step starts at 4.5 ms)
    s1, s2, s3, s4, s5 = walk("dual_port", (0.5, 2, 2, 96, 0.5))
    for s in (s1, s2):
        for port, other in (("eth0", "eth1"), ("eth1", "eth0")):
            # l4lb returns XDP_TX for everything; the bond keeps about half, redirects half
            assert s.delta(port, "xdp_tx") + s.delta(port, "xdp_redirect") == s.delta(
                port, "rx_packets"
            )
            share = s.delta(port, "xdp_tx") / s.delta(port, "rx_packets")
            assert 0.4 < share < 0.6
            assert s.delta(other, "xdp_xmit") == s.devmap(port, other, "sent")
    # cable pulled: usable_slaves has eth0 only; every flow of eth0 stays on eth0
    bond = s3.dev("bond0").bond
    assert bond is not None and bond.usable_slaves == ("eth0",)
    assert s3.delta("eth0", "xdp_redirect") == 0 and s3.delta("eth0", "xdp_tx") > 0
    assert s3.delta("eth1", "rx_packets") == 0 and s3.devmap("eth0", "eth1", "sent") == 0
    # plugged back: 802.3ad marked eth1 BOND_LINK_FAIL; usable again from the 100 ms MII tick
    bond = s4.dev("bond0").bond
    assert bond is not None and bond.usable_slaves == ("eth0", "eth1")
    back = [e.t_ns for e in s4.after.events if "eth1) link status definitely up" in e.cmd]
    assert back == [100_000_000]
    assert s4.devmap("eth0", "eth1", "sent") > 0 and s4.delta("eth1", "rx_packets") > 0
    # a slave takes no program of its own while its bond has one
    (cmd,) = s5.commands()
    assert cmd.errno == "EEXIST" and "upper device" in cmd.reply
    assert s5.dev("eth0").xdp is not None and s5.dev("eth0").xdp.program == "l4lb"


def test_devmap_egress() -> None:
    s1, s2, s3, s4, s5 = walk("devmap_egress", (1, 1, 1, 1, 1))
    # bulks of at most 16, flushed with xdp_pass: every redirect reaches eth1
    sent = s1.devmap("eth0", "eth1", "sent")
    assert sent == s1.delta("eth0", "xdp_redirect") - s1.dev("eth0").queues[0].occupancy * 0
    assert sent / s1.devmap("eth0", "eth1", "flushes") <= 16
    assert s1.delta("eth1", "xdp_xmit") == sent
    # egress xdp_drop: the bulks still flush, all frames are devmap drops, eth1 sends nothing
    assert s2.delta("eth0", "xdp_redirect") > 0
    assert s2.devmap("eth0", "eth1", "drops") == s2.devmap("eth0", "eth1", "egress_drops") > 0
    assert s2.devmap("eth0", "eth1", "sent") == 0 and s2.delta("eth1", "tx_packets") == 0
    # key deleted: the miss returns XDP_ABORTED, no redirect
    assert s3.delta("eth0", "xdp_aborted") == s3.delta("eth0", "rx_packets") > 0
    assert s3.tracepoint("exception", "eth0", "XDP_ABORTED") == s3.delta("eth0", "xdp_aborted")
    assert s3.devmap("eth0", "eth1", "flushes") == 0
    # restored
    assert s4.devmap("eth0", "eth1", "sent") > 0 and s4.devmap("eth0", "eth1", "drops") == 0
    # key 1: veth0, whose peer drops
    assert s5.devmap("eth0", "veth0", "sent") == s5.delta("veth1", "rx_packets") > 0
    assert s5.delta("veth1", "xdp_drop") == s5.delta("veth1", "rx_packets")


def test_line_rate() -> None:
    s1, s2, s3 = walk("line_rate", (1, 1, 1))
    offer = offered(s1.after, "eth0")
    rx = s1.pps("eth0", "rx_packets")
    missed = s1.pps("eth0", "rx_missed_errors")
    # the card's own limit (the bond seed's 116.5 Mpps, within 5 %): the rest is missed,
    # no ring overflows and no CPU is near busy
    assert rx == pytest.approx(116.5e6, rel=0.05)
    assert missed > 0.1 * offer and s1.delta("eth0", "rx_dropped") == 0
    assert max(c.busy for c in s1.after.cpus) < 0.5
    # 8 queues: still the card's limit, each CPU busier
    assert s2.pps("eth0", "rx_packets") == pytest.approx(rx, rel=0.1)
    assert s2.pps("eth0", "rx_missed_errors") > s2.pps("eth0", "rx_dropped")
    assert len(s2.dev("eth0").queues) == 8
    # one queue: the CPU is the limit, the ring overflows, nothing is missed any more
    assert len(s3.dev("eth0").queues) == 1
    assert s3.pps("eth0", "rx_packets") < 0.5 * rx
    assert s3.pps("eth0", "rx_dropped") > 10 * s3.pps("eth0", "rx_missed_errors")
    assert max(c.busy for c in s3.after.cpus) > 0.9


def test_ixgbe_many_cpus() -> None:
    s1, s2, s3 = walk("ixgbe_many_cpus", (1, 3, 1))
    cpus = {c.cpu: c for c in s1.after.cpus}
    # CPU c uses ring c % 64 under tx_lock; CPUs 64-95 share rings 0-31
    for c in (0, 31, 64, 95):
        ((dev, ring, locked),) = cpus[c].xdp_tx_rings
        assert (dev, ring, locked) == ("eth0", c % 64, True)
    assert s1.delta("eth0", "xdp_tx") == s1.delta("eth0", "rx_packets") > 0
    # detach + attach re-allocates the rings: the link blips, RX stops meanwhile
    assert [c.cmd for c in s2.commands()][:2] == [
        "ip link set dev eth0 xdp off",
        "ip link set dev eth0 xdp obj xdp_tx",
    ]
    assert s2.pps("eth0", "rx_packets") < 0.5 * s1.pps("eth0", "rx_packets")
    # a swap keeps the link
    xdp = s3.dev("eth0").xdp
    assert xdp is not None and xdp.program == "xdp2" and s3.dev("eth0").carrier
    assert s3.pps("eth0", "rx_packets") == pytest.approx(offered(s3.after, "eth0"), rel=0.05)


def test_veth_pair() -> None:
    s1, s2, s3 = walk("veth_pair", (1, 1, 1))
    # veth1 bounces everything back into veth0, which passes it up
    assert s1.delta("veth1", "xdp_tx") == s1.delta("veth1", "rx_packets") > 0
    assert s1.delta("veth0", "xdp_pass") == pytest.approx(s1.delta("veth1", "xdp_tx"), abs=2)
    # no program on veth0: veth1's XDP_TX bulks are refused at flush (veth_xdp_flush_bq: ENXIO,
    # xdp:xdp_bulk_tx), not xdp_exception
    assert s2.dev("veth0").xdp is None
    assert s2.delta("veth1", "xdp_tx_errors") == s2.delta("veth1", "xdp_tx") > 0
    assert s2.tracepoint("bulk_tx", "veth1", "ENXIO") == s2.delta("veth1", "xdp_tx_errors")
    assert s2.tracepoint("exception", "veth1", "XDP_TX") == 0
    assert s2.delta("veth0", "xdp_pass") == 0
    # back
    assert s3.delta("veth1", "xdp_tx_errors") == 0 and s3.delta("veth0", "xdp_pass") > 0


def test_tun_vm() -> None:
    s1, s2, s3, s4, s5 = walk("tun_vm", (1, 1, 1, 1, 1))
    fast, generic = s1.delta("tap0", "xdp_fast_path"), s1.delta("tap0", "xdp_generic_path")
    assert fast > generic > 0  # GSO (a tenth) builds an skb
    # xdp1 drops every write; tun_xdp_act counts a fast-path drop as rx_dropped only, and a
    # generic-path verdict other than PASS counts nothing
    assert s1.delta("tap0", "xdp_drop") == fast + generic
    assert s1.delta("tap0", "rx_dropped") == fast and s1.delta("tap0", "rx_packets") == 0
    # 4000-byte writes: all generic
    assert s2.delta("tap0", "xdp_fast_path") == 0 and s2.delta("tap0", "xdp_generic_path") > 0
    # small again: only GSO is generic
    fast, generic = s3.delta("tap0", "xdp_fast_path"), s3.delta("tap0", "xdp_generic_path")
    assert generic == pytest.approx(0.1 * (fast + generic), rel=0.2)
    # redirect to eth0: fast-path writes through eth0's ndo_xdp_xmit
    assert s4.delta("tap0", "xdp_redirect") > 0
    assert s4.delta("eth0", "xdp_xmit") == s4.devmap("tap0", "eth0", "sent") > 0
    # tap1's reader takes 1 Mpps of 3 Mpps: the rest are devmap drops
    read = s5.pps("tap1", "tx_packets")
    assert read == pytest.approx(1e6, rel=0.05)
    assert s5.devmap("eth1", "tap1", "drops") > s5.devmap("eth1", "tap1", "sent")
    assert 0 < s5.delta("tap1", "tx_dropped") < s5.devmap("eth1", "tap1", "drops")


def test_redirect_errors() -> None:
    s1, s2, s3, s4, s5, s6 = walk("redirect_errors", (1, 1, 1, 1, 1, 1))
    assert s1.devmap("eth0", "eth1", "sent") == s1.delta("eth1", "xdp_xmit") > 0
    # a miss: XDP_ABORTED, no redirect tracepoint
    assert s2.delta("eth0", "xdp_aborted") == s2.delta("eth0", "rx_packets") > 0
    assert s2.delta("eth0", "xdp_redirect") == 0
    # each failure where the kernel reports it
    for step, err in ((s3, "EOPNOTSUPP"), (s4, "ENETDOWN")):
        n = step.delta("eth0", "xdp_redirect")
        assert step.tracepoint("redirect_err", "eth0", err) == n > 0
        assert step.tracepoint("exception", "eth0", "XDP_REDIRECT") == n
    # MTU 1000: the 1500-byte half fails, the 64-byte half reaches eth2
    too_big = s5.tracepoint("redirect_err", "eth0", "EMSGSIZE")
    assert too_big == pytest.approx(s5.delta("eth0", "rx_packets") / 2, abs=2)
    assert s5.delta("eth2", "xdp_xmit") == pytest.approx(too_big, abs=32)
    # MTU 1500: every frame reaches eth2
    assert s6.tracepoint("redirect_err", "eth0", "EMSGSIZE") == 0
    assert s6.delta("eth2", "xdp_xmit") == pytest.approx(s6.delta("eth0", "rx_packets"), abs=32)


def test_bpf_reflector() -> None:
    s1, s2, s3 = walk("bpf_reflector", (1, 1, 1), dumps=("proto_stats",))
    # mac_swap.o: every frame XDP_TX, back out of eth0 byte for byte
    rx = s1.delta("eth0", "rx_packets")
    assert s1.delta("eth0", "xdp_tx") == rx > 0 and s1.delta("eth0", "xdp_pass") == 0
    assert s1.delta("eth0", "tx_packets") == rx
    assert s1.delta("eth0", "tx_bytes") == s1.delta("eth0", "rx_bytes")
    # count_proto.o, swapped in live at the step's start: every frame XDP_PASS, none sent,
    # and the per-CPU array holds exactly the frames passed since the swap (all UDP)
    assert [c.cmd.split("/")[-1] for c in s2.commands()] == ["count_proto.o sec xdp"]
    rx = s2.delta("eth0", "rx_packets")
    assert s2.delta("eth0", "xdp_pass") == rx > 0
    assert s2.delta("eth0", "xdp_tx") == 0 and s2.delta("eth0", "tx_packets") == 0
    (udp,) = [e for e in s2.maps["proto_stats"] if e["key"][0] == "0x11"]
    per_cpu = [u64(v["value"], 0) for v in udp["values"]]
    assert sum(per_cpu) == s2.after.device("eth0").counter("xdp_pass")
    assert sum(1 for n in per_cpu if n > 0) == 4  # one CPU per queue, each polled
    # encap_ipip.o: back out again, 20 bytes longer each
    rx = s3.delta("eth0", "rx_packets")
    assert s3.delta("eth0", "xdp_tx") == s3.delta("eth0", "tx_packets") == rx > 0
    assert s3.delta("eth0", "tx_bytes") - s3.delta("eth0", "rx_bytes") == 20 * rx


def test_bpf_router() -> None:
    s1, s2, s3 = walk("bpf_router", (1, 1, 1), dumps=("slot_stats",))
    # slots 0 and 1 redirect to eth1 and eth2, slots 2 and 3 (half of the 32 flows) pass
    for s in (s1, s2):
        rx = s.delta("eth0", "rx_packets")
        assert s.delta("eth0", "xdp_pass") == pytest.approx(rx / 2, abs=8)
        for port in ("eth1", "eth2"):
            sent = s.devmap("eth0", port, "sent")
            assert sent == pytest.approx(rx / 4, abs=8) and s.delta(port, "tx_packets") == sent
    # slot_stats: a quarter of the frames per slot (counted before the redirect), summed
    # over the CPUs, is every frame the program ran on
    counts = {
        e["key"][0]: sum(u64(v["value"], 0) for v in e["values"]) for e in s2.maps["slot_stats"]
    }
    total = s2.after.device("eth0").counter("rx_packets")
    assert sum(counts.values()) == total
    for slot in ("0x00", "0x01", "0x02", "0x03"):
        assert counts[slot] == pytest.approx(total / 4, abs=16)
    # slot 2 now eth1, with an egress object: eth1 half, eth2 a quarter, a quarter passed
    (cmd,) = s3.commands()
    assert "key 2 value eth1 egress" in cmd.cmd and cmd.ok
    rx = s3.delta("eth0", "rx_packets")
    assert s3.devmap("eth0", "eth1", "sent") == pytest.approx(rx / 2, abs=16)
    assert s3.devmap("eth0", "eth2", "sent") == pytest.approx(rx / 4, abs=16)
    assert s3.delta("eth0", "xdp_pass") == pytest.approx(rx / 4, abs=16)


def test_syn_flood() -> None:
    s1, s2, s3 = walk("syn_flood", (1, 1, 3))
    offer = offered(s1.after, "eth0")
    # 64 queues: every queue takes some of the flood, under 1 Mpps each; all of it XDP_DROP,
    # nothing lost before the program, every CPU far from busy
    per_queue = [q.rx_packets for q in s1.dev("eth0").queues]
    assert len(per_queue) == 64 and min(per_queue) > 0
    assert max(per_queue) / s1.seconds < 1e6
    assert s1.delta("eth0", "xdp_drop") == s1.delta("eth0", "rx_packets") > 0.9 * offer * 1e-3
    assert s1.delta("eth0", "rx_dropped") == s1.delta("eth0", "rx_missed_errors") == 0
    assert max(c.busy for c in s1.after.cpus) < 0.1
    # 8 queues: 8 CPUs, each busier, still no overflow
    assert len(s2.dev("eth0").queues) == 8
    busy = sorted(c.busy for c in s2.after.cpus)
    assert busy[-8] > 0.1 and busy[-1] < 0.5 and busy[-9] == 0
    assert s2.delta("eth0", "rx_dropped") == 0
    # one flow: one queue, one CPU busy all the time; its ring overflows, 63 idle
    assert len(s3.dev("eth0").queues) == 64
    busy = sorted(c.busy for c in s3.after.cpus)
    assert busy[-1] > 0.9 and busy[-2] < 0.05
    dropped = s3.pps("eth0", "rx_dropped")
    assert dropped > 0.2 * offer and s3.pps("eth0", "rx_missed_errors") == 0
    assert s3.pps("eth0", "xdp_drop") == pytest.approx(44e6, rel=0.1)


def test_every_shipped_lesson_is_walked_here() -> None:
    walked = {
        name.removeprefix("test_")
        for name, obj in globals().items()
        if name.startswith("test_") and callable(obj) and not name.startswith("test_every")
    }
    shipped = {p.stem for p in TOPOLOGIES.glob("*.yaml")}
    assert walked == shipped


def test_cpumap_spread() -> None:
    s1, s2, s3 = walk("cpumap_spread", (3, 3, 3))

    def kthread(step: Step, cpu: int, field: str) -> int:
        def value(frame: Frame) -> int:
            rows = [k for k in frame.tracepoints.xdp_cpumap_kthread if k.cpu == cpu]
            return int(getattr(rows[0], field)) if rows else 0

        return value(step.after) - value(step.before)

    def enq_drops(step: Step, to: tuple[int, ...] = (2, 3, 4, 5)) -> int:
        def value(frame: Frame) -> int:
            return sum(q.drops for q in frame.tracepoints.xdp_cpumap_enqueue if q.to_cpu in to)

        return value(step.after) - value(step.before)

    # every frame to CPU 2: its kthread is busy all the time (an skb a frame), the ring is
    # full and the rest is dropped at enqueue; CPU 0 only receives and enqueues
    rx = s1.delta("eth0", "rx_packets")
    assert s1.delta("eth0", "xdp_redirect") == rx > 0
    assert kthread(s1, 2, "busy_ns") > 0.95 * 3e6
    assert enq_drops(s1) > 0.4 * rx
    assert [kthread(s1, c, "processed") for c in (3, 4, 5)] == [0, 0, 0]
    # spread over 2-5: each takes a quarter, nothing is dropped but while CPU 2's full ring
    # drains its backlog; each new kthread sleeps now and then
    rx = s2.delta("eth0", "rx_packets")
    assert enq_drops(s2, (3, 4, 5)) == 0 and enq_drops(s2) < 0.01 * rx
    for cpu in (3, 4, 5):
        assert kthread(s2, cpu, "processed") == pytest.approx(rx / 4, rel=0.05)
        assert kthread(s2, cpu, "sched") > 0
    # CPU 5's entry runs xdp_drop: its quarter is dropped there, for far less CPU time
    (cmd,) = s3.commands()
    assert "key 5 value qsize 2048 prog xdp_drop" in cmd.cmd and cmd.ok
    assert kthread(s3, 5, "xdp_drop") == kthread(s3, 5, "processed") > 0
    assert kthread(s3, 5, "xdp_pass") == 0
    assert kthread(s3, 5, "busy_ns") < 0.3 * kthread(s3, 4, "busy_ns")


def test_af_xdp_fill() -> None:
    s1, s2, s3 = walk("af_xdp_fill", (2, 7, 3))

    def xsk(frame: Frame) -> XskView:
        (x,) = frame.xsks
        return x

    def gained(step: Step, counter: str) -> int:
        return xsk(step.after).counter(counter) - xsk(step.before).counter(counter)

    def queue0(step: Step) -> int:
        def q0(frame: Frame) -> int:
            return next(q.rx_packets for q in frame.device("eth0").queues if q.queue == 0)

        return q0(step.after) - q0(step.before)

    # the reader keeps up: every frame of queue 0 is received, the fill ring stays fed
    n = queue0(s1)
    assert gained(s1, "rx_packets") == n > 0
    assert gained(s1, "rx_fill_ring_empty_descs") == 0
    assert xsk(s1.after).ring("fill").entries > 0.9 * 2048
    assert s1.delta("eth0", "xdp_pass") > 0  # queue 1: no socket, XDP_PASS
    # the reader at half the rate: the 2048 chunks end up in the RX ring, the fill ring runs
    # dry and the rest is lost for want of a chunk (ENOMEM), with the RX ring not full
    n = queue0(s2)
    got, lost = gained(s2, "rx_packets"), gained(s2, "rx_fill_ring_empty_descs")
    assert got + lost == n and lost > 0.2 * n
    assert gained(s2, "rx_dropped") == lost and gained(s2, "rx_ring_full") == 0
    assert s2.tracepoint("redirect_err", "eth0", "ENOMEM") == lost
    after = xsk(s2.after)
    assert after.ring("fill").entries < 64 and dict(after.owners)["rx"] > 2048 - 64
    read = after.ring("rx").consumer - xsk(s2.before).ring("rx").consumer
    assert read == pytest.approx(500_000 * s2.seconds, rel=0.02)
    # the reader back at 2 Mpps: the backlog drains, losses stop early in the step
    assert gained(s3, "rx_fill_ring_empty_descs") < 0.1 * queue0(s3)
    assert xsk(s3.after).ring("fill").entries > 0.9 * 2048


def test_af_xdp_tx() -> None:
    """The writer at 2 Mpps, a kick every ``batch`` descriptors' time; the kernel sends at most
    32 a call (``__xsk_generic_xmit``), EAGAIN with descriptors left; the TX ring holds 512."""
    s1, s2, s3 = walk("af_xdp_tx", (2, 2, 2))

    def writer(step: Step) -> dict[str, int]:
        def of(frame: Frame) -> dict[str, int]:
            (x,) = frame.xsks
            assert x.writer is not None
            return {
                "sent": x.counter("tx_packets"),
                "empty": x.counter("tx_ring_empty_descs"),
                "kicks": x.writer.kicks,
                "eagain": x.writer.eagain,
                "not_written": x.writer.not_written,
                "ring": x.ring("tx").entries,
                "comp": x.ring("comp").entries,
            }

        a, b = of(step.before), of(step.after)
        return {k: b[k] - a[k] for k in a} | {"ring_after": b["ring"], "comp_after": b["comp"]}

    # batch 64: 32 a call, EAGAIN every call, the ring fills to 512 - 32 and half of every
    # batch is not written once it has
    w = writer(s1)
    assert w["kicks"] == pytest.approx(2e-3 * 2e6 / 64, abs=1)
    assert w["sent"] == 32 * w["kicks"] and w["eagain"] == w["kicks"]
    assert w["ring_after"] == 480 and w["comp_after"] == 32
    assert w["not_written"] == 64 * w["kicks"] - w["sent"] - 480
    assert s1.delta("vi", "xdp_pass") == s1.delta("vs", "tx_packets") == w["sent"]
    # batch 32: all written, all sent -- but the 480 left behind stay: EAGAIN every call
    w = writer(s2)
    assert w["not_written"] == 0 and w["eagain"] == w["kicks"] > 0
    assert w["sent"] == 32 * w["kicks"] and w["ring_after"] == 480
    # batch 16: 32 a call drains the backlog 16 a call, 30 calls; then every call empties it
    w = writer(s3)
    assert w["eagain"] == 480 // 16 - 1 and w["empty"] == w["kicks"] - w["eagain"] > 0
    assert w["sent"] == 480 + 16 * w["kicks"] and w["ring_after"] == 0
    assert w["not_written"] == 0
