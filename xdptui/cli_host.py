"""``xdptui import`` and ``xdptui export --netns``: the command-line side of
``xdptui.host_import`` and ``xdptui.netns_export`` (arguments in ``xdptui.cli``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn


def fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def main(args: argparse.Namespace) -> int:
    return run_import(args) if args.cmd == "import" else run_export(args)


def run_import(args: argparse.Namespace) -> int:
    """``xdptui import``: the host's topology (or its saved outputs), checked before it is
    written."""
    from xdptui import host_facts, host_import
    from xdptui.commands import validate
    from xdptui.topology_io import TopologyError, loads_topology

    try:
        if args.save:
            files = host_facts.save_outputs(Path(args.save))
            print(f"{args.save}: {len(files)} files", file=sys.stderr)
            return 0
        objs = dict(host_import.parse_obj(text) for text in args.obj)
        facts = (
            host_facts.facts_from_dir(Path(args.from_dir))
            if args.from_dir
            else host_facts.live_facts()
        )
    except (host_facts.HostError, host_import.ImportError_) as exc:
        fail(f"xdptui import: {exc}")
    except OSError as exc:
        fail(f"xdptui import: {exc.filename or ''}: {exc.strerror}")
    out = Path(args.output) if args.output else None
    imp = host_import.build(facts, objs, out.parent if out else Path.cwd())
    host_import.copy_objects(imp)
    where = str(out) if out else str(Path.cwd() / "imported.yaml")
    try:
        loads_topology(imp.text, where, validate)
    except TopologyError as exc:  # a bug here: say so rather than write a file check refuses
        fail(f"xdptui import: the imported topology does not pass check:\n{exc}")
    if out is None:
        sys.stdout.write(imp.text)
    else:
        try:
            out.write_text(imp.text)
        except OSError as exc:
            fail(f"xdptui import: cannot write {out}: {exc.strerror}")
    for note in imp.notes:
        print(f"xdptui import: note: {note}", file=sys.stderr)
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``xdptui export --netns``: a lab script for a real kernel."""
    from xdptui import netns_export
    from xdptui.commands import validate
    from xdptui.topology_io import TopologyError, load_topology

    try:
        topo = load_topology(args.file, validate_command=validate)
    except TopologyError as exc:
        for diag in exc.diagnostics:
            print(str(diag), file=sys.stderr)
        raise SystemExit(2) from None
    try:
        script = netns_export.lab_script(topo, args.duration)
    except netns_export.ExportError as exc:
        fail(f"xdptui export: {exc}")
    if args.output is None:
        sys.stdout.write(script)
        return 0
    try:
        Path(args.output).write_text(script)
        Path(args.output).chmod(0o755)
    except OSError as exc:
        fail(f"xdptui export: cannot write {args.output}: {exc.strerror}")
    return 0
