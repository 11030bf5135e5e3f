"""Immutable snapshots of the simulation, the only thing the UI reads.

A :class:`Frame` is produced by ``Simulator.frame()``. It has ``eq=False`` and a sequence number
(Textual compares reactive values with ``!=``); everything inside is small, frozen and hashable,
so equal sub-views let widgets skip repaints.
"""

from __future__ import annotations

from dataclasses import dataclass

Counters = tuple[tuple[str, int], ...]

COUNTERS: tuple[str, ...] = (
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "rx_missed_errors",
    "xdp_drop",
    "xdp_pass",
    "xdp_tx",
    "xdp_redirect",
    "xdp_aborted",
    "xdp_tx_errors",
    "xdp_xmit",
    "xdp_xmit_errors",
    "tx_packets",
    "tx_bytes",
    "tx_dropped",
)
"""Every device's counters, in the v1 report's order (docs/design.md, "JSON report (v1)")."""

TUN_COUNTERS: tuple[str, ...] = ("xdp_fast_path", "xdp_generic_path")
XSK_COUNTERS: tuple[str, ...] = (
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "rx_invalid_descs",
    "tx_invalid_descs",
    "rx_ring_full",
    "rx_fill_ring_empty_descs",
    "tx_ring_empty_descs",
    "tx_packets",
)
"""An AF_XDP socket's: ``XDP_STATISTICS`` (struct xdp_statistics) between its RX and TX
frames."""
"""What tun/tap devices add: frames whose program ran before the skb / as generic XDP."""


@dataclass(frozen=True)
class XdpView:
    program: str
    mode: str  # native | generic | offload
    inherited_from: str | None = None  # a bond that pushed its program to this slave
    params: tuple[tuple[str, str], ...] = ()  # as given with `param K=V` (resolved extras left out)


@dataclass(frozen=True)
class QueueView:
    """One RX queue: its descriptor ring and the CPU its interrupt is bound to. A veth with
    no native program queues into the CPU's backlog instead (``backlog``): ``ring_size`` is
    its input queue's limit (``netdev_max_backlog`` + 1), which counts only what is not yet
    in ``process_queue`` (``process_queue`` of ``occupancy``)."""

    queue: int
    cpu: int
    ring_size: int
    occupancy: int
    peak: int
    rx_packets: int
    rx_dropped: int
    backlog: bool = False
    process_queue: int = 0


@dataclass(frozen=True)
class TxRingView:
    """One XDP TX ring, the CPUs whose ``ndo_xdp_xmit`` (ixgbe: and XDP_TX) use it and the RX
    queues whose XDP_TX use it (i40e, ice, mlx5); shared rings take ``tx_lock``."""

    ring: int
    cpus: tuple[int, ...]
    locked: bool
    size: int
    occupancy: int
    sent: int
    dropped: int
    rx_queues: tuple[int, ...] = ()
    lock_ns: float = 0.0  # a locked ring: what taking its tx_lock costs a CPU per frame


@dataclass(frozen=True)
class NicView:
    """What a NIC adds: its channels and XDP TX ring layout."""

    queues: int
    xdp_tx_rings: int
    xdp_locking: bool  # more CPUs than rings: cpu % rings under tx_lock
    card: str


@dataclass(frozen=True)
class VethView:
    peer: str


@dataclass(frozen=True)
class TapView:
    """A tun/tap device: its userspace sides and its two XDP paths."""

    mode: str  # tap | tun
    writer: str  # write | vhost
    reader_pps: float | None  # None: no reader (no queue attached)
    tx_queue_len: int
    writes_throttled: int
    slow_path: tuple[tuple[str, int], ...]  # reason -> frames
    verdicts_by_path: tuple[tuple[str, int], ...]  # "fast.XDP_DROP" -> frames


@dataclass(frozen=True)
class BondView:
    mode: str
    xmit_hash_policy: str
    slaves: tuple[str, ...]
    active_slave: str | None
    usable_slaves: tuple[str, ...]
    miimon: int
    rx_up: int = 0  # frames delivered up through the bond
    tx_down: int = 0  # frames sent down through it to its slaves
    stack_down: int = 0  # ... of which skbs (bond_start_xmit); the rest by bond_xdp_xmit


