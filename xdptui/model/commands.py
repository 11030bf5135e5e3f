"""Parsed commands: the subset of iproute2, bpftool, ethtool and pktgen xdptui understands.

``xdptui.commands.parse`` turns a line into one of these values; the engine applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.units import Rate


@dataclass(frozen=True)
class XdpSet:
    """``ip [-force] link set dev DEV {xdp|xdpgeneric|xdpdrv|xdpoffload} obj PROG | off``."""

    dev: str
    keyword: str  # xdp | xdpgeneric | xdpdrv | xdpoffload
    prog: str | None  # None = off
    params: tuple[tuple[str, str], ...] = ()
    force: bool = False


@dataclass(frozen=True)
class LinkSetState:
    dev: str
    up: bool


@dataclass(frozen=True)
class LinkSetMtu:
    dev: str
    mtu: int


@dataclass(frozen=True)
class LinkSetCarrier:
    """``ip link set dev DEV carrier on|off``: here, plugging or pulling the cable."""

    dev: str
    on: bool


@dataclass(frozen=True)
class LinkSetMaster:
    dev: str
    master: str | None  # None = nomaster


@dataclass(frozen=True)
class BondSetOptions:
    dev: str
    mode: str | None = None
    xmit_hash_policy: str | None = None


@dataclass(frozen=True)
class LinkShow:
    dev: str | None = None
    stats: bool = False
    details: bool = False
    json: bool = False  # ip -j: iproute2's JSON


@dataclass(frozen=True)
class ProgShow:
    """``bpftool [-j] prog show``: every loaded XDP program."""

    json: bool = False


@dataclass(frozen=True)
class NetShow:
    """``bpftool [-j] net``: the XDP programs attached to each device."""

    json: bool = False


@dataclass(frozen=True)
class Help:
    """``help [COMMAND]``: the command synopses (xdptui's own)."""

    topic: str | None = None


@dataclass(frozen=True)
class MapUpdate:
    """``bpftool map update name MAP key K value DEV [egress PROG] [any|noexist|exist]`` (a
    devmap, xdptui's form), or ``{name MAP | id N} key [hex] BYTES value [hex] BYTES``
    (bpftool's, any map: ``key_bytes`` / ``value_bytes`` set)."""

    map: str
    key: int
    dev: str
    egress: str | None = None
    flags: int = 0  # BPF_ANY 0, BPF_NOEXIST 1, BPF_EXIST 2
    map_id: int | None = None
    key_bytes: bytes | None = None
    value_bytes: bytes | None = None
    # A map-in-map's value: ``value {id N | name MAP | pinned FILE}`` (bpftool's ``MAP``).
    value_map: tuple[str, str] | None = None
    # A cpumap's ``struct bpf_cpumap_val`` (xdptui's form): ``value qsize N [prog PROG]``.
    qsize: int | None = None
    cpu_prog: str | None = None


@dataclass(frozen=True)
class MapDelete:
    """``bpftool map delete {name MAP | id N} key K`` (``key_bytes``: bpftool's byte form)."""

    map: str
    key: int
    map_id: int | None = None
    key_bytes: bytes | None = None


@dataclass(frozen=True)
class MapLookup:
    """``bpftool [-j] map lookup {name MAP | id N} key [hex] BYTES``."""

    map: str | None
    map_id: int | None
    key_bytes: bytes
    json: bool = False


@dataclass(frozen=True)
class MapShow:
    """``bpftool [-j] map show|dump [name MAP | id N]``."""

    map: str | None = None
    dump: bool = False
    json: bool = False
    map_id: int | None = None


@dataclass(frozen=True)
class SetChannels:
    """``ethtool -L DEV combined N``."""

    dev: str
    combined: int


@dataclass(frozen=True)
class SetRings:
    """``ethtool -G DEV rx N [tx N]``."""

    dev: str
    rx: int | None = None
    tx: int | None = None


@dataclass(frozen=True)
class ShowStats:
    """``ethtool -S DEV``."""

    dev: str


@dataclass(frozen=True)
class Pktgen:
    """``pktgen DEV rate R [size S] [flows F]`` / ``pktgen DEV stop``: retune the source(s)
    sending into (or out of) DEV."""

    dev: str
    stop: bool = False
    rate: Rate | None = None
    size: int | None = None
    flows: int | None = None
    gso: float | None = None


@dataclass(frozen=True)
class SetReader:
    """``reader DEV rate R | stop``: the userspace side of a tap (xdptui's own command)."""

    dev: str
    rate: Rate | None  # None = the reader goes away (no queue attached)


@dataclass(frozen=True)
class SetWriter:
    """``writer XSK [batch N] [rate R] | writer XSK stop``: an AF_XDP socket's writer (the
    source ``from:`` it): descriptors per ``sendto`` and how fast it writes (xdptui's own)."""

    sock: str
    batch: int | None = None
    rate: Rate | None = None
    stop: bool = False


Command = (
    XdpSet
    | LinkSetState
    | LinkSetMaster
    | LinkSetCarrier
    | LinkSetMtu
    | BondSetOptions
    | LinkShow
    | MapUpdate
    | MapDelete
    | MapLookup
    | MapShow
    | SetChannels
    | SetRings
    | ShowStats
    | Pktgen
    | SetReader
    | SetWriter
    | ProgShow
    | NetShow
    | Help
)


@dataclass(frozen=True)
class CommandResult:
    """What a command answered: ``ok``, the errno name on failure, the reply text as the
    real tool would print it, and the command as parsed (``None`` when it did not parse), so a
    caller never reads its own line back."""

    ok: bool
    errno: str | None
    reply: str
    command: Command | None = None
