"""Exact mode: the kernel's per-poll, per-frame story, event by event.

Frames arrive at their device at their own times (``Source.arrival_ns``); RSS puts each on its
queue's ring, a FIFO of descriptors, or drops it when the ring (or the card) is full. A queue's
interrupt is moderated (at most one per ``rx-usecs``) and schedules its NAPI instance on the
CPU it is affine to; each CPU polls its scheduled instances round-robin (``net_rx_action``),
each poll taking at most ``NAPI_POLL_WEIGHT`` frames from the head of the ring
(``napi_poll``). A poll that used its whole budget stays scheduled; one that did not completes
and re-arms the interrupt (``napi_complete_done``). The poll's frames go through the core
(``xdptui.sim.datapath``) in ring order; what they put into TX rings waits in slots until the
wire (or a tap's reader) takes them, one after the other.

A poll is applied at its start time and keeps its CPU busy for its cost. Arrivals are taken
into the rings lazily -- before a poll of the device, or when someone looks -- which gives the
same result whenever it happens, so runs do not depend on how time is cut.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.sim import cpumap
from xdptui.sim.batch import PollShape, Rows, distinct
from xdptui.sim.datapath import Datapath
from xdptui.sim.dev import vhost_net
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.nic import Card, Nic
from xdptui.sim.dev.rings import ARMED, IRQ_PENDING, SCHEDULED, RxQueue, TxRing, fifo_departures
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth, backlog_room, process_queue_after
from xdptui.sim.events import Event, EventStream
from xdptui.sim.exact_admit import Arrivals, admission
from xdptui.sim.exact_io import full_why, queue_where, tx_rings
from xdptui.sim.kconst import WIRE_OVERHEAD
from xdptui.sim.table import Field, Row, Table
from xdptui.sim.traffic import Source
from xdptui.sim.world import World

LOCAL_SLICE = 64
"""Frames of a local source queued at once (a quarter of the smallest default TX ring)."""
IntArray = npt.NDArray[np.int64]

IRQ = 0
RUN = 1
IDENT_SHIFT = 40  # a frame's identity: source index << 40 | sequence number
NEVER = 1 << 62


def ident(src: int, seq: IntArray) -> IntArray:
    out: IntArray = (np.int64(src) << IDENT_SHIFT) | seq
    return out


class CpuState(Row):
    """One CPU's softirq: when it is free again and its NAPI poll list (``softnet_data``). A
    row of exact mode's CPU table."""

    busy_until = Field[int](0)
    run_at = Field[int](-1)  # a RUN event is pending at this time (-1: none)

    __slots__ = ("poll_list",)
    poll_list: deque[tuple[str, int]]  # (device, queue)s: a copy shares the tuples
    OWN = (("poll_list", deque),)

    def fresh(self) -> dict[str, Any]:
        return {"poll_list": deque()}


