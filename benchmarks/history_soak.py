"""What history costs: N timeline link flaps in one topology, and a soak of commands.

    python benchmarks/history_soak.py topology 2000 -o /tmp/flaps_2000.yaml
    /usr/bin/time -v xdptui run /tmp/flaps_2000.yaml --duration 20ms
    python benchmarks/history_soak.py flaps 500 1000 2000 4000     # time and peak RSS of each
    python benchmarks/history_soak.py soak --minutes 3 --mode fast # RSS every minute

``topology N`` writes a two-port host whose timeline takes eth1 down and up N times, one
entry every 5 us. ``flaps`` runs ``xdptui run FILE --duration ...`` on each N in a child
process and prints its process time and peak RSS. ``soak`` drives a Simulator headless for
that many minutes of wall-clock time: a command every 2 ms of simulated time (the same flap
as a user command), a frame after each, RSS printed every minute.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEP_US = 5  # one timeline entry every this many microseconds
HEAD = """\
name: history {n}
description: eth1 flaps {n} times, one link change every {step} us.
seed: 1
cpus: 2
devices:
  eth0: {{type: nic, driver: ice, speed: 10G, queues: 2, ring: 512, irq_cpus: [0, 1],
         xdp: xdp_pass}}
  eth1: {{type: nic, driver: ice, speed: 10G, queues: 2, ring: 512, irq_cpus: [0, 1]}}
traffic:
  - {{name: app, to: eth0, rate: 1Mpps, size: 64, proto: udp, src_ip: 10.0.0.1,
     dst_ip: 10.0.0.2, src_port: 1000-1063, dst_port: 80, flows: 64}}
"""


def topology(n: int) -> str:
    """A topology whose timeline flaps eth1 ``n`` times (``n`` entries, alternating)."""
    lines = [HEAD.format(n=n, step=STEP_US), "timeline:\n" if n else ""]
    for i in range(n):
        state = "down" if i % 2 == 0 else "up"
        lines.append(f'  - {{at: {(i + 1) * STEP_US}us, do: "ip link set dev eth1 {state}"}}\n')
    return "".join(lines)


def duration_ms(n: int) -> int:
    """A run that passes the last entry by 1 ms."""
    return (n + 1) * STEP_US // 1000 + 1


def flaps(counts: list[int], exact: bool) -> None:
    """``xdptui run`` on each topology in a child: process time (user + system) and peak RSS."""
    print(f"{'flaps':>6} {'cpu_s':>8} {'wall_s':>8} {'peak_rss_mb':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            path = Path(tmp) / f"flaps_{n}.yaml"
            path.write_text(topology(n))
            cmd = [sys.executable, "-m", "xdptui", "run", str(path)]
            cmd += ["--duration", f"{duration_ms(n)}ms", "--json", str(Path(tmp) / "r.json")]
            cmd += ["--exact"] if exact else []
            t0 = time.perf_counter()
            child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - t0
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode:
                raise SystemExit(f"{' '.join(cmd)}: exit status {child.returncode}")
            cpu = usage.ru_utime + usage.ru_stime
            print(f"{n:>6} {cpu:>8.2f} {wall:>8.2f} {usage.ru_maxrss / 1024:>12.1f}", flush=True)


def rss_mb() -> float:
    """This process's resident set now (Linux /proc), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def soak(minutes: float, exact: bool, every_ns: int, report_s: float) -> None:
    """Commands every ``every_ns`` of simulated time for ``minutes`` of wall-clock time."""
    from xdptui.sim.engine import Simulator
    from xdptui.topology_io import loads_topology

    sim = Simulator(loads_topology(topology(0), "<soak>"), exact=exact)
    start = time.monotonic()
    next_report, commands = start, 0
    print(f"{'minute':>6} {'commands':>9} {'sim_ms':>9} {'rss_mb':>8}", flush=True)
    while True:
        now = time.monotonic()
        if now >= next_report:
            minute = (now - start) / 60
            print(
                f"{minute:>6.1f} {commands:>9} {sim.now_ns / 1e6:>9.1f} {rss_mb():>8.1f}",
                flush=True,
            )
            next_report += report_s
        if now - start >= minutes * 60:
            break
        sim.advance(every_ns)
        sim.submit(f"ip link set dev eth1 {'down' if commands % 2 == 0 else 'up'}")
        sim.frame(live=True)
        commands += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("topology", help="write a topology with N timeline link flaps")
    t.add_argument("n", type=int)
    t.add_argument("-o", "--output", default="-")
    f = sub.add_parser("flaps", help="time `xdptui run` for each N")
    f.add_argument("n", type=int, nargs="+")
    f.add_argument("--exact", action="store_true")
    s = sub.add_parser("soak", help="a command every few ms of simulated time, RSS every minute")
    s.add_argument("--minutes", type=float, default=10.0)
    s.add_argument("--mode", choices=("fast", "exact"), default="fast")
    s.add_argument("--every-us", type=int, default=2000, help="simulated time between commands")
    s.add_argument("--report-s", type=float, default=60.0, help="seconds between RSS lines")
    a = ap.parse_args()
    if a.what == "topology":
        text = topology(a.n)
        sys.stdout.write(text) if a.output == "-" else Path(a.output).write_text(text)
    elif a.what == "flaps":
        flaps(a.n, a.exact)
    else:
        soak(a.minutes, a.mode == "exact", a.every_us * 1000, a.report_s)


if __name__ == "__main__":
    main()
