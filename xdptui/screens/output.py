"""A command's long reply (``help``, ``ethtool -S``, ``ip -s link``, ``bpftool``) in a pane
that scrolls, instead of lines scrolling out of the small command log."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from xdptui.screens.dialogs import DIALOG_CSS, Dialog
from xdptui.widgets.command_line import ESCAPE_KEYS

LONG_REPLY_LINES = 4
"""A reply longer than this opens in the output pane (the log keeps it too)."""


class OutputScreen(Dialog):
    """One command and its whole reply, scrollable; escape, q or enter closes it."""

    DEFAULT_CSS = (
        DIALOG_CSS
        + """
    OutputScreen #dialog { height: 90%; max-width: 130; }
    OutputScreen #output-scroll { height: 1fr; }
    OutputScreen #output-text { width: auto; }
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
            with VerticalScroll(id="output-scroll"):
                yield Static(self.reply, id="output-text", markup=False)
            yield Static(
                f"{lines} lines · ↑↓ pgup pgdn scroll · esc, q or enter closes",
                classes="dialog-help",
                markup=False,
            )

    def on_mount(self) -> None:
        self.query_one("#output-scroll", VerticalScroll).focus()
