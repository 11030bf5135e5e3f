"""Messages the panels post upwards (they never call the engine)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class DeviceClicked(Message):
    """A device was clicked in a panel; the app toggles its focus."""

    device: str
