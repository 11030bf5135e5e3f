"""The zoom on one queue: its slots, head and tail, each descriptor (``Frame.zoom``).

An RX ring is drawn slot by slot, ``size`` of them in rows: ``■`` a descriptor holding a frame
(coloured by the verdict its program gives it, or by flow: ``c`` switches), ``·`` a free one,
``H`` the head (``next_to_clean``: NAPI takes from here, up to 64 per poll) and ``T`` the tail
(where the NIC writes the next frame). Under the grid, every descriptor from the head: its
source and flow, size, verdict and how long it has waited. An XDP TX ring or a tap's ring is
drawn the same way, its frames waiting for the wire (or the reader). A devmap bulk queue is
empty between polls -- ``xdp_do_flush`` empties it at the end of every poll -- so its zoom
shows the bulks its CPU's last poll sent: each ``bq_xmit_all`` with its 16 slots, why it was
sent (full at the 17th frame, or the poll's end), the egress program and what it kept. In fast
mode (real time) the rings hold counts, not descriptors: the zoom sums them by verdict.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.strip import Strip

from xdptui.model.views import BulkView, QueueZoomView, SlotView, XskRingView, XskView
from xdptui.widgets.event_list import describe
from xdptui.widgets.format import format_sim_time
from xdptui.widgets.lines import LinePanel, Part, strip

PALETTE = 8  # colours for flows (flow % 8)
VERDICT_PARTS = {
    "XDP_TX": "tx",
    "XDP_PASS": "pass",
    "XDP_DROP": "drop",
    "XDP_ABORTED": "drop",
    "waiting": "tx",
}


@dataclass(frozen=True)
class ZoomPanelView:
    """What the zoom panel draws: the zoomed queue (None: nothing picked yet)."""

    zoom: QueueZoomView | None = None
    picked: str = ""  # the queue asked for, in words (it may have gone: ethtool -L)
    xsk: XskView | None = None  # the zoom is on an AF_XDP socket


XSK_OWNERS = ("fill", "kernel", "rx", "user", "tx", "comp")
XSK_OWNER_MARK = {"fill": "F", "kernel": "K", "rx": "R", "user": "U", "tx": "T", "comp": "C"}
XSK_OWNER_WORD = {
    "fill": "fill ring",
    "kernel": "kernel (free list)",
    "rx": "RX ring",
    "user": "userspace",
    "tx": "TX ring",
    "comp": "completion ring",
}
XSK_OWNER_STYLE = {
    "fill": "queue-zoom--tx",
    "kernel": "queue-zoom--other",
    "rx": "queue-zoom--redirect",
    "user": "queue-zoom--pass",
    "tx": "queue-zoom--dim",
    "comp": "queue-zoom--dim",
}


def _owner_cells(owners: dict[str, int], order: list[str], frames: int, cells: int) -> list[str]:
    """``cells`` marks in proportion to each owner's chunks (an owner with any gets one)."""
    out: list[str] = []
    for k in order:
        n = max(1, round(owners[k] * cells / max(frames, 1)))
        out += [k] * n
    return out[:cells] if len(out) > cells else out


def verdict_part(verdict: str) -> str:
    """The colour part of a verdict (redirects and failures by their first word)."""
    if verdict.startswith("XDP_REDIRECT"):
        return "drop" if "✗" in verdict else "redirect"
    return VERDICT_PARTS.get(verdict, "other")


