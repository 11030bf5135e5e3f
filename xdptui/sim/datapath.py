"""One step of the XDP data path over all devices, as arithmetic on per-entry counts.

A step of ``dt`` nanoseconds: sources emit (``frames_per_entry``), NICs admit frames into their
RX rings (RSS), every CPU spends its ``dt`` on the NAPI instances bound to it (``napi_poll``,
budget 64, round-robin between instances when saturated), the polled frames meet the program's
verdict and follow it — ``XDP_TX`` onto the CPU's XDP TX ring, ``XDP_REDIRECT`` through the
per-CPU bulk queue to the target's ``ndo_xdp_xmit`` (``bq_enqueue`` / ``bq_xmit_all``), a veth
target's frames straight into its peer's NAPI on the same CPU — and TX rings drain onto the wire.

Verdicts, redirect checks and per-frame costs are per flow-table entry and are compiled once per
state epoch (``compile_paths``); a step costs a few NumPy operations whatever its length in
frames, which is what lets a long step stand for many polls (docs/design.md, "Two granularities").
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.model.topology import bond_xdp_check
from xdptui.sim import costs
from xdptui.sim.bond import Bond, BondLogic
from xdptui.sim.netdev import MODE_DRV, MODE_SKB, NetDev, Nic, TxRings, Veth
from xdptui.sim.programs import (
    XDP_ABORTED,
    XDP_DROP,
    XDP_PASS,
    XDP_REDIRECT,
    XDP_TX,
    Program,
    XdpContext,
    action_name,
)
from xdptui.sim.splitting import share, split_rows
from xdptui.sim.tun import VHOST_NET_BATCH, Tun
from xdptui.sim.world import WIRE_OVERHEAD, Source, World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

NAPI_BUDGET = 64  # NAPI_POLL_WEIGHT
BULK = 16  # DEV_MAP_BULK_SIZE
MAX_CHAIN = 6  # veth hops followed inline before a loop is cut
RATE_TAU_NS = 200_000.0  # smoothing of per-queue arrival rates (sets frames per poll)


@dataclass
class Compiled:
    """What a device's RX path does with each entry, fixed until the next state change."""

    mode: str | None  # native | generic | None (no program: straight to the stack)
    raw: IntArray  # the program's return code per entry
    act: (
        IntArray  # effective action: unknown codes become XDP_ABORTED (bpf_warn_invalid_xdp_action)
    )
    target: IntArray  # redirect target ifindex, -1 if none
    err: IntArray  # errno of a failed redirect (0 = enqueued)
    cost: FloatArray  # ns per frame on the polling CPU, including inline veth hops
    map_name: str | None = None  # the devmap bpf_redirect_map used
    key: IntArray | None = None  # its key per entry (-1: ifindex redirect)
    broadcast: int = 0  # BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS flags, 0 = unicast


@dataclass
class BulkTally:
    """One per-CPU bulk queue toward a device: frames through it, flushes, last bulk size."""

    frames: int = 0
    flushes: float = 0.0
    last_bulk: float = 0.0
    program: str = ""


@dataclass
class Tracepoints:
    """Aggregated tracepoint hits (``include/trace/events/xdp.h``)."""

    exception: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    redirect_err: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    redirect: int = 0
    # (from, to) -> [sent, drops, err_flushes, flushes(float), of the drops: egress program's]
    devmap_xmit: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    bulk: dict[tuple[int, str, str], BulkTally] = field(default_factory=dict)

    def xmit(self, src: str, dst: str) -> list[float]:
        row = self.devmap_xmit.get((src, dst))
        if row is None:
            row = [0.0, 0.0, 0.0, 0.0, 0.0]  # sent, drops, err flushes, flushes, egress drops
            self.devmap_xmit[(src, dst)] = row
        return row


@dataclass
class TxClaim:
    """Frames offered to a device's transmit rings in this step (one slot per ring, the last
    is the stack's queue), resolved after all CPUs ran."""

    kind: str  # tx (XDP_TX) | xmit (ndo_xdp_xmit) | stack (local TX) | gtx (generic XDP_TX)
    dev: NetDev  # who offered them (for xmit: the redirecting device)
    frames: IntArray
    wire_bytes: FloatArray
    row: list[float] | None = None  # the xdp_devmap_xmit tally an ndo_xdp_xmit claim feeds
    calls: float = 0.0  # ndo_xdp_xmit calls behind an xmit claim (tap: tx_dropped per call)


@dataclass
class CpuState:
    carry_ns: FloatArray
    busy_ns: FloatArray
    polls: IntArray


def make_context(
    world: World, dev: NetDev | None, prog: Program, egress: NetDev | None = None
) -> XdpContext:
    """The rows ``prog`` runs on when attached to ``dev`` (or, for a devmap egress program,
    run on frames leaving ``egress``): every entry of every source."""
    e = world.entries

    def lookup(name: str, key: int) -> int | None:
        m = world.maps.get(name)
        entry = m.lookup(key) if m is not None else None
        if entry is None:
            return None
        target = world.devices.get(entry.dev)
        return target.ifindex if target is not None else None

    return XdpContext(
        src_mac=e.src_mac,
        dst_mac=e.dst_mac,
        ethertype=e.ethertype,
        src_ip=e.src_ip,
        dst_ip=e.dst_ip,
        proto=e.proto,
        src_port=e.src_port,
        dst_port=e.dst_port,
        size=e.size,
        ingress_ifindex=dev.ifindex if dev is not None else 0,
        params=prog.param_map,
        lookup_map=lookup,
        egress_ifindex=egress.ifindex if egress is not None else 0,
    )


