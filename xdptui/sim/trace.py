"""Follow one frame through the data path: per-packet identity only for the traced packet.

``trace_frame`` takes the next frame of a flow and walks it through the state the simulator is
in now -- the RX queue RSS picks and the CPU that polls it, how long the ring in front of it
takes to drain, the program's verdict, the bond's or the devmap's choice, the TX ring it joins
and when it leaves -- with simulated timestamps. The walk reads the compiled per-entry paths
the data path uses, so it shows the same decisions the counters count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdptui.model.errors import Errno
from xdptui.model.views import FlowInfo, TraceHop
from xdptui.sim import costs
from xdptui.sim.bond import Bond, BondLogic
from xdptui.sim.datapath import NAPI_BUDGET
from xdptui.sim.netdev import MODE_DRV, MODE_SKB, NetDev, Nic, Veth
from xdptui.sim.programs import XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX, action_name
from xdptui.sim.tun import Tun
from xdptui.sim.world import Source

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator

MAX_HOPS = 24


def _ip(v: int) -> str:
    return ".".join(str((v >> s) & 255) for s in (24, 16, 8, 0))


def list_flows(sim: Simulator, limit: int) -> tuple[FlowInfo, ...]:
    """The first ``limit`` flows of every source, labelled with their 5-tuple."""
    out: list[FlowInfo] = []
    e = sim.world.entries
    for src in sim.world.sources:
        for i in range(min(limit, src.spec.flows)):
            j = src.offset + i
            label = (
                f"{src.spec.name} #{i}: {src.spec.proto} {_ip(int(e.src_ip[j]))}:"
                f"{int(e.src_port[j])} -> {_ip(int(e.dst_ip[j]))}:{int(e.dst_port[j])}"
            )
            out.append(FlowInfo(src.spec.name, i, label))
    return tuple(out)


class _Walk:
    def __init__(self, sim: Simulator, entry: int) -> None:
        self.sim = sim
        self.w = sim.world
        self.dp = sim.datapath
        self.e = entry
        self.hops: list[TraceHop] = []

    def hop(self, t: float, dev: str, stage: str, detail: str) -> None:
        self.hops.append(TraceHop(round(t), dev, stage, detail))

    def rx(self, dev: NetDev, t: float, cpu: int | None = None, depth: int = 0) -> None:
        """Arrival on ``dev``'s RX: queue, poll, program."""
        if depth > 6 or len(self.hops) > MAX_HOPS:
            self.hop(t, dev.name, "drop", "path too long (a loop?)")
            return
        if not dev.running:
            self.hop(t, dev.name, "drop", "device is down: the frame is never received")
            return
        comp = self.dp.compiled.get(dev.name)
        if comp is None:
            return
        cost = float(comp.cost[self.e])
        if dev.rx is not None and cpu is None:
            if isinstance(dev, Nic):
                q = int(dev.queue_of_entry[self.e])
            else:
                q = int(self.w.entries.rss_hash[self.e] % dev.rx.count)
            cpu = int(dev.rx.irq_cpu[q])
            occ = int(dev.rx.ring[q].sum())
            self.hop(
                t,
                dev.name,
                "rx_ring",
                f"RSS queue {q} (ring {occ}/{dev.rx.size}), IRQ on cpu {cpu}",
            )
            if occ >= dev.rx.size:
                self.hop(t, dev.name, "drop", f"queue {q}'s ring is full: rx_dropped")
                return
            wait = occ * cost
            if isinstance(dev, Nic):
                assert dev.driver is not None
                wait += dev.driver.irq_ns
            t += wait
            if not isinstance(dev, Tun):
                self.hop(t, dev.name, "napi", f"polled by cpu {cpu} (budget {NAPI_BUDGET})")
        cpu = cpu or 0
        if comp.mode is None:
            self.hop(t + cost, dev.name, "stack", "no XDP program: up the stack")
            return
        att = dev.prog
        assert att is not None
        mode = comp.mode
        if isinstance(dev, Tun) and mode == MODE_DRV:
            fast = bool(dev.can_build_skb(self.w.entries.size)[self.e]) and not bool(
                self.w.entries.gso[self.e]
            )
            mode = MODE_DRV if fast else MODE_SKB
            where = "tun_build_skb (fast path)" if fast else "skb + generic XDP (slow path)"
            self.hop(t, dev.name, "xdp", f"{att.prog.name} runs in {where}")
        act = int(comp.act[self.e])
        raw = int(comp.raw[self.e])
        verdict = action_name(raw)
        t += cost * 0.3
        self.hop(t, dev.name, "xdp", f"{att.prog.name} ({mode}) returns {verdict}")
        if act == XDP_DROP:
            self.hop(t, dev.name, "drop", "XDP_DROP: the page is recycled")
        elif act == XDP_PASS:
            self.hop(t + costs.STACK_RX, dev.name, "stack", "XDP_PASS: skb built, up the stack")
        elif act == XDP_TX:
            self.tx(dev, t, cpu, mode, depth)
        elif act == XDP_REDIRECT:
            target = int(comp.target[self.e])
            err = int(comp.err[self.e])
            tgt = self.w.by_ifindex.get(target)
            if err:
                name = Errno(err).name
                self.hop(t, dev.name, "drop", f"xdp_do_redirect failed: {name} (xdp_redirect_err)")
                return
            if comp.broadcast:
                self.hop(t, dev.name, "bulk_queue", "broadcast: one clone per devmap entry")
                return
            if tgt is not None:
                self.redirect(dev, tgt, t, cpu, mode, depth)
        else:
            self.hop(t, dev.name, "drop", f"{verdict}: xdp_exception, dropped")

    def tx(self, dev: NetDev, t: float, cpu: int, mode: str, depth: int) -> None:
        bond = self.dp.master_of(dev)
        if bond is not None:
            self.master_redirect(dev, bond, t, cpu, mode, depth)
            return
        if isinstance(dev, Veth):
            peer = self.w.devices.get(dev.peer)
            self.hop(t, dev.name, "ndo_xdp_xmit", f"XDP_TX on a veth: to {dev.peer}")
            if peer is not None:
                self.rx(peer, t + 50, cpu, depth + 1)
            return
        if isinstance(dev, Tun):
            q = cpu % dev.queues
            self.hop(t, dev.name, "tx_ring", f"back toward userspace on queue {q} (cpu % queues)")
            return
        self.nic_tx(dev, t, cpu, "XDP_TX")

    def nic_tx(self, dev: NetDev, t: float, cpu: int, why: str) -> None:
        if not isinstance(dev, Nic) or dev.tx is None:
            return
        ring = int(dev.ring_of_cpu[cpu]) if dev.xdp_rings else -1
        if ring < 0:
            self.hop(t, dev.name, "drop", f"{why}: no XDP TX ring for cpu {cpu} (ENXIO)")
            return
        occ = int(dev.tx.occ[ring])
        lock = " under tx_lock (shared ring)" if dev.xdp_locking else ""
        self.hop(
            t,
            dev.name,
            "tx_ring",
            f"{why} onto XDP TX ring {ring} of cpu {cpu}{lock} ({occ}/{int(dev.tx.size[ring])})",
        )
        wire_ns = float(self.w.entries.wire_bytes[self.e]) * 8e9 / max(dev.speed_bps, 1)
        self.hop(t + (occ + 1) * wire_ns, dev.name, "wire", "on the wire")

    def redirect(self, dev: NetDev, tgt: NetDev, t: float, cpu: int, mode: str, depth: int) -> None:
        if mode == MODE_SKB:
            self.hop(t, dev.name, "ndo_xdp_xmit", f"generic redirect to {tgt.name}: sent at once")
        else:
            self.hop(
                t,
                dev.name,
                "bulk_queue",
                f"bq_enqueue on cpu {cpu}'s bulk queue to {tgt.name} (16 frames)",
            )
            t += 500
            self.hop(t, dev.name, "ndo_xdp_xmit", f"xdp_do_flush at poll end -> {tgt.name}")
        if isinstance(tgt, Veth):
            peer = self.w.devices.get(tgt.peer)
            if peer is not None:
                self.rx(peer, t + 50, cpu, depth + 1)
        elif isinstance(tgt, Tun):
            self.hop(t, tgt.name, "tx_ring", f"tun_xdp_xmit: queue {cpu % tgt.queues}")
        elif isinstance(tgt, Bond):
            self.hop(t, tgt.name, "ndo_xdp_xmit", "bond_xdp_xmit picks a slave per frame")
        else:
            self.nic_tx(tgt, t, cpu, f"redirected from {dev.name}")

    def master_redirect(
        self, dev: NetDev, bond: Bond, t: float, cpu: int, mode: str, depth: int
    ) -> None:
        if not bond.admin_up:
            self.hop(t, dev.name, "drop", f"{bond.name} is down: XDP_TX becomes XDP_ABORTED")
            return
        lg = BondLogic(bond, self.w.devices)
        if bond.mode in ("balance-xor", "802.3ad"):
            idx = int(lg.hash_slaves(self.w.entries.headers, True)[self.e])
            slave = bond.slaves[idx] if idx >= 0 else None
            how = f"{bond.xmit_hash_policy} hash -> usable_slaves"
        elif bond.mode == "active-backup":
            slave = bond.curr_active
            how = "the active slave"
        else:
            table = lg.slave_by_id_table()
            nxt = int(bond.rr_counter[cpu]) + 1
            slave = table[nxt % len(table)] if table else None
            how = f"round-robin counter of cpu {cpu} = {nxt}"
        if slave is None or slave == dev.name:
            self.hop(
                t,
                dev.name,
                "xdp",
                f"xdp_master_redirect ({how}): {slave or 'no slave'} -> XDP_TX here",
            )
            self.nic_tx(dev, t, cpu, "XDP_TX")
            return
        self.hop(t, dev.name, "xdp", f"xdp_master_redirect ({how}): XDP_REDIRECT to {slave}")
        self.redirect(dev, self.w.devices[slave], t, cpu, mode, depth)


