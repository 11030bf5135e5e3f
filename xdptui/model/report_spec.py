"""The JSON report (v1), declared once as ``TypedDict`` classes: ``report.build_report`` returns a
:class:`Report` (mypy checks every key it writes) and ``xdptui schema report`` is generated from
the same classes. Counter names are ``xdptui.model.views.COUNTERS`` (taps add ``TUN_COUNTERS``).
"""

# No ``from __future__ import annotations``: TypedDict needs NotRequired unstringified (3.11).
from typing import Annotated, Literal, NotRequired, TypedDict

from xdptui.model.spec import Choices, JSONSchema, Keys, typed_dict_schema
from xdptui.model.topology_spec import DEVICE_TYPES, REPORT_MAP_TYPES, XDP_MODES
from xdptui.model.views import COUNTERS, TUN_COUNTERS, XSK_COUNTERS

SCHEMA_ID = "https://xdptui.dev/schema/report-v1.json"
REPORT_VERSION: Literal[1] = 1


class XdpEntry(TypedDict):
    """The attached program."""

    program: Annotated[str, "a built-in program or path/to/file.py:function"]
    mode: Annotated[str, Choices(XDP_MODES), "how it is attached"]
    inherited_from: NotRequired[Annotated[str, "the bond that pushed this program down"]]


class QueueEntry(TypedDict):
    """One RX queue."""

    queue: int
    cpu: Annotated[int, "the CPU its interrupt is bound to"]
    rx_packets: int
    rx_dropped: Annotated[int, "frames lost to a full ring"]
    ring_peak: Annotated[int, "the ring's highest occupancy"]


class TxRingEntry(TypedDict):
    """One XDP TX ring."""

    ring: int
    cpus: Annotated[list[int], "the CPUs that use it"]
    locked: Annotated[bool, "shared by several CPUs under tx_lock"]
    sent: int
    dropped: int


class DeviceEntry(TypedDict):
    """A device; bonds and taps add their own keys."""

    type: Annotated[str, Choices(DEVICE_TYPES), "the device type"]
    driver: NotRequired[Annotated[str, "a NIC's driver"]]
    up: Annotated[bool, "administratively up"]
    carrier: bool
    master: Annotated[str | None, "the bond this device is a slave of"]
    xdp: Annotated[XdpEntry | None, "the attached XDP program"]
    counters: Annotated[
        dict[str, int], Keys(COUNTERS, TUN_COUNTERS), "the kernel's counters, in this order"
    ]
    queues: list[QueueEntry]
    xdp_tx_rings: list[TxRingEntry]
    peer: NotRequired[Annotated[str, "a veth's other end"]]
    mode: NotRequired[Annotated[str, "a bond's or a tap's mode"]]
    xmit_hash_policy: NotRequired[str]
    slaves: NotRequired[list[str]]
    active_slave: NotRequired[str | None]
    rx_up: NotRequired[Annotated[int, "frames a bond delivered up through itself"]]
    tx_down: NotRequired[Annotated[int, "frames a bond sent down to its slaves"]]
    slow_path_reasons: NotRequired[
        Annotated[dict[str, int], "tap frames that took the generic path, by reason"]
    ]
    writes_throttled: NotRequired[int]
    verdicts_by_path: NotRequired[Annotated[dict[str, int], "tap verdicts, by path"]]


class MapEntryEntry(TypedDict):
    dev: str
    egress: Annotated[str | None, "the devmap egress program"]


class CpumapEntryEntry(TypedDict):
    qsize: Annotated[int, "the entry's ptr_ring size"]
    prog: Annotated[str | None, "the program its kthread runs"]


class XskmapEntryEntry(TypedDict):
    sock: Annotated[str, "the AF_XDP socket at the key"]


class MapEntry(TypedDict):
    """A devmap, a cpumap or an xskmap."""

    type: Annotated[str, Choices(REPORT_MAP_TYPES)]
    max_entries: int
    entries: Annotated[
        dict[str, MapEntryEntry | CpumapEntryEntry | XskmapEntryEntry], "by key (decimal)"
    ]


class XskRingEntry(TypedDict):
    size: int
    entries: Annotated[int, "descriptors in the ring now"]
    producer: Annotated[int, "the free-running producer index"]
    consumer: Annotated[int, "the free-running consumer index"]


class XskWriterEntry(TypedDict):
    """An AF_XDP socket's writer and its ``sendto`` kicks (``__xsk_generic_xmit``)."""

    batch: Annotated[int, "descriptors written before each sendto"]
    offered_pps: Annotated[float, "descriptors the writer would write per second"]
    per_kick: Annotated[int, "frames one sendto sends: min(batch, 32, comp ring, TX limit)"]
    sendto: Annotated[int, "kicks so far"]
    eagain: Annotated[int, "kicks answered EAGAIN (descriptors left in the TX ring)"]
    not_written: Annotated[int, "descriptors the writer found no room for"]


