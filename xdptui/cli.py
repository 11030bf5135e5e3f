"""Command line: ``xdptui FILE``, ``xdptui check|run|bench|reproduce|schema|serve|prog ...``.

Every failure is one clear line per problem on stderr and exit status 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from xdptui.model.limits import DURATION_MAX_NS, PORT_MAX, PORT_MIN, SEED_MAX
from xdptui.model.units import UnitError, parse_clock_speed, parse_duration_ns

if TYPE_CHECKING:
    from xdptui.model.topology import Topology
    from xdptui.model.views import TraceHop
    from xdptui.sim.engine import Simulator
    from xdptui.trust import UserProgram

SUBCOMMANDS = (
    "check",
    "run",
    "trace",
    "bench",
    "reproduce",
    "serve",
    "schema",
    "app",
    "prog",
    "import",
    "export",
    "topologies",
)
SCHEMA_FORMATS = ("topology", "report")
TRUST_HELP = "run the Python programs the topology names (xdptui check lists them)"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "ip6-localhost")


def version() -> str:
    """The installed distribution's version (the package metadata, never a second copy)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("xdptui")
    except PackageNotFoundError:
        return "unknown (not installed)"


def default_topology() -> str:
    """The shipped ``dual_port.yaml``, read from the installed package (``xdptui.topologies``)."""
    from xdptui import shipped

    return shipped.default_path()


def fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def load(path: str):  # type: ignore[no-untyped-def]
    """Load and validate a topology or exit 2 with ``FILE:LINE:COL: error:`` lines."""
    from xdptui.commands import validate
    from xdptui.topology_io import TopologyError, load_topology

    try:
        return load_topology(path, validate_command=validate)
    except TopologyError as exc:
        for diag in exc.diagnostics:
            print(str(diag), file=sys.stderr)
        raise SystemExit(2) from None


_CLI_DURATION = re.compile(r"^(\d{1,15}(?:\.\d{0,9})?|\.\d{1,9})(ns|us|µs|ms|s)$")


def _duration(text: str) -> int:
    """A duration with its unit (``10ms``): a bare number is refused rather than read as ns."""
    word = text.strip()
    shown = word if len(word) <= 24 else word[:21] + "..."
    longest = f"at most {DURATION_MAX_NS // 10**9}s (one day of simulated time)"
    if re.fullmatch(r"\d{1,15}(\.\d*)?", word):
        raise argparse.ArgumentTypeError(
            f"'{word}' has no unit; did you mean {word}ms, {word}us or {word}ns? "
            "(units: ns, us, ms, s)"
        )
    if re.fullmatch(r"[\d.]+(ns|us|µs|ms|s)?", word) and not _CLI_DURATION.match(word):
        raise argparse.ArgumentTypeError(f"'{shown}' is too long; {longest}")
    if not _CLI_DURATION.match(word):
        raise argparse.ArgumentTypeError(
            f"'{shown}' is not a duration; give a number and a unit (ns, us, ms or s), e.g. 10ms"
        )
    try:
        ns = parse_duration_ns(word)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ns > DURATION_MAX_NS:
        raise argparse.ArgumentTypeError(f"'{shown}' is too long; {longest}")
    return ns