@dataclass(frozen=True)
class DeviceView:
    name: str
    ifindex: int
    type: str
    driver: str | None
    up: bool
    carrier: bool
    master: str | None
    speed_bps: int
    mtu: int
    xdp: XdpView | None
    counters: Counters
    queues: tuple[QueueView, ...] = ()
    xdp_tx_rings: tuple[TxRingView, ...] = ()
    nic: NicView | None = None
    veth: VethView | None = None
    tap: TapView | None = None
    bond: BondView | None = None

    def counter(self, name: str) -> int:
        for key, value in self.counters:
            if key == name:
                return value
        raise KeyError(name)


@dataclass(frozen=True)
class CpuView:
    """What one CPU serves: RX queues it polls and the XDP TX ring it uses on each device."""

    cpu: int
    busy: float  # NAPI busy share over the last interval, 0..1
    polls: int
    rx_queues: tuple[tuple[str, int], ...]  # (device, queue)
    xdp_tx_rings: tuple[tuple[str, int, bool], ...]  # (device, ring, locked)
    busy_ns: int = 0  # NAPI time spent on it so far (what busy shares over a window come from)


@dataclass(frozen=True)
class ExceptionView:
    dev: str
    action: str
    count: int


@dataclass(frozen=True)
class BulkTxView:
    """``xdp:xdp_bulk_tx`` summed per device and error ("" = none): a driver's XDP_TX bulk."""

    dev: str
    err: str
    sent: int
    drops: int


@dataclass(frozen=True)
class RedirectErrView:
    dev: str
    err: str
    count: int


@dataclass(frozen=True)
class DevmapXmitView:
    from_dev: str
    to_dev: str
    sent: int
    drops: int
    err: int
    flushes: int
    egress_drops: int = 0  # of the drops, those the devmap egress program made at flush


@dataclass(frozen=True)
class CpumapEnqueueView:
    """``xdp:xdp_cpumap_enqueue`` summed per (map, sending CPU, target CPU)."""

    map: str
    cpu: int
    to_cpu: int
    processed: int
    drops: int
    hits: int


@dataclass(frozen=True)
class CpumapFromDevView:
    """The same frames per (map, receiving device, target CPU): which port's they were (the
    tracepoint knows only the sending CPU, which ports may share)."""

    map: str
    dev: str
    to_cpu: int
    processed: int
    drops: int
    hits: int


@dataclass(frozen=True)
class CpumapKthreadView:
    """``xdp:xdp_cpumap_kthread`` summed per (map, CPU), and the entry's ring now."""

    map: str
    cpu: int
    processed: int
    drops: int
    sched: int
    xdp_pass: int
    xdp_drop: int
    xdp_redirect: int
    hits: int
    busy_ns: float
    ring: int = 0
    qsize: int = 0
    prog: str | None = None


@dataclass(frozen=True)
class TracepointsView:
    xdp_exception: tuple[ExceptionView, ...] = ()
    xdp_redirect_err: tuple[RedirectErrView, ...] = ()
    xdp_devmap_xmit: tuple[DevmapXmitView, ...] = ()
    xdp_redirect: int = 0  # successful redirects (xdp:xdp_redirect hits)
    xdp_bulk_tx: tuple[BulkTxView, ...] = ()
    xdp_cpumap_enqueue: tuple[CpumapEnqueueView, ...] = ()
    cpumap_from_dev: tuple[CpumapFromDevView, ...] = ()
    xdp_cpumap_kthread: tuple[CpumapKthreadView, ...] = ()


@dataclass(frozen=True)
class EventView:
    t_ns: int
    cmd: str
    ok: bool
    errno: str | None
    reply: str
    origin: str  # user | timeline | system


@dataclass(frozen=True)
class MapEntryView:
    key: int
    dev: str  # a cpumap entry: "cpuN"
    egress: str | None  # a cpumap entry: its program
    qsize: int = 0  # a cpumap entry's ring size


@dataclass(frozen=True)
class MapView:
    name: str
    type: str  # devmap | devmap_hash
    max_entries: int
    entries: tuple[MapEntryView, ...]


