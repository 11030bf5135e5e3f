"""The key bar at the bottom: the app's main keys, as many as the line holds, then ``? keys``.

Textual's ``Footer`` recomposes itself (a widget per key) whenever the bindings change, which
they do on every focus change, tab and dialog: a third of a second per key on a loaded 2-core
machine. This bar is one line drawn from a :class:`KeyBarView` the app hands it when a key's
label or state changes (``space`` reads Run or Pause, ``+`` greys out at real time); it is
never clipped: what does not fit is left to ``?``, which lists every key. A click on a key
posts :class:`KeyBar.Pressed` with its action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from xdptui.widgets.guard import guarded_render

MORE = ("?", "all keys")


@dataclass(frozen=True)
class KeyHint:
    key: str  # as shown: "space", ".", "home"
    label: str
    action: str
    enabled: bool = True  # False: shown greyed out (``+`` at the top speed)


@dataclass(frozen=True)
class KeyBarView:
    keys: tuple[KeyHint, ...] = ()


def fit(keys: tuple[KeyHint, ...], width: int, gap: int = 2) -> tuple[KeyHint, ...]:
    """The keys, in order, that fit ``width`` cells; when some do not, those that fit with
    room left for ``? all keys`` (``?`` itself then only there)."""

    def cells(hint: KeyHint) -> int:
        return cell_len(hint.key) + 1 + cell_len(hint.label) + gap

    if sum(cells(k) for k in keys) <= width:
        return keys
    room = width - (cell_len(MORE[0]) + 1 + cell_len(MORE[1]) + gap)
    out: list[KeyHint] = []
    for hint in keys:
        if hint.key == MORE[0]:
            continue  # the bar ends with it
        if cells(hint) > room:
            break
        out.append(hint)
        room -= cells(hint)
    return tuple(out)


class KeyBar(Widget):
    """One line of keys and what they do."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $panel;
        & > .key-bar--key { text-style: bold; color: $accent; }
        & > .key-bar--label { color: $foreground; }
        & > .key-bar--disabled { color: $foreground-muted 50%; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-bar--key", "key-bar--label", "key-bar--disabled"}

    class Pressed(Message):
        """A key of the bar was clicked: run its action."""

        def __init__(self, action: str) -> None:
            super().__init__()
            self.action = action

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._view = KeyBarView()
        self._spans: list[tuple[int, int, str]] = []  # x from, x to, action

    def update_view(self, view: KeyBarView) -> bool:
        """Show ``view``; False (no repaint) when it equals the one on screen."""
        if view == self._view:
            return False
        self._view = view
        self.refresh()
        return True

    @guarded_render
    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key", partial=True)
        label_style = self.get_component_rich_style("key-bar--label", partial=True)
        grey = self.get_component_rich_style("key-bar--disabled", partial=True)
        shown = fit(self._view.keys, self.size.width - 1)
        text = Text(no_wrap=True, overflow="crop")
        text.append(" ")
        self._spans = []
        for hint in shown:
            start = text.cell_len
            text.append(hint.key, key_style if hint.enabled else grey)
            text.append(" " + hint.label + "  ", label_style if hint.enabled else grey)
            self._spans.append((start, text.cell_len - 2, hint.action))
        if len(shown) < len(self._view.keys):
            start = text.cell_len
            text.append(MORE[0], key_style)
            text.append(" " + MORE[1], label_style)
            self._spans.append((start, text.cell_len, "help"))
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, action in self._spans:
            if start <= event.x < end:
                self.post_message(self.Pressed(action))
                return