def _clock_speed(text: str) -> int:
    """``--speed 10us/s`` (or ``real``): one of the app's clock speeds."""
    try:
        return parse_clock_speed(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bounded_int(text: str, lo: int, hi: int, what: str) -> int:
    word = text.strip()
    if not re.fullmatch(r"[+-]?\d{1,20}", word) or not lo <= int(word) <= hi:
        shown = word if len(word) <= 24 else word[:21] + "..."
        raise argparse.ArgumentTypeError(f"'{shown}' is not {what}; valid: {lo}..{hi}")
    return int(word)


def _seed(text: str) -> int:
    return _bounded_int(text, 0, SEED_MAX, "a seed")


def _port(text: str) -> int:
    return _bounded_int(text, PORT_MIN, PORT_MAX, "a TCP port")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise argparse.ArgumentTypeError(f"'{text[:24]}' is not a number of seconds 0..3600")
    return value


def _size(text: str) -> tuple[int, int]:
    """``120x40``: a terminal's columns and rows."""
    m = re.fullmatch(r"(\d{2,3})x(\d{2,3})", text)
    if m is None or not (40 <= int(m[1]) <= 400 and 12 <= int(m[2]) <= 200):
        raise argparse.ArgumentTypeError(f"'{text[:24]}' is not a terminal size like 120x40")
    return int(m[1]), int(m[2])


def _public_url(text: str) -> str:
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", text):
        raise argparse.ArgumentTypeError(
            f"'{text[:60]}' is not a URL browsers can open, e.g. http://classroom-host:8000"
        )
    return text.rstrip("/")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="xdptui", description="A live simulation of the Linux XDP data path.")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    app = sub.add_parser("app", help="open the app on a topology (the default)")
    app.add_argument("file", nargs="?", default=None)
    app.add_argument(
        "--paused",
        action="store_true",
        default=None,
        help="start paused (a topology with lessons does anyway)",
    )
    app.add_argument(
        "--speed",
        type=_clock_speed,
        default=None,
        metavar="RATE",
        help="clock speed, simulated time per second: 1us/s .. 1s/s or real (opens running)",
    )
    app.add_argument("--trust", action="store_true", help=TRUST_HELP)
    app.add_argument(
        "--no-user-programs",
        action="store_true",
        help="refuse every Python program, typed ones too (what serve runs each browser with)",
    )
    check = sub.add_parser("check", help="validate a topology file")
    check.add_argument("file", nargs="?", default=None, help="default: the bundled dual_port")
    run = sub.add_parser("run", help="run headless and print a summary / JSON report")
    run.add_argument("file", nargs="?", default=None, help="default: the bundled dual_port")
    run.add_argument("--duration", type=_duration, default=10_000_000, help="e.g. 10ms")
    run.add_argument("--seed", type=_seed, default=None, help=f"0..{SEED_MAX}")
    run.add_argument("--trust", action="store_true", help=TRUST_HELP)
    run.add_argument("--json", metavar="PATH|-", default=None)
    run.add_argument(
        "--pcap",
        action="append",
        default=[],
        metavar="DEV:WHAT=OUT",
        help="write DEV's frames (WHAT: rx, tx, drop, pass, redirect, all) to OUT.pcapng; "
        "repeatable; runs exact mode",
    )
    run.add_argument(
        "--exact",
        "--poll-by-poll",
        dest="exact",
        action="store_true",
        help="exact mode: every NAPI poll, flush and drop as it happens (slower)",
    )
    run.add_argument(
        "--events",
        metavar="PATH|-",
        default=None,
        help="write the event stream as JSON lines (with --exact: every poll and flush)",
    )
    trace = sub.add_parser("trace", help="follow one frame through the data path")
    trace.add_argument("file", nargs="?", default=None, help="default: the bundled dual_port")
    trace.add_argument("--at", type=_duration, default=0, help="when to start following, e.g. 2ms")
    trace.add_argument("--source", default=None, help="the traffic source (default: the first)")
    trace.add_argument("--flow", type=int, default=0, help="the flow of that source (default 0)")
    trace.add_argument("--seed", type=_seed, default=None, help=f"0..{SEED_MAX}")
    trace.add_argument("--trust", action="store_true", help=TRUST_HELP)
    trace.add_argument("--json", action="store_true", help="the hops as JSON")
    trace.add_argument(
        "--pcap", default=None, metavar="OUT", help="the frame at each hop, as pcapng"
    )
    bench = sub.add_parser(
        "bench", help="benchmarks: bench sim|modes|ui|keys FILE | bench prog FILE.o"
    )
    bench_sub = bench.add_subparsers(dest="what", parser_class=_Parser)
    bsim = bench_sub.add_parser("sim", help="headless simulation speed")
    bsim.add_argument("file", nargs="+", help="one topology, or several to compare side by side")
    bsim.add_argument("--sim-time", type=_duration, default=100_000_000)
    bsim.add_argument("--exact", action="store_true", help="exact mode (every poll an event)")
    bsim.add_argument("--json", action="store_true")
    bsim.add_argument("--trust", action="store_true", help=TRUST_HELP)
    bmodes = bench_sub.add_parser(
        "modes", help="fast mode against exact mode: every report tally, sampled"
    )
    bmodes.add_argument("file", nargs="+", help="topologies to compare, each in both modes")
    bmodes.add_argument("--sim-time", type=_duration, default=6_000_000, help="default 6ms")
    bmodes.add_argument("--every", type=_duration, default=1_000_000, help="default 1ms")
    bmodes.add_argument("--json", action="store_true")
    bmodes.add_argument("--trust", action="store_true", help=TRUST_HELP)
    bui = bench_sub.add_parser("ui", help="the app's frame rate with the simulation in real time")
    bui.add_argument("file")
    bui.add_argument("--seconds", type=_seconds, default=5.0)
    bui.add_argument("--json", action="store_true")
    bui.add_argument("--trust", action="store_true", help=TRUST_HELP)
    bkeys = bench_sub.add_parser("keys", help="how long each key takes in the app")
    bkeys.add_argument("file")
    bkeys.add_argument("--size", type=_size, default=(120, 40), help="WxH (default 120x40)")
    bkeys.add_argument("--json", action="store_true")
    bkeys.add_argument("--trust", action="store_true", help=TRUST_HELP)
    bprog = bench_sub.add_parser("prog", help="interpreter speed on a BPF ELF object")
    bprog.add_argument("file")
    bprog.add_argument("--sec", default=None, help="program name or section")
    bprog.add_argument("--packets", type=int, default=65536)
    bprog.add_argument("--runs", type=int, default=5, help="timed runs (the median is shown)")
    bprog.add_argument("--json", action="store_true")
    prog = sub.add_parser("prog", help="XDP ELF objects: prog run FILE.o --data-in PKT")
    prog_sub = prog.add_subparsers(dest="what", parser_class=_Parser)
    prun = prog_sub.add_parser("run", help="run a program on one frame, like bpftool prog run")
    prun.add_argument("file")
    prun.add_argument("--sec", default=None, help="program name or section")
    prun.add_argument("--data-in", required=True, metavar="PKT", help="frame bytes (- for stdin)")
    prun.add_argument("--data-out", default=None, metavar="OUT", help="file, or - for hex")
    prun.add_argument("--repeat", type=int, default=1)
    prun.add_argument("--json", action="store_true")
    rep = sub.add_parser("reproduce", help="the seeds' benchmark tables beside the simulator's")
    rep.add_argument(
        "which", nargs="?", default="all", choices=("bond", "devmap", "tun", "ixgbe", "all")
    )
    rep.add_argument("--json", action="store_true")
    imp = sub.add_parser(
        "import",
        help="a topology of this host (network namespace) or of a directory of saved outputs",
        description="Read-only: links over netlink, ethtool, bpftool, /proc/interrupts and "
        "/proc/irq/*/smp_affinity_list. --save DIR keeps those outputs (nproc, ip-link.json, "
        "ethtool[-i|-l|-g].DEV, bpftool-net.json, bpftool-prog.json, bpftool-map.json, "
        "bpftool-map-dump.ID.json, interrupts, smp_affinity_list); --from DIR reads them.",
    )
    imp.add_argument("-o", "--output", default=None, metavar="OUT.yaml", help="default: stdout")
    imp.add_argument("--from", dest="from_dir", default=None, metavar="DIR")
    imp.add_argument("--save", default=None, metavar="DIR", help="save this host's outputs")
    imp.add_argument(
        "--obj", action="append", default=[], metavar="NAME=FILE.o", help="the object of NAME"
    )
    exp = sub.add_parser("export", help="carry a topology to a real kernel")
    exp.add_argument("file", help="the topology")
    exp.add_argument(
        "--netns", action="store_true", required=True, help="a network-namespace lab script"
    )
    exp.add_argument("-o", "--output", default=None, metavar="lab.sh", help="default: stdout")
    exp.add_argument("--duration", type=_duration, default=10_000_000, help="traffic, e.g. 10ms")
    schema = sub.add_parser("schema", help="print the JSON Schema of a file format")
    schema.add_argument("format", choices=SCHEMA_FORMATS, help="topology or report")
    serve = sub.add_parser("serve", help="serve the app to browsers with textual-serve")
    serve.add_argument("file", nargs="?", default=None)
    serve.add_argument("--port", type=_port, default=8000, help=f"{PORT_MIN}..{PORT_MAX}")
    serve.add_argument("--host", default="localhost", help="default localhost: this machine only")
    serve.add_argument(
        "--public-url",
        type=_public_url,
        default=None,
        help="the address browsers use to reach the server (behind a proxy, or a classroom's "
        "host name with --host 0.0.0.0), e.g. http://lab-host:8000",
    )
    serve.add_argument(
        "--allow-user-programs",
        action="store_true",
        help="let the served app run Python programs: typed ones, and the topology's with --trust",
    )
    serve.add_argument("--trust", action="store_true", help=TRUST_HELP)
    tops = sub.add_parser(
        "topologies",
        help="list the shipped topologies; any command takes one by its bare name (dual_port)",
    )
    tops.add_argument(
        "--dir",
        action="store_true",
        help="print where the shipped topologies and examples/ (C sources, objects) are",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in (*SUBCOMMANDS, "-h", "--help", "--version"):
        args_list = ["app", *args_list]  # xdptui FILE [--trust] ... opens the app
    args = build_parser().parse_args(args_list)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``xdptui run ... | head``): stop quietly, as a shell tool does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _resolve_files(args: argparse.Namespace) -> None:
    """A bare name (``dual_port``) that is not a file here names a shipped topology."""
    from xdptui import shipped

    if args.cmd in ("prog", "topologies") or (args.cmd == "bench" and args.what == "prog"):
        return
    file = getattr(args, "file", None)
    try:
        if isinstance(file, str):
            args.file = shipped.resolve(file)
        elif isinstance(file, list):
            args.file = [shipped.resolve(f) for f in file]
    except shipped.UnknownTopology as exc:
        fail(f"xdptui: {exc}")


