"""Where frames are lost and why, as an operator sees it with ``ip -s link`` and xdp-monitor.

* Summary: ``xdp:xdp_redirect`` hits, every error and drop below, and frames the devmap flushes
  sent, per second (xdp-monitor's ``Summary`` line).
* NIC limit: frames the NIC itself could not take (its DMA / PCIe budget: ``rx_missed_errors``,
  the "missed" column of ``ip -s link``), before any ring or CPU saw them.
* ring full: RX ring overruns per device/queue (the NIC found no free descriptor: ``rx_dropped``).
* ``xdp:xdp_redirect_err`` by errno: redirects ``__xdp_do_redirect_frame`` / ``__xdp_enqueue``
  refused (target without ``ndo_xdp_xmit``: EOPNOTSUPP, target down: ENETDOWN, too long:
  EMSGSIZE, no such ifindex: EINVAL); the driver then drops the frame.
* ``xdp:xdp_exception`` by action: XDP_ABORTED, unknown return codes, and XDP_TX/XDP_REDIRECT
  that the driver could not carry out (``trace_xdp_exception`` in the driver's ``run_xdp``).
* ``xdp:xdp_devmap_xmit`` from->to: each devmap bulk flush (``bq_xmit_all``): xmit/s, drop/s
  (frames the target's ``ndo_xdp_xmit`` refused), drv_err/s (flushes with a driver error) and
  xdp-monitor's bulk-avg = (sent + drops) / flushes.
* ``xdp:xdp_bulk_tx`` drops by device and error: a veth's XDP_TX bulk ``veth_xdp_flush_bq``
  could not hand to its peer (-ENXIO: the peer has no program; no error: its ring was full).

Up/down (or a click) selects a row; the lines under the summary explain its cause and the fix.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.strip import Strip

from xdptui.widgets.explain import Explanation
from xdptui.widgets.format import format_count, format_per_s
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project_drops import CountRow, DropsView


@dataclass(frozen=True)
class _Row:
    key: tuple[str, ...]
    cells: tuple[str, ...]
    hot: bool
    explanation: Explanation
    styles: tuple[str, ...] = ()  # component per cell after the label (default: count)


class DropsPanel(LinePanel[DropsView]):
    """xdp-monitor-style drops and errors, each row explained on selection."""

    HELP = """\
## Drops and errors

Like `xdp-monitor` (xdp-tools) reading the `xdp:*` tracepoints of
`include/trace/events/xdp.h`, plus the RX ring overruns `ip -s link` shows:

* **NIC limit** per device: the NIC could not move the frame into memory at all (its DMA /
  PCIe budget, `rx_missed_errors`, the *missed* column of `ip -s link`); queues and CPUs
  don't help.
* **ring full** per queue: the NIC found no free descriptor (`rx_dropped`); NAPI on the
  queue's CPU (`napi_poll`, budget 64) did not keep up.
* **redirect_err** by errno: `xdp_do_redirect` -> `__xdp_enqueue` refused the redirect
  (`xdp_ok_fwd_dev`: ENETDOWN, EMSGSIZE; no `ndo_xdp_xmit`: EOPNOTSUPP).
* **xdp_exception** by action: `trace_xdp_exception` in the driver: XDP_ABORTED, invalid
  codes (`bpf_warn_invalid_xdp_action`), XDP_TX the driver could not queue.
* **devmap_xmit** from->to: each `bq_xmit_all` flush of a per-CPU bulk queue (up to 16,
  `DEV_MAP_BULK_SIZE`) into the target's `ndo_xdp_xmit`: xmit/s, drop/s, drv_err/s, bulk-avg.
* **cpumap**: frames a cpumap entry's `ptr_ring` had no room for (`xdp:xdp_cpumap_enqueue`
  drops, by sending and target CPU), and frames an entry's program dropped on its kthread.
* **xdp_bulk_tx drops** by device and error: a veth's XDP_TX bulk that `veth_xdp_flush_bq`
  could not hand to the peer (-ENXIO while the peer runs no program, or its full ring).

