"""Topology YAML's reading: the file (bounded, regular), the document composed with line and
column on every node (aliases refused), diagnostics, and the small value parsers the loader's
rooms share (``xdptui.topology_io``)."""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, NodeEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from xdptui.model.limits import (
    MAX_TABLE_ENTRIES,
)
from xdptui.model.topology import (
    Loc,
    Range,
    TrafficSpec,
)
from xdptui.model.topology_spec import (
    MAC_PATTERN,
    MAP_NAME_PATTERN,
)

CommandValidator = Callable[[str], str | None]
"""Checks one command line; returns why it is refused, or None."""

T = TypeVar("T")

# bond_opts[]: the modes in which an option may be set (others: bond_opt_check_deps -> -EACCES).
PRIMARY_MODES = frozenset({"active-backup", "balance-tlb", "balance-alb"})
USER_PROGRAM = "path/to/file.py:function"
_MAC = re.compile(MAC_PATTERN)
_MAP_NAME = re.compile(MAP_NAME_PATTERN)
_DEFAULT_SOURCE = TrafficSpec(name="")
_NULL = "tag:yaml.org,2002:null"
_ONE_LINE = {c: f"\\x{c:02x}" for c in (*range(32), 127, 0x85)} | {
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_TABLE = f" (a source's flow table holds at most {MAX_TABLE_ENTRIES} entries)"


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a topology file, printed as ``FILE:LINE:COL: error: MESSAGE``."""

    loc: Loc
    message: str

    def __str__(self) -> str:
        # One problem, one line: control characters and line breaks a user wrote are escaped.
        return f"{self.loc}: error: {self.message}".translate(_ONE_LINE)


class TopologyError(Exception):
    """A topology that can't be loaded; ``diagnostics`` holds every problem, in file order."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class _Unreadable(Exception):
    """Why a topology file can't be read (the message completes "can't read file: ...")."""


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Opened non-blocking (a FIFO's open would wait for a writer) and checked on the open
    descriptor, so ``/dev/zero``, a FIFO or a directory is refused at once instead of being
    read forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        raise _Unreadable(getattr(exc, "strerror", None) or str(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
            raise _Unreadable(f"{kind}, not a regular file; give a topology .yaml file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _Unreadable(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise _Unreadable(
            f"the file is larger than {_size_text(limit)}, the most a topology may be"
        )
    return b"".join(chunks)


def _size_text(size: int) -> str:
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size} bytes"


def _compose(text: str, filename: str) -> Node | None:
    def fail(line: int, col: int, message: str) -> TopologyError:
        return TopologyError([Diagnostic(Loc(filename, line, col), f"invalid YAML: {message}")])

    try:
        root, shared = _NoAliasLoader.compose(text)
        if shared:
            raise TopologyError(
                [
                    Diagnostic(
                        Loc(filename, line, col),
                        f"invalid YAML: anchors and aliases are not supported ({what}); "
                        "write the value out where it is used",
                    )
                    for line, col, what in shared
                ]
            )
        return root
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        if exc.context and exc.problem and not exc.context.startswith("while "):
            problem = f"{exc.context}, {exc.problem}"  # e.g. "expected a single document ..."
        if mark is None:
            raise fail(1, 1, problem) from None
        raise fail(mark.line + 1, mark.column + 1, problem) from None
    except ReaderError as exc:
        pos = min(int(exc.position), len(text))
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise fail(line, col, f"{exc.reason} (character #x{int(exc.character):04x})") from None
    except yaml.YAMLError as exc:
        raise fail(1, 1, str(exc)) from None
    except RecursionError:
        raise fail(1, 1, "nested too deeply") from None


class _NoAliasLoader(yaml.SafeLoader):
    """Composes as SafeLoader does, but notes every ``&anchor`` and ``*alias`` (line, column,
    what) instead of sharing nodes: an alias becomes an empty placeholder, so nothing is
    expanded, a small file can't stand for an exponentially large tree, and every one is found
    in the same single pass."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.shared: list[tuple[int, int, str]] = []

    @classmethod
    def compose(cls, text: str) -> tuple[Node | None, list[tuple[int, int, str]]]:
        """The document's root node and the anchors and aliases found in it."""
        loader = cls(text)
        try:
            return loader.get_single_node(), loader.shared
        finally:
            loader.dispose()

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, NodeEvent) and event.anchor is not None:
            kind = "alias *" if isinstance(event, AliasEvent) else "anchor &"
            mark = event.start_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            self.shared.append((line, col, f"{kind}{event.anchor}"))
            if isinstance(event, AliasEvent):
                self.get_event()  # type: ignore[no-untyped-call]
                return ScalarNode(_NULL, "")  # never read: the file is refused
            event.anchor = None  # composed as a plain node: nothing can refer to it
        return super().compose_node(parent, index)


def _in_file_order(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    unique = list(dict.fromkeys(diagnostics))
    return sorted(unique, key=lambda d: (d.loc.line, d.loc.col))


# --- small pure helpers -------------------------------------------------------------------


class _Pair(NamedTuple):
    """One ``key: value`` of a YAML mapping, with both nodes for locations."""

    key: str
    key_node: Node
    value: Node


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _describe(node: Node) -> str:
    """What the user wrote, for ``got ...`` in messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == _NULL:
        return "nothing"
    text = str(node.value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _construct(node: ScalarNode) -> object:
    """The scalar's YAML 1.1 value (int, float, bool, str ...); the raw text if it has none."""
    try:
        return SafeConstructor().construct_object(node)
    except Exception:
        return str(node.value)


def _choices(items: Iterable[str]) -> str:
    return ", ".join(items)


def _int_text(value: object) -> int | None:
    """A YAML int, or a string of decimal digits (a quoted number); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _parse_mac(text: str) -> int | None:
    if not _MAC.match(text):
        return None
    return int("".join(f"{int(part, 16):02x}" for part in text.split(":")), 16)


def _parse_ipv4(text: str) -> int | None:
    try:
        return int(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        return None


def _cidr_hosts(text: str) -> Range | None:
    """``10.0.0.0/24`` -> .1 .. .254: the usable hosts for prefixes up to /30, else the block."""
    try:
        net = ipaddress.IPv4Network(text.strip(), strict=False)
    except ValueError:
        return None
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.prefixlen <= 30:
        return Range(first + 1, last - 1)
    return Range(first, last)


def _format_mac(value: int) -> str:
    raw = f"{value:012x}"
    return ":".join(raw[i : i + 2] for i in range(0, 12, 2))


def _dev_name_problem(name: str) -> str | None:
    """``dev_valid_name``: 1..15 bytes (IFNAMSIZ 16), not ``.``/``..``, no ``/``, ``:``, space."""
    if not name:
        return "a device name can't be empty"
    if len(name.encode()) > 15:
        return f"device name '{name}' is longer than 15 characters (IFNAMSIZ)"
    if name in (".", "..") or any(c in "/:" or c.isspace() for c in name):
        return f"device name '{name}' is invalid: no '/', ':' or spaces, not '.' or '..'"
    return None
