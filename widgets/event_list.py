"""The event list: what happened, one line per event, as Packet Tracer's simulation mode lists
it -- every NAPI poll, bulk queue flush, drop and refusal, command and lesson step.

``   12.300µs cpu2 polled eth0 q2: 9 frames → 5 XDP_TX, 4 bq→eth1 · ring 9→0``
``   12.300µs bq cpu2 eth0→eth1 flushed 4, poll end, egress xdp_pass: 4 sent``
``   50.100µs refused on eth1: 12 frames, xdp_redirect_err ENETDOWN``

The lines come from the engine's event stream (``Frame.stream``: exact mode records every
poll, flush and drop; fast mode only commands). ``k`` filters by kind, ``i`` by device, ↑↓
select an event -- the app then marks its device, queue and CPU in the other panels -- and
``]`` runs poll by poll to the next event the filters let through. Pure formatting lives in
:func:`describe` (tested directly); the panel keeps only its filters and selection.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.strip import Strip

from xdptui.model.views import StreamEventView
from xdptui.widgets.format import format_sim_time
from xdptui.widgets.lines import LinePanel, Part, strip

KINDS: tuple[str, ...] = ("all", "poll", "write", "flush", "drop", "command")
"""The kind filter's values, in the order ``k`` cycles them."""
PLURALS = {
    "poll": "polls",
    "write": "tap writes",
    "flush": "flushes",
    "drop": "drops",
    "command": "commands",
}
_KIND_OF = {
    "napi_poll": "poll",
    "tun_write": "write",
    "bq_flush": "flush",
    "cpumap_enqueue": "flush",
    "cpumap_kthread": "poll",
    "xsk_flush": "flush",
    "drop": "drop",
    "command": "command",
    "lesson": "command",
}
_TIME_W = 13
_WHERE = {
    "rx_ring_full": "ring full (rx_dropped)",
    "rx_missed": "missed: the NIC's own limit (rx_missed_errors)",
    "xdp_tx_ring_full": "XDP TX ring full (xdp_tx_errors)",
    "xmit_ring_full": "ndo_xdp_xmit: TX ring full",
    "gtx_ring_full": "generic XDP_TX: TX queue full",
    "stack_ring_full": "stack TX: queue full",
    "veth_ring_full": "veth ring full",
    "backlog_full": "backlog full (netdev_max_backlog)",
}


@dataclass(frozen=True)
class EventListView:
    """The newest stream events and whether the engine runs exact mode."""

    events: tuple[StreamEventView, ...] = ()
    exact: bool = False


def kind_of(event: StreamEventView) -> str:
    """The filter group of an event: poll, flush, drop or command (lesson steps too)."""
    return _KIND_OF.get(event.kind, "command")


def devices_of(event: StreamEventView) -> tuple[str, ...]:
    """The devices an event concerns (a flush: from and to)."""
    names = [n for n in (event.dev, event.target) if n]
    names += [to.removeprefix("xsk:") for to, _ in event.bulks]
    return tuple(dict.fromkeys(names))


def matches(event: StreamEventView, kind: str, device: str | None) -> bool:
    return (kind == "all" or kind_of(event) == kind) and (
        device is None or device in devices_of(event)
    )


