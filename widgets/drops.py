"""Where frames are lost and why, as an operator sees it with ``ip -s link`` and xdp-monitor.

* ring full: RX ring overruns per device/queue (the NIC found no free descriptor: ``rx_dropped``).
* ``xdp:xdp_exception`` by action: XDP_ABORTED, unknown return codes, and XDP_TX/XDP_REDIRECT
  that the driver could not carry out (``trace_xdp_exception`` in the driver's ``run_xdp``).
* ``xdp:xdp_redirect_err`` by errno: redirects ``__xdp_do_redirect_frame`` / ``__xdp_enqueue``
  refused (target without ``ndo_xdp_xmit``: EOPNOTSUPP, target down: ENETDOWN, too long:
  EMSGSIZE, no such ifindex: EINVAL); the driver then drops the frame.
* ``xdp:xdp_devmap_xmit`` from->to: each devmap bulk flush (``bq_xmit_all``): frames sent, frames
  the target's ``ndo_xdp_xmit`` refused (drops), flushes with a driver error (err), flushes, and
  xdp-monitor's bulk-avg = (sent + drops) / flushes.
"""

from __future__ import annotations

from typing import ClassVar

from textual.strip import Strip

from widgets.format import format_count, format_per_s
from widgets.lines import LinePanel, Part, strip
from widgets.project import DropsView


class DropsPanel(LinePanel[DropsView]):
    """Ring-full drops, xdp_exception, xdp_redirect_err and xdp_devmap_xmit, with rates."""

    DEFAULT_CSS = """
    DropsPanel {
        & > .drops-panel--section { text-style: bold; color: $foreground-muted; }
        & > .drops-panel--key { }
        & > .drops-panel--count { color: $error; }
        & > .drops-panel--ok { color: $success; }
        & > .drops-panel--dim { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "drops-panel--section",
        "drops-panel--key",
        "drops-panel--count",
        "drops-panel--ok",
        "drops-panel--dim",
    }

    def build(self, view: DropsView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        section, key, count, ok, dim = (
            s("drops-panel--section"),
            s("drops-panel--key"),
            s("drops-panel--count"),
            s("drops-panel--ok"),
            s("drops-panel--dim"),
        )
        none = strip([("  none", dim)])
        counted: list[tuple[str, tuple[tuple[str, int, float | None], ...]]] = [
            (
                "ring full (rx_dropped)",
                tuple(
                    (f"{r.device} q{r.queue} cpu{r.cpu}", r.dropped, r.per_s)
                    for r in view.ring_full
                ),
            ),
            (
                "xdp_exception",
                tuple((f"{r.dev} {r.key}", r.count, r.per_s) for r in view.xdp_exception),
            ),
            (
                "xdp_redirect_err",
                tuple((f"{r.dev} {r.key}", r.count, r.per_s) for r in view.xdp_redirect_err),
            ),
        ]
        rows = [row for _, section_rows in counted for row in section_rows]
        label_w = max((len(label) for label, _, _ in rows), default=0)
        count_w = max((len(format_count(n)) for _, n, _ in rows), default=0)
        rate_w = max((len(format_per_s(r)) for _, _, r in rows), default=0)

        body: list[Strip] = []
        for title, section_rows in counted:
            body.append(strip([(title, section)]))
            if not section_rows:
                body.append(none)
            for label, n, per_s in section_rows:
                body.append(
                    strip(
                        [
                            ("  " + label.ljust(label_w), key),
                            ("  " + format_count(n).rjust(count_w), count),
                            ("  " + format_per_s(per_s).rjust(rate_w), dim),
                        ]
                    )
                )

        body.append(strip([("xdp_devmap_xmit", section)]))
        if not view.devmap_xmit:
            body.append(none)
            return [], body
        headings = ("from->to", "sent", "xmit/s", "drops", "err", "flushes", "bulk-avg")
        table = [
            (
                (f"{d.from_dev}->{d.to_dev}", key),
                (format_count(d.sent), ok),
                (format_per_s(d.sent_per_s), dim),
                (format_count(d.drops), count if d.drops else dim),
                (format_count(d.err), count if d.err else dim),
                (format_count(d.flushes), dim),
                (f"{d.bulk_avg:.1f}" if d.bulk_avg is not None else "-", key),
            )
            for d in view.devmap_xmit
        ]
        widths = [max(len(h), *(len(row[i][0]) for row in table)) for i, h in enumerate(headings)]
        head: list[Part] = [("  " + headings[0].ljust(widths[0]), dim)]
        head += [(" " + h.rjust(w), dim) for h, w in zip(headings[1:], widths[1:], strict=True)]
        body.append(strip(head))
        for row in table:
            (pair, pair_style), *cells = row
            parts: list[Part] = [("  " + pair.ljust(widths[0]), pair_style)]
            parts += [
                (" " + text.rjust(w), style)
                for (text, style), w in zip(cells, widths[1:], strict=True)
            ]
            body.append(strip(parts))
        return [], body
