"""The topology YAML (v1), declared once: the loader's key sets and enums and
``xdptui schema topology`` both come from :data:`TOPOLOGY`.

``xdptui.topology_io`` reads the keys of every mapping and every enum from here and keeps the
checks a schema can't express (references between devices and maps, kernel rules, ranges that
depend on other fields); the descriptions are what an editor shows beside each key.
"""

from __future__ import annotations

from typing import get_args

from xdptui.model.catalog import CPUMAP_PROGRAMS_OK, DEVMAP_EGRESS_OK, PROGRAMS
from xdptui.model.limits import (
    CPUS_MAX,
    INT_MAX,
    MAX_TABLE_ENTRIES,
    MTU_MAX,
    MTU_MIN,
    SEED_MAX,
    U32_MAX,
    U63_MAX,
)
from xdptui.model.spec import (
    AnyOf,
    Bool,
    Enum,
    Field,
    Int,
    IntEnum,
    JSONSchema,
    ListOf,
    MapOf,
    Num,
    Obj,
    Str,
    Tagged,
    json_schema,
)
from xdptui.model.topology import (
    BOND_MODES,
    NIC_DRIVERS,
    PROTOS,
    XMIT_HASH_POLICIES,
    ReportMapType,
    TunMode,
    TunWriter,
    XdpMode,
)
from xdptui.model.units import (
    AS_CAPTURED_PATTERN,
    CLOCK_SPEED_PATTERN,
    DURATION_PATTERN,
    LINE_PATTERN,
    RATE_PATTERN,
    SPEED_PATTERN,
)

SCHEMA_ID = "https://xdptui.dev/schema/topology-v1.json"

XDP_MODES: tuple[XdpMode, ...] = get_args(XdpMode)
REPORT_MAP_TYPES: tuple[ReportMapType, ...] = get_args(ReportMapType)
TUN_MODES: tuple[TunMode, ...] = get_args(TunMode)
TUN_WRITERS: tuple[TunWriter, ...] = get_args(TunWriter)
RING_SIZES = tuple(1 << n for n in range(6, 14))  # 64 .. 8192
XSK_RING_SIZES = tuple(1 << n for n in range(0, 18))  # xsk_init_queue: a power of two
XSK_CHUNK_SIZES = (2048, 4096)  # xdp_umem_reg, aligned: a power of two, 2048..PAGE_SIZE
XSK_MODES = ("copy", "zerocopy")
MAP_NAME_PATTERN = r"^[A-Za-z0-9_.]{1,15}$"  # BPF_OBJ_NAME_LEN
DEV_NAME_PATTERN = r"^(?!\.\.?$)[^/:\s]{1,15}$"  # dev_valid_name (the loader counts bytes)
USER_PROGRAM_PATTERN = r"^.+\.py:[A-Za-z_][A-Za-z0-9_]*$"
OBJECT_PROGRAM_PATTERN = r"^.+\.o(:.+)?$"
MAC_PATTERN = r"^[0-9A-Fa-f]{1,2}(?::[0-9A-Fa-f]{1,2}){5}$"
_MAC = MAC_PATTERN[1:-1]
_IP = r"\d{1,3}(?:\.\d{1,3}){3}"

# --- values with units --------------------------------------------------------------------

DURATION = AnyOf((Num(minimum=0), Str(DURATION_PATTERN, examples=("500us", "2ms", "1s"))))
"""``ns us ms s``; a bare number is nanoseconds."""
STEP_AT_PATTERN = r"^\s*(?:lesson\s+([1-9][0-9]{0,3})\s+)?step\s+([1-9][0-9]{0,3})\s*$"
"""``step N`` (of the first lesson) or ``lesson L step N``, counted from 1."""
AT = AnyOf((*DURATION.options, Str(STEP_AT_PATTERN, examples=("step 2", "lesson 2 step 1"))))
"""A timeline entry's ``at``: a simulated time, or when a lesson step starts."""
CLOCK_SPEED = Str(CLOCK_SPEED_PATTERN, examples=("10us/s", "1ms/s", "real"))
"""Simulated time per real second, one of the app's speeds (1us/s .. 1s/s, ``real``)."""


