"""World -> :class:`~xdptui.model.views.Frame`: the immutable picture the UI draws."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.model.views import (
    BulkQueueView,
    CpuView,
    DeviceView,
    DevmapXmitView,
    ExceptionView,
    Frame,
    MapEntryView,
    MapView,
    QueueView,
    RedirectErrView,
    SourceView,
    TracepointsView,
    TxRingView,
    XdpView,
)
from xdptui.sim.bond import Bond
from xdptui.sim.netdev import COUNTERS, NetDev, Nic, Veth
from xdptui.sim.tun import Tun

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator


def device_view(dev: NetDev) -> DeviceView:
    att = dev.prog
    xdp = None
    if att is not None:
        given = tuple((k, v) for k, v in att.prog.params if k != "ifindex")
        xdp = XdpView(att.prog.name, att.mode, att.inherited_from, given)
    queues: tuple[QueueView, ...] = ()
    if dev.rx is not None:
        occ = dev.rx.occupancy()
        queues = tuple(
            QueueView(
                queue=q,
                cpu=int(dev.rx.irq_cpu[q]),
                ring_size=dev.rx.size,
                occupancy=int(occ[q]),
                peak=int(dev.rx.peak[q]),
                rx_packets=int(dev.rx.rx_packets[q]),
                rx_dropped=int(dev.rx.rx_dropped[q]),
            )
            for q in range(dev.rx.count)
        )
    rings: tuple[TxRingView, ...] = ()
    details: list[tuple[str, str]] = []
    driver = None
    if isinstance(dev, Nic) and dev.tx is not None:
        assert dev.driver is not None
        driver = dev.driver.name
        tx = dev.tx
        rings = tuple(
            TxRingView(
                ring=r,
                cpus=tx.cpus[r],
                locked=tx.locked,
                size=int(tx.size[r]),
                occupancy=int(tx.occ[r]),
                sent=int(tx.sent[r]),
                dropped=int(tx.dropped[r]),
            )
            for r in range(dev.xdp_rings)
        )
        details += [("queues", str(dev.queues)), ("xdp_tx_rings", str(dev.xdp_rings))]
        if dev.xdp_locking:
            details.append(("xdp_locking", "on (cpu % rings, tx_lock)"))
    if isinstance(dev, Veth):
        details.append(("peer", dev.peer))
    if isinstance(dev, Tun) and dev.tx is not None:
        tx = dev.tx
        rings = tuple(
            TxRingView(
                ring=q,
                cpus=(),
                locked=False,
                size=int(tx.size[q]),
                occupancy=int(tx.occ[q]),
                sent=int(tx.sent[q]),
                dropped=int(tx.dropped[q]),
            )
            for q in range(dev.queues)
        )
        details += [
            ("mode", dev.mode),
            ("writer", dev.writer),
            ("reader", f"{dev.reader_pps:g}pps" if dev.reader_pps is not None else "none"),
            ("tx_queue_len", str(dev.tx_queue_len)),
            ("writes_throttled", str(dev.throttled)),
        ]
        details += [(f"slow_path.{k}", str(v)) for k, v in dev.slow_reasons.items()]
        details += [(f"verdicts.{k}", str(v)) for k, v in sorted(dev.path_verdicts.items())]
    if isinstance(dev, Bond):
        details += [
            ("mode", dev.mode),
            ("xmit_hash_policy", dev.xmit_hash_policy),
            ("slaves", " ".join(dev.slaves)),
            ("active_slave", dev.curr_active or ""),
            ("usable_slaves", " ".join(dev.usable)),
            ("miimon", str(dev.miimon_ms)),
        ]
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
        counters=tuple((k, dev.counters[k]) for k in COUNTERS)
        + tuple((k, v) for k, v in dev.counters.items() if k not in COUNTERS),
        queues=queues,
        xdp_tx_rings=rings,
        details=tuple(details),
    )


def cpu_views(
    sim: Simulator, busy: npt.NDArray[np.float64], polls: npt.NDArray[np.int64]
) -> tuple[CpuView, ...]:
    w = sim.world
    rx: list[list[tuple[str, int]]] = [[] for _ in range(w.nr_cpus)]
    txr: list[list[tuple[str, int, bool]]] = [[] for _ in range(w.nr_cpus)]
    for dev in w.devices.values():
        if dev.rx is not None:
            for q, cpu in enumerate(dev.rx.irq_cpu):
                rx[int(cpu)].append((dev.name, q))
        if isinstance(dev, Nic) and dev.xdp_rings:
            for cpu, ring in enumerate(dev.ring_of_cpu):
                if ring >= 0:
                    txr[cpu].append((dev.name, int(ring), dev.xdp_locking))
    return tuple(
        CpuView(c, float(busy[c]), int(polls[c]), tuple(rx[c]), tuple(txr[c]))
        for c in range(w.nr_cpus)
    )


def tracepoints_view(sim: Simulator) -> TracepointsView:
    tp = sim.datapath.tp
    return TracepointsView(
        xdp_exception=tuple(
            ExceptionView(dev, act, n) for (dev, act), n in sorted(tp.exception.items()) if n
        ),
        xdp_redirect_err=tuple(
            RedirectErrView(dev, err, n) for (dev, err), n in sorted(tp.redirect_err.items()) if n
        ),
        xdp_devmap_xmit=tuple(
            DevmapXmitView(a, b, int(r[0]), int(r[1]), round(r[2]), round(r[3]), int(r[4]))
            for (a, b), r in sorted(tp.devmap_xmit.items())
        ),
        xdp_redirect=tp.redirect,
    )


def build_frame(
    sim: Simulator, seq: int, busy: npt.NDArray[np.float64], polls: npt.NDArray[np.int64]
) -> Frame:
    w = sim.world
    maps = tuple(
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
    bulk = tuple(
        BulkQueueView(cpu, a, b, v.frames, round(v.flushes), v.last_bulk, v.program or None)
        for (cpu, a, b), v in sorted(sim.datapath.tp.bulk.items())
    )
    sources = tuple(
        SourceView(
            name=src.spec.name,
            device=src.device,
            local=src.local,
            rate=str(src.rate),
            pps=sim.datapath.source_pps(src),
            sizes=src.spec.sizes,
            flows=src.spec.flows,
            gso=src.spec.gso,
            emitted=src.emitted,
            lost=src.lost,
            stopped=src.stopped,
        )
        for src in w.sources
    )
    return Frame(
        seq=seq,
        t_ns=sim.now_ns,
        name=w.topology.name,
        description=w.topology.description,
        seed=w.topology.seed,
        nr_cpus=w.nr_cpus,
        devices=tuple(device_view(d) for d in w.devices.values()),
        cpus=cpu_views(sim, busy, polls),
        tracepoints=tracepoints_view(sim),
        events=tuple(sim.events),
        polls=sim.datapath.polls_total,
        maps=maps,
        bulk_queues=bulk,
        sources=sources,
    )