class XskEntry(TypedDict):
    """An AF_XDP socket (not a net device: no ifindex)."""

    dev: Annotated[str, "the device it is bound to"]
    queue: Annotated[int, "the queue it is bound to"]
    mode: Annotated[str, Choices(("copy", "zerocopy")), "XDP_COPY or XDP_ZEROCOPY"]
    frames: Annotated[int, "UMEM chunks"]
    frame_size: Annotated[int, "UMEM chunk size"]
    reader_pps: Annotated[float | None, "how fast userspace reads (None: it does not)"]
    need_wakeup: bool
    counters: Annotated[
        dict[str, int], Keys(XSK_COUNTERS), "rx/tx frames and XDP_STATISTICS, in this order"
    ]
    rings: Annotated[dict[str, XskRingEntry], "fill, rx, tx, comp"]
    umem: Annotated[dict[str, int], "the UMEM's chunks by owner"]
    writer: NotRequired[Annotated[XskWriterEntry, "the TX side's writer (a source from: it)"]]


class ExceptionHit(TypedDict):
    dev: str
    action: str
    count: int


class BulkTxHit(TypedDict):
    """xdp:xdp_bulk_tx summed per device and error: what a driver's XDP_TX bulk sent."""

    dev: str
    err: Annotated[str, "the errno name, empty when the bulk went out"]
    sent: int
    drops: int


class RedirectErrHit(TypedDict):
    dev: str
    err: Annotated[str, "the errno name"]
    count: int


DevmapXmitHit = TypedDict(
    "DevmapXmitHit",
    {"from": str, "to": str, "sent": int, "drops": int, "err": int, "flushes": int},
)
DevmapXmitHit.__doc__ = "xdp:xdp_devmap_xmit; (sent + drops) / flushes is the bulk average."


class CpumapEnqueueHit(TypedDict):
    """xdp:xdp_cpumap_enqueue summed per (map, sending CPU, target CPU): hits are flushes."""

    map: str
    cpu: int
    to_cpu: int
    processed: int
    drops: Annotated[int, "frames that found the ptr_ring full"]
    hits: int


class CpumapKthreadHit(TypedDict):
    """xdp:xdp_cpumap_kthread summed per (map, CPU): hits are batches of at most 8."""

    map: str
    cpu: int
    processed: int
    drops: Annotated[int, "skb allocation failures"]
    sched: Annotated[int, "batches after the kthread slept"]
    xdp_pass: int
    xdp_drop: int
    xdp_redirect: int
    hits: int


class Tracepoints(TypedDict):
    xdp_exception: list[ExceptionHit]
    xdp_redirect_err: list[RedirectErrHit]
    xdp_devmap_xmit: list[DevmapXmitHit]
    xdp_bulk_tx: list[BulkTxHit]
    xdp_cpumap_enqueue: NotRequired[list[CpumapEnqueueHit]]
    xdp_cpumap_kthread: NotRequired[list[CpumapKthreadHit]]


TrafficEntry = TypedDict(
    "TrafficEntry",
    {
        "to": NotRequired[Annotated[str, "frames arrived on this device"]],
        "from": NotRequired[Annotated[str, "the local stack sent out of this device"]],
        "emitted": int,
        "lost_link_down": Annotated[int, "offered while the target was down"],
    },
)
TrafficEntry.__doc__ = "A traffic source: to or from its device."


class EventEntry(TypedDict):
    """A command run by the user or the timeline."""

    t_ns: int
    cmd: str
    ok: bool
    errno: Annotated[str | None, "the errno name when refused"]
    reply: str


class BpfMapElem(TypedDict):
    """One element of a BPF map, bytes in hex (per-CPU maps: one value per CPU)."""

    key: str
    value: NotRequired[str]
    values: NotRequired[Annotated[list[str], "per possible CPU"]]


class BpfMapEntry(TypedDict):
    """A loaded object's map: its id and type, and the elements that are not all zero."""

    id: int
    type: str
    elements: list[BpfMapElem]


class ObjectEntry(TypedDict):
    """A loaded BPF object's program and its maps."""

    id: Annotated[int, "the program id bpftool prog show gives"]
    name: Annotated[str, "the ELF function's name"]
    file: str
    section: str
    tag: Annotated[str, "bpf_prog_calc_tag"]
    insns: int
    per_frame: Annotated[
        str | None, "why its verdict varies frame to frame (None: once per flow-table entry)"
    ]
    approximated: Annotated[int, "frames fast mode gave a sampled outcome to"]
    frames_run: Annotated[int, "frames exact mode ran one by one"]
    maps: Annotated[dict[str, BpfMapEntry], "by the kernel's map name"]


class Report(TypedDict):
    """An xdptui JSON report (v1): what a headless run produced."""

    report: Annotated[Literal[1], "the report format version"]
    topology: Annotated[str, "the topology's name"]
    seed: int
    sim_ns: Annotated[int, "simulated time in nanoseconds"]
    devices: Annotated[dict[str, DeviceEntry], "by name, in ifindex order"]
    maps: Annotated[dict[str, MapEntry], "by name"]
    tracepoints: Tracepoints
    traffic: Annotated[dict[str, TrafficEntry], "by source name"]
    events: list[EventEntry]
    objects: NotRequired[Annotated[list[ObjectEntry], "loaded BPF objects (xdp obj FILE.o)"]]
    xsks: NotRequired[Annotated[dict[str, XskEntry], "AF_XDP sockets, by name"]]


def schema() -> JSONSchema:
    """The report's JSON Schema (draft 2020-12)."""
    return typed_dict_schema(Report, schema_id=SCHEMA_ID, title="xdptui JSON report (v1)")
