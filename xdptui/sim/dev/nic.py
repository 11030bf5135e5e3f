"""A NIC port with its driver's XDP rules (``drivers/net/ethernet/intel/ixgbe``, ``i40e``,
``ice``, ``mellanox/mlx5``; the profiles are in ``xdptui.sim.drivers``).

RSS spreads received frames over the RX queues; each queue's interrupt is affine to a CPU and
moderated (``rx-usecs``). XDP TX rings exist only while a native program is attached, one per
CPU or per queue pair as the driver lays them out (mlx5: two per channel); they and the
stack's TX queue drain onto one wire. Ports of one card share its DMA budget (``Card``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs, jit
from xdptui.sim.dev.netdev import MODE_DRV, NetDev, XdpCore, Xmit
from xdptui.sim.dev.rings import Batch, TxRing, rx_queue_table, tx_ring_table
from xdptui.sim.drivers import DriverProfile
from xdptui.sim.hashing import default_reta, rss_queue
from xdptui.sim.kconst import NAPI_POLL_WEIGHT, WIRE_OVERHEAD
from xdptui.sim.table import Table

if TYPE_CHECKING:
    from xdptui.sim.batch import Rows

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Ints = IntArray | list[int]  # a compiled loop takes arrays, the plain one lists

GCRA_WINDOW = 4096  # frames (or slots) a vectorised run of the card's admission looks at
GCRA_COMPILED = 200_000  # frames taken one by one in a process after which that loop is compiled
_one_by_one = [0]  # frames this process's cards took one by one (``Card.trial``)
SW_STATS = (
    "rx_xdp_drop",
    "rx_xdp_redirect",
    "rx_xdp_tx_xmit",
    "rx_xdp_tx_full",
    "tx_xdp_xmit",
    "tx_xdp_full",
    "rq_packets",
    "rq_bytes",
)


@dataclass(eq=False)
class Nic(NetDev):
    driver: DriverProfile | None = None
    queues: int = 1
    tx_ring_size: int = 512
    reta: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # RSS's queue per flow-table entry of the port's own sources, from entry ``queue_lo`` on
    # (``map_entries``; a byte: at most 256 queues a port)
    queue_of_entry: npt.NDArray[np.uint8 | np.int16] = field(
        default_factory=lambda: np.zeros(0, np.uint8)
    )
    queue_lo: int = 0
    xdp_rings: int = 0
    xdp_locking: bool = False
    ring_of_cpu: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ring_of_queue: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # the XDP TX rings, then the stack's queue
    tx: Table[TxRing] = field(default_factory=lambda: tx_ring_table(0, 0))
    card: str = ""  # ports of one card share its DMA budget (rx_pps_max)
    # mlx5's RQ and XDPSQ counters as ``ethtool -S`` names them (``xdp_handle``, ``xdpsq``);
    # kept for every port, printed for mlx5 only
    sw_stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SW_STATS, 0))
    wire_free_ps: int = 0  # exact mode: when the wire finishes the frame it is sending (ps)
    # fast mode, where the XDP rings were played (``rings.offer_polls``): the frames still queued
    wire_batches: list[Batch] = field(default_factory=list)

    @property
    def drv(self) -> DriverProfile:
        assert self.driver is not None
        return self.driver

    @property
    def stack_ring(self) -> TxRing:
        return self.tx[-1]

    def has_ndo_bpf(self) -> bool:
        return self.drv.native_xdp

    def ndo_xmit_ready(self, dp: XdpCore) -> bool:
        """ixgbe (and, UNVERIFIED, i40e/ice) advertise NDO_XMIT only while a program is
        attached (``xdp_features_set_redirect_target``)."""
        if not self.drv.ndo_xdp_xmit:
            return False
        return not self.drv.ndo_xmit_needs_prog or self.xdp.get(MODE_DRV) is not None

    def costs(self) -> costs.DriverCosts:
        return costs.COSTS[self.drv.name]

    def lock_cost(self, nr_cpus: int) -> float:
        """ixgbe with more than 64 CPUs: every XDP_TX / ndo_xdp_xmit takes the ring's
        ``tx_lock`` (``ixgbe_xdp_locking_key``); sharing CPUs bounce its cache line."""
        if not self.xdp_locking:
            return 0.0
        sharers = max(1, -(-nr_cpus // max(1, self.xdp_rings)))
        return costs.LOCK_UNCONTENDED + costs.LOCK_PER_SHARER * (sharers - 1)

    def rss_queues(
        self, entries: npt.NDArray[np.integer[Any]], rss_hash: npt.NDArray[np.uint32]
    ) -> npt.NDArray[np.int64]:
        """The RX queue RSS gives each of ``entries``: from the port's column for its own
        sources' entries, from the hash for others' (a stack source sent out of it, whose
        frames never reach its RX queues)."""
        rel = entries - self.queue_lo
        if not len(rel) or (rel.min() >= 0 and rel.max() < len(self.queue_of_entry)):
            out: npt.NDArray[np.int64] = self.queue_of_entry[rel].astype(np.int64)
            return out
        return rss_queue(rss_hash[entries], self.reta)

    def rss_slice(
        self, lo: int, hi: int, rss_hash: npt.NDArray[np.uint32]
    ) -> npt.NDArray[np.integer[Any]]:
        """The RX queues of entries ``lo .. hi - 1`` (a view of the port's column for its own
        sources' entries)."""
        base = self.queue_lo
        if base <= lo <= hi <= base + len(self.queue_of_entry):
            return self.queue_of_entry[lo - base : hi - base]
        return rss_queue(rss_hash[lo:hi], self.reta).astype(np.int32)

    def xdp_tx_ring(self, cpu: int, queue: int) -> int:
        """The XDP TX ring for XDP_TX (-1: none): ixgbe uses the polling CPU's ring
        (``ixgbe_determine_xdp_ring``); i40e, ice and mlx5 the ring paired with the RX queue
        (``ring_for_queue``: ice ``rx_ring->xdp_ring``, mlx5 ``rq->xdpsq``)."""
        if self.xdp_rings == 0:
            return -1
        if queue >= 0 and len(self.ring_of_queue) > queue and self.ring_of_queue[queue] >= 0:
            return int(self.ring_of_queue[queue])
        return int(self.ring_of_cpu[cpu])

    def xdp_tx_rings(self, cpus: IntArray, queues: IntArray) -> IntArray:
        """``xdp_tx_ring`` for many (cpu, queue) pairs at once."""
        if self.xdp_rings == 0:
            return np.full(len(cpus), -1, np.int64)
        by_cpu: IntArray = self.ring_of_cpu[cpus]
        if not len(self.ring_of_queue) or (self.ring_of_queue < 0).all():
            return by_cpu
        q = np.clip(queues, 0, len(self.ring_of_queue) - 1)
        by_queue = self.ring_of_queue[q]
        out: IntArray = np.where((queues >= 0) & (by_queue >= 0), by_queue, by_cpu)
        return out

    def service_ps(self, wire_bytes: IntArray) -> IntArray:
        """Wire time of each frame in picoseconds (frame + preamble and gap at the port's
        speed), never less than the driver's XDP TX descriptor rate allows."""
        ps: IntArray = -(-(wire_bytes * 8 * 10**12) // max(self.speed_bps, 1))
        if self.drv.tx_pps_max:
            ps = np.maximum(ps, int(np.ceil(1e12 / self.drv.tx_pps_max)))
        return ps

    # ------------------------------------------------------------ data path

    def xdp_handle(self, dropped: int = 0, redirected: int = 0) -> None:
        """``mlx5e_xdp_handle`` (en/xdp.c, mainline v6.19), the RQ's counters of a native
        program's verdicts: ``rq->stats->xdp_redirect`` for a redirect ``xdp_do_redirect``
        took; ``rq->stats->xdp_drop`` for XDP_DROP and for every frame that reaches
        ``xdp_abort:`` (after ``trace_xdp_exception``) -- XDP_ABORTED or an unknown verdict,
        an XDP_TX ``mlx5e_xmit_xdp_buff`` could not queue, a redirect ``xdp_do_redirect``
        refused. A redirect that fails later, when ``bq_xmit_all`` hands the bulk to the
        target's ``ndo_xdp_xmit``, is not the RQ's; generic XDP never gets here."""
        self.sw_stats["rx_xdp_drop"] += dropped
        self.sw_stats["rx_xdp_redirect"] += redirected

    def clean_rx_rings(self) -> int:
        """``ixgbe_clean_rx_ring`` / ``i40e_clean_rx_ring`` / ``ice_clean_rx_ring`` (a link
        down, rings re-allocated): the buffers go back unread and no statistic counts them.
        Returns the frames freed."""
        return sum(rxq.clear() for rxq in self.rxq)

    def get_stats64(self) -> dict[str, int]:
        """mlx5's ``ndo_get_stats64`` (en_main.c ``mlx5e_get_stats``, mainline v6.19): RX and
        TX are ``mlx5e_fold_sw_stats64``'s sums of the RQs' and the regular SQs' counters --
        frames that became skbs (``rq_stats``) and frames the stack sent; what XDP consumed,
        and XDP_TX and redirected frames sent through the XDPSQs, are in neither.
        ``rx_missed_errors`` is the RQs' ``rx_out_of_buffer`` (a full ring) plus the port's
        own misses; ``rx_dropped`` is the port's ``if_in_discards``, which nothing here causes.
        The other drivers' counters are what they count."""
        k = dict(self.counters)
        if self.driver is None or self.driver.name != "mlx5":
            return k
        stack = self.stack_ring
        k.update(
            rx_packets=self.sw_stats["rq_packets"],
            rx_bytes=self.sw_stats["rq_bytes"],
            tx_packets=stack.sent,
            tx_bytes=round(stack.sent_wire) - WIRE_OVERHEAD * stack.sent,
            rx_dropped=0,
            rx_missed_errors=self.counters["rx_dropped"] + self.counters["rx_missed_errors"],
        )
        return k

    def rq_stats(self, packets: int, nbytes: int) -> None:
        """mlx5 ``mlx5e_complete_rx_cqe`` (en_rx.c): the RQ counts a frame once it is an skb --
        every frame when no native program runs (generic XDP runs on the skb), a native
        program's XDP_PASS; the frames it consumed never are. ``mlx5e_fold_sw_stats64`` sums
        these into ``ip -s link``'s RX, as ``ethtool -S`` rx_packets."""
        self.sw_stats["rq_packets"] += packets
        self.sw_stats["rq_bytes"] += nbytes

    def xdpsq(self, xdp_tx: bool, xmit: int = 0, full: int = 0) -> None:
        """mlx5's XDPSQ counters (en/xdp.c, mainline v6.19): ``mlx5e_xmit_xdp_frame`` counts
        ``stats->xmit`` for a frame it queued and ``stats->full`` when the SQ has no room.
        XDP_TX uses the RQ's own SQ (``rx_xdp_tx_*``), one frame a call, so each refused frame
        is one ``full``; ``mlx5e_xdp_xmit`` the channel's (``tx_xdp_*``) and stops its loop at
        the first refusal, so ``full`` counts the calls that met a full SQ. A bulk it refuses
        before the SQ (-ENXIO, -ENETDOWN) counts nothing here."""
        pre = "rx_xdp_tx" if xdp_tx else "tx_xdp"
        self.sw_stats[f"{pre}_xmit"] += xmit
        self.sw_stats[f"{pre}_full"] += full

    def xdp_tx(self, dp: XdpCore, cpu: int, queue: int, t: int, rows: Rows) -> None:
        ring = self.xdp_tx_ring(cpu, queue)
        if ring < 0:
            self.xdp_handle(dropped=rows.total)
            dp.accounts.xdp_tx_failed(self, rows)
            return
        dp.io.tx(self, self.tx[ring], rows, t, dp.accounts.refusal("tx", self))

    def xdp_tx_many(
        self, dp: XdpCore, cpus: IntArray, queues: IntArray, t: int, rows: Rows
    ) -> None:
        """``xdp_tx`` for frames polled by many (cpu, queue) instances (``cpus``/``queues``
        per row, fast mode): each onto its own ring, every ring in one claim."""
        ring = self.xdp_tx_rings(cpus, queues)
        bad = ring < 0
        if bad.any():
            self.xdp_handle(dropped=int(rows.count[bad].sum()))
            dp.accounts.xdp_tx_failed(self, rows.where(bad))
        if not bad.all():
            dp.io.tx_many(self, ring[~bad], rows.where(~bad), t, dp.accounts.refusal("tx", self))

    def ndo_xdp_xmit_many(self, dp: XdpCore, x: Xmit, cpus: IntArray, calls: IntArray) -> None:
        """``ndo_xdp_xmit`` for the bulks of many CPUs (``cpus`` per row; ``calls`` the
        flushes behind each row's frames): each CPU's onto its XDP ring, -ENXIO where it has
        none."""

        ring = self.ring_of_cpu[cpus] if self.xdp_rings else np.full(len(cpus), -1, np.int64)
        bad = ring < 0
        for mask in (bad, ~bad):
            if not mask.any():
                continue
            part = Xmit(x.src, self, -1, x.t, x.rows.where(mask), int(calls[mask].sum()),
                        x.tally, bursts=x.bursts)  # fmt: skip
            if x.scheds is not None:
                part.scheds = [
                    sc for sc in x.scheds if (self.ring_of_cpu[sc[0]] < 0) == (mask is bad)
                ]
            if mask is bad:
                dp.accounts.xmit_error(part, Errno.ENXIO)
            else:
                dp.io.tx_many(
                    self, ring[mask], part.rows, x.t, dp.accounts.refusal("xmit", x.src, part)
                )

    def ndo_xdp_xmit(self, dp: XdpCore, x: Xmit) -> None:
        """``ixgbe_xdp_xmit`` / ``i40e_xdp_xmit`` / ``ice_xdp_xmit`` / ``mlx5e_xdp_xmit``: onto
        the sending CPU's XDP ring (``ring_for_cpu``); no ring for that CPU (no program, or
        i40e/mlx5 at or past the queue-pair / channel count) is -ENXIO for the whole bulk; a
        full ring takes a prefix, devmap frees the rest."""
        ring = int(self.ring_of_cpu[x.cpu]) if self.xdp_rings else -1
        if ring < 0:
            dp.accounts.xmit_error(x, Errno.ENXIO)
            return
        dp.io.tx(self, self.tx[ring], x.rows, x.t, dp.accounts.refusal("xmit", x.src, x))

    def ndo_xdp_xmit_bulks(self, dp: XdpCore, xs: list[Xmit]) -> None:
        """``ndo_xdp_xmit`` for each of one poll's bulks toward this port, in order (one CPU's:
        one ring, or -ENXIO for each)."""
        ring = int(self.ring_of_cpu[xs[0].cpu]) if self.xdp_rings else -1
        if ring < 0:
            for x in xs:
                dp.accounts.xmit_error(x, Errno.ENXIO)
            return
        dp.io.tx_bulks(self, self.tx[ring], xs, xs[0].t)

    def generic_xmit(self, dp: XdpCore, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        dp.io.tx(self, self.stack_ring, rows, t, dp.accounts.refusal("gtx", src))

    def stack_xmit(self, dp: XdpCore, cpu: int, t: int, rows: Rows) -> None:
        dp.io.tx(self, self.stack_ring, rows, t, dp.accounts.refusal("stack", self))


def map_entries(nic: Nic, rss_hash: npt.NDArray[np.uint32], span: tuple[int, int]) -> None:
    """The RX queue RSS gives each entry of ``span`` (the port's own sources' entries: no
    other frame reaches its RX queues, ``filter.reached``), through the RETA, a chunk at a time
    (a byte an entry where the RETA's queues fit in one), read-only -- replaced, never
    changed, so state copies share it."""
    lo, hi = span
    q: npt.NDArray[np.uint8 | np.int16] = np.empty(
        hi - lo, np.uint8 if int(nic.reta.max(initial=0)) <= 0xFF else np.int16
    )
    for at in range(lo, hi, 1 << 18):
        end = min(hi, at + (1 << 18))
        q[at - lo : end - lo] = rss_queue(rss_hash[at:end], nic.reta)
    q.flags.writeable = False
    nic.queue_of_entry = q
    nic.queue_lo = lo


def configure_queues(
    nic: Nic,
    queues: int,
    nr_cpus: int,
    rss_hash: npt.NDArray[np.uint32],
    span: tuple[int, int],
    irq: IntArray | None,
) -> None:
    """(Re)build RSS and the RX rings for ``queues`` channels (``ethtool -L``): the RETA is
    refilled with the default round-robin (``ethtool_rxfh_indir_default``) over at most the
    driver's RSS queue limit; queue i's interrupt goes to CPU i % nr_cpus unless given."""
    drv = nic.drv
    nic.queues = queues
    nic.reta = default_reta(drv.reta_size, min(queues, drv.rss_queues_max))
    map_entries(nic, rss_hash, span)
    if irq is None or len(irq) != queues:
        irq = np.arange(queues, dtype=np.int64) % nr_cpus
    size = nic.rxq[0].size if nic.rxq else drv.rx_ring_default
    nic.rxq = rx_queue_table(size, irq.tolist(), drv.itr_ns, NAPI_POLL_WEIGHT, len(rss_hash))


def configure_xdp_rings(nic: Nic, nr_cpus: int) -> None:
    """XDP TX rings exist only while a native program is attached (``ixgbe_xdp_queues``,
    ``ice_prepare_xdp_rings``); each CPU's ring for ``ndo_xdp_xmit`` and each RX queue's ring
    for XDP_TX follow the driver (``DriverProfile.ring_for_cpu`` / ``ring_for_queue``). The
    last ring is always the stack's TX queue, which survives a reconfiguration."""
    drv = nic.drv
    native = nic.xdp.get(MODE_DRV) is not None
    rings, locking = drv.xdp_tx_layout(nr_cpus, nic.queues) if native else (0, False)
    nic.xdp_rings = rings
    nic.xdp_locking = locking
    ring_of_cpu = np.full(nr_cpus, -1, dtype=np.int64)
    for cpu in range(nr_cpus):
        ring = drv.ring_for_cpu(cpu, rings, locking)
        if ring is not None:
            ring_of_cpu[cpu] = ring
    nic.ring_of_cpu = ring_of_cpu
    ring_of_queue = np.full(nic.queues, -1, dtype=np.int64)
    for q in range(nic.queues):
        ring = drv.ring_for_queue(q, rings, locking, nic.queues)
        if ring is not None:
            ring_of_queue[q] = ring
    nic.ring_of_queue = ring_of_queue
    xdp = [
        {
            "index": r,
            "size": nic.tx_ring_size,
            "cpus": tuple(int(c) for c in np.flatnonzero(ring_of_cpu == r)),
            "locked": locking,
            "rx_queues": tuple(int(q) for q in np.flatnonzero(ring_of_queue == r)),
        }
        for r in range(rings)
    ]
    tx = Table.of(TxRing, [*xdp, {"index": rings, "size": nic.tx_ring_size}])
    if nic.tx:  # the stack's queue survives, its counts and frames with it
        stack = nic.tx[-1]
        tx.adopt(rings, stack)
        stack.index = rings
    nic.tx = tx


def gcra(tat: int, a: int, s: int, tau: int) -> int:
    """The card's DMA for one received frame arriving at ``a`` (picoseconds), a generic
    cell-rate algorithm: the frame is missed (``rx_missed_errors``; -1) when it finds the card
    more than ``tau`` behind (``a < tat - tau``); otherwise the card is free ``s`` after the
    later of ``tat`` and ``a`` (the new ``tat``). Exact mode applies it to a batch in closed
    form (``Card.trial``), NAPI's compiled loop frame by frame (``napi.card_admit``)."""
    if a < tat - tau:
        return -1
    return (tat if tat > a else a) + s


def gcra_sent(tat: int, d: int, c: int) -> int:
    """The card's DMA for one frame its ports transmit, leaving at ``d`` (picoseconds): never
    refused, it takes ``c`` after the later of ``tat`` and ``d`` (the new ``tat``). Its closed
    form over many frames is ``Card.charge_sent``."""
    return (tat if tat > d else d) + c


def gcra_merged(tat: int, af: Ints, dp: Ints, s: int, tau: int, c: int, keep: BoolArray) -> int:
    """The card's DMA for frames arriving at ``af`` and frames leaving at ``dp`` (both sorted,
    picoseconds), one at a time in time order -- a frame that leaves at the instant another
    arrives goes first: ``gcra`` for each arrival (``keep`` marks those taken),
    ``gcra_sent`` for each departure. Returns the card's TAT after all of them (compiled when
    a batch is big: ``Card.trial``)."""
    j = 0
    m = len(dp)
    for i in range(len(af)):
        a = af[i]
        while j < m and dp[j] <= a:
            tat = gcra_sent(tat, dp[j], c)
            j += 1
        took = gcra(tat, a, s, tau)
        if took >= 0:
            keep[i] = True
            tat = took
    while j < m:
        tat = gcra_sent(tat, dp[j], c)
        j += 1
    return tat


@dataclass
class Card:
    """A card's DMA budget, shared by its ports (fitted on E810: ``rx_pps_max`` received
    frames per second, each transmitted frame costing ``tx_dma_weight`` of them). The card
    is a server that needs ``1/rx_pps`` per received frame and ``tx_weight/rx_pps`` per frame
    it transmits, with room for ``burst`` frames of backlog: a frame that finds it more
    behind than that is dropped (``rx_dropped``; ``rx_missed_errors`` on the real card) --
    a generic cell-rate algorithm (GCRA) with ``tat`` its theoretical arrival time."""

    name: str
    rx_pps: float
    tx_weight: float
    burst: int = (
        8192  # frames its packet buffer holds while the DMA is behind (UNVERIFIED: ~0.7 MB)
    )
    tat: int = 0  # when the card is free again, in picoseconds (exact integer arithmetic)
    tx_rate: float = 0.0  # fast mode: frames per ns its ports transmitted in the last step
    tx_ahead: int = 0  # fast mode: transmit frames charged ahead of the step's settlement
    # exact mode: when the frames a port's ``dev_close`` freed would have left -- they never
    # do, so their DMA is never taken (``Exact.take_due``)
    freed: list[IntArray] = field(default_factory=list)
    rr: int = 0  # exact mode: the port its DMA arbiter serves first at the next contended instant

    @property
    def s(self) -> int:
        """Picoseconds of DMA per received frame."""
        return round(1e12 / self.rx_pps)

    @property
    def c(self) -> int:
        """Picoseconds of DMA per transmitted frame (``tx_weight`` received frames' worth)."""
        return round(self.tx_weight * self.s)

    def charge_sent(self, dep: IntArray) -> None:
        """Frames transmitted at (sorted) times ``dep`` (ns) take their DMA when they leave:
        ``gcra_sent`` frame after frame, in closed form max(tat + n c, max_j d_j + (n - j) c)."""
        self.tat = self._sent(self.tat, dep * 1000)

    def _sent(self, tat: int, dp: IntArray) -> int:
        n = len(dp)
        if not n:
            return tat
        c = self.c
        tail = (n - np.arange(n, dtype=np.int64)) * c
        return max(tat + n * c, int((dp + tail).max()))

    def admit(self, a: IntArray, dep: IntArray | None = None) -> BoolArray:
        """Which frames arriving at (sorted) times ``a`` the card takes, the frames leaving
        at ``dep`` charged in time order among them (``trial``); the card takes them."""
        keep, self.tat = self.trial(a, dep)
        return keep

    def trial(self, a: IntArray, dep: IntArray | None = None) -> tuple[BoolArray, int]:
        """Which frames arriving at (sorted) times ``a`` (ns) the card would take, and its TAT
        after them and the frames its ports send at (sorted) times ``dep``, all in time order
        (``gcra_merged``). Arrivals before the first departure and after the last go in
        closed form (``_runs``); those among departures one by one."""
        af = a * 1000  # picoseconds
        if dep is None or not len(dep):
            return self._runs(self.tat, af)
        dp = dep * 1000
        me = sys.modules[__name__]
        s, tau, c = self.s, self.burst * self.s, self.c
        if jit.compiled(me):  # one compiled pass beats three NumPy ones
            keep = np.zeros(len(af), dtype=bool)
            return keep, gcra_merged(self.tat, af, dp, s, tau, c, keep)
        lo = int(np.searchsorted(af, dp[0], side="left"))
        hi = int(np.searchsorted(af, dp[-1], side="left"))
        keep, tat = self._runs(self.tat, af[:lo])
        mid = np.zeros(hi - lo, dtype=bool)
        if hi == lo:  # no arrival among the departures
            tat = self._sent(tat, dp)
        else:
            tat = gcra_merged(tat, af[lo:hi].tolist(), dp.tolist(), s, tau, c, mid)
            _one_by_one[0] += hi - lo + len(dp)
            if _one_by_one[0] > GCRA_COMPILED:
                jit.compile_functions(me, ("gcra", "gcra_sent", "gcra_merged"))
        after, tat = self._runs(tat, af[hi:])
        return np.concatenate((keep, mid, after)), tat

    def _runs(self, tat: int, af: IntArray) -> tuple[BoolArray, int]:
        """Which frames arriving at (sorted) times ``af`` (ps) the card would take from
        ``tat``, and its TAT after them -- ``gcra`` frame by frame in order, with
        ``tau = burst * s``, in closed form over runs: while the card keeps up, TAT is a
        running maximum; while it is behind it takes the first frame after each slot opens."""
        n = len(af)
        keep = np.zeros(n, dtype=bool)
        s, tau = self.s, self.burst * self.s
        i = 0
        while i < n:
            # keeping up: T_j = s (j - i) + max(tat, max_{i <= m < j} a_m - s (m - i))
            w = min(n, i + GCRA_WINDOW)
            off = s * np.arange(w - i, dtype=np.int64)
            cm = np.maximum.accumulate(np.concatenate(([tat], af[i : w - 1] - off[:-1])))
            t = off + cm
            late = af[i:w] < t - tau
            run = int(np.argmax(late)) if late.any() else w - i
            keep[i : i + run] = True
            if run:
                tat = max(int(t[run - 1]), int(af[i + run - 1])) + s
            i += run
            if i >= w:
                continue
            # behind: slot k opens at tat + k s - tau and takes the first frame after it,
            # as long as that frame arrives before the card is free (tat + k s)
            slots = min(GCRA_WINDOW, int((af[-1] - tat + tau) // s) + 2)
            k = np.arange(max(slots, 1), dtype=np.int64)
            idx = np.maximum(np.searchsorted(af, tat + k * s - tau, side="left"), i)
            idx = k + np.maximum.accumulate(idx - k)
            valid = idx < n
            busy = valid & (af[np.minimum(idx, n - 1)] <= tat + k * s)
            m = int(np.argmin(busy)) if not busy.all() else len(k)
            keep[idx[:m]] = True
            tat += m * s
            if m < len(k):
                if not valid[m]:
                    break
                i = int(idx[m])  # the card caught up: this frame starts a new run
            else:
                i = int(idx[m - 1]) + 1
        return keep, tat

    def admit_count(self, n: int, t0: int, t1: int, r: float, wires: int) -> tuple[int, int]:
        """Fast mode: of ``n`` frames arriving evenly over (t0, t1], how many the card takes,
        when each one taken makes ``r`` frames to send and its ports can send ``wires`` -- the
        same server as a fluid: A + k T fits the time and the buffer, T = min(r A, wires).
        Returns (taken, the frames to send it reserved DMA for)."""
        s, tau = self.s, self.burst * self.s
        k = self.tx_weight
        p0, p1 = t0 * 1000, t1 * 1000
        backlog = max(0, self.tat - p0)
        room = max(0.0, ((p1 - p0) + tau - backlog) / s)  # frames of DMA time
        taken = room / (1.0 + k * r) if r > 0 else room
        if r > 0 and r * taken > wires:
            taken = max(0.0, room - k * wires)
        taken_i = min(n, int(taken))
        tx = min(int(r * taken_i), wires)
        used = backlog + round((taken_i + k * tx) * s) - (p1 - p0)
        self.tat = p1 + max(0, min(used, tau))
        return taken_i, tx
