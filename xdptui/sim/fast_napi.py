"""Fast mode's NAPI instances run by NAPI's own loop (``xdptui.sim.napi``): interrupts, poll
lists and polls exactly as exact mode has them, with frames as runs of queue positions instead
of descriptors, so a step's polls -- how many, when, how big, where each starts -- are exact
mode's, and only what they do is added up per flow class.

Covered: the queues of a NIC fed by one pktgen source, a veth the local stack writes into
or one covered sender's redirects feed, and a tap written one frame per ``write``, where the
CPU serves no other kind of instance and frames stay on its timeline only through their own
costs: their programs carry no state from frame to frame, and what they send goes to NICs,
taps, bonds or such veths -- a broadcast to NICs and veths
(``napi_tables.broadcast_targets``) included. A card whose fed ports are each fed by one
source runs in the loop with its DMA, and so do its ports' XDP rings and wire when all they
send is their own XDP_TX, a balance-rr bond's frames, their redirects to another of its
ports or an off-card port's redirects into one of them (the frames they send take the
card's DMA too). The other instances keep fast mode's arithmetic (``xdptui.sim.fast``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.sim import devmap, napi
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.bond.bond_main import IPPROTO_IGMP, Bond, BondLogic
from xdptui.sim.columns import ClassIds, each, holds, values
from xdptui.sim.core.filter import BROADCAST, RR_CLASS, TX_HERE, TX_RR, Compiled
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev import rings
from xdptui.sim.dev.netdev import MODE_DRV, MODE_SKB, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue, batch_left
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.fast_burst import Feed
from xdptui.sim.fast_shapes import Facts
from xdptui.sim.fast_tx import Played, queued
from xdptui.sim.kconst import (
    XDP_PASS,
    XDP_REDIRECT,
    XDP_TX,
)
from xdptui.sim.layout import Grouped, SourceLayout, sequence_layout
from xdptui.sim.napi_tables import (
    Tables,
    basis_of,
    broadcast_targets,
    cat,
    class_counts_many,
    class_rows_many,
    cpu_rows,
    first_at,
    full_prefix,
    is_tap,
    label_hit,
    segments,
    seq_range,
    source_rows,
    veth_napi,
    veth_tx_label,
    written_tap,
)
from xdptui.sim.shared import SharedCache
from xdptui.sim.splitting import spans
from xdptui.sim.traffic import Source
from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

# what a veth's receive queues run: its native program on the rq->napi ring; or, with no
# native program, the stack's backlog (``veth_xmit`` -> ``__netif_rx``), a generic program
# on each skb, or none
RX_MODES = (MODE_DRV, MODE_SKB, None)

POLLS_CHUNK = 1 << 16  # poll records a step has room for at least (more as its rate expects)
# The loop runs as plain Python (~25 us a poll) until this many polls -- run so far, plus those
# the last step's rate says are still to come before the run's end (``FastNapi.horizon``) --
# then compiled: loading the compiled code costs about half a second a process, which a short
# run would not win back. The results are the same either way (integer arithmetic).
JIT_AFTER_POLLS = 20_000
RATE_AFTER_NS = 64_000  # a step this long tells the rate of polls to come
_polls_run = [0]  # polls this process ran through the loop
CARD_FRAMES_PER_POLL = 4  # a card's frame admitted one by one: ~6 us as plain Python, a poll ~25


def bounced(c: Compiled) -> BoolArray:
    """Per entry, whether its frame goes out of the port it came in on: XDP_TX, or a bond's
    ``xdp_master_redirect`` that picks the receiving slave (a round-robin one picks per frame:
    ``round_robin``)."""
    out: BoolArray = c.column(
        "bounced", lambda c: each(lambda a, s: (a == XDP_TX) & (s == TX_HERE), c.act, c.tx_slave)
    )
    return out


def redirected(c: Compiled, ifindex: int) -> BoolArray:
    """The entries whose frames a native program redirects to ``ifindex`` (unicast)."""
    out: BoolArray = (c.act == XDP_REDIRECT) & (c.err == 0) & (c.target == ifindex)
    return out if not c.broadcast else np.zeros(len(out), bool)


def round_robin(c: Compiled) -> BoolArray:
    """Per entry, whether a balance-rr bond picks its frame's slave (``TX_RR``)."""
    out: BoolArray = c.column(
        "round_robin", lambda c: each(lambda a, s: (a == XDP_TX) & (s == TX_RR), c.act, c.tx_slave)
    )
    return out


class Sequences:
    """Each instance's entries over one period while a configuration is built: a source-fed
    queue's made from its layout when asked (held for every queue at once, a million-entry
    source's took 8 bytes an entry), a veth queue's as given."""

    def __init__(self) -> None:
        self._items: list[IntArray | tuple[SourceLayout, int] | None] = []

    def append(self, item: IntArray | tuple[SourceLayout, int] | None) -> None:
        self._items.append(item)

    def __setitem__(self, i: int, seq: IntArray) -> None:
        self._items[i] = seq

    def known(self, i: int) -> bool:
        """Whether instance ``i`` has a sequence (without making it)."""
        return self._items[i] is not None

    def __getitem__(self, i: int) -> IntArray | None:
        item = self._items[i]
        if isinstance(item, tuple):
            lay, q = item
            return lay.entry(lay.queues.positions(q))
        return item


@dataclass
class _TxTables:
    """While a configuration is built: the ports whose rings the loop runs, their rings'
    rows (``rings.X_PORT``, ``rings.X_SIZE``, ...) and their wires' ps per frame."""

    ports: list[str] = field(default_factory=list)
    txr: list[list[int]] = field(default_factory=list)
    wire_s: list[int] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class Config:
    """One configuration's instances and per-position tables (shared by copies of the state)."""

    key: tuple[Any, ...]
    names: tuple[tuple[str, int], ...]  # (device, queue) per instance row
    static: IntArray  # the configuration columns of ``napi.ins`` (I_SRC .. I_POLL_PS)
    tab: Int32Array
    pre: IntArray
    lab: IntArray
    lfl: IntArray
    cpu_first: IntArray
    cpu_inst: IntArray
    layouts: tuple[SourceLayout | None, ...]
    label_value: tuple[IntArray, ...]  # per instance: each label's bulk class (target)
    multi_key: tuple[BoolArray, ...]  # per instance: labels whose frames have several keys
    covered: BoolArray  # instances NAPI's loop may run (before the step's card check)
    fed_by: IntArray  # a veth instance's sender (its row), else -1
    cards: IntArray  # the cards the loop admits for (``napi.K_*`` configuration columns)
    feeds: IntArray  # their fed ports (``napi.F_*``)
    qmap: Int32Array  # per fed port, per table position: rank in its queue's sequence * queues
    # + queue (``napi.F_NQ``)
    card_names: tuple[str, ...]
    tx_ports: tuple[str, ...] = ()  # the ports whose transmit rings and wire the loop runs
    txr: IntArray = field(default_factory=lambda: np.zeros((0, rings.X_WIDTH), np.int64))
    wire_s: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))  # ps a frame
    # a veth instance several instances feed (``napi.I_MFED``): its senders' rows; and per
    # sender, its frames toward the veth as a sequence on the veth's queue
    fed_from: dict[int, tuple[int, ...]] = field(default_factory=dict)
    fed_layouts: dict[int, SourceLayout] = field(default_factory=dict)

    def __deepcopy__(self, memo: dict[int, Any]) -> Config:
        return self


@dataclass
class NapiState:
    """The instances' and CPUs' NAPI state as arrays (``napi``'s columns)."""

    ins: IntArray
    runs: IntArray
    cpu: IntArray
    plist: IntArray
    glob: IntArray
    known: BoolArray  # rows whose state is held here (else in the RxQueue's fast fields)
    names: tuple[tuple[str, int], ...] = ()
    rearm: int = -1  # a change at this time: re-arm before the next step
    basis: list[tuple[int, ...]] = field(default_factory=list)  # what positions count
    rxqs: list[RxQueue] = field(default_factory=list)  # each row's queue (a row is its queue)

    def __deepcopy__(self, memo: dict[int, Any]) -> NapiState:
        """A copy whose ring of runs holds each instance's live runs only, in place: the
        rest of its slots are never read (``napi.push`` and ``napi.take`` stay within
        ``I_RHEAD``..``I_RLEN``), so they stay zero pages instead of a copy of megabytes."""
        new = copy.copy(self)
        memo[id(self)] = new
        k = self.ins[:, napi.I_RLEN]
        rows = np.repeat(np.arange(len(k)), k)
        slots = spans(self.ins[:, napi.I_RHEAD], k) % self.runs.shape[1]
        new.runs = np.zeros(self.runs.shape, self.runs.dtype)  # calloc: pages made when written
        new.runs[rows, slots] = self.runs[rows, slots]
        new.ins, new.cpu, new.plist = self.ins.copy(), self.cpu.copy(), self.plist.copy()
        new.glob, new.known = self.glob.copy(), self.known.copy()
        new.basis = list(self.basis)  # tuples of ints
        new.rxqs = copy.deepcopy(self.rxqs, memo)
        return new


