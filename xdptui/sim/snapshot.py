"""The engine's state -> :class:`~xdptui.model.views.Frame`: the immutable picture the UI draws.
Each device kind gives its own typed view; nothing here is a string the UI parses back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.model.views import (
    COUNTERS,
    BondView,
    BulkQueueView,
    BulkTxView,
    CpumapEnqueueView,
    CpumapFromDevView,
    CpumapKthreadView,
    CpuView,
    DeviceView,
    DevmapXmitView,
    ExceptionView,
    Frame,
    LessonPosition,
    MapEntryView,
    MapView,
    NicView,
    ObjectView,
    QueueView,
    RedirectErrView,
    SourceView,
    StreamEventView,
    TapView,
    TracepointsView,
    TxRingView,
    VethView,
    XdpView,
    XskRingView,
    XskView,
    XskWriterView,
)
from xdptui.sim.bond.bond_main import Bond, bond_get_stats
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.show import loaded_programs
from xdptui.sim.state import LOG_MAX, State
from xdptui.sim.table import Table
from xdptui.sim.tally import Tracepoints
from xdptui.sim.xsk import XskSocket

if TYPE_CHECKING:
    from xdptui.sim.world import World


def _rings(
    rings: Table[TxRing], n: int, exact: bool, lock_ns: float = 0.0
) -> tuple[TxRingView, ...]:
    """The first ``n`` rings' views, read a column at a time."""
    return tuple(
        TxRingView(i, cpus, locked, size, o, sent, dropped, rxq, lock_ns if locked else 0.0)
        for i, cpus, locked, size, o, sent, dropped, rxq in zip(
            [r.index for r in rings[:n]],
            rings.column(TxRing.cpus)[:n],
            rings.column(TxRing.locked)[:n],
            rings.column(TxRing.size)[:n],
            [r.occupancy(exact) for r in rings[:n]],
            rings.column(TxRing.sent)[:n],
            rings.column(TxRing.dropped)[:n],
            rings.column(TxRing.rx_queues)[:n],
            strict=True,
        )
    )


def device_view(dev: NetDev, exact: bool, devices: dict[str, NetDev]) -> DeviceView:
    att = dev.prog
    xdp = None
    if att is not None:
        given = tuple((k, v) for k, v in att.prog.params if k != "ifindex")
        xdp = XdpView(att.prog.name, att.mode, att.inherited_from, given)
    t = dev.rxq
    backlog = isinstance(dev, Veth) and dev.backlog()
    queues = tuple(
        QueueView(q, cpu, size, occ, peak, rx, dropped, backlog, min(proc, occ))
        for q, cpu, size, occ, peak, rx, dropped, proc in zip(
            [q.index for q in t],
            t.column(RxQueue.irq_cpu),
            t.column(RxQueue.size),
            [q.occupancy(exact) for q in t],
            t.column(RxQueue.peak),
            t.column(RxQueue.rx_packets),
            t.column(RxQueue.rx_dropped),
            t.column(RxQueue.proc),
            strict=True,
        )
    )
    rings: tuple[TxRingView, ...] = ()
    extra: dict[str, object] = {}
    driver = None
    if isinstance(dev, Nic):
        driver = dev.drv.name
        rings = _rings(dev.tx, dev.xdp_rings, exact, dev.lock_cost(len(dev.ring_of_cpu)))
        extra["nic"] = NicView(dev.queues, dev.xdp_rings, dev.xdp_locking, dev.card)
    elif isinstance(dev, Veth):
        extra["veth"] = VethView(dev.peer)
    elif isinstance(dev, Tun):
        rings = _rings(dev.tx, len(dev.tx), exact)
        extra["tap"] = TapView(
            dev.mode,
            dev.writer,
            dev.reader_pps,
            dev.tx_queue_len,
            dev.throttled,
            tuple(dev.slow_reasons.items()),
            tuple(sorted(dev.path_verdicts.items())),
        )
    elif isinstance(dev, Bond):
        extra["bond"] = BondView(
            dev.mode,
            dev.xmit_hash_policy,
            tuple(dev.slaves),
            dev.curr_active,
            tuple(dev.usable),
            dev.miimon_ms,
            dev.rx_up,
            dev.tx_down,
            dev.stack_down,
        )
    counters = bond_get_stats(dev, devices) if isinstance(dev, Bond) else dev.counters
    return DeviceView(
        name=dev.name,
        ifindex=dev.ifindex,
        type=dev.kind,
        driver=driver,
        up=dev.admin_up,
        carrier=dev.carrier,
        master=dev.master,
        speed_bps=dev.speed_bps,
        mtu=dev.mtu,
        xdp=xdp,
        counters=tuple((k, counters[k]) for k in COUNTERS)
        + tuple((k, v) for k, v in counters.items() if k not in COUNTERS),
        queues=queues,
        xdp_tx_rings=rings,
        **extra,  # type: ignore[arg-type]
    )


