"""From simulator frames to the small frozen views the panels draw.

``project(prev, frame, focus=...)`` is the only place where anything is derived: rates are counter
deltas between two frames divided by the simulated time between them, the rings panel is filtered
to the focused device, CPU lists are formatted. It is pure (no Textual, no engine), so it is tested
with plain asserts, and its views compare by value: a panel whose view did not change skips its
repaint. Views hold ints, floats, strings and tuples only, never NumPy arrays (Textual compares
reactive values with ``!=``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from xdptui.model.topology import Lesson
from xdptui.model.views import DeviceView, EventView, Frame
from xdptui.widgets import explain
from xdptui.widgets.crosswalk import CountersView, project_counters
from xdptui.widgets.explain import Explanation
from xdptui.widgets.format import format_cpus, format_pps
from xdptui.widgets.history import RateHistory, SparklinesView, project_sparklines
from xdptui.widgets.project_bond import BondView, PlanRow, project_bond
from xdptui.widgets.project_lesson import LessonView, Outcome, project_lesson
from xdptui.widgets.project_paths import FollowView, PathsView, project_paths
from xdptui.widgets.project_taps import TapsView, project_taps

DEV_MAP_BULK_SIZE = 16
"""Frames a devmap bulk queue holds before ``bq_enqueue`` flushes it early (kernel/bpf/devmap.c)."""

NS_PER_S = 1_000_000_000

DEVICE_COUNTERS: tuple[tuple[str, str], ...] = (
    ("RX", "rx_packets"),
    ("RX_DROP", "rx_dropped"),
    ("PASS", "xdp_pass"),
    ("DROP", "xdp_drop"),
    ("TX", "xdp_tx"),
    ("REDIR", "xdp_redirect"),
    ("XMIT", "xdp_xmit"),
    ("TX_OUT", "tx_packets"),
)
"""The devices table's counter columns: (heading, counter name in ``DeviceView.counters``).

``RX_DROP`` is the ring-full loss, ``PASS``..``REDIR`` the verdicts of the program attached to the
device, ``XMIT`` frames other devices handed to its ``ndo_xdp_xmit``, ``TX_OUT`` frames that left
it.
"""


@dataclass(frozen=True)
class HeaderView:
    """The header line: what runs, at which simulated instant, how fast."""

    name: str
    t_ns: int
    speed_ns_per_s: int
    paused: bool
    rtf: float | None  # achieved real-time factor, set only when running behind
    seed: int


@dataclass(frozen=True)
class DeviceRow:
    name: str
    kind: str  # "nic/ice", "bond", "tun/tap"
    up: bool
    carrier: bool
    master: str | None
    xdp: str  # "xdp_tx native", "" without a program
    xdp_inherited_from: str | None
    totals: tuple[int, ...]  # one per DEVICE_COUNTERS entry
    rates: tuple[float | None, ...]  # frames per second, None without a previous frame


@dataclass(frozen=True)
class DevicesView:
    headings: tuple[str, ...]
    rows: tuple[DeviceRow, ...]
    focus: str | None = None


@dataclass(frozen=True)
class GaugeRow:
    """One ring drawn as a gauge: an RX descriptor ring, an XDP TX ring, a tap's ring, or a
    devmap bulk queue (``kind == "bq"``: its average fill per flush out of 16)."""

    device: str
    kind: str  # "rx" | "tx" | "tap" | "bq"
    label: str  # "eth0 q3 cpu3" / "eth0 tx3 cpu3,19" / "bq eth0→eth1"
    size: int
    occupancy: int
    peak: int | None  # RX rings only
    dropped: int
    sent: int | None  # XDP TX rings and bulk queues
    locked: bool  # XDP TX ring shared by several CPUs (takes tx_lock)
    target: str | None = None  # bulk queues: the device they flush into
    average: float | None = None  # bulk queues: frames per flush


@dataclass(frozen=True)
class RingsView:
    rows: tuple[GaugeRow, ...]
    focus: str | None = None


@dataclass(frozen=True)
class CpuRow:
    cpu: int
    busy: float  # 0..1
    rx_queues: tuple[str, ...]  # "eth0:q3"
    xdp_tx_rings: tuple[tuple[str, bool], ...]  # ("eth0:tx3", locked)
    bulk_queues: tuple[str, ...] = ()  # "bq→eth1": this CPU's devmap bulk queue per target


@dataclass(frozen=True)
class CpuMapView:
    rows: tuple[CpuRow, ...]


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


@dataclass(frozen=True)
class DropsSummary:
    """xdp-monitor's summary line: redirects, errors and drops, devmap transmits per second."""

    redirect_per_s: float | None
    err_drop_per_s: float | None
    xmit_per_s: float | None


