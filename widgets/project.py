"""From simulator frames to the small frozen views the panels draw.

``project(prev, frame, focus=...)`` is the only place where anything is derived: rates come from
one :class:`~widgets.rates.RatesView` (counter deltas over a window of simulated time, ``prev``
being the window's base) that every panel reads, the rings panel is filtered to the focused
device, CPU lists are formatted. It is pure (no Textual, no engine), so it is tested
with plain asserts, and its views compare by value: a panel whose view did not change skips its
repaint. Views hold ints, floats, strings and tuples only, never NumPy arrays (Textual compares
reactive values with ``!=``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from xdptui.model.topology import Lesson
from xdptui.model.views import CpuView, DeviceView, EventView, Frame, StreamEventView
from xdptui.widgets.crosswalk import CountersView, project_counters
from xdptui.widgets.event_list import EventListView
from xdptui.widgets.format import format_cpus, format_pps, program_name
from xdptui.widgets.history import RateHistory, SparklinesView, project_sparklines
from xdptui.widgets.project_bond import BondView, PlanRow, project_bond
from xdptui.widgets.project_drops import DropsView, counter_of, project_drops
from xdptui.widgets.project_lesson import LessonView, Outcome, project_lesson
from xdptui.widgets.project_paths import FollowView, PathsView, project_paths
from xdptui.widgets.project_taps import TapsView, project_taps
from xdptui.widgets.rates import RatesView
from xdptui.widgets.rates import rate as rate  # re-exported: tests compute rates with it
from xdptui.widgets.zoom import ZoomPanelView

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
    exact: bool = False  # the engine runs exact mode: what is shown is the kernel's state now
    window_ns: int = 0  # the rates' window of simulated time (0: no rates yet)


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
    kind: str  # "rx" | "backlog" (a veth's) | "tx" | "tap" | "bq" | "ptr_ring" (a cpumap
    # entry's) | "xsk_fill" | "xsk_rx" | "xsk_tx" | "xsk_comp"
    label: str  # "eth0 q3 cpu3" / "eth0 tx3 cpu3,19" / "bq eth0→eth1"
    size: int
    occupancy: int
    peak: int | None  # RX rings only
    dropped: int
    sent: int | None  # XDP TX rings and bulk queues
    locked: bool  # XDP TX ring shared by several CPUs (takes tx_lock)
    target: str | None = None  # bulk queues: the device they flush into
    average: float | None = None  # bulk queues: frames per flush
    marked: bool = False  # what the selected event concerns
    cpu: int | None = None  # bulk queues: whose (RX: the queue's IRQ CPU)
    queue: int | None = None  # RX rings: the queue; TX and tap rings: the ring
    cpus: tuple[int, ...] = ()  # XDP TX rings: the CPUs that use it
    program: str | None = None  # bulk queues: the egress program of the last bulk
    rate: float | None = None  # bulk queues: frames enqueued per second (the rates' window)
    drop_rate: float | None = None  # bulk queues: the egress program's drops per second
    processing: int = 0  # a veth's backlog: what process_backlog moved to process_queue


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
    marked: bool = False  # the CPU of the selected event
    lock: float | None = None  # share of its time in shared rings' tx_lock (None: no lock)


@dataclass(frozen=True)
class CpuMapView:
    rows: tuple[CpuRow, ...]


@dataclass(frozen=True)
class Highlight:
    """What the event selected in the event list concerns: marked (▶) in the other panels."""

    dev: str | None = None
    queue: int | None = None
    cpu: int | None = None
    target: str | None = None  # a flush's (or a poll's bulk queue's) target


def _marked_devices(mark: Highlight | None) -> frozenset[str]:
    if mark is None:
        return frozenset()
    return frozenset(name for name in (mark.dev, mark.target) if name)


def highlight_of(event: StreamEventView | None) -> Highlight | None:
    """The device, queue, CPU and bulk-queue target of a stream event."""
    if event is None:
        return None
    target = event.target or (event.bulks[0][0] if event.bulks else None)
    return Highlight(event.dev, event.queue, event.cpu, target)


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
    highlight: Highlight | None = None
    zoom: str = ""  # the queue zoomed on, in words ("" none)


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

    def __init__(
        self,
        prev: Frame | None,
        frame: Frame,
        state: PanelState | None = None,
        last: Frame | None = None,
    ) -> None:
        state = state or PanelState()
        if state.focus is not None and all(dev.name != state.focus for dev in frame.devices):
            state = replace(state, focus=None)
        self.prev = prev
        self.frame = frame
        self.state = state
        if last is not None and last.t_ns > frame.t_ns:
            last = None  # time went back: no "since the frame before"
        self.rates = RatesView(prev, frame, last)
        """The one source of every rate (and, stepping, every count) the panels show."""

    @cached_property
    def devices(self) -> DevicesView:
        return _devices(self.rates, self.frame, self.state.focus)

    @cached_property
    def rings(self) -> RingsView:
        return _rings(self.frame, self.state.focus, self.state.highlight, self.rates)

    @cached_property
    def cpus(self) -> CpuMapView:
        return _cpus(self.frame, self.state.highlight, self.rates)

    @cached_property
    def event_list(self) -> EventListView:
        return EventListView(self.frame.stream, self.frame.exact)

    @cached_property
    def zoom(self) -> ZoomPanelView:
        z = self.frame.zoom
        xsk = None
        if z is not None and z.ref.kind == "xsk":
            xsk = next((x for x in self.frame.xsks if x.name == z.ref.dev), None)
        return ZoomPanelView(z, self.state.zoom, xsk)

    @cached_property
    def drops(self) -> DropsView:
        return project_drops(self.rates, self.frame)

    @property
    def events(self) -> tuple[EventView, ...]:
        return self.frame.events

    @cached_property
    def paths(self) -> PathsView:
        return project_paths(
            self.prev,
            self.frame,
            focus=self.state.focus,
            follow=self.state.follow,
            rates=self.rates,
            marked=_marked_devices(self.state.highlight),
        )

    @cached_property
    def sparklines(self) -> SparklinesView:
        return project_sparklines(
            self.state.history, self.frame, focus=self.state.focus, rates=self.rates
        )

    @cached_property
    def counters(self) -> CountersView:
        return project_counters(self.prev, self.frame, focus=self.state.focus, rates=self.rates)

    @cached_property
    def bond(self) -> BondView:
        return project_bond(
            self.prev,
            self.frame,
            focus=self.state.focus,
            plan_title=self.state.plan_title,
            plan=self.state.plan,
            rates=self.rates,
        )

    @cached_property
    def taps(self) -> TapsView:
        return project_taps(self.prev, self.frame, focus=self.state.focus, rates=self.rates)

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
    frame: Frame, *, speed_ns_per_s: int, paused: bool, rtf: float | None, window_ns: int = 0
) -> HeaderView:
    """The header for ``frame`` under the app's clock state (speed, pause, lag, the rates'
    window)."""
    return HeaderView(
        name=frame.name,
        t_ns=frame.t_ns,
        speed_ns_per_s=speed_ns_per_s,
        paused=paused,
        rtf=None if paused else rtf,
        seed=frame.seed,
        exact=frame.exact,
        window_ns=window_ns,
    )


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


def _devices(rates_view: RatesView, frame: Frame, focus: str | None) -> DevicesView:
    rows: list[DeviceRow] = []
    for dev in frame.devices:
        totals = tuple(counter_of(dev, key) or 0 for _, key in DEVICE_COUNTERS)
        rates = tuple(
            rates_view.counter(dev.name, key, total)
            for (_, key), total in zip(DEVICE_COUNTERS, totals, strict=True)
        )
        kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
        xdp = f"{program_name(dev.xdp.program)} {dev.xdp.mode}" if dev.xdp is not None else ""
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


def _marked(row: GaugeRow, mark: Highlight | None) -> GaugeRow:
    """``row`` marked if it is the ring or bulk queue the selected event concerns."""
    if mark is None:
        return row
    if row.kind == "bq":
        hit = row.cpu == mark.cpu and row.device == mark.dev and row.target == mark.target
    elif row.kind in ("rx", "backlog"):
        hit = row.device == mark.dev and row.queue == mark.queue
    else:
        # A flush (no queue) sends through the target's ndo_xdp_xmit, into the target's XDP
        # TX ring of that CPU; a poll's XDP_TX goes to the polled device's own.
        dev = mark.target if mark.queue is None and mark.target else mark.dev
        hit = row.device == dev and mark.cpu is not None and mark.cpu in row.cpus
    return replace(row, marked=hit) if hit else row


def _rings(
    frame: Frame, focus: str | None, mark: Highlight | None = None, rates: RatesView | None = None
) -> RingsView:
    view = _ring_rows(frame, focus)
    rows = [_marked(row, mark) for row in view.rows]
    if rates is not None:
        rows = [_bq_rates(row, rates) if row.kind == "bq" else row for row in rows]
    return replace(view, rows=tuple(rows))


def _bq_rates(row: GaugeRow, rates: RatesView) -> GaugeRow:
    key = (row.cpu, row.device, row.target)
    return replace(
        row,
        rate=rates.tracepoint(("bq", *key), row.sent or 0),
        drop_rate=rates.tracepoint(("bq_egress", *key), row.dropped),
    )


def _ring_rows(frame: Frame, focus: str | None) -> RingsView:
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
                    kind="backlog" if q.backlog else "rx",
                    label=f"{dev.name} q{q.queue} cpu{q.cpu}",
                    size=q.ring_size,
                    occupancy=q.occupancy - q.process_queue,  # (a backlog: its input queue)
                    processing=q.process_queue,
                    peak=q.peak,
                    dropped=q.rx_dropped,
                    sent=None,
                    locked=False,
                    cpu=q.cpu,
                    queue=q.queue,
                )
            )
        for ring in dev.xdp_tx_rings:
            rows.append(
                GaugeRow(
                    device=dev.name,
                    kind="tx",
                    label=f"{dev.name} tx{ring.ring}"
                    + (f" cpu{format_cpus(ring.cpus)}" if ring.cpus else "")
                    + (f" rxq{format_cpus(ring.rx_queues)}" if ring.rx_queues else ""),
                    size=ring.size,
                    occupancy=ring.occupancy,
                    peak=None,
                    dropped=ring.dropped,
                    sent=ring.sent,
                    locked=ring.locked,
                    queue=ring.ring,
                    cpus=ring.cpus,
                )
            )
    for bq in frame.bulk_queues:
        if focus is not None and bq.from_dev not in shown and bq.to_dev not in shown:
            continue
        egress = f" ⇢{program_name(bq.program)}" if bq.program else ""
        rows.append(
            GaugeRow(
                device=bq.from_dev,
                kind="bq",
                label=f"bq cpu{bq.cpu} {bq.from_dev}→{bq.to_dev}{egress}",
                size=DEV_MAP_BULK_SIZE,
                occupancy=min(DEV_MAP_BULK_SIZE, round(bq.last_bulk)),
                peak=None,
                dropped=bq.egress_drops,
                sent=bq.frames,
                locked=False,
                target=bq.to_dev,
                average=bq.last_bulk,
                cpu=bq.cpu,
                program=bq.program,
            )
        )
    rows += _cpumap_rings(frame)
    rows += _xsk_rings(frame, focus)
    return RingsView(rows=tuple(rows), focus=focus)


def _xsk_rings(frame: Frame, focus: str | None) -> list[GaugeRow]:
    """Each AF_XDP socket's fill ring (chunks userspace gave; ``taken`` by the kernel, a miss
    per frame that found it empty) and RX ring (``read`` by userspace; a frame that found it
    full is lost)."""
    rows: list[GaugeRow] = []
    for x in frame.xsks:
        if focus is not None and focus not in (x.dev, x.name):
            continue
        reader = format_pps(x.reader_pps) if x.reader_pps else "none"
        which = [
            ("fill", "fill user→kernel", x.counter("rx_fill_ring_empty_descs")),
            ("rx", f"RX kernel→user {reader}", x.counter("rx_ring_full")),
        ]
        if x.writer is not None:  # its TX side: what the writer could not write, then reaped
            which += [
                ("tx", f"TX user→kernel {x.writer.batch}/sendto", x.writer.not_written),
                ("comp", "comp kernel→user", 0),
            ]
        for name, label, dropped in which:
            ring = x.ring(name)
            rows.append(
                GaugeRow(
                    device=x.name,
                    kind=f"xsk_{name}",
                    label=f"{x.name} {label}",
                    size=ring.size,
                    occupancy=ring.entries,
                    peak=None,
                    dropped=dropped,
                    sent=ring.consumer,
                    locked=False,
                    queue=x.queue,
                )
            )
    return rows


def _cpumap_rings(frame: Frame) -> list[GaugeRow]:
    """Each cpumap entry's ``ptr_ring``: what waits for its CPU's kthread, what the kthread
    took, what found the ring full (``xdp:xdp_cpumap_enqueue`` drops)."""
    kthreads = {(k.map, k.cpu): k for k in frame.tracepoints.xdp_cpumap_kthread}
    rows: list[GaugeRow] = []
    for m in frame.maps:
        if m.type != "cpumap":
            continue
        for e in m.entries:
            k = kthreads.get((m.name, e.key))
            drops = sum(
                q.drops
                for q in frame.tracepoints.xdp_cpumap_enqueue
                if (q.map, q.to_cpu) == (m.name, e.key)
            )
            rows.append(
                GaugeRow(
                    device=m.name,
                    kind="ptr_ring",
                    label=f"{m.name} cpu{e.key} ptr_ring",
                    size=e.qsize,
                    occupancy=k.ring if k is not None else 0,
                    peak=None,
                    dropped=drops,
                    sent=k.processed if k is not None else 0,
                    locked=False,
                    cpu=e.key,
                )
            )
    return rows


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


def lock_shares(frame: Frame, rates: RatesView) -> dict[int, float]:
    """Per CPU, the share of its time spent taking shared XDP TX rings' ``tx_lock`` over the
    window, by the cost model's rule (``sim/core/filter.py`` adds a ring's lock cost to every
    frame an XDP_TX or ``ndo_xdp_xmit`` puts in it): the frames it sent into each locked ring
    per second -- the XDP_TX share of what it polled on that device, and what its bulk queues
    flushed to it -- times that ring's lock cost. Only CPUs that use a locked ring appear."""
    lock_of = {
        (dev.name, r.ring): r.lock_ns
        for dev in frame.devices
        for r in dev.xdp_tx_rings
        if r.lock_ns > 0
    }
    if not lock_of or rates.base is None:
        return {}
    devices = {dev.name: dev for dev in frame.devices}
    tx_share: dict[str, float] = {}
    for name in {name for name, _ in lock_of}:
        counters = dict(devices[name].counters)
        rx = rates.counter(name, "rx_packets", counters.get("rx_packets", 0)) or 0.0
        tx = rates.counter(name, "xdp_tx", counters.get("xdp_tx", 0)) or 0.0
        tx_share[name] = tx / rx if rx > 0 else 0.0
    queues = {(dev.name, q.queue): q for dev in frame.devices for q in dev.queues}
    out: dict[int, float] = {}
    for cpu in frame.cpus:
        ring_of = {dev: ring for dev, ring, locked in cpu.xdp_tx_rings if locked}
        if not any((dev, ring) in lock_of for dev, ring in ring_of.items()):
            continue
        ns = 0.0
        for dev, queue in cpu.rx_queues:
            cost = lock_of.get((dev, ring_of.get(dev, -1)), 0.0)
            q = queues.get((dev, queue))
            if cost and q is not None:
                polled = rates.queue(dev, queue, "rx_packets", q.rx_packets) or 0.0
                ns += polled * tx_share.get(dev, 0.0) * cost
        for bq in frame.bulk_queues:
            cost = lock_of.get((bq.to_dev, ring_of.get(bq.to_dev, -1)), 0.0)
            if bq.cpu == cpu.cpu and cost:
                key = ("bq", bq.cpu, bq.from_dev, bq.to_dev)
                ns += (rates.tracepoint(key, bq.frames) or 0.0) * cost
        out[cpu.cpu] = ns / NS_PER_S
    return out


