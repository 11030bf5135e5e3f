"""Topology and redirect paths: devices as boxes, arrows for every path with its live rate.

``wire ━━ 10.0Mpps ━━▶ RX q0-7 ━▶ l4lb native``, then one arrow per verdict
(``├─ XDP_REDIRECT ━━ 5.00Mpps ━━▶ eth1 bq → ndo_xdp_xmit``) and the way out. The shaft is
thicker the higher the rate (``╌`` idle, ``─`` under 100 Kpps, ``━`` more, bold over 5 Mpps);
every loss is a red ``✗`` line under the hop where the kernel counts it. Bonds hold their slaves'
boxes, veth pairs share a box. A followed packet's hops are listed on top and its devices are
marked ``◆``. Clicking a box posts :class:`~widgets.messages.DeviceClicked`.
"""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from textual import events
from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps, format_sim_time
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.messages import DeviceClicked
from xdptui.widgets.project_paths import Arrow, DeviceBox, PathsView

SHAFTS = ("╌", "─", "━", "━")
HEADS = ("▷", "▶", "▶", "▶")

Line = tuple[list[Part], str | None]
"""A drawn line and the device a click on it focuses."""


class PathsPanel(LinePanel[PathsView]):
    """Every device as a box with the paths its frames take, rates and losses."""

    HELP = """\
## Topology and paths

Each box is a device; its lines are the paths frames take through it, in order:

* **in**: `wire` into the RX ring of a port (RSS picks the queue, `napi_poll` on the queue's
  CPU runs the program), the peer for a veth (`veth_xmit` -> `veth_xdp_rcv_one`), userspace
  writes for a tap (`tun_get_user`, `tun_build_skb` -> `tun_xdp_act`).
* **verdicts** of the attached program, each with its rate: `XDP_TX` to the device's own XDP
  TX ring (`ixgbe_determine_xdp_ring` picks it by CPU), `XDP_REDIRECT` through the per-CPU
  bulk queue (`xdp_do_redirect` -> `__xdp_enqueue` -> `bq_enqueue`, flushed by `bq_xmit_all`
  into the target's `ndo_xdp_xmit`), `XDP_PASS` to the stack, `XDP_DROP`, `XDP_ABORTED`.
  On a bond slave `XDP_TX` becomes `xdp_master_redirect` -> `bond_xdp_get_xmit_slave`.
* **out**: `tx_packets` onto the wire, to the veth peer, or up to a tap's reader.

The shaft is thicker the higher the rate; a red ✗ marks frames lost at that hop, named as the
kernel counts them. While stepping (exact mode) each arrow also shows its frames so far and,
after `+`, what the last step added (one `.`: that poll's frames); a rate is then over the
simulated time so far when that is shorter than the window. `f` follows one packet: its hops
appear on top, its devices marked ◆. Click a box to focus that device in every panel.
"""

    DEFAULT_CSS = """
    PathsPanel {
        & > .paths-panel--border { color: $primary 60%; }
        & > .paths-panel--border-focus { color: $accent; text-style: bold; }
        & > .paths-panel--name { text-style: bold; }
        & > .paths-panel--kind { color: $foreground-muted; }
        & > .paths-panel--up { color: $success; }
        & > .paths-panel--down { color: $error; text-style: bold; }
        & > .paths-panel--program { color: $accent; }
        & > .paths-panel--note { color: $foreground-muted; }
        & > .paths-panel--label { }
        & > .paths-panel--idle { color: $foreground-muted 60%; }
        & > .paths-panel--light { color: $foreground; }
        & > .paths-panel--flow { color: $success; }
        & > .paths-panel--heavy { color: $success; text-style: bold; }
        & > .paths-panel--target { }
        & > .paths-panel--loss { color: $error; text-style: bold; }
        & > .paths-panel--follow { color: $warning; text-style: bold; }
        & > .paths-panel--dim { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "paths-panel--border",
        "paths-panel--border-focus",
        "paths-panel--name",
        "paths-panel--kind",
        "paths-panel--up",
        "paths-panel--down",
        "paths-panel--program",
        "paths-panel--note",
        "paths-panel--label",
        "paths-panel--idle",
        "paths-panel--light",
        "paths-panel--flow",
        "paths-panel--heavy",
        "paths-panel--target",
        "paths-panel--loss",
        "paths-panel--follow",
        "paths-panel--dim",
    }

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._line_device: list[str | None] = []
        self._compact = False  # notes and programs on lines of their own (a narrow panel)
        self._counts: tuple[int, int] | None = None  # stepping: widths of total and +step
        self._note_room = 80  # a note's cells in a narrow panel (room for a box in a bond's)

    def build(self, view: PathsView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        lines: list[Line] = []
        if view.follow is not None:
            lines += self._follow(view, width)
        if not view.boxes:
            lines.append(([("no devices", s("paths-panel--dim"))], None))
        arrows = _arrows(view.boxes)
        label_w = max((cell_len(a.label) for a in arrows), default=0)
        rate_w = max((len(format_pps(a.rate)) for a in arrows), default=1)
        self._counts = None
        if view.counting:
            self._counts = (
                max((len(format_count(a.total)) for a in arrows), default=1),
                max((len(_plus(a.step)) for a in arrows), default=0),
            )
        bodies: dict[int, list[Line]] = {}
        self._compact = False
        self._note_room = width - 1 - 2 * 4
        needed = max(
            (self._needed(b, view, label_w, rate_w, bodies) for b in view.boxes), default=0
        )
        if needed > width - 1:
            # Too wide for the panel: notes and programs move to lines of their own.
            self._compact = True
            bodies = {}
            needed = max(
                (self._needed(b, view, label_w, rate_w, bodies) for b in view.boxes), default=0
            )
        box_w = max(width - 1, needed)
        for box in view.boxes:
            lines += self._box(box, view, box_w, label_w, rate_w, bodies)
        self._line_device = [device for _, device in lines]
        return [], [strip(parts) for parts, _ in lines]

    # --- drawing ---------------------------------------------------------------------------

    def _follow(self, view: PathsView, width: int) -> list[Line]:
        s = self.style_of
        follow = view.follow
        assert follow is not None
        out: list[Line] = [
            (
                [
                    ("◆ following ", s("paths-panel--follow")),
                    (follow.label, s("paths-panel--name")),
                ],
                None,
            )
        ]
        keys = ("  (f: another flow · escape: stop)", s("paths-panel--dim"))
        if _width([*out[0][0], keys]) <= width - 1:
            out[0][0].append(keys)
        else:  # a narrow panel: the keys on a line of their own
            out.append(([keys], None))
        if not follow.hops:
            out.append(([("  no hops: the flow sends nothing now", s("paths-panel--dim"))], None))
        t0 = follow.hops[0].t_ns if follow.hops else 0
        dev_w = max((len(h.dev) for h in follow.hops), default=0)
        stage_w = max((len(h.stage) for h in follow.hops), default=0)
        t_w = max((len(format_sim_time(h.t_ns)) for h in follow.hops), default=0)
        dt_w = max((len(format_sim_time(h.t_ns - t0)) for h in follow.hops), default=0)
        room = max(24, width - 1)
        # The program's lines go under the hop's detail column when it leaves them room;
        # in a narrow panel (packet detail beside it) under the hop, and wrapped.
        prefix = 2 + t_w + 2 + dt_w + 4 + dev_w + 2 + stage_w + 2
        indent = prefix if room - prefix >= 48 else 4
        dim, target = s("paths-panel--dim"), s("paths-panel--target")
        for hop in follow.hops:
            style = s("paths-panel--loss") if hop.stage == "drop" else s("paths-panel--label")
            head: list[Part] = [
                ("  " + format_sim_time(hop.t_ns).rjust(t_w), dim),
                (f" +{format_sim_time(hop.t_ns - t0)}".ljust(dt_w + 4), dim),
                (hop.dev.ljust(dev_w + 2), s("paths-panel--name")),
                (hop.stage.ljust(stage_w + 2), style),
            ]
            if _width(head) + cell_len(hop.detail) <= room:
                out.append(([*head, (hop.detail, target)], hop.dev))
            else:
                out.append((head, hop.dev))
                for line in _wrap(hop.detail, room - indent, indent):
                    out.append(([(line, target)], hop.dev))
            if hop.program is None:
                continue
            # Enough bytes of the frame to fit a line: the packet detail has them all.
            shown = max(4, (room - indent - len("frame out (64 B): ")) // 3)
            for text in hop.program.lines(min(42, shown)):
                for line in _wrap(text, room - indent, indent):
                    out.append(([(line, dim)], hop.dev))
        out.append(([("", s("paths-panel--dim"))], None))
        return out

    def _title(self, box: DeviceBox, border: Style) -> list[Part]:
        s = self.style_of
        title: list[Part] = [("╭─ ", border), (box.name, s("paths-panel--name"))]
        if box.on_path:
            title.append((" ◆", s("paths-panel--follow")))
        if box.marked:
            title.append((" ▶", s("paths-panel--follow")))
        if box.kind and not (self._compact and box.state):
            title.append((" · " + box.kind, s("paths-panel--kind")))
        if box.state:
            state_style = "paths-panel--up" if box.state == "up" else "paths-panel--down"
            title += [(" · ", s("paths-panel--kind")), (box.state, s(state_style))]
        if box.program and not self._compact:
            title += [(" · xdp ", s("paths-panel--kind")), (box.program, s("paths-panel--program"))]
        title.append((" ", border))
        return title

    def _own_lines(self, box: DeviceBox, label_w: int, rate_w: int) -> list[Line]:
        """The box's own lines (notes, the way in, verdicts, the way out), unpadded."""
        s = self.style_of
        device = None if box.kind == "veth pair" else box.name
        body: list[Line] = []
        if self._compact and box.state:
            line: list[Part] = [(box.kind, s("paths-panel--kind"))]
            if box.program:
                line += [
                    (" · xdp ", s("paths-panel--kind")),
                    (box.program, s("paths-panel--program")),
                ]
            body.append((line, device))
        for note in box.notes:
            # a narrow panel wraps a long note (a tap's rx_dropped) rather than widen the box
            lines = _wrap(note, self._note_room, 0) if self._compact else [note]
            body += [([(line, s("paths-panel--note"))], device) for line in lines]
        if box.inbound is not None:
            parts = self._arrow(box.inbound, label_w, rate_w)
            if box.program and box.verdicts:
                parts += [(" ━▶ ", self._shaft_style(box.inbound.weight))]
                parts += [(box.program.split(" ")[0], s("paths-panel--program"))]
            body.append((parts, device))
            body += self._note(box.inbound, "   ", device)
            body += self._losses(box.inbound, "   ", device)
        for i, verdict in enumerate(box.verdicts):
            last = i == len(box.verdicts) - 1
            branch = "  └─ " if last else "  ├─ "
            parts = [(branch, s("paths-panel--dim"))]
            parts += self._arrow(verdict, label_w, rate_w)
            body.append((parts, verdict.target_dev or device))
            body += self._note(verdict, "       " if last else "  │    ", device)
            body += self._losses(verdict, "       " if last else "  │    ", device)
        if box.outbound is not None:
            body.append((self._arrow(box.outbound, label_w, rate_w), device))
            body += self._note(box.outbound, "   ", device)
            body += self._losses(box.outbound, "   ", device)
        return body

    def _note(self, arrow: Arrow, indent: str, device: str | None) -> list[Line]:
        """A narrow panel's arrow note, on the line under the arrow."""
        if not self._compact or not arrow.note:
            return []
        s = self.style_of
        return [
            ([(indent, s("paths-panel--dim")), (part, s("paths-panel--note"))], device)
            for part in arrow.note.split(" · ")
        ]

    def _needed(
        self,
        box: DeviceBox,
        view: PathsView,
        label_w: int,
        rate_w: int,
        bodies: dict[int, list[Line]],
    ) -> int:
        """The width ``box`` needs so none of its lines (or its children's) is cut."""
        body = bodies.setdefault(id(box), self._own_lines(box, label_w, rate_w))
        own = max((_width(parts) for parts, _ in body), default=0) + 4
        title = _width(self._title(box, self.style_of("paths-panel--border"))) + 2
        kids = max(
            (self._needed(child, view, label_w, rate_w, bodies) + 4 for child in box.children),
            default=0,
        )
        return max(own, title, kids)

    def _box(
        self,
        box: DeviceBox,
        view: PathsView,
        width: int,
        label_w: int,
        rate_w: int,
        bodies: dict[int, list[Line]],
    ) -> list[Line]:
        s = self.style_of
        focused = view.focus is not None and view.focus == box.name
        border = s("paths-panel--border-focus" if focused else "paths-panel--border")
        device = None if box.kind == "veth pair" else box.name
        title = self._title(box, border)
        title.append(("─" * max(width - _width(title) - 1, 0) + "╮", border))
        out: list[Line] = [(title, device)]
        inner = width - 4
        body = list(bodies.get(id(box)) or self._own_lines(box, label_w, rate_w))
        for child in box.children:
            body += self._box(child, view, inner, label_w, rate_w, bodies)
        if not body:
            body.append(([("no traffic paths", s("paths-panel--dim"))], device))
        for parts, line_device in body:
            line: list[Part] = [("│ ", border), *parts]
            line.append((" " * max(inner - _width(parts), 0) + " │", border))
            out.append((line, line_device))
        out.append(([("╰" + "─" * max(width - 2, 0) + "╯", border)], device))
        return out

    def _shaft_style(self, weight: int) -> Style:
        names = ("idle", "light", "flow", "heavy")
        return self.style_of(f"paths-panel--{names[min(max(weight, 0), 3)]}")

    def _arrow(self, arrow: Arrow, label_w: int, rate_w: int) -> list[Part]:
        s = self.style_of
        shaft = SHAFTS[arrow.weight] * 2
        style = self._shaft_style(arrow.weight)
        parts: list[Part] = [
            (arrow.label.ljust(label_w), s("paths-panel--label")),
            (f" {shaft} ", style),
            (format_pps(arrow.rate).rjust(rate_w), style),
        ]
        if self._counts is not None:
            # Stepping: the frames so far, and what this step (one .) added.
            total_w, step_w = self._counts
            parts += [
                (" " + format_count(arrow.total).rjust(total_w), s("paths-panel--note")),
                (" " + _plus(arrow.step).ljust(step_w), style),
            ]
        parts += [
            (f" {shaft}{HEADS[arrow.weight]} ", style),
            (arrow.target, s("paths-panel--target")),
        ]
        if arrow.note and not self._compact:
            parts.append(("  " + arrow.note, s("paths-panel--note")))
        return parts

    def _losses(self, arrow: Arrow, indent: str, device: str | None) -> list[Line]:
        s = self.style_of
        return [
            (
                [
                    (indent, s("paths-panel--dim")),
                    (f"✗ {loss.what} {format_pps(loss.rate)}", s("paths-panel--loss")),
                    (f"  total {format_count(loss.total)}", s("paths-panel--dim")),
                    (
                        f" {_plus(loss.step)}" if self._counts is not None and loss.step else "",
                        s("paths-panel--loss"),
                    ),
                ],
                device,
            )
            for loss in arrow.losses
        ]

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.body_index(offset.y)
        if index is not None and index < len(self._line_device):
            device = self._line_device[index]
            if device is not None:
                self.post_message(DeviceClicked(device))


def _plus(step: int | None) -> str:
    """What a step added: ``+64``, or nothing before the first step."""
    return "" if step is None else f"+{format_count(step)}"


def _arrows(boxes: tuple[DeviceBox, ...]) -> list[Arrow]:
    out: list[Arrow] = []
    for box in boxes:
        out += [a for a in (box.inbound, box.outbound) if a is not None]
        out += box.verdicts
        out += _arrows(box.children)
    return out


def _wrap(text: str, width: int, indent: int) -> list[str]:
    """``text`` in lines of ``width`` cells after ``indent`` spaces; its continuations two
    further in."""
    lines = textwrap.wrap(text, max(16, width), subsequent_indent="  ", break_on_hyphens=False)
    return [" " * indent + line for line in lines or [""]]


def _width(parts: list[Part]) -> int:
    return sum(cell_len(text) for text, _ in parts)
