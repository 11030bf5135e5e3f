"""The event stream: every poll, flush, drop and command as a JSON-ready record.

Records are dicts with ``t_ns``, ``kind`` and the fields of that kind (docs/design.md, "Event
stream"), numbered by ``seq`` so a reader can ask for what came after the last one it saw.
The stream keeps the newest ``STREAM_MAX`` records, in time order: while exact mode runs it
finds some events late (a ring's drops when its arrivals are admitted, which happens lazily), so
it holds what it emits and releases it sorted by time once everything up to then is known
(``Exact.settle``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

STREAM_MAX = 200_000
STEP_KINDS = ("napi_poll", "tun_write")
"""The records of one data-path step (``Simulator.step_poll``): a NAPI poll, or a tap's
writes (``tun_get_user`` on the writer's CPU)."""

Event = dict[str, Any]


@dataclass
class EventStream:
    records: deque[Event] = field(default_factory=lambda: deque(maxlen=STREAM_MAX))
    seq: int = 0
    held: list[Event] | None = None  # emitted while held: not numbered yet

    def emit(self, event: Event) -> None:
        if self.held is not None:
            self.held.append(event)
            return
        self.seq += 1
        event["seq"] = self.seq
        self.records.append(event)

    def hold(self) -> None:
        """Keep what is emitted from now on until :meth:`release`."""
        if self.held is None:
            self.held = []

    def release(self) -> None:
        """Number and keep the held records in time order (a stable sort: records of one
        instant stay in the order they were emitted)."""
        held, self.held = self.held, None
        for event in sorted(held or (), key=lambda e: int(e["t_ns"])):
            self.emit(event)

    def since(self, seq: int) -> list[Event]:
        """Records numbered above ``seq`` (oldest first)."""
        if not self.records or seq >= self.seq:
            return []
        first = self.records[0]["seq"]
        skip = max(0, seq - first + 1)
        return [self.records[i] for i in range(skip, len(self.records))]

    def truncate(self, seq: int) -> None:
        """Forget the records numbered above ``seq`` (a rewind replays them)."""
        while self.records and self.records[-1]["seq"] > seq:
            self.records.pop()
        self.seq = seq
        self.held = None
