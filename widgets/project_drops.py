"""The Drops tab's view: xdp-monitor's tracepoints (ring-full losses, the NIC's own misses,
exceptions, redirect errors, devmap transmits, bulk TX errors) and its summary line, with their
rates from the one :class:`~widgets.rates.RatesView`."""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import DeviceView, Frame
from xdptui.widgets import explain
from xdptui.widgets.explain import Explanation
from xdptui.widgets.rates import RatesView, sum_rates


@dataclass(frozen=True)
class RingDropRow:
    device: str
    queue: int
    cpu: int
    dropped: int
    per_s: float | None
    explanation: Explanation = explain.NONE


@dataclass(frozen=True)
class CountRow:
    """A tracepoint bucket: ``dev`` and its key (an action or an errno name)."""

    dev: str
    key: str
    count: int
    per_s: float | None
    explanation: Explanation = explain.NONE


@dataclass(frozen=True)
class DevmapRow:
    from_dev: str
    to_dev: str
    sent: int
    drops: int
    err: int
    flushes: int
    bulk_avg: float | None  # (sent + drops) / flushes, xdp-monitor's bulk-avg
    sent_per_s: float | None
    drops_per_s: float | None = None
    err_per_s: float | None = None
    explanation: Explanation = explain.NONE
    egress_drops: int = 0  # of the drops, the devmap egress program's


@dataclass(frozen=True)
class DropsSummary:
    """xdp-monitor's summary line: redirects, errors and drops, devmap transmits per second."""

    redirect_per_s: float | None
    err_drop_per_s: float | None
    xmit_per_s: float | None
    counting: bool = False  # stepping: the totals below are shown too
    redirect_total: int = 0
    err_drop_total: int = 0
    xmit_total: int = 0


@dataclass(frozen=True)
class DropsView:
    ring_full: tuple[RingDropRow, ...] = ()
    xdp_exception: tuple[CountRow, ...] = ()
    xdp_redirect_err: tuple[CountRow, ...] = ()
    devmap_xmit: tuple[DevmapRow, ...] = ()
    xdp_bulk_tx: tuple[CountRow, ...] = ()  # XDP_TX bulks a driver dropped, by error
    summary: DropsSummary | None = None
    missed: tuple[CountRow, ...] = ()  # the NIC's own limit (rx_missed_errors), per device
    cpumap: tuple[CountRow, ...] = ()  # ptr_ring full (cpumap_enqueue) and entry-program drops


def counter_of(dev: DeviceView | None, name: str) -> int | None:
    if dev is None:
        return None
    for key, value in dev.counters:
        if key == name:
            return value
    return None


def project_drops(rates: RatesView, frame: Frame) -> DropsView:
    ring_full: list[RingDropRow] = []
    missed: list[CountRow] = []
    for dev in frame.devices:
        for q in dev.queues:
            if q.rx_dropped:
                ring_full.append(
                    RingDropRow(
                        device=dev.name,
                        queue=q.queue,
                        cpu=q.cpu,
                        dropped=q.rx_dropped,
                        per_s=rates.queue(dev.name, q.queue, "rx_dropped", q.rx_dropped),
                        explanation=explain.ring_full(dev.name, q.queue, q.cpu),
                    )
                )
        n_missed = counter_of(dev, "rx_missed_errors") or 0
        if n_missed:
            card = dev.nic.card if dev.nic is not None else ""
            missed.append(
                CountRow(
                    dev.name,
                    "rx_missed_errors",
                    n_missed,
                    rates.counter(dev.name, "rx_missed_errors", n_missed),
                    explain.missed(dev.name, card),
                )
            )

    tp = frame.tracepoints
    peers = {dev.name: dev.veth.peer for dev in frame.devices if dev.veth is not None}
    exceptions = tuple(
        CountRow(
            e.dev,
            e.action,
            e.count,
            rates.tracepoint(("exception", e.dev, e.action), e.count),
            explain.exception(e.action),
        )
        for e in tp.xdp_exception
        if e.count
    )
    redirect_errors = tuple(
        CountRow(
            e.dev,
            e.err,
            e.count,
            rates.tracepoint(("redirect_err", e.dev, e.err), e.count),
            explain.redirect_err(e.err),
        )
        for e in tp.xdp_redirect_err
        if e.count
    )
    bulk_tx = tuple(
        CountRow(
            b.dev,
            b.err or "ring full",
            b.drops,
            rates.tracepoint(("bulk_tx", b.dev, b.err), b.drops),
            explain.bulk_tx(b.err, b.dev, peers.get(b.dev)),
        )
        for b in tp.xdp_bulk_tx
        if b.drops
    )
    devmap: list[DevmapRow] = []
    for d in tp.xdp_devmap_xmit:
        bulk = rates.bulk_avg(d.from_dev, d.to_dev, d.sent, d.drops, d.flushes)
        devmap.append(
            DevmapRow(
                from_dev=d.from_dev,
                to_dev=d.to_dev,
                sent=d.sent,
                drops=d.drops,
                err=d.err,
                flushes=d.flushes,
                bulk_avg=bulk,
                sent_per_s=rates.devmap(d.from_dev, d.to_dev, "sent", d.sent),
                drops_per_s=rates.devmap(d.from_dev, d.to_dev, "drops", d.drops),
                err_per_s=rates.devmap(d.from_dev, d.to_dev, "err", d.err),
                explanation=explain.devmap_xmit(
                    d.from_dev,
                    d.to_dev,
                    d.drops,
                    d.err,
                    bulk,
                    d.egress_drops,
                    egress_program(frame, d.from_dev, d.to_dev),
                    bond_target(frame, d.to_dev),
                ),
                egress_drops=d.egress_drops,
            )
        )
    cpumap = tuple(
        CountRow(
            f"cpu{q.cpu}->cpu{q.to_cpu}",
            "ptr_ring full",
            q.drops,
            rates.tracepoint(("cpumap", q.map, q.cpu, q.to_cpu, "drops"), q.drops),
            explain.cpumap_enqueue(q.map, q.cpu, q.to_cpu),
        )
        for q in tp.xdp_cpumap_enqueue
        if q.drops
    ) + tuple(
        CountRow(
            f"cpu{k.cpu} kthread",
            f"{k.prog} XDP_DROP",
            k.xdp_drop,
            rates.tracepoint(("kthread", k.map, k.cpu, "xdp_drop"), k.xdp_drop),
            explain.cpumap_program(k.map, k.cpu, k.prog),
        )
        for k in tp.xdp_cpumap_kthread
        if k.xdp_drop
    )
    return DropsView(
        cpumap=cpumap,
        ring_full=tuple(ring_full),
        xdp_exception=exceptions,
        xdp_redirect_err=redirect_errors,
        devmap_xmit=tuple(devmap),
        xdp_bulk_tx=bulk_tx,
        summary=_summary(rates, frame),
        missed=tuple(missed),
    )


