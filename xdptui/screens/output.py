"""A command's long reply (``help``, ``ethtool -S``, ``ip -s link``, ``bpftool``) in a pane
that scrolls, instead of lines scrolling out of the small command log."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, Vertical
from textual.widgets import Static

from xdptui.screens.dialogs import DIALOG_CSS, Dialog
from xdptui.widgets.command_line import ESCAPE_KEYS

LONG_REPLY_LINES = 4
"""A reply longer than this opens in the output pane (the log keeps it too)."""
LOG_INDENT = 24
"""Cells of a log line before a reply's text (time, mark, the panel's border and padding)."""


def opens_pane(reply: str, width: int) -> bool:
    """A reply the Commands panel can't show whole: more than :data:`LONG_REPLY_LINES` lines,
    or a line wider than the panel (a one-line ``ip -j link``) at a screen ``width`` wide."""
    lines = reply.expandtabs(8).splitlines()
    return len(lines) > LONG_REPLY_LINES or any(len(line) > width - LOG_INDENT for line in lines)


class OutputScreen(Dialog):
    """One command and its whole reply, scrollable; escape, q or enter closes it."""

    DEFAULT_CSS = (
        DIALOG_CSS
        + """
    OutputScreen #dialog { height: 90%; max-width: 130; }
    OutputScreen #output-scroll { height: 1fr; }
    OutputScreen #output-text { width: auto; }
    OutputScreen #output-text.-one-line { width: 1fr; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(f"{ESCAPE_KEYS},q,enter", "cancel", "Close", id="output-close", tooltip="Close")
    ]

    def __init__(self, command: str, reply: str, ok: bool = True) -> None:
        super().__init__()
        self.command = command
        self.reply = reply
        self.ok = ok

    def compose(self) -> ComposeResult:
        lines = self.reply.count("\n") + 1
        with Vertical(id="dialog"):
            mark = "✓" if self.ok else "✗"
            yield Static(f"{mark} $ {self.command}", classes="dialog-title", markup=False)
            with ScrollableContainer(id="output-scroll"):
                # One long line (ip -j link) wraps; a table keeps its lines and scrolls across.
                one = "-one-line" if lines == 1 else ""
                yield Static(self.reply, id="output-text", markup=False, classes=one)
            yield Static(
                f"{lines} lines · ↑↓ pgup pgdn scroll · esc, q or enter closes",
                classes="dialog-help",
                markup=False,
            )

    def on_mount(self) -> None:
        self.query_one("#output-scroll", ScrollableContainer).focus()