Up/down or a click selects a row: its cause and fix are shown under the summary.
"""

    DEFAULT_CSS = """
    DropsPanel {
        & > .drops-panel--summary { text-style: bold; }
        & > .drops-panel--section { text-style: bold; color: $foreground-muted; }
        & > .drops-panel--key { }
        & > .drops-panel--count { color: $error; }
        & > .drops-panel--ok { color: $success; }
        & > .drops-panel--dim { color: $foreground-muted; }
        & > .drops-panel--selected { background: $primary 40%; }
        & > .drops-panel--cause { color: $warning; }
        & > .drops-panel--fix { color: $success; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "drops-panel--summary",
        "drops-panel--section",
        "drops-panel--key",
        "drops-panel--count",
        "drops-panel--ok",
        "drops-panel--dim",
        "drops-panel--selected",
        "drops-panel--cause",
        "drops-panel--fix",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "select(-1)", "Previous row", show=False, id="drops-previous"),
        Binding("down", "select(1)", "Next row", show=False, id="drops-next"),
    ]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._selected: tuple[str, ...] | None = None
        self._keys: list[tuple[str, ...]] = []
        self._line_key: list[tuple[str, ...] | None] = []

    @property
    def selected(self) -> tuple[str, ...] | None:
        """The selected row: (section, device or from->to, key)."""
        return self._selected

    def action_select(self, delta: int) -> None:
        if not self._keys:
            return
        index = self._keys.index(self._selected) if self._selected in self._keys else 0
        self._selected = self._keys[max(0, min(len(self._keys) - 1, index + delta))]
        self._rebuild()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.body_index(offset.y)
        if index is not None and index < len(self._line_key):
            key = self._line_key[index]
            if key is not None:
                self._selected = key
                self._rebuild()

    def build(self, view: DropsView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        sections = _sections(view)
        self._keys = [row.key for _, _, rows in sections for row in rows]
        if self._selected not in self._keys:
            hot = [row.key for _, _, rows in sections for row in rows if row.hot]
            self._selected = hot[0] if hot else (self._keys[0] if self._keys else None)

        head: list[Strip] = [self._summary(view)]
        chosen = next(
            (row for _, _, rows in sections for row in rows if row.key == self._selected), None
        )
        if chosen is None:
            head.append(strip([("no drops and no redirects yet", s("drops-panel--dim"))]))
        else:
            wrap = max(width - 8, 30)
            cause = textwrap.wrap(chosen.explanation.cause, wrap) or [""]
            fix = textwrap.wrap(chosen.explanation.fix, wrap) or [""]
            head.append(strip([("▶ " + chosen.cells[0], s("drops-panel--key"))]))
            for i, text in enumerate(cause):
                label = "  why " if i == 0 else "      "
                head.append(
                    strip([(label, s("drops-panel--dim")), (text, s("drops-panel--cause"))])
                )
            for i, text in enumerate(fix):
                label = "  fix " if i == 0 else "      "
                head.append(strip([(label, s("drops-panel--dim")), (text, s("drops-panel--fix"))]))
        head.append(strip([("─" * max(width - 1, 0), s("drops-panel--dim"))]))

        body: list[Strip] = []
        self._line_key = []
        # One label column for every section, so the numbers line up.
        label_w = max(
            [
                *(len(title) for title, _, _ in sections),
                *(2 + len(row.cells[0]) for _, _, rows in sections for row in rows),
            ]
        )
        for title, headings, rows in sections:
            widths = [
                max([len(h), *(len(row.cells[i]) for row in rows)]) for i, h in enumerate(headings)
            ]
            cols = sum(1 + w for w in widths[1:])
            row_w = label_w
            if label_w + cols > width:
                # Too wide beside its title (devmap_xmit at 80 columns): the title on a line of
                # its own, the columns beside the row labels only.
                row_w = max([0, *(2 + len(row.cells[0]) for row in rows)])
                body.append(strip([(title, s("drops-panel--section"))]))
                self._line_key.append(None)
            label = title if row_w == label_w else ""
            line: list[Part] = [(label.ljust(row_w), s("drops-panel--section"))]
            line += [
                (" " + h.rjust(w), s("drops-panel--dim"))
                for h, w in zip(headings[1:], widths[1:], strict=True)
            ]
            body.append(strip(line))
            self._line_key.append(None)
            if not rows:
                body.append(strip([("  none", s("drops-panel--dim"))]))
                self._line_key.append(None)
            for row in rows:
                parts: list[Part] = [(("  " + row.cells[0]).ljust(row_w), s("drops-panel--key"))]
                for i, (cell, w) in enumerate(zip(row.cells[1:], widths[1:], strict=True)):
                    name = row.styles[i] if i < len(row.styles) else "count"
                    parts.append((" " + cell.rjust(w), s(f"drops-panel--{name}")))
                if row.key == self._selected:
                    sel = s("drops-panel--selected")
                    used = sum(len(t) for t, _ in parts)
                    parts = [(t, st + sel) for t, st in parts]
                    parts.append((" " * max(width - used - 1, 0), sel))
                body.append(strip(parts))
                self._line_key.append(row.key)
        return head, body

    def _summary(self, view: DropsView) -> Strip:
        s = self.style_of
        summary = view.summary
        if summary is None:
            return strip([("Summary", s("drops-panel--summary"))])
        err = summary.err_drop_per_s

        def so_far(n: int) -> str:  # stepping: the total beside the rate
            return f" ({format_count(n)})" if summary.counting else ""

        return strip(
            [
                ("Summary ", s("drops-panel--summary")),
                (
                    f" {format_per_s(summary.redirect_per_s)} redir"
                    + so_far(summary.redirect_total),
                    s("drops-panel--ok"),
                ),
                (
                    f"  {format_per_s(err)} err,drop{so_far(summary.err_drop_total)}",
                    s(
                        "drops-panel--count"
                        if err or summary.err_drop_total
                        else "drops-panel--dim"
                    ),
                ),
                (
                    f"  {format_per_s(summary.xmit_per_s)} xmit{so_far(summary.xmit_total)}",
                    s("drops-panel--ok"),
                ),
            ]
        )


def _count_rows(kind: str, rows: tuple[CountRow, ...]) -> list[_Row]:
    """A tracepoint section's rows: ``dev key``, total, rate."""
    return [
        _Row(
            (kind, r.dev, r.key),
            (f"{r.dev} {r.key}", format_count(r.count), format_per_s(r.per_s)),
            True,
            r.explanation,
        )
        for r in rows
    ]


def _sections(view: DropsView) -> list[tuple[str, tuple[str, ...], list[_Row]]]:
    ring = [
        _Row(
            ("ring", r.device, str(r.queue)),
            (f"{r.device} q{r.queue} cpu{r.cpu}", format_count(r.dropped), format_per_s(r.per_s)),
            True,
            r.explanation,
        )
        for r in view.ring_full
    ]
    missed = _count_rows("missed", view.missed)
    redirect = _count_rows("redirect_err", view.xdp_redirect_err)
    exception = _count_rows("exception", view.xdp_exception)
    bulk_tx = _count_rows("bulk_tx", view.xdp_bulk_tx)
    cpumap = _count_rows("cpumap", view.cpumap)
    devmap = [
        _Row(
            ("devmap", d.from_dev, d.to_dev),
            (
                f"{d.from_dev}->{d.to_dev}",
                format_per_s(d.sent_per_s),
                format_per_s(d.drops_per_s),
                format_per_s(d.err_per_s),
                f"{d.bulk_avg:.1f}" if d.bulk_avg is not None else "-",
                format_count(d.sent),
                format_count(d.drops),
                format_count(d.flushes),
            ),
            bool(d.drops or d.err),
            d.explanation,
            (
                "ok",
                "count" if d.drops_per_s else "dim",
                "count" if d.err_per_s else "dim",
                "key",
                "ok",
                "count" if d.drops else "dim",
                "dim",
            ),
        )
        for d in view.devmap_xmit
    ]
    return [
        ("NIC limit (rx_missed_errors)", ("", "total", "drop/s"), missed),
        ("ring full (rx_dropped)", ("", "total", "drop/s"), ring),
        ("redirect_err", ("", "total", "error/s"), redirect),
        ("xdp_exception", ("", "total", "hit/s"), exception),
        ("xdp_bulk_tx drops", ("", "total", "drop/s"), bulk_tx),
        (
            "devmap_xmit",
            ("", "xmit/s", "drop/s", "drv_err/s", "bulk-avg", "sent", "drops", "flushes"),
            devmap,
        ),
    ] + ([("cpumap (enqueue, kthread)", ("", "total", "drop/s"), cpumap)] if cpumap else [])