def cpu_views(
    st: State, busy: npt.NDArray[np.float64], polls: npt.NDArray[np.int64]
) -> tuple[CpuView, ...]:
    w = st.world
    rx: list[list[tuple[str, int]]] = [[] for _ in range(w.nr_cpus)]
    txr: list[list[tuple[str, int, bool]]] = [[] for _ in range(w.nr_cpus)]
    for dev in w.devices.values():
        cpus = dev.rxq.column(RxQueue.irq_cpu)
        qs = [q.index for q in dev.rxq]
        for cpu, q in zip(cpus, qs, strict=True):
            rx[cpu].append((dev.name, q))
        if isinstance(dev, Nic) and dev.xdp_rings:
            for cpu, ring in enumerate(dev.ring_of_cpu.tolist()):
                if ring >= 0:
                    txr[cpu].append((dev.name, ring, dev.xdp_locking))
            for cpu, q in zip(cpus, qs, strict=True):  # XDP_TX of the queues a CPU polls
                ring = dev.xdp_tx_ring(cpu, q)  # (i40e, ice, mlx5)
                entry = (dev.name, ring, dev.xdp_locking)
                if ring >= 0 and entry not in txr[cpu]:
                    txr[cpu].append(entry)
    return tuple(
        CpuView(
            c,
            float(busy[c]),
            int(polls[c]),
            tuple(rx[c]),
            tuple(txr[c]),
            int(st.dp.cpu.busy_ns[c]),
        )
        for c in range(w.nr_cpus)
    )


def tracepoints_view(tp: Tracepoints, st: State | None = None) -> TracepointsView:
    enq: tuple[CpumapEnqueueView, ...] = ()
    by_dev: tuple[CpumapFromDevView, ...] = ()
    kth: tuple[CpumapKthreadView, ...] = ()
    if st is not None and st.world.cpumaps:
        ctp = st.dp.cpumap_tp
        enq = tuple(
            CpumapEnqueueView(m, c, to, r.processed, r.drops, r.hits)
            for (m, c, to), r in sorted(ctp.enqueue.items())
        )
        by_dev = tuple(
            CpumapFromDevView(m, d, to, r.processed, r.drops, r.hits)
            for (m, d, to), r in sorted(ctp.from_dev.items())
        )
        rings = {(m.name, e.cpu): e for m in st.world.cpumaps.values() for e in m.entries.values()}
        kth = tuple(
            CpumapKthreadView(
                m,
                c,
                r.processed,
                r.drops,
                r.sched,
                r.xdp_pass,
                r.xdp_drop,
                r.xdp_redirect,
                r.hits,
                r.busy_ns,
                rings[(m, c)].ring.total if (m, c) in rings else 0,
                rings[(m, c)].qsize if (m, c) in rings else 0,
                (p.name if (p := rings[(m, c)].prog) is not None else None)
                if (m, c) in rings
                else None,
            )
            for (m, c), r in sorted(ctp.kthread.items())
        )
    return TracepointsView(
        xdp_cpumap_enqueue=enq,
        cpumap_from_dev=by_dev,
        xdp_cpumap_kthread=kth,
        xdp_exception=tuple(
            ExceptionView(dev, act, n) for (dev, act), n in sorted(tp.exception.items()) if n
        ),
        xdp_redirect_err=tuple(
            RedirectErrView(dev, err, n) for (dev, err), n in sorted(tp.redirect_err.items()) if n
        ),
        xdp_devmap_xmit=tuple(
            DevmapXmitView(a, b, r.sent, r.drops, r.err, r.flushes, r.egress_drops)
            for (a, b), r in sorted(tp.devmap_xmit.items())
        ),
        xdp_redirect=tp.redirect,
        xdp_bulk_tx=tuple(
            BulkTxView(dev, err, b.sent, b.drops) for (dev, err), b in sorted(tp.bulk_tx.items())
        ),
    )