def describe(event: StreamEventView) -> tuple[str, str]:
    """(what, detail): an event in words, as the list shows it."""
    if event.kind == "napi_poll":
        return _poll(event)
    if event.kind == "tun_write":
        return _write(event)
    if event.kind == "bq_flush":
        how = "full (16)" if event.reason == "full" else "poll end"
        egress = f", egress {event.egress}" if event.egress else ""
        what = f"bq cpu{event.cpu} {event.dev}→{event.target} flushed {event.frames}, {how}"
        parts = [f"{event.sent} sent"]
        if event.egress_drops:
            parts.append(f"{event.egress_drops} dropped by {event.egress}")
        refused = event.drops - event.egress_drops
        if refused:
            err = f" ({event.errno})" if event.errno else ""
            parts.append(f"{refused} refused by {event.target}'s ndo_xdp_xmit{err}")
        return what + egress, ": " + ", ".join(parts)
    if event.kind == "cpumap_enqueue":
        how = "full (8)" if event.reason == "full" else "poll end"
        what = f"bq cpu{event.cpu}→{event.target} ({event.dev}) flushed {event.frames}, {how}"
        detail = f": {event.sent} into {event.target}'s ptr_ring"
        if event.drops:
            detail += f", {event.drops} dropped (ring full)"
        return what, detail
    if event.kind == "xsk_flush":
        what = f"xsk_flush cpu{event.cpu} {event.dev}: {event.sent} into its RX ring"
        if not event.drops:
            return what, ", published to the reader"
        why = {"ENOMEM": "fill ring empty", "ENOBUFS": "RX ring full"}.get(event.errno or "", "")
        return what, f", {event.drops} lost ({event.errno}{': ' + why if why else ''})"
    if event.kind == "cpumap_kthread":
        parts = [f"{n} {name}" for name, n in event.verdicts]
        what = f"cpu{event.cpu} cpumap kthread ({event.dev}): {_frames(event.frames)}"
        what += " → " + (", ".join(parts) if parts else "skbs up the stack (no program)")
        woke = " · woke up" if event.reason == "woke" else ""
        ring = f" · ring {event.ring_before}→{event.ring_after}{woke}"
        return what, f"{ring} · {format_sim_time(event.dur_ns)} of cpu{event.cpu}"
    if event.kind == "drop":
        if event.reason == "xdp_redirect_err":
            return (
                f"refused on {event.dev}: {_frames(event.frames)}",
                f", xdp_redirect_err {event.errno}",
            )
        if event.reason == "xdp_exception":
            what = f"drop on {event.dev}: {_frames(event.frames)}"
            return what, f", xdp_exception {event.action}"
        where = _WHERE.get(event.reason, event.reason)
        queue = f" q{event.queue}" if event.queue is not None else ""
        return f"drop on {event.dev}{queue}: {_frames(event.frames)}", f", {where}"
    if event.kind == "lesson":
        lesson, _, step = event.text.partition(".")
        return f"§ lesson {int(lesson) + 1}, step {int(step) + 1} starts", ""
    mark = "✓" if event.ok else f"✗ {event.errno}"
    return f"{event.text}", f"  {mark}"


def _poll(event: StreamEventView) -> tuple[str, str]:
    """``cpu2 polled eth0 q2: 9 frames → 5 XDP_TX, 4 bq→eth1``: the verdicts, with the
    XDP_TX a bond turned into redirects (``xdp_master_redirect``) shown by where they went."""
    verdicts = dict(event.verdicts)
    queued = sum(n for _, n in event.bulks)
    redirect = verdicts.pop("XDP_REDIRECT", 0)
    tx = verdicts.pop("XDP_TX", 0)
    via_tx = max(0, min(tx, queued - redirect))  # XDP_TX the bond sent to another slave
    parts: list[str] = []
    if tx - via_tx:
        parts.append(f"{tx - via_tx} XDP_TX")
    parts += [f"{n} {name}" for name, n in sorted(verdicts.items())]
    parts += [
        f"{n} →{to[4:]} RX ring" if to.startswith("xsk:") else f"{n} bq→{to}"
        for to, n in event.bulks
    ]
    failed = redirect + via_tx - queued
    if failed > 0:
        parts.append(f"{failed} redirect failed")
    what = f"cpu{event.cpu} polled {event.dev} q{event.queue}: {_frames(event.frames)}"
    if parts:
        what += " → " + ", ".join(parts)
    took = format_sim_time(event.dur_ns)
    return what, f" · ring {event.ring_before}→{event.ring_after} · {took} of cpu{event.cpu}"


def _write(event: StreamEventView) -> tuple[str, str]:
    """``cpu1 wrote 3 frames into tap0 q1 → 3 XDP_DROP``: a tap's writes, each through
    ``tun_get_user`` on the writer's CPU (not a NAPI poll), and which path each took."""
    writer = "vhost (handle_tx)" if event.reason == "vhost" else "userspace"
    what = f"cpu{event.cpu} {writer} wrote {_frames(event.frames)} into {event.dev} q{event.queue}"
    parts = [f"{n} {name}" for name, n in sorted(event.verdicts)]
    parts += [
        f"{n} →{to[4:]} RX ring" if to.startswith("xsk:") else f"{n} bq→{to}"
        for to, n in event.bulks
    ]
    if parts:
        what += " → " + ", ".join(parts)
    paths = dict(event.paths)
    taken = [f"{n} {p}" for p, n in (("fast", paths.get("fast", 0)),) if n]
    taken += [f"{n} generic" for n in (paths.get("generic", 0),) if n]
    how = f" · tun_get_user: {', '.join(taken)} path" if taken else " · tun_get_user"
    return what, f"{how} · {format_sim_time(event.dur_ns)} of cpu{event.cpu}"