def _busy(cpu: CpuView, rates: RatesView | None) -> float:
    """The CPU's busy share over the rates' window, as every rate on screen is."""
    share = rates.cpu_busy(cpu.cpu) if rates is not None else None
    return cpu.busy if share is None else share


def _cpus(
    frame: Frame, mark: Highlight | None = None, rates: RatesView | None = None
) -> CpuMapView:
    bulk: dict[int, list[str]] = {}
    for bq in frame.bulk_queues:
        bulk.setdefault(bq.cpu, []).append(f"bq→{bq.to_dev}")
    for q in frame.tracepoints.xdp_cpumap_enqueue:  # cpu_map_enqueue: per CPU and entry
        bulk.setdefault(q.cpu, []).append(f"bq→cpu{q.to_cpu}")
    kthreads: dict[int, list[str]] = {}
    for k in frame.tracepoints.xdp_cpumap_kthread:
        kthreads.setdefault(k.cpu, []).append(f"kthread:{k.map}")
    locks = lock_shares(frame, rates) if rates is not None else {}
    rows = tuple(
        CpuRow(
            cpu=cpu.cpu,
            busy=min(max(_busy(cpu, rates), 0.0), 1.0),
            rx_queues=tuple(f"{dev}:q{queue}" for dev, queue in cpu.rx_queues)
            + tuple(kthreads.get(cpu.cpu, ())),
            xdp_tx_rings=tuple(
                (f"{dev}:tx{ring}", locked) for dev, ring, locked in cpu.xdp_tx_rings
            ),
            # bq_enqueue uses this_cpu_ptr(dev->xdp_bulkq): one bulk queue per CPU and target.
            bulk_queues=tuple(dict.fromkeys(bulk.get(cpu.cpu, ()))),
            marked=mark is not None and mark.cpu == cpu.cpu,
            lock=locks.get(cpu.cpu),
        )
        for cpu in frame.cpus
    )
    return CpuMapView(rows=rows)
