"""Sparklines of rates: per device RX, TX and drops over the last frames, and the host's drops.

``eth0   RX ▁▂▃▅▇█ 10.0Mpps  TX ▁▂▃▅▇█ 10.0Mpps  drops ▁▁▁▁▁▁ 0pps``

Each sparkline is scaled to its own largest visible sample; the number after it is the newest
sample. Samples are counter deltas between consecutive frames over simulated time
(``widgets.history``), so a paused clock draws nothing new. One line-API widget draws them all.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.style import Style
from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps
from xdptui.widgets.history import SparklinesView
from xdptui.widgets.lines import LinePanel, Part, strip

BLOCKS = "▁▂▃▄▅▆▇█"
VALUE_W = 9
MIN_SPARK = 4


def spark(values: tuple[float, ...], width: int) -> str:
    """The newest ``width`` samples as block characters scaled to their maximum."""
    shown = values[-width:] if width > 0 else ()
    top = max(shown, default=0.0)
    if top <= 0:
        return BLOCKS[0] * len(shown)
    cells = []
    for value in shown:
        level = math.ceil(value / top * (len(BLOCKS) - 1)) if value > 0 else 0
        cells.append(BLOCKS[min(level, len(BLOCKS) - 1)])
    return "".join(cells)


class SparklinesPanel(LinePanel[SparklinesView]):
    """RX, TX and drop rates per device over time, and all drops on the host."""

    HELP = """\
## Sparklines

Per device, the rate of `rx_packets` (frames the driver took off the RX ring), `tx_packets`
(frames that left: wire, veth peer, tap reader) and every frame dropped on it (its program's
`XDP_DROP` and `XDP_ABORTED`, `rx_dropped` ring full, `rx_missed_errors`, `xdp_tx_errors`,
`xdp_xmit_errors` refused by its `ndo_xdp_xmit`, `tx_dropped` -- a veth's `tx_dropped`
already holds its `xdp_tx_errors` and `xdp_xmit_errors`); the last line adds the redirects
`xdp:xdp_redirect_err` refused and the devmap egress programs' drops, and counts a refusal
into a veth's ring once (it is the sender's `tx_dropped` and the receiver's `rx_dropped`).
Each line is
scaled to its own peak; the number is the rate now. A bond's RX and TX are its slaves' sums
(`bond_get_stats`). While stepping (exact mode) the lines give way to counts: the rate, the
frames so far and, after `+`, what the last step (one `.`) added.
"""

    DEFAULT_CSS = """
    SparklinesPanel {
        height: auto;
        max-height: 12;
        & > .sparklines-panel--name { text-style: bold; }
        & > .sparklines-panel--focused { text-style: bold reverse; }
        & > .sparklines-panel--label { color: $foreground-muted; }
        & > .sparklines-panel--rx { color: $accent; }
        & > .sparklines-panel--tx { color: $success; }
        & > .sparklines-panel--drops { color: $error; }
        & > .sparklines-panel--zero { color: $foreground-muted 50%; }
        & > .sparklines-panel--value { }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sparklines-panel--name",
        "sparklines-panel--focused",
        "sparklines-panel--label",
        "sparklines-panel--rx",
        "sparklines-panel--tx",
        "sparklines-panel--drops",
        "sparklines-panel--zero",
        "sparklines-panel--value",
    }

    def build(self, view: SparklinesView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        if not view.rows:
            return [], [strip([("no devices", s("sparklines-panel--label"))])]
        if view.counting:
            return [], self._counts(view)
        name_w = max(len("all drops"), *(len(row.name) for row in view.rows))
        per_series = 4 + 1 + 1 + VALUE_W + 2  # label, spaces, value, gap
        spark_w = max(MIN_SPARK, (width - name_w - 1 - 3 * per_series) // 3)
        body: list[Strip] = []
        for row in view.rows:
            name_style = s("sparklines-panel--focused" if row.focused else "sparklines-panel--name")
            parts: list[Part] = [
                (row.name.ljust(name_w), name_style),
                (" ", s("sparklines-panel--label")),
            ]
            rx, tx, drops = row.now
            parts += self._series("RX", row.rx, rx, spark_w, s("sparklines-panel--rx"))
            parts += self._series("TX", row.tx, tx, spark_w, s("sparklines-panel--tx"))
            parts += self._series("drop", row.drops, drops, spark_w, s("sparklines-panel--drops"))
            body.append(strip(parts))
        parts = [
            ("all drops".ljust(name_w), s("sparklines-panel--name")),
            (" ", s("sparklines-panel--label")),
        ]
        # One long sparkline under the three columns, its value under the drop column's.
        long_w = 3 * (5 + spark_w + 1 + VALUE_W + 2) - 5 - (1 + VALUE_W + 2)
        parts += self._series(
            " ", view.all_drops, view.all_drops_now, long_w, s("sparklines-panel--drops")
        )
        body.append(strip(parts))
        return [], body

    def _counts(self, view: SparklinesView) -> list[Strip]:
        """Stepping: per device the rate, the frames so far and what the last step added,
        for RX, TX and drops (a line of single polls says little)."""
        s = self.style_of
        name_w = max(len("all drops"), *(len(row.name) for row in view.rows))
        total_w = max(
            len(format_count(n)) for row in view.rows for n in (*row.totals, view.all_drops_total)
        )
        step_w = max(
            len(_plus(n))
            for row in view.rows
            for n in (*(row.steps or (None,)), view.all_drops_step)
        )
        styles = ("sparklines-panel--rx", "sparklines-panel--tx", "sparklines-panel--drops")
        body: list[Strip] = []

        def column(
            label: str, rate: float | None, total: int, step: int | None, style: str
        ) -> list[Part]:
            return [
                (label.ljust(4) + " ", s("sparklines-panel--label")),
                (format_pps(rate).rjust(VALUE_W), s("sparklines-panel--value")),
                (" " + format_count(total).rjust(total_w), s(style)),
                (" " + _plus(step).ljust(step_w) + "   ", s(style)),
            ]

        for row in view.rows:
            name_style = s("sparklines-panel--focused" if row.focused else "sparklines-panel--name")
            parts: list[Part] = [(row.name.ljust(name_w) + " ", name_style)]
            steps = row.steps or (None, None, None)
            for label, rate, total, step, style in zip(
                ("RX", "TX", "drop"), row.now, row.totals, steps, styles, strict=True
            ):
                parts += column(label, rate, total, step, style)
            body.append(strip(parts))
        parts = [("all drops".ljust(name_w) + " ", s("sparklines-panel--name"))]
        parts += column(
            "", view.all_drops_now, view.all_drops_total, view.all_drops_step, styles[2]
        )
        body.append(strip(parts))
        return body

    def _series(
        self,
        label: str,
        values: tuple[float, ...],
        newest: float | None,
        width: int,
        style: Style,
    ) -> list[Part]:
        s = self.style_of
        line = spark(values, width)
        shown = style if any(values[-width:]) else s("sparklines-panel--zero")
        parts: list[Part] = []
        if label:
            parts.append((label.ljust(4) + " ", s("sparklines-panel--label")))
        parts += [
            (line.ljust(width, " "), shown),
            (" " + format_pps(newest).rjust(VALUE_W), s("sparklines-panel--value")),
            ("  ", s("sparklines-panel--label")),
        ]
        return parts


def _plus(step: int | None) -> str:
    return "" if step is None else f"+{format_count(step)}"
