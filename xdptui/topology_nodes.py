"""The topology loader's node accessors: where a node is, what it holds, checked against the
declared types, units and references, each problem a ``FILE:LINE:COL`` diagnostic."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from xdptui.bpf.elf import load_object
from xdptui.bpf.verifier import check
from xdptui.model.catalog import (
    did_you_mean,
    is_object_program,
    is_user_program,
)
from xdptui.model.errors import KernelError
from xdptui.model.limits import (
    DURATION_MAX_NS,
    RATE_MAX_BPS,
    RATE_MAX_PPS,
    SPEED_MAX_BPS,
    SPEED_MIN_BPS,
)
from xdptui.model.topology import (
    Loc,
)
from xdptui.model.units import (
    Rate,
    UnitError,
    parse_duration_ns,
    parse_rate,
    parse_speed_bps,
)
from xdptui.topology_yaml import (
    _NULL,
    USER_PROGRAM,
    CommandValidator,
    Diagnostic,
    T,
    _choices,
    _construct,
    _describe,
    _int_text,
    _join,
    _Pair,
)


class _Nodes:
    """One pass over the composed document, collecting diagnostics instead of stopping: the
    accessors every field's rule is written with (locations, scalars, units, references,
    programs)."""

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
        """``file.py:function`` as an absolute path (DESIGN's Trust: a relative path resolves
        against the topology's directory, never the current one; absolute and ``../`` paths
        are paths like any other -- consent is about running code, not where it lives)."""
        file, _, func = name.rpartition(":")
        resolved = self.program_file(node, path, file, "user program")
        return None if resolved is None else f"{resolved}:{func}"

    def object_program(self, node: Node, path: str, name: str) -> str | None:
        """``file.o`` / ``file.o:SECTION``, resolved as Python programs are, and verified."""
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
            self.error(node, path, f"BPF object {file.name}: {exc.extack} ({exc.errno.name})")
            return False
        return True

    def program_file(self, node: Node, path: str, file: str, kind: str) -> Path | None:
        """A program file the topology names: relative to its directory, or absolute."""
        try:
            given = Path(file)
            resolved = (given if given.is_absolute() else self.base_dir / given).resolve()
            found = resolved.is_file()
        except (OSError, ValueError, RuntimeError):
            resolved, found = self.base_dir / file, False
        if not found:
            self.error(node, path, f"{kind} file '{file}' not found (looked for {resolved})")
            return None
        return resolved

    # the document