def _rate(line: bool) -> AnyOf:
    """pps or bps with a K/M/G prefix, a bare number (frames per second), and maybe ``line``."""
    given = Str(RATE_PATTERN, examples=("14.88Mpps", "40Gbps"))
    options = (Num(minimum=0), given, Str(LINE_PATTERN, examples=("line",)))
    return AnyOf(options if line else options[:2])


SPEED = AnyOf((Num(minimum=0), Str(SPEED_PATTERN, examples=("10G", "25G", "40G", "100G"))))
"""``10G``..``100G`` or a ``bps`` unit; a bare number is Mb/s, as ethtool prints speeds."""


def _program(allowed: tuple[str, ...], descriptions: tuple[str, ...] = ()) -> AnyOf:
    return AnyOf(
        (
            Enum(allowed, descriptions=descriptions),
            Str(USER_PROGRAM_PATTERN, ("file.py:function",)),
            Str(OBJECT_PROGRAM_PATTERN, ("bpf/prog.o", "bpf/prog.o:xdp")),
        )
    )


PROGRAM = _program(tuple(p.name for p in PROGRAMS), tuple(p.summary for p in PROGRAMS))
EGRESS_PROGRAM = _program(tuple(p.name for p in PROGRAMS if p.name in DEVMAP_EGRESS_OK))

# --- devices ------------------------------------------------------------------------------

XDP = Obj(
    (
        Field(
            "program",
            PROGRAM,
            "a built-in program, path/to/file.py:function, or a BPF object path/to/file.o",
            True,
        ),
        Field("section", Str(), "a BPF object's program: its ELF section or function name"),
        Field("mode", Enum(XDP_MODES), "native, generic or offload; default: the kernel's pick"),
        Field(
            "params",
            MapOf(AnyOf((Str(), Int(), Bool())), nullable=False),
            "the program's params, as `param K=V` takes them",
        ),
    ),
    description="a program with an attach mode and params",
)
XDP_KEYS = XDP.keys