class FastNapi:
    """Runs the covered instances' steps through NAPI's loop and their polls through the
    shared data path."""

    def __init__(self, world: World, dp: Datapath, facts: Facts) -> None:
        self.world = world
        self.dp = dp
        self.facts = facts
        self._configs: SharedCache[tuple[Any, ...], Config] = SharedCache()
        self._fed_at: SharedCache[tuple[int, int], frozenset[str]] = SharedCache()
        # per veth queue the loop fed this step and sending CPU: the frames its ring refused
        self.fed_rx: dict[tuple[int, int], int] = {}
        # per veth queue the local stack writes into (``_written_veth``), what its ring took
        # this step (``FastIO.rx`` counts the sender's from it)
        self.written_rx: dict[int, Rows] = {}
        # per port whose transmit rings the loop ran this step: what they did
        self.played: dict[str, Played] = {}
        self.horizon = 0  # where the run that asks for this step ends (``Fast.run``)
        # per CPU, ns fast mode's own last poll ran past this step's start (``Fast.cpu_debt``);
        # the CPUs whose instances the loop ran this step
        self.debt: FloatArray = np.zeros(world.nr_cpus)
        self.ran_cpus: IntArray = np.zeros(0, np.int64)
        self._poll_rate = 0.0  # polls per ns the last step ran
        self._groups: SharedCache[tuple[int, int, int], Grouped] = SharedCache()
        n_cpus = world.nr_cpus
        self.state = NapiState(
            np.zeros((0, napi.I_WIDTH), np.int64),
            np.zeros((0, napi.RUNCAP, 2), np.int64),
            cpu_rows(n_cpus),
            np.zeros((n_cpus, 1), np.int64),
            np.zeros(3, np.int64),  # (the order events were raised, a run stopped early, feeds)
            np.zeros(0, bool),
        )

    # ------------------------------------------------------------ configuration

    def config(self) -> Config:
        w = self.world
        self.dp.compile()
        key = (w.epoch, tuple((d.name, len(d.rxq)) for d in w.devices.values()))
        hit = self._configs.get(key)
        if hit is None:
            if len(self._configs) > 16:
                self._configs.clear()
            hit = self._configs[key] = self._build(key)
        return hit

    def _build(self, key: tuple[Any, ...]) -> Config:
        w = self.world
        dp = self.dp
        names: list[tuple[str, int]] = []
        rows: list[list[int]] = []
        tables = Tables(w, dp)
        layouts: list[SourceLayout | None] = []
        label_values: list[IntArray] = []
        multi: list[BoolArray] = []
        covered: list[bool] = []
        seqs = Sequences()  # each instance's entries over one period
        bqs: list[IntArray | None] = []  # the bulk labels of those that feed a veth
        # a veth queue's senders: (its instance, the label of their frames toward it)
        feeders: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for dev in w.devices.values():
            ok_dev, src = self._device_covered(dev)
            for rxq in dev.rxq:
                i = len(names)
                names.append((dev.name, rxq.index))
                row = [0] * napi.I_CONF
                row[napi.I_SRC] = -1
                row[napi.I_FEED] = -1
                row[napi.I_CARD] = -1
                row[napi.I_TXR] = -1
                row[napi.I_TXPRE] = -1
                row[napi.I_RRPRE] = -1
                row[napi.I_RRTXR] = -1
                row[napi.I_XPRE] = -1
                row[napi.I_XTXR] = -1
                row[napi.I_CPU] = rxq.irq_cpu
                row[napi.I_W] = rxq.weight
                row[napi.I_ITR] = rxq.itr_ns
                row[napi.I_R] = rxq.size
                row[napi.I_BACKLOG] = int(isinstance(dev, Veth) and dev.backlog())
                row[napi.I_POLL_PS] = round(dev.costs().poll * 1000)
                lay = None
                seq = None
                values = np.zeros(0, np.int64)
                mk = np.zeros(0, bool)
                bq = None
                if ok_dev and src is not None:
                    lay = self.facts.layout(src, dev)
                    q = rxq.index
                    g = lay.queues
                    seq = lay.entry(g.positions(q))
                    row[napi.I_SRC] = src.index
                    row[napi.I_TAB] = tables.add_order(g) + int(g.start[q])
                    values, mk, bq = tables.add(row, dev, seq)
                    feeds_veth = False
                    for k, v in enumerate(values.tolist()):
                        rq = self._veth_rq(dev, rxq.irq_cpu, v, seq[bq == v])
                        if rq is not None:
                            feeders.setdefault(rq, []).append((i, k))
                            feeds_veth = True
                    bq = bq if feeds_veth else None
                rows.append(row)
                layouts.append(lay)
                seqs.append((lay, rxq.index) if seq is not None and lay is not None else None)
                bqs.append(bq)
                label_values.append(values)
                multi.append(mk)
                covered.append(ok_dev)
        # a veth queue one covered instance feeds: NAPI on that instance's CPU, its frames
        # the sender's frames toward it, in order
        fed_by = np.full(len(names), -1, np.int64)
        fed_from: dict[int, tuple[int, ...]] = {}
        fed_layouts: dict[int, SourceLayout] = {}
        for i, (name, q) in enumerate(names):
            dev = w.devices[name]
            fs = feeders.get((name, q), [])
            if not isinstance(dev, Veth) or not fs or not self._veth_covered(dev):
                continue
            toward: list[tuple[int, BoolArray, IntArray]] = []  # (sender, its frames, seq)
            for f, k in fs:
                ent, bq = seqs[f], bqs[f]
                if not covered[f] or ent is None or bq is None or rows[f][napi.I_FEED] >= 0:
                    break
                sender = w.devices[names[f][0]]
                c_f = self.dp.compiled[sender.name]
                mine = label_hit(w, c_f, ent, bq, int(label_values[f][k]))
                passed = (  # (a broadcast's veth entries have no egress program)
                    mine
                    if c_f.broadcast
                    else self._egress_passes(sender, int(label_values[f][k]), ent, mine)
                )
                if passed is None:
                    break  # egress programs the loop cannot run: not in the loop
                seq = ent[passed]
                out = self.dp.compiled[sender.name].out
                if out is not None:  # the frames the sender's program left (``leaving``)
                    seq = out[seq]
                    if (seq < 0).any():
                        break  # outputs not in the table yet: compiled again first
                toward.append((f, passed, seq))
            if len(toward) < len(fs):
                continue
            row = rows[i]
            row[napi.I_CPU] = rows[fs[0][0]][napi.I_CPU]
            seq = np.concatenate([x for _, _, x in toward])
            values, mk, _ = tables.add(row, dev, seq)
            if len(toward) > 1:  # several senders: every frame alike to it, no bulks
                if len(values) or row[napi.I_PM] != 1:
                    continue
                row[napi.I_MFED] = 1
                fed_from[i] = tuple(f for f, _, _ in toward)
                for f, _, x in toward:
                    fed_layouts[f] = sequence_layout(x, len(dev.rxq), q, dp.classes.of_entry)
            else:
                seqs[i] = seq
                layouts[i] = sequence_layout(seq, len(dev.rxq), q, dp.classes.of_entry)
            label_values[i] = values
            multi[i] = mk
            for f, passed, _ in toward:
                rows[f][napi.I_FEED] = i
                rows[f][napi.I_FPRE] = tables.add_prefix(passed)
            fed_by[i] = toward[0][0]
            covered[i] = True
        for i, row in enumerate(rows):  # a sender toward a veth the loop does not run
            c_i = dp.compiled.get(names[i][0])
            generic = c_i is not None and c_i.mode != MODE_DRV
            if (
                covered[i]
                and any(veth_napi(w, dp, v, generic) for v in label_values[i].tolist())
                and row[napi.I_FEED] < 0
            ):
                covered[i] = False
        tx = _TxTables()
        cards, feeds, qmap, card_names = self._cards(
            names, rows, layouts, covered, seqs, tables, tx
        )
        for i, (name, _) in enumerate(names):  # round-robin to a slave on no card of the loop's
            c = dp.compiled.get(name)
            if covered[i] and c is not None and holds(round_robin(c), True):
                plan = self._rr_plan(w.devices[name], c)
                cut = plan is not None and plan[3] is not None and rows[i][napi.I_RRTXR] < 0
                if plan is None or (cut and seqs.known(i)):
                    covered[i] = False
        n = len(names)
        static = np.array(rows, np.int64).reshape(n, napi.I_CONF)
        cpu_of = static[:, napi.I_CPU] if n else np.zeros(0, np.int64)
        order = np.argsort(cpu_of, kind="stable")
        cpu_first = np.searchsorted(cpu_of[order], np.arange(w.nr_cpus + 1)).astype(np.int64)
        return Config(
            key,
            tuple(names),
            static,
            tables.share_tab(),
            cat(tables.pre),
            cat(tables.lab),
            cat(tables.lfl),
            cpu_first,
            order.astype(np.int64),
            tuple(layouts),
            tuple(label_values),
            tuple(multi),
            np.array(covered, bool),
            fed_by,
            cards,
            feeds,
            qmap,
            card_names,
            tuple(tx.ports),
            np.array(tx.txr, np.int64).reshape(len(tx.txr), rings.X_WIDTH),
            np.array(tx.wire_s, np.int64),
            fed_from,
            fed_layouts,
        )

    def _cards(
        self,
        names: list[tuple[str, int]],
        rows: list[list[int]],
        layouts: list[SourceLayout | None],
        covered: list[bool],
        seqs: Sequences,
        tables: Tables,
        tx: _TxTables,
    ) -> tuple[IntArray, IntArray, Int32Array, tuple[str, ...]]:
        """The cards whose DMA the loop applies (``napi.card_admit``): each fed port fed by
        one source, every queue of its ports in the loop, and nothing sent out of them but their
        own programs' XDP_TX, whose rings and wire the loop then runs too (the frames they
        send take the card's DMA: ``napi.card_charge``)."""
        w = self.world
        at = {name: i for i, name in enumerate(names)}
        out: list[list[int]] = []
        feeds: list[list[int]] = []
        qmaps: list[Int32Array] = []
        owned: list[str] = []
        base = 0
        for name, card in w.cards.items():
            ports = w.card_ports(name)
            inst = [at[(d.name, rxq.index)] for d in ports for rxq in d.rxq]
            fed = [d for d in ports if any(w.lands_on(s) is d for s in w.sources)]
            if not fed or not all(covered[i] for i in inst):
                continue
            both = self._transmitting(ports)
            if both is None:
                continue
            sending, external = both
            ext = [at[(d.name, rxq.index)] for d in external for rxq in d.rxq]
            if not all(covered[i] and rows[i][napi.I_XPRE] < 0 for i in ext):
                continue
            lays = [layouts[at[(d.name, 0)]] if d.rxq else None for d in fed]
            srcs = [self.facts.single_source(d) for d in fed]
            if any(x is None for x in lays) or any(x is None for x in srcs):
                continue
            wires = self._wires(sending + external, at, rows, seqs, sending)
            if wires is None:
                continue
            k = len(out)
            row = [0] * napi.K_WIDTH
            row[napi.K_F0] = len(feeds)
            row[napi.K_NF] = len(fed)
            row[napi.K_NPORTS] = len(ports)
            for port, lay, src in zip(fed, lays, srcs, strict=True):
                assert lay is not None and src is not None
                q_inst = [at[(port.name, q)] for q in range(len(port.rxq))]
                assert q_inst == list(range(q_inst[0], q_inst[0] + len(q_inst)))
                nq = len(q_inst)
                word = lay.rank() * nq + lay.queue  # (a table's 2^20 entries x queues: fits)
                qmaps.append(word.astype(np.int32))
                feed = [0] * napi.F_WIDTH
                feed[napi.F_SRC] = src.index
                feed[napi.F_L] = lay.L
                feed[napi.F_QBASE] = base
                feed[napi.F_PORT] = ports.index(port)  # (exact mode's arbiter numbers them so)
                feed[napi.F_NQ] = nq
                feed[napi.F_INST0] = q_inst[0]
                feeds.append(feed)
                base += lay.L
                for i in q_inst:
                    rows[i][napi.I_CARD] = k
            row[napi.K_S] = card.s
            row[napi.K_C] = card.c
            row[napi.K_TAU] = card.burst * card.s
            row[napi.K_PORT0] = len(tx.ports)
            row[napi.K_NPORT] = len(sending)
            ring0: dict[str, int] = {}
            for nic in sending:
                ring0[nic.name] = len(tx.txr)
                tx.ports.append(nic.name)
                tx.wire_s.append(wires)
                blank = [0] * rings.X_WIDTH
                tx.txr += [
                    [len(tx.wire_s) - 1, ring.size, *blank[rings.X_HELD :]] for ring in nic.tx
                ]
            for nic in sending + external:
                c = self.dp.compiled[nic.name]
                plan = self._rr_plan(nic, c) if holds(round_robin(c), True) else None
                card_tgt = self._card_target(nic, sending)
                for q in range(len(nic.rxq)):
                    i = at[(nic.name, q)]
                    seq = seqs[i]
                    if seq is None:
                        continue
                    cpu = rows[i][napi.I_CPU]
                    if nic in sending:
                        rows[i][napi.I_TXR] = ring0[nic.name] + nic.xdp_tx_ring(cpu, q)
                        rows[i][napi.I_TXPRE] = tables.add_prefix(bounced(c)[seq])
                    if card_tgt is not None:  # (its ring for the CPU: checked, _wires)
                        ring = int(card_tgt.ring_of_cpu[cpu])
                        rows[i][napi.I_XTXR] = ring0[card_tgt.name] + ring
                        rows[i][napi.I_XPRE] = tables.add_prefix(
                            redirected(c, card_tgt.ifindex)[seq]
                        )
                    if plan is None:
                        continue
                    mask, pps, cnt, other = plan
                    rows[i][napi.I_RRPRE] = tables.add_prefix(round_robin(c)[seq])
                    rows[i][napi.I_RRMASK] = mask
                    rows[i][napi.I_RRPPS] = pps
                    rows[i][napi.I_RRCNT] = cnt
                    tgt = w.devices.get(other or "")
                    if isinstance(tgt, Nic) and tgt.name in ring0:  # (checked: _wires)
                        rows[i][napi.I_RRTXR] = ring0[tgt.name] + int(tgt.ring_of_cpu[cpu])
                        rows[i][napi.I_RRFL] = round(devmap.flush_cost(nic, tgt) * 1000)
            out.append(row)
            owned.append(name)
        cards = np.array(out, np.int64).reshape(len(out), napi.K_WIDTH)
        feed_rows = np.array(feeds, np.int64).reshape(len(feeds), napi.F_WIDTH)
        if not qmaps:
            qmaps.append(np.zeros(1, np.int32))
        qmap = np.concatenate(qmaps) if len(qmaps) > 1 else qmaps[0]
        return cards, feed_rows, qmap, tuple(owned)

    def _transmitting(self, ports: list[Nic]) -> tuple[list[Nic], list[Nic]] | None:
        """The ports that send, when all that is sent out of these ports is their own native
        programs' XDP_TX (``NetDev.xdp_tx`` onto the ring paired with the queue, or a bond's
        ``xdp_master_redirect`` to one of them), their redirects into another of them
        (``_card_target``) or an off-card port's redirects into one of them, its only target
        (``_card_target``; those senders are the second list); None when anything else is: a
        redirect from elsewhere into their bond, a bond that hashes frames to a slave, the
        local stack."""
        w = self.world
        masters = {d.master for d in ports if d.master is not None}
        names = {d.name for d in ports} | masters  # (a bond sends out of its slaves)
        ifindexes = np.array([w.devices[n].ifindex for n in names], np.int64)
        if any(s.local and s.device in names for s in w.sources):
            return None
        sending: list[Nic] = []
        external: list[Nic] = []
        for dev_name, c in self.dp.compiled.items():
            walk = devmap.broadcast_walk(self.dp, w.devices[dev_name], c) if c.broadcast else []
            port = next((d for d in ports if d.name == dev_name), None)
            ok = (c.act == XDP_REDIRECT) & (c.err == 0)  # (a failed redirect sends nothing)
            into = np.isin(c.target[ok], ifindexes).any()
            tgt = self._card_target(port, ports) if port is not None and into else None
            sender = w.devices[dev_name]
            if port is None and into and isinstance(sender, Nic) and sender.master is None:
                tgt = self._card_target(sender, ports)
                others = values(c.target[ok])
                if tgt is None or len(others) != 1 or holds(c.act, XDP_TX):
                    return None  # (its only target, so it feeds no other card's rings)
                external.append(sender)
                sending.append(tgt)
                continue
            if (
                any(t.name in names for _, t in walk)
                or (into and tgt is None)
                or np.isin(values(c.tx_slave), ifindexes).any()
            ):
                return None
            if port is not None and c.mode is not None and (holds(c.act, XDP_TX) or into):
                if c.mode != MODE_DRV:
                    return None  # generic XDP: the skb goes out through the stack
                sending += [port] if tgt is None else [port, tgt]
        # (a port that is down sends nothing: ``dev_close`` emptied its rings)
        return [p for p in ports if p in sending and p.admin_up], external

    def _card_target(self, port: Nic, ports: list[Nic]) -> Nic | None:
        """The port of ``ports`` (another of its card's, or a card's it is not on) that
        ``port``'s native program redirects frames into
        (``ndo_xdp_xmit`` onto its XDP ring for the CPU, in bulks of 16 whose flushes the
        poll already pays for), when the loop can follow it: one such port, no egress program
        on the way, frames that are not rewritten; None otherwise."""
        c = self.dp.compiled[port.name]
        if c.mode != MODE_DRV or c.broadcast or c.out is not None:
            return None
        mine = {p.ifindex: p for p in ports}
        red = (c.act == XDP_REDIRECT) & (c.err == 0)
        hit = red & np.isin(c.target, list(mine))
        targets = np.unique(c.target[hit]).tolist()
        if len(targets) != 1 or targets[0] == port.ifindex:
            return None
        dmap = self.world.maps.get(c.map_name or "")
        if devmap.programs_of(dmap, np.unique(c.key[hit])):
            return None
        return mine[int(targets[0])]

    def _wires(
        self,
        senders: list[Nic],
        at: dict[tuple[str, int], int],
        rows: list[list[int]],
        seqs: Sequences,
        sending: list[Nic],
    ) -> int | None:
        """The wire time of a frame the sending ports send (ps), when every frame the
        senders' queues send into them has a ring and costs the same on every one of them
        (None otherwise: fast mode's own arithmetic), a round-robin bond's other slave among
        them."""
        wire_bytes = self.world.entries.wire_bytes
        names = {nic.name for nic in sending}
        sent: list[IntArray] = []
        for nic in senders:
            if nic in sending and (not nic.running or not nic.tx):
                return None
            c = self.dp.compiled[nic.name]
            plan = self._rr_plan(nic, c) if holds(round_robin(c), True) else None
            if holds(round_robin(c), True) and plan is None:
                return None
            other = plan[3] if plan is not None else None
            if other is not None and other not in names:
                return None
            card_tgt = self._card_target(nic, sending)
            into = card_tgt.ifindex if card_tgt is not None else -1
            for q in range(len(nic.rxq)):
                i = at[(nic.name, q)]
                seq = seqs[i]
                cpu = rows[i][napi.I_CPU]
                ring = nic.xdp_tx_ring(cpu, q)
                if nic in sending and (ring < 0 or ring >= len(nic.tx)):
                    return None
                for tgt_name in [t for t in (other, card_tgt and card_tgt.name) if t]:
                    tgt = self.world.devices[tgt_name]
                    assert isinstance(tgt, Nic)
                    if not 0 <= int(tgt.ring_of_cpu[cpu]) < len(tgt.tx):
                        return None
                if seq is not None:
                    out = bounced(c)[seq] | round_robin(c)[seq] | redirected(c, into)[seq]
                    sent.append(seq[out])
        ent = np.unique(np.concatenate(sent)) if sent else np.zeros(0, np.int64)
        ps: set[int] = set()
        for nic in sending:
            ps |= set(np.unique(nic.service_ps(wire_bytes[ent])).tolist())
        if len(ps) > 1:
            return None
        return ps.pop() if ps else 1

    def owned_cards(self) -> tuple[str, ...]:
        """The cards whose DMA NAPI's loop applies (fast mode's ``card_admit`` leaves them)."""
        return self.config().card_names

    def _veth_rq(self, dev: NetDev, cpu: int, label: int, ent: IntArray) -> tuple[str, int] | None:
        """The veth queue a sender's frames of one label reach (None: no veth NAPI, or several
        queues): ``veth_xdp_xmit`` picks the sending CPU's (``veth_select_rxq``), ``veth_xmit``
        (generic XDP) the queue the flow hash maps over the sending end's queues."""
        c = self.dp.compiled[dev.name]
        peer = veth_napi(self.world, self.dp, label, c.mode != MODE_DRV)
        tgt = self.world.by_ifindex.get(label)
        if peer is None or not isinstance(tgt, Veth):
            return None
        if c.mode == MODE_DRV:
            return (peer.name, cpu % len(peer.rxq))
        rows = Rows(ent, np.ones(len(ent), np.int64), False)
        qs = self.dp.by_rx_queue(peer, rows)
        return (peer.name, qs[0][0]) if len(qs) == 1 else None

    def _egress_passes(
        self, dev: NetDev, label: int, ent: IntArray, mine: BoolArray
    ) -> BoolArray | None:
        """Which of a sender's frames toward a veth reach its ring: those of the label, less
        what the devmap entries' egress program drops -- one built-in or Python program on
        every key (its verdict is the entry's, whichever frame enqueued first); None for
        anything else."""
        w = self.world
        c = self.dp.compiled[dev.name]
        keys = np.unique(c.key[ent[mine]])
        progs = devmap.programs_of(w.maps.get(c.map_name or ""), keys)
        if not progs:
            return mine
        distinct = {id(p) for p in progs.values()}
        prog = next(iter(progs.values()))
        if len(progs) != len(keys) or len(distinct) != 1 or prog.obj is not None:
            return None
        tgt = w.by_ifindex[label]
        verdict = devmap.egress_verdicts(self.dp, prog, dev, tgt)
        passed: BoolArray = mine & (verdict[ent] == XDP_PASS)
        return passed

    def _veth_covered(self, dev: Veth) -> bool:
        """Whether NAPI's loop can run a veth's queues: frames reach them only from a sender's
        redirects, and its program ends each frame there or sends it to a NIC."""
        w = self.world
        if any(w.lands_on(s) is dev for s in w.sources):
            return False
        c = self.dp.compiled.get(dev.name)
        if c is None or c.mode not in RX_MODES or not self._program_covered(dev, c):
            return False
        if holds(c.act, XDP_TX):  # veth_xdp_tx: into the peer's ring
            return False
        targets = values(c.target)
        return all(isinstance(w.by_ifindex.get(int(i)), Nic) for i in targets[targets >= 0])

    def _written_veth(self, dev: Veth) -> bool:
        """A veth the local stack writes into through its peer (``veth_xmit``: each frame into
        its ``ptr_ring`` or the backlog): NAPI's loop runs it as a queue with no interrupt
        moderation (``_arm`` at the first frame), what its queue took counted from the loop's
        ring (``FastIO.rx``, ``Veth.sent_into``); its XDP_TX goes into the peer's queue as a
        redirect into it would (``napi_tables.Tables.add``), which the loop runs too where
        the peer's NAPI is the loop's (``_veth_covered``)."""
        w = self.world
        srcs = [s for s in w.sources if w.lands_on(s) is dev]
        if len(srcs) != 1 or not srcs[0].local or srcs[0].writer is not None:
            return False  # (an AF_XDP socket's writer: its own sendto batches)
        c = self.dp.compiled.get(dev.name)
        if c is None or c.mode not in RX_MODES or holds(c.target, dev.ifindex):
            return False  # (a redirect into itself would share its XDP_TX's label)
        peer = w.devices.get(dev.peer)
        if peer is None:
            return False
        for name, other in self.dp.compiled.items():  # nothing else may reach its ring
            if other.broadcast or holds(other.bq_class, BROADCAST):
                return False
            tx = other.act == XDP_TX
            if holds(other.target, peer.ifindex) or (
                tx.any() and (name == peer.name or (holds(other.tx_slave[tx], peer.ifindex)))
            ):
                return False
        return True

    def _device_covered(self, dev: NetDev) -> tuple[bool, Source | None]:
        """Whether NAPI's loop can run ``dev``'s instances: a NIC fed by one source (or none:
        its instances never poll), whose frames' paths cost the polling CPU only their own
        cost."""
        written = isinstance(dev, Veth) and self._written_veth(dev)
        if not isinstance(dev, Nic) and not written_tap(dev) and not written:
            return False, None
        if not any(self.world.lands_on(s) is dev for s in self.world.sources):
            return True, None  # nothing arrives: armed, never interrupted
        src = self.facts.single_source(dev)
        if src is None or (src.local and not written) or src.pacing is not None:
            return False, None  # a capture's own timing: not the loop's integer pacing
        c = self.dp.compiled.get(dev.name)
        if c is None or not self._program_covered(dev, c):
            return False, None
        return True, src

    def _program_covered(self, dev: NetDev, c: Compiled) -> bool:
        """A program NAPI's loop can run: no state carried from frame to frame, a broadcast
        only where the loop follows it (``broadcast_targets``), a balance-rr bond's choice
        only where the loop follows it (``_rr_plan``), its frames sent to NICs, taps, bonds
        (a flush toward one is a flush: ``bond_xdp_xmit`` then picks each frame's slave,
        after the loop), or a veth whose peer's NAPI the loop runs too (``_build`` checks
        that)."""
        if c.obj is not None and c.obj.depends is not None:
            return False  # a real program run frame by frame, in ring order
        broadcasts = c.broadcast or holds(c.bq_class, BROADCAST)
        if broadcasts and not broadcast_targets(self.dp, dev, c):
            return False
        if holds(c.bq_class, RR_CLASS) and self._rr_plan(dev, c) is None:
            return False  # round-robin over slaves the loop cannot follow
        targets = values(c.target)
        for ifindex in targets[targets >= 0].tolist():
            tgt = self.world.by_ifindex.get(int(ifindex))
            if tgt is not None and not isinstance(tgt, Nic | Veth | Bond) and not is_tap(tgt):
                return False
        if c.master is not None:
            for ifindex in np.unique(c.tx_slave[c.tx_slave >= 0]).tolist():
                tgt = self.world.by_ifindex.get(int(ifindex))
                if tgt is not None and not isinstance(tgt, Nic):
                    return False
        return True

    def _rr_plan(self, dev: NetDev, c: Compiled) -> tuple[int, int, int, str | None] | None:
        """A balance-rr bond's choice for ``dev``'s frames as NAPI's loop follows it
        (``transmit``): the slave ids that are ``dev`` or no slave (XDP_TX here) as bits, its
        packets_per_slave, its slave count and the one other slave the other ids map to
        (``bond_get_slave_by_id``); None where the loop cannot (a random id, more than one
        other slave, IGMP frames, which go to the active slave)."""
        bond = self.world.devices.get(c.master or "")
        if not isinstance(bond, Bond) or bond.packets_per_slave <= 0:
            return None
        table = BondLogic(bond, self.world.devices).slave_by_id_table()
        if not table or len(table) > 62:
            return None
        if (self.world.entries.proto[round_robin(c)] == IPPROTO_IGMP).any():
            return None
        others = {s for s in table if s is not None and s != dev.name}
        if len(others) > 1:
            return None
        mask = sum(1 << k for k, s in enumerate(table) if s is None or s == dev.name)
        return mask, bond.packets_per_slave, len(table), (others.pop() if others else None)

    def _fed(self) -> set[str]:
        """Devices frames may reach: a source's (the local stack's: the veth peer it writes
        into), a program's redirect or XDP_TX target, a fed veth's peer where its program
        may XDP_TX (``veth_xdp_tx``); every device when a program broadcasts or a bond picks
        its slave per frame."""
        w = self.world
        key = (w.epoch, self.dp.compiled_epoch)
        hit = self._fed_at.get(key)
        if hit is None:
            if len(self._fed_at) > 16:
                self._fed_at.clear()
            hit = self._fed_at[key] = frozenset(self._fed_now())
        return set(hit)

    def _fed_now(self) -> set[str]:
        w = self.world
        fed = {s.device for s in w.sources if not s.local}  # (the stack's: not into its RX)
        fed |= {d.name for s in w.sources if (d := w.lands_on(s)) is not None}
        for name in list(fed):  # a fed veth whose program may XDP_TX: into its peer's queues
            c = self.dp.compiled.get(name)  # (where the peer has NAPI, else -ENXIO)
            dev = w.devices.get(name)
            if not isinstance(dev, Veth) or c is None or not holds(c.act, XDP_TX):
                continue
            if dev.xdp_napi(self.dp) is not None:
                fed.add(dev.peer)
        for dev_name, c in self.dp.compiled.items():
            if c.broadcast or holds(c.bq_class, BROADCAST):  # dev_map_enqueue_multi's walk
                walk = devmap.broadcast_walk(self.dp, w.devices[dev_name], c)
                fed |= {t.peer if isinstance(t, Veth) else t.name for _, t in walk if not is_tap(t)}
            if holds(c.bq_class, RR_CLASS):
                plan = self._rr_plan(w.devices[dev_name], c)
                if plan is None:
                    return set(w.devices)
                if plan[3] is not None:
                    fed.add(plan[3])
            out = np.concatenate((values(c.target), values(c.tx_slave)))
            for i in np.unique(out[out >= 0]).tolist():
                tgt = w.by_ifindex.get(i)
                if isinstance(tgt, Veth):  # veth_xdp_xmit: into the peer's queues, where the
                    generic = c.mode != MODE_DRV  # peer has NAPI (generic XDP: veth_xmit,
                    if veth_napi(w, self.dp, i, generic) is not None:  # where it is up)
                        fed.add(tgt.peer)
                elif tgt is not None and not is_tap(tgt):  # a tap's ring goes to its reader
                    fed.add(tgt.name)
        return fed

    # ------------------------------------------------------------ a step

    def mark_change(self, t: int) -> None:
        """A change at ``t``: every instance not on a poll list is re-armed then."""
        self.state.rearm = t

    def forget(self) -> None:
        """Exact mode ran: the instances' state is in their queues again."""
        self.state.known[:] = False

    def step(self, t0: int, t1: int, kept: dict[int, float], cycling: set[int]) -> set[int]:
        """Run the covered instances' CPUs from ``t0`` to ``t1``; returns the ids of the
        RxQueues done (fast mode's arithmetic does the others). ``kept``: the share of its
        arrivals each queue's card took this step (by id); ``cycling``: queues whose card
        cycles."""
        self.fed_rx = {}
        self.ran_cpus = np.zeros(0, np.int64)
        self.written_rx = {}
        self.cards_run: set[str] = set()
        self.played = {}
        cfg = self.config()
        w = self.world
        rxqs = [w.devices[d].rxq[q] for d, q in cfg.names]
        st = self._state_for(cfg, rxqs)
        n = len(cfg.names)
        if not n:
            return set()
        devs = [w.devices[d] for d, _ in cfg.names]
        ok = cfg.covered.copy()
        on_card = cfg.static[:, napi.I_CARD] >= 0  # the loop applies their card's DMA
        for i, rxq in enumerate(rxqs):
            if ok[i] and not on_card[i] and (id(rxq) in cycling or kept.get(id(rxq), 1.0) < 1.0):
                ok[i] = False
        for i in np.flatnonzero(cfg.fed_by >= 0).tolist():  # the veth's NAPI is still there
            dev = devs[i]
            assert isinstance(dev, Veth)
            sender = dev.peer_dev(self.dp)
            c_i = self.dp.compiled.get(dev.name)  # (no native program: veth_xmit's backlog)
            skb = c_i is None or c_i.mode != MODE_DRV
            takes = (
                None
                if not isinstance(sender, Veth)
                else (sender.skb_rx(self.dp) if skb else sender.xdp_napi(self.dp))
            )
            if takes is not dev:
                ok[i] = False
                ok[list(cfg.fed_from.get(i, (cfg.fed_by[i],)))] = False
        cpu_of = cfg.static[:, napi.I_CPU]
        fed = self._fed()
        idle = np.array([not isinstance(d, Nic) and d.name not in fed for d in devs], bool)
        bad_cpu = np.zeros(w.nr_cpus + 1, bool)
        bad_cpu[cpu_of[~ok & ~idle]] = True  # an idle veth or tap takes no CPU time
        for i in np.flatnonzero(~ok).tolist():  # a veth or vhost's tap served on a CPU
            if not isinstance(devs[i], Nic) and (rxqs[i].held.total or rxqs[i].state != 0):
                bad_cpu[min(max(rxqs[i].irq_cpu, 0), w.nr_cpus)] = True
        src = source_rows(w.sources)
        cards = cfg.cards.copy()
        feeds = cfg.feeds.copy()
        for k, name in enumerate(cfg.card_names):
            cards[k, napi.K_TAT] = w.cards[name].tat
            cards[k, napi.K_RR] = w.cards[name].rr
        for f in range(len(feeds)):
            feeds[f, napi.F_NEXT] = napi.emitted_until(src, int(feeds[f, napi.F_SRC]), t0)
        lazy = [  # cards that keep up: their queues take their arrivals one queue at a time
            k for k in range(len(cards)) if napi.card_keeps_up(src, cards, feeds, k, t0)
        ]
        group = np.arange(w.nr_cpus + 1)
        member = _card_members(cfg)
        for k in range(len(cfg.card_names)):  # a card's CPUs go together, or not at all
            cs = np.unique(cpu_of[member[k]])  # (with those of its off-card senders)
            bad_cpu[cs] |= bad_cpu[cs].any()
            if k not in lazy:  # its DMA orders their arrivals: one heap
                group[np.isin(group, group[cs])] = group[cs].min()
        for i, fs in cfg.fed_from.items():  # a veth several CPUs feed: their events in order
            cs = np.unique(cpu_of[[i, *fs]])
            bad_cpu[cs] |= bad_cpu[cs].any()
            group[np.isin(group, group[cs])] = group[cs].min()
        used = np.bincount(cpu_of, minlength=w.nr_cpus) > 0
        cpus = np.flatnonzero(~bad_cpu[: w.nr_cpus] & used)
        cpus = cpus[np.lexsort((cpus, group[cpus]))]
        gstart = np.flatnonzero(np.diff(group[cpus], prepend=-1, append=-2)).astype(np.int64)
        run = np.isin(cpu_of, cpus) & ok
        self.cards_run = {
            name for k, name in enumerate(cfg.card_names) if run[member[k]].all()
        }  # fmt: skip
        for i in np.flatnonzero(~run & st.known).tolist():
            self._hand_back(st, cfg, i, rxqs[i])
        st.known &= run
        if not run.any():
            return set()
        st.ins[:, napi.I_RUNNING] = [1 if d.running else 0 for d in devs]
        basis = [basis_of(w, devs[i], cfg.static[i, napi.I_SRC]) for i in range(n)]
        for i in np.flatnonzero(cfg.fed_by >= 0).tolist():  # a veth's: its senders'
            basis[i] = (-2, *(x for f in cfg.fed_from.get(i, (cfg.fed_by[i],)) for x in basis[f]))
        for i in np.flatnonzero(run & st.known).tolist():
            if basis[i] != st.basis[i]:  # the source's table or the queues were rebuilt:
                self._rebase(st, cfg, src, i, t0)  # its ring's frames as the last arrivals
            if rxqs[i].held.total != st.ins[i, napi.I_OCC]:
                if rxqs[i].held.total:
                    st.known[i] = False  # (not ours: taken over afresh)
                else:  # a command emptied the ring (link down, ring re-allocation)
                    st.ins[i, napi.I_OCC] = 0
                    st.ins[i, napi.I_RLEN] = 0
            st.ins[i, napi.I_PEAK] = rxqs[i].peak
        fresh = np.flatnonzero(run & ~st.known)
        for i in fresh.tolist():
            self._take_over(st, cfg, src, i, rxqs[i], t0)
        if st.rearm >= 0:
            idx = np.flatnonzero(run & st.known).astype(np.int64)
            napi.rearm_all(st.ins, cfg.tab, src, st.glob, idx, st.rearm)
            st.rearm = -1
        if len(fresh):
            napi.rearm_all(st.ins, cfg.tab, src, st.glob, fresh.astype(np.int64), t0)
        st.known |= run
        st.basis = basis
        before = st.ins.copy()
        busy_before = st.cpu[:, napi.C_BUSY_NS].copy()
        card_of = st.ins[:, napi.I_CARD].copy()
        on_lazy = np.isin(card_of, lazy) & (card_of >= 0)
        st.ins[on_lazy, napi.I_CARD] = -1
        st.ins[on_lazy, napi.I_LASTP] = -1
        next0 = feeds[:, napi.F_NEXT].copy()
        lazy_feeds = {int(cards[k, napi.K_F0]) for k in lazy}
        due = sum(  # frames the cards will admit one by one this step: compile first if many
            napi.emitted_until(src, int(feeds[f, napi.F_SRC]), t1) - int(next0[f])
            for f in range(len(feeds))
            if f not in lazy_feeds
        )
        ahead = int(self._poll_rate * max(self.horizon - t0, 0))  # polls still to come
        if _polls_run[0] + due // CARD_FRAMES_PER_POLL + ahead > JIT_AFTER_POLLS:
            napi.compile_rules()
        txr, wire, wb = self._wires_at(cfg, t0)
        for i in np.flatnonzero(run & (cfg.static[:, napi.I_RRPRE] >= 0)).tolist():
            bond = w.devices[self.dp.compiled[cfg.names[i][0]].master or ""]
            assert isinstance(bond, Bond)  # (its balance-rr counter, per CPU)
            c = int(cfg.static[i, napi.I_CPU])
            st.cpu[c, napi.C_RR] = int(bond.rr_counter[c])
        polls, segs, flog = self._run(
            cfg, st, src, cpus.astype(np.int64), gstart, cards, feeds, t0, t1, (txr, wire, wb)
        )
        n_polls = len(polls)
        self._wires_done(cfg, txr, wire, wb)
        if t1 - t0 >= RATE_AFTER_NS:  # (a boot's first polls come all at once)
            self._poll_rate = n_polls / (t1 - t0)
        admitted = int((feeds[:, napi.F_NEXT] - next0).sum())  # frames cards took one by one
        for k in lazy:
            idx = np.flatnonzero(card_of == k).astype(np.int64)
            cards[k, napi.K_TAT] = napi.card_tat(st.ins, cfg.tab, src, cards, feeds, idx, k)
        for k, name in enumerate(cfg.card_names):
            if name in self.cards_run:
                w.cards[name].tat = int(cards[k, napi.K_TAT])
                w.cards[name].rr = int(cards[k, napi.K_RR])
        for i in np.flatnonzero(run & (cfg.fed_by >= 0)).tolist():  # what the rings refused,
            if i in cfg.fed_from:  # per sending CPU (``FastIO.rx``)
                mine = flog[flog[:, napi.FL_TO] == i]
                lost = mine[:, napi.FL_NEW] - mine[:, napi.FL_TOOK]
                by_cpu = np.bincount(cpu_of[mine[:, napi.FL_FROM]], lost, w.nr_cpus)
                for c in np.unique(cpu_of[list(cfg.fed_from[i])]).tolist():
                    self.fed_rx[(id(rxqs[i]), c)] = int(by_cpu[c])
                continue
            refused = int(st.ins[i, napi.I_DROPPED] - before[i, napi.I_DROPPED])
            self.fed_rx[(id(rxqs[i]), int(cpu_of[cfg.fed_by[i]]))] = refused
        _polls_run[0] += n_polls + admitted // CARD_FRAMES_PER_POLL
        if _polls_run[0] > JIT_AFTER_POLLS:
            napi.compile_rules()
        self._apply(cfg, st, before, polls, segs, rxqs, devs, run, t0, flog)
        self.dp.cpu.busy_ns += st.cpu[:, napi.C_BUSY_NS] - busy_before
        self.ran_cpus = np.unique(cfg.static[run, napi.I_CPU])
        return {id(rxqs[i]) for i in np.flatnonzero(run).tolist()}

    def _wires_at(self, cfg: Config, t0: int) -> tuple[IntArray, IntArray, IntArray]:
        """The transmit rings and wires of the ports the loop sends from, as their rings hold
        them at ``t0`` (``fast_tx.queued``): what is queued, and from which frame on the card
        has not charged the DMA (those leaving after ``t0``)."""
        txr = cfg.txr.copy()
        n_ports = len(cfg.tx_ports)
        wire = np.zeros((n_ports, rings.W_WIDTH), np.int64)
        wire[:, rings.W_S] = cfg.wire_s
        ring_rows = txr[:, rings.X_PORT]
        sizes = np.bincount(ring_rows, weights=txr[:, rings.X_SIZE], minlength=n_ports)
        cap = rings.pow2(int(sizes.max(initial=0)) + 2)  # a batch holds a slot at least
        wb = np.zeros((n_ports, cap, 4), np.int64)
        at0 = 1000 * t0
        for w, name in enumerate(cfg.tx_ports):
            nic = self.world.devices[name]
            assert isinstance(nic, Nic)
            batches, free = queued(nic, at0)
            r0 = int(np.flatnonzero(ring_rows == w)[0])
            for b, (r, first, n, s) in enumerate(batches):
                wb[w, b] = (r0 + r, first, n, s)
                txr[r0 + r, rings.X_HELD] += n
            wire[w, rings.W_FREE] = free
            wire[w, rings.W_TAIL] = len(batches)
            if batches:
                wire[w, rings.W_CJ] = batches[0][2] - batch_left(batches[0], at0)
        return txr, wire, wb

    def _wires_done(self, cfg: Config, txr: IntArray, wire: IntArray, wb: IntArray) -> None:
        """What each port's rings took and refused this step, and what is still queued."""
        cap = wb.shape[1]
        for w, name in enumerate(cfg.tx_ports):
            if name not in self.played_ports(cfg):
                continue
            mine = np.flatnonzero(txr[:, rings.X_PORT] == w)
            r0 = int(mine[0])
            h, t = int(wire[w, rings.W_HEAD]), int(wire[w, rings.W_TAIL])
            rows = wb[w, np.arange(h, t) & (cap - 1)]
            left = [(int(r) - r0, int(f), int(n), int(s)) for r, f, n, s in rows.tolist()]
            self.played[name] = Played(
                txr[mine, rings.X_TOOK].copy(), txr[mine, rings.X_LOST].copy(), left,
                int(wire[w, rings.W_FREE]), txr[mine, rings.X_TXTOOK].copy(),
            )  # fmt: skip

    def played_ports(self, cfg: Config) -> set[str]:
        """The sending ports of the cards the loop ran this step."""
        out: set[str] = set()
        for k, name in enumerate(cfg.card_names):
            if name in self.cards_run:
                p0, n = int(cfg.cards[k, napi.K_PORT0]), int(cfg.cards[k, napi.K_NPORT])
                out |= set(cfg.tx_ports[p0 : p0 + n])
        return out

    def _state_for(self, cfg: Config, rxqs: list[RxQueue]) -> NapiState:
        """The state arrays laid out for ``cfg``'s instances: a row stays with its queue (a
        queue the driver re-created, ``ethtool -L``, is a new instance), and the CPUs' poll
        lists keep the instances still there, in order."""
        st = self.state
        same = len(st.rxqs) == len(rxqs) and all(a is b for a, b in zip(st.rxqs, rxqs, strict=True))
        # a ring holds at most a run a frame (a card that misses every other frame cuts them)
        # (a backlog holds its input queue's limit again in ``process_queue``)
        most = cfg.static[:, napi.I_R] * (1 + cfg.static[:, napi.I_BACKLOG])
        cap_runs = rings.pow2(max(napi.RUNCAP, int(most.max(initial=0)) + 1))
        if st.names == cfg.names and same and st.runs.shape[1] >= cap_runs:
            st.ins[:, : napi.I_CONF] = cfg.static
            return st
        n = len(cfg.names)
        ins = np.zeros((n, napi.I_WIDTH), np.int64)
        runs = np.zeros((n, cap_runs, 2), np.int64)
        known = np.zeros(n, bool)
        basis: list[tuple[int, ...]] = [()] * n
        old = {name: k for k, name in enumerate(st.names)}
        remap = np.full(len(st.names), -1, np.int64)
        for i, name in enumerate(cfg.names):
            k = old.get(name)
            if k is not None and k < len(st.rxqs) and st.rxqs[k] is rxqs[i] and st.known[k]:
                ins[i] = st.ins[k]
                m = int(ins[i, napi.I_RLEN])  # its runs in order, from the first slot
                runs[i, :m] = st.runs[k, (ins[i, napi.I_RHEAD] + np.arange(m)) % st.runs.shape[1]]
                ins[i, napi.I_RHEAD] = 0
                known[i] = True
                basis[i] = st.basis[k]
                remap[k] = i
        ins[:, : napi.I_CONF] = cfg.static
        per_cpu = int(np.bincount(cfg.static[:, napi.I_CPU], minlength=1).max(initial=1)) + 1
        per_cpu += len(cfg.fed_from)  # (a veth several CPUs feed: on the list of any of them)
        cap = st.plist.shape[1]
        plist = np.zeros((len(st.cpu), max(per_cpu, cap)), np.int64)
        for c in np.flatnonzero(st.cpu[:, napi.C_PLEN]).tolist():
            h, m = int(st.cpu[c, napi.C_PHEAD]), int(st.cpu[c, napi.C_PLEN])
            rows = remap[st.plist[c, (h + np.arange(m)) % cap]]
            rows = rows[rows >= 0]
            plist[c, : len(rows)] = rows
            st.cpu[c, napi.C_PHEAD] = 0
            st.cpu[c, napi.C_PLEN] = len(rows)
        self.state = NapiState(
            ins, runs, st.cpu, plist, st.glob, known, cfg.names, st.rearm, basis, list(rxqs)
        )
        return self.state

    def _take_over(
        self, st: NapiState, cfg: Config, src: IntArray, i: int, rxq: RxQueue, t0: int
    ) -> None:
        """An instance this loop did not run before: its ring as the last arrivals, its
        interrupt armed (the CPU's list and softirq restart)."""
        ins = st.ins
        s = int(ins[i, napi.I_SRC])
        arr = 0
        if s >= 0:
            arr = napi.queue_frames(ins, cfg.tab, src, i, napi.emitted_until(src, s, t0))
        if cfg.fed_by[i] >= 0:  # a veth's ring: its frames as the first of its sequence
            arr = rxq.held.total
        proc = min(rxq.proc, rxq.held.total) if ins[i, napi.I_BACKLOG] else 0
        occ = min(rxq.held.total, int(ins[i, napi.I_R]) + proc, arr)
        ins[i, napi.I_ARR] = arr
        ins[i, napi.I_OCC] = occ
        ins[i, napi.I_PROC] = min(proc, occ)
        ins[i, napi.I_RHEAD] = 0
        ins[i, napi.I_RLEN] = 1 if occ else 0
        st.runs[i, 0] = (arr - occ, arr)
        ins[i, napi.I_STATE] = napi.ARMED
        ins[i, napi.I_TAKEN] = ins[i, napi.I_DROPPED] = 0
        ins[i, napi.I_LAST_IRQ] = rxq.last_irq
        ins[i, napi.I_PEAK] = rxq.peak
        c = int(ins[i, napi.I_CPU])
        cpu = st.cpu
        if cpu[c, napi.C_PLEN] == 0 and cpu[c, napi.C_RUN_AT] < 0:  # (fast mode's own
            owed = round(float(self.debt[c])) if c < len(self.debt) else 0  # last poll: its
            cpu[c, napi.C_BUSY] = max(int(cpu[c, napi.C_BUSY]), t0 + owed)  # debt, ``Fast``)

    def _rebase(self, st: NapiState, cfg: Config, src: IntArray, i: int, t0: int) -> None:
        """Positions count another sequence now: what the ring holds becomes the last
        arrivals of the new one; the instance's interrupt and poll-list state stay."""
        ins = st.ins
        s = int(ins[i, napi.I_SRC])
        arr = 0
        if s >= 0 and ins[i, napi.I_M] > 0:
            arr = napi.queue_frames(ins, cfg.tab, src, i, napi.emitted_until(src, s, t0))
        if cfg.fed_by[i] >= 0:  # a veth's ring: its frames as the first of its sequence
            arr = int(ins[i, napi.I_OCC])
        occ = min(int(ins[i, napi.I_OCC]), arr)
        ins[i, napi.I_ARR] = arr
        ins[i, napi.I_OCC] = occ
        ins[i, napi.I_PROC] = min(int(ins[i, napi.I_PROC]), occ)
        ins[i, napi.I_RHEAD] = 0
        ins[i, napi.I_RLEN] = 1 if occ else 0
        st.runs[i, 0] = (arr - occ, arr)

    def _hand_back(self, st: NapiState, cfg: Config, i: int, rxq: RxQueue) -> None:
        """An instance fast mode's arithmetic takes on: its interrupt and last interrupt."""
        ins = st.ins
        pending = ins[i, napi.I_STATE] == napi.IRQ_PENDING
        rxq.fast_irq = int(ins[i, napi.I_IRQ_AT]) if pending else -1
        rxq.last_irq = int(ins[i, napi.I_LAST_IRQ])
        cap = st.plist.shape[1]
        # off the poll list it is on (a veth's: the CPU that scheduled it); the others stay
        for c in np.flatnonzero(st.cpu[:, napi.C_PLEN]).tolist():
            head, n = int(st.cpu[c, napi.C_PHEAD]), int(st.cpu[c, napi.C_PLEN])
            listed = [int(st.plist[c, (head + k) % cap]) for k in range(n)]
            if i not in listed:
                continue
            left = [j for j in listed if j != i]
            for k, j in enumerate(left):
                st.plist[c, (head + k) % cap] = j
            st.cpu[c, napi.C_PLEN] = len(left)
            if not left:
                st.cpu[c, napi.C_RUN_AT] = -1
        ins[i, napi.I_STATE] = napi.ARMED

    def _run(
        self,
        cfg: Config,
        st: NapiState,
        src: IntArray,
        cpus: IntArray,
        gstart: IntArray,
        cards: IntArray,
        feeds: IntArray,
        t0: int,
        t1: int,
        tx: tuple[IntArray, IntArray, IntArray],
    ) -> tuple[IntArray, IntArray, IntArray]:
        """``napi.run_cpus`` to ``t1``: its polls, their runs and the feeds it logged
        (``napi.feed``), written in place into buffers sized for the polls the last step's
        rate expects (doubled while full)."""
        cap = max(POLLS_CHUNK, int(self._poll_rate * (t1 - t0) * 1.25))
        polls = np.empty((cap, napi.P_WIDTH), np.int64)
        segs = np.empty((2 * cap + napi.RUNCAP, 2), np.int64)
        logging = bool(cfg.fed_from)
        flog = np.empty((len(segs) if logging else 1, napi.FL_WIDTH), np.int64)
        n = ns = nf = 0
        work = napi.work_rows(len(cpus), len(feeds))
        while True:
            k = napi.run_cpus(
                t1, cpus, gstart, cfg.cpu_first, cfg.cpu_inst, st.ins, st.cpu, st.plist,
                st.runs, cfg.tab, src, cards, feeds, cfg.qmap, cfg.pre, cfg.lab, cfg.lfl, st.glob,
                polls[n:], segs[ns:], *tx, work, flog[nf:],
            )  # fmt: skip
            nf += int(st.glob[2])
            if k and ns:  # (a second call's runs start where the first's ended)
                polls[n : n + k, napi.P_SEG] += ns
            if k:
                ns = int(polls[n + k - 1, napi.P_SEG] + polls[n + k - 1, napi.P_NSEG])
                n += k
            if not st.glob[1]:  # (the runs right-sized: their buffer has room for 2 a poll)
                return polls[:n], segs[:ns].copy(), flog[:nf]
            polls = np.concatenate((polls[:n], np.empty_like(polls)))
            segs = np.concatenate((segs[:ns], np.empty_like(segs)))
            if logging:
                flog = np.concatenate(
                    (flog[:nf], np.empty((len(segs) - nf, napi.FL_WIDTH), np.int64))
                )

    # ------------------------------------------------------------ what the polls did

    def _apply(
        self,
        cfg: Config,
        st: NapiState,
        before: IntArray,
        polls: IntArray,
        segs: IntArray,
        rxqs: list[RxQueue],
        devs: list[NetDev],
        run: BoolArray,
        t0: int,
        flog: IntArray,
    ) -> None:
        """What the run's polls did, per device (``polls`` sorted in place by instance)."""
        ins = st.ins
        C = len(self.dp.classes)
        rep = self.dp.classes.rep
        of_entry = self.dp.classes.of_entry
        n_inst = len(cfg.names)
        bounds = np.zeros(n_inst + 1, np.int64)
        n_labels = max(int(ins[:, napi.I_NLAB].max(initial=0)), 1)
        labels = np.zeros((len(polls), n_labels), np.int64)
        taken = np.empty((len(segs), 3), np.int64)  # (``sort_polls`` writes what it returns)
        nr = napi.sort_polls(
            polls, segs, ins, cfg.lab, cfg.lfl, bounds, np.empty(len(polls), np.int64), labels,
            taken,
        )  # fmt: skip
        taken = taken[:nr].copy()  # (merged: fewer than the runs it had room for)
        t_bounds = np.searchsorted(taken[:, 2], np.arange(n_inst + 1))
        feeds = getattr(self.dp.io, "feeds", None)
        times = polls[:, napi.P_T].copy()  # (each poll shape's times: a slice of it)
        times_f = k_f = None  # (the feeds' schedules as floats, made once if any)
        at = bounds.tolist()
        by_dev: dict[str, list[int]] = {}
        for i in np.flatnonzero(run).tolist():
            by_dev.setdefault(devs[i].name, []).append(i)
        for name, idx in by_dev.items():
            dev = self.world.devices[name]
            batch: list[tuple[int, int, Rows, PollShape]] = []
            by_lay: dict[int, list[int]] = {}  # a device's queues fed by one source share one
            for i in idx:
                lay = cfg.layouts[i]
                if lay is not None:  # (else no traffic reaches it)
                    by_lay.setdefault(id(lay), []).append(i)
            for same in by_lay.values():
                lay = cfg.layouts[same[0]]
                assert lay is not None
                ii = np.array(same, np.int64)
                cls_group = self._class_groups(lay, of_entry, C)
                n_taken = t_bounds[ii + 1] - t_bounds[ii]
                rows = spans(t_bounds[ii], n_taken)
                local = np.repeat(np.arange(len(ii), dtype=np.int64), n_taken)
                qs = np.array([rxqs[i].index for i in same], np.int64)
                took = class_counts_many(
                    cls_group, lay, qs, C, taken[rows, 0], taken[rows, 1], local
                )  # fmt: skip
                # what each ring holds now: its runs of positions
                n_runs = ins[ii, napi.I_RLEN]
                slots = spans(ins[ii, napi.I_RHEAD], n_runs) % st.runs.shape[1]
                rows_of = np.repeat(ii, n_runs)
                held = class_counts_many(
                    cls_group, lay, qs, C, st.runs[rows_of, slots, 0], st.runs[rows_of, slots, 1],
                    np.repeat(np.arange(len(ii), dtype=np.int64), n_runs),
                )  # fmt: skip
                took_rows = class_rows_many(took, rep)
                held_rows = class_rows_many(held, rep)
                now, was = ins[ii].tolist(), before[ii].tolist()
                onward = took @ self.facts.dev_facts(dev).onward if feeds is not None else None
                for k, i in enumerate(same):
                    if isinstance(dev, Veth) and cfg.static[i, napi.I_SRC] >= 0:
                        # written by the local stack: what its ring took, the taken and the held
                        h = rxqs[i].held
                        had = np.bincount(of_entry[h.entry], weights=h.count, minlength=C)
                        ring = took[k] + held[k] - had.astype(np.int64)
                        self.written_rx[id(rxqs[i])] = class_rows_many(ring[None, :], rep)[0]
                    a, b = at[i], at[i + 1]
                    shape = self._shape(
                        cfg, i, lay, polls[a:b], times[a:b], labels[a:b], segs, now[k], was[k]
                    )  # fmt: skip
                    cpu = now[k][napi.I_CPU]
                    batch.append((rxqs[i].index, cpu, took_rows[k], shape))
                    if feeds is not None and onward is not None and b > a and onward[k] > 0:
                        if times_f is None or k_f is None:
                            times_f, k_f = times.astype(float), polls[:, napi.P_K].astype(float)
                        sched = (times_f[a:b], k_f[a:b])
                        feeds.append(Feed(dev, rxqs[i].index, cpu, took[k], b - a, sched))
                _write_back(dev, qs.tolist(), held_rows, ins[ii], before[ii])
            for i in idx if cfg.fed_from else ():
                if i in cfg.fed_from:
                    a, b = at[i], at[i + 1]
                    polled = (polls[a:b], times[a:b], labels[a:b], segs)
                    batch.append(self._several_fed(cfg, st, i, flog, rxqs[i], dev, before, polled))
            if batch:
                self.dp.napi_poll_many(dev, t0, batch)

    def _several_fed(
        self,
        cfg: Config,
        st: NapiState,
        i: int,
        flog: IntArray,
        rxq: RxQueue,
        dev: NetDev,
        before: IntArray,
        polled: tuple[IntArray, IntArray, IntArray, IntArray],
    ) -> tuple[int, int, Rows, PollShape]:
        """A veth queue several instances fed (``napi.I_MFED``): what its ring took and holds
        per flow class, from the feeds the loop logged in the order they came -- the ring is
        a FIFO, so it holds the last frames in. Returns its ``napi_poll_many`` entry."""
        C = len(self.dp.classes)
        rep = self.dp.classes.rep
        of_entry = self.dp.classes.of_entry
        log = flog[flog[:, napi.FL_TO] == i]
        came = log[:, napi.FL_TOOK]
        end = log[:, napi.FL_X] + came
        occ = int(st.ins[i, napi.I_OCC])
        later = np.cumsum(came[::-1])[::-1] - came  # taken in by the feeds after each
        kept = np.clip(occ - later, 0, came)  # of each feed, its last frames still held
        h = rxq.held
        had = np.bincount(of_entry[h.entry], weights=h.count, minlength=C).astype(np.int64)
        held = self._fed_counts(cfg, rxq.index, log[:, napi.FL_FROM], end - kept, end, C)
        extra = occ - int(came.sum())
        if extra > 0:  # and the last of what it held before
            gone = h.head(h.total - extra)
            held += had - np.bincount(of_entry[gone.entry], weights=gone.count, minlength=C).astype(
                np.int64
            )
        took = had + self._fed_counts(cfg, rxq.index, log[:, napi.FL_FROM], end - came, end, C)
        took -= held
        now, was = st.ins[i].tolist(), before[i].tolist()
        mine, times, labels, segs = polled
        shape = self._shape(cfg, i, None, mine, times, labels, segs, now, was)
        held_rows = class_rows_many(held[None, :], rep)[0]
        _write_back(dev, [rxq.index], [held_rows], st.ins[[i]], before[[i]])
        return rxq.index, now[napi.I_CPU], class_rows_many(took[None, :], rep)[0], shape

    def _fed_counts(
        self, cfg: Config, q: int, senders: IntArray, a: IntArray, b: IntArray, C: int
    ) -> IntArray:
        """Frames per flow class at positions [a_k, b_k) of sender ``senders[k]``'s sequence
        toward veth queue ``q`` (``Config.fed_layouts``)."""
        out = np.zeros(C, np.int64)
        for f in np.unique(senders).tolist():
            lay = cfg.fed_layouts[f]
            grp = self._class_groups(lay, self.dp.classes.of_entry, C)
            sel = senders == f
            zero = np.zeros(int(sel.sum()), np.int64)
            out += class_counts_many(grp, lay, np.array([q], np.int64), C, a[sel], b[sel], zero)[0]
        return out

    def _class_groups(self, lay: SourceLayout, of_entry: ClassIds, C: int) -> Grouped:
        """The layout's queue sequences grouped by (queue, flow class), once per epoch."""
        key = (self.world.epoch, id(lay), C)
        hit = self._groups.get(key)
        if hit is None:
            if len(self._groups) > 64:
                self._groups.clear()
            hit = self._groups[key] = lay.by_queue(of_entry, C)
        return hit

    def _shape(
        self,
        cfg: Config,
        i: int,
        lay: SourceLayout | None,
        mine: IntArray,
        times: IntArray,
        labels: IntArray,
        segs: IntArray,
        now: list[int],
        was: list[int],
    ) -> PollShape:
        """Per poll, the frames toward each bulk queue (``labels``: counted by
        ``napi.sort_polls``) and the devmap key of the first; ``now`` and ``was``: the
        instance's row after and before the step."""
        n_polls = len(mine)
        bursts = now[napi.I_IRQS] - was[napi.I_IRQS]
        shape = PollShape(n_polls, max(bursts, 1) if n_polls else 0)
        shape.times = times
        if cfg.static[i, napi.I_RRPRE] >= 0:  # a balance-rr bond's: how many went out here
            shape.rr_here = mine[:, napi.P_RRH].copy()
        values = cfg.label_value[i]
        if not len(values) or not n_polls:
            return shape
        c = self.dp.compiled[self.world.devices[cfg.names[i][0]].name]
        q = cfg.names[i][1]
        m = now[napi.I_M]
        lfl0 = now[napi.I_LFL]
        dev = self.world.devices[cfg.names[i][0]]
        for k, v in enumerate(values.tolist()):
            if veth_tx_label(dev, v):
                continue  # its XDP_TX into its peer: no bulk queue
            shape.classes[int(v)] = np.ascontiguousarray(labels[:, k])
            if cfg.multi_key[i][k] and lay is not None:
                pre = full_prefix(cfg.lab, int(cfg.lfl[lfl0 + napi.L_WIDTH * k + 2]), m)
                a, b, who = segments(mine, segs)
                cnt = seq_range(pre, m, a, b)
                first = np.full(n_polls, -1, np.int64)
                hit = cnt > 0
                # each poll's first segment holding such a frame, and the frame in it
                seg_idx = np.flatnonzero(hit)
                if len(seg_idx):
                    first_seg = seg_idx[np.unique(who[seg_idx], return_index=True)[1]]
                    pos = a[first_seg]
                    ks = first_at(pre, m, pos)
                    g = lay.queues
                    positions = g.positions(q)
                    entries = lay.entry(positions[ks % m])
                    first[who[first_seg]] = c.key[entries]
                shape.first_key[int(v)] = first
        return shape


