"""The devices table: one two-line row per net device.

Line one: name, type/driver, link state, the attached XDP program and its mode, and the rates of
the main counters; line two: the bond master, where an inherited program comes from, and the counter
totals. A slave running the program its bond pushed down (``bond_xdp_set`` installs the master's
program on every slave) is marked ``⇐ from bond0``.
The verdict counters are the per-device ones the kernel keeps for the program attached there (an
XDP_TX that a bond turns into a redirect, ``xdp_master_redirect``, counts as REDIR); RX_DROP is
the ring-full loss. Clicking a row posts :class:`DevicesTable.DeviceClicked`.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual import events
from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.messages import DeviceClicked as _DeviceClicked
from xdptui.widgets.project import DeviceRow, DevicesView

_GAP = "  "
_IDENT_HEADINGS = ("DEV", "TYPE", "LINK", "XDP")


class DevicesTable(LinePanel[DevicesView]):
    """Every device with its link state, XDP attachment and counter rates/totals."""

    HELP = """\
## Devices

One two-line row per net device: name, type/driver, link (`up`, `down` = not IFF_UP,
`no-carrier`), the XDP program and its mode (native = the driver's `ndo_bpf`, generic =
`do_xdp_generic` on the skb; `dev_xdp_attach` decides which), and the main counters as rates
(line one) and totals (line two). A slave running the program its bond pushed down
(`bond_xdp_set` -> `dev_xdp_propagate`) is marked `⇐ from bond0`. An XDP_TX that the bond
turned into a redirect (`xdp_master_redirect`) counts as REDIR, as in the kernel. Click a row
to focus that device everywhere.
"""

    DEFAULT_CSS = """
    DevicesTable {
        height: auto;
        & > .devices-table--heading { text-style: bold; color: $foreground-muted; }
        & > .devices-table--name { text-style: bold; }
        & > .devices-table--kind { }
        & > .devices-table--master { color: $text-secondary; }
        & > .devices-table--up { color: $success; }
        & > .devices-table--down { color: $error; text-style: bold; }
        & > .devices-table--no-carrier { color: $warning; }
        & > .devices-table--xdp { color: $accent; }
        & > .devices-table--inherited { color: $foreground-muted; text-style: italic; }
        & > .devices-table--rate { }
        & > .devices-table--total { color: $foreground-muted; }
        & > .devices-table--drop { color: $error; }
        & > .devices-table--focused { background: $primary 30%; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "devices-table--heading",
        "devices-table--name",
        "devices-table--kind",
        "devices-table--master",
        "devices-table--up",
        "devices-table--down",
        "devices-table--no-carrier",
        "devices-table--xdp",
        "devices-table--inherited",
        "devices-table--rate",
        "devices-table--total",
        "devices-table--drop",
        "devices-table--focused",
    }

    class DeviceClicked(_DeviceClicked):
        """A device row was clicked; the app toggles its focus."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._line_device: list[str] = []

    def build(self, view: DevicesView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        heading = s("devices-table--heading")
        cells = [(_line_one(row), _line_two(row)) for row in view.rows]
        ident_w = [
            max([len(h), *(max(len(one[i]), len(two[i])) for one, two in cells)])
            for i, h in enumerate(_IDENT_HEADINGS)
        ]
        rates = [tuple(format_pps(r) for r in row.rates) for row in view.rows]
        totals = [tuple(format_count(t) for t in row.totals) for row in view.rows]
        counter_w = [
            max([len(h), *(len(r[i]) for r in rates), *(len(t[i]) for t in totals)])
            for i, h in enumerate(view.headings)
        ]
        # A narrow panel keeps every counter: the TYPE column goes first, then LINK (a down
        # device is still red in its name's line).
        needed = sum(w + len(_GAP) for w in ident_w) + sum(w + 1 for w in counter_w)
        for col in (1, 2):
            if needed <= width:
                break
            needed -= ident_w[col] + len(_GAP)
            ident_w[col] = -len(_GAP)
        if needed > width:  # then the XDP column is shortened, each program name with "…"
            ident_w[3] = max(len(_IDENT_HEADINGS[3]), ident_w[3] - (needed - width), 8)

        head: list[Part] = []
        for h, w in zip(_IDENT_HEADINGS, ident_w, strict=True):
            if w >= 0:
                head.append((h.ljust(w) + _GAP, heading))
        for h, w in zip(view.headings, counter_w, strict=True):
            head.append((" " + h.rjust(w), heading))

        drop_cols = {i for i, h in enumerate(view.headings) if "DROP" in h}
        body: list[Strip] = []
        self._line_device = []
        for row, (one, two), rate_cells, total_cells in zip(
            view.rows, cells, rates, totals, strict=True
        ):
            focus = (
                self.get_component_rich_style("devices-table--focused", partial=True)
                if row.name == view.focus
                else None
            )

            def st(part: str, focus: Style | None = focus) -> Style:
                style = s(f"devices-table--{part}")
                return style + focus if focus is not None else style

            link = "down" if not row.up else "up" if row.carrier else "no-carrier"
            first_styles = ("name", "kind", link, "xdp")
            second_styles = ("total", "master", "total", "inherited")
            first: list[Part] = []
            second: list[Part] = []
            for i, w in enumerate(ident_w):
                if w < 0:
                    continue
                first.append((_fit(one[i], w) + _GAP, st(first_styles[i])))
                second.append((_fit(two[i], w) + _GAP, st(second_styles[i])))
            for i, w in enumerate(counter_w):
                hot = i in drop_cols and row.totals[i] > 0
                first.append((" " + rate_cells[i].rjust(w), st("drop" if hot else "rate")))
                second.append((" " + total_cells[i].rjust(w), st("drop" if hot else "total")))
            line_width = sum(len(text) for text, _ in first)
            if focus is not None and width > line_width:
                first.append((" " * (width - line_width), st("rate")))
                second.append((" " * (width - line_width), st("total")))
            body += [strip(first), strip(second)]
            self._line_device += [row.name, row.name]
        return [strip(head)], body

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.body_index(offset.y)
        if index is not None and index < len(self._line_device):
            self.post_message(self.DeviceClicked(self._line_device[index]))


def _fit(text: str, width: int) -> str:
    """``text`` in exactly ``width`` cells: padded, or cut with "…"."""
    return text.ljust(width) if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _line_one(row: DeviceRow) -> tuple[str, str, str, str]:
    link = "down" if not row.up else "up" if row.carrier else "no-carrier"
    return (row.name, row.kind, link, row.xdp or "-")


def _line_two(row: DeviceRow) -> tuple[str, str, str, str]:
    master = f"master {row.master}" if row.master else ""
    inherited = f"⇐ from {row.xdp_inherited_from}" if row.xdp_inherited_from else ""
    return ("", master, "", inherited)