DEVICE = Tagged(
    tag="type",
    tag_description="the device type",
    common=(
        Field("up", Bool(), "administratively up", default=True),
        Field("mtu", Int(MTU_MIN, MTU_MAX), "MTU in bytes", default=1500),
        Field("xdp", AnyOf((PROGRAM, XDP)), "the XDP program attached at start"),
    ),
    variants={
        "nic": Obj(
            (
                Field("driver", Enum(NIC_DRIVERS), "the driver profile", default="ice"),
                Field("speed", SPEED, "link speed, e.g. 100G", default="100G"),
                Field("queues", Int(1, 256), "combined channels; default: the driver's"),
                Field("ring", IntEnum(RING_SIZES), "RX ring size, a power of two 64..8192"),
                Field("tx_ring", IntEnum(RING_SIZES), "TX ring size, a power of two 64..8192"),
                Field(
                    "irq_cpus",
                    ListOf(Int(minimum=0), min_items=1, max_items=256, nullable=False),
                    "the CPU each queue's interrupt is bound to, one per queue",
                ),
                Field("card", Str(), "ports with the same card share its PCIe/DMA budget"),
            ),
            description="a physical port",
        ),
        "veth": Obj(
            (
                Field("peer", Str(), "the other end (declared here if not listed)", True),
                Field("queues", Int(1, 64), "RX queues", default=1),
            ),
            description="one end of a veth pair",
        ),
        "bond": Obj(
            (
                Field(
                    "mode",
                    Enum(BOND_MODES, numbered=True),
                    "bonding mode, by name or kernel number",
                    default="balance-rr",
                ),
                Field(
                    "xmit_hash_policy",
                    Enum(XMIT_HASH_POLICIES, numbered=True),
                    "how balance-xor and 802.3ad hash a frame to a slave",
                    default="layer2",
                ),
                Field("slaves", ListOf(Str()), "the enslaved devices, in order"),
                Field(
                    "miimon",
                    AnyOf((Int(0, 2**31 - 1), Str(DURATION_PATTERN))),
                    "link check interval: milliseconds, or a duration of whole ms",
                    default=100,
                ),
                Field("primary", Str(), "the preferred slave (active-backup, balance-tlb/alb)"),
                Field(
                    "packets_per_slave",
                    Int(0, 65535),
                    "frames per slave before moving on (balance-rr)",
                    default=1,
                ),
            ),
            description="a bond of slave devices",
        ),
        "tun": Obj(
            (
                Field("mode", Enum(TUN_MODES), "tap (Ethernet) or tun (L3)", default="tap"),
                Field("queues", Int(1, 256), "queues (IFF_MULTI_QUEUE)", default=1),
                Field("tx_queue_len", Int(1, U32_MAX), "the ring userspace reads", default=500),
                Field("vnet_hdr", Bool(), "IFF_VNET_HDR", default=True),
                Field("reader", _rate(line=False), "how fast userspace reads, e.g. 2Mpps"),
                Field("writer", Enum(TUN_WRITERS), "how frames are written", default="write"),
                Field("blocking", Bool(), "blocking writes (no O_NONBLOCK)", default=False),
                Field("zerocopy", Bool(), "vhost zerocopy", default=False),
                Field("sndbuf", Int(1, INT_MAX), "TUNSETSNDBUF; default INT_MAX"),
                Field("napi_frags", Bool(), "IFF_NAPI_FRAGS", default=False),
            ),
            description="a tun/tap device",
        ),
        "xsk": Obj(
            (
                Field("dev", Str(), "the device the socket is bound to (sxdp_ifindex)", True),
                Field("queue", Int(0, 255), "the queue it is bound to (sxdp_queue_id)", default=0),
                Field(
                    "mode",
                    Enum(XSK_MODES),
                    "XDP_COPY or XDP_ZEROCOPY; default: zero-copy where the driver has it",
                ),
                Field("frames", Int(1, 1 << 20), "UMEM chunks", default=4096),
                Field("frame_size", IntEnum(XSK_CHUNK_SIZES), "UMEM chunk size", default=4096),
                Field("fill", IntEnum(XSK_RING_SIZES), "fill ring entries", default=2048),
                Field("rx", IntEnum(XSK_RING_SIZES), "RX ring entries", default=2048),
                Field("tx", IntEnum(XSK_RING_SIZES), "TX ring entries", default=2048),
                Field("comp", IntEnum(XSK_RING_SIZES), "completion ring entries", default=2048),
                Field(
                    "reader",
                    _rate(line=False),
                    "how fast userspace takes RX descriptors and refills the fill ring; "
                    "none: it never reads",
                ),
                Field("need_wakeup", Bool(), "XDP_USE_NEED_WAKEUP", default=True),
                Field(
                    "batch",
                    Int(1, 4096),
                    "TX descriptors the writer (a source 'from:' the socket) puts on the TX "
                    "ring before each sendto kick",
                    default=1,
                ),
            ),
            description="an AF_XDP socket (not a net device: no up, mtu or xdp)",
        ),
    },
)

# --- maps ---------------------------------------------------------------------------------