def trace_frame(sim: Simulator, source: str, flow: int) -> tuple[TraceHop, ...]:
    """The hops of the next frame of ``flow`` of ``source``, from now on."""
    w = sim.world
    dp = sim.datapath
    if dp.compiled_epoch != w.epoch:
        dp.compile_paths()
    src: Source | None = next((s for s in w.sources if s.spec.name == source), None)
    if src is None:
        return (TraceHop(sim.now_ns, source, "drop", "no such traffic source"),)
    flows = src.spec.flows
    if not 0 <= flow < flows:
        return (TraceHop(sim.now_ns, source, "drop", f"flow must be 0..{flows - 1}"),)
    L = len(src.table)
    n = src.emitted
    j = next((k for k in range(n, n + L + 1) if (k % L) % flows == flow), n)
    entry = src.offset + j % L
    pps = dp.source_pps(src) or 1.0
    t = max(sim.now_ns, src.rate_origin_ns) + (j - n) * 1e9 / pps
    walk = _Walk(sim, entry)
    dev = w.devices.get(src.device)
    size = int(w.entries.size[entry])
    walk.hop(t, src.device, "wire", f"{source} frame {j} (flow {flow}, {size} bytes)")
    if dev is None:
        return tuple(walk.hops)
    if src.local:
        walk.hop(t, dev.name, "stack", f"sent by the local stack out of {dev.name}")
        if isinstance(dev, Veth):
            peer = w.devices.get(dev.peer)
            if peer is not None:
                walk.rx(peer, t + 100)
        elif isinstance(dev, Nic):
            walk.hop(t, dev.name, "wire", "through the stack's TX queue onto the wire")
        return tuple(walk.hops)
    walk.rx(dev, t)
    return tuple(walk.hops)
