"""Trust: which Python programs a topology file would run (DESIGN.md, "Trust").

A topology looks like data, so opening one must not run code silently. A file names Python
programs (``path/to/file.py:function``) in four places: a device's ``xdp:``, a devmap entry's
``egress:``, and the command strings of ``timeline:`` and ``lessons:`` (``... xdp obj F.py:f``,
``bpftool map update ... egress F.py:f``). :func:`user_programs` lists them all, resolved
against the topology's own directory (never the current one); ``xdptui check`` prints the list,
and ``xdptui run`` / the app / ``xdptui serve`` run none of them until the user agrees
(``--trust``, or the app's confirmation screen). Relative paths resolve against the
topology's directory; absolute and ``../`` paths are paths like any other (a shared
``../common/`` folder is how labs are laid out): consent is about running code, not about
where a file lives, and the consent lists each resolved path.

Commands the user types are the user's own and need no consent. Built-in programs run in the
simulator and need none either, nor do BPF objects (``path/to/file.o``): they run in xdptui's
eBPF interpreter, which reaches nothing outside the simulated host, and loading one is bounded
by the verifier's checks, the instruction cap and the interpreter's memory checks.
:func:`bpf_objects` lists them for ``xdptui check`` (same path rule as Python programs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xdptui.commands import programs_named
from xdptui.model.catalog import is_object_program, is_user_program
from xdptui.model.topology import Loc, Topology

__all__ = [
    "BpfObjectRef",
    "UntrustedTopology",
    "UserProgram",
    "bpf_objects",
    "consent_lines",
    "topology_dir",
    "user_programs",
]


@dataclass(frozen=True)
class UserProgram:
    """One Python program a topology names: where, and the file and function it resolves to."""

    where: str  # the field: devices.eth0.xdp, timeline do, lessons[0].steps[1].commands[0]
    loc: Loc | None  # the line that names it, where the model keeps one
    file: Path
    function: str

    def __str__(self) -> str:
        at = f"{self.loc}: " if self.loc is not None else ""
        return f"{at}{self.where}: {self.file} (function {self.function})"


def topology_dir(topology: Topology) -> Path:
    """The directory a topology's relative program paths resolve against: the file's own, or
    the current directory for a topology read from text (``<input>``), as the engine does."""
    if topology.source.startswith("<"):
        return Path.cwd()
    return Path(topology.source).parent.resolve()


def _program(spec: str, base: Path, where: str, loc: Loc | None) -> UserProgram | None:
    if not is_user_program(spec):
        return None
    file, _, function = spec.rpartition(":")
    path = Path(file)
    return UserProgram(where, loc, path if path.is_absolute() else base / path, function)


@dataclass(frozen=True)
class BpfObjectRef:
    """A BPF object a topology names (it needs no consent: listed for ``check``)."""

    where: str
    file: Path
    section: str | None

    def __str__(self) -> str:
        sec = f" (section {self.section})" if self.section else ""
        return f"{self.where}: {self.file}{sec}"


def _named(topology: Topology) -> list[tuple[str, str, Loc | None]]:
    """(program spec, field, line) for every program the file names, in file order."""
    out: list[tuple[str, str, Loc | None]] = []
    for dev in topology.devices:
        if dev.xdp is not None:
            out.append((dev.xdp.program, f"devices.{dev.name}.xdp", dev.loc))
    for m in topology.maps:
        for entry in m.entries:
            if entry.egress is not None:
                out.append((entry.egress, f"maps.{m.name}.entries.{entry.key}.egress", entry.loc))
    for event in topology.timeline:  # kept in time order: the line says which entry
        out.extend((spec, "timeline do", event.loc) for spec in programs_named(event.do))
    for i, lesson in enumerate(topology.lessons):
        for j, step in enumerate(lesson.steps):
            for k, command in enumerate(step.commands):
                where = f"lessons[{i}].steps[{j}].commands[{k}]"
                out.extend((spec, where, None) for spec in programs_named(command))
    return out


def bpf_objects(topology: Topology) -> tuple[BpfObjectRef, ...]:
    """Every BPF object ``topology`` would load, each place it is named."""
    base = topology_dir(topology)
    out = []
    for spec, where, _ in _named(topology):
        if not is_object_program(spec):
            continue
        file, section = (spec, None) if spec.endswith(".o") else spec.rsplit(":", 1)
        path = Path(file)
        out.append(BpfObjectRef(where, path if path.is_absolute() else base / path, section))
    return tuple(out)


def user_programs(topology: Topology) -> tuple[UserProgram, ...]:
    """Every Python program ``topology`` would run, in file order, each place it is named."""
    base = topology_dir(topology)
    found = [_program(spec, base, where, loc) for spec, where, loc in _named(topology)]
    return tuple(p for p in found if p is not None)


def consent_lines(programs: tuple[UserProgram, ...]) -> list[str]:
    """The files a user agrees to run, each once, with the places that name it."""
    by_file: dict[Path, list[UserProgram]] = {}
    for program in programs:
        by_file.setdefault(program.file, []).append(program)
    lines: list[str] = []
    for file, uses in by_file.items():
        functions = ", ".join(dict.fromkeys(f"{p.function}()" for p in uses))
        places = ", ".join(dict.fromkeys(p.where for p in uses))
        lines.append(f"{file}: {functions} (named by {places})")
    return lines


class UntrustedTopology(Exception):
    """A simulator was asked to run a topology that names Python programs without trust."""

    def __init__(self, topology: Topology, programs: tuple[UserProgram, ...]) -> None:
        self.programs = programs
        lines = "\n".join(f"  {line}" for line in consent_lines(programs))
        super().__init__(
            f"{topology.source} names Python programs; they run only with trust=True "
            f"(xdptui: --trust):\n{lines}"
        )
