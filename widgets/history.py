"""Rate history for the sparklines: per device RX, TX and drops, plus all drops on the host.

``push_history`` appends a sample at most every half window of simulated time (the rates of
the frame over their window, from :class:`~widgets.rates.RatesView`) and keeps the newest
``capacity`` samples; the history is
an immutable value, so the app replaces it each frame and tests build one by hand. A device's
drops are every frame dropped on it: its program's ``XDP_DROP`` and ``XDP_ABORTED`` and the losses
the kernel counts on it, ``rx_dropped`` (RX ring full), ``rx_missed_errors`` (the NIC's own
limit), ``xdp_tx_errors``, ``xdp_xmit_errors`` (its ``ndo_xdp_xmit`` refused frames) and
``tx_dropped`` (a tun/tap's ``rx_dropped`` is left out: ``tun_xdp_act`` counts its program's drops
and failed transmits there, which are already the verdicts and errors; so are a veth's
``xdp_tx_errors`` and ``xdp_xmit_errors``: ``veth_get_stats64`` counts both in its
``tx_dropped``); the host's add the redirects ``xdp:xdp_redirect_err`` refused and the frames
devmap egress programs dropped, and leave out a veth's ``rx_dropped`` (``veth_get_stats64``:
what was refused into its ring, or its peer's XDP_TX refused, which is already the peer's
``tx_dropped``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import DeviceView, Frame
from xdptui.widgets.rates import RatesView, sum_rates

CAPACITY = 120
DROP_COUNTERS: tuple[str, ...] = (
    "xdp_drop",
    "rx_dropped",
    "rx_missed_errors",
    "xdp_aborted",
    "xdp_tx_errors",
    "xdp_xmit_errors",
    "tx_dropped",
)


def drop_counters(dev: DeviceView) -> tuple[str, ...]:
    """The counters whose sum is every frame dropped on ``dev`` (see the module's doc)."""
    if dev.type == "tun":
        return tuple(c for c in DROP_COUNTERS if c != "rx_dropped")
    if dev.type == "veth":
        return tuple(c for c in DROP_COUNTERS if c not in ("xdp_tx_errors", "xdp_xmit_errors"))
    return DROP_COUNTERS


def host_counters(dev: DeviceView) -> tuple[str, ...]:
    """``drop_counters`` as the host's total counts them: each frame once (see the module's
    doc)."""
    if dev.type == "veth":
        return tuple(c for c in drop_counters(dev) if c != "rx_dropped")
    return drop_counters(dev)


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


Counts = tuple[int, int, int]
"""RX, TX and drops as frame counts."""


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
    totals: Counts = (0, 0, 0)
    steps: Counts | None = None  # what the last step added (None: no frame before)


@dataclass(frozen=True)
class SparklinesView:
    rows: tuple[SparkRow, ...]
    all_drops: tuple[float, ...] = ()
    all_drops_now: float | None = None
    counting: bool = False  # stepping: totals and this step's frames instead of the lines
    all_drops_total: int = 0
    all_drops_step: int | None = None


def device_rates(
    rates: RatesView, frame: Frame, name: str
) -> tuple[float | None, float | None, float | None]:
    """A device's RX, TX and drop rates over the window (None: no window yet)."""
    dev = frame.device(name)
    now = dict(dev.counters)
    rx = rates.counter(name, "rx_packets", now.get("rx_packets", 0))
    tx = rates.counter(name, "tx_packets", now.get("tx_packets", 0))
    drops = sum_rates(rates.counter(name, c, now.get(c, 0)) for c in drop_counters(dev))
    return rx, tx, drops


def device_counts(rates: RatesView, dev: DeviceView) -> tuple[Counts, Counts | None]:
    """A device's RX, TX and drops so far, and what the last step added to each."""
    now = dict(dev.counters)
    names = (("rx_packets",), ("tx_packets",), drop_counters(dev))
    totals = tuple(sum(now.get(c, 0) for c in group) for group in names)
    steps = [[rates.step(dev.name, c, now.get(c, 0)) for c in group] for group in names]
    step = None if rates.last is None else tuple(sum(n or 0 for n in g) for g in steps)
    return (totals[0], totals[1], totals[2]), (
        None if step is None else (step[0], step[1], step[2])
    )


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
        for c in host_counters(dev)
    )
    cpumap = sum_rates(rates.tracepoint(k, n) for k, n in _cpumap_losses(frame))
    return sum_rates((redirect_errors, egress, device_drops, cpumap))


def _cpumap_losses(frame: Frame) -> list[tuple[tuple[object, ...], int]]:
    """A cpumap's losses: frames that found an entry's ptr_ring full, and those an entry's
    program dropped on its kthread."""
    tp = frame.tracepoints
    out: list[tuple[tuple[object, ...], int]] = [
        (("cpumap", q.map, q.cpu, q.to_cpu, "drops"), q.drops) for q in tp.xdp_cpumap_enqueue
    ]
    out += [(("kthread", k.map, k.cpu, "xdp_drop"), k.xdp_drop) for k in tp.xdp_cpumap_kthread]
    return out


def host_drop_counts(rates: RatesView, frame: Frame) -> tuple[int, int | None]:
    """:func:`host_drops` as a count so far, and what the last step added."""
    tp = frame.tracepoints
    keys: list[tuple[tuple[object, ...], int]] = [
        (("redirect_err", e.dev, e.err), e.count) for e in tp.xdp_redirect_err
    ]
    keys += [
        (("devmap", d.from_dev, d.to_dev, "egress_drops"), d.egress_drops)
        for d in tp.xdp_devmap_xmit
    ]
    keys += _cpumap_losses(frame)
    total = sum(n for _, n in keys)
    step = sum(rates.step_tracepoint(k, n) or 0 for k, n in keys)
    for dev in frame.devices:
        now = dict(dev.counters)
        for c in host_counters(dev):
            total += now.get(c, 0)
            step += rates.step(dev.name, c, now.get(c, 0)) or 0
    return total, None if rates.last is None else step


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
    rates = rates if rates is not None else RatesView(None, frame)
    rows = []
    for dev in frame.devices:
        s = series.get(dev.name, Series(dev.name))
        now = device_rates(rates, frame, dev.name)
        totals, steps = device_counts(rates, dev)
        rows.append(
            SparkRow(
                dev.name,
                s.rx,
                s.tx,
                s.drops,
                focused=dev.name == focus,
                now=now,
                totals=totals,
                steps=steps,
            )
        )
    drops_total, drops_step = host_drop_counts(rates, frame)
    return SparklinesView(
        rows=tuple(rows),
        all_drops=history.all_drops,
        all_drops_now=host_drops(rates, frame),
        counting=rates.counting,
        all_drops_total=drops_total,
        all_drops_step=drops_step,
    )
