"""The control plane's clock: timers as plain data in a heap, so the whole simulator state
can be copied for a checkpoint (a SimPy process is a generator and cannot be).

A timer is (time, sequence, kind, argument): ``timeline`` (an index into the topology's
timeline), ``miimon`` (a bond's MII monitor tick), ``carrier`` (a link back after a driver
reset), ``input`` (a logged user command or mode switch, replayed after a rewind) and
``anchor`` (a traffic source starting: fast mode resolves it finely).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

NEVER = 1 << 62


@dataclass(order=True, frozen=True)
class Timer:
    at_ns: int
    seq: int
    kind: str = field(compare=False)
    arg: tuple[str | int, ...] = field(compare=False, default=())


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