def _topologies(where: bool) -> int:
    """``xdptui topologies``: one line per shipped topology, its bare name first; with
    ``--dir`` the folders of the shipped topologies and examples instead."""
    from xdptui import shipped

    if where:
        print(f"topologies  {shipped.folder()}")
        print(f"examples    {shipped.examples_folder()}")
        return 0
    rows = shipped.catalog()
    width = max(len(r.stem) for r in rows)
    for r in rows:
        print(f"{r.stem:<{width}}  {r.title}: {r.summary}")
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    _resolve_files(args)
    if args.cmd == "topologies":
        return _topologies(args.dir)
    if args.cmd == "check":
        args.file = args.file or default_topology()
        topo = load(args.file)
        print(
            f"{args.file}: ok ({topo.name}: {len(topo.devices)} devices, "
            f"{len(topo.traffic)} traffic sources, {len(topo.timeline)} timeline events)"
        )
        _list_programs(args.file, topo)
        for warning in bond_warnings(topo):
            print(f"{args.file}: warning: {warning}", file=sys.stderr)
        return 0
    if args.cmd == "run":
        return _run(args)
    if args.cmd == "trace":
        return _trace(args)
    if args.cmd == "bench":
        from xdptui import bench

        if args.what == "sim":
            topos = [_trusted(load(f), args.trust, "bench sim") for f in args.file]
            if len(topos) > 1:
                return bench.bench_sim_many(
                    args.file, args.sim_time, args.exact, args.trust, args.json
                )
            return bench.bench_sim(topos[0], args.sim_time, args.json, args.exact)
        if args.what == "modes":
            from xdptui import modes_check

            rows = []
            for f in args.file:
                t = _trusted(load(f), args.trust, "bench modes")
                every = max(1, min(args.every, args.sim_time))
                rows.append((f, modes_check.compare(t, modes_check.instants(args.sim_time, every))))
            modes_check.print_comparisons(rows, args.json)
            return 0
        if args.what == "ui":
            _trusted(load(args.file), args.trust, "bench ui")
            return bench.bench_ui(args.file, args.seconds, args.json)
        if args.what == "keys":
            from xdptui import bench_keys

            _trusted(load(args.file), args.trust, "bench keys")
            return bench_keys.bench_keys(args.file, args.size, args.json)
        if args.what == "prog":
            return _bpf(args)
        fail(
            "xdptui bench: say what to measure: sim FILE, modes FILE, ui FILE, keys FILE or "
            "prog FILE.o"
        )
    if args.cmd == "prog":
        if args.what != "run":
            fail("xdptui prog: say what to do: run FILE.o --data-in PKT")
        return _bpf(args)
    if args.cmd == "reproduce":
        from xdptui import reproduce

        return reproduce.main(args.which, args.json)
    if args.cmd == "schema":
        return _schema(args.format)
    if args.cmd in ("import", "export"):
        from xdptui import cli_host

        return cli_host.main(args)
    if args.cmd == "serve":
        return _serve(args)
    return _app(args)