@dataclass(frozen=True)
class BulkQueueView:
    """One per-CPU devmap bulk queue (``xdp_dev_bulk_queue``, 16 frames) toward a device."""

    cpu: int
    from_dev: str
    to_dev: str
    frames: int  # enqueued so far
    flushes: int
    last_bulk: float  # frames in the last flush (fast mode: the mean over its last step)
    program: str | None  # the egress program the last bulk ran (the poll's first enqueuer's)
    egress_drops: int = 0  # of the frames, those the egress program dropped at flush


@dataclass(frozen=True)
class SourceView:
    """A traffic source as it runs now (``pktgen`` retunes it)."""

    name: str
    device: str
    local: bool  # from: (the local stack sends) rather than to: (arrives from the wire)
    rate: str  # as set: "20Mpps", "40Gbps", "line"
    pps: float  # what that is in frames per second, after the port's line-rate cap
    sizes: tuple[int, ...]
    flows: int
    gso: float
    emitted: int
    lost: int  # offered while the target was down
    stopped: bool
    pcap: str = ""  # a replayed capture's file: its frames are as captured, only the rate moves


@dataclass(frozen=True)
class StreamEventView:
    """One record of the event stream, typed for the event list (docs/design.md, "Event
    stream"): a NAPI poll, a tap's writes, a bulk queue flush, a drop or refusal, a command,
    a lesson step.

    Fields a kind does not use keep their defaults. ``bulks`` (a poll, a write): the frames
    its flushes sent per target, from the ``bq_flush`` records that follow it.
    """

    seq: int
    t_ns: int
    kind: str  # napi_poll | tun_write | bq_flush | cpumap_enqueue | cpumap_kthread | drop | ...
    cpu: int | None = None
    dev: str | None = None  # the device polled, flushed from, or counting the drop
    queue: int | None = None
    target: str | None = None  # a flush's target device
    frames: int = 0
    ring_before: int = 0
    ring_after: int = 0
    verdicts: tuple[tuple[str, int], ...] = ()
    bulks: tuple[tuple[str, int], ...] = ()
    sent: int = 0
    drops: int = 0
    egress: str | None = None
    egress_drops: int = 0
    reason: str = (
        ""  # a flush: full | poll_end; a drop: where (rx_ring_full, ...); a command: origin
    )
    errno: str | None = None  # a refusal's errno, a failed command's
    action: str | None = None  # xdp_exception's action
    ok: bool = True
    text: str = ""  # a command's line; a lesson step: "lesson.step"
    dur_ns: int = 0
    paths: tuple[tuple[str, int], ...] = ()  # a tap's writes: ("fast", n), ("generic", m)


@dataclass(frozen=True)
class QueueRef:
    """A queue to zoom on: an RX ring (``index``: the queue), an XDP TX ring or a tap's ring
    toward userspace (``index``: the ring), or a devmap bulk queue (``index``: the CPU,
    ``target``: the device it flushes into)."""

    kind: str  # rx | tx | tap | bq
    dev: str
    index: int = 0
    target: str | None = None


@dataclass(frozen=True)
class SlotView:
    """One occupied descriptor of a zoomed ring, oldest first."""

    slot: int  # its position in the ring (0..size-1)
    source: str  # the traffic source ("" for a frame rebuilt from fast-mode counts)
    flow: int  # the flow of that source (-1: unknown)
    size: int  # bytes
    verdict: str  # RX: what the attached program does with it ("XDP_TX", "XDP_REDIRECT→eth1")
    wait_ns: int  # RX: since it arrived; TX: until it leaves


@dataclass(frozen=True)
class BulkView:
    """One ``bq_xmit_all`` of a zoomed bulk queue: the frames it held and what became of them."""

    t_ns: int
    frames: int
    sent: int
    egress_drops: int
    refused: int
    reason: str  # full | poll_end
    egress: str | None