class Exact:
    """The exact-mode event loop over a world and its data path."""

    def __init__(self, world: World, dp: Datapath, stream: EventStream) -> None:
        self.world = world
        self.dp = dp
        self.stream = stream
        self.now = 0
        self.heap: list[tuple[int, int, int, str, int]] = []
        self.seq = 0
        self.cpus = Table.of(CpuState, ({} for _ in range(world.nr_cpus)))
        self.admitted: dict[str, int] = {}
        self.tx_due: dict[str, list[IntArray]] = {}  # per card: departures not yet charged
        self._pending_sched: list[tuple[NetDev, RxQueue, int]] = []
        self._card_ports: dict[str, list[NetDev]] = {}
        self.polls = 0

    # ------------------------------------------------------------ scheduling

    def push(self, t: int, kind: int, dev: str, q: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, dev, q))

    def next_time(self) -> int:
        return self.heap[0][0] if self.heap else NEVER

    def run(self, t_end: int, max_polls: int | None = None) -> bool:
        """Process every event at or before ``t_end``; with ``max_polls``, stop right after
        the poll that brings ``polls`` to it (True: stopped there, ``now`` is its time)."""
        local = any(s.local and self.world.lands_on(s) is None for s in self.world.sources)
        self.stream.hold()  # drops are found when arrivals are admitted: settle releases
        while self.heap and self.heap[0][0] <= t_end:
            t, _, kind, dev, q = heapq.heappop(self.heap)
            if local:
                self.local_tx(t)
            self.now = t
            if kind == IRQ:
                self._irq(dev, q, t)
            else:
                self._run(q, t)
                if max_polls is not None and self.polls >= max_polls:
                    return True
        self.now = max(self.now, t_end)
        return False

    def rearm_all(self, t: int) -> None:
        """After a change (a command, a rate, a link): every armed instance's next interrupt
        is recomputed from the sources as they now are."""
        for dev in self.world.devices.values():
            for rxq in dev.rxq:
                if rxq.state != SCHEDULED:
                    rxq.state = ARMED
                    self._arm(dev, rxq, t)

    def _arm(self, dev: NetDev, rxq: RxQueue, t: int) -> None:
        """Interrupt moderation: the interrupt fires at the first frame after ``t``, but not
        within ``itr_ns`` of the last one (ITR); a veth or tap has no interrupt to wait for."""
        if not dev.running:
            return
        # frames already waiting, or the first to come after those taken into the ring so far
        seen = min(self.admitted.get(dev.name, t), t)
        first = t if len(rxq.fifo) else self.next_arrival(dev, rxq, seen)
        if first >= NEVER:
            return
        at = max(first, rxq.last_irq + rxq.itr_ns, t)
        rxq.state = IRQ_PENDING
        rxq.irq_at = at
        self.push(at, IRQ, dev.name, rxq.index)

    def _irq(self, name: str, q: int, t: int) -> None:
        dev = self.world.devices.get(name)
        if dev is None or q >= len(dev.rxq):
            return
        rxq = dev.rxq[q]
        if rxq.state != IRQ_PENDING or rxq.irq_at != t:
            return  # superseded by a re-arm
        rxq.last_irq = t
        self._schedule(dev, rxq, rxq.irq_cpu, t)

    def _schedule(self, dev: NetDev, rxq: RxQueue, cpu: int, t: int) -> None:
        """``____napi_schedule``: onto the CPU's poll list; raise the softirq if idle."""
        rxq.state = SCHEDULED
        rxq.cpu = cpu
        c = self.cpus[cpu]
        c.poll_list.append((dev.name, rxq.index))
        if c.run_at < 0:
            c.run_at = max(t, c.busy_until)
            self.push(c.run_at, RUN, "", cpu)

    def schedule_napi(self, dev: NetDev, rxq: RxQueue, cpu: int) -> None:
        """A sender put frames on a veth queue: ``__veth_xdp_flush`` schedules its NAPI on
        the sending CPU at the end of the sender's poll."""
        if rxq.state != SCHEDULED:
            rxq.state = SCHEDULED
            self._pending_sched.append((dev, rxq, cpu))

    # ------------------------------------------------------------ the poll

    def wake(self, cpu: int, t: int) -> None:
        """``wake_up_process`` of a cpumap kthread on ``cpu``: it runs once the CPU has no
        NAPI work (a softirq runs before a task)."""
        c = self.cpus[cpu]
        if c.run_at < 0:
            c.run_at = max(t, c.busy_until)
            self.push(c.run_at, RUN, "", cpu)

    def _kthread(self, cpu: int, t: int) -> None:
        """One batch of the cpumap kthread on ``cpu`` with frames waiting, if any."""
        found = cpumap.pending(self.world.cpumaps, cpu)
        if found is None:
            return
        cmap, key, entry = found
        dur, event = cpumap.kthread_batch(self.dp, cmap, key, entry, t)
        c = self.cpus[cpu]
        c.busy_until = t + dur
        self.dp.cpu.busy_ns[cpu] += dur
        self.stream.emit(event)
        self._next(cpu, t)

    def _run(self, cpu: int, t: int) -> None:
        c = self.cpus[cpu]
        c.run_at = -1
        if not c.poll_list:
            self._kthread(cpu, t)
            return
        name, q = c.poll_list.popleft()
        dev = self.world.devices[name]
        rxq = dev.rxq[q] if q < len(dev.rxq) else None
        if rxq is None or rxq.state != SCHEDULED:
            self._next(cpu, t)
            return
        dur = self.poll(dev, rxq, cpu, t)
        c.busy_until = t + dur
        self.dp.cpu.busy_ns[cpu] += dur
        for pdev, prxq, pcpu in self._pending_sched:
            prxq.state = ARMED
            self._schedule(pdev, prxq, pcpu, t)
        self._pending_sched = []
        if rxq.state == SCHEDULED and rxq.cpu == cpu and (name, q) not in c.poll_list:
            # the poll used its whole budget: back to the tail of the list (net_rx_action)
            c.poll_list.append((name, q))
        self._next(cpu, t)

    def _next(self, cpu: int, t: int) -> None:
        c = self.cpus[cpu]
        waiting = c.poll_list or cpumap.pending(self.world.cpumaps, cpu) is not None
        if waiting and c.run_at < 0:
            c.run_at = max(t, c.busy_until)
            self.push(c.run_at, RUN, "", cpu)

    def poll(self, dev: NetDev, rxq: RxQueue, cpu: int, t: int) -> int:
        """One ``napi_poll``: up to ``weight`` frames from the ring's head, in order. On a
        tun/tap it is the writer's writes instead (``tun_get_user``, on the writer's CPU):
        a ``tun_write`` event, and no event (nor a step) when there was nothing to write."""
        self.admit(dev, t)
        fast0 = dev.counters.get("xdp_fast_path", 0)
        before = len(rxq.fifo)
        head = rxq.fifo.column("t")
        ready = int(np.searchsorted(head, t, side="right"))
        k = min(rxq.weight, ready)
        vhost = isinstance(dev, Tun) and dev.writer == "vhost"
        if isinstance(dev, Tun) and vhost:  # one handle_tx_copy send: a batch, or one alone
            xdp = self.dp.compiled[dev.name].mode is not None
            batched = dev.batched(self.world.entries.size[rxq.fifo.column("entry")[:k]], xdp)
            k = vhost_net.first_send(batched, rxq.vhost_done)
            rxq.vhost_done = vhost_net.done_after(
                k, bool(k and batched[0]), rxq.vhost_done, emptied=k == ready
            )
        frames = rxq.fifo.pop(k)
        if isinstance(dev, Veth) and dev.backlog():  # process_backlog
            rxq.proc = process_queue_after(rxq.proc, before, k)
        idents = frames["ident"]
        rows = Rows.frames(frames["entry"], idents)  # each ready now (time None)
        if self.dp.watched(rows):
            pos = int(np.flatnonzero(idents == self.dp.watch)[0]) + 1
            self.dp.hop(
                t, dev.name, "napi", f"cpu {cpu} polls queue {rxq.index}: frame {pos} of {k}"
            )
        tp = self.dp.tp
        errs, excs = dict(tp.redirect_err), dict(tp.exception)
        out = self.dp.napi_poll(dev, rxq.index, cpu, t, rows, PollShape(1))
        # the nearest ns of its cost on the picosecond grid, as NAPI's loop sums it
        # (``napi.poll``): a float sum of 64 costs may land a hair below a half
        dur = max(1, (round(out.cost_ns * 1000) + 500) // 1000)
        rxq.rx_packets += k
        rxq.polls += 1
        if k == ready if vhost else k < rxq.weight:  # napi_complete_done: re-arm the interrupt
            rxq.state = ARMED
            self._arm(dev, rxq, t + dur)
        if isinstance(dev, Tun):
            if k:
                self.polls += 1
                self.stream.emit(self._write_event(dev, rxq, cpu, t, k, dur, out.verdicts, fast0))
        else:
            self.polls += 1
            self.stream.emit(
                {
                    "t_ns": t,
                    "kind": "napi_poll",
                    "cpu": cpu,
                    "dev": dev.name,
                    "queue": rxq.index,
                    "frames": k,
                    "ring_before": before,
                    "ring_after": len(rxq.fifo),
                    "verdicts": out.verdicts,
                    "dur_ns": dur,
                    "first": self._frame_name(int(idents[0])) if k else None,
                }
            )
        for f in out.flushes:
            self.stream.emit(
                {
                    "t_ns": t,
                    "kind": "bq_flush",
                    "cpu": f.cpu,
                    "from": f.src,
                    "to": f.dst,
                    "frames": f.frames,
                    "sent": f.sent,
                    "drops": f.drops,
                    "egress": f.egress,
                    "reason": f.reason,
                    "egress_drops": f.egress_drops,
                    "err": f.err,
                }
            )
        for cf in out.cpumap_flushes:
            self.stream.emit({"t_ns": t, "kind": "cpumap_enqueue", **cf})
        for xf in out.xsk_flushes:
            self.stream.emit({"t_ns": t, "kind": "xsk_flush", "cpu": cpu, **xf})
        self._log_refusals(t, cpu, rxq.index, errs, excs)
        return dur

    def _write_event(
        self,
        dev: Tun,
        rxq: RxQueue,
        cpu: int,
        t: int,
        k: int,
        dur: int,
        verdicts: dict[str, int],
        fast0: int,
    ) -> Event:
        """``tun_write``: ``k`` frames the writer (userspace, or vhost's ``handle_tx``) wrote
        into the tap's queue, each through ``tun_get_user``: ``fast`` of them on the fast path
        (``tun_build_skb``), the rest as skbs (generic XDP)."""
        fast = dev.counters["xdp_fast_path"] - fast0
        return {
            "t_ns": t,
            "kind": "tun_write",
            "cpu": cpu,
            "dev": dev.name,
            "queue": rxq.index,
            "frames": k,
            "writer": dev.writer,
            "fast": fast,
            "generic": k - fast if self.dp.compiled[dev.name].mode is not None else 0,
            "verdicts": verdicts,
            "dur_ns": dur,
        }

    def _log_refusals(
        self,
        t: int,
        cpu: int,
        queue: int,
        errs: dict[tuple[str, str], int],
        excs: dict[tuple[str, str], int],
    ) -> None:
        """The poll's ``xdp:xdp_redirect_err`` (with the errno) and ``xdp:xdp_exception``
        hits, as drop events after it."""
        tp = self.dp.tp
        for (name, err), n in tp.redirect_err.items():
            was = errs.get((name, err), 0)
            if n > was:
                self.log_drop(t, name, "xdp_redirect_err", n - was, cpu=cpu, queue=queue, errno=err)
        for (name, act), n in tp.exception.items():
            was = excs.get((name, act), 0)
            if n > was:
                self.log_drop(t, name, "xdp_exception", n - was, cpu=cpu, queue=queue, action=act)

    def _frame_name(self, frame: int) -> list[str | int] | None:
        """A frame identity as [source, sequence number] (None: not from a source)."""
        if frame < 0:
            return None
        src = self.world.sources[frame >> IDENT_SHIFT]
        return [src.spec.name, frame & ((1 << IDENT_SHIFT) - 1)]

    # ------------------------------------------------------------ arrivals

    def next_arrival(self, dev: NetDev, rxq: RxQueue, t: int) -> int:
        """When the next frame for ``rxq`` reaches ``dev`` after ``t`` (NEVER if none)."""
        best = NEVER
        for src in self.world.sources:
            if self.world.lands_on(src) is not dev or src.stopped:
                continue
            n = src.emitted_until(t)
            if src.spec.count is not None and n >= src.spec.count:
                continue
            pos = self._positions_of(src, dev, rxq.index)
            if not len(pos):
                continue
            L = len(src.table)
            j = n % L
            i = int(np.searchsorted(pos, j))
            nxt = n - j + (int(pos[i]) if i < len(pos) else L + int(pos[0]))
            if src.spec.count is not None and nxt >= src.spec.count:
                continue
            if nxt < src.emitted_at_origin or src.milli <= 0:
                continue
            best = min(best, src.arrival_of(nxt))
        return best

    def _positions_of(self, src: Source, dev: NetDev, q: int) -> npt.NDArray[np.integer[Any]]:
        """Cycle positions of ``src``'s entries that land on queue ``q`` of ``dev``, ascending
        (a view of the layout's grouping)."""
        self.dp.compile()
        g = self.dp.layouts.get(self.world, src, dev, self.dp.classes.of_entry).queues
        out: npt.NDArray[np.integer[Any]] = g.order[g.start[q] : g.start[q + 1]]
        return out

    def queue_of(self, dev: NetDev, entries: IntArray) -> IntArray:
        if isinstance(dev, Nic):
            return dev.rss_queues(entries, self.world.entries.rss_hash)
        return dev.rx_queue_of(self.world.entries.rss_hash[entries])

    def admit(self, dev: NetDev, t: int) -> None:
        """Bring ``dev``'s arrivals up to ``t`` into its rings (all ports of its card, which
        share the card's DMA budget, together), frame by frame in arrival order: a frame
        whose ring is full is dropped before any DMA; one the card has no DMA for
        (``Card.admit``) is dropped too; the rest take a descriptor. Frames reaching two ports
        at the same nanosecond, when the card has DMA for only some of them, are granted
        round-robin between the ports (the card's DMA arbitration, a modelling choice:
        ``exact_admit.arbitrate``)."""
        w = self.world
        card = w.cards.get(dev.card) if isinstance(dev, Nic) else None
        group = self._ports(card) if card is not None else [dev]
        if all(self.admitted.get(d.name, -1) >= t for d in group):
            return
        for d in group:
            self.admitted[d.name] = t
        dep = self.take_due(card, t) if card is not None else None
        parts: list[Arrivals] = []
        for src in w.sources:
            target = self.world.lands_on(src)
            if target is None or target not in group:
                continue
            n0, n1 = src.emitted, src.emitted_until(t)
            if n1 <= n0:
                continue
            src.emitted = n1
            sender = w.devices[src.device]
            if src.local and not sender.running:  # (a veth's: its carrier is its peer's up)
                self._stack_refused(src, sender, n0, n1)
                continue
            if not target.running or not sender.running:
                src.lost += n1 - n0
                continue
            entries = src.entries(n0, n1)
            parts.append(
                Arrivals(
                    target,
                    src,
                    entries,
                    src.arrival_ns(n0, n1),
                    ident(src.index, np.arange(n0, n1, dtype=np.int64)),
                    self.queue_of(target, entries),
                )
            )
        if parts:
            self._admit(parts, card, group, dep)
        elif card is not None and dep is not None:
            card.charge_sent(dep)

    def _ports(self, card: Card) -> list[NetDev]:
        """The ports of ``card`` (a world's devices and their cards never change)."""
        group = self._card_ports.get(card.name)
        if group is None:
            group = self._card_ports[card.name] = list(self.world.card_ports(card.name))
        return group

    def _admit(
        self, parts: list[Arrivals], card: Card | None, group: list[NetDev], dep: IntArray | None
    ) -> None:
        if len(parts) == 1:  # one source: already in arrival order
            p = parts[0]
            free = _free_slots(p.dev.rxq, p.queue)
            ports = np.full(len(p.times), group.index(p.dev), np.int64)
            keep, full = admission(p.times, p.queue, ports, free, card, len(group), dep)
            self._fill(p, keep, full)
            return
        devs = list(dict.fromkeys(p.dev for p in parts))
        slot = {d.name: i for i, d in enumerate(devs)}
        port = {d.name: i for i, d in enumerate(group)}
        base = np.cumsum([0] + [len(d.rxq) for d in devs])
        times = np.concatenate([p.times for p in parts])
        key = np.concatenate([base[slot[p.dev.name]] + p.queue for p in parts])
        ports = np.concatenate([np.full(len(p.times), port[p.dev.name]) for p in parts])
        order = np.argsort(times, kind="stable") if len(parts) > 1 else np.arange(len(times))
        times, key, ports = times[order], key[order], ports[order]
        free = _free_slots([r for d in devs for r in d.rxq], key)
        keep, full = admission(times, key, ports, free, card, len(group), dep)
        n = len(times)
        back = np.empty(n, np.int64)
        back[order] = np.arange(n)
        ends = np.cumsum([len(p.times) for p in parts])
        sels = [back[e - len(p.times) : e] for p, e in zip(parts, ends, strict=True)]
        held: dict[int, tuple[RxQueue, list[dict[str, IntArray]]]] = {}
        for p, sel in zip(parts, sels, strict=True):
            for rxq, chunk in self._fill(p, keep[sel], full[sel], push=False):
                held.setdefault(id(rxq), (rxq, []))[1].append(chunk)
        # a ring takes descriptors in arrival order, whichever source sent them
        for rxq, chunks in held.values():
            t = np.concatenate([c["t"] for c in chunks])
            by_t = np.argsort(t, kind="stable")
            rxq.fifo.push({k: np.concatenate([c[k] for c in chunks])[by_t] for k in chunks[0]})
            rxq.peak = max(rxq.peak, len(rxq.fifo))
        if self.dp.watch is not None:
            for p, sel in zip(parts, sels, strict=True):
                self._watch_arrival(p, keep[sel], full[sel])

    def _fill(
        self,
        p: Arrivals,
        keep: npt.NDArray[np.bool_],
        full: npt.NDArray[np.bool_],
        push: bool = True,
    ) -> list[tuple[RxQueue, dict[str, IntArray]]]:
        """Descriptors onto the rings (or, with ``push`` False, returned per ring for the
        caller to merge with other sources' in arrival order); drops counted where the
        kernel counts them."""
        out: list[tuple[RxQueue, dict[str, IntArray]]] = []
        dev = p.dev
        veth_skb = (  # the local stack's skbs: veth_xmit's
            self.dp.accounts.refusal("veth_skb", self.world.devices[p.src.device])
            if p.src.local
            else None
        )
        nq = len(dev.rxq)
        kept_all = bool(keep.all())
        took = np.arange(len(keep)) if kept_all else np.flatnonzero(keep)
        q_took = p.queue if kept_all else p.queue[took]
        by_q = took[np.argsort(q_took, kind="stable")] if nq > 1 else took
        n_take = np.bincount(q_took, minlength=nq).tolist()
        ends = list(itertools.accumulate(n_take))
        entry, idents, times = p.entries[by_q], p.ident[by_q], p.times[by_q]
        if kept_all:
            n_full = n_card = [0] * nq
            queues = [q for q in range(nq) if n_take[q]]
        else:
            n_full = np.bincount(p.queue[full], minlength=nq).tolist()
            n_card = np.bincount(p.queue[~keep & ~full], minlength=nq).tolist()
            queues = [q for q in range(nq) if n_take[q] or n_full[q] or n_card[q]]
        for q in queues:
            rxq = dev.rxq[q]
            if n_card[q]:  # the card's own limit: port-level discards (ice_update_vsi_stats)
                dev.add("rx_missed_errors", n_card[q])
                first = int(p.times[np.flatnonzero((p.queue == q) & ~keep & ~full)[0]])
                n = n_card[q]  # counted when the arrivals are taken in: now
                self.log_drop(self.now, dev.name, "rx_missed", n, queue=q, first_t=first)
            if n_take[q]:
                a, b = ends[q] - n_take[q], ends[q]
                chunk = {"entry": entry[a:b], "ident": idents[a:b], "t": times[a:b]}
                if push:
                    rxq.fifo.push(chunk)
                    rxq.peak = max(rxq.peak, len(rxq.fifo))
                else:
                    out.append((rxq, chunk))
                if veth_skb is not None:  # veth_xmit: the sender transmitted what the ring took
                    self.dp.accounts.accepted(veth_skb, Rows.frames(entry[a:b]), into_rx=True)
            if n_full[q]:
                nf = n_full[q]
                if isinstance(dev, Tun):  # the writer waits: it writes slower
                    dev.throttled += nf
                elif veth_skb is not None:  # veth_xmit: NET_RX_DROP
                    self.dp.accounts.refused(veth_skb, dev, nf)
                else:
                    rxq.rx_dropped += nf
                    dev.add("rx_dropped", nf)
                at = int(p.times[np.flatnonzero((p.queue == q) & full)[0]])
                self.log_drop(at, dev.name, _full(dev, veth_skb is not None), nf, queue=q)
            if self.dp.frame_log is not None and (n_full[q] or n_card[q]):
                self._log_refused(p, q, keep, full)
        if push and self.dp.watch is not None:
            self._watch_arrival(p, keep, full)
        return out

    def _log_refused(
        self, p: Arrivals, q: int, keep: npt.NDArray[np.bool_], full: npt.NDArray[np.bool_]
    ) -> None:
        """``run --pcap``: frames queue ``q``'s ring refused (full) or the card missed."""
        log = self.dp.frame_log
        assert log is not None
        drop = frozenset({"drop"})
        for sel, why in ((full, "rx_ring_full"), (~keep & ~full, "rx_missed: the NIC's limit")):
            mine = np.flatnonzero((p.queue == q) & sel)
            log.add(p.dev.name, drop, p.times[mine], p.entries[mine], f"{why} (queue {q})")

    def _watch_arrival(
        self, p: Arrivals, keep: npt.NDArray[np.bool_], full: npt.NDArray[np.bool_]
    ) -> None:
        hit = np.flatnonzero(p.ident == self.dp.watch)
        if not len(hit):
            return
        f = int(hit[0])
        at = int(p.times[f])
        rxq = p.dev.rxq[int(p.queue[f])]
        self.dp.hop(at, p.dev.name, "rx_ring", queue_where(p.dev, rxq, rxq.irq_cpu))
        if not keep[f]:
            why = "the NIC's own limit: missed"
            if full[f]:
                veth = p.src.local and isinstance(p.dev, Veth)
                why = full_why(p.dev) if veth else "the ring is full: rx_dropped"
            self.dp.hop(at, p.dev.name, "drop", why, end=True)

    def _stack_refused(self, src: Source, dev: NetDev, n0: int, n1: int) -> None:
        """The local stack's frames [n0, n1) out of ``dev`` while it is not running
        (``NetDev.stack_refused``); the followed frame's journey ends there."""
        lost = dev.stack_refused(n1 - n0)
        src.lost += lost
        if self.dp.watch is not None and bool(
            np.any(ident(src.index, np.arange(n0, n1, dtype=np.int64)) == self.dp.watch)
        ):
            at = int(src.arrival_ns(n0, n1)[0])
            why = (
                f"{dev.name} is down: packet_snd fails with -ENETDOWN (counted nowhere)"
                if lost
                else f"{dev.name} has no carrier: __dev_queue_xmit drops it (tx_dropped)"
            )
            self.dp.hop(at, dev.name, "drop", why, end=True)

    def local_tx(self, t: int) -> None:
        """Frames the local stack sends out of a NIC, a bond or a tap (``from:``), each
        queued at its own time (sent from CPU 0)."""
        for src in self.world.sources:
            if not src.local or self.world.lands_on(src) is not None:
                continue
            n0, n1 = src.emitted, src.emitted_until(t)
            if n1 <= n0:
                continue
            src.emitted = n1
            dev = self.world.devices.get(src.device)
            if dev is None:
                src.lost += n1 - n0
                continue
            if not dev.running:
                self._stack_refused(src, dev, n0, n1)
                continue
            # each frame joins the TX queue when the stack sends it, not when someone looks:
            # in slices no longer than a quarter of the smallest queue it may reach, each
            # after the completions before its first frame
            for a in range(n0, n1, LOCAL_SLICE):
                b = min(a + LOCAL_SLICE, n1)
                at = src.arrival_ns(a, b)
                rows = Rows.frames(
                    src.entries(a, b), ident(src.index, np.arange(a, b, dtype=np.int64)), at
                )
                dev.stack_xmit(self.dp, 0, int(at[0]), rows)

    # ------------------------------------------------------------ transmit rings

    def departures(
        self,
        dev: NetDev,
        ring: TxRing,
        wire: IntArray,
        ready: IntArray | None,
        t: int,
        entries: IntArray | None = None,
    ) -> IntArray:
        """Departure times (ns, rounded up) of frames queued at ``ready`` (None: all at
        ``t``): the wire (or a tap queue's reader) sends one frame after the other,
        d_i = max(d_{i-1}, ready_i) + s_i, in picoseconds so a 6.72 ns frame time is not
        rounded to 7. ``entries``: the frames' flow-table entries (their wire times are
        then looked up, not computed)."""
        when: IntArray | int = t * 1000 if ready is None else ready * 1000
        if isinstance(dev, Nic):
            s = self._service_ps(dev, entries) if entries is not None else dev.service_ps(wire)
            dep_ps = fifo_departures(dev.wire_free_ps, when, s)
            dev.wire_free_ps = int(dep_ps[-1])
        elif isinstance(dev, Tun):  # (a reader-less tap's times may wrap: no shortcut)
            s = np.full(len(wire), dev.reader_ps(), np.int64)
            each = np.full(len(wire), t * 1000, np.int64) if ready is None else ready * 1000
            dep_ps = fifo_departures(dev.reader_free_ps[ring.index], each, s)
            dev.reader_free_ps[ring.index] = int(dep_ps[-1])
        else:
            return np.full(len(wire), t, np.int64) if ready is None else ready
        dep: IntArray = -(-dep_ps // 1000)
        return dep

    def _service_ps(self, dev: Nic, entries: IntArray) -> IntArray:
        """``Nic.service_ps`` of these entries' frames, from a per-entry table for the port's
        speed (a pure function of the entries: shared with them)."""
        e = self.world.entries
        key = f"service_ps {dev.speed_bps} {dev.drv.tx_pps_max}"
        per: IntArray | None = e.cache.get(key)
        if per is None:
            per = e.cache[key] = dev.service_ps(e.wire_bytes)
        return per[entries]

    def charge_due(self, card: Card, t: int) -> None:
        """The DMA of the frames the card's ports sent by ``t`` (charged as they leave)."""
        card.charge_sent(self.take_due(card, t))

    def take_due(self, card: Card, t: int) -> IntArray:
        """The (sorted) times of the frames the card's ports sent by ``t`` and the card has
        not charged yet, no longer pending (the caller charges them)."""
        due = self.tx_due.get(card.name)
        if card.freed:  # frames ``dev_close`` freed before they left
            if due:
                left = _without(np.sort(np.concatenate(due)), card.freed)
                due = self.tx_due[card.name] = [left] if len(left) else []
            card.freed = []
        if not due or min(int(d[0]) for d in due) > t:  # (each list sorted) none left yet
            return np.zeros(0, np.int64)
        dep = np.sort(np.concatenate(due)) if len(due) > 1 else due[0]
        n = int(np.searchsorted(dep, t, side="right"))
        self.tx_due[card.name] = [dep[n:]] if n < len(dep) else []
        out: IntArray = dep[:n]
        return out

    def refill(self, dev: NetDev, ring: TxRing, t: int) -> None:
        """A fast-mode ring's frames (counts) become descriptors leaving from ``t`` on."""
        n = ring.occ
        if n <= 0:
            ring.occ, ring.occ_bytes = 0, 0.0
            return
        wire = np.full(n, max(1, round(ring.occ_bytes / n)), np.int64)
        dep = self.departures(dev, ring, wire, None, t)
        ring.fifo.push({"entry": np.zeros(n, np.int64), "wire": wire, "t": dep})
        ring.occ, ring.occ_bytes = 0, 0.0
        if isinstance(dev, Nic) and dev.card in self.world.cards:
            self.tx_due.setdefault(dev.card, []).append(dep)

    def complete(self, dev: NetDev, ring: TxRing, t: int) -> None:
        """Frames whose departure time has passed have left: ``tx_packets`` (the TX
        completion, or the reader's ``tun_do_read``)."""
        fifo = ring.fifo
        if fifo.tail == fifo.head or fifo.buf["t"][fifo.head] > t:
            return
        n = int(fifo.column("t").searchsorted(t, side="right"))
        gone = fifo.pop(n)
        ring.sent += n
        wire = int(gone["wire"].sum())
        ring.sent_wire += wire
        dev.add("tx_packets", n)
        dev.add("tx_bytes", wire - WIRE_OVERHEAD * n)

    def settle(self, t: int) -> None:
        """Bring everything up to ``t`` for someone to look at: arrivals into rings,
        departures out of them."""
        self.local_tx(t)
        for dev in self.world.devices.values():
            if dev.rxq:
                self.admit(dev, t)
            for ring in tx_rings(dev):
                self.complete(dev, ring, t)
        self.stream.release()  # everything up to t is known: the stream in time order

    # ------------------------------------------------------------ following one frame

    def log_drop(self, t: int, dev: str, where: str, frames: int, **extra: int | str) -> None:
        ev: Event = {"t_ns": t, "kind": "drop", "dev": dev, "where": where, "frames": frames}
        ev.update(extra)
        self.stream.emit(ev)


def _full(dev: NetDev, veth: bool) -> str:
    """Where a full receive queue refused frames (a drop event's ``where``)."""
    if not veth:
        return "rx_ring_full"
    return "backlog_full" if isinstance(dev, Veth) and dev.backlog() else "veth_ring_full"


def _free_slots(rxqs: list[RxQueue], keys: IntArray) -> IntArray:
    """The free descriptors of the rings ``keys`` go to (0 for the others, never read)."""
    free = np.zeros(len(rxqs), np.int64)
    rings = distinct(keys)
    free[rings] = [backlog_room(rxqs[q].size, len(rxqs[q].fifo), rxqs[q].proc) for q in rings]
    return free


def _without(dep: IntArray, freed: list[IntArray]) -> IntArray:
    """The (sorted) departures ``dep`` without one occurrence of each time in ``freed``."""
    f = np.sort(np.concatenate(freed))
    rank = np.arange(len(f)) - np.searchsorted(f, f, side="left")  # among equal times
    at = np.searchsorted(dep, f, side="left") + rank
    hit = at < len(dep)
    hit[hit] = dep[at[hit]] == f[hit]
    keep = np.ones(len(dep), bool)
    keep[at[hit]] = False
    out: IntArray = dep[keep]
    return out
