"""Rate history for the sparklines: per device RX, TX and drops, plus all drops on the host.

``push_history`` appends one sample per new frame (the counter deltas since the previous frame
over the simulated time between them) and keeps the newest ``capacity`` samples; the history is
an immutable value, so the app replaces it each frame and tests build one by hand. A device's
drops are the losses the kernel counts on it: ``rx_dropped`` (RX ring full), ``xdp_aborted``,
``xdp_tx_errors``, ``xdp_xmit_errors`` (its ``ndo_xdp_xmit`` refused frames) and ``tx_dropped``;
the host's add the redirects ``xdp:xdp_redirect_err`` refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import DeviceView, Frame

NS_PER_S = 1_000_000_000
CAPACITY = 120
LOSS_COUNTERS: tuple[str, ...] = (
    "rx_dropped",
    "xdp_aborted",
    "xdp_tx_errors",
    "xdp_xmit_errors",
    "tx_dropped",
)


@dataclass(frozen=True)
class Series:
    """One device's samples, oldest first (frames per second)."""

    name: str
    rx: tuple[float, ...] = ()
    tx: tuple[float, ...] = ()
    drops: tuple[float, ...] = ()


@dataclass(frozen=True)
class RateHistory:
    series: tuple[Series, ...] = ()
    all_drops: tuple[float, ...] = ()
    t_ns: int = -1  # the frame the newest sample ends at


def device_losses(dev: DeviceView) -> int:
    values = dict(dev.counters)
    return sum(values.get(name, 0) for name in LOSS_COUNTERS)


def host_losses(frame: Frame) -> int:
    redirect_errors = sum(e.count for e in frame.tracepoints.xdp_redirect_err)
    return sum(device_losses(dev) for dev in frame.devices) + redirect_errors


def _per_s(before: int, now: int, dt: int) -> float:
    return max(now - before, 0) * NS_PER_S / dt


def _keep(values: tuple[float, ...], value: float, capacity: int) -> tuple[float, ...]:
    out = (*values, value)
    return out[-capacity:] if len(out) > capacity else out


def push_history(
    history: RateHistory, prev: Frame | None, frame: Frame, capacity: int = CAPACITY
) -> RateHistory:
    """``history`` with one more sample: ``frame`` against ``prev``.

    Without a previous frame, or when simulated time did not move, nothing is added (a rate
    needs an interval). A device that appears later starts with an empty series.
    """
    if prev is None or frame.t_ns <= prev.t_ns or frame.t_ns == history.t_ns:
        return history
    dt = frame.t_ns - prev.t_ns
    old = {s.name: s for s in history.series}
    before = {dev.name: dev for dev in prev.devices}
    series: list[Series] = []
    for dev in frame.devices:
        last = old.get(dev.name, Series(dev.name))
        was = before.get(dev.name)
        if was is None:
            series.append(last)
            continue
        now_c, was_c = dict(dev.counters), dict(was.counters)
        rx = _per_s(was_c.get("rx_packets", 0), now_c.get("rx_packets", 0), dt)
        tx = _per_s(was_c.get("tx_packets", 0), now_c.get("tx_packets", 0), dt)
        drops = _per_s(device_losses(was), device_losses(dev), dt)
        series.append(
            Series(
                dev.name,
                _keep(last.rx, rx, capacity),
                _keep(last.tx, tx, capacity),
                _keep(last.drops, drops, capacity),
            )
        )
    all_drops = _per_s(host_losses(prev), host_losses(frame), dt)
    return RateHistory(tuple(series), _keep(history.all_drops, all_drops, capacity), frame.t_ns)


@dataclass(frozen=True)
class SparkRow:
    """One line of the sparklines panel: a device's three series or the host's drops."""

    name: str
    rx: tuple[float, ...]
    tx: tuple[float, ...]
    drops: tuple[float, ...]
    focused: bool = False


@dataclass(frozen=True)
class SparklinesView:
    rows: tuple[SparkRow, ...]
    all_drops: tuple[float, ...] = ()


def project_sparklines(
    history: RateHistory, frame: Frame, *, focus: str | None = None
) -> SparklinesView:
    """One row per device of ``frame`` (empty until samples arrive); the focused one marked."""
    series = {s.name: s for s in history.series}
    rows = []
    for dev in frame.devices:
        s = series.get(dev.name, Series(dev.name))
        rows.append(SparkRow(dev.name, s.rx, s.tx, s.drops, focused=dev.name == focus))
    return SparklinesView(rows=tuple(rows), all_drops=history.all_drops)