@dataclass(frozen=True)
class DropsView:
    ring_full: tuple[RingDropRow, ...] = ()
    xdp_exception: tuple[CountRow, ...] = ()
    xdp_redirect_err: tuple[CountRow, ...] = ()
    devmap_xmit: tuple[DevmapRow, ...] = ()
    xdp_bulk_tx: tuple[CountRow, ...] = ()  # XDP_TX bulks a driver dropped, by error
    summary: DropsSummary | None = None


@dataclass(frozen=True)
class PanelState:
    """What the app adds to the frames: the focused device, a followed packet, a running plan,
    the lesson position and the rate history."""

    focus: str | None = None
    follow: FollowView | None = None
    plan_title: str = ""
    plan: tuple[PlanRow, ...] = ()
    lessons: tuple[Lesson, ...] = ()
    lesson: int = 0
    step: int = 0
    outcomes: tuple[Outcome, ...] | None = None
    history: RateHistory = field(default_factory=RateHistory)


@dataclass(frozen=True)
class DashboardViews:
    devices: DevicesView
    rings: RingsView
    cpus: CpuMapView
    drops: DropsView
    events: tuple[EventView, ...]
    paths: PathsView
    sparklines: SparklinesView
    counters: CountersView
    bond: BondView
    lesson: LessonView
    taps: TapsView = field(default_factory=TapsView)


class Projection:
    """The views of one frame, each computed on first use.

    The screen asks only for the panels it shows, so a hidden tab costs nothing; every view is
    the same value :func:`project` would give.
    """

    def __init__(self, prev: Frame | None, frame: Frame, state: PanelState | None = None) -> None:
        state = state or PanelState()
        if state.focus is not None and all(dev.name != state.focus for dev in frame.devices):
            state = replace(state, focus=None)
        self.prev = prev
        self.frame = frame
        self.state = state
        self.dt = frame.t_ns - prev.t_ns if prev is not None else 0

    @cached_property
    def devices(self) -> DevicesView:
        return _devices(self.prev, self.frame, self.dt, self.state.focus)

    @cached_property
    def rings(self) -> RingsView:
        return _rings(self.frame, self.state.focus)

    @cached_property
    def cpus(self) -> CpuMapView:
        return _cpus(self.frame)

    @cached_property
    def drops(self) -> DropsView:
        return _drops(self.prev, self.frame, self.dt)

    @property
    def events(self) -> tuple[EventView, ...]:
        return self.frame.events

    @cached_property
    def paths(self) -> PathsView:
        return project_paths(
            self.prev, self.frame, focus=self.state.focus, follow=self.state.follow
        )

    @cached_property
    def sparklines(self) -> SparklinesView:
        return project_sparklines(self.state.history, self.frame, focus=self.state.focus)

    @cached_property
    def counters(self) -> CountersView:
        return project_counters(self.prev, self.frame, focus=self.state.focus)

    @cached_property
    def bond(self) -> BondView:
        return project_bond(
            self.prev,
            self.frame,
            focus=self.state.focus,
            plan_title=self.state.plan_title,
            plan=self.state.plan,
        )

    @cached_property
    def taps(self) -> TapsView:
        return project_taps(self.prev, self.frame, focus=self.state.focus)

    @cached_property
    def lesson(self) -> LessonView:
        st = self.state
        return project_lesson(st.lessons, st.lesson, st.step, st.outcomes)

    def all(self) -> DashboardViews:
        return DashboardViews(
            devices=self.devices,
            rings=self.rings,
            cpus=self.cpus,
            drops=self.drops,
            events=self.events,
            paths=self.paths,
            sparklines=self.sparklines,
            counters=self.counters,
            bond=self.bond,
            lesson=self.lesson,
            taps=self.taps,
        )


