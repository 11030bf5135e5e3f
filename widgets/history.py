"""Rate history for the sparklines: per device RX, TX and drops, plus all drops on the host.

``push_history`` appends a sample at most every half window of simulated time (the rates of
the frame over their window, from :class:`~widgets.rates.RatesView`) and keeps the newest
``capacity`` samples; the history is
an immutable value, so the app replaces it each frame and tests build one by hand. A device's
drops are the losses the kernel counts on it: ``rx_dropped`` (RX ring full),
``rx_missed_errors`` (the NIC's own limit), ``xdp_aborted``,
``xdp_tx_errors``, ``xdp_xmit_errors`` (its ``ndo_xdp_xmit`` refused frames) and ``tx_dropped``;
the host's add the redirects ``xdp:xdp_redirect_err`` refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import Frame
from xdptui.widgets.rates import RatesView, sum_rates

CAPACITY = 120
LOSS_COUNTERS: tuple[str, ...] = (
    "rx_dropped",
    "rx_missed_errors",
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


def _keep(values: tuple[float, ...], value: float, capacity: int) -> tuple[float, ...]:
    out = (*values, value)
    return out[-capacity:] if len(out) > capacity else out


def push_history(
    history: RateHistory,
    rates: RatesView,
    frame: Frame,
    min_gap_ns: int = 0,
    capacity: int = CAPACITY,
) -> RateHistory:
    """``history`` with one more sample: the rates of ``frame`` over their window, if
    ``frame`` is at least ``min_gap_ns`` of simulated time past the newest sample.

    Without a window (no earlier frame, or simulated time did not move), nothing is added. A
    device that appears later starts with an empty series.
    """
    if rates.base is None or rates.window_ns <= 0 or frame.t_ns <= history.t_ns:
        return history
    if history.t_ns >= 0 and frame.t_ns - history.t_ns < min_gap_ns:
        return history
    old = {s.name: s for s in history.series}
    series: list[Series] = []
    for dev in frame.devices:
        last = old.get(dev.name, Series(dev.name))
        rx, tx, drops = device_rates(rates, frame, dev.name)
        if rx is None or tx is None or drops is None:
            series.append(last)
            continue
        series.append(
            Series(
                dev.name,
                _keep(last.rx, rx, capacity),
                _keep(last.tx, tx, capacity),
                _keep(last.drops, drops, capacity),
            )
        )
    all_drops = host_drops(rates, frame) or 0.0
    return RateHistory(tuple(series), _keep(history.all_drops, all_drops, capacity), frame.t_ns)


@dataclass(frozen=True)
class SparkRow:
    """One line of the sparklines panel: a device's three series or the host's drops."""

    name: str
    rx: tuple[float, ...]
    tx: tuple[float, ...]
    drops: tuple[float, ...]
    focused: bool = False
    now: tuple[float | None, float | None, float | None] = (None, None, None)
    """RX, TX and drops over the window now (``-`` before there is one)."""


@dataclass(frozen=True)
class SparklinesView:
    rows: tuple[SparkRow, ...]
    all_drops: tuple[float, ...] = ()
    all_drops_now: float | None = None


def device_rates(
    rates: RatesView, frame: Frame, name: str
) -> tuple[float | None, float | None, float | None]:
    """A device's RX, TX and drop rates over the window (None: no window yet)."""
    now = dict(frame.device(name).counters)
    rx = rates.counter(name, "rx_packets", now.get("rx_packets", 0))
    tx = rates.counter(name, "tx_packets", now.get("tx_packets", 0))
    drops = sum_rates(rates.counter(name, c, now.get(c, 0)) for c in LOSS_COUNTERS)
    return rx, tx, drops


def host_drops(rates: RatesView, frame: Frame) -> float | None:
    """Every loss on the host over the window: the devices' own, the redirects
    ``xdp_redirect_err`` refused, and the frames devmap egress programs dropped at flush (a
    refusal by ``ndo_xdp_xmit`` is already the target's ``xdp_xmit_errors``)."""
    tp = frame.tracepoints
    redirect_errors = sum_rates(
        rates.tracepoint(("redirect_err", e.dev, e.err), e.count) for e in tp.xdp_redirect_err
    )
    egress = sum_rates(
        rates.devmap(d.from_dev, d.to_dev, "egress_drops", d.egress_drops)
        for d in tp.xdp_devmap_xmit
    )
    device_drops = sum_rates(
        rates.counter(dev.name, c, dict(dev.counters).get(c, 0))
        for dev in frame.devices
        for c in LOSS_COUNTERS
    )
    return sum_rates((redirect_errors, egress, device_drops))


def project_sparklines(
    history: RateHistory,
    frame: Frame,
    *,
    focus: str | None = None,
    rates: RatesView | None = None,
) -> SparklinesView:
    """One row per device of ``frame`` (empty until samples arrive); the focused one marked.
    The numbers are ``rates`` now (what every other tab shows); the lines, the history."""
    series = {s.name: s for s in history.series}
    rows = []
    for dev in frame.devices:
        s = series.get(dev.name, Series(dev.name))
        now = device_rates(rates, frame, dev.name) if rates is not None else (None,) * 3
        rows.append(SparkRow(dev.name, s.rx, s.tx, s.drops, focused=dev.name == focus, now=now))
    total = host_drops(rates, frame) if rates is not None else None
    return SparklinesView(rows=tuple(rows), all_drops=history.all_drops, all_drops_now=total)
