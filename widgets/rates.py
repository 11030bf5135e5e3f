"""Rates over a window of simulated time: the one view every panel reads its rates from.

A rate on screen is a counter's change over a window of *simulated* time divided by the
window's length, so it reads the same at 1 µs/s and at real time. The app keeps a few frames as
samples (:class:`RateSamples`, at most :data:`SAMPLES_PER_WINDOW` per window); the base of the
window is the newest sample at least a window older than the frame on screen (the oldest one
while the run is younger than a window: a rate over the simulated time elapsed, however short).
:class:`RatesView` holds that pair: every panel asks it, so the same counter shows the same rate
in every tab, and the header shows the window's length. While the engine runs exact mode
(stepping, slow motion) the panels also show counts: each counter's total and what it gained
since the frame before (``last``: one ``.``, one poll). Pure: frames in, numbers out (no
Textual, no engine).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from xdptui.model.views import Frame

NS_PER_S = 1_000_000_000
WINDOW_MIN_NS = 1_000_000
"""The shortest window: 1 ms of simulated time holds about 20 interrupt cycles of a queue
(50 µs ITR), so a rate is not the lumps of single polls."""
SAMPLES_PER_WINDOW = 16


def window_for(speed_ns_per_s: int) -> int:
    """The window at a clock speed: a tenth of a real second of simulated time, at least
    :data:`WINDOW_MIN_NS` (real time: 100 ms; 1 ms/s and slower: 1 ms)."""
    return max(WINDOW_MIN_NS, speed_ns_per_s // 10)


@dataclass(frozen=True, eq=False)
class RateSamples:
    """Frames kept as window bases, oldest first."""

    frames: tuple[Frame, ...] = ()


def push_sample(samples: RateSamples, frame: Frame, window_ns: int) -> RateSamples:
    """``samples`` with ``frame`` added if it is at least a window's sixteenth past the newest;
    samples later than ``frame`` (time went back: a rewind, a restart) are dropped, and so are
    those older than the one a window before ``frame``."""
    kept = [f for f in samples.frames if f.t_ns <= frame.t_ns]
    gap = max(1, window_ns // SAMPLES_PER_WINDOW)
    if not kept or frame.t_ns - kept[-1].t_ns >= gap:
        kept.append(frame)
    cut = frame.t_ns - window_ns
    older = [i for i, f in enumerate(kept) if f.t_ns <= cut]
    if older:
        kept = kept[older[-1] :]
    return RateSamples(tuple(kept))


def window_base(samples: RateSamples, frame: Frame, window_ns: int) -> Frame | None:
    """The sample a window before ``frame``, or the oldest earlier one while the run is
    younger than a window (stepping: the rate over the simulated time so far, with the counts
    beside it); None without an earlier one."""
    earlier = [f for f in samples.frames if f.t_ns < frame.t_ns]
    if not earlier:
        return None
    older = [f for f in earlier if f.t_ns <= frame.t_ns - window_ns]
    return older[-1] if older else earlier[0]


def rate(before: int | None, now: int, dt_ns: int) -> float | None:
    """``(now - before) / dt`` per second; None without a base or a time step. A counter that
    went backwards (a command reset it) reads as 0, not negative."""
    if before is None or dt_ns <= 0:
        return None
    return max(now - before, 0) * NS_PER_S / dt_ns


def sum_rates(rates: Iterable[float | None]) -> float | None:
    """The rate of a sum of counters: the sum of their rates (None if any is unknown)."""
    total = 0.0
    for r in rates:
        if r is None:
            return None
        total += r
    return total


class RatesView:
    """Every rate of one frame, over the window from ``base`` (None: no rates yet); with
    ``last`` (the frame shown before this one), what each counter gained since."""

    def __init__(self, base: Frame | None, frame: Frame, last: Frame | None = None) -> None:
        self.base = base
        self.frame = frame
        self.last = last
        self.window_ns = frame.t_ns - base.t_ns if base is not None else 0

    @property
    def counting(self) -> bool:
        """The panels show counts beside rates: the engine runs exact mode (a person
        watches poll by poll)."""
        return self.frame.exact

    def step(self, dev: str, name: str, now: int) -> int | None:
        """What a device counter gained since the frame before (None: no frame before)."""
        if self.last is None:
            return None
        return max(0, now - self._last_counters.get((dev, name), 0))

    def step_tracepoint(self, key: tuple[object, ...], now: int) -> int | None:
        """What a tally (the keys of :meth:`tracepoint`) gained since the frame before."""
        if self.last is None:
            return None
        return max(0, now - self._last_tracepoints.get(key, 0))

    @cached_property
    def _last_counters(self) -> dict[object, int]:
        return _counter_table(self.last)

    @cached_property
    def _last_tracepoints(self) -> dict[object, int]:
        return _tracepoint_table(self.last)

    def bulk_avg(
        self, from_dev: str, to_dev: str, sent: int, drops: int, flushes: int
    ) -> float | None:
        """xdp-monitor's bulk-avg, ``(sent + drops) / flushes``, over the window (None when
        nothing was flushed in it); over the whole run without a window."""
        if self.base is None:
            return (sent + drops) / flushes if flushes else None
        table = self._tracepoints
        d_flushes = flushes - table.get(("devmap", from_dev, to_dev, "flushes"), 0)
        if d_flushes <= 0:
            return None
        d_sent = sent - table.get(("devmap", from_dev, to_dev, "sent"), 0)
        d_drops = drops - table.get(("devmap", from_dev, to_dev, "drops"), 0)
        return (d_sent + d_drops) / d_flushes

    def _of(self, table: dict[object, int], key: object, now: int) -> float | None:
        if self.base is None:
            return None
        # A tally the base frame lacks had not started yet: it was 0 then.
        return rate(table.get(key, 0), now, self.window_ns)

    @cached_property
    def _counters(self) -> dict[object, int]:
        return _counter_table(self.base)

    def counter(self, dev: str, name: str, now: int) -> float | None:
        """A device counter's rate (``now``: its value in the frame)."""
        return self._of(self._counters, (dev, name), now)

    @cached_property
    def _queues(self) -> dict[object, int]:
        base = self.base
        if base is None:
            return {}
        out: dict[object, int] = {}
        for dev in base.devices:
            for q in dev.queues:
                out[(dev.name, q.queue, "rx_packets")] = q.rx_packets
                out[(dev.name, q.queue, "rx_dropped")] = q.rx_dropped
            for r in dev.xdp_tx_rings:
                out[(dev.name, r.ring, "sent")] = r.sent
                out[(dev.name, r.ring, "dropped")] = r.dropped
        return out

    def queue(self, dev: str, queue: int, field: str, now: int) -> float | None:
        """An RX queue's ``rx_packets`` / ``rx_dropped``, or a TX ring's ``sent`` /
        ``dropped`` (``queue`` is then the ring), per second."""
        return self._of(self._queues, (dev, queue, field), now)

    @cached_property
    def _tracepoints(self) -> dict[object, int]:
        return _tracepoint_table(self.base)

    def tracepoint(self, key: tuple[object, ...], now: int) -> float | None:
        """A tracepoint tally's rate: ``("redirect",)``, ``("exception", dev, action)``,
        ``("redirect_err", dev, errno)``, ``("bulk_tx", dev, errno)`` (its drops),
        ``("devmap", from, to, field)``, ``("bq", cpu, from,
        to)`` (frames enqueued), ``("bq_egress", cpu, from, to)`` (its egress program's
        drops), ``("source", name, "emitted"|"lost")`` or ``("bond", name, "rx_up" |
        "tx_down" | "stack_down")``."""
        return self._of(self._tracepoints, key, now)

    def cpu_busy(self, cpu: int) -> float | None:
        """A CPU's busy share over the window (None: no window yet). A frame's own share
        covers only the time since the frame before: at slow speeds a few microseconds, which
        a poll every 50 us mostly misses (0 %) and sometimes overfills (100 %)."""
        if self.base is None or self.window_ns <= 0:
            return None
        before = {c.cpu: c.busy_ns for c in self.base.cpus}
        now = {c.cpu: c.busy_ns for c in self.frame.cpus}
        if cpu not in before or cpu not in now:
            return None
        return max(0, now[cpu] - before[cpu]) / self.window_ns

    def devmap(self, from_dev: str, to_dev: str, field: str, now: int) -> float | None:
        """``xdp:xdp_devmap_xmit`` from -> to: ``sent``, ``drops``, ``err``, ``flushes`` or
        ``egress_drops``, per second."""
        return self.tracepoint(("devmap", from_dev, to_dev, field), now)


