"""The question asked before a topology's Python programs run (DESIGN.md, "Trust").

Opened without ``--trust`` on a file that names Python programs, the app first shows this screen:
the resolved file of every program and where the topology names it, and two buttons. Continue
agrees (the simulator is built and the programs run); Quit leaves without running anything.
Nothing is imported before the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Label, Static

TRUST_CSS = """
TrustScreen {
    align: center middle;
}
#trust {
    width: 90%;
    max-width: 120;
    height: auto;
    max-height: 90%;
    border: thick $warning 70%;
    background: $surface;
    padding: 0 1;
}
#trust > .trust-title { text-style: bold; color: $warning; width: 1fr; }
#trust > .trust-help { color: $foreground-muted; width: 1fr; margin: 1 0 0 0; }
#trust-programs { height: auto; max-height: 20; margin: 1 0 0 0; }
#trust-programs > Static { width: 1fr; }
#trust Horizontal { height: auto; margin: 1 0 0 0; }
#trust Button { margin: 0 1 0 0; }
"""


class TrustScreen(Screen[bool]):
    """Continue (True) or Quit (False) on running the listed Python programs."""

    DEFAULT_CSS = TRUST_CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "quit_unsafe", "Quit", id="trust-quit", tooltip="Run nothing, leave"),
    ]

    def __init__(self, path: str, programs: Sequence[str]) -> None:
        super().__init__()
        self.path = path
        self.programs = tuple(programs)

    def compose(self) -> ComposeResult:
        count = len(self.programs)
        with Vertical(id="trust"):
            yield Label(
                f"{self.path} runs {count} Python file{'s' if count != 1 else ''}",
                classes="trust-title",
                markup=False,
            )
            yield Static(
                "A topology is a file anyone can share, but these programs are Python: they run "
                "with your rights, like any script. Read them before you continue.",
                classes="trust-help",
                markup=False,
            )
            with VerticalScroll(id="trust-programs"):
                for line in self.programs:
                    yield Static(line, markup=False)
            yield Static(
                "Continue runs them; Quit leaves without running anything. "
                "(--trust on the command line answers Continue; xdptui check lists them.)",
                classes="trust-help",
                markup=False,
            )
            with Horizontal():
                yield Button("Quit", id="trust-no", variant="primary")
                yield Button("Continue: run them", id="trust-yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#trust-no", Button).focus()

    @on(Button.Pressed, "#trust-yes")
    def _agreed(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#trust-no")
    def _refused(self) -> None:
        self.dismiss(False)

    def action_quit_unsafe(self) -> None:
        self.dismiss(False)