@dataclass(frozen=True)
class QueueZoomView:
    """The slots of one queue: head and tail, each descriptor (exact mode), or a summary by
    verdict (fast mode: the ring holds counts, not descriptors). A bulk queue is empty between
    polls (``xdp_do_flush`` at the end of each), so it shows the bulks its last poll sent."""

    ref: QueueRef
    label: str
    size: int
    occupancy: int
    head: int  # RX: next_to_clean (NAPI takes from here); TX: the next frame to complete
    tail: int  # where the next frame goes
    exact: bool
    slots: tuple[SlotView, ...] = ()
    summary: tuple[tuple[str, int], ...] = ()  # frames per verdict (or source)
    bulks: tuple[BulkView, ...] = ()
    last_poll: StreamEventView | None = None  # a bulk queue's CPU's last poll of its device
    cpus: tuple[int, ...] = ()  # the CPU(s) behind it: IRQ, ring users, the bulk queue's


@dataclass(frozen=True)
class LessonPosition:
    """The lesson step on at the frame's instant (the engine logs step starts as inputs, so a
    rewind before a step's start shows the step before it)."""

    lesson: int  # index into the topology's lessons
    step: int  # index into its steps
    t_ns: int  # when the step began


@dataclass(frozen=True, eq=False)
class Frame:
    """Everything the screen shows at one simulated instant."""

    seq: int
    t_ns: int
    name: str
    description: str
    seed: int
    nr_cpus: int
    devices: tuple[DeviceView, ...]
    cpus: tuple[CpuView, ...]
    tracepoints: TracepointsView
    events: tuple[EventView, ...]
    polls: int
    maps: tuple[MapView, ...] = ()
    bulk_queues: tuple[BulkQueueView, ...] = ()
    sources: tuple[SourceView, ...] = ()
    exact: bool = False  # the engine was in exact mode: every number is the kernel's state now
    lesson: LessonPosition | None = None
    stream: tuple[StreamEventView, ...] = ()  # the newest records of the event stream
    zoom: QueueZoomView | None = None  # the queue asked for with frame(zoom=...)
    objects: tuple[ObjectView, ...] = ()  # loaded real XDP objects
    xsks: tuple[XskView, ...] = ()  # AF_XDP sockets

    def device(self, name: str) -> DeviceView:
        for dev in self.devices:
            if dev.name == name:
                return dev
        raise KeyError(name)


@dataclass(frozen=True)
class XskRingView:
    """One of an AF_XDP socket's rings: its size, the entries in it, its free-running
    producer and consumer indices."""

    name: str  # fill | rx | tx | comp
    size: int
    entries: int
    producer: int
    consumer: int


@dataclass(frozen=True)
class XskWriterView:
    """An AF_XDP socket's writer and what its ``sendto`` kicks got (``__xsk_generic_xmit``)."""

    batch: int  # descriptors written before each kick
    offered_pps: float  # the source's rate: descriptors the writer would write
    per_kick: int  # frames each kick sends: min(batch, 32, comp ring, TX limit)
    kicks: int  # sendto calls
    eagain: int  # of them, answered EAGAIN (descriptors left in the TX ring)
    not_written: int  # descriptors the writer could not put on a full TX ring


@dataclass(frozen=True)
class XskView:
    """An AF_XDP socket (``struct xdp_sock``): where it is bound, its rings, its UMEM's
    chunks by owner, its reader and its counters (``XDP_STATISTICS`` names)."""

    name: str
    dev: str
    queue: int
    mode: str  # copy | zerocopy
    frames: int
    frame_size: int
    rings: tuple[XskRingView, ...]
    owners: tuple[tuple[str, int], ...]  # fill, kernel, rx, user, tx, comp
    reader_pps: float | None
    need_wakeup: bool
    rx_need_wakeup: bool
    wakeups: int
    counters: tuple[tuple[str, int], ...]
    writer: XskWriterView | None = None  # the TX side's writer (a source ``from:`` it)

    def counter(self, name: str) -> int:
        return dict(self.counters).get(name, 0)

    def ring(self, name: str) -> XskRingView:
        return next(r for r in self.rings if r.name == name)


@dataclass(frozen=True)
class MapAccessView:
    """One map access of a real program's run on a followed frame."""

    map: str  # the map's kernel name
    key: str  # the key as bpftool prints it (hex bytes)
    cpu: int | None  # the per-CPU copy (None: a shared map)
    kind: str  # read | write
    before: str  # the value's bytes before the run (hex), as the program found them
    after: str  # and after it ("" for a read)


