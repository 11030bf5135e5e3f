"""The key-masher: random keys and terminal resizes against the real app, which must stay up.

The suite runs a few seconds of it (tests/test_app_survives.py). The long run is a command:

    .venv/bin/python tests/keymash.py --keys 5000 topologies/dual_port.yaml topologies/tun_vm.yaml

It prints, per topology, the keys pressed, resizes, screens opened, commands the engine saw,
simulated time reached and wall time, and exits 1 if the app went down. Every key of the app's
own bindings (but quit), the dialogs' and the palette's keys, and printable characters (so the
command line gets garbage to parse) are drawn with a fixed seed; ``q``/``ctrl+q``/``ctrl+c`` are
left out, since quitting is not a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import string
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from textual.pilot import Pilot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xdptui.app import APP_COMMANDS, XdpApp, make_app

QUIT_KEYS = {"q", "ctrl+q", "ctrl+c"}
NAVIGATION = [
    "escape", "enter", "tab", "shift+tab", "up", "down", "left", "right", "pageup", "pagedown",
    "home", "end", "backspace", "delete", "ctrl+p", "space", "colon",
]  # fmt: skip
BINDINGS = sorted({k for c in APP_COMMANDS for k in c.key.split(",") if k not in QUIT_KEYS})
PUNCTUATION = ["minus", "underscore", "full_stop", "slash", "equals_sign", "colon", "comma"]
PRINTABLE = [c for c in string.ascii_letters + string.digits if c != "q"] + PUNCTUATION
KEYS = [*BINDINGS, *NAVIGATION, *PRINTABLE]
"""Every key the masher may press."""


@dataclass
class Stats:
    keys: int = 0
    resizes: int = 0
    screens: set[str] = field(default_factory=set)
    wall_s: float = 0.0


def _key(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(BINDINGS)
    if roll < 0.75:
        return rng.choice(NAVIGATION)
    return rng.choice(PRINTABLE)


async def mash(
    app: XdpApp,
    pilot: Pilot[None],
    rng: random.Random,
    *,
    keys: int,
    seconds: float,
    progress: bool = False,
) -> Stats:
    """Press up to ``keys`` random keys (one in 25 a resize) for at most ``seconds``."""
    stats = Stats()
    start = time.monotonic()
    while stats.keys < keys and time.monotonic() - start < seconds:
        if rng.random() < 0.04:
            await pilot.resize_terminal(rng.randint(20, 220), rng.randint(3, 70))
            stats.resizes += 1
        else:
            await pilot.press(_key(rng))
            stats.keys += 1
            if progress and stats.keys % 500 == 0:
                elapsed = time.monotonic() - start
                print(f"  {stats.keys} keys, {stats.resizes} resizes, {elapsed:.0f} s", flush=True)
        stats.screens.add(type(app.screen).__name__)
        if stats.keys % 8 == 0:
            await pilot.pause()
        if not app.is_running:
            break
    stats.wall_s = time.monotonic() - start
    return stats


async def run_one(path: str, keys: int, seed: int, seconds: float) -> tuple[bool, str]:
    app = make_app(path, paused=False)
    rng = random.Random(seed)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            stats = await mash(app, pilot, rng, keys=keys, seconds=seconds, progress=True)
            up = app.is_running
            sim = app.sim
            now = sim.now_ns
            commands = len(sim.frame().events)
    except Exception as exc:  # the app went down: that is the finding
        return False, f"{path}: the app went down: {type(exc).__name__}: {exc}"
    line = (
        f"{path}: {stats.keys} keys, {stats.resizes} resizes in {stats.wall_s:.1f} s; "
        f"screens {', '.join(sorted(stats.screens))}; {commands} events in the engine; "
        f"simulated {now / 1e6:.3f} ms; app up: {up}"
    )
    return up, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--max-seconds", type=float, default=7200.0, help="per topology")
    args = parser.parse_args()
    ok = True
    for i, path in enumerate(args.files):
        up, line = asyncio.run(run_one(path, args.keys, args.seed + i, args.max_seconds))
        print(line, flush=True)
        ok = ok and up
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
