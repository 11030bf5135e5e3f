"""From simulator frames to the small frozen views the panels draw.

``project(prev, frame, focus=...)`` is the only place where anything is derived: rates are counter
deltas between two frames divided by the simulated time between them, the rings panel is filtered
to the focused device, CPU lists are formatted. It is pure (no Textual, no engine), so it is tested
with plain asserts, and its views compare by value: a panel whose view did not change skips its
repaint. Views hold ints, floats, strings and tuples only, never NumPy arrays (Textual compares
reactive values with ``!=``).
"""

from __future__ import annotations

from dataclasses import dataclass

from widgets.format import format_cpus
from xdptui.model.views import DeviceView, EventView, Frame

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
    """One ring drawn as a gauge: an RX descriptor ring or an XDP TX ring."""

    device: str
    kind: str  # "rx" | "tx"
    label: str  # "eth0 q3 cpu3" / "eth0 tx3 cpu3,19"
    size: int
    occupancy: int
    peak: int | None  # RX rings only
    dropped: int
    sent: int | None  # XDP TX rings only
    locked: bool  # XDP TX ring shared by several CPUs (takes tx_lock)


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


@dataclass(frozen=True)
class CountRow:
    """A tracepoint bucket: ``dev`` and its key (an action or an errno name)."""

    dev: str
    key: str
    count: int
    per_s: float | None


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


@dataclass(frozen=True)
class DropsView:
    ring_full: tuple[RingDropRow, ...] = ()
    xdp_exception: tuple[CountRow, ...] = ()
    xdp_redirect_err: tuple[CountRow, ...] = ()
    devmap_xmit: tuple[DevmapRow, ...] = ()


@dataclass(frozen=True)
class DashboardViews:
    devices: DevicesView
    rings: RingsView
    cpus: CpuMapView
    drops: DropsView
    events: tuple[EventView, ...]


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


def project(prev: Frame | None, frame: Frame, *, focus: str | None = None) -> DashboardViews:
    """All panel views for ``frame``; rates against ``prev`` (an earlier frame, or None).

    ``focus`` names a device clicked in the devices table: the rings panel then shows only it
    and its bond slaves. An unknown name is ignored.
    """
    dt = frame.t_ns - prev.t_ns if prev is not None else 0
    if focus is not None and all(dev.name != focus for dev in frame.devices):
        focus = None
    return DashboardViews(
        devices=_devices(prev, frame, dt, focus),
        rings=_rings(frame, focus),
        cpus=_cpus(frame),
        drops=_drops(prev, frame, dt),
        events=frame.events,
    )


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
    for dev in frame.devices:
        if focus is not None and dev.name != focus and dev.master != focus:
            continue
        for q in dev.queues:
            rows.append(
                GaugeRow(
                    device=dev.name,
                    kind="rx",
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
                    label=f"{dev.name} tx{ring.ring} cpu{format_cpus(ring.cpus)}",
                    size=ring.size,
                    occupancy=ring.occupancy,
                    peak=None,
                    dropped=ring.dropped,
                    sent=ring.sent,
                    locked=ring.locked,
                )
            )
    return RingsView(rows=tuple(rows), focus=focus)


def _cpus(frame: Frame) -> CpuMapView:
    rows = tuple(
        CpuRow(
            cpu=cpu.cpu,
            busy=min(max(cpu.busy, 0.0), 1.0),
            rx_queues=tuple(f"{dev}:q{queue}" for dev, queue in cpu.rx_queues),
            xdp_tx_rings=tuple(
                (f"{dev}:tx{ring}", locked) for dev, ring, locked in cpu.xdp_tx_rings
            ),
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
                    )
                )

    tp = frame.tracepoints
    old = prev.tracepoints if prev is not None else None
    old_exc = {(e.dev, e.action): e.count for e in old.xdp_exception} if old else {}
    old_err = {(e.dev, e.err): e.count for e in old.xdp_redirect_err} if old else {}
    old_dmx = {(d.from_dev, d.to_dev): d.sent for d in old.xdp_devmap_xmit} if old else {}
    return DropsView(
        ring_full=tuple(ring_full),
        xdp_exception=tuple(
            CountRow(e.dev, e.action, e.count, rate(old_exc.get((e.dev, e.action)), e.count, dt))
            for e in tp.xdp_exception
            if e.count
        ),
        xdp_redirect_err=tuple(
            CountRow(e.dev, e.err, e.count, rate(old_err.get((e.dev, e.err)), e.count, dt))
            for e in tp.xdp_redirect_err
            if e.count
        ),
        devmap_xmit=tuple(
            DevmapRow(
                from_dev=d.from_dev,
                to_dev=d.to_dev,
                sent=d.sent,
                drops=d.drops,
                err=d.err,
                flushes=d.flushes,
                bulk_avg=(d.sent + d.drops) / d.flushes if d.flushes else None,
                sent_per_s=rate(old_dmx.get((d.from_dev, d.to_dev)), d.sent, dt),
            )
            for d in tp.xdp_devmap_xmit
        ),
    )
