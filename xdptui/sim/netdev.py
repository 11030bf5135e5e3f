"""Runtime state of network devices: the part of ``struct net_device`` and the driver's rings
that the simulator models.

Counters are the report's (docs/design.md, "JSON report (v1)"); ring contents are counts per
flow-table entry so that a verdict computed per entry applies to exactly the frames that are
queued.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.model.views import COUNTERS
from xdptui.sim.drivers import DriverProfile
from xdptui.sim.programs import Program

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

__all__ = ["COUNTERS"]  # the report's counter names live in xdptui.model.views

# IFLA_XDP_ATTACHED modes (include/uapi/linux/if_link.h); the keys of NetDev.xdp.
MODE_DRV = "native"
MODE_SKB = "generic"
MODE_HW = "offload"


@dataclass
class Attachment:
    """A program attached in one mode; ``inherited_from`` names a bond that propagated it."""

    prog: Program
    mode: str
    inherited_from: str | None = None


@dataclass
class RxQueues:
    """RX rings of one device: counts per (queue, entry), plus per-queue statistics."""

    size: int
    irq_cpu: IntArray
    ring: IntArray  # [Q, E]
    peak: IntArray
    rx_packets: IntArray
    rx_dropped: IntArray
    poll_acc: FloatArray  # fractional polls carried between steps
    rate: FloatArray  # smoothed arrival rate per queue, frames per ns
    work: FloatArray  # smoothed CPU load the arrivals bring (ns of work per ns)
    age_ns: float = 0.0  # how long rate and work have been observed

    @classmethod
    def make(cls, queues: int, size: int, irq_cpu: IntArray, entries: int) -> RxQueues:
        return cls(
            size=size,
            irq_cpu=irq_cpu,
            ring=np.zeros((queues, entries), dtype=np.int64),
            peak=np.zeros(queues, dtype=np.int64),
            rx_packets=np.zeros(queues, dtype=np.int64),
            rx_dropped=np.zeros(queues, dtype=np.int64),
            poll_acc=np.zeros(queues, dtype=np.float64),
            rate=np.zeros(queues, dtype=np.float64),
            work=np.zeros(queues, dtype=np.float64),
        )

    @property
    def count(self) -> int:
        return len(self.irq_cpu)

    def occupancy(self) -> IntArray:
        occ: IntArray = self.ring.sum(axis=1)
        return occ

    def clear(self) -> int:
        """Drop everything queued (ring re-allocation); returns the frames lost."""
        lost = int(self.ring.sum())
        self.ring[:] = 0
        return lost


@dataclass
class TxRings:
    """Transmit rings that drain onto the wire: the XDP TX rings plus, as the last ring, the
    stack's TX queue. Frame and byte occupancy per ring."""

    size: IntArray
    occ: IntArray
    occ_bytes: FloatArray
    sent: IntArray
    dropped: IntArray
    credit: FloatArray  # fractions of a frame each ring may still send (saturated wire)
    cpus: tuple[tuple[int, ...], ...] = ()
    locked: bool = False

    @classmethod
    def make(cls, sizes: list[int]) -> TxRings:
        n = len(sizes)
        return cls(
            size=np.array(sizes, dtype=np.int64),
            occ=np.zeros(n, dtype=np.int64),
            occ_bytes=np.zeros(n, dtype=np.float64),
            sent=np.zeros(n, dtype=np.int64),
            dropped=np.zeros(n, dtype=np.int64),
            credit=np.zeros(n, dtype=np.float64),
        )


@dataclass
class NetDev:
    """Common device state."""

    name: str
    ifindex: int
    kind: str
    admin_up: bool
    mtu: int
    speed_bps: int
    carrier: bool = True
    master: str | None = None
    xdp: dict[str, Attachment] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    rx: RxQueues | None = None
    down_until_ns: int = 0  # a driver reset keeps the link down until then

    @property
    def running(self) -> bool:
        """IFF_UP and carrier: frames can be received and sent."""
        return self.admin_up and self.carrier

    @property
    def prog(self) -> Attachment | None:
        """The program the RX path runs (native wins; generic runs in the skb path)."""
        return self.xdp.get(MODE_DRV) or self.xdp.get(MODE_SKB)

    def add(self, name: str, value: int) -> None:
        if value:
            self.counters[name] += value


@dataclass
class Nic(NetDev):
    driver: DriverProfile | None = None
    queues: int = 1
    tx_ring_size: int = 512
    reta: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    queue_of_entry: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    xdp_rings: int = 0
    xdp_locking: bool = False
    ring_of_cpu: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tx: TxRings | None = None
    card: str = ""  # ports of one card share its DMA budget (rx_pps_max)
    tx_demand_last: float = 0.0  # frames offered to the XDP TX rings in the last step


@dataclass
class Veth(NetDev):
    peer: str = ""
    queues: int = 1
