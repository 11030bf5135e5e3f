"""The command palette with page keys that cannot take the app down."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.command import CommandList, CommandPalette


class SafeCommandPalette(CommandPalette):
    """Textual 8.2.8's palette with PageDown / PageUp that cannot take the app down.

    ``OptionList._move_page`` looks the highlighted option up in a line cache that is only
    filled while the list has a visible region; after a resize that leaves it none (or before
    its first layout) the lookup raises ``KeyError: 0`` and the app exits. Here a page move the
    list cannot make falls back to moving the highlight by a page of options.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pagedown", "safe_page(1)", "Next page", show=False),
        Binding("pageup", "safe_page(-1)", "Previous page", show=False),
    ]

    def action_safe_page(self, direction: int) -> None:
        commands = self.query_one(CommandList)
        count = commands.option_count
        if not count:
            return
        try:
            if direction > 0:
                commands.action_page_down()  # type: ignore[no-untyped-call]
            else:
                commands.action_page_up()  # type: ignore[no-untyped-call]
        except (KeyError, IndexError):
            page = max(commands.scrollable_content_region.height, 1)
            current = commands.highlighted or 0
            commands.highlighted = max(0, min(count - 1, current + direction * page))
