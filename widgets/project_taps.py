"""Tap devices (``DeviceView.type == "tun"``): the two XDP paths and the rings toward userspace.

``tun_get_user`` runs the program on the page before any skb exists (``tun_build_skb``: the
*fast* path, counted by ``xdp_fast_path``) only for small, non-GSO, non-blocking writes that fit a
page with headroom; every other write builds an skb and runs the program as generic XDP
(``do_xdp_generic``: ``xdp_generic_path``), each for one reason (``slow_path.<reason>``).
``verdicts.fast.<ACTION>`` / ``verdicts.generic.<ACTION>`` say what the program did on each path.
Toward userspace a tap has one ring of ``tx_queue_len`` per queue (``tx_queue_len``;
``xdp_tx_rings`` of a tap, ring = queue) that the reader empties at its rate; a full ring drops.
Pure: plain asserts test it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import DeviceView, Frame
from xdptui.widgets.format import program_name
from xdptui.widgets.rates import RatesView, rate


@dataclass(frozen=True)
class TapCount:
    """A counted thing with its total and rate (None without a previous frame)."""

    key: str
    count: int
    per_s: float | None


@dataclass(frozen=True)
class TapRingRow:
    """One queue's ring toward userspace."""

    queue: int
    size: int
    occupancy: int
    sent: int  # frames the reader took
    dropped: int  # frames that met the full ring
    sent_per_s: float | None
    dropped_per_s: float | None
    reader_pps: float | None  # this queue's share of the reader's rate; None: no reader


@dataclass(frozen=True)
class TapRow:
    name: str
    mode: str  # tap | tun
    queues: int
    writer: str
    reader_pps: float | None  # the whole reader; None: no reader attached (carrier off)
    program: str  # "xdp1 native", "" without one
    fast: TapCount
    generic: TapCount
    throttled: int
    slow_reasons: tuple[TapCount, ...]  # only the reasons that took frames
    fast_verdicts: tuple[TapCount, ...]
    generic_verdicts: tuple[TapCount, ...]
    rings: tuple[TapRingRow, ...]


@dataclass(frozen=True)
class TapsView:
    rows: tuple[TapRow, ...] = ()
    focus: str | None = None


def _counter(dev: DeviceView | None, name: str) -> int | None:
    if dev is None:
        return None
    return dict(dev.counters).get(name)


def _tap(dev: DeviceView, before: DeviceView | None, dt: int) -> TapRow:
    tap = dev.tap
    assert tap is not None
    old = before.tap if before is not None else None

    def count(key: str, counter: str) -> TapCount:
        now = _counter(dev, counter) or 0
        return TapCount(key, now, rate(_counter(before, counter), now, dt))

    def counts(
        rows: tuple[tuple[str, int], ...], was: tuple[tuple[str, int], ...] | None, prefix: str
    ) -> tuple[TapCount, ...]:
        old_rows = dict(was) if was is not None else None
        out = []
        for key, now in rows:
            if not key.startswith(prefix):
                continue
            then = old_rows.get(key) if old_rows is not None else None
            per_s = rate(then, now, dt)
            # Only what happens now (or ever, before a rate exists): an old verdict of a
            # program swapped out since would only crowd the line.
            if now and (per_s is None or per_s > 0):
                out.append(TapCount(key.removeprefix(prefix), now, per_s))
        return tuple(out)

    reader = tap.reader_pps
    nrings = max(1, len(dev.xdp_tx_rings))
    old_rings = {r.ring: r for r in before.xdp_tx_rings} if before is not None else {}
    rings = tuple(
        TapRingRow(
            queue=r.ring,
            size=r.size,
            occupancy=r.occupancy,
            sent=r.sent,
            dropped=r.dropped,
            sent_per_s=rate(old_rings[r.ring].sent if r.ring in old_rings else None, r.sent, dt),
            dropped_per_s=rate(
                old_rings[r.ring].dropped if r.ring in old_rings else None, r.dropped, dt
            ),
            reader_pps=reader / nrings if reader is not None else None,
        )
        for r in dev.xdp_tx_rings
    )
    return TapRow(
        name=dev.name,
        mode=tap.mode,
        queues=len(dev.xdp_tx_rings) or len(dev.queues),
        writer=tap.writer,
        reader_pps=reader,
        program=f"{program_name(dev.xdp.program)} {dev.xdp.mode}" if dev.xdp is not None else "",
        fast=count("fast", "xdp_fast_path"),
        generic=count("generic", "xdp_generic_path"),
        throttled=tap.writes_throttled,
        slow_reasons=counts(tap.slow_path, old.slow_path if old else None, ""),
        fast_verdicts=counts(tap.verdicts_by_path, old.verdicts_by_path if old else None, "fast."),
        generic_verdicts=counts(
            tap.verdicts_by_path, old.verdicts_by_path if old else None, "generic."
        ),
        rings=rings,
    )


def project_taps(
    prev: Frame | None,
    frame: Frame,
    focus: str | None = None,
    rates: RatesView | None = None,
) -> TapsView:
    """One row per tap (only the focused one when a tap is focused); rates over the window
    of ``rates`` (default: against ``prev``)."""
    rates = rates if rates is not None else RatesView(prev, frame)
    dt = rates.window_ns
    base = rates.base
    before = {d.name: d for d in base.devices} if base is not None else {}
    taps = [d for d in frame.devices if d.tap is not None]
    if focus is not None and any(d.name == focus for d in taps):
        taps = [d for d in taps if d.name == focus]
    return TapsView(tuple(_tap(d, before.get(d.name), dt) for d in taps), focus)
