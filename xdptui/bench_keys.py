"""``xdptui bench keys``: how long each key takes in the app, as a lecturer presses them.

The app runs headless at a terminal size on a topology, as ``xdptui FILE`` opens it; a fixed
script of keys (stepping, stepping back, running and pausing, every tab, the event list's keys,
command lines, a restart, the lesson keys) is pressed one at a time, each after the app has gone
quiet. For each key two figures, in wall milliseconds:

* ``shown``: from the key to the last screen update it caused (the result on screen, work done
  off the event loop included);
* ``blocked``: the longest the event loop was busy in that time (the app answers no other key
  meanwhile; Textual draws between messages).

Never a timed test: figures for the README and the closing note.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

QUIET_S = 0.25  # no screen update and an idle loop for this long: the key is done
TICK_S = 0.001
LIMIT_S = 30.0

SCRIPT: tuple[tuple[str, tuple[str, ...]], ...] = (
    (".", ("full_stop",)),
    (".", ("full_stop",)),
    (".", ("full_stop",)),
    (",", ("comma",)),
    (",", ("comma",)),
    ("space (run 1 s)", ("space", "wait:1000")),
    ("space (pause)", ("space",)),
    (", after running", ("comma",)),
    ("1", ("1",)),
    ("2", ("2",)),
    ("3", ("3",)),
    ("4", ("4",)),
    ("5", ("5",)),
    ("6", ("6",)),
    ("7", ("7",)),
    ("1", ("1",)),
    ("k", ("k",)),
    ("k", ("k",)),
    ("]", ("right_square_bracket",)),
    (":", ("colon",)),
    ("Enter: ip link show", ("type:ip link show", "enter")),
    ("escape (pane)", ("escape",)),
    (":", ("colon",)),
    ("Enter: ethtool -L eth0 combined 4", ("type:ethtool -L eth0 combined 4", "enter")),
    (":", ("colon",)),
    ("Enter: bpftool prog", ("type:bpftool prog", "enter")),
    ("escape", ("escape",)),
    ("l (picker)", ("l",)),
    ("escape", ("escape",)),
    ("?", ("question_mark",)),
    ("escape", ("escape",)),
    ("n", ("n",)),
    ("p", ("p",)),
    ("+ (to real time)", ("plus", "plus", "plus", "plus", "plus")),
    ("space (run 1 s)", ("space", "wait:1000")),
    ("space (pause)", ("space",)),
    (", after real time", ("comma",)),
    (".", ("full_stop",)),
    ("home", ("home",)),
)
"""(label, keys): ``type:TEXT`` types TEXT unmeasured, ``wait:MS`` lets the app run that long
(not counted), the other keys are pressed and measured together."""


@dataclass
class KeyTime:
    label: str
    shown_ms: float
    blocked_ms: float


class _Watch:
    """The app's screen updates and the event loop's longest busy stretch."""

    def __init__(self, app: Any) -> None:
        self.last_update = time.perf_counter()
        self.max_gap = 0.0
        self._last_tick = time.perf_counter()
        display = app._display

        def watched(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is not None:
                self.last_update = time.perf_counter()

        app._display = watched

    def reset(self) -> None:
        self.max_gap = 0.0
        self._last_tick = time.perf_counter()

    async def ticker(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - self._last_tick - TICK_S)
            self._last_tick = now


async def _quiet(app: Any, watch: _Watch, since: float) -> None:
    """Until the screen has not changed for QUIET_S, no background job runs and the loop is
    idle."""
    while time.perf_counter() - since < LIMIT_S:
        await asyncio.sleep(0.02)
        now = time.perf_counter()
        busy = getattr(app, "busy", False)
        if not busy and now - watch.last_update >= QUIET_S and now - since >= QUIET_S:
            return


async def _press(app: Any, key: str) -> None:
    from textual import events

    if len(key) == 1 and not key.isalnum():
        from textual.keys import _character_to_key

        key = _character_to_key(key)
    char = {"full_stop": ".", "comma": ",", "colon": ":", "space": " ", "plus": "+"}.get(
        key, key if len(key) == 1 else None
    )
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


async def measure(path: str, size: tuple[int, int]) -> list[KeyTime]:
    from xdptui.app import make_app

    app = make_app(path)
    out: list[KeyTime] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        watch = _Watch(app)
        ticker = asyncio.create_task(watch.ticker())
        try:
            for label, keys in SCRIPT:
                measured = [k for k in keys if not k.startswith(("type:", "wait:"))]
                for key in keys:
                    if key.startswith("type:"):
                        await pilot.press(*key.removeprefix("type:"))
                        await pilot.pause()
                await _quiet(app, watch, time.perf_counter())
                watch.reset()
                start = time.perf_counter()
                watch.last_update = start
                for key in measured:
                    await _press(app, key)
                waits = [float(k.removeprefix("wait:")) / 1000 for k in keys if "wait:" in k]
                if waits:  # running: how long the loop was busy at a time, not a result
                    await asyncio.sleep(sum(waits))
                    out.append(KeyTime(label, -1.0, watch.max_gap * 1000))
                    continue
                await _quiet(app, watch, start)
                shown = max(0.0, watch.last_update - start)
                out.append(KeyTime(label, shown * 1000, watch.max_gap * 1000))
        finally:
            ticker.cancel()
    return out


def bench_keys(path: str, size: tuple[int, int], as_json: bool) -> int:
    """Press the script's keys on ``path`` at ``size`` and print each key's figures."""
    times = asyncio.run(measure(path, size))
    if as_json:
        print(json.dumps([t.__dict__ for t in times]))
        return 0
    print(f"{'key':<38} {'shown ms':>9} {'blocked ms':>11}")
    for t in times:
        shown = "running" if t.shown_ms < 0 else f"{t.shown_ms:.0f}"
        print(f"{t.label:<38} {shown:>9} {t.blocked_ms:>11.0f}")
    worst = max(times, key=lambda t: t.blocked_ms)
    print(f"longest block: {worst.blocked_ms:.0f} ms ({worst.label})")
    return 0