def bond_warnings(topo: Topology) -> list[str]:
    """An active-backup bond without miimon has no link monitoring (``bond_option_mode_set``
    leaves miimon 0 outside 802.3ad/tlb/alb): it never fails over."""
    from xdptui.model.topology import BondSpec

    return [
        f"{d.name}: active-backup without miimon: no link monitoring, so it never fails over "
        "when a slave's link goes down (set miimon, e.g. 100)"
        for d in topo.devices
        if isinstance(d, BondSpec) and d.mode == "active-backup" and d.miimon_ms == 0
    ]


def _app(args: argparse.Namespace) -> int:
    path = args.file or default_topology()
    topo = load(path)
    from xdptui.app import ask_trust, make_app
    from xdptui.trust import consent_lines, user_programs

    programs = user_programs(topo)
    if programs and args.no_user_programs:
        _refuse("xdptui", path, programs, "With --no-user-programs it runs no Python programs.")
    if programs and not args.trust and not ask_trust(path, consent_lines(programs)):
        fail(f"xdptui: {path} not opened: you did not agree to run its Python programs")
    app = make_app(
        path,
        topology=topo,
        paused=args.paused,
        speed_ns_per_s=args.speed,
        allow_user_programs=not args.no_user_programs,
    )
    app.run()
    return 0


