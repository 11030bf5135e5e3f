"""The ``:`` command line: one line taking the iproute2 / bpftool / ethtool / pktgen subset.

Enter posts Textual's ``Input.Submitted`` (the app hands the text to the simulator and closes
the line); Escape posts :class:`CommandLine.Cancelled`. Up/down walk the commands entered so far.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

PLACEHOLDER = (
    "ip link set dev eth1 down | ip -force link set dev eth0 xdp obj xdp_drop | ethtool -L"
)


class CommandLine(Input):
    """A compact Input with command history; shown on ``:``, hidden after Enter or Escape."""

    DEFAULT_CSS = """
    CommandLine {
        dock: bottom;
        height: 1;
        background: $boost;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Close",
            id="command-line-cancel",
            tooltip="Close the command line without running anything",
        ),
        Binding("up", "history(-1)", "Previous", show=False, id="command-line-previous"),
        Binding("down", "history(1)", "Next", show=False, id="command-line-next"),
    ]

    class Cancelled(Message):
        """Escape: close the command line."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(placeholder=PLACEHOLDER, compact=True, id=id, classes=classes)
        self._history: list[str] = []
        self._cursor = 0

    @property
    def history(self) -> tuple[str, ...]:
        return tuple(self._history)

    def remember(self, command: str) -> None:
        """Add ``command`` to the history (not twice in a row) and reset the walk."""
        if command and (not self._history or self._history[-1] != command):
            self._history.append(command)
        self._cursor = len(self._history)

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    def action_history(self, delta: int) -> None:
        if not self._history:
            return
        self._cursor = max(0, min(len(self._history), self._cursor + delta))
        self.value = self._history[self._cursor] if self._cursor < len(self._history) else ""
        self.cursor_position = len(self.value)