def header_view(
    frame: Frame, *, speed_ns_per_s: int, paused: bool, rtf: float | None
) -> HeaderView:
    """The header for ``frame`` under the app's clock state (speed, pause, lag)."""
    return HeaderView(
        name=frame.name,
        t_ns=frame.t_ns,
        speed_ns_per_s=speed_ns_per_s,
        paused=paused,
        rtf=None if paused else rtf,
        seed=frame.seed,
    )


def rate(prev: int | None, now: int, dt_ns: int) -> float | None:
    """``(now - prev) / dt`` per second; None without a previous value or a time step.

    A counter that went backwards (the device was reset by a command) reads as 0, not negative.
    """
    if prev is None or dt_ns <= 0:
        return None
    return max(now - prev, 0) * NS_PER_S / dt_ns


def project(
    prev: Frame | None,
    frame: Frame,
    *,
    focus: str | None = None,
    state: PanelState | None = None,
) -> DashboardViews:
    """All panel views for ``frame``; rates against ``prev`` (an earlier frame, or None).

    ``focus`` names a device clicked in a panel: the rings panel then shows only it and its
    bond slaves, the counters only it, the bond panel puts its bond first. An unknown name is
    ignored. ``state`` carries the rest of what the app adds (``focus`` overrides its focus).
    """
    state = state or PanelState()
    if focus is not None:
        state = replace(state, focus=focus)
    return Projection(prev, frame, state).all()


def _prev_device(prev: Frame | None, name: str) -> DeviceView | None:
    if prev is None:
        return None
    for dev in prev.devices:
        if dev.name == name:
            return dev
    return None


def _counter(dev: DeviceView | None, name: str) -> int | None:
    if dev is None:
        return None
    for key, value in dev.counters:
        if key == name:
            return value
    return None


def _devices(prev: Frame | None, frame: Frame, dt: int, focus: str | None) -> DevicesView:
    rows: list[DeviceRow] = []
    for dev in frame.devices:
        before = _prev_device(prev, dev.name)
        totals = tuple(_counter(dev, key) or 0 for _, key in DEVICE_COUNTERS)
        rates = tuple(
            rate(_counter(before, key), total, dt)
            for (_, key), total in zip(DEVICE_COUNTERS, totals, strict=True)
        )
        kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
        xdp = f"{dev.xdp.program} {dev.xdp.mode}" if dev.xdp is not None else ""
        rows.append(
            DeviceRow(
                name=dev.name,
                kind=kind,
                up=dev.up,
                carrier=dev.carrier,
                master=dev.master,
                xdp=xdp,
                xdp_inherited_from=dev.xdp.inherited_from if dev.xdp is not None else None,
                totals=totals,
                rates=rates,
            )
        )
    return DevicesView(
        headings=tuple(heading for heading, _ in DEVICE_COUNTERS), rows=tuple(rows), focus=focus
    )