@dataclass(frozen=True)
class ProgramRunView:
    """A real XDP program's run on a followed frame: what it returned, the frame it got and
    the one it left (what the next hop sees), and the map words it read and wrote."""

    program: str  # the ELF function's name
    prog_id: int
    action: str  # XDP_TX, ...
    retval: int
    insns: int  # instructions it ran
    before: bytes
    after: bytes
    redirect: str | None  # "ifindex 3" / "map tx_port key 1" (None: no redirect)
    accesses: tuple[MapAccessView, ...] = ()

    def changed(self) -> tuple[int, ...]:
        """Byte offsets where the frame left differs from the frame received (aligned at the
        start; a longer or shorter frame also differs past the shorter one's end)."""
        a, b = self.before, self.after
        diff = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
        diff += list(range(min(len(a), len(b)), max(len(a), len(b))))
        return tuple(diff)

    def lines(self, width: int = 42) -> tuple[str, ...]:
        """The run in a few text lines: the first ``width`` bytes before and after, which
        bytes changed, the redirect and each map value read or written."""
        diff = self.changed()
        out = [
            f"frame in  ({len(self.before)} B): {self.before[:width].hex(' ')}",
            f"frame out ({len(self.after)} B): {self.after[:width].hex(' ')}",
            f"changed: {_ranges(diff)}"
            if diff
            else "changed: nothing (the frame goes on as it came)",
        ]
        if self.redirect:
            out.append(f"redirect: {self.redirect}")
        for m in self.accesses:
            cpu = f" cpu {m.cpu}" if m.cpu is not None else ""
            if m.kind == "write":
                out.append(f"map {m.map} [{m.key}]{cpu}: {m.before} -> {m.after}")
            else:
                out.append(f"map {m.map} [{m.key}]{cpu}: read {m.before}")
        return tuple(out)


def _ranges(offsets: tuple[int, ...]) -> str:
    """``0-11, 22, 24-25``: byte offsets as ranges."""
    parts: list[str] = []
    start = prev = offsets[0]
    for i in (*offsets[1:], -2):
        if i == prev + 1:
            prev = i
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = i
    return "bytes " + ", ".join(parts)


@dataclass(frozen=True)
class TraceHop:
    """One hop of a followed packet: when, where, and what happened there."""

    t_ns: int
    dev: str
    stage: str  # wire | rx_ring | napi | xdp | tx_ring | bulk_queue | ndo_xdp_xmit | stack | drop
    detail: str  # e.g. "queue 3 on cpu 3", "XDP_TX", "ENETDOWN: target down"
    program: ProgramRunView | None = None  # a real program ran here: its run on this frame


@dataclass(frozen=True)
class ObjectView:
    """A loaded real XDP object (``bpftool prog show`` and the data path's view of it)."""

    prog_id: int
    name: str  # the ELF function's name
    file: str
    section: str
    tag: str
    insns: int
    per_frame: str | None  # why its verdict can differ between frames of a flow (None: it
    # is a function of the frame, evaluated once per flow-table entry)
    approximated: int  # frames fast mode gave a sampled outcome to
    frames_run: int  # frames exact mode ran one by one
    map_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class HeaderLayer:
    """One protocol header of a frame, its fields as a dissector shows them."""

    name: str  # "Ethernet II", "802.1Q", "IPv4", "IPv6", "UDP", "TCP", "ICMP"
    offset: int  # where it starts in the frame
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class PacketView:
    """A followed frame's bytes and headers before and after the program on the device it
    arrives at; ``changed`` holds the offsets the program rewrote."""

    source: str
    flow: int
    device: str
    program: str  # "" without a program
    verdict: str
    before: tuple[HeaderLayer, ...]
    after: tuple[HeaderLayer, ...]
    data_before: bytes
    data_after: bytes
    changed: tuple[int, ...]
    note: str  # what the program did to the bytes, or why they are unchanged


@dataclass(frozen=True)
class FlowInfo:
    """A flow a user can pick to follow: source name, flow index, its 5-tuple in words."""

    source: str
    flow: int
    label: str