def _list_programs(path: str, topology: Topology) -> None:
    """``check``: the Python programs the file would run (it runs none of them), and the BPF
    objects it would load (verified by the loader; they need no consent)."""
    from xdptui.trust import bpf_objects, user_programs

    objects = bpf_objects(topology)
    if objects:
        print(
            f"{path}: names {len(objects)} BPF object{'s' if len(objects) != 1 else ''} "
            "(verified; they run in xdptui's eBPF interpreter and need no --trust):"
        )
        for obj in objects:
            print(f"  {obj}")
    for om in topology.object_maps:
        n = len(om.entries)
        print(
            f"{path}: fills map {om.name} of an attached object with {n} "
            f"element{'s' if n != 1 else ''} at start (bpftool map update)"
        )
    programs = user_programs(topology)
    if not programs:
        return
    print(
        f"{path}: names {len(programs)} Python program{'s' if len(programs) != 1 else ''}; "
        "run and the app run them only with --trust (the app asks first):"
    )
    for program in programs:
        print(f"  {program}")


def _refuse(command: str, path: str, programs: tuple[UserProgram, ...], how: str) -> NoReturn:
    """Exit 2: ``path`` names Python programs that ``command`` will not run; ``how`` says what
    would let it."""
    from xdptui.trust import consent_lines

    listing = "\n".join(f"  {line}" for line in consent_lines(programs))
    fail(
        f"{command}: {path} names Python programs; they would run with your rights:\n"
        f"{listing}\n{how}"
    )