def _rings(frame: Frame, focus: str | None) -> RingsView:
    rows: list[GaugeRow] = []
    shown: set[str] = set()
    for dev in frame.devices:
        if focus is not None and dev.name != focus and dev.master != focus:
            continue
        shown.add(dev.name)
        if dev.type == "tun":
            rows += _tap_rings(dev)
            continue
        for q in dev.queues:
            rows.append(
                GaugeRow(
                    device=dev.name,
                    kind="tap" if dev.type == "tun" else "rx",
                    label=f"{dev.name} q{q.queue} cpu{q.cpu}",
                    size=q.ring_size,
                    occupancy=q.occupancy,
                    peak=q.peak,
                    dropped=q.rx_dropped,
                    sent=None,
                    locked=False,
                )
            )
        for ring in dev.xdp_tx_rings:
            rows.append(
                GaugeRow(
                    device=dev.name,
                    kind="tx",
                    label=f"{dev.name} tx{ring.ring} cpu{format_cpus(ring.cpus)}"
                    + (f" rxq{format_cpus(ring.rx_queues)}" if ring.rx_queues else ""),
                    size=ring.size,
                    occupancy=ring.occupancy,
                    peak=None,
                    dropped=ring.dropped,
                    sent=ring.sent,
                    locked=ring.locked,
                )
            )
    for bq in frame.bulk_queues:
        if focus is not None and bq.from_dev not in shown and bq.to_dev not in shown:
            continue
        egress = f" ⇢{bq.program}" if bq.program else ""
        rows.append(
            GaugeRow(
                device=bq.from_dev,
                kind="bq",
                label=f"bq cpu{bq.cpu} {bq.from_dev}→{bq.to_dev}{egress}",
                size=DEV_MAP_BULK_SIZE,
                occupancy=min(DEV_MAP_BULK_SIZE, round(bq.last_bulk)),
                peak=None,
                dropped=0,
                sent=bq.frames,
                locked=False,
                target=bq.to_dev,
                average=bq.last_bulk,
            )
        )
    return RingsView(rows=tuple(rows), focus=focus)


def _tap_rings(dev: DeviceView) -> list[GaugeRow]:
    """A tap's rings toward userspace (``xdp_tx_rings`` of a tap: ring = queue), each with its
    share of the reader's rate; a tap's write side has no descriptor ring to draw."""
    reader = dev.tap.reader_pps if dev.tap is not None else None
    per_q = reader / max(1, len(dev.xdp_tx_rings)) if reader is not None else None
    rate = format_pps(per_q) if per_q is not None else "none"
    return [
        GaugeRow(
            device=dev.name,
            kind="tap",
            label=f"{dev.name} tap q{ring.ring}→user {rate}",
            size=ring.size,
            occupancy=ring.occupancy,
            peak=None,
            dropped=ring.dropped,
            sent=ring.sent,
            locked=False,
        )
        for ring in dev.xdp_tx_rings
    ]


def _cpus(frame: Frame) -> CpuMapView:
    bulk: dict[int, list[str]] = {}
    for bq in frame.bulk_queues:
        bulk.setdefault(bq.cpu, []).append(f"bq→{bq.to_dev}")
    rows = tuple(
        CpuRow(
            cpu=cpu.cpu,
            busy=min(max(cpu.busy, 0.0), 1.0),
            rx_queues=tuple(f"{dev}:q{queue}" for dev, queue in cpu.rx_queues),
            xdp_tx_rings=tuple(
                (f"{dev}:tx{ring}", locked) for dev, ring, locked in cpu.xdp_tx_rings
            ),
            # bq_enqueue uses this_cpu_ptr(dev->xdp_bulkq): one bulk queue per CPU and target.
            bulk_queues=tuple(dict.fromkeys(bulk.get(cpu.cpu, ()))),
        )
        for cpu in frame.cpus
    )
    return CpuMapView(rows=rows)


