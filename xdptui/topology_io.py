"""Topology YAML (v1) -> :class:`xdptui.model.topology.Topology`, with ``FILE:LINE:COL`` errors.

The file is *composed*, not constructed, with PyYAML's SafeLoader, so every node keeps the line
and column it came from. Every problem becomes a :class:`Diagnostic` that names the field as a
path (``devices.eth0.queues``, ``traffic[1].rate``) and says what would be valid; all problems
of a file are collected in one pass and raised together as one :class:`TopologyError`.
The fields and their rules are docs/design.md's "Topology YAML (v1)"; where a rule is the kernel's
(bond option dependencies, devmap key range, device names) the message gives its errno.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, TypeVar

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, NodeEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from xdptui.bpf.elf import load_object
from xdptui.bpf.vm import compile_program
from xdptui.commands import programs_named, with_program_replaced
from xdptui.model.catalog import (
    DEVMAP_EGRESS_OK,
    PROGRAMS,
    ParamInfo,
    did_you_mean,
    is_object_program,
    is_user_program,
    program_info,
)
from xdptui.model.errors import KernelError
from xdptui.model.limits import (
    CPUS_MAX,
    DRIVER_LIMITS,
    DURATION_MAX_NS,
    INT_MAX,
    MAX_TABLE_ENTRIES,
    MTU_MAX,
    MTU_MIN,
    RATE_MAX_BPS,
    RATE_MAX_PPS,
    SEED_MAX,
    SPEED_MAX_BPS,
    SPEED_MIN_BPS,
    TOPOLOGY_MAX_BYTES,
    U32_MAX,
    U63_MAX,
    XDP_MAX_MTU,
    flow_table_entries,
    max_channels,
    ring_sizes,
)
from xdptui.model.topology import (
    BOND_MODES,
    NIC_DRIVERS,
    PROTOS,
    XMIT_HASH_POLICIES,
    BondSpec,
    DeviceSpec,
    Lesson,
    LessonStep,
    Loc,
    MapEntrySpec,
    MapSpec,
    NicSpec,
    Range,
    TimelineEntry,
    Topology,
    TrafficSpec,
    TunSpec,
    VethSpec,
    XdpSpec,
    default_miimon,
)
from xdptui.model.topology_spec import (
    ALL_DEVICE_KEYS,
    DEVICE,
    DEVICE_TYPES,
    ENTRY_KEYS,
    LESSON_KEYS,
    MAC_PATTERN,
    MAP_KEYS,
    MAP_NAME_PATTERN,
    MAP_TYPES,
    STEP_AT_PATTERN,
    STEP_KEYS,
    TIMELINE_KEYS,
    TOP_KEYS,
    TRAFFIC_KEYS,
    TUN_MODES,
    TUN_WRITERS,
    XDP_KEYS,
    XDP_MODES,
)
from xdptui.model.units import (
    LINE,
    Rate,
    UnitError,
    parse_clock_speed,
    parse_duration_ns,
    parse_rate,
    parse_speed_bps,
)

__all__ = ["CommandValidator", "Diagnostic", "TopologyError", "load_topology", "loads_topology"]

CommandValidator = Callable[[str], str | None]
"""Checks one command line (a timeline ``do:`` or a lesson command): None, or an error message."""

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


def load_topology(path: str | Path, validate_command: CommandValidator | None = None) -> Topology:
    """Read and validate a topology file; raise :class:`TopologyError` listing every problem."""
    filename = str(path)
    try:
        data = _read_regular_file(Path(path), TOPOLOGY_MAX_BYTES)
    except _Unreadable as exc:
        raise TopologyError([Diagnostic(Loc(filename, 1, 1), f"can't read file: {exc}")]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"invalid YAML: the file is not UTF-8 (byte 0x{data[exc.start]:02x})"
        raise TopologyError([Diagnostic(Loc(filename, line, col), message)]) from None
    return loads_topology(text, filename, validate_command)


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


def loads_topology(
    text: str, filename: str = "<input>", validate_command: CommandValidator | None = None
) -> Topology:
    """Parse and validate topology YAML text; ``filename`` is used in messages and is the base
    for relative user program paths (the current directory for ``<input>``-style names)."""
    root = _compose(text, filename)
    base_dir = Path(".") if filename.startswith("<") else Path(filename).parent
    loader = _Loader(filename, base_dir, validate_command)
    topology = loader.topology(root)
    if loader.diagnostics:
        raise TopologyError(_in_file_order(loader.diagnostics))
    return topology


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


# --- the loader -----------------------------------------------------------------------------


class _Loader:
    """One pass over the composed document, collecting diagnostics instead of stopping."""

    def __init__(self, filename: str, base_dir: Path, validate: CommandValidator | None) -> None:
        self.filename = filename
        self.base_dir = base_dir
        self.validate = validate
        self.diagnostics: list[Diagnostic] = []
        self.cpus = 4
        self.device_names: list[str] = []
        self.map_names: list[str] = []
        self.mtu_nodes: dict[str, Node] = {}

    # errors and locations

    def loc(self, node: Node) -> Loc:
        mark = node.start_mark
        if mark is None:
            return Loc(self.filename, 1, 1)
        return Loc(self.filename, mark.line + 1, mark.column + 1)

    def error(self, node: Node, path: str, message: str) -> None:
        text = f"{path}: {message}" if path else message
        self.diagnostics.append(Diagnostic(self.loc(node), text))

    def expected(self, node: Node, path: str, what: str) -> None:
        self.error(node, path, f"expected {what}, got {_describe(node)}")

    # structure

    def pairs(self, node: Node, path: str, what: str) -> list[_Pair] | None:
        """A mapping's entries in order, without duplicate or non-scalar keys."""
        if not isinstance(node, MappingNode):
            self.expected(node, path, what)
            return None
        seen: dict[str, Node] = {}
        result: list[_Pair] = []
        for key_node, value in node.value:
            if not isinstance(key_node, ScalarNode):
                self.error(key_node, path, f"a key must be a plain name, got {_describe(key_node)}")
                continue
            key = str(key_node.value)
            if key == "<<" and key_node.tag == "tag:yaml.org,2002:merge":
                self.error(
                    key_node, path, "merge keys ('<<') are not supported; write the keys out"
                )
                continue
            if key in seen:
                first = self.loc(seen[key])
                self.error(key_node, path, f"duplicate key '{key}' (first at line {first.line})")
                continue
            seen[key] = key_node
            result.append(_Pair(key, key_node, value))
        return result

    def known(
        self, pairs: list[_Pair], path: str, allowed: Sequence[str], where: str = ""
    ) -> dict[str, _Pair]:
        """The pairs whose key is allowed; the others are reported with a suggestion."""
        fields: dict[str, _Pair] = {}
        for pair in pairs:
            if pair.key in allowed:
                fields[pair.key] = pair
                continue
            hint = did_you_mean(pair.key, allowed)
            valid = hint or f"; valid{where}: {_choices(allowed)}"
            what = "unknown key" if path else "unknown top-level key"
            self.error(pair.key_node, path, f"{what} '{pair.key}'{valid}")
        return fields

    def mapping(
        self, node: Node, path: str, allowed: Sequence[str], what: str
    ) -> dict[str, _Pair] | None:
        pairs = self.pairs(node, path, what)
        return None if pairs is None else self.known(pairs, path, allowed)

    def sequence(self, node: Node, path: str, what: str) -> list[Node] | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return []
        if not isinstance(node, SequenceNode):
            self.expected(node, path, what)
            return None
        return list(node.value)

    def require(
        self, fields: dict[str, _Pair], key: str, at: Node, path: str, hint: str
    ) -> Node | None:
        pair = fields.get(key)
        if pair is None:
            self.error(at, path, f"missing required key '{key}' ({hint})")
            return None
        return pair.value

    def opt(
        self,
        fields: dict[str, _Pair],
        key: str,
        path: str,
        parse: Callable[[Node, str], T | None],
        default: T,
    ) -> T:
        pair = fields.get(key)
        if pair is None:
            return default
        value = parse(pair.value, _join(path, key))
        return default if value is None else value

    # scalars

    def scalar(self, node: Node, path: str, what: str) -> ScalarNode | None:
        if not isinstance(node, ScalarNode) or node.tag == _NULL:
            self.expected(node, path, what)
            return None
        return node

    def text(self, node: Node, path: str, what: str = "a string") -> str | None:
        """The scalar exactly as written (so ``11:22:33:44:55:66`` stays text, not YAML 1.1's
        sexagesimal integer)."""
        sc = self.scalar(node, path, what)
        return None if sc is None else str(sc.value)

    def integer(
        self, node: Node, path: str, lo: int, hi: int | None = None, why: str = ""
    ) -> int | None:
        """An integer lo..hi; ``why`` (the rule behind the bounds) follows an out-of-range."""
        want = f"an integer {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        sc = self.scalar(node, path, want)
        if sc is None:
            return None
        value = _construct(sc)
        if isinstance(value, bool) or not isinstance(value, int):
            self.expected(sc, path, want)
            return None
        if value < lo or (hi is not None and value > hi):
            valid = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            self.error(sc, path, f"{value} is out of range; valid: {valid}{why}")
            return None
        return value

    def boolean(self, node: Node, path: str) -> bool | None:
        sc = self.scalar(node, path, "true or false")
        if sc is None:
            return None
        value = _construct(sc)
        if not isinstance(value, bool):
            self.expected(sc, path, "true or false")
            return None
        return value

    def choice(self, node: Node, path: str, choices: Sequence[str], what: str) -> str | None:
        text = self.text(node, path, f"a {what} ({_choices(choices)})")
        if text is None:
            return None
        if text not in choices:
            hint = did_you_mean(text, choices)
            self.error(node, path, f"unknown {what} '{text}'{hint}; valid: {_choices(choices)}")
            return None
        return text

    def numbered_choice(
        self, node: Node, path: str, choices: Sequence[str], what: str
    ) -> str | None:
        """A name from ``choices`` or its kernel number (the index), as bonding's options take."""
        if isinstance(node, ScalarNode):
            number = _int_text(_construct(node))
            if number is not None:
                if 0 <= number < len(choices):
                    return choices[number]
                valid = f"{_choices(choices)} (or 0-{len(choices) - 1})"
                self.error(node, path, f"unknown {what} {number}; valid: {valid}")
                return None
        return self.choice(node, path, choices, what)

    def unit(self, node: Node, path: str, parse: Callable[[object], T], what: str) -> T | None:
        sc = self.scalar(node, path, what)
        if sc is None:
            return None
        value = _construct(sc)
        if isinstance(value, float) and not math.isfinite(value):
            self.expected(sc, path, what)
            return None
        try:
            return parse(value)
        except UnitError as exc:
            self.error(sc, path, str(exc))
        except OverflowError:
            self.error(sc, path, f"{_describe(sc)} is too large")
        return None

    def duration(self, node: Node, path: str) -> int | None:
        ns = self.unit(node, path, parse_duration_ns, "a duration (e.g. 500us, 2ms)")
        if ns is not None and ns > DURATION_MAX_NS:
            self.error(
                node,
                path,
                f"{_describe(node)} is too long; valid: 0s..{DURATION_MAX_NS // 10**9}s "
                "(one day of simulated time)",
            )
            return None
        return ns

    def rate(self, node: Node, path: str, allow_line: bool = True) -> Rate | None:
        rate = self.unit(node, path, parse_rate, "a rate (e.g. 14.88Mpps, 40Gbps, line)")
        if rate is None:
            return None
        if rate.kind == "line" and not allow_line:
            self.error(node, path, "'line' is not a valid rate here; give pps or bps, e.g. 2Mpps")
            return None
        if rate.kind != "line" and not (math.isfinite(rate.value) and rate.value > 0):
            self.error(node, path, "a rate must be > 0 (e.g. 2Mpps or 10Gbps)")
            return None
        top = RATE_MAX_PPS if rate.kind == "pps" else RATE_MAX_BPS
        if rate.kind != "line" and rate.value > top:
            largest = f"{top / 1e9:.0f}G{rate.kind}"
            self.error(node, path, f"{_describe(node)} is too fast; valid: up to {largest}")
            return None
        return rate

    def speed(self, node: Node, path: str) -> int | None:
        speed = self.unit(node, path, parse_speed_bps, "a link speed (10G, 25G, 40G, 100G)")
        if speed is not None and not SPEED_MIN_BPS <= speed <= SPEED_MAX_BPS:
            self.error(
                node,
                path,
                f"{_describe(node)} is out of range; valid: 1M..800G "
                "(e.g. 10G, 25G, 100G; ethtool's speeds run from 1 Mb/s to 800 Gb/s)",
            )
            return None
        return speed

    # names

    def device_ref(self, node: Node, path: str) -> str | None:
        name = self.text(node, path, "a device name")
        if name is None:
            return None
        if name not in self.device_names:
            hint = did_you_mean(name, self.device_names)
            self.error(
                node, path, f"unknown device '{name}'{hint}; devices: {_choices(self.device_names)}"
            )
            return None
        return name

    def map_ref(self, node: Node, path: str) -> str | None:
        name = self.text(node, path, "a map name")
        if name is None:
            return None
        if name not in self.map_names:
            hint = did_you_mean(name, self.map_names)
            valid = f"maps: {_choices(self.map_names)}" if self.map_names else "no maps are defined"
            self.error(node, path, f"unknown map '{name}'{hint}; {valid}")
            return None
        return name

    def program(self, node: Node, path: str, allowed: Collection[str], what: str) -> str | None:
        """A built-in program from ``allowed`` or ``path/to/file.py:function`` (resolved)."""
        name = self.text(node, path, f"{what} name")
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
        self.error(node, path, f"unknown {what} '{name}'{hint}; valid: {valid}")
        return None

    def user_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.py:function`` as an absolute path inside the topology's directory.

        DESIGN's Trust: a file's Python programs resolve against the file's own directory,
        never the current one, and may not leave it (no absolute paths, no ``..`` or symlink
        out of it), so the programs a shared topology runs are the ones shipped beside it."""
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
            self.error(node, path, f"BPF object {file.name}: {exc.extack} ({exc.errno.name})")
            return False
        return True

    def program_file(self, node: Node, path: str, file: str, kind: str, plural: str) -> Path | None:
        """A program file named by the topology, resolved inside its directory."""
        user = kind  # "user program" / "BPF object", as the messages name it
        try:
            base = self.base_dir.resolve()
            if Path(file).is_absolute() or file.startswith("~"):
                self.error(
                    node,
                    path,
                    f"{user} '{file}' is an absolute path; a topology names its {plural} "
                    f"relative to its own directory ({base}), "
                    f"e.g. progs/{Path(file).name}",
                )
                return None
            if not Path(os.path.normpath(base / file)).is_relative_to(base):
                self.error(
                    node,
                    path,
                    f"{user} '{file}' is outside the topology's directory ({base}); a "
                    f"topology may only run {plural} in its directory or below it",
                )
                return None
            resolved = (base / file).resolve()
            if not resolved.is_relative_to(base):
                self.error(
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
            self.error(node, path, f"{user} file '{file}' not found (looked for {resolved})")
            return None
        return resolved

    # the document

    def topology(self, root: Node | None) -> Topology:
        default_name = "topology" if self.filename.startswith("<") else Path(self.filename).stem
        if root is None or (isinstance(root, ScalarNode) and root.tag == _NULL):
            self.diagnostics.append(
                Diagnostic(
                    Loc(self.filename, 1, 1), "the file is empty; a topology needs 'devices:'"
                )
            )
            return Topology(name=default_name, source=self.filename)
        if not isinstance(root, MappingNode):
            self.error(
                root, "", f"a topology is a mapping (name:, devices:, ...), not {_describe(root)}"
            )
            return Topology(name=default_name, source=self.filename)
        fields = self.known(self.pairs(root, "", "a mapping") or [], "", TOP_KEYS)
        name = self.opt(fields, "name", "", self.text, default_name)
        description = self.opt(fields, "description", "", self.text, "")
        seed = self.opt(fields, "seed", "", lambda n, p: self.integer(n, p, 0, SEED_MAX), 1)
        self.cpus = self.opt(fields, "cpus", "", lambda n, p: self.integer(n, p, 1, CPUS_MAX), 4)
        self.map_names = self.prescan_maps(fields.get("maps"))
        devices_node = self.require(fields, "devices", root, "", "a mapping of device names")
        devices = self.devices(devices_node) if devices_node is not None else ()
        no_timeline: tuple[TimelineEntry, ...] = ()
        no_lessons: tuple[Lesson, ...] = ()
        timeline = self.opt(fields, "timeline", "", self.timeline, no_timeline)
        lessons = self.opt(fields, "lessons", "", self.lessons, no_lessons)
        self.check_step_refs(timeline, lessons)
        return Topology(
            name=name,
            description=description,
            seed=seed,
            cpus=self.cpus,
            devices=devices,
            maps=self.opt(fields, "maps", "", self.maps, ()),
            traffic=self.opt(fields, "traffic", "", self.traffic, ()),
            timeline=timeline,
            lessons=lessons,
            source=self.filename,
        )

    def check_step_refs(
        self, timeline: tuple[TimelineEntry, ...], lessons: tuple[Lesson, ...]
    ) -> None:
        """Every ``at: step N`` names a step the lessons have."""
        for entry in timeline:
            if entry.step is None:
                continue
            lesson, step = entry.step
            if lesson >= len(lessons):
                have = f"has {len(lessons)}" if lessons else "has none"
                where = f"lesson {lesson + 1}" if lesson else "a lesson"
                self.diagnostics.append(
                    Diagnostic(entry.loc, f"timeline: at: names {where}; the topology {have}")
                )
            elif step >= len(lessons[lesson].steps):
                n = len(lessons[lesson].steps)
                self.diagnostics.append(
                    Diagnostic(
                        entry.loc,
                        f"timeline: at: step {step + 1} of lesson {lesson + 1} "
                        f"({lessons[lesson].title!r}) does not exist; valid: step 1..{n}",
                    )
                )

    def prescan_maps(self, pair: _Pair | None) -> list[str]:
        """Map names, so device programs can refer to maps defined further down."""
        if pair is None or not isinstance(pair.value, MappingNode):
            return []
        return [str(k.value) for k, _ in pair.value.value if isinstance(k, ScalarNode)]

    def prescan_devices(self, pairs: list[_Pair]) -> list[str]:
        """Declared device names plus the veth peers that will be synthesized, in final order."""
        declared = [p.key for p in pairs]
        names: list[str] = []
        for pair in pairs:
            names.append(pair.key)
            peer = self.peek_peer(pair.value)
            if peer is not None and peer not in declared and peer not in names:
                names.append(peer)
        return names

    @staticmethod
    def peek_peer(node: Node) -> str | None:
        if not isinstance(node, MappingNode):
            return None
        values = {str(k.value): v for k, v in node.value if isinstance(k, ScalarNode)}
        kind, peer = values.get("type"), values.get("peer")
        if not (isinstance(kind, ScalarNode) and kind.value == "veth"):
            return None
        if isinstance(peer, ScalarNode) and peer.tag != _NULL:
            return str(peer.value)
        return None

    # devices

    def devices(self, node: Node) -> tuple[DeviceSpec, ...]:
        pairs = self.pairs(node, "devices", "a mapping of device names to their settings")
        if pairs is None:
            return ()
        if not pairs:
            self.error(node, "devices", "at least one device is needed")
            return ()
        self.device_names = self.prescan_devices(pairs)
        specs: list[DeviceSpec] = []
        peer_nodes: dict[str, Node] = {}
        slave_nodes: dict[str, list[tuple[str, Node]]] = {}
        for pair in pairs:
            path = f"devices.{pair.key}"
            problem = _dev_name_problem(pair.key)
            if problem is not None:
                self.error(pair.key_node, path, problem)
            spec = self.device(pair, path, peer_nodes, slave_nodes)
            if spec is not None:
                specs.append(spec)
        specs = self.link_veths(specs, peer_nodes)
        self.check_bonds(specs, slave_nodes)
        by_name = {s.name: s for s in specs}
        for bond in specs:
            if isinstance(bond, BondSpec) and bond.xdp is not None:
                for slave in bond.slaves:
                    nic = by_name.get(slave)
                    if isinstance(nic, NicSpec) and DRIVER_LIMITS[nic.driver].native_xdp:
                        program = f"{bond.name}'s program {bond.xdp.program}, pushed to its slaves"
                        self.check_xdp_mtu(nic.name, nic.mtu, program)
        return tuple(specs)

    def check_xdp_mtu(self, dev: str, mtu: int, program: str, other: str = "") -> None:
        """A native program needs frames that fit one buffer (``ice_xdp_setup_prog``,
        ``ixgbe_xdp_setup``: -EINVAL "MTU too large for XDP")."""
        node = self.mtu_nodes.get(dev)
        if node is None or mtu <= XDP_MAX_MTU:
            return
        self.error(
            node,
            f"devices.{dev}.mtu",
            f"{mtu} is too large for native XDP ({program}); valid: {MTU_MIN}..{XDP_MAX_MTU}, "
            f"one buffer per frame (the driver answers EINVAL: MTU too large for XDP){other}",
        )

    def device(
        self,
        pair: _Pair,
        path: str,
        peer_nodes: dict[str, Node],
        slave_nodes: dict[str, list[tuple[str, Node]]],
    ) -> DeviceSpec | None:
        pairs = self.pairs(pair.value, path, f"a mapping with 'type:' ({_choices(DEVICE_TYPES)})")
        if pairs is None:
            return None
        by_key = {p.key: p for p in pairs}
        if "type" not in by_key:
            self.error(
                pair.key_node, path, f"missing required key 'type' ({_choices(DEVICE_TYPES)})"
            )
            self.known(pairs, path, ALL_DEVICE_KEYS)
            return None
        kind = self.choice(by_key["type"].value, f"{path}.type", DEVICE_TYPES, "device type")
        if kind is None:
            return None
        fields = self.known(pairs, path, DEVICE.keys(kind), f" for a {kind}")
        if "mtu" in fields:
            self.mtu_nodes[pair.key] = fields["mtu"].value
        common = _Common(
            name=pair.key,
            up=self.opt(fields, "up", path, self.boolean, True),
            mtu=self.opt(
                fields, "mtu", path, lambda n, p: self.integer(n, p, MTU_MIN, MTU_MAX), 1500
            ),
            xdp=self.opt(fields, "xdp", path, self.xdp, None),
            loc=self.loc(pair.key_node),
        )
        if kind == "nic":
            return self.nic(fields, path, common)
        if kind == "veth":
            return self.veth(fields, path, common, pair.key_node, peer_nodes)
        if kind == "bond":
            return self.bond(fields, path, common, slave_nodes)
        return self.tun(fields, path, common)

    def nic(self, fields: dict[str, _Pair], path: str, c: _Common) -> NicSpec:
        driver = self.opt(fields, "driver", path, self.driver, "ice")
        limit = max_channels(driver, self.cpus)
        why = (
            f" (ethtool -L takes 1..{limit} on {driver} with {self.cpus} CPUs: "
            f"the driver's {DRIVER_LIMITS[driver].max_queues} queues, at most one per CPU)"
        )
        queues = self.opt(
            fields, "queues", path, lambda n, p: self.integer(n, p, 1, limit, why), None
        )
        irq_cpus = self.opt(fields, "irq_cpus", path, self.irq_cpus, None)
        if irq_cpus is not None and queues is None and len(irq_cpus) > limit:
            self.error(
                fields["irq_cpus"].value,
                f"{path}.irq_cpus",
                f"lists {len(irq_cpus)} CPUs, one per queue, but the device takes at most "
                f"{limit} queues{why}",
            )
            irq_cpus = None
        if irq_cpus is not None and queues is not None and len(irq_cpus) != queues:
            self.error(
                fields["irq_cpus"].value,
                f"{path}.irq_cpus",
                f"lists {len(irq_cpus)} CPUs but the device has {queues} queues; "
                "give one CPU per queue",
            )
        if irq_cpus is not None and queues is None:
            queues = len(irq_cpus)
        xdp = c.xdp
        if xdp is not None and xdp.mode in (None, "native") and DRIVER_LIMITS[driver].native_xdp:
            self.check_xdp_mtu(
                c.name, c.mtu, f"its program {xdp.program}", ", or attach it with mode: generic"
            )
        return NicSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            driver=driver,
            speed_bps=self.opt(fields, "speed", path, self.speed, 100_000_000_000),
            queues=queues,
            ring=self.opt(fields, "ring", path, lambda n, p: self.ring_size(n, p, driver), None),
            tx_ring=self.opt(
                fields, "tx_ring", path, lambda n, p: self.ring_size(n, p, driver), None
            ),
            irq_cpus=irq_cpus,
            card=self.opt(fields, "card", path, self.text, None),
        )

    def driver(self, node: Node, path: str) -> str | None:
        return self.choice(node, path, NIC_DRIVERS, "driver")

    def ring_size(self, node: Node, path: str, driver: str) -> int | None:
        sizes = ring_sizes(driver)
        valid = f"valid on {driver}: {_choices(map(str, sizes))}"
        why = f" (ethtool -G takes up to {DRIVER_LIMITS[driver].rx_ring_max} on {driver})"
        size = self.integer(node, path, sizes[0], sizes[-1], why)
        if size is not None and size not in sizes:
            self.error(node, path, f"{size} is not a power of two; {valid}")
            return None
        return size

    def irq_cpus(self, node: Node, path: str) -> tuple[int, ...] | None:
        items = self.sequence(node, path, "a list of CPU numbers, one per queue")
        if items is None:
            return None
        if not items:
            self.error(node, path, "needs one CPU per queue, got an empty list")
            return None
        if len(items) > CPUS_MAX:
            self.error(node, path, f"lists {len(items)} CPUs; there are at most {CPUS_MAX}")
            return None
        cpus = [
            self.integer(item, f"{path}[{i}]", 0, self.cpus - 1) for i, item in enumerate(items)
        ]
        return tuple(c for c in cpus if c is not None) if None not in cpus else None

    def veth(
        self,
        fields: dict[str, _Pair],
        path: str,
        c: _Common,
        key_node: Node,
        peer_nodes: dict[str, Node],
    ) -> VethSpec:
        peer_node = self.require(fields, "peer", key_node, path, "the name of the other end")
        peer = None if peer_node is None else self.text(peer_node, f"{path}.peer", "a device name")
        if peer is not None and peer_node is not None:
            problem = _dev_name_problem(peer)
            if problem is not None:
                self.error(peer_node, f"{path}.peer", problem)
            else:
                peer_nodes[c.name] = peer_node
        return VethSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            peer=peer or "",
            queues=self.opt(fields, "queues", path, lambda n, p: self.integer(n, p, 1, 64), 1),
        )

    def link_veths(self, specs: list[DeviceSpec], peer_nodes: dict[str, Node]) -> list[DeviceSpec]:
        """Check both ends of each pair agree and add the ends that are not listed, each right
        after the device that declares it (``veth_newlink`` creates both)."""
        by_name = {s.name: s for s in specs}
        reported: set[frozenset[str]] = set()
        synthesized: dict[str, str] = {}
        result: list[DeviceSpec] = []
        for spec in specs:
            result.append(spec)
            node = peer_nodes.get(spec.name)
            if not isinstance(spec, VethSpec) or node is None:
                continue
            path, peer = f"devices.{spec.name}.peer", spec.peer
            other = by_name.get(peer)
            if peer == spec.name:
                self.error(node, path, "a veth can't be its own peer; name the other end")
            elif isinstance(other, VethSpec):
                pair = frozenset((spec.name, peer))
                if other.peer != spec.name and pair not in reported:
                    reported.add(pair)
                    self.error(
                        node,
                        path,
                        f"'{peer}' is listed with peer '{other.peer}', not '{spec.name}'; "
                        "the two ends of a veth pair must name each other",
                    )
            elif other is not None:
                self.error(
                    node, path, f"'{peer}' is a {other.type}, not a veth; a veth's peer is a veth"
                )
            elif peer in synthesized:
                self.error(node, path, f"'{peer}' is already the peer of {synthesized[peer]}")
            else:
                synthesized[peer] = spec.name
                result.append(VethSpec(name=peer, peer=spec.name, loc=self.loc(node)))
        return result

    def bond(
        self,
        fields: dict[str, _Pair],
        path: str,
        c: _Common,
        slave_nodes: dict[str, list[tuple[str, Node]]],
    ) -> BondSpec:
        mode = self.opt(
            fields,
            "mode",
            path,
            lambda n, p: self.numbered_choice(n, p, BOND_MODES, "bond mode"),
            "balance-rr",
        )
        policy = self.opt(
            fields,
            "xmit_hash_policy",
            path,
            lambda n, p: self.numbered_choice(n, p, XMIT_HASH_POLICIES, "xmit_hash_policy"),
            "layer2",
        )
        slaves: tuple[str, ...] = ()
        if "slaves" in fields:
            slaves, slave_nodes[c.name] = self.slaves(fields["slaves"].value, f"{path}.slaves")
        primary = self.opt(fields, "primary", path, self.text, None)
        if primary is not None:
            self.check_primary(fields["primary"].value, f"{path}.primary", c.name, mode, slaves)
        pps = self.opt(
            fields, "packets_per_slave", path, lambda n, p: self.integer(n, p, 0, 65535), 1
        )
        if "packets_per_slave" in fields and mode != "balance-rr":
            self.error(
                fields["packets_per_slave"].key_node,
                f"{path}.packets_per_slave",
                f"packets_per_slave is only valid in balance-rr mode, not {mode} "
                "(the kernel answers EACCES)",
            )
        return BondSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            mode=mode,
            xmit_hash_policy=policy,
            slaves=slaves,
            miimon_ms=self.opt(fields, "miimon", path, self.miimon, default_miimon(mode)),
            primary=primary if primary in slaves else None,
            packets_per_slave=pps,
        )

    def slaves(self, node: Node, path: str) -> tuple[tuple[str, ...], list[tuple[str, Node]]]:
        """The slave names that resolve, with path and node each (checked across bonds later)."""
        items = self.sequence(node, path, "a list of device names")
        names: list[str] = []
        nodes: list[tuple[str, Node]] = []
        for i, item in enumerate(items or []):
            name = self.device_ref(item, f"{path}[{i}]")
            if name is None:
                continue
            if name in names:
                self.error(item, f"{path}[{i}]", f"'{name}' is listed twice")
                continue
            names.append(name)
            nodes.append((f"{path}[{i}]", item))
        return tuple(names), nodes

    def check_primary(
        self, node: Node, path: str, bond: str, mode: str, slaves: tuple[str, ...]
    ) -> None:
        primary = str(node.value)
        if primary not in slaves:
            hint = did_you_mean(primary, slaves)
            valid = f"slaves: {_choices(slaves)}" if slaves else f"{bond} has no slaves"
            self.error(node, path, f"'{primary}' is not a slave of {bond}{hint}; {valid}")
        if mode not in PRIMARY_MODES:
            self.error(
                node,
                path,
                "primary is only valid in active-backup, balance-tlb or balance-alb mode, "
                f"not {mode} "
                "(the kernel answers EACCES)",
            )

    def miimon(self, node: Node, path: str) -> int | None:
        """Milliseconds: an integer, or a duration with a unit that is a whole number of ms."""
        if isinstance(node, ScalarNode) and isinstance(_construct(node), str):
            ns = self.duration(node, path)
            if ns is None:
                return None
            if ns % 1_000_000:
                self.error(node, path, "miimon is a whole number of milliseconds (e.g. 100)")
                return None
            return ns // 1_000_000
        return self.integer(node, path, 0, 2**31 - 1)

    def check_bonds(
        self, specs: list[DeviceSpec], slave_nodes: dict[str, list[tuple[str, Node]]]
    ) -> None:
        """Enslave in file order as the kernel would: not the bond itself (-EPERM), one master
        per device (-EBUSY), and no loops of nested bonds (``__netdev_upper_dev_link``, -EBUSY)."""
        master: dict[str, str] = {}

        def uppers(dev: str) -> list[str]:
            chain = [dev]
            while chain[-1] in master and master[chain[-1]] not in chain:
                chain.append(master[chain[-1]])
            return chain

        for spec in specs:
            if not isinstance(spec, BondSpec):
                continue
            for path, node in slave_nodes.get(spec.name, []):
                slave = str(node.value)
                chain = uppers(spec.name)
                if slave == spec.name:
                    self.error(
                        node, path, "cannot enslave bond to itself (the kernel answers EPERM)"
                    )
                elif slave in master:
                    self.error(
                        node,
                        path,
                        f"'{slave}' is already a slave of {master[slave]}; a device has one master "
                        "(the kernel answers EBUSY)",
                    )
                elif slave in chain:
                    loop = " -> ".join([*reversed(chain[: chain.index(slave) + 1]), slave])
                    self.error(
                        node,
                        path,
                        f"enslaving '{slave}' would make a loop of bonds ({loop}) "
                        "(the kernel answers EBUSY)",
                    )
                else:
                    master[slave] = spec.name

    def tun(self, fields: dict[str, _Pair], path: str, c: _Common) -> TunSpec:
        mode = self.opt(
            fields, "mode", path, lambda n, p: self.choice(n, p, TUN_MODES, "tun mode"), "tap"
        )
        writer = self.opt(
            fields,
            "writer",
            path,
            lambda n, p: self.choice(n, p, TUN_WRITERS, "writer"),
            "write",
        )
        return TunSpec(
            name=c.name,
            up=c.up,
            mtu=c.mtu,
            xdp=c.xdp,
            loc=c.loc,
            mode="tun" if mode == "tun" else "tap",
            queues=self.opt(fields, "queues", path, lambda n, p: self.integer(n, p, 1, 256), 1),
            tx_queue_len=self.opt(
                fields, "tx_queue_len", path, lambda n, p: self.integer(n, p, 1, U32_MAX), 500
            ),
            vnet_hdr=self.opt(fields, "vnet_hdr", path, self.boolean, True),
            reader=self.opt(
                fields, "reader", path, lambda n, p: self.rate(n, p, allow_line=False), None
            ),
            writer="vhost" if writer == "vhost" else "write",
            blocking=self.opt(fields, "blocking", path, self.boolean, False),
            zerocopy=self.opt(fields, "zerocopy", path, self.boolean, False),
            sndbuf=self.opt(
                fields, "sndbuf", path, lambda n, p: self.integer(n, p, 1, INT_MAX), None
            ),
            napi_frags=self.opt(fields, "napi_frags", path, self.boolean, False),
        )

    # xdp programs

    def xdp(self, node: Node, path: str) -> XdpSpec | None:
        if isinstance(node, ScalarNode):
            names = [p.name for p in PROGRAMS]
            program = self.program(node, path, names, "program")
            if program is None:
                return None
            self.params(program, [], node, path)
            return XdpSpec(program)
        fields = self.mapping(node, path, XDP_KEYS, "a program name or {program, mode, params}")
        if fields is None:
            return None
        prog_node = self.require(fields, "program", node, path, f"a program name or {USER_PROGRAM}")
        names = [p.name for p in PROGRAMS]
        program = (
            None
            if prog_node is None
            else self.program(prog_node, f"{path}.program", names, "program")
        )
        mode = self.opt(
            fields, "mode", path, lambda n, p: self.choice(n, p, XDP_MODES, "XDP mode"), None
        )
        param_pairs: list[_Pair] = []
        if "params" in fields:
            param_pairs = (
                self.pairs(fields["params"].value, f"{path}.params", "a mapping of params") or []
            )
        section = self.opt(fields, "section", path, lambda n, p: self.text(n, p, "a section"), None)
        if program is None:
            return None
        if section is not None:
            if not is_object_program(program):
                self.error(
                    fields["section"].value,
                    f"{path}.section",
                    f"section applies to a BPF object (path/to/file.o), not to {program}",
                )
                return None
            file = program if program.endswith(".o") else program.rsplit(":", 1)[0]
            if not self.verify_object(
                fields["section"].value, f"{path}.section", Path(file), section
            ):
                return None
            program = f"{file}:{section}"
        params = self.params(program, param_pairs, node, f"{path}.params")
        return XdpSpec(program, next((m for m in XDP_MODES if m == mode), None), params)

    def params(
        self, program: str, pairs: list[_Pair], at: Node, path: str
    ) -> tuple[tuple[str, str], ...]:
        """Check params against the catalog; values are normalised text (ints in decimal,
        bools as 0/1). User programs take any params."""
        info = program_info(program)
        result: dict[str, str] = {}
        if is_object_program(program) and pairs:
            self.error(
                pairs[0].key_node,
                path,
                "a BPF object takes no params (its configuration is its maps and .rodata)",
            )
            return ()
        for pair in pairs:
            ppath = _join(path, pair.key)
            param = info.param(pair.key) if info is not None else None
            if info is not None and param is None:
                valid = _choices(p.name for p in info.params) or "none"
                hint = did_you_mean(pair.key, [p.name for p in info.params])
                self.error(
                    pair.key_node,
                    path,
                    f"unknown param '{pair.key}' for {program}{hint}; valid: {valid}",
                )
                continue
            value = self.param_value(param, pair.value, ppath)
            if value is not None:
                result[pair.key] = value
        for param in info.params if info is not None else ():
            if (
                param.default is None
                and param.name not in result
                and param.name not in {p.key for p in pairs}
            ):
                self.error(
                    at,
                    path,
                    f"{program} needs param '{param.name}' ({param.help}); "
                    f"write xdp: {{program: {program}, params: {{{param.name}: ...}}}}",
                )
        return tuple(sorted(result.items()))

    def param_value(self, param: ParamInfo | None, node: Node, path: str) -> str | None:
        if param is None:
            return self.text(node, path, "a param value")
        if param.kind == "int":
            sc = self.scalar(node, path, "an integer")
            value = None if sc is None else _construct(sc)
            if sc is not None and (isinstance(value, bool) or not isinstance(value, int)):
                self.expected(sc, path, "an integer")
                return None
            return None if value is None else str(value)
        if param.kind == "bool":
            sc = self.scalar(node, path, "0, 1, true or false")
            value = None if sc is None else _construct(sc)
            if isinstance(value, bool) or value in (0, 1):
                return "1" if value else "0"
            if sc is not None:
                self.expected(sc, path, "0, 1, true or false")
            return None
        if param.kind == "dev":
            return self.device_ref(node, path)
        if param.kind == "map":
            return self.map_ref(node, path)
        text = self.text(node, path, "an IPv4 address")
        if text is not None and _parse_ipv4(text) is None:
            self.error(node, path, f"'{text}' is not an IPv4 address (e.g. 10.0.0.1)")
            return None
        return text

    # maps

    def maps(self, node: Node, path: str) -> tuple[MapSpec, ...] | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return ()
        pairs = self.pairs(node, path, "a mapping of map names to {type, max_entries, entries}")
        specs = [self.map_spec(pair, _join(path, pair.key)) for pair in pairs or []]
        return tuple(s for s in specs if s is not None)

    def map_spec(self, pair: _Pair, path: str) -> MapSpec | None:
        if not _MAP_NAME.match(pair.key):
            self.error(
                pair.key_node,
                path,
                "a map name is 1-15 letters, digits, '_' or '.' (BPF_OBJ_NAME_LEN)",
            )
        fields = self.mapping(pair.value, path, MAP_KEYS, "a mapping {type, max_entries, entries}")
        if fields is None:
            return None
        type_node = self.require(fields, "type", pair.key_node, path, _choices(MAP_TYPES))
        kind = (
            None
            if type_node is None
            else self.choice(type_node, f"{path}.type", MAP_TYPES, "map type")
        )
        limit = 1 << 31 if kind == "devmap_hash" else U32_MAX
        size_node = self.require(fields, "max_entries", pair.key_node, path, "an integer > 0")
        size = (
            None if size_node is None else self.integer(size_node, f"{path}.max_entries", 1, limit)
        )
        entries: tuple[MapEntrySpec, ...] = ()
        if "entries" in fields:
            entries = self.map_entries(fields["entries"].value, f"{path}.entries", kind, size)
        if kind is None or size is None:
            return None
        map_type: Literal["devmap", "devmap_hash"] = (
            "devmap_hash" if kind == "devmap_hash" else "devmap"
        )
        return MapSpec(pair.key, map_type, size, entries, loc=self.loc(pair.key_node))

    def map_entries(
        self, node: Node, path: str, kind: str | None, size: int | None
    ) -> tuple[MapEntrySpec, ...]:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return ()
        pairs = self.pairs(node, path, "a mapping of keys to devices")
        entries: dict[int, MapEntrySpec] = {}
        for pair in pairs or []:
            epath = _join(path, pair.key)
            key = self.map_key(pair, epath, kind, size)
            if key is not None and key in entries:
                self.error(pair.key_node, epath, f"key {key} is given twice")
                continue
            entry = self.map_entry(pair.value, epath)
            if key is not None and entry is not None:
                dev, egress = entry
                entries[key] = MapEntrySpec(key, dev, egress, loc=self.loc(pair.key_node))
        if kind == "devmap_hash" and size is not None and len(entries) > size:
            self.error(
                node,
                path,
                f"{len(entries)} entries don't fit max_entries {size} (the kernel answers E2BIG)",
            )
        return tuple(entries[k] for k in sorted(entries))

    def map_key(self, pair: _Pair, path: str, kind: str | None, size: int | None) -> int | None:
        key = (
            _int_text(_construct(pair.key_node)) if isinstance(pair.key_node, ScalarNode) else None
        )
        if key is None or key > U32_MAX:
            self.error(
                pair.key_node,
                path,
                f"a map key is an integer 0..{U32_MAX}, got {_describe(pair.key_node)}",
            )
            return None
        if kind == "devmap" and size is not None and key >= size:
            self.error(
                pair.key_node,
                path,
                f"key {key} is out of range for a devmap with max_entries {size} "
                f"(the kernel answers E2BIG); valid: 0..{size - 1}",
            )
            return None
        return key

    def map_entry(self, node: Node, path: str) -> tuple[str, str | None] | None:
        if isinstance(node, ScalarNode):
            dev = self.device_ref(node, path)
            return None if dev is None else (dev, None)
        fields = self.mapping(node, path, ENTRY_KEYS, "a device name or {dev, egress}")
        if fields is None:
            return None
        dev_node = self.require(fields, "dev", node, path, "the target device")
        dev = None if dev_node is None else self.device_ref(dev_node, f"{path}.dev")
        egress = self.opt(
            fields,
            "egress",
            path,
            lambda n, p: self.program(n, p, DEVMAP_EGRESS_OK, "devmap egress program"),
            None,
        )
        return None if dev is None else (dev, egress)

    # traffic

    def traffic(self, node: Node, path: str) -> tuple[TrafficSpec, ...] | None:
        items = self.sequence(node, path, "a list of traffic sources")
        names: dict[str, int] = {}
        specs: list[TrafficSpec] = []
        for i, item in enumerate(items or []):
            parsed = self.source(item, f"{path}[{i}]")
            if parsed is None:
                continue
            spec, name_node = parsed
            if spec.name in names:
                first = names[spec.name]
                self.error(
                    name_node,
                    f"{path}[{i}].name",
                    f"duplicate source name '{spec.name}' (first used by {path}[{first}])",
                )
                continue
            names[spec.name] = i
            specs.append(spec)
        return tuple(specs)

    def source(self, node: Node, path: str) -> tuple[TrafficSpec, Node] | None:
        """One source, and the node of its name (for the uniqueness check)."""
        fields = self.mapping(node, path, TRAFFIC_KEYS, "a mapping {name, to|from, rate, ...}")
        if fields is None:
            return None
        name_node = self.require(fields, "name", node, path, "a unique source name")
        name = None if name_node is None else self.text(name_node, f"{path}.name")
        to = self.opt(fields, "to", path, self.device_ref, None)
        from_ = self.opt(fields, "from", path, self.device_ref, None)
        if "to" in fields and "from" in fields:
            self.error(
                fields["from"].key_node,
                path,
                "give exactly one of 'to' (frames arrive on the device) and 'from' "
                "(the local stack sends out of it), not both",
            )
        elif "to" not in fields and "from" not in fields:
            self.error(
                node,
                path,
                "missing 'to: DEV' (frames arrive on DEV) "
                "or 'from: DEV' (the local stack sends out of DEV)",
            )
        spec = TrafficSpec(
            name=name or "",
            to=to,
            from_=from_,
            rate=self.opt(fields, "rate", path, self.rate, LINE),
            count=self.opt(
                fields, "count", path, lambda n, p: self.integer(n, p, 1, U63_MAX), None
            ),
            start_ns=self.opt(fields, "start", path, self.duration, 0),
            sizes=self.opt(fields, "size", path, self.sizes, (64,)),
            proto=self.opt(
                fields, "proto", path, lambda n, p: self.choice(n, p, PROTOS, "proto"), "udp"
            ),
            src_mac=self.opt(fields, "src_mac", path, self.mac_range, _DEFAULT_SOURCE.src_mac),
            dst_mac=self.opt(fields, "dst_mac", path, self.mac_range, _DEFAULT_SOURCE.dst_mac),
            src_ip=self.opt(fields, "src_ip", path, self.ip_range, _DEFAULT_SOURCE.src_ip),
            dst_ip=self.opt(fields, "dst_ip", path, self.ip_range, _DEFAULT_SOURCE.dst_ip),
            src_port=self.opt(fields, "src_port", path, self.port_range, _DEFAULT_SOURCE.src_port),
            dst_port=self.opt(fields, "dst_port", path, self.port_range, _DEFAULT_SOURCE.dst_port),
            vlan=self.opt(fields, "vlan", path, lambda n, p: self.integer(n, p, 1, 4094), None),
            flows=self.opt(
                fields,
                "flows",
                path,
                lambda n, p: self.integer(n, p, 1, MAX_TABLE_ENTRIES, _TABLE),
                1,
            ),
            random=self.opt(fields, "random", path, self.boolean, False),
            gso=self.opt(fields, "gso", path, self.share, 0.0),
            loc=self.loc(node),
        )
        if not self.check_flow_table(spec, fields, node, path):
            return None
        return None if name is None or name_node is None else (spec, name_node)

    def check_flow_table(
        self, spec: TrafficSpec, fields: dict[str, _Pair], node: Node, path: str
    ) -> bool:
        """The source's flow table fits (``build_flow_table``: ``lcm(flows, len(sizes))``
        entries, stretched to a multiple of 20 for a GSO share strictly between 0 and 1)."""
        n_sizes = len(spec.sizes)
        entries = flow_table_entries(spec.flows, n_sizes, spec.gso)
        if entries <= MAX_TABLE_ENTRIES:
            return True
        gso = 0.0 < spec.gso < 1.0
        need = f"lcm({spec.flows} flows, {n_sizes} sizes{', 20 for the GSO share' if gso else ''})"
        step = math.lcm(n_sizes, 20) if gso else n_sizes
        best = (min(spec.flows, MAX_TABLE_ENTRIES) // step) * step
        fix = (
            f"e.g. flows: {best} (a multiple of {step})"
            if best
            else f"use fewer sizes (at most {MAX_TABLE_ENTRIES // (20 if gso else 1)})"
        )
        key = next((k for k in ("flows", "size", "gso") if k in fields), None)
        at = fields[key].value if key is not None else node
        self.error(
            at,
            _join(path, key) if key else path,
            f"the flow table needs {need} = {entries} entries, more than the "
            f"{MAX_TABLE_ENTRIES} a source may have; valid: flows whose table is at most "
            f"{MAX_TABLE_ENTRIES} entries, {fix}",
        )
        return False

    def sizes(self, node: Node, path: str) -> tuple[int, ...] | None:
        if isinstance(node, SequenceNode):
            if not node.value:
                self.error(node, path, "a size mix needs at least one size (60..9600)")
                return None
            sizes = [self.integer(n, f"{path}[{i}]", 60, 9600) for i, n in enumerate(node.value)]
            return None if None in sizes else tuple(s for s in sizes if s is not None)
        size = self.integer(node, path, 60, 9600)
        return None if size is None else (size,)

    def share(self, node: Node, path: str) -> float | None:
        what = "a share 0..1 (e.g. 0.3)"
        sc = self.scalar(node, path, what)
        if sc is None:
            return None
        value = _construct(sc)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.expected(sc, path, what)
            return None
        if not (math.isfinite(value) and 0 <= value <= 1):
            self.error(sc, path, f"{value} is out of range; valid: 0..1")
            return None
        return float(value)

    def field_range(
        self,
        node: Node,
        path: str,
        what: str,
        parse: Callable[[str], int | None],
        show: Callable[[int], str],
    ) -> Range | None:
        """One value or ``first-last``, first <= last."""
        text = self.text(node, path, what)
        if text is None:
            return None
        first_text, dash, last_text = text.partition("-")
        first = parse(first_text.strip())
        last = parse(last_text.strip()) if dash else first
        if first is None or last is None:
            self.error(node, path, f"'{text}' is not {what}")
            return None
        if first > last:
            self.error(
                node,
                path,
                f"range {show(first)}-{show(last)} runs backwards; "
                "the first value must be <= the last",
            )
            return None
        return Range(first, last)

    def mac_range(self, node: Node, path: str) -> Range | None:
        what = "a MAC address or first-last range (e.g. 00:11:22:33:44:55)"
        return self.field_range(node, path, what, _parse_mac, _format_mac)

    def ip_range(self, node: Node, path: str) -> Range | None:
        what = "an IPv4 address, first-last range or CIDR (e.g. 10.0.0.1, 10.0.0.0/24)"
        if isinstance(node, ScalarNode) and "/" in str(node.value):
            block = _cidr_hosts(str(node.value))
            if block is None:
                self.error(node, path, f"'{node.value}' is not {what}")
            return block
        return self.field_range(
            node, path, what, _parse_ipv4, lambda v: str(ipaddress.IPv4Address(v))
        )

    def port_range(self, node: Node, path: str) -> Range | None:
        what = "a port 0..65535 or first-last range (e.g. 1024-65535)"

        def parse(text: str) -> int | None:
            value = int(text) if text.isdigit() else None
            return value if value is not None and value <= 65535 else None

        return self.field_range(node, path, what, parse, str)

    # timeline and lessons

    def command(self, node: Node, path: str) -> str | None:
        """A command string; a Python program it names is checked like ``xdp:``'s and written
        back as its absolute path, so the command runs the file beside the topology."""
        text = self.text(node, path, "a command string")
        if text is None:
            return None
        if self.validate is not None:
            try:
                problem = self.validate(text)
            except Exception as exc:  # a bug in the validator must not become a traceback here
                problem = f"can't check this command ({type(exc).__name__}: {exc})"
            if problem is not None:
                self.error(node, path, problem)
                return text
        for program in programs_named(text):
            if is_user_program(program):
                resolved = self.user_program(node, path, program)
                if resolved is not None:
                    text = with_program_replaced(text, program, resolved)
            elif is_object_program(program):
                file = program if program.endswith(".o") else program.rsplit(":", 1)[0]
                found = self.program_file(node, path, file, "BPF object", "BPF objects")
                if found is not None:
                    text = with_program_replaced(text, file, str(found))
        return text

    def timeline(self, node: Node, path: str) -> tuple[TimelineEntry, ...] | None:
        items = self.sequence(node, path, "a list of {at, do}")
        entries: list[TimelineEntry] = []
        for i, item in enumerate(items or []):
            ipath = f"{path}[{i}]"
            fields = self.mapping(item, ipath, TIMELINE_KEYS, "a mapping {at: TIME, do: COMMAND}")
            if fields is None:
                continue
            at_node = self.require(fields, "at", item, ipath, "when, e.g. 2ms")
            do_node = self.require(
                fields, "do", item, ipath, "a command, e.g. 'ip link set dev eth1 down'"
            )
            step = self.step_ref(at_node) if at_node is not None else None
            at = None
            if at_node is not None and step is None:
                if isinstance(at_node, ScalarNode) and re.match(
                    r"^\s*(step|lesson)\b", str(at_node.value)
                ):
                    self.error(
                        at_node,
                        f"{ipath}.at",
                        f"{_describe(at_node)} is not a lesson step; use 'step N' or "
                        "'lesson L step N' (counted from 1), or a time such as 4ms",
                    )
                    continue
                at = self.duration(at_node, f"{ipath}.at")
            do = None if do_node is None else self.command(do_node, f"{ipath}.do")
            if (at is not None or step is not None) and do is not None:
                entries.append(TimelineEntry(at or 0, do, loc=self.loc(item), step=step))
        return tuple(sorted(entries, key=lambda e: (e.step is not None, e.at_ns)))

    def step_ref(self, node: Node) -> tuple[int, int] | None:
        """``at: step N`` / ``at: lesson L step N`` as (lesson, step) from 0; None otherwise."""
        if not isinstance(node, ScalarNode):
            return None
        m = re.match(STEP_AT_PATTERN, str(node.value))
        if m is None:
            return None
        return (int(m.group(1) or 1) - 1, int(m.group(2)) - 1)

    def lessons(self, node: Node, path: str) -> tuple[Lesson, ...] | None:
        items = self.sequence(node, path, "a list of {title, steps}")
        lessons: list[Lesson] = []
        for i, item in enumerate(items or []):
            ipath = f"{path}[{i}]"
            fields = self.mapping(item, ipath, LESSON_KEYS, "a mapping {title, steps}")
            if fields is None:
                continue
            title_node = self.require(fields, "title", item, ipath, "the lesson's title")
            title = None if title_node is None else self.text(title_node, f"{ipath}.title")
            no_steps: tuple[LessonStep, ...] = ()
            steps = self.opt(fields, "steps", ipath, self.steps, no_steps)
            if title is not None:
                lessons.append(Lesson(title, steps))
        return tuple(lessons)

    def steps(self, node: Node, path: str) -> tuple[LessonStep, ...] | None:
        items = self.sequence(node, path, "a list of {text, commands}")
        steps: list[LessonStep] = []
        for i, item in enumerate(items or []):
            spath = f"{path}[{i}]"
            fields = self.mapping(item, spath, STEP_KEYS, "a mapping {text, commands}")
            if fields is None:
                continue
            text_node = self.require(fields, "text", item, spath, "what to say at this step")
            text = None if text_node is None else self.text(text_node, f"{spath}.text")
            no_commands: tuple[str, ...] = ()
            commands = self.opt(fields, "commands", spath, self.commands, no_commands)
            speed = self.opt(fields, "speed", spath, self.clock_speed, None)
            pause = self.opt(fields, "pause", spath, self.boolean, False)
            at = self.opt(fields, "at", spath, self.duration, None)
            if text is not None:
                steps.append(LessonStep(text, commands, speed, pause, at))
        return tuple(steps)

    def clock_speed(self, node: Node, path: str) -> int | None:
        return self.unit(node, path, parse_clock_speed, "a clock speed (e.g. 10us/s, real)")

    def commands(self, node: Node, path: str) -> tuple[str, ...] | None:
        items = self.sequence(node, path, "a list of command strings")
        if items is None:
            return None
        commands = [self.command(item, f"{path}[{i}]") for i, item in enumerate(items)]
        return tuple(c for c in commands if c is not None)


@dataclass(frozen=True)
class _Common:
    """The keys every device type has, parsed once."""

    name: str
    up: bool
    mtu: int
    xdp: XdpSpec | None
    loc: Loc