MAP_ENTRY = Obj(
    (
        Field("dev", Str(), "the target device", True),
        Field("egress", EGRESS_PROGRAM, "the devmap egress program run on each bulk"),
    ),
    description="a target device with a devmap egress program",
)
DEVMAP = Obj(
    (
        Field("max_entries", Int(1, U32_MAX), "devmap: keys 0..max_entries-1", True),
        Field(
            "entries",
            MapOf(AnyOf((Str(), MAP_ENTRY)), key_pattern=r"^[0-9]+$", key_description="a key"),
            "key: device, or key: {dev, egress}",
        ),
    ),
    description="a devmap",
)
CPUMAP_PROGRAM = _program(tuple(p.name for p in PROGRAMS if p.name in CPUMAP_PROGRAMS_OK))
CPUMAP_ENTRY = Obj(
    (
        Field(
            "qsize",
            Int(1, 16384),
            "the entry's ptr_ring size (cpu_map_update_elem: <= 16384)",
            True,
        ),
        Field("prog", CPUMAP_PROGRAM, "the program the CPU's kthread runs on each frame"),
    ),
    description="a cpumap entry: struct bpf_cpumap_val",
)
CPUMAP = Obj(
    (
        Field("max_entries", Int(1, 8192), "cpumap: keys (CPUs) 0..max_entries-1", True),
        Field(
            "entries",
            MapOf(CPUMAP_ENTRY, key_pattern=r"^[0-9]+$", key_description="a CPU"),
            "CPU: {qsize, prog}",
        ),
    ),
    description="a cpumap: frames redirected to other CPUs' kthreads",
)
XSKMAP = Obj(
    (
        Field("max_entries", Int(1, U32_MAX), "xskmap: keys 0..max_entries-1", True),
        Field(
            "entries",
            MapOf(Str(), key_pattern=r"^[0-9]+$", key_description="a key (a queue index)"),
            "key: an AF_XDP socket (a device of type xsk)",
        ),
    ),
    description="an xskmap: AF_XDP sockets by key",
)
BPFTOOL_BYTES = Str(examples=("hex 35 00", "0x35 0", "53 0"))
INNER_MAP = Obj(
    (Field("map", Str(), "a map of the same object, as bpftool names it", True),),
    description="an inner map (bpftool map update ... value name NAME)",
)
OBJECT_MAP_ENTRY = Obj(
    (
        Field("key", BPFTOOL_BYTES, "the key's bytes as bpftool takes them: hex 35 00", True),
        Field(
            "value",
            AnyOf((BPFTOOL_BYTES, INNER_MAP)),
            "the value's bytes as bpftool takes them (hex 01), or for an array or hash of "
            "maps {map: NAME}: the object's map put in that slot",
            True,
        ),
    ),
    description="one element, as `bpftool map update name MAP key K value V` gives it",
)
OBJECT_MAP = Obj(
    (
        Field(
            "entries",
            ListOf(OBJECT_MAP_ENTRY),
            "elements set once the program is attached, before traffic starts",
        ),
    ),
    description="a map an object attached at start declares (its name as bpftool shows it)",
)
MAP = Tagged(
    tag="type",
    tag_description="the BPF map type; object: a map of an object attached at start",
    common=(),
    variants={
        "devmap": DEVMAP,
        "devmap_hash": DEVMAP,
        "cpumap": CPUMAP,
        "xskmap": XSKMAP,
        "object": OBJECT_MAP,
    },
)

# --- traffic, timeline, lessons -----------------------------------------------------------


def _field_range(element: str, example: str) -> Str:
    return Str(rf"^\s*{element}(?:\s*-\s*{element})?\s*$", examples=(example,))


