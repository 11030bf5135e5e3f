"""Pacing: turning real elapsed time into bounded simulation work.

The app's frame timer calls :meth:`Pacer.tick` once per frame; the pacer advances the simulator
by ``speed * real elapsed`` in chunks sized from the measured cost of earlier chunks and stops at
the tick's wall-clock budget. What could not be done is dropped, not owed, so the app never
freezes input; ``rtf`` then reports the achieved real-time factor for the header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from xdptui.model.units import CLOCK_SPEEDS

SPEEDS: tuple[int, ...] = CLOCK_SPEEDS
"""Clock speeds in simulated ns per real second, slow motion (1 µs/s) to real time (1 s/s)."""

REAL_TIME = SPEEDS[-1]
BEHIND = 0.95  # below this share of the requested speed the header shows the RTF


class Advancing(Protocol):
    """The part of the simulator the pacer drives."""

    def advance(self, dt_ns: int) -> None: ...


class Pacer:
    """Turns real elapsed time into bounded simulation work.

    ``tick`` advances the simulator by ``speed * elapsed`` (elapsed capped at ``MAX_STALL_S`` so a
    stall is not made up in one go), in chunks whose size is re-estimated from the cost of the
    previous ones so that one chunk takes about a quarter of the budget. It stops at the budget;
    the shortfall is dropped. ``behind`` and ``rtf`` report what was achieved recently.
    """

    MAX_STALL_S = 0.25
    MIN_CHUNK_NS = 1_000
    MAX_CHUNK_NS = 1_000_000_000
    FIRST_CHUNK_NS = 100_000
    DECAY = 0.8  # weight of the past in the achieved-speed average (per tick)

    def __init__(self, clock: Callable[[], float], fps: float, budget_share: float = 0.5) -> None:
        self._clock = clock
        self.budget_s = budget_share / fps
        self._last: float | None = None
        self._carry = 0.0
        self._chunk_ns = self.FIRST_CHUNK_NS
        self._cost_s_per_ns: float | None = None
        self._done = 0.0
        self._wanted = 0.0
        self._speed = REAL_TIME

    def reset(self) -> None:
        """Start measuring from now (on resume or a speed change); forget the lag."""
        self._last = self._clock()
        self._carry = 0.0
        self._done = self._wanted = 0.0

    @property
    def achieved(self) -> float:
        """Recent share of the requested speed actually simulated (1.0 = keeping up)."""
        return self._done / self._wanted if self._wanted > 0 else 1.0

    @property
    def behind(self) -> bool:
        return self.achieved < BEHIND

    @property
    def rtf(self) -> float:
        """Recent simulated time per real time."""
        return self.achieved * self._speed / REAL_TIME

    def tick(self, sim: Advancing, speed_ns_per_s: int) -> int:
        """Advance ``sim`` for the real time since the last tick; returns simulated ns done."""
        now = self._clock()
        if self._last is None:
            self.reset()
            return 0
        if speed_ns_per_s != self._speed:
            self._speed = speed_ns_per_s
            self._done = self._wanted = 0.0
        real = max(0.0, now - self._last)
        self._last = now
        wanted = speed_ns_per_s * real
        target = speed_ns_per_s * min(real, self.MAX_STALL_S) + self._carry
        want = int(target)
        self._carry = target - want
        done = self._advance(sim, want, now + self.budget_s)
        if done < want:
            self._carry = 0.0
        if wanted > 0:
            self._done = self._done * self.DECAY + done
            self._wanted = self._wanted * self.DECAY + wanted
        return done

    def _advance(self, sim: Advancing, want: int, deadline: float) -> int:
        """Advance up to ``want`` ns before ``deadline``.

        The whole rest goes in one call when the measured cost says it fits the time left
        (each call costs the engine at least one step, so fewer calls are cheaper); otherwise
        a chunk that should take half the time left, so the deadline is overshot by little.
        """
        done = 0
        start = self._clock()
        while done < want:
            rest = want - done
            cost = self._cost_s_per_ns
            left = deadline - start
            if cost is None:
                chunk = min(rest, self._chunk_ns)
            elif cost * rest <= left:
                chunk = rest
            else:
                chunk = min(rest, max(self.MIN_CHUNK_NS, int(left / 2 / cost)))
            sim.advance(chunk)
            end = self._clock()
            done += chunk
            spent = end - start
            if spent > 0:
                per_ns = spent / chunk
                cost = per_ns if cost is None else 0.7 * cost + 0.3 * per_ns
                self._cost_s_per_ns = cost
                self._chunk_ns = max(
                    self.MIN_CHUNK_NS, min(self.MAX_CHUNK_NS, int(self.budget_s / 4 / cost))
                )
            elif cost is None:
                self._chunk_ns = min(self.MAX_CHUNK_NS, self._chunk_ns * 2)  # too cheap to see
            start = end
            if end >= deadline:
                break
        return done