class Datapath:
    """Moves frames through a :class:`World`. Owns compiled paths and tracepoint tallies."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.compiled: dict[str, Compiled] = {}
        self.compiled_epoch = -1
        self.tp = Tracepoints()
        n = world.nr_cpus
        self.cpu = CpuState(np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64))
        self.claims: dict[str, list[TxClaim]] = defaultdict(list)
        self.steps = 0
        self.polls_total = 0
        self.master_key = False
        self._card_credit: dict[str, float] = {}
        self._card_ratio: dict[str, float] = {}
        self._card_rx: dict[str, float] = {}
        self._egress_cache: dict[tuple[int, str, str], IntArray] = {}
        self._err_cache: dict[tuple[str, str, str], IntArray] = {}
        self._bq_rates: dict[tuple[str, str], FloatArray] = {}
        self._dt = 1
        self._pending_peer: dict[str, list[tuple[NetDev, IntArray]]] = {}

    # ------------------------------------------------------------------ compile

    def compile_paths(self) -> None:
        """Run every attached program over all entries and resolve redirect checks."""
        w = self.world
        self.compiled = {}
        self._egress_cache = {}
        self._err_cache = {}
        self.master_key = any(isinstance(d, Bond) and d.bond_prog for d in w.devices.values())
        for dev in w.devices.values():
            if isinstance(dev, Bond):
                BondLogic(dev, w.devices).update_slave_arr()
            self.compiled[dev.name] = self._compile_device(dev)
        # Chain costs need every device's verdicts first.
        for name in self.compiled:
            self.compiled[name].cost = self._chain_cost(w.devices[name], 0)
        self.compiled_epoch = w.epoch

    def _compile_device(self, dev: NetDev) -> Compiled:
        e = self.world.entries
        n = len(e)
        att = dev.prog
        if att is None:
            full = np.full(n, XDP_PASS, dtype=np.int64)
            return Compiled(
                None,
                full,
                full,
                np.full(n, -1, dtype=np.int64),
                np.zeros(n, dtype=np.int64),
                np.zeros(n),
            )
        ctx = make_context(self.world, dev, att.prog)
        raw = att.prog.run(ctx)
        act = np.where((raw >= XDP_ABORTED) & (raw <= XDP_REDIRECT), raw, XDP_ABORTED)
        target = np.where(act == XDP_REDIRECT, ctx.redirect_ifindex, -1)
        if ctx.redirect_broadcast_flags:
            err = np.zeros(n, dtype=np.int64)  # broadcast skips invalid targets silently
        else:
            err = self._redirect_errors(dev, act, target, att.mode)
        return Compiled(
            att.mode,
            raw,
            act,
            target,
            err,
            np.zeros(n),
            ctx.redirect_map_name,
            ctx.redirect_key,
            ctx.redirect_broadcast_flags,
        )

    def _redirect_errors(self, dev: NetDev, act: IntArray, target: IntArray, mode: str) -> IntArray:
        """``__xdp_do_redirect_frame`` / ``__xdp_enqueue`` checks in the kernel's order: no such
        ifindex -> EINVAL; target lacks NDO_XMIT -> EOPNOTSUPP (native only); not IFF_UP ->
        ENETDOWN; frame longer than mtu + ETH_HLEN + VLAN_HLEN -> EMSGSIZE (``xdp_ok_fwd_dev``)."""
        w = self.world
        err = np.zeros(len(act), dtype=np.int64)
        redirect = act == XDP_REDIRECT
        if not np.any(redirect):
            return err
        for ifindex in np.unique(target[redirect]):
            rows = redirect & (target == ifindex)
            tgt = w.by_ifindex.get(int(ifindex))
            if tgt is None:
                err[rows] = Errno.EINVAL
                continue
            if mode == MODE_DRV and not self.has_ndo_xmit(tgt):
                err[rows] = Errno.EOPNOTSUPP
                continue
            if not tgt.admin_up:
                err[rows] = Errno.ENETDOWN
                continue
            too_big = rows & (w.entries.size > tgt.mtu + 14 + 4)
            err[too_big] = Errno.EMSGSIZE
        return err

    def has_ndo_xmit(self, dev: NetDev) -> bool:
        """NETDEV_XDP_ACT_NDO_XMIT: ixgbe (and, UNVERIFIED, i40e/ice) only while a program is
        attached (``xdp_features_set_redirect_target``); a veth while its peer has an XDP
        program (``veth_set_xdp_features``)."""
        if isinstance(dev, Nic):
            assert dev.driver is not None
            if not dev.driver.ndo_xdp_xmit:
                return False
            if dev.driver.ndo_xmit_needs_prog:
                return dev.xdp.get(MODE_DRV) is not None
            return True
        if isinstance(dev, Veth):
            peer = self.world.devices.get(dev.peer)
            return peer is not None and peer.xdp.get(MODE_DRV) is not None
        if isinstance(dev, Tun):
            return dev.mode == "tap"  # tap_netdev_ops has ndo_xdp_xmit (tun_xdp_xmit)
        if isinstance(dev, Bond):
            # bond_xdp_set_features: the AND of the slaves' features (none without slaves or
            # in a mode that can't run XDP).
            if not dev.slaves or not bond_xdp_check(dev.mode, dev.xmit_hash_policy):
                return False
            return all(self.has_ndo_xmit(self.world.devices[s]) for s in dev.slaves)
        return False

    def _dcost(self, dev: NetDev) -> costs.DriverCosts:
        if isinstance(dev, Nic):
            assert dev.driver is not None
            return costs.COSTS[dev.driver.name]
        if isinstance(dev, Tun):
            return costs.COSTS["tap-vhost" if dev.writer == "vhost" else "tap"]
        return costs.COSTS["veth"]

    def _chain_cost(self, dev: NetDev, depth: int) -> FloatArray:
        """ns per frame for the CPU that polls ``dev``: its own verdict work plus, for frames it
        sends into a veth, the peer's NAPI work (veth runs it on the sending CPU)."""
        c = self.compiled[dev.name]
        d = self._dcost(dev)
        n = len(c.act)
        if c.mode is None:
            return np.full(n, d.rx_frame + d.build_skb + costs.STACK_RX)
        att = dev.prog
        assert att is not None
        if isinstance(dev, Tun) and c.mode == MODE_DRV:
            e = self.world.entries
            fast = dev.can_build_skb(e.size) & ~e.gso
            native = self._chain_cost_mode(dev, c, depth, att.prog, False)
            generic_c = self._chain_cost_mode(
                dev, dataclasses.replace(c, mode=MODE_SKB), depth, att.prog, True
            )
            return np.where(fast, native + costs.TUN_FAST, generic_c)
        return self._chain_cost_mode(dev, c, depth, att.prog, c.mode == MODE_SKB)

    def _chain_cost_mode(
        self, dev: NetDev, c: Compiled, depth: int, prog: Program, generic: bool
    ) -> FloatArray:
        d = self._dcost(dev)
        n = len(c.act)
        cost = np.full(n, d.rx_frame + prog.cost_ns)
        if generic:
            cost += d.generic_rx
        if isinstance(dev, Tun) and not generic:
            # single writes flush after every frame (bulk of one, a doorbell each)
            cost[c.act == XDP_REDIRECT] += costs.TUN_WRITE_FLUSH if dev.writer == "write" else 0.0
        act = c.act
        cost[act == XDP_PASS] += (0.0 if generic else d.build_skb) + costs.STACK_RX
        tx = act == XDP_TX
        if generic:
            cost[tx] += costs.GENERIC_TX
        elif isinstance(dev, Veth):
            cost[tx] += d.tx
            peer = self.world.devices.get(dev.peer)
            if peer is not None and depth < MAX_CHAIN and peer.name in self.compiled:
                cost[tx] += self._chain_cost(peer, depth + 1)[tx]
        else:
            cost[tx] += d.tx + self._lock_cost(dev)
        bond = self.master_of(dev)
        if bond is not None and np.any(tx):
            cost[tx] += costs.MASTER_REDIRECT + self._other_slave_share(dev, bond)[tx] * (
                d.redirect + d.xmit_frame + d.flush / BULK - d.tx
            )
        red = act == XDP_REDIRECT
        if np.any(red):
            ok = red & (c.err == 0)
            cost[red & ~ok] += d.redirect
            dmap = self.world.maps.get(c.map_name) if c.map_name else None
            if c.broadcast and dmap is not None:
                # one clone (xdpf_clone) and one enqueue per destination
                for _key, bentry in dmap.walk():
                    tgt_b = self.world.devices.get(bentry.dev)
                    if tgt_b is None or tgt_b is dev:
                        continue
                    cost[ok] += costs.CLONE + self._xmit_cost(d, tgt_b, generic, bentry.egress)
                return cost
            keys = c.key if c.key is not None else np.full(n, -1, dtype=np.int64)
            for ifindex in np.unique(c.target[ok]):
                tgt = self.world.by_ifindex[int(ifindex)]
                for key in np.unique(keys[ok & (c.target == ifindex)]):
                    rows = ok & (c.target == ifindex) & (keys == key)
                    entry = dmap.lookup(int(key)) if dmap is not None and key >= 0 else None
                    egress = entry.egress if entry is not None else None
                    cost[rows] += self._xmit_cost(d, tgt, generic, egress)
                if isinstance(tgt, Veth) and depth < MAX_CHAIN:
                    rows = ok & (c.target == ifindex)
                    peer = self.world.devices.get(tgt.peer)
                    if peer is not None and peer.name in self.compiled:
                        cost[rows] += self._chain_cost(peer, depth + 1)[rows]
        return cost

    def _xmit_cost(
        self, d: costs.DriverCosts, tgt: NetDev, generic: bool, egress: Program | None
    ) -> float:
        """One redirected frame from enqueue to the target's ring: the bulk queue, its share
        of a flush, ``ndo_xdp_xmit``, and the devmap egress program where there is one (at
        flush since the seed's patch, per frame at enqueue before it)."""
        td = self._dcost(tgt)
        if generic:
            out = costs.GENERIC_REDIRECT + td.skb_xmit
        else:
            out = d.redirect + td.xmit_frame + td.flush / BULK + self._lock_cost(tgt)
            if self.world.devmap_egress == "enqueue" and not generic:
                out += costs.PRE_PATCH_DEVMAP
        if egress is not None:
            stage = (
                costs.EGRESS_ENQUEUE
                if self.world.devmap_egress == "enqueue"
                else (costs.EGRESS_FLUSH)
            )
            out += egress.cost_ns + (costs.EGRESS_SKB if generic else stage)
        return out

    def _other_slave_share(self, dev: NetDev, bond: Bond) -> FloatArray:
        """Per entry, the share of this slave's XDP_TX the bond sends out of another slave."""
        n = len(self.world.entries)
        if bond.mode in ("balance-xor", "802.3ad"):
            idx = BondLogic(bond, self.world.devices).hash_slaves(self.world.entries.headers, True)
            mine = bond.slaves.index(dev.name) if dev.name in bond.slaves else -2
            return np.where((idx >= 0) & (idx != mine), 1.0, 0.0)
        if bond.mode == "active-backup":
            other = bond.curr_active is not None and bond.curr_active != dev.name
            return np.full(n, 1.0 if other else 0.0)
        up = max(1, len(bond.slaves))
        return np.full(n, (up - 1) / up)

    def _lock_cost(self, dev: NetDev) -> float:
        """ixgbe with more than 64 CPUs: every XDP_TX / ndo_xdp_xmit takes the ring's
        ``tx_lock`` (``ixgbe_xdp_locking_key``); sharing CPUs bounce its cache line."""
        if isinstance(dev, Nic) and dev.xdp_locking:
            sharers = max(1, -(-self.world.nr_cpus // max(1, dev.xdp_rings)))
            return costs.LOCK_UNCONTENDED + costs.LOCK_PER_SHARER * (sharers - 1)
        return 0.0

    # ------------------------------------------------------------------ step

    def step(self, t0: int, dt: int) -> None:
        """Advance the data path from ``t0`` by ``dt`` ns."""
        if dt <= 0:
            return
        w = self.world
        if self.compiled_epoch != w.epoch:
            self.compile_paths()
        self.steps += 1
        self._dt = dt
        n_entries = len(w.entries)
        arrivals: dict[str, IntArray] = {}
        for src in w.sources:
            self._emit(src, t0 + dt, arrivals, n_entries)
        rows = self._admit(arrivals, dt)
        self._serve(rows, dt)
        self._drain_tx(dt)
        self._update_card_ratios(dt)

    def emitted_until(self, src: Source, t: int) -> int:
        """Frames source ``src`` has emitted by time ``t`` (pktgen pacing, exact integers)."""
        if src.stopped or t <= src.rate_origin_ns:
            return src.emitted_at_origin if t > src.start_ns or src.emitted_at_origin else 0
        pps = self.source_pps(src)
        milli = round(pps * 1000)
        n = src.emitted_at_origin + (milli * (t - src.rate_origin_ns)) // 10**12
        if src.spec.count is not None:
            n = min(n, src.spec.count)
        return n

    def source_pps(self, src: Source) -> float:
        """Frames per second; frames arriving from the wire can't beat the port's line rate
        (an offered rate above it is capped, as the sender's own port would cap it)."""
        dev = self.world.devices.get(src.device)
        line = None
        if isinstance(dev, Nic) and dev.speed_bps:
            line = dev.speed_bps / (8.0 * src.mean_wire_bytes())
        if src.rate.kind == "pps":
            pps = src.rate.value
        elif src.rate.kind == "bps":
            pps = src.rate.value / (8.0 * src.mean_wire_bytes())
        else:
            pps = line if line is not None else 10e9 / (8.0 * src.mean_wire_bytes())
        return min(pps, line) if line is not None else pps

    def _emit(self, src: Source, t1: int, arrivals: dict[str, IntArray], n_entries: int) -> None:
        from xdptui.sim.traffic import frames_per_entry

        n1 = self.emitted_until(src, t1)
        if n1 <= src.emitted:
            return
        counts = np.zeros(n_entries, dtype=np.int64)
        L = len(src.table)
        counts[src.offset : src.offset + L] = frames_per_entry(src.emitted, n1, L)
        src.emitted = n1
        dev = self.world.devices.get(src.device)
        if dev is None:
            return
        if src.local:
            self._local_tx(src, dev, counts)
            return
        if not dev.running:
            src.lost += int(counts.sum())
            return
        key = dev.name
        if key in arrivals:
            arrivals[key] += counts
        else:
            arrivals[key] = counts

    def _local_tx(self, src: Source, dev: NetDev, counts: IntArray) -> None:
        """A ``from: DEV`` source: the local stack sends out of DEV (a NIC: onto its TX queue;
        a veth: ``veth_xmit`` into the peer's RX)."""
        if not dev.running:
            src.lost += int(counts.sum())
            return
        total = int(counts.sum())
        if isinstance(dev, Nic):
            wire = float(counts @ self.world.entries.wire_bytes)
            self._stack_claim("stack", dev, dev, total, wire)
        elif isinstance(dev, Veth):
            peer = self.world.devices.get(dev.peer)
            if peer is None or not peer.running:
                dev.add("tx_dropped", total)
                return
            self._pending_peer.setdefault(peer.name, []).append((dev, counts))
        elif isinstance(dev, Bond):
            # bond_start_xmit: the mode's slave choice (round-robin shares the per-CPU counter
            # with XDP); the local sender runs on CPU 0.
            dev.add("tx_packets", total)
            dev.add("tx_bytes", int(counts @ self.world.entries.size))
            lg = BondLogic(dev, self.world.devices)
            parts = lg.stack_split(
                np.zeros(1, dtype=np.int64), counts[None, :], self.world.entries.headers
            )
            for slave_name, part in parts.items():
                if slave_name is None:
                    dev.add("tx_dropped", int(part.sum()))
                    dev.add("tx_packets", -int(part.sum()))
                    continue
                self._local_tx(src, self.world.devices[slave_name], part[0])

    def _admit(self, arrivals: dict[str, IntArray], dt: int) -> list[tuple[NetDev, IntArray]]:
        """Frames onto RX rings. A NIC spreads them by RSS (``queue = reta[hash % size]``) and
        can receive at most its DMA limit; frames past it, like frames for a full ring, are
        ``rx_dropped``. Returns (device, [Q, E] admitted arrivals) for every device with work."""
        w = self.world
        out: list[tuple[NetDev, IntArray]] = []
        pending = self._pending_peer
        self._pending_peer = {}
        cards: dict[str, list[tuple[Nic, IntArray]]] = {}
        for dev in w.devices.values():
            rx = dev.rx
            if rx is None:
                continue
            arr = arrivals.get(dev.name)
            local = pending.get(dev.name)
            if arr is None and local is None and not rx.ring.any():
                continue
            mat = np.zeros_like(rx.ring)
            if arr is not None and arr.any():
                if isinstance(dev, Nic):
                    np.add.at(mat, (dev.queue_of_entry, np.arange(len(arr))), arr)
                    cards.setdefault(dev.card, []).append((dev, mat))
                else:
                    qsel = (w.entries.rss_hash % rx.count).astype(np.int64)
                    np.add.at(mat, (qsel, np.arange(len(arr))), arr)
            if local:
                # veth_xmit -> veth_forward_skb into the peer's ring; what does not fit once
                # the peer's NAPI has run is the sender's tx_dropped (see _serve).
                qsel = (w.entries.rss_hash % rx.count).astype(np.int64)
                for sender, counts in local:
                    np.add.at(mat, (qsel, np.arange(len(counts))), counts)
                    sender.add("tx_packets", int(counts.sum()))
                    sender.add("tx_bytes", int(counts @ w.entries.size))
            out.append((dev, mat))
        for card, ports in cards.items():
            self._dma_limit(card, ports, dt)
        return out

    def _dma_limit(self, card: str, ports: list[tuple[Nic, IntArray]], dt: int) -> None:
        """The card's DMA budget (``rx_pps_max`` received frames per second, fitted on E810),
        shared by its ports; every frame it transmits costs ``tx_dma_weight`` received ones.
        Receive and transmit settle together: with ``r`` transmitted per received frame (the
        programs' mix, from the last step) the card takes B / (1 + k r), or B - k T when its
        transmit limit T binds first. Frames past it are ``rx_dropped``."""
        driver = ports[0][0].driver
        assert driver is not None
        limit = driver.rx_pps_max
        if limit is None:
            return
        k = driver.tx_dma_weight
        nports = len(self._card_ports(card))
        tx_cap = (driver.tx_pps_max or float("inf")) * nports
        ratio = self._card_ratio.get(card, 0.0)
        rate = limit / (1.0 + k * ratio)
        if ratio * rate > tx_cap:
            rate = max(0.0, limit - k * tx_cap)
        cap = rate * dt / 1e9
        credit = self._card_credit.get(card, 0.0)
        totals = np.array([int(mat.sum()) for _, mat in ports], dtype=np.float64)
        if totals.sum() <= cap + credit:
            self._card_credit[card] = 0.0
            self._card_rx[card] = float(totals.sum())
            return
        cap += credit
        allowed = int(cap)
        self._card_credit[card] = cap - allowed
        self._card_rx[card] = float(allowed)
        for (nic, mat), port_allowed in zip(ports, share(allowed, totals), strict=True):
            assert nic.rx is not None
            keep = split_rows(mat, share(int(port_allowed), mat.sum(axis=1).astype(np.float64)))
            lost_q = (mat - keep).sum(axis=1)
            nic.rx.rx_dropped += lost_q
            nic.add("rx_dropped", int(lost_q.sum()))
            mat[:] = keep

    def _update_card_ratios(self, dt: int) -> None:
        """Frames offered for transmission per frame received, on each card, last step."""
        tx: dict[str, float] = defaultdict(float)
        for dev in self.world.devices.values():
            if isinstance(dev, Nic):
                tx[dev.card] += dev.tx_demand_last
        for card, got in self._card_rx.items():
            if got > 0:
                self._card_ratio[card] = min(tx[card] / got, 4.0)
        self._card_rx = {}

    def _card_ports(self, card: str) -> list[Nic]:
        return [d for d in self.world.devices.values() if isinstance(d, Nic) and d.card == card]

    # ------------------------------------------------------------------ NAPI

    def _serve(self, work: list[tuple[NetDev, IntArray]], dt: int) -> None:
        """Every CPU polls the NAPI instances bound to it for ``dt`` ns (``net_rx_action``)."""
        if not work:
            self.cpu.carry_ns[:] = 0.0
            return
        ncpu = self.world.nr_cpus
        rows_dev: list[int] = []
        demand_parts: list[IntArray] = []
        lam_parts: list[FloatArray] = []
        work_parts: list[FloatArray] = []
        cost_parts: list[FloatArray] = []
        cpu_parts: list[IntArray] = []
        poll_cost: list[FloatArray] = []
        for i, (dev, arr) in enumerate(work):
            rx = dev.rx
            assert rx is not None
            demand = rx.ring + arr
            demand_parts.append(demand)
            # Arrival rate per queue, smoothed over RATE_TAU_NS so that a short step with
            # no frame in it does not read as an idle queue.
            alpha = _smoothing(dt, rx.age_ns)
            rx.age_ns += dt
            rx.rate += alpha * (arr.sum(axis=1) / dt - rx.rate)
            lam_parts.append(rx.rate.copy())
            c = self.compiled[dev.name].cost
            rx.work += alpha * ((arr @ c) / dt - rx.work)  # CPU ns per ns the arrivals bring
            work_parts.append(rx.work.copy())
            dq = demand.sum(axis=1)
            cost_parts.append(np.where(dq > 0, (demand @ c) / np.maximum(dq, 1), 0.0))
            cpu_parts.append(rx.irq_cpu)
            d = self._dcost(dev)
            nt = len(np.unique(self.compiled[dev.name].target[self.compiled[dev.name].target >= 0]))
            poll_cost.append(np.full(rx.count, d.poll + nt * d.flush))
            rows_dev.extend([i] * rx.count)
        D = np.concatenate([p.sum(axis=1) for p in demand_parts]).astype(np.float64)
        lam = np.concatenate(lam_parts)
        a = np.concatenate(cost_parts)
        p = np.concatenate(poll_cost)
        cpu = np.concatenate(cpu_parts)
        budget = dt + self.cpu.carry_ns
        # Light load: frames per poll follow the interrupt cycle, fpp = lam * (irq + p) / (1 - rho).
        work_ns = D * a
        rho = np.bincount(cpu, weights=np.concatenate(work_parts), minlength=ncpu)
        irq = np.array([self._irq_ns(work[i][0]) for i in rows_dev], dtype=np.float64)
        fpp = np.clip(
            lam * (irq + p) / np.maximum(1.0 - np.minimum(rho[cpu], 0.95), 0.05), 1.0, NAPI_BUDGET
        )
        light_polls = np.where(D > 0, D / fpp, 0.0)
        need = np.bincount(cpu, weights=work_ns + light_polls * p, minlength=ncpu)
        served = D.copy()
        saturated = need > budget
        if np.any(saturated):
            eff = a + p / NAPI_BUDGET
            for c_sat in np.flatnonzero(saturated):
                rows = np.flatnonzero((cpu == c_sat) & (D > 0))
                served[rows] = _water_fill(D[rows], eff[rows], float(budget[c_sat]))
        # How full the polls are follows the CPU's regime, not one short step's burst: a CPU
        # whose smoothed load reaches its capacity polls full budgets of 64.
        full = (rho[cpu] >= 0.95) | (saturated[cpu] & (served < D - 0.5) & (D >= NAPI_BUDGET))
        polls = np.where(full, served / NAPI_BUDGET, served / fpp)
        n_served = np.floor(served + 1e-9).astype(np.int64)
        used = np.bincount(cpu, weights=n_served * a + polls * p, minlength=ncpu)
        self.cpu.busy_ns += np.minimum(used, budget)
        self.cpu.carry_ns = np.where(saturated, np.clip(budget - used, 0.0, None), 0.0)
        start = 0
        for (dev, _arr), demand in zip(work, demand_parts, strict=True):
            rx = dev.rx
            assert rx is not None
            k = rx.count
            take = n_served[start : start + k]
            rpolls = polls[start : start + k]
            start += k
            processed = split_rows(demand, np.minimum(take, demand.sum(axis=1)), self.steps)
            rest = demand - processed
            over = np.maximum(rest.sum(axis=1) - rx.size, 0)
            if over.any():
                dropped = split_rows(rest, over, self.steps + 1)
                rest -= dropped
                sender = self.world.devices.get(dev.peer) if isinstance(dev, Veth) else None
                if isinstance(dev, Tun):  # the writer waits: nothing is lost, it writes slower
                    dev.throttled += int(over.sum())
                elif sender is not None:  # veth_xmit: ptr_ring full -> the sender's priv->dropped
                    sender.add("tx_packets", -int(over.sum()))
                    sender.add("tx_bytes", -int(dropped.sum(axis=0) @ self.world.entries.size))
                    sender.add("tx_dropped", int(over.sum()))
                else:
                    rx.rx_dropped += over
                    dev.add("rx_dropped", int(over.sum()))
            rx.ring = rest
            # The ring's high-water mark: what is left queued, or what one poll found waiting.
            batch = np.where(rpolls > 0, np.ceil(take / np.maximum(rpolls, 1e-9)), 0)
            batch = np.minimum(batch, rx.size).astype(np.int64)
            np.maximum(rx.peak, np.maximum(rest.sum(axis=1), batch), out=rx.peak)
            got = processed.sum(axis=1)
            rx.rx_packets += got
            acc = rx.poll_acc + rpolls
            whole = np.floor(acc)
            rx.poll_acc = acc - whole
            polls_int = whole.astype(np.int64)
            np.add.at(self.cpu.polls, rx.irq_cpu, polls_int)
            self.polls_total += int(polls_int.sum())
            self.deliver(dev, rx.irq_cpu, np.arange(k), processed, rpolls, 0)

    def _irq_ns(self, dev: NetDev) -> float:
        if isinstance(dev, Tun):
            return 0.0
        if isinstance(dev, Nic):
            assert dev.driver is not None
            return float(dev.driver.irq_ns)
        return 1000.0  # veth: napi_schedule from the sender, no interrupt (UNVERIFIED latency)

    # ------------------------------------------------------------------ verdicts

    def deliver(
        self,
        dev: NetDev,
        cpus: IntArray,
        queues: IntArray,
        counts: IntArray,
        polls: FloatArray,
        depth: int,
    ) -> None:
        """Apply ``dev``'s RX verdicts to frames polled on the rows' CPUs (``*_run_xdp``)."""
        if not counts.any():
            return
        w = self.world
        e = w.entries
        c = self.compiled[dev.name]
        per_entry = counts.sum(axis=0)
        dev.add("rx_packets", int(per_entry.sum()))
        dev.add("rx_bytes", int(per_entry @ e.size))
        if c.mode is None:
            self._up_through_master(dev, per_entry)
            return  # no program: up the stack
        if isinstance(dev, Tun):
            self._deliver_tun(dev, c, cpus, queues, counts, polls, depth)
            return
        self._verdicts(dev, c, cpus, queues, counts, polls, depth)

    def _deliver_tun(
        self,
        dev: Tun,
        c: Compiled,
        cpus: IntArray,
        queues: IntArray,
        counts: IntArray,
        polls: FloatArray,
        depth: int,
    ) -> None:
        """A write from userspace (``tun_get_user``): the fast path runs the program on the
        page (``tun_build_skb`` -> ``tun_xdp_act``) when ``tun_can_build_skb`` holds and the
        frame is not GSO; everything else builds the skb and runs it as generic XDP
        (``do_xdp_generic``). The single-write path flushes redirects after every write,
        vhost's batched path (``tun_xdp_one``) once per batch."""
        e = self.world.entries
        fast = (
            dev.can_build_skb(e.size) & ~e.gso
            if c.mode == MODE_DRV
            else np.zeros(len(e.size), dtype=bool)
        )
        per_entry = counts.sum(axis=0)
        n_fast = int(per_entry[fast].sum())
        dev.add("xdp_fast_path", n_fast)
        dev.add("xdp_generic_path", int(per_entry.sum()) - n_fast)
        for reason, mask in dev.slow_reason(e.size, e.gso):
            dev.slow_reasons[reason] += int(per_entry[mask & ~fast].sum())
        batch = VHOST_NET_BATCH if dev.writer == "vhost" else 1
        writes = counts.sum(axis=1).astype(np.float64) / batch  # one flush per write / batch
        for path, mask in (("fast", fast), ("generic", ~fast)):
            sub = np.where(mask[None, :], counts, 0)
            if not sub.any():
                continue
            per = sub.sum(axis=0)
            for code in np.unique(c.raw[per > 0]):
                key = f"{path}.{action_name(int(code))}"
                dev.path_verdicts[key] = dev.path_verdicts.get(key, 0) + int(
                    per[c.raw == code].sum()
                )
            mode_c = c if path == "fast" else dataclasses.replace(c, mode=MODE_SKB)
            self._verdicts(dev, mode_c, cpus, queues, sub, writes, depth)

    def _verdicts(
        self,
        dev: NetDev,
        c: Compiled,
        cpus: IntArray,
        queues: IntArray,
        counts: IntArray,
        polls: FloatArray,
        depth: int,
    ) -> None:
        """The program's verdicts for frames it ran on (``*_run_xdp``)."""
        per_entry = counts.sum(axis=0)
        act = c.act
        for code, counter in ((XDP_DROP, "xdp_drop"), (XDP_PASS, "xdp_pass")):
            dev.add(counter, int(per_entry[act == code].sum()))
        if isinstance(dev, Tun) and c.mode == MODE_DRV:  # tun_xdp_act: DROP/ABORTED count
            dev.add("rx_dropped", int(per_entry[(act == XDP_DROP) | (act == XDP_ABORTED)].sum()))
        if np.any((act == XDP_PASS) & (per_entry > 0)):
            self._up_through_master(dev, np.where(act == XDP_PASS, per_entry, 0))
        aborted = act == XDP_ABORTED
        if np.any(aborted & (per_entry > 0)):
            n_ab = int(per_entry[aborted].sum())
            dev.add("xdp_aborted", n_ab)
            for raw in np.unique(c.raw[aborted & (per_entry > 0)]):
                hits = int(per_entry[aborted & (c.raw == raw)].sum())
                self.tp.exception[(dev.name, action_name(int(raw)))] += hits
        tx = act == XDP_TX
        if np.any(tx & (per_entry > 0)):
            bond = self.master_of(dev)
            if bond is not None:
                self._master_redirect(dev, bond, c, cpus, queues, counts, tx, polls, depth)
            else:
                self._xdp_tx(dev, c, cpus, queues, counts, tx, polls, depth)
        red = act == XDP_REDIRECT
        if np.any(red & (per_entry > 0)):
            self._redirect(dev, c, cpus, counts, red, polls, depth)

    def master_of(self, dev: NetDev) -> Bond | None:
        """The bond whose ``xdp_master_redirect`` takes this slave's XDP_TX: the static key
        ``bpf_master_redirect_enabled_key`` is on while any bond has a program, and then every
        bond slave's XDP_TX is rewritten (``bpf_prog_run_xdp``)."""
        if dev.master is None or not self.master_key:
            return None
        bond = self.world.devices.get(dev.master)
        return bond if isinstance(bond, Bond) else None

    def _up_through_master(self, dev: NetDev, per_entry: IntArray) -> None:
        """Frames the stack gets from a slave climb through its bond (``bond_handle_frame``);
        in active-backup, frames on a backup slave are not delivered to the bond
        (``bond_should_deliver_exact_match``)."""
        name = dev.master
        while name is not None:
            bond = self.world.devices.get(name)
            if not isinstance(bond, Bond):
                return
            if bond.mode == "active-backup" and bond.curr_active != dev.name:
                return
            bond.add("rx_packets", int(per_entry.sum()))
            bond.add("rx_bytes", int(per_entry @ self.world.entries.size))
            dev, name = bond, bond.master

    def _master_redirect(
        self,
        dev: NetDev,
        bond: Bond,
        c: Compiled,
        cpus: IntArray,
        queues: IntArray,
        counts: IntArray,
        mask: npt.NDArray[np.bool_],
        polls: FloatArray,
        depth: int,
    ) -> None:
        """``xdp_master_redirect``: bond not up -> XDP_ABORTED; the bond's choice of slave is
        the receiving one, or none -> XDP_TX here; another slave -> XDP_REDIRECT to it, as
        ``bpf_redirect(slave ifindex, 0)`` would (counted as a redirect)."""
        sub = np.where(mask[None, :], counts, 0)
        if not bond.admin_up:
            n = int(sub.sum())
            dev.add("xdp_aborted", n)
            self.tp.exception[(dev.name, "XDP_ABORTED")] += n
            return
        parts = BondLogic(bond, self.world.devices).xdp_split(cpus, sub, self.world.entries.headers)
        all_entries = np.ones(sub.shape[1], dtype=bool)
        for slave_name, part in parts.items():
            if not part.any():
                continue
            if slave_name is None or slave_name == dev.name:
                self._xdp_tx(dev, c, cpus, queues, part, all_entries, polls, depth)
                continue
            target = self.world.devices[slave_name]
            dev.add("xdp_redirect", int(part.sum()))
            self._redirect_to(
                dev, target, cpus, part, polls, depth, c.mode or MODE_DRV, counts.sum(axis=1)
            )

    def _xdp_tx(
        self,
        dev: NetDev,
        c: Compiled,
        cpus: IntArray,
        queues: IntArray,
        counts: IntArray,
        mask: npt.NDArray[np.bool_],
        polls: FloatArray,
        depth: int,
    ) -> None:
        e = self.world.entries
        sub = np.where(mask[None, :], counts, 0)
        n_tx = int(sub.sum())
        dev.add("xdp_tx", n_tx)
        if isinstance(dev, Tun):
            # tun_xdp_tx -> tun_xdp_xmit on this tap (fast path) or generic_xdp_tx ->
            # tun_net_xmit (slow path): back toward userspace on queue cpu % numqueues.
            self._tap_claim("tx" if c.mode == MODE_DRV else "gtx", dev, dev, cpus, sub)
            return
        if c.mode == MODE_SKB:
            # generic_xdp_tx: through the device's own TX queue (bypassing the qdisc).
            if isinstance(dev, Nic):
                wire = float(sub.sum(axis=0) @ e.wire_bytes)
                self._stack_claim("gtx", dev, dev, n_tx, wire)
            return
        if isinstance(dev, Veth):
            # veth_xdp_tx -> veth_xdp_xmit on this device: frames land on the peer's ring.
            peer = self.world.devices.get(dev.peer)
            if peer is None or peer.xdp.get(MODE_DRV) is None or not peer.running:
                dev.add("xdp_tx_errors", n_tx)
                self.tp.exception[(dev.name, "XDP_TX")] += n_tx
                return
            dev.add("tx_packets", n_tx)
            dev.add("tx_bytes", int(sub.sum(axis=0) @ e.size))
            if depth < MAX_CHAIN:
                self.deliver(peer, cpus, queues, sub, polls, depth + 1)
            return
        assert isinstance(dev, Nic)
        per_row = sub.sum(axis=1)
        ring = self._tx_rings_for(dev, cpus, queues)
        lost = int(per_row[ring < 0].sum())
        if lost:
            dev.add("xdp_tx_errors", lost)
            self.tp.exception[(dev.name, "XDP_TX")] += lost
        ok = ring >= 0
        if np.any(ok):
            self._claim("tx", dev, dev, ring[ok], per_row[ok], (sub @ e.wire_bytes)[ok])

    def _tx_rings_for(self, nic: Nic, cpus: IntArray, queues: IntArray) -> IntArray:
        """XDP_TX ring per row (-1: none): ixgbe and ice use the polling CPU's ring
        (``ixgbe_determine_xdp_ring``); i40e/mlx5 the ring paired with the RX queue
        (UNVERIFIED for i40e)."""
        assert nic.driver is not None
        if nic.xdp_rings == 0:
            return np.full(len(cpus), -1, dtype=np.int64)
        by_cpu: IntArray = nic.ring_of_cpu[cpus]
        if nic.driver.tx_ring_rule == "per_queue_pair":
            return np.where(queues >= 0, queues % nic.xdp_rings, by_cpu)
        return by_cpu

    def _redirect(
        self,
        dev: NetDev,
        c: Compiled,
        cpus: IntArray,
        counts: IntArray,
        mask: npt.NDArray[np.bool_],
        polls: FloatArray,
        depth: int,
    ) -> None:
        """``xdp_do_redirect``: failures fire ``xdp_redirect_err`` and the driver drops with
        ``xdp_exception`` (native); successes fire ``xdp_redirect`` and go into the per-CPU
        bulk queue of the target device -- one queue per target, shared by every devmap entry
        and ifindex redirect pointing at it -- flushed every 16 frames and at poll end."""
        w = self.world
        per_entry = counts.sum(axis=0)
        dev.add("xdp_redirect", int(per_entry[mask].sum()))
        self._redirect_failed(dev, c.err, np.where(mask, per_entry, 0), c.mode or MODE_DRV)
        ok = mask & (c.err == 0) & (per_entry > 0)
        if not np.any(ok):
            return
        mode = c.mode or MODE_DRV
        batch = counts.sum(axis=1)
        self.tp.redirect += int(per_entry[ok].sum())  # one xdp_redirect per input frame
        by_target: dict[int, list[tuple[IntArray, Program | None]]] = defaultdict(list)
        if c.broadcast:
            self._broadcast(dev, c, counts, ok, by_target, mode)
        else:
            dmap = w.maps.get(c.map_name) if c.map_name else None
            keys = c.key if c.key is not None else np.full(len(ok), -1, dtype=np.int64)
            for ifindex in np.unique(c.target[ok]):
                for key in np.unique(keys[ok & (c.target == ifindex)]):
                    sel = ok & (c.target == ifindex) & (keys == key)
                    entry = dmap.lookup(int(key)) if dmap is not None and key >= 0 else None
                    prog = entry.egress if entry is not None else None
                    by_target[int(ifindex)].append((np.where(sel[None, :], counts, 0), prog))
        for ifindex, parts in by_target.items():
            tgt = w.by_ifindex[ifindex]
            self._enqueue(dev, tgt, cpus, parts, polls, depth, mode, batch)

    def _redirect_failed(self, dev: NetDev, err: IntArray, per_entry: IntArray, mode: str) -> None:
        """Frames whose redirect failed: ``xdp:xdp_redirect_err`` by errno, and the native
        driver's drop with ``xdp:xdp_exception`` (``tun_xdp_act`` only returns the error)."""
        bad = (err != 0) & (per_entry > 0)
        for code in np.unique(err[bad]):
            hits = int(per_entry[bad & (err == code)].sum())
            self.tp.redirect_err[(dev.name, Errno(int(code)).name)] += hits
            if mode == MODE_DRV and not isinstance(dev, Tun):
                self.tp.exception[(dev.name, "XDP_REDIRECT")] += hits

    def _broadcast(
        self,
        dev: NetDev,
        c: Compiled,
        counts: IntArray,
        ok: npt.NDArray[np.bool_],
        by_target: dict[int, list[tuple[IntArray, Program | None]]],
        mode: str,
    ) -> None:
        """``dev_map_enqueue_multi``: a clone for every entry that passes ``is_valid_dst``
        (invalid ones skipped silently), without the ingress device and -- with
        BPF_F_EXCLUDE_INGRESS -- its upper devices (``get_upper_ifindexes``). Generic XDP
        does not pre-filter: the first failing clone aborts the rest with its error."""
        from xdptui.sim.programs import BPF_F_EXCLUDE_INGRESS

        w = self.world
        dmap = w.maps.get(c.map_name or "")
        if dmap is None:
            return
        excluded = {dev.name}
        if c.broadcast & BPF_F_EXCLUDE_INGRESS:
            up = dev.master
            while up is not None:
                excluded.add(up)
                upper = w.devices.get(up)
                up = upper.master if upper is not None else None
        else:
            excluded = set()
        for _key, entry in dmap.walk():
            tgt = w.devices.get(entry.dev)
            if tgt is None or tgt.name in excluded:
                continue
            fits = w.entries.size <= tgt.mtu + 14 + 4
            if mode == MODE_DRV:
                if not self.has_ndo_xmit(tgt) or not tgt.admin_up:
                    continue
                sel = ok & fits
            else:
                if not tgt.admin_up or not np.all(fits[ok]):
                    err = Errno.ENETDOWN if not tgt.admin_up else Errno.EMSGSIZE
                    n = int(counts.sum(axis=0)[ok].sum())
                    self.tp.redirect_err[(dev.name, err.name)] += n
                    return
                sel = ok
            if np.any(sel):
                by_target[tgt.ifindex].append((np.where(sel[None, :], counts, 0), entry.egress))

    def _redirect_to(
        self,
        dev: NetDev,
        tgt: NetDev,
        cpus: IntArray,
        sub: IntArray,
        polls: FloatArray,
        depth: int,
        mode: str,
        batch: IntArray,
    ) -> None:
        """A redirect chosen outside the program (the bond's ``xdp_master_redirect``):
        ``__xdp_enqueue``'s checks, then the bulk queue like any ifindex redirect."""
        key = (dev.name, tgt.name, mode)
        err = self._err_cache.get(key)
        if err is None:
            act = np.full(sub.shape[1], XDP_REDIRECT, dtype=np.int64)
            target = np.full(sub.shape[1], tgt.ifindex, dtype=np.int64)
            err = self._redirect_errors(dev, act, target, mode)
            self._err_cache[key] = err
        self._redirect_failed(dev, err, sub.sum(axis=0), mode)
        sub = np.where((err != 0)[None, :], 0, sub)
        if not sub.any():
            return
        self.tp.redirect += int(sub.sum())
        self._enqueue(dev, tgt, cpus, [(sub, None)], polls, depth, mode, batch)

    def _enqueue(
        self,
        dev: NetDev,
        tgt: NetDev,
        cpus: IntArray,
        parts: list[tuple[IntArray, Program | None]],
        polls: FloatArray,
        depth: int,
        mode: str,
        batch: IntArray,
    ) -> None:
        """``bq_enqueue`` then ``bq_xmit_all`` at the flush: the egress program of the entry
        that enqueued first this cycle runs on the whole bulk (PASS sends, DROP frees, other
        codes raise ``xdp_exception`` on the target and free), then ``ndo_xdp_xmit`` sends a
        prefix and devmap frees the rest. ``batch`` is every frame the rows polled: it sets
        how many polls carry at least one frame for this target. Generic XDP sends each skb
        at once (``dev_map_generic_redirect``), the egress program per skb."""
        sub = parts[0][0] if len(parts) == 1 else np.sum([p for p, _ in parts], axis=0)
        if mode == MODE_SKB:
            kept = self._egress(tgt, parts, None, polls, dev)
            self._generic_xmit(dev, tgt, cpus, kept, polls, depth)
            return
        per_row = sub.sum(axis=1)
        row = self.tp.xmit(dev.name, tgt.name)
        flushes = self._smoothed_flushes(dev, tgt, cpus, per_row, polls, batch)
        row[3] += float(flushes.sum())
        first = next((p.name for _, p in parts if p is not None), "")
        for k in np.flatnonzero(per_row):
            bq = self.tp.bulk.setdefault((int(cpus[k]), dev.name, tgt.name), BulkTally())
            bq.frames += int(per_row[k])
            bq.flushes += float(flushes[k])
            bq.last_bulk = float(per_row[k]) / max(float(flushes[k]), 1e-9)
            bq.program = first
        if any(prog is not None for _, prog in parts):
            before = int(sub.sum())
            sub = self._egress(tgt, parts, flushes, polls, dev)
            if self.world.devmap_egress == "flush":
                row[1] += before - int(sub.sum())
                row[4] += before - int(sub.sum())
            per_row = sub.sum(axis=1)
            if not per_row.any():
                return
        self._ndo_xdp_xmit(dev, tgt, cpus, sub, per_row, flushes, polls, depth, row)

    def _smoothed_flushes(
        self,
        dev: NetDev,
        tgt: NetDev,
        cpus: IntArray,
        per_row: IntArray,
        polls: FloatArray,
        batch: IntArray,
    ) -> FloatArray:
        """Flushes of each row's bulk queue, from the share of its polls' frames that go to
        ``tgt`` and the frames per poll -- both smoothed per CPU over RATE_TAU_NS, so that a
        short step holding a frame or two does not decide how polls are filled."""
        ncpu = self.world.nr_cpus
        key = (dev.name, tgt.name)
        state = self._bq_rates.get(key)
        if state is None:
            state = np.zeros((4, ncpu))  # frames to tgt, all frames, polls, age (ns)
            self._bq_rates[key] = state
        age = state[3]
        alpha = np.where(
            age < RATE_TAU_NS, self._dt / (age + self._dt), 1.0 - np.exp(-self._dt / RATE_TAU_NS)
        )
        f = np.bincount(cpus, weights=per_row, minlength=ncpu)
        b = np.bincount(cpus, weights=np.maximum(batch, per_row), minlength=ncpu)
        p = np.bincount(cpus, weights=polls, minlength=ncpu)
        active = b > 0
        for i, x in enumerate((f, b, p)):
            state[i] = np.where(active, state[i] + alpha * (x - state[i]), state[i])
        state[3] = np.where(active, state[3] + self._dt, state[3])
        sf, sb, sp = state[0][cpus], state[1][cpus], state[2][cpus]
        r = np.where(sb > 0, sf / np.maximum(sb, 1e-12), 0.0)
        m = np.where(sp > 0, sb / np.maximum(sp, 1e-12), 1.0)
        return _flushes_from(per_row, polls, r, m)

    def _egress(
        self,
        tgt: NetDev,
        parts: list[tuple[IntArray, Program | None]],
        flushes: FloatArray | None,
        polls: FloatArray,
        rx_dev: NetDev,
    ) -> IntArray:
        """Run devmap egress programs; returns the frames they let through (XDP_PASS).

        Since the seed's patch (``bq_xmit_all`` -> ``dev_map_bpf_prog_run``) the program of
        the first enqueuer runs on the whole bulk: with parts carrying different programs a
        poll's bulk takes the program of the part its first frame belongs to (pktgen frames
        cycle through the entries, so that is a position p * m mod L of the row's cycle).
        Before it (``world.devmap_egress == "enqueue"``) every frame met its own entry's
        program at enqueue."""
        progs = [prog for _, prog in parts]
        if (
            flushes is not None
            and self.world.devmap_egress == "flush"
            and len({id(p) for p in progs}) > 1
        ):
            parts = self._first_enqueuer(parts, polls)
        kept: IntArray | None = None
        for sub, prog in parts:
            if prog is not None:
                raw = self._egress_verdicts(prog, rx_dev, tgt)
                per_entry = sub.sum(axis=0)
                other = (raw != XDP_PASS) & (raw != XDP_DROP) & (per_entry > 0)
                for code in np.unique(raw[other]):
                    name = action_name(int(code))
                    self.tp.exception[(tgt.name, name)] += int(per_entry[raw == code].sum())
                sub = np.where((raw == XDP_PASS)[None, :], sub, 0)
            kept = sub if kept is None else kept + sub
        assert kept is not None
        return kept

    def _first_enqueuer(
        self, parts: list[tuple[IntArray, Program | None]], polls: FloatArray
    ) -> list[tuple[IntArray, Program | None]]:
        """Re-deal the frames of one (CPU, target) bulk queue so each poll's whole bulk meets
        the program of the part that enqueued first in that poll."""
        total = np.sum([p for p, _ in parts], axis=0)
        owner = np.full(total.shape[1], -1, dtype=np.int64)
        for i, (p, _) in enumerate(parts):
            owner[p.sum(axis=0) > 0] = i
        shares = np.zeros((total.shape[0], len(parts)))
        for k in range(total.shape[0]):
            row = total[k]
            entries = np.flatnonzero(row)
            if not len(entries):
                continue
            m = row.sum() / polls[k] if polls[k] > 0 else 1.0
            if m <= 1.0:  # every frame is its own bulk: each meets its own program
                for i, (p, _) in enumerate(parts):
                    shares[k, i] = p[k].sum() / row.sum()
                continue
            # Poll p starts at frame floor(p * m) of the row's cycle through its entries; a
            # saturated queue polls exactly NAPI_BUDGET frames, so snap m to whole frames.
            if abs(m - round(m)) < 0.02 * m:
                m = float(round(m))
            cycle = len(entries)
            starts = np.floor(np.arange(min(64 * cycle, 4096)) * m).astype(np.int64) % cycle
            first = owner[entries[starts]]
            for i in range(len(parts)):
                shares[k, i] = np.count_nonzero(first == i) / len(first)
        out: list[tuple[IntArray, Program | None]] = []
        remaining = total.copy()
        left = total.sum(axis=1)
        for i, (_, prog) in enumerate(parts):
            want = np.floor(shares[:, i] * total.sum(axis=1) + 1e-9).astype(np.int64)
            if i == len(parts) - 1:
                want = left
            part = split_rows(remaining, np.minimum(want, left))
            remaining -= part
            left -= part.sum(axis=1)
            out.append((part, prog))
        return out

    def _egress_verdicts(self, prog: Program, rx_dev: NetDev, tgt: NetDev) -> IntArray:
        key = (prog.prog_id, rx_dev.name, tgt.name)
        cached = self._egress_cache.get(key)
        if cached is None:
            cached = prog.run(make_context(self.world, rx_dev, prog, egress=tgt))
            self._egress_cache[key] = cached
        return cached

    def _ndo_xdp_xmit(
        self,
        src: NetDev,
        tgt: NetDev,
        cpus: IntArray,
        sub: IntArray,
        per_row: IntArray,
        flushes: FloatArray,
        polls: FloatArray,
        depth: int,
        row: list[float],
    ) -> None:
        """``bq_xmit_all`` -> the target's ``ndo_xdp_xmit``: a NIC queues onto the sending
        CPU's XDP ring (sent prefix, the rest refused and freed by devmap); a veth hands them
        to its peer's NAPI on the same CPU (``veth_xdp_xmit``)."""
        e = self.world.entries
        if isinstance(tgt, Bond):
            self._bond_xdp_xmit(src, tgt, cpus, sub, flushes, polls, depth, row)
            return
        if isinstance(tgt, Tun):
            # tun_xdp_xmit: no attached queue -> -ENXIO for the whole bulk; else queue
            # smp_processor_id() % numqueues, pushed until its ring is full.
            n = int(per_row.sum())
            if not tgt.attached:
                tgt.add("xdp_xmit", n)
                tgt.add("xdp_xmit_errors", n)
                row[1] += n
                row[2] += float(flushes.sum())
                return
            self._tap_claim("xmit", tgt, src, cpus, sub, row, float(flushes.sum()))
            return
        if isinstance(tgt, Nic):
            ring = (
                tgt.ring_of_cpu[cpus] if tgt.xdp_rings else np.full(len(cpus), -1, dtype=np.int64)
            )
            none = (ring < 0) & (per_row > 0)
            if np.any(none):
                # i40e/mlx5 past the last queue pair, or no XDP rings: -ENXIO for the whole bulk.
                n = int(per_row[none].sum())
                tgt.add("xdp_xmit", n)
                tgt.add("xdp_xmit_errors", n)
                row[1] += n
                row[2] += float(flushes[none].sum())
            ok = (ring >= 0) & (per_row > 0)
            if np.any(ok):
                self._claim("xmit", tgt, src, ring[ok], per_row[ok], (sub @ e.wire_bytes)[ok], row)
            return
        if isinstance(tgt, Veth):
            n = int(per_row.sum())
            peer = self.world.devices.get(tgt.peer)
            tgt.add("xdp_xmit", n)
            if peer is None or not peer.running:
                tgt.add("xdp_xmit_errors", n)
                row[1] += n
                row[2] += float(flushes.sum())
                return
            tgt.add("tx_packets", n)
            tgt.add("tx_bytes", int(sub.sum(axis=0) @ e.size))
            row[0] += n
            if depth < MAX_CHAIN:
                self.deliver(
                    peer, cpus, np.full(len(cpus), -1, dtype=np.int64), sub, polls, depth + 1
                )

    def _bond_xdp_xmit(
        self,
        src: NetDev,
        bond: Bond,
        cpus: IntArray,
        sub: IntArray,
        flushes: FloatArray,
        polls: FloatArray,
        depth: int,
        row: list[float],
    ) -> None:
        """``bond_xdp_xmit``: a slave per frame (``bond_xdp_get_xmit_slave``), each handed to
        that slave's ``ndo_xdp_xmit`` one frame at a time; no slave -> -ENXIO."""
        parts = BondLogic(bond, self.world.devices).xdp_split(cpus, sub, self.world.entries.headers)
        bond.add("tx_packets", int(sub.sum()))
        bond.add("tx_bytes", int(sub.sum(axis=0) @ self.world.entries.size))
        for slave_name, part in parts.items():
            per_row = part.sum(axis=1)
            if not per_row.any():
                continue
            if slave_name is None:
                n = int(per_row.sum())
                row[1] += n
                row[2] += float(flushes.sum())
                bond.add("tx_packets", -n)
                continue
            slave = self.world.devices[slave_name]
            # one frame per call: every frame is its own "flush" toward the slave
            self._ndo_xdp_xmit(
                src, slave, cpus, part, per_row, per_row.astype(np.float64), polls, depth, row
            )

    def _generic_xmit(
        self, src: NetDev, tgt: NetDev, cpus: IntArray, sub: IntArray, polls: FloatArray, depth: int
    ) -> None:
        """``xdp_do_generic_redirect``: the skb goes out at once through ``generic_xdp_tx``
        (no bulk queue, no ``xdp_devmap_xmit``)."""
        e = self.world.entries
        n = int(sub.sum())
        if isinstance(tgt, Tun):
            self._tap_claim("gtx", tgt, src, cpus, sub)
            return
        if isinstance(tgt, Nic):
            wire = float(sub.sum(axis=0) @ e.wire_bytes)
            self._stack_claim("gtx", tgt, src, n, wire)
        elif isinstance(tgt, Veth):
            peer = self.world.devices.get(tgt.peer)
            if peer is None or not peer.running:
                tgt.add("tx_dropped", n)
                return
            tgt.add("tx_packets", n)
            tgt.add("tx_bytes", int(sub.sum(axis=0) @ e.size))
            if depth < MAX_CHAIN:
                self.deliver(peer, cpus, np.full(len(cpus), -1), sub, polls, depth + 1)

    # ------------------------------------------------------------------ TX

    def _tap_claim(
        self,
        kind: str,
        tap: Tun,
        src: NetDev,
        cpus: IntArray,
        sub: IntArray,
        row: list[float] | None = None,
        calls: float = 0.0,
    ) -> None:
        """Frames toward a tap's userspace: queue ``smp_processor_id() % numqueues``."""
        per_row = sub.sum(axis=1)
        ok = per_row > 0
        if not np.any(ok):
            return
        queue = cpus % tap.queues
        wire = (sub @ self.world.entries.wire_bytes)[ok]
        self._claim(kind, tap, src, queue[ok], per_row[ok], wire, row)
        self.claims[tap.name][-1].calls = calls

    def _claim(
        self,
        kind: str,
        ring_dev: Nic | Tun,
        src: NetDev,
        ring: IntArray,
        frames: IntArray,
        wire: npt.NDArray[np.float64] | npt.NDArray[np.int64],
        row: list[float] | None = None,
    ) -> None:
        """Offer ``frames[k]`` (``wire[k]`` bytes on the wire) to ``ring[k]`` of ``ring_dev``."""
        assert ring_dev.tx is not None
        nr = len(ring_dev.tx.occ)
        per_ring = np.bincount(ring, weights=frames, minlength=nr).astype(np.int64)
        per_bytes = np.bincount(ring, weights=wire, minlength=nr).astype(np.float64)
        self.claims[ring_dev.name].append(TxClaim(kind, src, per_ring, per_bytes, row))

    def _stack_claim(self, kind: str, ring_dev: Nic, src: NetDev, frames: int, wire: float) -> None:
        self._claim(
            kind,
            ring_dev,
            src,
            np.array([ring_dev.xdp_rings]),
            np.array([frames]),
            np.array([wire]),
        )

    def _drain_tx(self, dt: int) -> None:
        """TX rings take what they have room for and drain at line rate (frame + 20 bytes of
        preamble and gap), sharing the wire; refused frames are counted where the kernel
        counts them (XDP_TX: ``xdp_tx_errors`` + ``xdp_exception``; ndo_xdp_xmit: devmap
        ``drops``; stack: ``tx_dropped``)."""
        claims = self.claims
        self.claims = defaultdict(list)
        for dev in self.world.devices.values():
            if not isinstance(dev, Nic | Tun) or dev.tx is None:
                continue
            tx = dev.tx
            mine = claims.get(dev.name, [])
            if mine:
                inc = np.sum([cl.frames for cl in mine], axis=0)
                inc_bytes = np.sum([cl.wire_bytes for cl in mine], axis=0)
            elif not tx.occ.any():
                if isinstance(dev, Nic):
                    dev.tx_demand_last = 0.0
                continue
            else:
                inc = np.zeros(len(tx.occ), dtype=np.int64)
                inc_bytes = np.zeros(len(tx.occ))
            demand = tx.occ + inc
            demand_bytes = tx.occ_bytes + inc_bytes
            if isinstance(dev, Tun):
                self._drain_tap(dev, tx, demand, demand_bytes, mine, dt)
                continue
            tot_f = int(demand.sum())
            tot_b = float(demand_bytes.sum())
            cap_b = cap_f = 0.0
            if dev.running:
                assert dev.driver is not None
                cap_b = dev.speed_bps / 8.0 * dt / 1e9
                cap_f = (
                    dev.driver.tx_pps_max * dt / 1e9
                    if dev.driver.tx_pps_max is not None
                    else float("inf")
                )
            if tot_b <= cap_b and tot_f <= cap_f:
                out = demand.copy()
                tx.credit[:] = 0.0
            else:
                # The wire serves the rings round-robin by frame: each ring sends the same share
                # of what it holds; fractions of a frame carry per ring into the next step.
                frac = min(cap_b / tot_b if tot_b else 0.0, cap_f / tot_f if tot_f else 0.0)
                want = demand * frac + tx.credit
                out = np.minimum(np.floor(want + 1e-9).astype(np.int64), demand)
                tx.credit = np.where(demand > out, want - out, 0.0)
            out_bytes = np.where(demand > 0, demand_bytes * out / np.maximum(demand, 1), 0.0)
            left = demand - out
            left_bytes = demand_bytes - out_bytes
            refused = np.maximum(left - tx.size, 0)
            mean_left = np.where(left > 0, left_bytes / np.maximum(left, 1), 0.0)
            tx.occ = left - refused
            tx.occ_bytes = left_bytes - refused * mean_left
            tx.sent += out
            tx.dropped += refused
            sent_frames = int(out.sum())
            dev.add("tx_packets", sent_frames)
            dev.add("tx_bytes", round(float(out_bytes.sum())) - WIRE_OVERHEAD * sent_frames)
            dev.tx_demand_last = float(inc[:-1].sum())  # frames offered to the XDP rings
            if mine:
                self._settle(dev, mine, refused)

    def _drain_tap(
        self,
        tap: Tun,
        tx: TxRings,
        demand: IntArray,
        demand_bytes: FloatArray,
        claims: list[TxClaim],
        dt: int,
    ) -> None:
        """The reader (a VM's vhost, a program) takes frames off each queue's ring at its rate
        (``tun_do_read``); what the rings of ``tx_queue_len`` can't hold is refused."""
        cap = (tap.reader_pps or 0.0) / tap.queues * dt / 1e9
        want = np.minimum(demand.astype(np.float64), cap + tx.credit)
        out = np.floor(want + 1e-9).astype(np.int64)
        tx.credit = np.where(demand > out, np.minimum(want - out + (cap - want).clip(0), 1.0), 0.0)
        out_bytes = np.where(demand > 0, demand_bytes * out / np.maximum(demand, 1), 0.0)
        left = demand - out
        refused = np.maximum(left - tx.size, 0)
        left_bytes = demand_bytes - out_bytes
        mean_left = np.where(left > 0, left_bytes / np.maximum(left, 1), 0.0)
        tx.occ = left - refused
        tx.occ_bytes = left_bytes - refused * mean_left
        tx.sent += out
        tx.dropped += refused
        sent = int(out.sum())
        tap.add("tx_packets", sent)
        tap.add("tx_bytes", round(float(out_bytes.sum())) - WIRE_OVERHEAD * sent)
        if claims:
            self._settle(tap, claims, refused)

    def _settle(self, ring_dev: Nic | Tun, claims: list[TxClaim], refused: IntArray) -> None:
        """Share each ring's refused frames among the claims that offered frames to it."""
        offered = np.stack([cl.frames for cl in claims], axis=1)  # [R, C]
        lost_rc = split_rows(offered, np.minimum(refused, offered.sum(axis=1)))
        lost_c = lost_rc.sum(axis=0)
        for cl, n_lost_np in zip(claims, lost_c, strict=True):
            n_lost = int(n_lost_np)
            frames = int(cl.frames.sum())
            if cl.kind == "tx":
                if n_lost:
                    cl.dev.add("xdp_tx_errors", n_lost)
                    if isinstance(ring_dev, Tun):  # tun_xdp_xmit: one call per frame
                        ring_dev.add("tx_dropped", n_lost)
                    else:
                        self.tp.exception[(cl.dev.name, "XDP_TX")] += n_lost
            elif cl.kind == "xmit":
                ring_dev.add("xdp_xmit", frames)
                ring_dev.add("xdp_xmit_errors", n_lost)
                row = cl.row if cl.row is not None else self.tp.xmit(cl.dev.name, ring_dev.name)
                row[0] += frames - n_lost
                if isinstance(ring_dev, Tun) and n_lost:
                    # tun_xdp_xmit: dev->tx_dropped++ once per call that met a full ring
                    ring_dev.add("tx_dropped", max(1, min(n_lost, round(cl.calls))))
                row[1] += n_lost
            elif cl.kind == "gtx":
                if n_lost:
                    ring_dev.add("tx_dropped", n_lost)
                    if not isinstance(ring_dev, Tun):
                        self.tp.exception[(cl.dev.name, "XDP_TX")] += n_lost
            else:
                ring_dev.add("tx_dropped", n_lost)


def _smoothing(dt: int, age_ns: float) -> float:
    """Weight of a new observation: a running mean while the estimate is younger than
    RATE_TAU_NS (so a first short step does not stand for the whole past), then an
    exponential average over RATE_TAU_NS."""
    if age_ns < RATE_TAU_NS:
        return dt / (age_ns + dt)
    return 1.0 - float(np.exp(-dt / RATE_TAU_NS))


def _flushes_from(frames: IntArray, polls: FloatArray, r: FloatArray, m: FloatArray) -> FloatArray:
    """A poll of m frames, a share r of them for this target, flushes when at least one is
    (1 - (1 - r)^m) and once more per full queue of 16 (``bq_enqueue`` sends a full queue
    mid-poll, ``xdp_do_flush`` the rest). Counted per frame for the target -- flushes per
    poll over the r * m such frames a poll carries -- so a step holding only part of a poll
    gets its share; never more flushes than frames."""
    f = frames.astype(np.float64)
    rc = np.clip(r, 0.0, 1.0)
    hit = 1.0 - np.power(1.0 - rc, m)
    extra = np.maximum(np.ceil(m * rc / BULK - 1e-9) - 1.0, 0.0)
    per_frame = (hit + extra) / np.maximum(m * rc, 1e-12)
    out = np.where(m <= 1.0, f, np.minimum(f * per_frame, f))
    return np.where(frames > 0, out, 0.0)


def _water_fill(demand: FloatArray, cost: FloatArray, budget: float) -> FloatArray:
    """NAPI round-robin on a saturated CPU: every instance gets up to the same number of
    frames; find that level so the time spent equals ``budget``."""
    if len(demand) == 1:
        return np.minimum(demand, budget / cost)
    order = np.argsort(demand, kind="stable")
    d = demand[order]
    cst = cost[order]
    served = np.zeros_like(d)
    remaining = budget
    level_prev = 0.0
    for i in range(len(d)):
        rate = float(cst[i:].sum())  # ns per frame-level across the instances still active
        need = (d[i] - level_prev) * rate
        if need <= remaining:
            remaining -= need
            level_prev = float(d[i])
            served[i] = d[i]
        else:
            level = level_prev + remaining / rate
            served[i:] = level
            break
    else:
        served[:] = d
    out = np.empty_like(served)
    out[order] = served
    return out