def _counter_table(frame: Frame | None) -> dict[object, int]:
    if frame is None:
        return {}
    return {(dev.name, k): v for dev in frame.devices for k, v in dev.counters}


def _tracepoint_table(frame: Frame | None) -> dict[object, int]:
    """A frame's tallies by the keys :meth:`RatesView.tracepoint` takes."""
    if frame is None:
        return {}
    tp = frame.tracepoints
    out: dict[object, int] = {("redirect",): tp.xdp_redirect}
    for e in tp.xdp_exception:
        out[("exception", e.dev, e.action)] = e.count
    for r in tp.xdp_redirect_err:
        out[("redirect_err", r.dev, r.err)] = r.count
    for x in tp.xdp_bulk_tx:
        out[("bulk_tx", x.dev, x.err)] = x.drops
    for d in tp.xdp_devmap_xmit:
        for field in ("sent", "drops", "err", "flushes", "egress_drops"):
            out[("devmap", d.from_dev, d.to_dev, field)] = getattr(d, field)
    for q in tp.xdp_cpumap_enqueue:
        out[("cpumap", q.map, q.cpu, q.to_cpu, "processed")] = q.processed
        out[("cpumap", q.map, q.cpu, q.to_cpu, "drops")] = q.drops
    for f in tp.cpumap_from_dev:
        out[("cpumap_dev", f.map, f.dev, f.to_cpu, "processed")] = f.processed
        out[("cpumap_dev", f.map, f.dev, f.to_cpu, "drops")] = f.drops
    for k in tp.xdp_cpumap_kthread:
        out[("kthread", k.map, k.cpu, "processed")] = k.processed
        out[("kthread", k.map, k.cpu, "busy_ns")] = int(k.busy_ns)
        out[("kthread", k.map, k.cpu, "xdp_drop")] = k.xdp_drop
    for b in frame.bulk_queues:
        out[("bq", b.cpu, b.from_dev, b.to_dev)] = b.frames
        out[("bq_egress", b.cpu, b.from_dev, b.to_dev)] = b.egress_drops
    for sock in frame.xsks:
        for name, value in sock.counters:
            out[("xsk", sock.name, name)] = value
        out[("xsk", sock.name, "read")] = sock.ring("rx").consumer
    for s in frame.sources:
        out[("source", s.name, "emitted")] = s.emitted
        out[("source", s.name, "lost")] = s.lost
    for dev in frame.devices:
        if dev.bond is not None:
            out[("bond", dev.name, "rx_up")] = dev.bond.rx_up
            out[("bond", dev.name, "tx_down")] = dev.bond.tx_down
            out[("bond", dev.name, "stack_down")] = dev.bond.stack_down
    return out
