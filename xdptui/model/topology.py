"""The topology a simulation starts from: immutable values parsed from the v1 YAML.

Device order is declaration order; ifindex = position + 2 (ifindex 1 is ``lo``), as a host that
created the devices in that order would number them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xdptui.model.units import LINE, Rate

XdpMode = Literal["native", "generic", "offload"]
MapType = Literal["devmap", "devmap_hash"]
ReportMapType = Literal["devmap", "devmap_hash", "cpumap", "xskmap"]
TunMode = Literal["tap", "tun"]
TunWriter = Literal["write", "vhost"]
BOND_MODES: tuple[str, ...] = (
    "balance-rr",
    "active-backup",
    "balance-xor",
    "broadcast",
    "802.3ad",
    "balance-tlb",
    "balance-alb",
)
XMIT_HASH_POLICIES: tuple[str, ...] = (
    "layer2",
    "layer3+4",
    "layer2+3",
    "encap2+3",
    "encap3+4",
    "vlan+srcmac",
)
XDP_BOND_MODES: tuple[str, ...] = ("balance-rr", "active-backup", "balance-xor", "802.3ad")
"""Modes ``bond_xdp_get_xmit_slave`` can pick a slave for (``__bond_xdp_check``)."""
HASH_MODES: tuple[str, ...] = ("balance-xor", "802.3ad")
"""Modes that pick the slave by ``bond_xmit_hash_xdp``: vlan+srcmac can't be hashed in XDP."""


def bond_xdp_check(mode: str, policy: str) -> bool:
    """``__bond_xdp_check``: rr, active-backup, xor and 802.3ad -- the last two not with
    vlan+srcmac (the 802.1q tag is usually not in the frame, so XDP can't hash on it)."""
    if mode not in XDP_BOND_MODES:
        return False
    return not (mode in HASH_MODES and policy == "vlan+srcmac")


NIC_DRIVERS: tuple[str, ...] = ("ixgbe", "i40e", "ice", "mlx5", "generic")
PROTOS: tuple[str, ...] = ("udp", "tcp", "icmp", "igmp")


@dataclass(frozen=True)
class Loc:
    """Where a value came from, for ``FILE:LINE:COL`` messages (1-based)."""

    file: str = "<input>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class XdpSpec:
    """A program to attach at start: ``xdp: NAME`` or ``{program, mode, params}``.

    ``mode`` None lets the kernel choose (``dev_xdp_mode``: native if the driver has ndo_bpf)."""

    program: str
    mode: XdpMode | None = None
    params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class DeviceSpec:
    name: str
    type: str
    up: bool = True
    mtu: int = 1500
    xdp: XdpSpec | None = None
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True, kw_only=True)
class NicSpec(DeviceSpec):
    """A physical port. ``None`` fields take the driver profile's default."""

    type: str = "nic"
    driver: str = "ice"
    speed_bps: int = 100_000_000_000
    queues: int | None = None
    ring: int | None = None
    tx_ring: int | None = None
    irq_cpus: tuple[int, ...] | None = None
    card: str | None = None  # ports with the same card share its PCIe/DMA budget


@dataclass(frozen=True, kw_only=True)
class VethSpec(DeviceSpec):
    type: str = "veth"
    peer: str
    queues: int = 1


BOND_DEFAULT_MIIMON = 100  # ms, include/net/bonding.h
MIIMON_MODES = ("802.3ad", "balance-tlb", "balance-alb")  # !bond_mode_uses_arp(mode)


def default_miimon(mode: str) -> int:
    """The MII monitor interval a new bond gets (``bond_option_mode_set``, bond_options.c,
    v6.15): a mode that can't use ARP monitoring (802.3ad, tlb, alb) starts MII monitoring at
    ``BOND_DEFAULT_MIIMON``; the others keep 0 -- no link monitoring -- unless miimon is set."""
    return BOND_DEFAULT_MIIMON if mode in MIIMON_MODES else 0


@dataclass(frozen=True, kw_only=True)
class BondSpec(DeviceSpec):
    type: str = "bond"
    mode: str = "balance-rr"
    xmit_hash_policy: str = "layer2"
    slaves: tuple[str, ...] = ()
    miimon_ms: int = 0  # default_miimon(mode) when the file does not set it
    primary: str | None = None
    packets_per_slave: int = 1


@dataclass(frozen=True, kw_only=True)
class TunSpec(DeviceSpec):
    type: str = "tun"
    mode: TunMode = "tap"
    queues: int = 1
    tx_queue_len: int = 500
    vnet_hdr: bool = True
    reader: Rate | None = None
    writer: TunWriter = "write"
    blocking: bool = False  # blocking writes (no O_NONBLOCK): never tun_build_skb
    zerocopy: bool = False  # vhost zerocopy: never tun_build_skb
    sndbuf: int | None = None  # TUNSETSNDBUF; None = the default INT_MAX
    napi_frags: bool = False  # IFF_NAPI_FRAGS


