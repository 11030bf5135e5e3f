"""The control plane's clock: timers as plain data in a heap, so the whole simulator state
can be copied for a checkpoint (a SimPy process is a generator and cannot be).

A timer is (time, sequence, kind, argument): ``timeline`` (a position in the timed timeline:
only the next entry waits in the heap, so a copy of the timers costs the same for a timeline
of ten entries or twenty thousand), ``miimon`` (a bond's MII monitor tick), ``carrier`` (a
link back after a driver reset), ``input`` (a logged user command or mode switch, replayed
after a rewind) and ``anchor`` (a traffic source starting: fast mode resolves it finely).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdptui.model.topology import TimelineEntry

NEVER = 1 << 62


@dataclass(order=True, frozen=True)
class Timer:
    at_ns: int
    seq: int
    kind: str = field(compare=False)
    arg: tuple[str | int, ...] = field(compare=False, default=())

    def __deepcopy__(self, memo: dict[int, Any]) -> Timer:
        """Immutable: a copied heap shares its timers."""
        return self


@dataclass
class Timers:
    heap: list[Timer] = field(default_factory=list)
    seq: int = 0

    def add(self, at_ns: int, kind: str, *arg: str | int, seq: int | None = None) -> int:
        if seq is None:
            self.seq += 1
            seq = self.seq
        heapq.heappush(self.heap, Timer(at_ns, seq, kind, tuple(arg)))
        return seq

    def peek(self) -> int:
        return self.heap[0].at_ns if self.heap else NEVER

    def pop(self) -> Timer:
        return heapq.heappop(self.heap)


TimedEntry = tuple[int, int, int]  # when, the sequence number reserved for it, its index


def schedule_timeline(timers: Timers, timeline: Sequence[TimelineEntry]) -> tuple[TimedEntry, ...]:
    """The timed entries of a timeline (``at: step`` ones wait for their step) in the order
    they fire: by time, then file order. Each gets its sequence number now, as if all were in
    the heap, but only the first is: :func:`next_timeline` adds each next one as one fires."""
    timed = []
    for i, entry in enumerate(timeline):
        if entry.step is None:
            timers.seq += 1
            timed.append((entry.at_ns, timers.seq, i))
    timed.sort()
    if timed:
        timers.add(timed[0][0], "timeline", 0, seq=timed[0][1])
    return tuple(timed)


def next_timeline(timers: Timers, timed: Sequence[TimedEntry], fired: Timer) -> int:
    """The timeline index of the timed entry ``fired`` is, after adding the one after it (its
    own time and reserved number: whatever fires at that instant comes in the same order)."""
    position = int(fired.arg[0])
    if position + 1 < len(timed):
        at_ns, seq, _ = timed[position + 1]
        timers.add(at_ns, "timeline", position + 1, seq=seq)
    return timed[position][2]