def _drops(prev: Frame | None, frame: Frame, dt: int) -> DropsView:
    ring_full: list[RingDropRow] = []
    for dev in frame.devices:
        before = _prev_device(prev, dev.name)
        prev_q = {q.queue: q.rx_dropped for q in before.queues} if before is not None else {}
        for q in dev.queues:
            if q.rx_dropped:
                ring_full.append(
                    RingDropRow(
                        device=dev.name,
                        queue=q.queue,
                        cpu=q.cpu,
                        dropped=q.rx_dropped,
                        per_s=rate(prev_q.get(q.queue), q.rx_dropped, dt),
                        explanation=explain.ring_full(dev.name, q.queue, q.cpu),
                    )
                )

    tp = frame.tracepoints
    old = prev.tracepoints if prev is not None else None
    old_exc = {(e.dev, e.action): e.count for e in old.xdp_exception} if old else {}
    old_err = {(e.dev, e.err): e.count for e in old.xdp_redirect_err} if old else {}
    old_dmx = (
        {(d.from_dev, d.to_dev): (d.sent, d.drops, d.err) for d in old.xdp_devmap_xmit}
        if old
        else {}
    )
    peers = {dev.name: dev.veth.peer for dev in frame.devices if dev.veth is not None}
    exceptions = tuple(
        CountRow(
            e.dev,
            e.action,
            e.count,
            rate(old_exc.get((e.dev, e.action)), e.count, dt),
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
            rate(old_err.get((e.dev, e.err)), e.count, dt),
            explain.redirect_err(e.err),
        )
        for e in tp.xdp_redirect_err
        if e.count
    )
    old_bulk = {(b.dev, b.err): b.drops for b in old.xdp_bulk_tx} if old else {}
    bulk_tx = tuple(
        CountRow(
            b.dev,
            b.err or "ring full",
            b.drops,
            rate(old_bulk.get((b.dev, b.err)), b.drops, dt),
            explain.bulk_tx(b.err, b.dev, peers.get(b.dev)),
        )
        for b in tp.xdp_bulk_tx
        if b.drops
    )
    devmap: list[DevmapRow] = []
    for d in tp.xdp_devmap_xmit:
        was = old_dmx.get((d.from_dev, d.to_dev))
        bulk = (d.sent + d.drops) / d.flushes if d.flushes else None
        devmap.append(
            DevmapRow(
                from_dev=d.from_dev,
                to_dev=d.to_dev,
                sent=d.sent,
                drops=d.drops,
                err=d.err,
                flushes=d.flushes,
                bulk_avg=bulk,
                sent_per_s=rate(was[0] if was else None, d.sent, dt),
                drops_per_s=rate(was[1] if was else None, d.drops, dt),
                err_per_s=rate(was[2] if was else None, d.err, dt),
                explanation=explain.devmap_xmit(
                    d.from_dev,
                    d.to_dev,
                    d.drops,
                    d.err,
                    bulk,
                    d.egress_drops,
                    next(
                        (
                            b.program
                            for b in frame.bulk_queues
                            if b.from_dev == d.from_dev and b.to_dev == d.to_dev and b.program
                        ),
                        None,
                    ),
                ),
            )
        )
    return DropsView(
        ring_full=tuple(ring_full),
        xdp_exception=exceptions,
        xdp_redirect_err=redirect_errors,
        devmap_xmit=tuple(devmap),
        xdp_bulk_tx=bulk_tx,
        summary=_summary(prev, frame, dt),
    )


def _err_drop_total(frame: Frame) -> int:
    tp = frame.tracepoints
    ring = sum(q.rx_dropped for dev in frame.devices for q in dev.queues)
    return (
        ring
        + sum(e.count for e in tp.xdp_exception)
        + sum(e.count for e in tp.xdp_redirect_err)
        + sum(d.drops for d in tp.xdp_devmap_xmit)
        + sum(b.drops for b in tp.xdp_bulk_tx)
    )


def _summary(prev: Frame | None, frame: Frame, dt: int) -> DropsSummary:
    """xdp-monitor's ``Summary`` line: ``xdp:xdp_redirect`` hits, every error and drop the
    panel lists, and frames ``bq_xmit_all`` sent (``xdp:xdp_devmap_xmit``), per second."""
    tp = frame.tracepoints
    old = prev.tracepoints if prev is not None else None
    xmit = sum(d.sent for d in tp.xdp_devmap_xmit)
    return DropsSummary(
        redirect_per_s=rate(old.xdp_redirect if old else None, tp.xdp_redirect, dt),
        err_drop_per_s=rate(
            _err_drop_total(prev) if prev is not None else None, _err_drop_total(frame), dt
        ),
        xmit_per_s=rate(
            sum(d.sent for d in old.xdp_devmap_xmit) if old is not None else None, xmit, dt
        ),
    )