class EventSelected(Message):
    """An event was selected (None: the selection was cleared); the app marks its device,
    queue and CPU in the other panels."""

    def __init__(self, event: StreamEventView | None) -> None:
        super().__init__()
        self.event = event


class NextEvent(Message):
    """Run poll by poll to the next event the filters let through."""

    def __init__(self, kind: str, device: str | None) -> None:
        super().__init__()
        self.kind = kind
        self.device = device


class EventListPanel(LinePanel[EventListView]):
    """The event stream, newest at the bottom, filtered and selectable."""

    HELP = """\
## Event list

One line per event of the engine's event stream, newest at the bottom, the way Packet Tracer's
simulation mode lists them: every NAPI poll (which CPU polled which queue, how many frames,
their verdicts, where redirected frames went: `bq→eth1`, the ring before and after), a tap's
writes (`tun_get_user` on the writer's CPU, the fast path through `tun_build_skb` or an skb
and generic XDP: not a NAPI poll), every
flush of a devmap bulk queue (`bq_xmit_all`: full at 16 or at the poll's end, the egress
program, what the target's `ndo_xdp_xmit` took), every drop and refusal where the kernel
counts it (ring full, missed, `xdp_redirect_err` with its errno, `xdp_exception`), every
command and lesson step. Exact mode (slow speeds, stepping) records polls, flushes and drops;
at real time only commands are listed.

`↑`/`↓` select an event: its device, queue and CPU are marked (▶) in the Rings & CPUs and Paths
tabs. `k` filters by kind (poll, tap write, flush, drop, command), `i` by device, `]` runs
poll by poll to the next event the filters let through (`,` then goes back one poll).
"""

    DEFAULT_CSS = """
    EventListPanel {
        & > .event-list--time { color: $foreground-muted; }
        & > .event-list--poll { }
        & > .event-list--write { color: $text-secondary; }
        & > .event-list--flush { color: $accent; }
        & > .event-list--drop { color: $error; text-style: bold; }
        & > .event-list--command { text-style: bold; }
        & > .event-list--lesson { color: $accent; text-style: bold; }
        & > .event-list--detail { color: $text-secondary; }
        & > .event-list--failed { color: $error; }
        & > .event-list--dim { color: $foreground-muted; }
        & > .event-list--selected { background: $primary 40%; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "event-list--time",
        "event-list--poll",
        "event-list--write",
        "event-list--flush",
        "event-list--drop",
        "event-list--command",
        "event-list--lesson",
        "event-list--detail",
        "event-list--failed",
        "event-list--dim",
        "event-list--selected",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "select(-1)", "Previous event", show=False, id="events-previous"),
        Binding("down", "select(1)", "Next event", show=False, id="events-next"),
        Binding("k", "cycle_kind", "Kind", tooltip="Filter the list by kind", id="events-kind"),
        Binding("i", "cycle_device", "Device", tooltip="Filter by device", id="events-device"),
        Binding(
            "right_square_bracket",
            "next_event",
            "Next of kind",
            key_display="]",
            tooltip="Run poll by poll to the next event the filters let through",
            id="events-run-to-next",
        ),
    ]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.kind = "all"
        self.device: str | None = None
        self.selected: int | None = None  # the selected event's seq
        self._shown: list[StreamEventView] = []
        self._rows: list[int] = []

    # --- filters and selection -----------------------------------------------------------

    def _visible(self) -> list[StreamEventView]:
        view = self._view
        if view is None:
            return []
        return [e for e in view.events if matches(e, self.kind, self.device)]

    def select_seq(self, seq: int | None) -> None:
        """Select the event numbered ``seq`` (None clears) and tell the app."""
        self.selected = seq
        event = next((e for e in self._visible() if e.seq == seq), None)
        self.post_message(EventSelected(event))
        self._rebuild()
        row = self._shown.index(event) if event is not None and event in self._shown else -1
        if row in self._rows:  # drawn (a failed drawing has no rows)
            line = self._rows.index(row)
            self.scroll_to(y=max(0, line - self.size.height // 2), animate=False)

    def action_select(self, delta: int) -> None:
        shown = self._visible()
        if not shown:
            return
        seqs = [e.seq for e in shown]
        index = seqs.index(self.selected) if self.selected in seqs else len(seqs)
        self.select_seq(seqs[max(0, min(len(seqs) - 1, index + delta))])

    def action_cycle_kind(self) -> None:
        """The next kind filter; ``write`` only where the list has a tap's writes."""
        view = self._view
        writes = view is not None and any(e.kind == "tun_write" for e in view.events)
        kinds = [k for k in KINDS if k != "write" or writes or self.kind == "write"]
        self.kind = kinds[(kinds.index(self.kind) + 1) % len(kinds)]
        self._filters_changed()

    def action_cycle_device(self) -> None:
        view = self._view
        names: list[str] = []
        for event in view.events if view is not None else ():
            names += [n for n in devices_of(event) if n not in names]
        order: list[str | None] = [None, *sorted(names)]
        index = order.index(self.device) if self.device in order else 0
        self.device = order[(index + 1) % len(order)]
        self._filters_changed()

    def action_next_event(self) -> None:
        self.post_message(NextEvent(self.kind, self.device))

    def _filters_changed(self) -> None:
        self._title()
        self._rebuild()
        self.scroll_end(animate=False, force=True)

    def _title(self) -> None:
        kind = "every kind" if self.kind == "all" else PLURALS.get(self.kind, self.kind)
        device = f" · {self.device}" if self.device else ""
        self.border_title = f"Event list: {kind}{device}"

    def on_mount(self) -> None:
        self._title()
        super().on_mount()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = self.body_index(offset.y)
        if line is not None and line < len(self._rows):
            self.select_seq(self._shown[self._rows[line]].seq)

    def update_view(self, view: EventListView) -> bool:
        follow = self.scroll_offset.y >= self.max_scroll_y - 1
        changed = super().update_view(view)
        if changed and follow:
            self.scroll_end(animate=False, force=True)
        return changed

    # --- drawing -------------------------------------------------------------------------

    def build(self, view: EventListView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        self._shown = self._visible()
        if not self._shown:
            why = (
                "no events match the filters yet"
                if view.exact
                else "real time runs fast mode: only commands are listed; slow down "
                "(-) or step (.) to see every poll, flush and drop"
            )
            return [], [strip([(why, s("event-list--dim"))])]
        body: list[Strip] = []
        self._rows = []  # the event (index into _shown) of each body line
        room = max(20, width - _TIME_W - 2)
        for index, event in enumerate(self._shown):
            what, detail = describe(event)
            style = s(f"event-list--{_style_of(event)}")
            detail_style = s("event-list--failed" if not event.ok else "event-list--detail")
            lines = _wrap(what, detail, room)
            for i, (text_what, text_detail) in enumerate(lines):
                stamp = format_sim_time(event.t_ns).rjust(_TIME_W) if i == 0 else ""
                parts: list[Part] = [
                    (stamp.ljust(_TIME_W) + " ", s("event-list--time")),
                    (text_what, style),
                    (text_detail, detail_style),
                ]
                if event.seq == self.selected:
                    sel = s("event-list--selected")
                    used = sum(len(t) for t, _ in parts)
                    parts = [(t, st + sel) for t, st in parts]
                    parts.append((" " * max(width - used - 1, 0), sel))
                body.append(strip(parts))
                self._rows.append(index)
        return [], body


def _wrap(what: str, detail: str, room: int) -> list[tuple[str, str]]:
    """An event's words over lines of ``room`` cells: (what, detail) per line."""
    words = textwrap.wrap(what, room) or [""]
    lines = [(w, "") for w in words[:-1]]
    last = words[-1]
    if len(last) + len(detail) <= room:
        return [*lines, (last, detail)]
    rest = textwrap.wrap(detail.lstrip(" ,:·"), room) or [""]
    return [*lines, (last, ""), *(("", r) for r in rest)]


def _style_of(event: StreamEventView) -> str:
    if event.kind == "lesson":
        return "lesson"
    if event.kind == "command":
        return "command" if event.ok else "failed"
    return kind_of(event)


def _frames(n: int) -> str:
    return "1 frame" if n == 1 else f"{n} frames"
