"""The lesson panel: the topology's guided walkthrough, one step at a time.

Shows the lesson's title, where the step is (``step 2/5``), its text wrapped to the panel, and
the commands the step runs, each with how it went the last time (``✓``, or ``✗`` with the
errno and the reply). ``n``/``p`` move between steps, ``r`` runs the shown step's commands (the
same strings a user types), ``L`` picks another lesson.
"""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from xdptui.widgets.guard import guarded_render
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project_lesson import LessonView

MARKS = {"pending": "·", "ok": "✓", "failed": "✗"}


class LessonPanel(LinePanel[LessonView]):
    """One step of a lesson: text and commands with their outcomes."""

    HELP = """\
## Lesson

A topology can carry `lessons:`, each an ordered list of steps with a text and the commands
the step runs. `n` shows the next step, `p` the previous one, `r` runs the shown step: its
commands go to the simulator exactly as if typed (the event log marks them §), so a teacher
can project the walkthrough and a student can repeat it. `L` picks another lesson.
"""

    DEFAULT_CSS = """
    LessonPanel {
        & > .lesson-panel--title { text-style: bold; color: $accent; }
        & > .lesson-panel--position { color: $foreground-muted; }
        & > .lesson-panel--text { }
        & > .lesson-panel--heading { text-style: bold; color: $foreground-muted; }
        & > .lesson-panel--command { text-style: bold; }
        & > .lesson-panel--pending { color: $foreground-muted; }
        & > .lesson-panel--ok { color: $success; }
        & > .lesson-panel--failed { color: $error; text-style: bold; }
        & > .lesson-panel--keys { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lesson-panel--title",
        "lesson-panel--position",
        "lesson-panel--text",
        "lesson-panel--heading",
        "lesson-panel--command",
        "lesson-panel--pending",
        "lesson-panel--ok",
        "lesson-panel--failed",
        "lesson-panel--keys",
    }

    def build(self, view: LessonView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        if view.lesson < 0:
            text = (
                "This topology has no lessons. A topology file can carry them: "
                "lessons: [{title: ..., steps: [{text: ..., commands: [...]}]}]"
            )
            return [], [strip([(line, s("lesson-panel--pending"))]) for line in _wrap(text, width)]
        head = [
            strip(
                [
                    (view.titles[view.lesson], s("lesson-panel--title")),
                    (
                        f"   lesson {view.lesson + 1}/{len(view.titles)}"
                        f" · step {view.step + 1}/{view.steps}"
                        if view.steps
                        else "   (no steps)",
                        s("lesson-panel--position"),
                    ),
                ]
            )
        ]
        body: list[Strip] = []
        for paragraph in view.text.split("\n"):
            for line in _wrap(paragraph, width):
                body.append(strip([(line, s("lesson-panel--text"))]))
        if view.commands:
            body.append(strip([("", s("lesson-panel--text"))]))
            body.append(strip([("commands (r runs them):", s("lesson-panel--heading"))]))
        for row in view.commands:
            style = s(f"lesson-panel--{row.status}")
            parts: list[Part] = [
                (f"  {MARKS.get(row.status, '·')} ", style),
                ("$ " + row.command, s("lesson-panel--command")),
            ]
            body.append(strip(parts))
            if row.status == "failed":
                reply = row.reply.splitlines()[0] if row.reply else ""
                body.append(strip([(f"      {row.errno or 'error'}  {reply}", style)]))
        body.append(strip([("", s("lesson-panel--text"))]))
        body.append(
            strip(
                [
                    ("n next · p previous · r run this step · L lessons", s("lesson-panel--keys")),
                ]
            )
        )
        return head, body


def _wrap(text: str, width: int) -> list[str]:
    if not text.strip():
        return [""]
    return textwrap.wrap(text, width=max(width - 1, 20)) or [""]


class LessonBar(Widget):
    """The shown lesson step above every other tab, so a class sees the step's text next to its
    effect: ``§ lesson · step 2/3 Pull eth1's cable. ...``. Two lines (one on a short
    terminal); ``e`` expands it to the whole text and back (``-expanded``).
    """

    DEFAULT_CSS = """
    LessonBar {
        height: auto;
        max-height: 2;
        background: $boost;
        padding: 0 1;
        & > .lesson-bar--mark { color: $accent; text-style: bold; }
        & > .lesson-bar--text { }
        & > .lesson-bar--keys { color: $foreground-muted; }
    }
    LessonBar.-expanded { max-height: 16; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lesson-bar--mark",
        "lesson-bar--text",
        "lesson-bar--keys",
    }

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._view: LessonView | None = None

    @property
    def view(self) -> LessonView | None:
        return self._view

    @property
    def expanded(self) -> bool:
        return self.has_class("-expanded")

    def toggle(self) -> None:
        """``e``: the whole text, or back to two lines."""
        self.toggle_class("-expanded")
        self.refresh(layout=True)

    def update_view(self, view: LessonView) -> bool:
        """Show ``view``; False (no repaint) when it equals the one on screen."""
        if view == self._view:
            return False
        self._view = view
        self.refresh(layout=True)
        return True

    def lines(self, width: int, rows: int) -> list[Text]:
        """The step wrapped to ``width``; cut to ``rows`` lines (ending in the key that shows
        the rest) unless expanded."""
        view = self._view
        if view is None or view.lesson < 0 or not view.steps:
            return []
        style = self.get_component_rich_style
        keys = "n next · p back · e shorter" if self.expanded else "n next · p back · 6 lesson"
        text = Text.assemble(
            (
                f"§ {view.titles[view.lesson]} · step {view.step + 1}/{view.steps}  ",
                style("lesson-bar--mark", partial=True),
            ),
            (" ".join(view.text.split()), style("lesson-bar--text", partial=True)),
            (f"  ({keys})", style("lesson-bar--keys", partial=True)),
        )
        wrapped = list(text.wrap(self.app.console, max(width, 20)))
        if self.expanded or len(wrapped) <= rows:
            return wrapped
        shown = wrapped[:rows]
        more = Text(" … e: read all", style("lesson-bar--keys", partial=True))
        last = shown[-1]
        last.truncate(max(0, width - len(more.plain)))
        last.append_text(more)
        return shown

    @guarded_render
    def render(self) -> Text:
        rows = (
            16
            if self.expanded
            else int(self.styles.max_height.value)
            if self.styles.max_height
            else 2
        )
        lines = self.lines(self.size.width, max(1, rows))
        return Text("\n").join(lines)