@dataclass(frozen=True)
class MapEntrySpec:
    key: int
    dev: str
    egress: str | None = None
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class MapSpec:
    name: str
    type: MapType
    max_entries: int
    entries: tuple[MapEntrySpec, ...] = ()
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class CpuMapEntrySpec:
    """One cpumap slot: the CPU (its key), the ring's ``qsize`` and the entry's program."""

    key: int
    qsize: int
    prog: str | None = None
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class CpuMapSpec:
    name: str
    max_entries: int
    entries: tuple[CpuMapEntrySpec, ...] = ()
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class XskSpec:
    """``devices: {NAME: {type: xsk, ...}}``: an AF_XDP socket bound to (dev, queue), its UMEM
    (``frames`` chunks of ``frame_size``) and ring sizes; ``reader``: how fast userspace takes
    RX descriptors and gives the chunks back to the fill ring (None: it never reads)."""

    name: str
    dev: str
    queue: int = 0
    mode: str = "copy"
    frames: int = 4096
    frame_size: int = 4096
    fill: int = 2048
    rx: int = 2048
    tx: int = 2048
    comp: int = 2048
    reader_pps: float | None = None
    need_wakeup: bool = True
    batch: int = 1  # TX descriptors per sendto (a source ``from:`` the socket writes them)
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class XskMapSpec:
    """``maps: {NAME: {type: xskmap, max_entries, entries: {KEY: SOCKET}}}``."""

    name: str
    max_entries: int
    entries: tuple[tuple[int, str], ...] = ()
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class ObjectMapEntrySpec:
    """One element for an object's map, in ``bpftool map update``'s words (``hex 35 00``) and
    as the bytes bpftool's ``parse_bytes`` makes of them; or, for a map-in-map, the inner map
    that goes in the slot."""

    key: str
    value: str
    key_bytes: bytes
    value_bytes: bytes
    loc: Loc = field(default_factory=Loc, compare=False)
    # ``value: {map: NAME}``: for an array or hash of maps, the object's map put in the slot
    # (``value`` is then bpftool's ``name NAME`` and ``value_bytes`` empty).
    value_map: str | None = None


@dataclass(frozen=True)
class ObjectMapSpec:
    """``maps: {NAME: {type: object, entries: [...]}}``: a map an object attached at start
    declares (its kernel name, as ``bpftool map show`` gives it), filled once the program is
    attached and before traffic starts, as ``bpftool map update name NAME`` would."""

    name: str
    entries: tuple[ObjectMapEntrySpec, ...] = ()
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class Range:
    """``first-last`` of a header field (MAC, IPv4 address or port) as integers, inclusive."""

    first: int
    last: int

    @property
    def span(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, kw_only=True)
class TrafficSpec:
    """A pktgen-like source. Exactly one of ``to`` (arrives on that device) and ``from_`` (the
    local stack sends out of that device) is set. With ``pcap`` (a resolved path) the frames
    are a capture's, replayed in order (``loop``: again from the first after the last); the
    header fields below are then unused and ``flows`` is the number of captured frames."""

    name: str
    to: str | None = None
    from_: str | None = None
    rate: Rate = LINE
    count: int | None = None
    start_ns: int = 0
    sizes: tuple[int, ...] = (64,)
    proto: str = "udp"
    src_mac: Range = Range(0x001122334455, 0x001122334455)
    dst_mac: Range = Range(0x002233445566, 0x002233445566)
    src_ip: Range = Range(0xC6120001, 0xC6120001)  # 198.18.0.1
    dst_ip: Range = Range(0x0A000001, 0x0A000001)  # 10.0.0.1
    src_port: Range = Range(1024, 1024)
    dst_port: Range = Range(80, 80)
    vlan: int | None = None
    flows: int = 1
    random: bool = False
    gso: float = 0.0
    pcap: str | None = None
    loop: bool = False
    loc: Loc = field(default_factory=Loc, compare=False)


@dataclass(frozen=True)
class TimelineEntry:
    """A command at a simulated time (``at: 4ms``), or when a lesson step starts
    (``at: step 2``: ``step`` = (lesson index, step index), both from 0; ``at_ns`` unused)."""

    at_ns: int
    do: str
    loc: Loc = field(default_factory=Loc, compare=False)
    step: tuple[int, int] | None = None


@dataclass(frozen=True)
class LessonStep:
    """One step: what to say, commands ``r`` offers, and how the clock runs while it is on:
    ``speed_ns_per_s`` (simulated ns per real second, None: unchanged), ``pause`` (the step
    starts paused), ``at_ns`` (when the step starts in a run nobody drives: headless)."""

    text: str
    commands: tuple[str, ...] = ()
    speed_ns_per_s: int | None = None
    pause: bool = False
    at_ns: int | None = None


@dataclass(frozen=True)
class Lesson:
    title: str
    steps: tuple[LessonStep, ...] = ()


@dataclass(frozen=True)
class Topology:
    name: str
    description: str = ""
    seed: int = 1
    cpus: int = 4
    devices: tuple[DeviceSpec, ...] = ()
    maps: tuple[MapSpec, ...] = ()
    cpumaps: tuple[CpuMapSpec, ...] = ()
    xsks: tuple[XskSpec, ...] = ()
    xskmaps: tuple[XskMapSpec, ...] = ()
    object_maps: tuple[ObjectMapSpec, ...] = ()
    traffic: tuple[TrafficSpec, ...] = ()
    timeline: tuple[TimelineEntry, ...] = ()
    lessons: tuple[Lesson, ...] = ()
    source: str = "<input>"

    def device(self, name: str) -> DeviceSpec:
        for dev in self.devices:
            if dev.name == name:
                return dev
        raise KeyError(name)