def _trusted(topology: Topology, trust: bool, command: str) -> Topology:
    """The topology, or exit 2 listing the Python programs it names when ``--trust`` is not
    given (DESIGN's Trust: a file runs no code without the user's agreement)."""
    from xdptui.trust import user_programs

    programs = user_programs(topology)
    if programs and not trust:
        _refuse(
            f"xdptui {command}",
            topology.source,
            programs,
            "Read them, then run again with --trust to run them (nothing was run).",
        )
    return topology


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from xdptui import report
    from xdptui.sim.engine import Simulator

    topo = _trusted(load(args.file or default_topology()), args.trust, "run")
    if args.seed is not None:
        topo = dataclasses.replace(topo, seed=args.seed)
    sim = Simulator(topo, exact=args.exact)
    recording = None
    if args.pcap:
        from xdptui import pcap_export

        names = [d.name for d in topo.devices]
        try:
            specs = [pcap_export.parse_spec(text, names) for text in args.pcap]
        except pcap_export.PcapSpecError as exc:
            fail(f"xdptui run: {exc}")
        recording = (specs, pcap_export.start_recording(sim, specs))
    if args.events is not None:
        if args.events == "-" and args.json == "-":
            fail("xdptui run: --json - and --events - can't both write to stdout")
        _stream_events(sim, args.duration, args.events)
    else:
        sim.run_until(args.duration)
    if recording is not None:
        from xdptui import pcap_export

        try:
            written = pcap_export.write_recording(sim, recording[1], recording[0])
        except OSError as exc:
            fail(f"xdptui run: cannot write {exc.filename}: {exc.strerror}")
        for out, n in written.items():
            print(f"{out}: {n} frames", file=sys.stderr)
    data = report.build_report(sim)
    text = report.summary(sim.frame())
    if args.json == "-":
        sys.stdout.write(report.dumps(data))
        print(text, file=sys.stderr)
    else:
        if args.json:
            try:
                Path(args.json).write_text(report.dumps(data))
            except OSError as exc:
                fail(f"xdptui run: cannot write {args.json}: {exc.strerror}")
        print(text)
    return 0


def _stream_events(sim: Simulator, duration: int, path: str) -> None:
    """Run to ``duration`` writing every event as a JSON line as it happens (in chunks, so a
    long exact run never holds more than a chunk's events)."""
    import json

    out = sys.stdout if path == "-" else None
    try:
        handle = out or open(path, "w")  # noqa: SIM115 -- closed below
    except OSError as exc:
        fail(f"xdptui run: cannot write {path}: {exc.strerror}")
    seen = 0
    try:
        t = 0
        while True:
            for event in sim.events(seen):
                handle.write(json.dumps(event) + "\n")
                seen = event["seq"]
            if t >= duration:
                break
            t = min(duration, t + 100_000)
            sim.run_until(t)
    finally:
        if out is None:
            handle.close()


def _trace(args: argparse.Namespace) -> int:
    """Follow one frame headless: its hops with simulated timestamps, as the app's ``f``."""
    import dataclasses
    import json

    from xdptui.model.units import format_duration
    from xdptui.sim.engine import Simulator

    topo = _trusted(load(args.file or default_topology()), args.trust, "trace")
    if args.seed is not None:
        topo = dataclasses.replace(topo, seed=args.seed)
    if not topo.traffic:
        fail("xdptui trace: the topology has no traffic sources")
    source = args.source or topo.traffic[0].name
    names = [t.name for t in topo.traffic]
    if source not in names:
        fail(f"xdptui trace: no traffic source {source!r}; sources: {', '.join(names)}")
    sim = Simulator(topo)
    sim.run_until(args.at)
    hops = sim.trace(source, args.flow)
    if args.pcap is not None:
        from xdptui.pcap import write_atomically
        from xdptui.pcap_export import trace_pcapng

        try:
            write_atomically(args.pcap, trace_pcapng(sim, source, args.flow, hops))
        except OSError as exc:
            fail(f"xdptui trace: cannot write {args.pcap}: {exc.strerror}")
    if args.json:
        rows = [_hop_json(h) for h in hops]
        print(json.dumps({"source": source, "flow": args.flow, "hops": rows}, indent=2))
        return 0
    for h in hops:
        print(f"{format_duration(h.t_ns):>12}  {h.dev:<8} {h.stage:<13} {h.detail}")
        for line in h.program.lines() if h.program is not None else ():
            print(f"{'':>36}{line}")
    return 0