def bond_target(frame: Frame, name: str) -> explain.BondTarget | None:
    """The bond a devmap entry points at, as its drops' explanation needs it (None: no bond)."""
    bond = next((d.bond for d in frame.devices if d.name == name), None)
    if bond is None:
        return None
    return explain.BondTarget(bond.mode, bond.active_slave, bond.miimon)


def egress_program(frame: Frame, from_dev: str, to_dev: str) -> str | None:
    """The egress program the bulks from -> to ran last (a bulk queue's first enqueuer's)."""
    return next(
        (
            b.program
            for b in frame.bulk_queues
            if b.from_dev == from_dev and b.to_dev == to_dev and b.program
        ),
        None,
    )


def _summary(rates: RatesView, frame: Frame) -> DropsSummary:
    """xdp-monitor's ``Summary`` line: ``xdp:xdp_redirect`` hits, every error and drop the
    panel lists, and frames ``bq_xmit_all`` sent (``xdp:xdp_devmap_xmit``), per second."""
    tp = frame.tracepoints
    losses: list[float | None] = []
    total = 0
    for dev in frame.devices:
        losses += [rates.queue(dev.name, q.queue, "rx_dropped", q.rx_dropped) for q in dev.queues]
        total += sum(q.rx_dropped for q in dev.queues)
        missed = counter_of(dev, "rx_missed_errors")
        if missed:
            losses.append(rates.counter(dev.name, "rx_missed_errors", missed))
            total += missed
    total += sum(e.count for e in tp.xdp_exception) + sum(e.count for e in tp.xdp_redirect_err)
    total += sum(d.drops for d in tp.xdp_devmap_xmit) + sum(b.drops for b in tp.xdp_bulk_tx)
    total += sum(q.drops for q in tp.xdp_cpumap_enqueue)
    total += sum(k.xdp_drop for k in tp.xdp_cpumap_kthread)
    losses += [
        rates.tracepoint(("cpumap", q.map, q.cpu, q.to_cpu, "drops"), q.drops)
        for q in tp.xdp_cpumap_enqueue
    ]
    losses += [
        rates.tracepoint(("kthread", k.map, k.cpu, "xdp_drop"), k.xdp_drop)
        for k in tp.xdp_cpumap_kthread
    ]
    losses += [rates.tracepoint(("exception", e.dev, e.action), e.count) for e in tp.xdp_exception]
    losses += [
        rates.tracepoint(("redirect_err", e.dev, e.err), e.count) for e in tp.xdp_redirect_err
    ]
    losses += [rates.devmap(d.from_dev, d.to_dev, "drops", d.drops) for d in tp.xdp_devmap_xmit]
    losses += [rates.tracepoint(("bulk_tx", b.dev, b.err), b.drops) for b in tp.xdp_bulk_tx]
    return DropsSummary(
        redirect_per_s=rates.tracepoint(("redirect",), tp.xdp_redirect),
        err_drop_per_s=sum_rates(losses) if rates.base is not None else None,
        xmit_per_s=sum_rates(
            rates.devmap(d.from_dev, d.to_dev, "sent", d.sent) for d in tp.xdp_devmap_xmit
        )
        if rates.base is not None
        else None,
        counting=rates.counting,
        redirect_total=tp.xdp_redirect,
        err_drop_total=total,
        xmit_total=sum(d.sent for d in tp.xdp_devmap_xmit),
    )
