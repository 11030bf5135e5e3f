"""The topology loader's program resolver: the programs a file names (built-in names, Python
programs ``path/to/file.py:function``, BPF objects ``path/to/file.o[:SECTION]``) and the files
they resolve to.

A file names programs in a device's ``xdp:``, a devmap entry's ``egress:`` and the command
strings of ``timeline:`` and ``lessons:``; all of them resolve here, and every path through
:meth:`ProgramResolver.program_file`, the one place that says where a topology's program files
may be (DESIGN's Trust)."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from yaml.nodes import Node

from xdptui.bpf.elf import load_object
from xdptui.bpf.vm import compile_program
from xdptui.commands import programs_named, with_program_replaced
from xdptui.model.catalog import did_you_mean, is_object_program, is_user_program
from xdptui.model.errors import KernelError
from xdptui.topology_nodes import NodeReader
from xdptui.topology_yaml import USER_PROGRAM, _choices


def object_file(name: str) -> str:
    """The file of a BPF object program: ``file.o`` of ``file.o`` or ``file.o:SECTION``."""
    return name if name.endswith(".o") else name.rsplit(":", 1)[0]


class ProgramResolver:
    """Program names checked and program files resolved against the topology's directory
    (``base_dir``), each problem reported into the reader's diagnostics."""

    def __init__(self, nodes: NodeReader, base_dir: Path) -> None:
        self.nodes = nodes
        self.base_dir = base_dir

    def program(self, node: Node, path: str, allowed: Collection[str], what: str) -> str | None:
        """A built-in program from ``allowed`` or ``path/to/file.py:function`` (resolved)."""
        name = self.nodes.text(node, path, f"{what} name")
        if name is None:
            return None
        if name in allowed:
            return name
        if is_user_program(name):
            return self.user_program(node, path, name)
        if is_object_program(name):
            return self.object_program(node, path, name)
        names = sorted(allowed) if isinstance(allowed, frozenset | set) else list(allowed)
        hint = did_you_mean(name, names)
        valid = f"{_choices(names)}, {USER_PROGRAM}, or a BPF object path/to/file.o"
        self.nodes.error(node, path, f"unknown {what} '{name}'{hint}; valid: {valid}")
        return None

    def in_command(self, node: Node, path: str, text: str) -> str:
        """A command string with each program file it names resolved like ``xdp:``'s and
        written back as its absolute path, so the command runs the file beside the topology."""
        for program in programs_named(text):
            if is_user_program(program):
                resolved = self.user_program(node, path, program)
                if resolved is not None:
                    text = with_program_replaced(text, program, resolved)
            elif is_object_program(program):
                file = object_file(program)
                found = self.program_file(node, path, file, "BPF object", "BPF objects")
                if found is not None:
                    text = with_program_replaced(text, file, str(found))
        return text

    def user_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.py:function`` with its file resolved by :meth:`program_file`."""
        file, _, func = name.rpartition(":")
        resolved = self.program_file(node, path, file, "user program", "Python programs")
        return None if resolved is None else f"{resolved}:{func}"

    def object_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.o`` / ``file.o:SECTION`` with the same rule as Python programs: a shared
        topology carries its objects with it (they run in xdptui's interpreter, so they need
        no consent, but a file names only what is beside it)."""
        file, section = (name, None) if name.endswith(".o") else name.rsplit(":", 1)
        resolved = self.program_file(node, path, file, "BPF object", "BPF objects")
        if resolved is None or not self.verify_object(node, path, resolved, section):
            return None
        return str(resolved) if section is None else f"{resolved}:{section}"

    def verify_object(self, node: Node, path: str, file: Path, section: str | None) -> bool:
        """Open and verify the object's program now, as ``BPF_PROG_LOAD`` would (nothing
        runs): a file ``check`` accepts loads."""
        try:
            compile_program(load_object(file).program(section))
        except KernelError as exc:
            self.nodes.error(node, path, f"BPF object {file.name}: {exc.extack} ({exc.errno.name})")
            return False
        return True

    def program_file(self, node: Node, path: str, file: str, kind: str, plural: str) -> Path | None:
        """A program file named by the topology, resolved inside its directory: the one place
        the loader resolves a program path.

        DESIGN's Trust: a file's programs resolve against the file's own directory, never the
        current one, and may not leave it (no absolute paths, no ``..`` or symlink out of it),
        so the programs a shared topology runs are the ones shipped beside it."""
        user = kind  # "user program" / "BPF object", as the messages name it
        error = self.nodes.error
        try:
            base = self.base_dir.resolve()
            if Path(file).is_absolute() or file.startswith("~"):
                error(
                    node,
                    path,
                    f"{user} '{file}' is an absolute path; a topology names its {plural} "
                    f"relative to its own directory ({base}), "
                    f"e.g. progs/{Path(file).name}",
                )
                return None
            if not Path(os.path.normpath(base / file)).is_relative_to(base):
                error(
                    node,
                    path,
                    f"{user} '{file}' is outside the topology's directory ({base}); a "
                    f"topology may only run {plural} in its directory or below it",
                )
                return None
            resolved = (base / file).resolve()
            if not resolved.is_relative_to(base):
                error(
                    node,
                    path,
                    f"{user} '{file}' leads out of the topology's directory ({base}) "
                    f"through a symbolic link, to {resolved}; a topology may only run "
                    f"{plural} in its directory or below it",
                )
                return None
            found = resolved.is_file()
        except (OSError, ValueError, RuntimeError):
            resolved, found = self.base_dir / file, False
        if not found:
            error(node, path, f"{user} file '{file}' not found (looked for {resolved})")
            return None
        return resolved
