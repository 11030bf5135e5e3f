"""The line-API base the dense panels share.

A :class:`LinePanel` holds one frozen view. When a different view arrives (or the width changes)
it draws the whole view once into a list of :class:`~textual.strip.Strip` lines; ``render_line``
then only crops the visible lines to the scroll position. So one widget draws dozens of gauges,
nothing is recomposed, and an equal view costs one ``==``. Optional header lines stay put while
the body scrolls.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from xdptui.widgets.guard import drawing_failed, failure_text

ViewT = TypeVar("ViewT")

Part = tuple[str, Style]
"""A run of text and its style; a line is a sequence of parts."""

FAILURE_STYLE = Style(color="red", bold=True)


def strip(parts: list[Part]) -> Strip:
    """One line from its parts. A tab becomes spaces (to the next multiple of 8 from the
    line's start): written raw, the terminal jumps over cells the line API counted, and what
    was there before stays on screen (``bpftool prog``'s replies have tabs)."""
    out: list[Segment] = []
    column = 0
    for text, style in parts:
        if not text:
            continue
        if "\t" in text:
            text = (" " * column + text).expandtabs(8)[column:]
        out.append(Segment(text, style))
        column += cell_len(text)
    return Strip(out)


class LinePanel(ScrollView, Generic[ViewT]):
    """A scrollable panel drawing a frozen view with the line API.

    Subclasses implement :meth:`build`; callers hand views to :meth:`update_view`.
    """

    DEFAULT_CSS = """
    LinePanel {
        height: 1fr;
        background: $surface;
        scrollbar-size-vertical: 1;
        /* Wide lines scroll sideways (shift+wheel, arrows) without a bar eating a row. */
        scrollbar-size-horizontal: 0;
    }
    """

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._view: ViewT | None = None
        self._head: list[Strip] = []
        self._body: list[Strip] = []
        self._built_width = -1
        self._styles: dict[str, Style] = {}
        self._base_style: Style | None = None

    @property
    def view(self) -> ViewT | None:
        """The view on screen (None before the first one)."""
        return self._view

    def update_view(self, view: ViewT) -> bool:
        """Show ``view``; returns False (and repaints nothing) when it equals the current one."""
        if view == self._view:
            return False
        self._view = view
        self._rebuild()
        return True

    def build(self, view: ViewT, width: int) -> tuple[list[Strip], list[Strip]]:
        """Draw ``view`` for a panel ``width`` cells wide: (fixed header lines, body lines)."""
        raise NotImplementedError

    def style_of(self, component: str) -> Style:
        """The rich style of a ``COMPONENT_CLASSES`` part on this panel's background.

        Cached until the next style update: ``rich_style`` walks the DOM, and a build asks for
        the same few styles thousands of times.
        """
        style = self._styles.get(component)
        if style is None:
            if self._base_style is None:
                self._base_style = self.rich_style
            style = self._base_style + self.get_component_rich_style(component, partial=True)
            self._styles[component] = style
        return style

    def _rebuild(self) -> None:
        if self._view is None or not self.is_mounted:
            return
        if not all(node.display for node in self.ancestors_with_self):
            # In a hidden tab: draw when it is shown and gets its size (on_resize).
            self._built_width = -1
            return
        old_head, old_body = self._head, self._body
        head, body = self._build_guarded(self._view)
        self._head, self._body = head, body
        same_width = self._built_width == self.size.width
        self._built_width = self.size.width
        widest = max((line.cell_length for line in (*head, *body)), default=0)
        # Never narrower than the panel (a virtual size change costs a layout pass, and the width
        # of numbers changes from frame to frame), unless the panel is as wide as its content.
        width_rule = self.styles.width
        if width_rule is None or not width_rule.is_auto:
            widest = max(widest, self.size.width)
        virtual = Size(widest, len(head) + len(body))
        if virtual != self.virtual_size:
            self.virtual_size = virtual
            self.refresh()
        elif same_width and len(head) == len(old_head) and len(body) == len(old_body):
            self._refresh_changed(old_head, old_body)
        else:
            self.refresh()

    def _build_guarded(self, view: ViewT) -> tuple[list[Strip], list[Strip]]:
        """:meth:`build` for the panel's width; a failure is logged and drawn as one line."""
        try:
            width = self.size.width
            head, body = self.build(view, width)
            if len(head) + len(body) > self.size.height and not self.show_vertical_scrollbar:
                # The vertical scrollbar is about to take a column: draw for what will be left.
                width = max(width - self.styles.scrollbar_size_vertical, 0)
                head, body = self.build(view, width)
        except Exception as exc:
            drawing_failed(self, exc)
            return [], [strip([(failure_text(exc), FAILURE_STYLE)])]
        return head, body

    def show_failure(self, exc: BaseException) -> None:
        """Draw one line saying the view could not be made (the caller has logged it)."""
        self._view = None
        self._head, self._body = [], [strip([(failure_text(exc), FAILURE_STYLE)])]
        self.virtual_size = Size(self.size.width, 1)
        self.refresh()

    def _refresh_changed(self, old_head: list[Strip], old_body: list[Strip]) -> None:
        """Repaint only the visible lines whose strips changed (compositing costs per line)."""
        width = max(self.virtual_size.width, self.size.width)
        rows = [y for y, (a, b) in enumerate(zip(old_head, self._head, strict=True)) if a != b]
        top = round(self.scroll_offset.y)
        first, last = top, top + max(self.size.height - len(self._head), 0)
        for index in range(first, min(last, len(self._body))):
            if old_body[index] != self._body[index]:
                rows.append(len(self._head) + index - top)
        if rows:
            self.refresh(*(Region(0, y, width, 1) for y in rows))

    def on_mount(self) -> None:
        self._rebuild()

    def on_resize(self, event: events.Resize) -> None:
        if self.size.width != self._built_width:
            self._rebuild()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._base_style = None
        # Component styles are baked into the strips: a theme change needs a redraw.
        if self._built_width >= 0:
            self._rebuild()

    def body_index(self, y: int) -> int | None:
        """The body line under content row ``y`` (None on a header line or past the end)."""
        if y < len(self._head):
            return None
        index = y - len(self._head) + round(self.scroll_offset.y)
        return index if 0 <= index < len(self._body) else None

    def render_line(self, y: int) -> Strip:
        try:
            return self._render_line(y)
        except Exception as exc:
            drawing_failed(self, exc)
            return Strip.blank(self.size.width)

    def _render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y < len(self._head):
            line = self._head[y]
        else:
            index = y - len(self._head) + scroll_y
            if index >= len(self._body):
                return Strip.blank(width, self._background())
            line = self._body[index]
        return line.crop_extend(scroll_x, scroll_x + width, self._background())

    def _background(self) -> Style:
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style
