"""The topology loader's program resolver: the programs a file names (built-in names, Python
programs ``path/to/file.py:function``, BPF objects ``path/to/file.o[:SECTION]``) and the files
they resolve to.

A file names programs in a device's ``xdp:``, a devmap entry's ``egress:`` and the command
strings of ``timeline:`` and ``lessons:``; all of them resolve here, and every path through
:meth:`ProgramResolver.program_file`, the one place that says where a topology's program files
may be (DESIGN's Trust)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from yaml.nodes import Node

from xdptui.bpf.elf import load_object
from xdptui.bpf.verifier import check
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
                found = self.program_file(node, path, file, "BPF object")
                if found is not None:
                    text = with_program_replaced(text, file, str(found))
        return text

    def user_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.py:function`` with its file resolved by :meth:`program_file`."""
        file, _, func = name.rpartition(":")
        resolved = self.program_file(node, path, file, "user program")
        return None if resolved is None else f"{resolved}:{func}"

    def object_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.o`` / ``file.o:SECTION`` resolved as Python programs are, and verified
        (they run in xdptui's interpreter, so they need no consent)."""
        file, section = (name, None) if name.endswith(".o") else name.rsplit(":", 1)
        resolved = self.program_file(node, path, file, "BPF object")
        if resolved is None or not self.verify_object(node, path, resolved, section):
            return None
        return str(resolved) if section is None else f"{resolved}:{section}"

    def verify_object(self, node: Node, path: str, file: Path, section: str | None) -> bool:
        """Open and verify the object's program now, as ``BPF_PROG_LOAD`` would (nothing
        runs): a file ``check`` accepts loads."""
        try:
            check(load_object(file).program(section))
        except KernelError as exc:
            self.nodes.error(node, path, f"BPF object {file.name}: {exc.extack} ({exc.errno.name})")
            return False
        return True

    def program_file(self, node: Node, path: str, file: str, kind: str) -> Path | None:
        """A program file named by the topology: the one place the loader resolves a program
        path. DESIGN's Trust: a relative path resolves against the topology's own directory,
        never the current one; absolute and ``../`` paths are paths like any other (consent is
        about running code, not where it lives)."""
        try:
            given = Path(file)
            resolved = (given if given.is_absolute() else self.base_dir / given).resolve()
            found = resolved.is_file()
        except (OSError, ValueError, RuntimeError):
            resolved, found = self.base_dir / file, False
        if not found:
            self.nodes.error(node, path, f"{kind} file '{file}' not found (looked for {resolved})")
            return None
        return resolved