class QueueZoomPanel(LinePanel[ZoomPanelView]):
    """One queue's slots (``z`` picks the queue; ``c`` colours by verdict or flow)."""

    HELP = """\
## Zoom on a queue

`z` picks a queue: an RX ring, an XDP TX ring, a tap's ring toward userspace, a devmap
bulk queue, or an AF_XDP socket (its fill, RX, TX and completion rings with their producer
and consumer indices, and the UMEM's chunks by owner: `F` fill ring, `K` the kernel's free
list, `R` RX ring, `U` userspace). The ring is drawn slot by slot: `■` a descriptor
holding a frame, `·` a free one,
`H` the head (`next_to_clean`: `napi_poll` takes up to 64 from here) and `T` the tail (where
the NIC writes the next frame, `next_to_use`). `c` colours the frames by the verdict their
program gives them (XDP_TX, XDP_REDIRECT→target, XDP_PASS, XDP_DROP) or by flow. Below the
grid every descriptor from the head: source and flow, size, verdict, how long it has waited.

A bulk queue (`xdp_dev_bulk_queue`, 16 frames, one per CPU and target) is empty between
polls: `bq_enqueue` fills it during a poll, `bq_xmit_all` sends it when a 17th frame comes
and at the poll's end (`xdp_do_flush`), after the egress program of the entry that enqueued
first ran on the whole bulk. Its zoom shows the bulks its CPU's last poll sent. Step with `.`
to watch it fill and empty poll by poll. At real time (fast mode) rings hold counts: the zoom
sums them by verdict.
"""

    DEFAULT_CSS = """
    QueueZoomPanel {
        & > .queue-zoom--title { text-style: bold; color: $accent; }
        & > .queue-zoom--dim { color: $foreground-muted; }
        & > .queue-zoom--free { color: $foreground-muted 50%; }
        & > .queue-zoom--head { background: $warning; color: $background; text-style: bold; }
        & > .queue-zoom--tail { background: $accent; color: $background; text-style: bold; }
        & > .queue-zoom--tx { color: $success; }
        & > .queue-zoom--redirect { color: $accent; }
        & > .queue-zoom--pass { color: $foreground; }
        & > .queue-zoom--drop { color: $error; }
        & > .queue-zoom--other { color: $warning; }
        & > .queue-zoom--refused { color: $warning; }
        & > .queue-zoom--flow0 { color: ansi_bright_red; }
        & > .queue-zoom--flow1 { color: ansi_bright_green; }
        & > .queue-zoom--flow2 { color: ansi_bright_yellow; }
        & > .queue-zoom--flow3 { color: ansi_bright_blue; }
        & > .queue-zoom--flow4 { color: ansi_bright_magenta; }
        & > .queue-zoom--flow5 { color: ansi_bright_cyan; }
        & > .queue-zoom--flow6 { color: ansi_red; }
        & > .queue-zoom--flow7 { color: ansi_blue; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "queue-zoom--title",
        "queue-zoom--dim",
        "queue-zoom--free",
        "queue-zoom--head",
        "queue-zoom--tail",
        "queue-zoom--tx",
        "queue-zoom--redirect",
        "queue-zoom--pass",
        "queue-zoom--drop",
        "queue-zoom--other",
        "queue-zoom--refused",
        *(f"queue-zoom--flow{i}" for i in range(PALETTE)),
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "colour", "Colour by", tooltip="Colour frames by verdict or by flow"),
    ]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.by_flow = False

    def action_colour(self) -> None:
        self.by_flow = not self.by_flow
        self._rebuild()

    def build(self, view: ZoomPanelView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        zoom = view.zoom
        if zoom is None:
            text = (
                f"{view.picked} is gone (ethtool -L?): z picks another queue"
                if view.picked
                else "z picks a queue to zoom on: an RX ring, an XDP TX ring, a tap ring or a "
                "bulk queue"
            )
            lines = textwrap.wrap(text, max(20, width - 1))
            return [], [strip([(line, s("queue-zoom--dim"))]) for line in lines]
        if zoom.ref.kind == "bq":
            return self._bulk(zoom, width)
        if zoom.ref.kind == "xsk" and view.xsk is not None:
            return self._xsk(view.xsk, width)
        return self._ring(zoom, width)

    # --- AF_XDP sockets ------------------------------------------------------------------

    def _xsk(self, x: XskView, width: int) -> tuple[list[Strip], list[Strip]]:
        """A socket's four rings with their free-running producer and consumer indices, and
        its UMEM's chunks by owner, one cell per chunk (or per group of chunks)."""
        s = self.style_of
        reader = f"reader {x.reader_pps / 1e6:g} Mpps" if x.reader_pps else "no reader"
        wake = "need_wakeup" if x.need_wakeup else "no need_wakeup"
        if x.rx_need_wakeup:
            wake += " (the fill ring's flag is up: the reader must kick the driver)"
        head = [
            strip([(f"{x.name}: AF_XDP socket on {x.dev} q{x.queue}", s("queue-zoom--title"))]),
            strip([(f"{x.mode} · {reader} · {wake}", s("queue-zoom--dim"))]),
        ]
        if x.writer is not None:
            w = x.writer
            head.append(
                strip(
                    [
                        (
                            f"writer: {w.batch} descriptors a sendto · {w.kicks} sendto, "
                            f"{w.eagain} EAGAIN · {w.per_kick} sent a call · "
                            f"{w.not_written} not written (TX ring full)",
                            s("queue-zoom--dim"),
                        )
                    ]
                )
            )
        if x.mode == "zerocopy":
            head.append(
                strip(
                    [
                        (
                            "zero-copy's driver refill from the fill ring is not modelled: "
                            "a dry fill ring shows as ENOMEM",
                            s("queue-zoom--dim"),
                        )
                    ]
                )
            )
        body: list[Strip] = []
        bar_w = max(8, min(64, width - 44))
        about = {
            "fill": "user gives empty chunks → kernel",
            "rx": "kernel gives frames → user",
            "tx": "user gives frames to send → kernel (sendto: at most 32 a call)",
            "comp": "kernel gives sent chunks back → user",
        }
        for r in x.rings:
            body.append(strip(self._xsk_ring(r, bar_w)))
            body.append(strip([(f"      {about[r.name]}", s("queue-zoom--dim"))]))
        body.append(strip([("", s("queue-zoom--dim"))]))
        owners = dict(x.owners)
        body.append(
            strip(
                [(f"UMEM: {x.frames} chunks of {x.frame_size} B, by owner", s("queue-zoom--dim"))]
            )
        )
        cells = max(8, min(x.frames, (width - 2) * 2))
        per_row = max(8, width - 2)
        order = [k for k in XSK_OWNERS if owners.get(k, 0)]
        marks = _owner_cells(owners, order, x.frames, cells)
        for start in range(0, len(marks), per_row):
            body.append(
                strip(
                    [
                        (XSK_OWNER_MARK[k], s(XSK_OWNER_STYLE[k]))
                        for k in marks[start : start + per_row]
                    ]
                )
            )
        legend: list[Part] = []
        for k in XSK_OWNERS:
            legend += [
                (XSK_OWNER_MARK[k] + " ", s(XSK_OWNER_STYLE[k])),
                (f"{XSK_OWNER_WORD[k]} {owners.get(k, 0)}  ", s("queue-zoom--dim")),
            ]
        body.append(strip(legend))
        body.append(strip([("", s("queue-zoom--dim"))]))
        for name, value in x.counters:
            body.append(strip([(f"  {name:<26} {value:>12,}", s("queue-zoom--dim"))]))
        return head, body

    def _xsk_ring(self, r: XskRingView, bar_w: int) -> list[Part]:
        s = self.style_of
        filled = min(bar_w, -(-r.entries * bar_w // r.size)) if r.entries else 0
        fill_part = "queue-zoom--redirect" if r.name != "fill" else "queue-zoom--tx"
        return [
            (f"{r.name:<5} ", s("queue-zoom--title")),
            ("■" * filled, s(fill_part)),
            ("·" * (bar_w - filled), s("queue-zoom--free")),
            (f" {r.entries}/{r.size}  prod {r.producer} cons {r.consumer}", s("queue-zoom--dim")),
        ]

    # --- rings ---------------------------------------------------------------------------

    def _slot_style(self, slot: SlotView) -> str:
        if self.by_flow:
            return f"queue-zoom--flow{slot.flow % PALETTE}" if slot.flow >= 0 else "queue-zoom--dim"
        return f"queue-zoom--{verdict_part(slot.verdict)}"

    def _ring(self, zoom: QueueZoomView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        mode = "exact: every descriptor" if zoom.exact else "fast mode: counts by verdict"
        head = [
            strip([(zoom.label, s("queue-zoom--title"))]),
            strip(
                [
                    (f"{zoom.occupancy}/{zoom.size} in use · ", s("queue-zoom--dim")),
                    ("H", s("queue-zoom--head")),
                    (f" head {zoom.head}", s("queue-zoom--dim")),
                    (
                        " (next_to_clean)" if zoom.ref.kind == "rx" else " (next to leave)",
                        s("queue-zoom--dim"),
                    ),
                    (" · ", s("queue-zoom--dim")),
                    ("T", s("queue-zoom--tail")),
                    (f" tail {zoom.tail} · {mode}", s("queue-zoom--dim")),
                ]
            ),
        ]
        body: list[Strip] = []
        per_row = max(8, min(64, width - 7))
        per_row -= per_row % 8
        by_slot = {slot.slot: slot for slot in zoom.slots}
        occupied = set(by_slot)
        if not zoom.exact:
            occupied = {(zoom.head + i) % zoom.size for i in range(zoom.occupancy)}
        for start in range(0, zoom.size, per_row):
            parts: list[Part] = [(f"{start:>5} ", s("queue-zoom--dim"))]
            for i in range(start, min(zoom.size, start + per_row)):
                parts.append(self._cell(i, zoom, by_slot, occupied))
            body.append(strip(parts))
        body.append(strip([("", s("queue-zoom--dim"))]))
        body += self._legend(zoom)
        if zoom.slots:
            body.append(strip([("", s("queue-zoom--dim"))]))
            waited = "waited" if zoom.ref.kind == "rx" else "leaves in"
            body.append(
                strip(
                    [
                        (
                            f" slot  source         flow  size  verdict                {waited}",
                            s("queue-zoom--dim"),
                        )
                    ]
                )
            )
            for slot in zoom.slots:
                body.append(
                    strip(
                        [
                            (f"{slot.slot:>5}  ", s("queue-zoom--dim")),
                            (
                                f"{slot.source[:14]:<14} {slot.flow:>4}  {slot.size:>4}  ",
                                s(self._slot_style(slot)),
                            ),
                            (
                                f"{slot.verdict:<22} ",
                                s(f"queue-zoom--{verdict_part(slot.verdict)}"),
                            ),
                            (format_sim_time(slot.wait_ns), s("queue-zoom--dim")),
                        ]
                    )
                )
        return head, body

    def _cell(
        self, i: int, zoom: QueueZoomView, by_slot: dict[int, SlotView], occupied: set[int]
    ) -> Part:
        s = self.style_of
        if i == zoom.head and zoom.occupancy:
            return ("H", s("queue-zoom--head"))
        if i == zoom.tail:
            return ("T", s("queue-zoom--tail"))
        slot = by_slot.get(i)
        if slot is not None:
            return ("■", s(self._slot_style(slot)))
        if i in occupied:
            return ("■", s("queue-zoom--other"))
        return ("·", s("queue-zoom--free"))

    def _legend(self, zoom: QueueZoomView) -> list[Strip]:
        s = self.style_of
        if not zoom.summary:
            return [strip([("empty", s("queue-zoom--dim"))])]
        if self.by_flow:
            flows: dict[tuple[str, int], int] = {}
            for slot in zoom.slots:
                flows[(slot.source, slot.flow)] = flows.get((slot.source, slot.flow), 0) + 1
            parts: list[Part] = [("by flow (c: by verdict): ", s("queue-zoom--dim"))]
            for (source, flow), n in sorted(flows.items(), key=lambda kv: -kv[1])[:12]:
                style = f"queue-zoom--flow{flow % PALETTE}" if flow >= 0 else "queue-zoom--dim"
                parts += [("■ ", s(style)), (f"{source} #{flow} {n}  ", s("queue-zoom--dim"))]
            return [strip(parts)]
        parts = [("by verdict (c: by flow): ", s("queue-zoom--dim"))]
        for verdict, n in zoom.summary:
            parts += [
                ("■ ", s(f"queue-zoom--{verdict_part(verdict)}")),
                (f"{verdict} {n}  ", s("queue-zoom--dim")),
            ]
        return [strip(parts)]

    # --- bulk queues ---------------------------------------------------------------------

    def _bulk(self, zoom: QueueZoomView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        about = (
            f"{zoom.size} slots (DEV_MAP_BULK_SIZE) · empty now: xdp_do_flush empties it at "
            "the end of every poll"
        )
        head = [
            strip([(zoom.label, s("queue-zoom--title"))]),
            *(
                strip([(line, s("queue-zoom--dim"))])
                for line in textwrap.wrap(about, max(20, width - 1))
            ),
        ]
        body: list[Strip] = []
        if zoom.last_poll is not None:
            what, detail = describe(zoom.last_poll)
            at = format_sim_time(zoom.last_poll.t_ns)
            body.append(
                strip(
                    [
                        (f"its last poll, at {at}: ", s("queue-zoom--dim")),
                        (what, s("queue-zoom--pass")),
                    ]
                )
            )
            body.append(strip([("  " + detail.lstrip(" ·"), s("queue-zoom--dim"))]))
        elif not zoom.bulks:
            why = "no flush recorded yet" if zoom.exact else "fast mode keeps no bulks"
            body.append(strip([(f"{why}: step with . to see them", s("queue-zoom--dim"))]))
        for i, bulk in enumerate(zoom.bulks, start=1):
            line = self._bulk_line(i, bulk, zoom.size)
            if sum(len(text) for text, _ in line) < width:
                body.append(strip(line))
            else:  # narrow: why and what became of it under the bulk
                text, style = line[-1]
                body.append(strip(line[:-1]))
                body.append(strip([("       " + text.lstrip(" ·"), style)]))
        body.append(strip([("", s("queue-zoom--dim"))]))
        for what, n in zoom.summary:
            body.append(strip([(f"{what:<32}{n:>12}", s("queue-zoom--dim"))]))
        return head, body

    def _bulk_line(self, index: int, bulk: BulkView, size: int) -> list[Part]:
        s = self.style_of
        cells: list[Part] = [("[", s("queue-zoom--dim"))]
        cells.append(("■" * bulk.sent, s("queue-zoom--tx")))
        cells.append(("■" * bulk.egress_drops, s("queue-zoom--drop")))
        cells.append(("■" * bulk.refused, s("queue-zoom--refused")))
        cells.append(("·" * max(0, size - bulk.frames), s("queue-zoom--free")))
        cells.append(("]", s("queue-zoom--dim")))
        why = "17th frame: bq_xmit_all" if bulk.reason == "full" else "poll end: xdp_do_flush"
        egress = f", egress {bulk.egress}" if bulk.egress else ""
        fate = [f"{bulk.sent} sent"]
        if bulk.egress_drops:
            fate.append(f"{bulk.egress_drops} dropped by {bulk.egress}")
        if bulk.refused:
            fate.append(f"{bulk.refused} refused")
        return [
            (f"bulk {index} ", s("queue-zoom--dim")),
            *cells,
            (f" {bulk.frames:>2}", s("queue-zoom--dim")),
            (f" · {why}{egress} → {', '.join(fate)}", s("queue-zoom--dim")),
        ]
