"""The event log: every command (typed, from the timeline, or by the system) and its reply.

``   2.001000ms ✓ $ ip link set dev eth1 down``: simulated time, ✓/✗, who issued it (``$`` typed,
``@`` the topology's timeline, ``#`` the topology's own setup, ``!`` the system), the command, and
the reply below it. Commands answer like the real tools (``RTNETLINK answers: ...``, ``Error: ...``)
with the kernel's errno; a failed command shows its errno name. Newest at the bottom; events are
appended as they arrive (the log tracks how many it has drawn) and it follows the end unless
scrolled back."""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from textual import events
from textual.geometry import Size
from textual.strip import Strip

from xdptui.model.views import EventView
from xdptui.widgets.format import format_sim_time
from xdptui.widgets.lines import LinePanel, strip

_TIME_W = 14
MAX_EVENTS = 1000
"""The newest events the log keeps drawn; older ones leave the top (the report keeps them)."""
ORIGIN_MARKS = {
    "user": "$",
    "timeline": "@",
    "topology": "#",
    "system": "!",
    "plan": "»",
    "lesson": "§",
}
"""Who issued a command: typed (or a key's action), the timeline, the topology (programs attached
at start), the kernel (log lines), a legal-sequence plan, a lesson step."""


class EventLog(LinePanel[tuple[EventView, ...]]):
    """Commands and replies from ``Frame.events``, oldest first."""

    HELP = """\
## Event log

Every command with its reply, newest at the bottom: `$` typed or issued by a key, `@` the
topology's timeline, `#` the topology's own setup, `!` the kernel's log lines (bond
enslave/failover, link changes), `»` a legal-sequence plan, `§` a lesson step. A refused
command shows ✗, the errno name and the reply the real tool prints (`RTNETLINK answers: ...`,
`Error: <extack>`).
"""

    DEFAULT_CSS = """
    EventLog {
        & > .event-log--time { color: $foreground-muted; }
        & > .event-log--origin { color: $text-secondary; }
        & > .event-log--cmd { text-style: bold; }
        & > .event-log--ok { color: $success; }
        & > .event-log--error { color: $error; text-style: bold; }
        & > .event-log--reply { }
        & > .event-log--reply-error { color: $error; }
        & > .event-log--dim { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "event-log--time",
        "event-log--origin",
        "event-log--cmd",
        "event-log--ok",
        "event-log--error",
        "event-log--reply",
        "event-log--reply-error",
        "event-log--dim",
    }

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._count = 0
        self._last: EventView | None = None
        self._drawn: deque[int] = deque()  # lines of each event drawn, oldest first
        self._hidden = 0  # events older than the MAX_EVENTS drawn
        self._has_marker = False  # the first body line says how many are hidden
        self._height = 1 << 30  # rows before the last resize (at first: following the end)

    def update_view(self, view: tuple[EventView, ...]) -> bool:
        """Append the events past the ones already drawn; a log that did not simply grow is
        drawn again. At most :data:`MAX_EVENTS` events are kept drawn."""
        count = self._count
        if self._view is not None and len(view) == count and (not view or view[-1] == self._last):
            return False
        grew = count > 0 and len(view) > count and view[count - 1] == self._last
        follow = self.scroll_offset.y >= self.max_scroll_y - 1
        new = view[count:]
        self._view = view
        self._count = len(view)
        self._last = view[-1] if view else None
        if not self.is_mounted:
            return True
        if not grew or self._built_width < 0 or not self._append(new):
            self._rebuild()
        if not grew or follow:
            # force: the first line past the panel's height gives it a scrollbar only at the
            # next layout, and until then Textual would refuse the scroll.
            self.scroll_end(animate=False, force=True)
        return True

    def on_resize(self, event: events.Resize) -> None:
        """A log that showed its newest line still does at its new height (the command line
        or the event strip opening takes rows from it)."""
        at_end = self.scroll_offset.y + self._height >= self.virtual_size.height - 1
        self._height = self.size.height
        if at_end:
            self.scroll_end(animate=False, force=True)

    def _append(self, new: tuple[EventView, ...]) -> bool:
        """Draw ``new`` below the log and drop the oldest past :data:`MAX_EVENTS`; False if
        drawing failed (the caller draws everything again, which shows the failure)."""
        try:
            added = [self._event_lines(event) for event in new[-MAX_EVENTS:]]
        except Exception:
            return False
        lines = self._body[1:] if self._has_marker else self._body
        hidden = self._hidden + len(new) - len(added)
        for event_lines in added:
            lines += event_lines
            self._drawn.append(len(event_lines))
        drop = 0
        while len(self._drawn) > MAX_EVENTS:
            drop += self._drawn.popleft()
            hidden += 1
        self._hidden = hidden
        self._has_marker = hidden > 0
        self._body = [self._marker()] * self._has_marker + lines[drop:]
        widest = max(self.virtual_size.width, *(line.cell_length for line in self._body))
        self.virtual_size = Size(widest, len(self._body))
        self.refresh()
        return True

    def build(self, view: tuple[EventView, ...], width: int) -> tuple[list[Strip], list[Strip]]:
        body: list[Strip] = []
        self._drawn.clear()
        self._hidden = max(len(view) - MAX_EVENTS, 0)
        self._has_marker = self._hidden > 0
        if not view:
            body.append(
                strip([("no commands yet: press : to type one", self.style_of("event-log--dim"))])
            )
            return [], body
        if self._hidden:
            body.append(self._marker())
        for event in view[-MAX_EVENTS:]:
            lines = self._event_lines(event)
            self._drawn.append(len(lines))
            body += lines
        return [], body

    def _marker(self) -> Strip:
        return strip(
            [(f"… {self._hidden} earlier events not shown", self.style_of("event-log--dim"))]
        )

    def _event_lines(self, event: EventView) -> list[Strip]:
        s = self.style_of
        lines = [
            strip(
                [
                    (format_sim_time(event.t_ns).rjust(_TIME_W), s("event-log--time")),
                    (
                        " ✓ " if event.ok else " ✗ ",
                        s(f"event-log--{'ok' if event.ok else 'error'}"),
                    ),
                    (
                        ORIGIN_MARKS.get(event.origin, f"{event.origin}:") + " ",
                        s("event-log--origin"),
                    ),
                    (event.cmd, s("event-log--cmd")),
                ]
            )
        ]
        indent = " " * (_TIME_W + 3)
        reply = event.reply.splitlines()
        if not event.ok:
            first = reply[0] if reply else ""
            lines.append(
                strip(
                    [
                        (indent + (event.errno or "error"), s("event-log--error")),
                        ("  " + first, s("event-log--reply-error")),
                    ]
                )
            )
            reply = reply[1:]
        style = s("event-log--reply" if event.ok else "event-log--reply-error")
        lines += [strip([(indent + line, style)]) for line in reply]
        return lines
