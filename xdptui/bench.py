"""``xdptui bench``: figures of how fast the simulator and the app run (never timed tests)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from typing import Any

import simpy

from xdptui.model.topology import Topology
from xdptui.model.units import format_duration, format_rate


def simpy_baseline(seconds: float = 0.3) -> float:
    """Raw SimPy timeout events per wall-second on this machine, for comparison."""
    env = simpy.Environment()

    def ticker() -> Generator[simpy.Event, Any, None]:
        while True:
            yield env.timeout(1)

    env.process(ticker())
    events = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.run(until=env.now + 10_000)
        events += 10_000
    return events / (time.perf_counter() - start)


def bench_sim(topology: Topology, sim_ns: int, as_json: bool, exact: bool = False) -> int:
    """Run ``topology`` headless for ``sim_ns`` (in exact mode if asked) and report frames
    per wall-second."""
    from xdptui.sim.engine import Simulator

    built, built_cpu = time.perf_counter(), time.process_time()
    sim = Simulator(topology, exact=exact)  # compiles every device's paths
    build = time.perf_counter() - built
    build_cpu = time.process_time() - built_cpu
    entries = len(sim.world.entries)
    sim.advance(1)
    cpu0 = time.process_time()
    start = time.perf_counter()
    sim.run_until(sim_ns)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    frames = sum(src.emitted for src in sim.world.sources)
    checkpoint_ms = _checkpoint_ms(sim)
    refused = [
        f"{e['cmd']}: {e['errno']}"
        for e in sim.events()
        if e.get("kind") == "command" and not e.get("ok") and e.get("origin") == "topology"
    ]
    result: dict[str, Any] = {
        "topology": topology.name,
        "mode": "exact" if exact else "fast",
        "flow_entries": entries,
        "flow_classes": len(sim.state.dp.classes),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "frames": frames,
        "sim_ns": sim.now_ns,
        "wall_s": round(wall, 6),
        "cpu_s": round(cpu, 6),
        "frames_per_wall_s": round(frames / wall if wall else 0.0, 1),
        "frames_per_cpu_s": round(frames / cpu if cpu else 0.0, 1),
        "realtime_factor": round((sim.now_ns / 1e9) / wall if wall else 0.0, 4),
        "simpy_events_per_s": round(simpy_baseline(), 1),
        "steps": sim.state.fast.steps,
        "polls": int(sim.state.dp.cpu.polls.sum()),
        "build_s": round(build, 4),
        "build_cpu_s": round(build_cpu, 4),
        "entries": entries,
        "entries_per_build_s": round(entries / build if build else 0.0, 1),
        "checkpoint_ms": round(checkpoint_ms, 3),
        "refused": refused,  # the topology's own commands the kernel's rules refused
    }
    if as_json:
        print(json.dumps(result))
    else:
        print(f"topology            {topology.name} ({result['mode']} mode)")
        unit = f"{result['polls']:,} polls" if exact else f"{result['steps']:,} steps"
        print(f"simulated           {format_duration(sim.now_ns)} in {unit}")
        classes = result["flow_classes"]
        print(
            f"built               {build:.3f} s (cpu {build_cpu:.3f} s): {entries:,} flow-table "
            f"entries in {classes:,} classes ({entries / build if build else 0.0:,.0f} entries/s)"
        )
        print(f"frames simulated    {frames:,}")
        print(f"wall time           {wall:.3f} s (cpu {cpu:.3f} s)")
        print(f"frames / wall-s     {format_rate(result['frames_per_wall_s'], 'fps')}")
        print(f"frames / CPU-s      {format_rate(result['frames_per_cpu_s'], 'fps')}")
        print(f"real-time factor    {result['realtime_factor']:.3f}")
        print(f"peak memory         {result['peak_rss_mb']:.0f} MB (the whole process)")
        print(
            f"checkpoint          {checkpoint_ms:.2f} ms CPU (a copy of the state: what a "
            "checkpoint, a rewind or a command's rollback copies)"
        )
        print(
            f"simpy baseline      {format_rate(result['simpy_events_per_s'], ' events/s')}"
            "  (raw timeouts, one per frame would cap the per-packet model here)"
        )
        for line in refused:
            print(f"refused at boot     {line}")
    return 0


def bench_sim_many(paths: list[str], sim_ns: int, exact: bool, trust: bool, as_json: bool) -> int:
    """``bench_sim`` for several topologies side by side, each in a fresh process (so each
    peak memory is its own), printed as one table."""
    import subprocess
    import sys

    rows: list[dict[str, Any]] = []
    for path in paths:
        cmd = [sys.executable, "-m", "xdptui", "bench", "sim", path, "--json"]
        cmd += ["--sim-time", f"{sim_ns}ns"] + (["--exact"] if exact else [])
        cmd += ["--trust"] if trust else []
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            sys.stderr.write(res.stderr)
            return res.returncode
        rows.append({"file": path, **json.loads(res.stdout)})
    if as_json:
        print(json.dumps(rows))
        return 0
    head = f"{'topology file':<40} {'entries':>9} {'classes':>7} {'sim':>7} {'wall s':>7}"
    print(head + f" {'x real time':>11} {'frames/wall-s':>13} {'peak MB':>8}")
    for r in rows:
        print(
            f"{r['file']:<40} {r['flow_entries']:>9,} {r['flow_classes']:>7} "
            f"{format_duration(r['sim_ns']):>7} {r['wall_s']:>7.3f} {r['realtime_factor']:>11.2f} "
            f"{format_rate(r['frames_per_wall_s'], 'fps'):>13} {r['peak_rss_mb']:>8.0f}"
        )
    for r in rows:  # a run without what the file asked for measures something else
        for line in r.get("refused", []):
            print(f"{r['file']}: refused at boot: {line}")
    return 0


def _checkpoint_ms(sim: Any, copies: int = 7) -> float:
    """The median CPU time of a copy of ``sim``'s state (``copy_state``), after one copy
    that may fill caches every copy shares."""
    from xdptui.sim.state import copy_state

    copy_state(sim.state)
    times = []
    for _ in range(copies):
        t0 = time.process_time()
        copy_state(sim.state)
        times.append(time.process_time() - t0)
    return 1000 * sorted(times)[copies // 2]


def _peak_rss_mb() -> float:
    """The process's peak resident memory (``getrusage``: kilobytes on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_ui(path: str, seconds: float, as_json: bool) -> int:
    """Run the app headless at its normal refresh with the simulation at real time.

    After a one-second warm-up, measures between the first and the last frame drawn in a
    ``seconds`` window: frames per second, simulated time per real time, and the CPU time the
    process used over the window per wall second (``os.times``: user + system).
    """
    import asyncio

    from xdptui.app import REAL_TIME, make_app

    app = make_app(path, paused=False, speed_ns_per_s=REAL_TIME)  # lessons open paused
    result: dict[str, float] = {}

    async def first_frame_after(count: int) -> None:
        while app.stage.frames_drawn <= count:
            await asyncio.sleep(0.001)

    async def drive() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause(1.0)
            await first_frame_after(app.stage.frames_drawn)
            frames0, wall0, sim0 = app.stage.frames_drawn, app.stage.last_frame_at, app.sim.now_ns
            c0 = os.times()
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            await first_frame_after(app.stage.frames_drawn)
            frames1, wall1, sim1 = app.stage.frames_drawn, app.stage.last_frame_at, app.sim.now_ns
            c1 = os.times()
            t1 = time.perf_counter()
            wall = wall1 - wall0
            cpu = (c1.user - c0.user) + (c1.system - c0.system)
            result["requested_fps"] = float(app.fps)
            result["achieved_fps"] = round((frames1 - frames0) / wall, 2)
            result["sim_realtime_factor"] = round(((sim1 - sim0) / 1e9) / wall, 4)
            result["cpu_share"] = round(cpu / (t1 - t0), 4)

    asyncio.run(drive())
    if as_json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:<22}{value}")
    return 0
