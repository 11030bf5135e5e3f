"""The counters crosswalk, ``ethtool -S``-like: every counter as a rate and a total, and the real
counter or tracepoint it corresponds to.

``  xdp_redirect     5.00Mpps     2.8M  tracepoint xdp:xdp_redirect (...)``

A counter the simulator does not model for a device reads *not modelled*, never 0; one with no
meaning for the device type (a bond's own XDP verdicts: its program runs on the slaves) reads
*n/a*. Shows the focused device, or every device. Data from ``widgets.crosswalk``.
"""

from __future__ import annotations

import textwrap
from typing import ClassVar

from textual.strip import Strip

from xdptui.widgets.crosswalk import CountersView
from xdptui.widgets.format import format_count, format_per_s, format_pps
from xdptui.widgets.lines import LinePanel, Part, strip

NOT_MODELLED = "not modelled"


class CountersPanel(LinePanel[CountersView]):
    """Per device: counter, rate, total, and where the same number lives on a real host."""

    HELP = """\
## Counters (crosswalk)

Every counter of the JSON report for a device, as a rate and a total, beside where an
operator reads the same number on a real host: `ip -s link` (`rtnl_link_stats64`), the
driver's `ethtool -S` name (mlx5 `rx_xdp_*`, veth `rx_queue_N_xdp_*`; ice, i40e and ixgbe
keep no per-verdict XDP counters), or an `xdp:*` tracepoint (`trace_xdp_exception`,
`trace_xdp_redirect_err`, `trace_xdp_devmap_xmit` in `include/trace/events/xdp.h`).

*not modelled*: the simulator does not keep this counter for this device (it is not 0).
*n/a*: the counter means nothing for this device type. Click a device to show only it.
"""

    DEFAULT_CSS = """
    CountersPanel {
        & > .counters-panel--device { text-style: bold; color: $accent; }
        & > .counters-panel--heading { text-style: bold; color: $foreground-muted; }
        & > .counters-panel--name { }
        & > .counters-panel--rate { }
        & > .counters-panel--total { color: $foreground-muted; }
        & > .counters-panel--drop { color: $error; }
        & > .counters-panel--missing { color: $warning; text-style: italic; }
        & > .counters-panel--na { color: $foreground-muted 60%; text-style: italic; }
        & > .counters-panel--source { color: $text-secondary; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "counters-panel--device",
        "counters-panel--heading",
        "counters-panel--name",
        "counters-panel--rate",
        "counters-panel--total",
        "counters-panel--drop",
        "counters-panel--missing",
        "counters-panel--na",
        "counters-panel--source",
    }

    def build(self, view: CountersView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        rows = [row for dev in view.devices for row in dev.rows]
        if not rows:
            return [], [strip([("no devices", s("counters-panel--na"))])]
        name_w = max(len("COUNTER"), *(len(row.name) for row in rows))
        rate_w = max(len("RATE"), len(NOT_MODELLED), *(len(_rate(r.name, r.rate)) for r in rows))
        total_w = max(
            len("TOTAL"), *(len(format_count(r.total)) for r in rows if r.total is not None)
        )
        heading = s("counters-panel--heading")
        head = strip(
            [
                ("  " + "COUNTER".ljust(name_w), heading),
                ("  " + "RATE".rjust(rate_w), heading),
                ("  " + "TOTAL".rjust(total_w), heading),
                ("  ON A REAL HOST", heading),
            ]
        )
        body: list[Strip] = []
        for dev in view.devices:
            body.append(strip([(f"{dev.name} · {dev.kind}", s("counters-panel--device"))]))
            for row in dev.rows:
                hot = row.total and any(
                    word in row.name for word in ("dropped", "errors", "aborted")
                )
                parts: list[Part] = [("  " + row.name.ljust(name_w), s("counters-panel--name"))]
                if not row.applicable:
                    parts.append(("  " + "n/a".rjust(rate_w), s("counters-panel--na")))
                    parts.append(("  " + "".rjust(total_w), s("counters-panel--na")))
                    parts.append(("  " + row.source, s("counters-panel--na")))
                elif row.total is None:
                    parts.append(("  " + NOT_MODELLED.rjust(rate_w), s("counters-panel--missing")))
                    parts.append(("  " + "".rjust(total_w), s("counters-panel--missing")))
                    parts.append(("  " + row.source, s("counters-panel--source")))
                else:
                    value = s("counters-panel--drop") if hot else s("counters-panel--rate")
                    total = s("counters-panel--drop") if hot else s("counters-panel--total")
                    parts.append(("  " + _rate(row.name, row.rate).rjust(rate_w), value))
                    parts.append(("  " + format_count(row.total).rjust(total_w), total))
                    parts.append(("  " + row.source, s("counters-panel--source")))
                used = sum(len(text) for text, _ in parts)
                if used <= width:
                    body.append(strip(parts))
                    continue
                # Narrow: where it lives on a real host goes under the counter, wrapped.
                text, style = parts[-1]
                body.append(strip(parts[:-1]))
                indent = 4
                for line in textwrap.wrap(text.strip(), max(20, width - indent - 1)):
                    body.append(strip([(" " * indent + line, style)]))
        return [head], body


def _rate(counter: str, rate: float | None) -> str:
    """Frames per second, or bytes per second for the ``*_bytes`` counters."""
    if counter.endswith("_bytes"):
        return format_per_s(rate, "B/s")
    return format_pps(rate)
