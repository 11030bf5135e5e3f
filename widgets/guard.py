"""A panel that fails to draw is logged and shows why; the app keeps running.

A bug in one panel's drawing (an unexpected view, a division by zero on a strange topology)
must not take the whole simulation down with a traceback screen: the panel draws one line
saying what failed, the exception goes to the ``xdptui`` logger (and Textual's log), and the
user gets one notification per panel and kind of failure.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable
from typing import TypeVar

from rich.text import Text
from textual.widget import Widget

__all__ = ["LOG", "drawing_failed", "failure_text", "guarded_render"]

LOG = logging.getLogger("xdptui")

W = TypeVar("W", bound=Widget)

_NOTIFIED: weakref.WeakKeyDictionary[Widget, set[str]] = weakref.WeakKeyDictionary()
"""The exception types each widget has told the user about already."""


def failure_text(exc: BaseException) -> str:
    """The line a failed panel shows instead of its content."""
    detail = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"this panel failed to draw ({type(exc).__name__}{': ' + detail if detail else ''})"


def drawing_failed(widget: Widget, exc: BaseException) -> None:
    """Log ``exc`` with its traceback and tell the user once per panel and exception type."""
    name = widget.id or type(widget).__name__
    LOG.error("panel %s failed to draw", name, exc_info=exc)
    widget.log.error(f"panel {name} failed to draw: {exc!r}")
    seen = _NOTIFIED.setdefault(widget, set())
    if type(exc).__name__ in seen:
        return
    seen.add(type(exc).__name__)
    widget.app.notify(
        f"The {name} panel failed to draw ({type(exc).__name__}); the simulation runs on.",
        title="Drawing error",
        severity="error",
        timeout=8,
    )


def guarded_render(render: Callable[[W], Text]) -> Callable[[W], Text]:
    """For a widget's ``render``: on an exception, log it and draw :func:`failure_text`."""

    @functools.wraps(render)
    def wrapper(self: W) -> Text:
        try:
            return render(self)
        except Exception as exc:
            drawing_failed(self, exc)
            return Text(failure_text(exc), style="bold red", no_wrap=True, overflow="ellipsis")

    return wrapper