TRAFFIC = Obj(
    (
        Field("name", Str(), "a unique source name", True),
        Field("to", Str(), "frames arrive on this device (from the wire)"),
        Field(
            "from",
            Str(),
            "the local stack sends out of this device; or an AF_XDP socket's writer sends "
            "through its TX ring",
        ),
        Field(
            "rate",
            AnyOf((*_rate(line=True).options, Str(AS_CAPTURED_PATTERN, examples=("as-captured",)))),
            "offered rate: pps, bps or line; a capture also as-captured (its default)",
            default="line",
        ),
        Field("count", Int(1, U63_MAX), "stop after this many frames"),
        Field("start", DURATION, "when the source starts", default=0),
        Field(
            "size",
            AnyOf((Int(60, 9600), ListOf(Int(60, 9600), min_items=1, nullable=False))),
            "bytes without FCS, or a list used as a repeating mix",
            default=64,
        ),
        Field("proto", Enum(PROTOS), "the IP protocol", default="udp"),
        Field("src_mac", _field_range(_MAC, "00:11:22:33:44:55"), "a MAC or first-last"),
        Field("dst_mac", _field_range(_MAC, "00:22:33:44:55:66"), "a MAC or first-last"),
        Field(
            "src_ip",
            AnyOf((_field_range(_IP, "198.18.0.1-198.18.0.64"), Str(rf"^\s*{_IP}/\d{{1,2}}\s*$"))),
            "an IPv4 address, first-last or a CIDR",
        ),
        Field(
            "dst_ip",
            AnyOf((_field_range(_IP, "10.0.0.1"), Str(rf"^\s*{_IP}/\d{{1,2}}\s*$"))),
            "an IPv4 address, first-last or a CIDR",
        ),
        Field("src_port", AnyOf((Int(0, 65535), _field_range(r"\d+", "1024-65535"))), "port"),
        Field("dst_port", AnyOf((Int(0, 65535), _field_range(r"\d+", "80"))), "port or range"),
        Field("vlan", Int(1, 4094), "an 802.1Q tag"),
        Field(
            "flows",
            Int(1, MAX_TABLE_ENTRIES),
            f"flow i takes the i-th value of every range; lcm(flows, sizes) <= {MAX_TABLE_ENTRIES}",
            default=1,
        ),
        Field("random", Bool(), "each flow's values drawn at random (seeded)", default=False),
        Field("gso", Num(0, 1), "share of GSO super-frames (taps)", default=0),
        Field("pcap", Str(), "replay this pcap/pcapng file: its frames, byte for byte"),
        Field(
            "loop", Bool(), "a replayed capture starts again after its last frame", default=False
        ),
    ),
    description="a pktgen-like traffic source, or a replayed capture",
    exactly_one=("to", "from"),
)
TIMELINE_ENTRY = Obj(
    (
        Field("at", AT, "when: a time (4ms) or a lesson step's start (step 2)", True),
        Field("do", Str(), "a command line, as typed in the app", True),
    ),
    description="a command run at a simulated time or when a lesson step starts",
)
STEP = Obj(
    (
        Field("text", Str(), "what to say at this step", True),
        Field("commands", ListOf(Str()), "command lines the step offers to run (r)"),
        Field("speed", CLOCK_SPEED, "the clock speed while the step is on, e.g. 10us/s"),
        Field("pause", Bool(), "the step starts with the clock paused", default=False),
        Field("at", DURATION, "when the step starts in a headless run (nobody presses n)"),
    )
)
LESSON = Obj(
    (
        Field("title", Str(), "the lesson's title", True),
        Field("steps", ListOf(STEP), "the steps, in order"),
    )
)

TOPOLOGY = Obj(
    (
        Field("name", Str(), "shown in the header; default: the file name"),
        Field("description", Str(), "what this scenario teaches"),
        Field("seed", Int(0, SEED_MAX), "the random seed", default=1),
        Field("cpus", Int(1, CPUS_MAX), "nr_cpu_ids", default=4),
        Field(
            "devices",
            MapOf(
                DEVICE,
                key_pattern=DEV_NAME_PATTERN,
                key_description="a device name: 1-15 characters, no '/', ':' or spaces",
                min_items=1,
                nullable=False,
            ),
            "the devices, by name; ifindex follows this order from 2",
            True,
        ),
        Field(
            "maps",
            MapOf(MAP, key_pattern=MAP_NAME_PATTERN, key_description="1-15 of A-Z a-z 0-9 _ ."),
            "BPF maps, by name",
        ),
        Field("traffic", ListOf(TRAFFIC), "traffic sources"),
        Field("timeline", ListOf(TIMELINE_ENTRY), "commands at given times"),
        Field("lessons", ListOf(LESSON), "guided lessons"),
    ),
    description="An xdptui topology (v1): devices, maps, traffic, a timeline and lessons.",
)

# What the loader reads: every mapping's keys.
TOP_KEYS = TOPOLOGY.keys
DEVICE_TYPES = DEVICE.tags
ALL_DEVICE_KEYS = DEVICE.all_keys
MAP_KEYS = MAP.all_keys
MAP_KINDS = MAP.tags
OBJECT_MAP_ENTRY_KEYS = OBJECT_MAP_ENTRY.keys
INNER_MAP_KEYS = INNER_MAP.keys
ENTRY_KEYS = MAP_ENTRY.keys
CPUMAP_ENTRY_KEYS = CPUMAP_ENTRY.keys
TRAFFIC_KEYS = TRAFFIC.keys
TIMELINE_KEYS = TIMELINE_ENTRY.keys
LESSON_KEYS = LESSON.keys
STEP_KEYS = STEP.keys


def schema() -> JSONSchema:
    """The topology's JSON Schema (draft 2020-12)."""
    return json_schema(TOPOLOGY, schema_id=SCHEMA_ID, title="xdptui topology (v1)")
