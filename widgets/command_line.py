"""The ``:`` command line: one line taking the iproute2 / bpftool / ethtool / pktgen subset.

Enter posts Textual's ``Input.Submitted`` (the app hands the text to the simulator and closes
the line); Escape posts :class:`CommandLine.Cancelled`. Up/down walk the commands entered so far.
Tab completes the word being typed (keywords, devices, maps, programs) from the ``complete``
callable the app gives it: a single candidate is taken, several are narrowed to their common
prefix, and pressing Tab again cycles through them. The first candidate shows as ghost text
(→ takes it); every change posts :class:`CommandLine.Candidates` for the hint line above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import events, on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input

PLACEHOLDER = (
    "ip link set dev eth1 down | ip -force link set dev eth0 xdp obj xdp_drop | ethtool -L"
)

HISTORY = 500
"""Commands the line remembers for ↑↓."""

MERGED_ESCAPE = "circumflex_accent"
"""What Escape becomes when the next key follows it too closely: tmux (its ``escape-time``,
500 ms by default) or a busy input thread hands the app ESC and that key as one sequence,
which Textual's parser turns into ``^`` and the key. No command and no key of the app uses
``^``, so the app takes it for Escape; otherwise the Escape is lost and the key after it
(``:``) lands in the dialog Escape was meant to close."""
ESCAPE_KEYS = f"escape,{MERGED_ESCAPE}"
"""The bindings' keys for Escape."""

Completer = Callable[[str], tuple[int, tuple[str, ...]]]
"""line -> (where the word being completed starts, candidates for it)."""


def apply_candidate(line: str, start: int, candidate: str) -> str:
    """``line`` with the word from ``start`` replaced (a space after whole words)."""
    tail = "" if candidate.endswith("=") else " "
    return line[:start] + candidate + tail


def completion_columns(words: tuple[str, ...], width: int, rows: int = 6) -> list[str]:
    """``words`` laid out in columns down then across, at most ``rows`` lines of ``width``
    cells; what does not fit ends with ``(+N more)``."""
    if not words:
        return []
    col_w = max(len(w) for w in words) + 2
    cols = max(1, width // col_w)
    shown = list(words[: rows * cols])
    if len(shown) < len(words):
        shown = shown[: rows * cols - 1]
    n_rows = min(rows, -(-len(shown) // cols))
    lines = []
    for r in range(n_rows):
        cells = [shown[c * n_rows + r] for c in range(cols) if c * n_rows + r < len(shown)]
        lines.append("".join(cell.ljust(col_w) for cell in cells).rstrip())
    if len(shown) < len(words):
        lines[-1] = (lines[-1] + f"  (+{len(words) - len(shown)} more)")[:width]
    return lines


def common_prefix(words: tuple[str, ...]) -> str:
    if not words:
        return ""
    first, last = min(words), max(words)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


class _Ghost(Suggester):
    """The first completion candidate as Input ghost text."""

    def __init__(self, complete: Completer) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._complete = complete

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        start, candidates = self._complete(value)
        if not candidates:
            return None
        return apply_candidate(value, start, candidates[0]).rstrip(" ") or None


class CommandLine(Input):
    """A compact Input with history and completion; shown on ``:``, hidden after Enter/Escape."""

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
        Binding(
            "tab",
            "complete",
            "Complete",
            id="command-line-complete",
            tooltip="Complete the word: keywords, devices, maps, programs",
        ),
    ]

    class Cancelled(Message):
        """Escape: close the command line."""

    @dataclass
    class Candidates(Message):
        """What may come next at the cursor (for the hint line)."""

        candidates: tuple[str, ...]
        line: str

    def __init__(
        self,
        *,
        complete: Completer | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(
            placeholder=PLACEHOLDER,
            compact=True,
            suggester=_Ghost(complete) if complete is not None else None,
            id=id,
            classes=classes,
        )
        self._complete = complete
        self._history: list[str] = []
        self._cursor = 0
        self._cycle: tuple[int, tuple[str, ...], int] | None = None  # start, candidates, index
        self._expected: str | None = None  # the value Tab set (its Changed keeps the cycle)

    @property
    def history(self) -> tuple[str, ...]:
        return tuple(self._history)

    def remember(self, command: str) -> None:
        """Add ``command`` to the history (not twice in a row, the newest :data:`HISTORY`)
        and reset the walk."""
        if command and (not self._history or self._history[-1] != command):
            self._history.append(command)
            del self._history[:-HISTORY]
        self._cursor = len(self._history)

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    async def _on_key(self, event: events.Key) -> None:
        if event.key == MERGED_ESCAPE:  # an Escape, not a ^ to type (see MERGED_ESCAPE)
            event.stop()
            event.prevent_default()
            self.action_cancel()
            return
        await super()._on_key(event)

    def action_history(self, delta: int) -> None:
        if not self._history:
            return
        self._cursor = max(0, min(len(self._history), self._cursor + delta))
        self.value = self._history[self._cursor] if self._cursor < len(self._history) else ""
        self.cursor_position = len(self.value)

    def candidates(self) -> tuple[int, tuple[str, ...]]:
        """(start, candidates) for the text before the cursor."""
        if self._complete is None:
            return len(self.value), ()
        return self._complete(self.value[: self.cursor_position])

    def action_complete(self) -> None:
        """Tab: take the only candidate, narrow to the common prefix, or cycle."""
        if self._cycle is not None:
            start, candidates, index = self._cycle
            index = (index + 1) % len(candidates)
            self._set(apply_candidate(self.value, start, candidates[index]).rstrip(" "))
            self._cycle = (start, candidates, index)
            return
        start, candidates = self.candidates()
        if not candidates:
            return
        if len(candidates) == 1:
            self._set(apply_candidate(self.value[: self.cursor_position], start, candidates[0]))
            return
        prefix = common_prefix(candidates)
        typed = self.value[start : self.cursor_position]
        if len(prefix) > len(typed):
            self._set(self.value[:start] + prefix)
            return
        self._set(apply_candidate(self.value, start, candidates[0]).rstrip(" "))
        self._cycle = (start, candidates, 0)

    def _set(self, value: str) -> None:
        self._expected = value
        self.value = value
        self.cursor_position = len(value)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if event.value != self._expected:
            self._cycle = None
        if self._complete is None:
            return
        _, candidates = self._complete(event.value)
        self.post_message(self.Candidates(candidates, event.value))
