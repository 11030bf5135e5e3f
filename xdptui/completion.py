"""Completion for the command line: which words may come next in the command language.

``complete(line, context)`` looks at the words already typed and offers the keywords of the
iproute2 / bpftool / ethtool / pktgen subset (``xdptui.commands``) that may follow, or the
device, bond, map and program names the :class:`CompletionContext` lists, filtered by the word
being typed. Pure (no Textual, no engine): the app builds the context from the newest frame and
the topology, the command line widget applies the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.commands import TOOLS
from xdptui.model.catalog import CPUMAP_PROGRAMS_OK, PROGRAMS, program_info
from xdptui.model.topology import BOND_MODES, XMIT_HASH_POLICIES

__all__ = ["TOOLS", "Completion", "CompletionContext", "complete", "next_words"]
XDP_KEYWORDS: tuple[str, ...] = ("xdp", "xdpgeneric", "xdpdrv", "xdpoffload")
IP_OPTIONS: tuple[str, ...] = ("-force", "-s", "-d", "-j")
BPFTOOL_OBJECTS: tuple[str, ...] = ("map", "prog", "net")
LINK_SET_VERBS: tuple[str, ...] = (
    "up",
    "down",
    *XDP_KEYWORDS,
    "master",
    "nomaster",
    "carrier",
    "type",
)
PKTGEN_KEYS: tuple[str, ...] = ("rate", "size", "flows", "gso")


@dataclass(frozen=True)
class CompletionContext:
    """The names completion can offer."""

    devices: tuple[str, ...] = ()
    bonds: tuple[str, ...] = ()
    maps: tuple[str, ...] = ()
    programs: tuple[str, ...] = tuple(p.name for p in PROGRAMS)
    traffic_devices: tuple[str, ...] = ()  # devices a pktgen source feeds
    taps: tuple[str, ...] = ()  # tun/tap devices (``reader TAP rate R``)
    cpumaps: tuple[str, ...] = ()  # maps whose value is ``qsize N [prog PROG]``
    xskmaps: tuple[str, ...] = ()  # maps whose value is an AF_XDP socket
    xsks: tuple[str, ...] = ()  # AF_XDP sockets (``reader XSK rate R``, an xskmap's value)


@dataclass(frozen=True)
class Completion:
    """Candidates for the word that starts at ``start`` in the line."""

    start: int
    candidates: tuple[str, ...]

    def apply(self, line: str, candidate: str) -> str:
        """``line`` with its last word replaced by ``candidate`` (and a space after a whole
        word; ``key=`` waits for its value)."""
        tail = "" if candidate.endswith("=") else " "
        return line[: self.start] + candidate + tail

    def common_prefix(self) -> str:
        """The longest prefix all candidates share."""
        if not self.candidates:
            return ""
        first, last = min(self.candidates), max(self.candidates)
        n = 0
        while n < min(len(first), len(last)) and first[n] == last[n]:
            n += 1
        return first[:n]


def complete(line: str, context: CompletionContext) -> Completion:
    """What may replace the word being typed at the end of ``line``."""
    if line.endswith(" ") or not line:
        words = line.split()
        partial = ""
    else:
        *words, partial = line.split()
    start = len(line) - len(partial)
    options = next_words(words, partial, context)
    seen: set[str] = set()
    chosen: list[str] = []
    for option in options:
        if option.startswith(partial) and option not in seen:
            seen.add(option)
            chosen.append(option)
    return Completion(start, tuple(chosen))


def next_words(words: list[str], partial: str, ctx: CompletionContext) -> tuple[str, ...]:
    """Every word that may follow ``words`` (before filtering by the partial word)."""
    if not words:
        return TOOLS
    tool, rest = words[0], words[1:]
    if tool == "ip":
        return _ip(rest, partial, ctx)
    if tool == "bpftool":
        return _bpftool(rest, ctx)
    if tool == "ethtool":
        return _ethtool(rest, ctx)
    if tool == "pktgen":
        return _pktgen(rest, ctx)
    if tool == "reader":
        return _reader(rest, ctx)
    if tool == "writer":
        return _writer(rest, ctx)
    if tool == "help":
        return TOOLS if not rest else ()
    return ()


def _ip(rest: list[str], partial: str, ctx: CompletionContext) -> tuple[str, ...]:
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        i += 1
    options = tuple(o for o in IP_OPTIONS if o not in rest[:i])
    words = rest[i:]
    if not words:
        return ("link", *options)
    if words[0] != "link":
        return ()
    words = words[1:]
    if not words:
        return ("set", "show")
    verb, words = words[0], words[1:]
    if verb == "show":
        if not words:
            return ("dev", *ctx.devices)
        if words == ["dev"]:
            return ctx.devices
        return ()
    if verb != "set":
        return ()
    if not words:
        return ("dev",)
    if words == ["dev"]:
        return ctx.devices
    dev = words[1] if words[0] == "dev" else words[0]
    words = words[2:] if words[0] == "dev" else words[1:]
    if not words:
        verbs = LINK_SET_VERBS if dev in ctx.bonds else LINK_SET_VERBS[:-1]
        return verbs
    action, words = words[0], words[1:]
    if action in XDP_KEYWORDS:
        return _xdp(words, partial, ctx)
    if action == "master":
        return ctx.bonds if not words else ()
    if action == "carrier":
        return ("on", "off") if not words else ()
    if action == "type":
        if not words:
            return ("bond",)
        return _bond_options(words[1:])
    return ()


def _xdp(words: list[str], partial: str, ctx: CompletionContext) -> tuple[str, ...]:
    if not words:
        return ("obj", "off")
    if words[0] != "obj":
        return ()
    if len(words) == 1:
        return ctx.programs
    program = program_info(words[1])
    after = words[2:]
    if after and after[-1] == "param":
        if program is None:
            return ()
        given = {w.partition("=")[0] for w in after if "=" in w}
        if "=" in partial:
            name = partial.partition("=")[0]
            info = program.param(name)
            if info is not None and info.kind == "dev":
                return tuple(f"{name}={dev}" for dev in ctx.devices)
            if info is not None and info.kind == "map":
                return tuple(f"{name}={m}" for m in ctx.maps)
            return ()
        return tuple(f"{p.name}=" for p in program.params if p.name not in given)
    if program is not None and program.params:
        return ("param",)
    return ()


def _bond_options(words: list[str]) -> tuple[str, ...]:
    if words and words[-1] == "mode":
        return BOND_MODES
    if words and words[-1] == "xmit_hash_policy":
        return XMIT_HASH_POLICIES
    return tuple(key for key in ("mode", "xmit_hash_policy") if key not in words)


def _bpftool(rest: list[str], ctx: CompletionContext) -> tuple[str, ...]:
    options = () if "-j" in rest else ("-j",)
    rest = [w for w in rest if not w.startswith("-")]
    if not rest:
        return (*BPFTOOL_OBJECTS, *options)
    if rest[0] in ("prog", "net"):
        return ("show", "list") if len(rest) == 1 else ()
    if rest[0] != "map":
        return ()
    words = rest[1:]
    if not words:
        return ("show", "dump", "update", "delete")
    verb, words = words[0], words[1:]
    if not words:
        return ("name",)
    if words == ["name"]:
        return ctx.maps
    words = words[2:]
    if verb not in ("update", "delete"):
        return ()
    if not words:
        return ("key",)
    if len(words) == 1:
        return ()  # the key: a number
    words = words[2:]
    if verb == "delete":
        return ()
    if not words:
        return ("value",)
    cpumap = rest[3] in ctx.cpumaps if len(rest) > 3 else False
    if cpumap:  # struct bpf_cpumap_val: qsize N [prog PROG]
        if words == ["value"]:
            return ("qsize",)
        words = words[3:]
        if not words:
            return ("prog",)
        return tuple(sorted(CPUMAP_PROGRAMS_OK)) if words == ["prog"] else ()
    if len(rest) > 3 and rest[3] in ctx.xskmaps:  # xsk_map_update_elem: a socket
        return ctx.xsks if words == ["value"] else ()
    if words == ["value"]:
        return ctx.devices
    words = words[2:]
    if not words:
        return ("egress",)
    if words == ["egress"]:
        return ctx.programs
    return ()


def _ethtool(rest: list[str], ctx: CompletionContext) -> tuple[str, ...]:
    if not rest:
        return ("-L", "-G", "-S")
    flag, words = rest[0], rest[1:]
    if not words:
        return ctx.devices
    words = words[1:]
    if flag == "-L":
        return ("combined",) if not words else ()
    if flag == "-G":
        keys = [w for w in words if w in ("rx", "tx")]
        if words and words[-1] in ("rx", "tx"):
            return ()
        return tuple(k for k in ("rx", "tx") if k not in keys)
    return ()


def _pktgen(rest: list[str], ctx: CompletionContext) -> tuple[str, ...]:
    if not rest:
        return ctx.traffic_devices or ctx.devices
    words = rest[1:]
    if not words:
        return (*PKTGEN_KEYS, "stop")
    if words[-1] in PKTGEN_KEYS or words[0] == "stop":
        return ()
    return tuple(k for k in PKTGEN_KEYS if k not in words)


def _writer(rest: list[str], ctx: CompletionContext) -> tuple[str, ...]:
    """``writer XSK [batch N] [rate R] | writer XSK stop``: an AF_XDP socket's writer."""
    if not rest:
        return ctx.xsks
    if len(rest) == 1:
        return ("batch", "rate", "stop")
    if rest[1] == "stop" or len(rest) % 2 == 0:
        return ()
    return tuple(k for k in ("batch", "rate") if k not in rest)


def _reader(rest: list[str], ctx: CompletionContext) -> tuple[str, ...]:
    """``reader TAP|XSK rate R | reader TAP|XSK stop``: how fast userspace reads a tap or
    an AF_XDP socket."""
    if not rest:
        return (*ctx.taps, *ctx.xsks)
    if len(rest) == 1:
        return ("rate", "stop")
    return ()