def _hop_json(h: TraceHop) -> dict[str, object]:
    """A hop as JSON; a real program's run with its bytes in hex and its map accesses."""
    row: dict[str, object] = {"t_ns": h.t_ns, "dev": h.dev, "stage": h.stage, "detail": h.detail}
    p = h.program
    if p is not None:
        row["program"] = {
            "name": p.program,
            "id": p.prog_id,
            "action": p.action,
            "retval": p.retval,
            "insns": p.insns,
            "before": p.before.hex(),
            "after": p.after.hex(),
            "redirect": p.redirect,
            "maps": [
                {
                    "map": m.map,
                    "key": m.key,
                    "cpu": m.cpu,
                    "kind": m.kind,
                    "before": m.before,
                    "after": m.after,
                }
                for m in p.accesses
            ],
        }
    return row


def _bpf(args: argparse.Namespace) -> int:
    """``prog run`` and ``bench prog``: a refusal is one line (errno and wording), exit 2."""
    from xdptui.bpf import tool
    from xdptui.model.errors import KernelError

    try:
        if args.cmd == "bench":
            return tool.bench_prog(args.file, args.sec, args.packets, args.json, args.runs)
        return tool.prog_run(
            args.file, args.sec, args.data_in, args.data_out, args.repeat, args.json
        )
    except KernelError as exc:
        why = exc.extack.splitlines()[0] if exc.extack else exc.errno.strerror
        fail(f"xdptui {args.cmd} {args.what}: {exc.errno.name}: {why}")


def _schema(fmt: str) -> int:
    """Print a format's JSON Schema, generated from its one declaration in xdptui.model."""
    import json

    from xdptui.model import report_spec, topology_spec

    schema = topology_spec.schema() if fmt == "topology" else report_spec.schema()
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    """Serve the app to browsers. Every browser user drives an app process on this machine, so
    the served app runs no Python program unless ``--allow-user-programs`` says so (and the
    topology's own need ``--trust`` from whoever starts the server)."""
    import shlex
    import socket

    from xdptui.trust import user_programs

    path = str(Path(args.file or default_topology()).resolve())
    topo = load(args.file or default_topology())
    programs = user_programs(topo)
    if programs and not args.allow_user_programs:
        _refuse(
            "xdptui serve",
            path,
            programs,
            "Every browser's session would run them on this machine: serve runs no Python "
            "programs unless started with --allow-user-programs (and --trust for the file's).",
        )
    if programs and not args.trust:
        _refuse(
            "xdptui serve",
            path,
            programs,
            "Read them, then start serve again with --trust to serve them.",
        )
    try:
        from textual_serve.server import Server
    except ImportError:
        fail("xdptui serve needs textual-serve: pip install -e '.[serve]'")
    try:
        # Bind once here: a port in use or a host that does not resolve is a clear line now,
        # not a server that never answers.
        for family, kind, proto, _, address in socket.getaddrinfo(
            args.host, args.port, type=socket.SOCK_STREAM
        ):
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        fail(f"xdptui serve: cannot listen on {args.host}:{args.port}: {reason}")
    from xdptui import serve_url

    public_url = args.public_url
    if public_url is None:
        try:
            public_url = serve_url.public_url(args.host, args.port)
        except serve_url.NoPublicUrl as exc:
            fail(f"xdptui serve: {exc}")
        if public_url is not None:
            print(
                f"xdptui serve: browsers load the page from {public_url} (this machine's first "
                f"address beyond loopback; --public-url sets another)",
                file=sys.stderr,
            )
    if args.host not in LOCAL_HOSTS:
        print(
            f"xdptui serve: warning: listening on {args.host}:{args.port}, beyond this machine: "
            "anyone who can reach it can open the app"
            + ("" if args.allow_user_programs else " (Python programs stay disabled)"),
            file=sys.stderr,
        )
    # Each browser gets its own app process running this command (textual-serve).
    words = [sys.executable, "-m", "xdptui", "app", path]
    words += ["--trust"] if programs else []
    words += [] if args.allow_user_programs else ["--no-user-programs"]
    command = " ".join(shlex.quote(word) for word in words)
    Server(command, host=args.host, port=args.port, title="xdptui", public_url=public_url).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
