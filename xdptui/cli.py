"""Command line: ``xdptui FILE``, ``xdptui check|run|bench|reproduce|schema|serve|prog ...``.

Every failure is one clear line per problem on stderr and exit status 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from xdptui.model.units import UnitError, parse_duration_ns

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator

SUBCOMMANDS = ("check", "run", "trace", "bench", "reproduce", "serve", "schema", "app", "prog")
DEFAULT_TOPOLOGY = "dual_port.yaml"
SCHEMA_FORMATS = ("topology", "report")


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
    from importlib.resources import as_file, files

    # The topologies ship as plain files inside the package (never zipped), so the path stays valid.
    with as_file(files("xdptui.topologies") / DEFAULT_TOPOLOGY) as path:
        return str(path)


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


def _duration(text: str) -> int:
    try:
        return parse_duration_ns(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="xdptui", description="A live simulation of the Linux XDP data path.")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    app = sub.add_parser("app", help="open the app on a topology (the default)")
    app.add_argument("file", nargs="?", default=None)
    app.add_argument("--paused", action="store_true", help="start paused")
    check = sub.add_parser("check", help="validate a topology file")
    check.add_argument("file", nargs="?", default=None, help="default: the bundled dual_port")
    run = sub.add_parser("run", help="run headless and print a summary / JSON report")
    run.add_argument("file", nargs="?", default=None, help="default: the bundled dual_port")
    run.add_argument("--duration", type=_duration, default=10_000_000, help="e.g. 10ms")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--json", metavar="PATH|-", default=None)
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
    trace.add_argument("--seed", type=int, default=None)
    trace.add_argument("--json", action="store_true", help="the hops as JSON")
    bench = sub.add_parser(
        "bench", help="benchmarks: bench sim FILE | bench ui FILE | bench prog FILE.o"
    )
    bench_sub = bench.add_subparsers(dest="what", parser_class=_Parser)
    bsim = bench_sub.add_parser("sim", help="headless simulation speed")
    bsim.add_argument("file")
    bsim.add_argument("--sim-time", type=_duration, default=100_000_000)
    bsim.add_argument("--exact", action="store_true", help="exact mode (every poll an event)")
    bsim.add_argument("--json", action="store_true")
    bui = bench_sub.add_parser("ui", help="the app's frame rate with the simulation in real time")
    bui.add_argument("file")
    bui.add_argument("--seconds", type=float, default=5.0)
    bui.add_argument("--json", action="store_true")
    bprog = bench_sub.add_parser("prog", help="interpreter speed on a BPF ELF object")
    bprog.add_argument("file")
    bprog.add_argument("--sec", default=None, help="program name or section")
    bprog.add_argument("--packets", type=int, default=65536)
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
    rep.add_argument("which", nargs="?", default="all", choices=("bond", "devmap", "tun", "all"))
    rep.add_argument("--json", action="store_true")
    schema = sub.add_parser("schema", help="print the JSON Schema of a file format")
    schema.add_argument("format", choices=SCHEMA_FORMATS, help="topology or report")
    serve = sub.add_parser("serve", help="serve the app to browsers with textual-serve")
    serve.add_argument("file", nargs="?", default=None)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="localhost")
    return p


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in SUBCOMMANDS and not args_list[0].startswith("-")):
        args_list = ["app", *args_list]
    args = build_parser().parse_args(args_list)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "check":
        args.file = args.file or default_topology()
        topo = load(args.file)
        print(
            f"{args.file}: ok ({topo.name}: {len(topo.devices)} devices, "
            f"{len(topo.traffic)} traffic sources, {len(topo.timeline)} timeline events)"
        )
        return 0
    if args.cmd == "run":
        return _run(args)
    if args.cmd == "trace":
        return _trace(args)
    if args.cmd == "bench":
        from xdptui import bench

        if args.what == "sim":
            return bench.bench_sim(load(args.file), args.sim_time, args.json, args.exact)
        if args.what == "ui":
            return bench.bench_ui(args.file, args.seconds, args.json)
        if args.what == "prog":
            return _bpf(args)
        fail("xdptui bench: say what to measure: sim FILE, ui FILE or prog FILE.o")
    if args.cmd == "prog":
        if args.what != "run":
            fail("xdptui prog: say what to do: run FILE.o --data-in PKT")
        return _bpf(args)
    if args.cmd == "reproduce":
        from xdptui import reproduce

        return reproduce.main(args.which, args.json)
    if args.cmd == "schema":
        return _schema(args.format)
    if args.cmd == "serve":
        return _serve(args.file or default_topology(), args.host, args.port)
    path = getattr(args, "file", None) or default_topology()
    topo = load(path)
    from xdptui.app import make_app

    app = make_app(path, topology=topo, paused=getattr(args, "paused", False))
    app.run()
    return 0


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from xdptui import report
    from xdptui.sim.engine import Simulator

    topo = load(args.file or default_topology())
    if args.seed is not None:
        topo = dataclasses.replace(topo, seed=args.seed)
    sim = Simulator(topo, exact=args.exact)
    if args.events is not None:
        if args.events == "-" and args.json == "-":
            fail("xdptui run: --json - and --events - can't both write to stdout")
        _stream_events(sim, args.duration, args.events)
    else:
        sim.run_until(args.duration)
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

    topo = load(args.file or default_topology())
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
    if args.json:
        rows = [{"t_ns": h.t_ns, "dev": h.dev, "stage": h.stage, "detail": h.detail} for h in hops]
        print(json.dumps({"source": source, "flow": args.flow, "hops": rows}, indent=2))
        return 0
    for h in hops:
        print(f"{format_duration(h.t_ns):>12}  {h.dev:<8} {h.stage:<13} {h.detail}")
    return 0


def _bpf(args: argparse.Namespace) -> int:
    """``prog run`` and ``bench prog``: a refusal is one line (errno and wording), exit 2."""
    from xdptui.bpf import tool
    from xdptui.model.errors import KernelError

    try:
        if args.cmd == "bench":
            return tool.bench_prog(args.file, args.sec, args.packets, args.json)
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


def _serve(path: str, host: str, port: int) -> int:
    load(path)
    try:
        from textual_serve.server import Server
    except ImportError:
        fail("xdptui serve needs textual-serve: pip install -e '.[serve]'")
    import shlex

    # Each browser gets its own app process running this command (textual-serve).
    command = f"{shlex.quote(sys.executable)} -m xdptui {shlex.quote(path)}"
    Server(command, host=host, port=port, title="xdptui").serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