def build_frame(
    st: State,
    seq: int,
    busy: npt.NDArray[np.float64],
    polls: npt.NDArray[np.int64],
    t_ns: int,
    stream: tuple[StreamEventView, ...] = (),
) -> Frame:
    w = st.world
    maps = (
        tuple(
            MapView(
                m.name,
                m.type,
                m.max_entries,
                tuple(
                    MapEntryView(k, e.dev, e.egress.name if e.egress is not None else None)
                    for k, e in m.walk()
                ),
            )
            for m in w.maps.values()
        )
        + tuple(
            MapView(
                m.name,
                "cpumap",
                m.max_entries,
                tuple(
                    MapEntryView(k, f"cpu{e.cpu}", e.prog.name if e.prog else None, e.qsize)
                    for k, e in sorted(m.entries.items())
                ),
            )
            for m in w.cpumaps.values()
        )
        + tuple(
            MapView(
                m.name,
                "xskmap",
                m.max_entries,
                tuple(MapEntryView(k, sock, None) for k, sock in sorted(m.entries.items())),
            )
            for m in w.xskmaps.values()
        )
    )
    bulk = tuple(
        BulkQueueView(
            cpu, a, b, v.frames, v.flushes, v.last_bulk, v.program or None, v.egress_drops
        )
        for (cpu, a, b), v in st.dp.tp.bulk_queues()
    )
    sources = tuple(
        SourceView(
            name=src.spec.name,
            device=src.device,
            local=src.local,
            rate=str(src.rate),
            pps=w.source_pps(src),
            sizes=src.spec.sizes,
            flows=src.spec.flows,
            gso=src.spec.gso,
            emitted=src.emitted,
            lost=src.lost,
            stopped=src.stopped,
            pcap=src.spec.pcap or "",
        )
        for src in w.sources
    )
    return Frame(
        seq=seq,
        t_ns=t_ns,
        name=w.topology.name,
        description=w.topology.description,
        seed=w.topology.seed,
        nr_cpus=w.nr_cpus,
        devices=tuple(device_view(d, st.is_exact, w.devices) for d in w.devices.values()),
        cpus=cpu_views(st, busy, polls),
        tracepoints=tracepoints_view(st.dp.tp, st),
        events=st.log.newest(LOG_MAX),
        polls=int(st.dp.cpu.polls.sum()),
        maps=maps,
        bulk_queues=bulk,
        sources=sources,
        exact=st.is_exact,
        lesson=LessonPosition(*st.lesson) if st.lesson is not None else None,
        stream=stream,
        objects=object_views(w),
        xsks=tuple(xsk_view(xs.at(t_ns, _sent(w, xs, t_ns))) for xs in w.xsks.values()),
    )


def _sent(w: World, xs: XskSocket, t: int) -> int:
    """What a socket's writer has sent by ``t``: its source's frames."""
    return 0 if xs.source is None else w.sources[xs.source].emitted_until(t)


def xsk_view(xs: XskSocket) -> XskView:
    """An AF_XDP socket as the screen shows it."""
    tx = xs.tx_state()
    rings = (
        XskRingView("fill", xs.fill_size, xs.fill, xs.fill_prod, xs.fill_cons),
        XskRingView("rx", xs.rx_size, xs.rx, xs.stats["rx_packets"], xs.rx_cons),
        XskRingView("tx", xs.tx_size, tx["backlog"], tx["written"], xs.sent),
        XskRingView("comp", xs.comp_size, tx["comp"], xs.sent, xs.sent - tx["comp"]),
    )
    counters = dict(xs.stats)
    counters["tx_packets"] = xs.sent
    counters["tx_ring_empty_descs"] = tx["drained"]
    writer = None
    if xs.writer is not None:
        w = xs.writer
        writer = XskWriterView(
            w.batch,
            w.batch * 1e12 / w.period_ps,
            min(w.batch, w.cap),
            tx["kicks"],
            tx["eagain"],
            tx["not_written"],
        )
    return XskView(
        xs.name,
        xs.dev,
        xs.queue,
        xs.mode,
        xs.frames,
        xs.frame_size,
        rings,
        tuple(xs.owners().items()),
        xs.reader_pps,
        xs.need_wakeup,
        xs.rx_need_wakeup,
        xs.wakeups,
        tuple(counters.items()),
        writer,
    )