def _card_members(cfg: Config) -> list[BoolArray]:
    """Per card whose DMA and wires the loop runs, the instances part of it: those on its
    ports, and those that redirect into one of its ports from off the card."""
    x = cfg.static[:, napi.I_XTXR]
    wire = np.where(x >= 0, cfg.txr[np.maximum(x, 0), rings.X_PORT], -1) if len(cfg.txr) else x
    out = []
    for k in range(len(cfg.cards)):
        w0 = int(cfg.cards[k, napi.K_PORT0])
        feeding = (wire >= w0) & (wire < w0 + int(cfg.cards[k, napi.K_NPORT]))
        out.append((cfg.static[:, napi.I_CARD] == k) | feeding)
    return out


def _write_back(dev: NetDev, qs: list[int], held: list[Rows], now: IntArray, was: IntArray) -> None:
    """Queues ``qs`` of ``dev``: their fast-mode fields from the loop's state (what other parts
    read), a column at a time. ``now`` and ``was``: the instances' rows after and before the
    step; ``held``, what each ring holds."""
    d = now - was
    missed = int(d[:, napi.I_MISSED].sum())
    if missed:  # the card's own limit: port-level discards (ice_update_vsi_stats)
        dev.add("rx_missed_errors", missed)
    taken, polls = d[:, napi.I_TAKEN].tolist(), d[:, napi.I_POLLS].tolist()
    peak, last = now[:, napi.I_PEAK].tolist(), now[:, napi.I_LAST_IRQ].tolist()
    pending = now[:, napi.I_STATE] == napi.IRQ_PENDING
    irq = np.where(pending, now[:, napi.I_IRQ_AT], -1).tolist()
    t = dev.rxq
    held_c, rx_c, polls_c = (
        t.column(RxQueue.held),
        t.column(RxQueue.rx_packets),
        t.column(RxQueue.polls),
    )
    pos_c, peak_c = t.column(RxQueue.fast_pos), t.column(RxQueue.peak)
    last_c, irq_c = t.column(RxQueue.last_irq), t.column(RxQueue.fast_irq)
    proc_c, proc = t.column(RxQueue.proc), now[:, napi.I_PROC].tolist()
    for k, q in enumerate(qs):
        held_c[q] = held[k]
        proc_c[q] = proc[k]
        rx_c[q] += taken[k]
        polls_c[q] += polls[k]
        pos_c[q] += taken[k]
        peak_c[q] = max(peak_c[q], peak[k])
        last_c[q] = last[k]
        irq_c[q] = irq[k]
    dropped = d[:, napi.I_DROPPED]
    total = int(dropped.sum())
    if total and isinstance(dev, Tun):  # the writer waits: it writes slower
        dev.throttled += total
    elif total and isinstance(dev, Veth):  # the sender's (``FastIO.rx``: fed_rx)
        pass
    elif total:
        dropped_c = t.column(RxQueue.rx_dropped)
        for k, n in enumerate(dropped.tolist()):
            dropped_c[qs[k]] += n
        dev.add("rx_dropped", total)
