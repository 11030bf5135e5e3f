"""The one-line header: topology, simulated time, clock speed, pause and lag, seed.

Everything on it is a function of the :class:`~widgets.project.HeaderView`; nothing reads the
wall clock, so a paused app renders the same line every time.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from xdptui.widgets.format import format_rtf, format_sim_time, format_speed, format_window
from xdptui.widgets.guard import guarded_render
from xdptui.widgets.project import HeaderView

REAL_TIME_NS_PER_S = 1_000_000_000


class SimHeader(Widget):
    """``dual-port bond hairpin │ t 1.234567ms │ 10 µs/s exact │ PAUSED │ rates/1ms │ seed 7``.

    The time is ``Frame.t_ns``: the engine's clock. The speed is followed by the granularity
    the engine runs at (``exact``: every poll is an event, at slow speeds; ``fast``: steps of
    many polls, at real time). ``RTF`` appears only while the app cannot keep up with the
    requested speed and shows the achieved simulated/real time ratio. ``rates/1ms``: every rate
    on screen is over that window of simulated time.
    """

    DEFAULT_CSS = """
    SimHeader {
        dock: top;
        height: 1;
        background: $panel;
        color: $foreground;
        & > .sim-header--name { text-style: bold; color: $accent; }
        & > .sim-header--time { text-style: bold; }
        & > .sim-header--speed { color: $text-secondary; }
        & > .sim-header--paused { background: $warning; color: $background; text-style: bold; }
        & > .sim-header--behind { background: $error; color: $background; text-style: bold; }
        & > .sim-header--dim { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sim-header--name",
        "sim-header--time",
        "sim-header--speed",
        "sim-header--paused",
        "sim-header--behind",
        "sim-header--dim",
    }

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._view: HeaderView | None = None

    @property
    def view(self) -> HeaderView | None:
        return self._view

    def update_view(self, view: HeaderView) -> bool:
        """Show ``view``; False (no repaint) when it equals the one on screen."""
        if view == self._view:
            return False
        self._view = view
        self.refresh()
        return True

    def _style(self, part: str) -> Style:
        return self.get_component_rich_style(f"sim-header--{part}", partial=True)

    @guarded_render
    def render(self) -> Text:
        view = self._view
        text = Text(no_wrap=True, overflow="ellipsis")
        if view is None:
            text.append(" xdptui", self._style("name"))
            return text
        sep = (" │ ", self._style("dim"))
        parts: list[tuple[str, Style]] = [
            (f" {view.name}", self._style("name")),
            sep,
            ("t ", self._style("dim")),
            (format_sim_time(view.t_ns), self._style("time")),
            sep,
            (format_speed(view.speed_ns_per_s), self._style("speed")),
        ]
        if view.speed_ns_per_s == REAL_TIME_NS_PER_S:
            parts.append((" (real time)", self._style("dim")))
        parts.append((" exact" if view.exact else " fast", self._style("dim")))
        if view.paused:
            parts += [sep, (" PAUSED ", self._style("paused"))]
        if view.rtf is not None:
            parts += [sep, (f" RTF {format_rtf(view.rtf)} ", self._style("behind"))]
        window = format_window(view.window_ns) if view.window_ns > 0 else "-"
        parts += [sep, (f"rates/{window}", self._style("dim"))]
        parts += [sep, (f"seed {view.seed}", self._style("dim"))]
        parts[0] = (_fit_name(parts, self.size.width), parts[0][1])
        for chunk, style in parts:
            text.append(chunk, style)
        return text


def _fit_name(parts: list[tuple[str, Style]], width: int) -> str:
    """The topology's name (the first part), shortened with an ellipsis so that the parts after
    it -- the time, the speed, the rates' window and the seed -- fit in ``width`` whole; a name
    keeps at least 8 cells."""
    name = parts[0][0]
    rest = sum(cell_len(chunk) for chunk, _ in parts[1:])
    room = width - rest
    if width <= 0 or cell_len(name) <= room:
        return name
    keep = max(room - 1, 8)
    return set_cell_size(name, keep).rstrip() + "…"