def stream_views(records: list[dict[str, Any]]) -> list[StreamEventView]:
    """Event-stream records (oldest first) as typed views; a poll takes its ``bulks`` from the
    ``bq_flush``, ``cpumap_enqueue`` and ``xsk_flush`` records right after it (``Exact.poll``
    emits them together; a cpumap's target is ``cpuN``, a socket's its name)."""
    out: list[StreamEventView] = []
    for i, r in enumerate(records):
        kind = r["kind"]
        common = {"seq": int(r["seq"]), "t_ns": int(r["t_ns"]), "kind": kind}
        if kind in ("napi_poll", "tun_write"):
            bulks: dict[str, int] = {}
            for f in records[i + 1 :]:
                flush = f["kind"] in ("bq_flush", "cpumap_enqueue", "xsk_flush")
                if not flush or f["t_ns"] != r["t_ns"] or f["cpu"] != r["cpu"]:
                    break
                if f["kind"] == "xsk_flush":  # an AF_XDP socket: what its RX ring took
                    key = f"xsk:{f['sock']}"
                    bulks[key] = bulks.get(key, 0) + int(f["received"])
                    continue
                to = f["to"] if f["kind"] == "bq_flush" else f"cpu{f['to_cpu']}"
                bulks[to] = bulks.get(to, 0) + int(f["frames"])
            if kind == "tun_write":
                out.append(
                    StreamEventView(
                        **common,
                        cpu=r["cpu"],
                        dev=r["dev"],
                        queue=r["queue"],
                        frames=r["frames"],
                        verdicts=tuple(sorted(r["verdicts"].items())),
                        bulks=tuple(bulks.items()),
                        dur_ns=r["dur_ns"],
                        reason=r["writer"],
                        paths=(("fast", r["fast"]), ("generic", r["generic"])),
                    )
                )
                continue
            out.append(
                StreamEventView(
                    **common,
                    cpu=r["cpu"],
                    dev=r["dev"],
                    queue=r["queue"],
                    frames=r["frames"],
                    ring_before=r["ring_before"],
                    ring_after=r["ring_after"],
                    verdicts=tuple(sorted(r["verdicts"].items())),
                    bulks=tuple(bulks.items()),
                    dur_ns=r["dur_ns"],
                )
            )
        elif kind == "bq_flush":
            out.append(
                StreamEventView(
                    **common,
                    cpu=r["cpu"],
                    dev=r["from"],
                    target=r["to"],
                    frames=r["frames"],
                    sent=r["sent"],
                    drops=r["drops"],
                    egress=r["egress"],
                    egress_drops=r.get("egress_drops", 0),
                    errno=r.get("err"),
                    reason=r["reason"],
                )
            )
        elif kind == "cpumap_enqueue":  # bq_flush_to_queue
            out.append(
                StreamEventView(
                    **common,
                    cpu=r["cpu"],
                    dev=r["map"],
                    target=f"cpu{r['to_cpu']}",
                    frames=r["frames"],
                    sent=r["frames"] - r["drops"],
                    drops=r["drops"],
                    reason=r["reason"],
                )
            )
        elif kind == "xsk_flush":  # __xsk_map_flush: the socket's RX ring published
            out.append(
                StreamEventView(
                    **common,
                    cpu=r["cpu"],
                    dev=r["sock"],
                    frames=r["frames"],
                    sent=r["received"],
                    drops=r["frames"] - r["received"],
                    errno=r["err"],
                    reason="xsk_flush",
                )
            )
        elif kind == "cpumap_kthread":  # one batch of cpu_map_kthread_run
            out.append(
                StreamEventView(
                    **common,
                    cpu=r["cpu"],
                    dev=r["map"],
                    frames=r["frames"],
                    ring_before=r["ring_before"],
                    ring_after=r["ring_after"],
                    verdicts=tuple(sorted(r["verdicts"].items())),
                    dur_ns=r["dur_ns"],
                    reason="woke" if r["sched"] else "",
                )
            )
        elif kind == "drop":
            out.append(
                StreamEventView(
                    **common,
                    cpu=r.get("cpu"),
                    dev=r["dev"],
                    queue=r.get("queue", r.get("ring")),
                    frames=r["frames"],
                    reason=r["where"],
                    errno=r.get("errno"),
                    action=r.get("action"),
                )
            )
        elif kind == "command":
            out.append(
                StreamEventView(
                    **common,
                    ok=r["ok"],
                    errno=r["errno"],
                    text=r["cmd"],
                    reason=r.get("origin", ""),
                )
            )
        elif kind == "lesson":
            out.append(StreamEventView(**common, text=f"{r['lesson']}.{r['step']}"))
        elif kind == "prog_fail":  # a Python program detached (shown like a failed command)
            where = ", ".join(r["detached"]) or "nothing"
            text = f"program {r['prog']} (id {r['id']}) {r['error']}; detached from {where}"
            out.append(StreamEventView(**common, ok=False, errno="EINVAL", text=text))
    return out


def object_views(w: World) -> tuple[ObjectView, ...]:
    """The loaded real XDP objects, by program id."""
    out = []
    for p in loaded_programs(w):
        obj = p.prog.obj
        if obj is None:
            continue
        out.append(
            ObjectView(
                p.id,
                obj.name,
                obj.code.path,
                obj.code.section,
                obj.code.tag,
                obj.code.insns,
                obj.depends,
                obj.approximated,
                obj.frames_run,
                p.map_ids,
            )
        )
    return tuple(out)
