"""``struct net_device`` as the simulator keeps it, and the device protocol every driver room
implements -- the simulator's ``net_device_ops``.

Counters are the report's (docs/design.md, "JSON report (v1)"). The protocol:

* ``has_ndo_bpf`` -- the driver can run a native program (``ndo_bpf``);
* ``ndo_xmit_ready`` -- ``NETDEV_XDP_ACT_NDO_XMIT``: a redirect may target it;
* ``xdp_tx`` -- the driver's XDP_TX rule: where a frame its program bounced goes;
* ``ndo_xdp_xmit`` -- frames a devmap bulk queue hands it at flush;
* ``generic_xmit`` -- an skb sent at once (generic XDP's redirect and XDP_TX);
* ``stack_xmit`` -- the local stack sending out of it;
* ``costs`` -- its row of the cost model.

The data-path core calls these; each driver room implements them with its kernel's rules.
What the rooms call back into the core is written down here too, as Protocols: ``XdpCore``
(the data path: where frames land, the followed frame), ``Accounts`` (how frames a ring
or a driver took or refused are counted) and ``Host``
(the devices, maps, sources and entries the rooms read), with ``Xmit`` (one
``ndo_xdp_xmit``'s frames) and ``Refusal`` (how frames a ring did not take are counted). The
rooms name these, never the core's classes, so no room imports the core that imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.model.views import COUNTERS
from xdptui.sim import costs
from xdptui.sim.dev.rings import RxQueue, rx_queue_table
from xdptui.sim.programs import Program
from xdptui.sim.table import Table
from xdptui.sim.xsk import XskMap, XskSocket

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from xdptui.sim.batch import Rows
    from xdptui.sim.dev.rings import TxRing
    from xdptui.sim.entries import Entries
    from xdptui.sim.tally import Tracepoints, XmitTally
    from xdptui.sim.traffic import Source

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


@dataclass(eq=False)
class NetDev:
    """Common device state and the default (absent) device operations."""

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
    rxq: Table[RxQueue] = field(default_factory=lambda: rx_queue_table(0, [], 0, 0, 0))
    down_until_ns: int = 0  # a driver reset keeps the link down until then

    @property
    def running(self) -> bool:
        """IFF_UP and carrier: frames can be received and sent."""
        return self.admin_up and self.carrier

    def stack_refused(self, n: int) -> int:
        """``n`` frames the local stack sends out of this device while it is not running;
        returns those its source loses. Down: ``packet_snd`` fails them with -ENETDOWN before
        any queue, counted by no device. Up without carrier: ``dev_deactivate`` left the noop
        qdisc on its queues and ``__dev_queue_xmit`` drops them there (QDISC_DROP), this
        device's ``tx_dropped`` -- as the machine's kernel counts them for a veth whose peer
        is down and for a tap no process holds open."""
        if not self.admin_up:
            return n
        self.add("tx_dropped", n)
        return 0

    @property
    def prog(self) -> Attachment | None:
        """The program the RX path runs (native wins; generic runs in the skb path)."""
        return self.xdp.get(MODE_DRV) or self.xdp.get(MODE_SKB)

    def get_stats64(self) -> dict[str, int]:
        """``dev_get_stats``: what ``ip -s link`` reads (``ndo_get_stats64``); the device's
        counters unless its driver folds them otherwise."""
        return dict(self.counters)

    def add(self, name: str, value: int) -> None:
        if value:
            self.counters[name] += value

    def handed_down(self, n: int) -> None:
        """A bond's ``bond_xdp_xmit`` handed ``n`` frames to a slave's ``ndo_xdp_xmit`` (only
        a bond counts them)."""

    # ------------------------------------------------------------ the device protocol

    def has_ndo_bpf(self) -> bool:
        return False

    def ndo_xmit_ready(self, dp: XdpCore) -> bool:
        """NETDEV_XDP_ACT_NDO_XMIT: may a redirect target this device."""
        return False

    def costs(self) -> costs.DriverCosts:
        return costs.COSTS["generic"]

    def rx_queue_of(self, rss: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The receive queue each frame of flow hash ``rss`` lands on, for a device that is
        not a NIC (a NIC's is its RSS indirection table, ``Nic.rss_queues``): the hash over
        its queues."""
        out: npt.NDArray[np.int64] = rss.astype(np.int64) % max(len(self.rxq), 1)
        return out

    def xdp_tx(self, dp: XdpCore, cpu: int, queue: int, t: int, rows: Rows) -> None:
        """XDP_TX from this device's own RX path. Devices without a rule fail it."""
        dp.accounts.xdp_tx_failed(self, rows)

    def ndo_xdp_xmit(self, dp: XdpCore, x: Xmit) -> None:
        """A bulk from a devmap flush; devices without ``ndo_xdp_xmit`` never get here
        (``__xdp_enqueue`` refuses them with EOPNOTSUPP)."""
        dp.accounts.xmit_error(x, Errno.EOPNOTSUPP)

    def generic_xmit(self, dp: XdpCore, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        """``generic_xdp_tx``: the skb goes out through the device's transmit path."""
        self.add("tx_dropped", rows.total)

    def stack_xmit(self, dp: XdpCore, cpu: int, t: int, rows: Rows) -> None:
        """The local stack sends ``rows`` out of this device."""
        self.add("tx_dropped", rows.total)


# ------------------------------------------------------------ what the rooms call back


@dataclass
class Xmit:
    """One ``ndo_xdp_xmit``'s worth of frames (fast mode: a step's bulks toward one target)."""

    src: NetDev  # the ingress device (bq->dev_rx)
    dst: NetDev
    cpu: int
    t: int
    rows: Rows
    calls: int  # ndo_xdp_xmit calls behind these frames
    tally: XmitTally
    sent: int = 0
    bursts: int = 1  # the interrupts whose polls made those calls (fast mode: a step's)
    parent: Xmit | None = None  # a bond's bond_xdp_xmit that handed these on to a slave
    err: str | None = None  # the errno ndo_xdp_xmit returned (the trace's ``err``), if any
    # fast mode, from NAPI's loop: each poll's start (ns) and frames toward the target, the
    # polls' bulks in time order (None: not known)
    sched: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
    full_calls: int | None = None  # of ``calls``, those that met a full ring (when played)
    # fast mode, many CPUs' bulks at once: per sending CPU its polls' starts and frames
    scheds: list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64]]] | None = None

    def add_sent(self, n: int) -> None:
        x: Xmit | None = self
        while x is not None:
            x.sent += n
            x = x.parent


@dataclass
class Refusal:
    """How frames a ring could not take are counted: ``tx`` (XDP_TX), ``xmit``
    (``ndo_xdp_xmit``), ``gtx`` (generic XDP's ``generic_xdp_tx``), ``stack`` (local TX),
    ``veth_skb`` (``veth_xmit``)."""

    kind: str
    src: NetDev
    xmit: Xmit | None = None


class IO(Protocol):
    """Where frames land, as each mode keeps rings."""

    def tx(self, ring_dev: NetDev, ring: TxRing, rows: Rows, t: int, ref: Refusal) -> int: ...

    def tx_many(
        self, ring_dev: NetDev, rings: npt.NDArray[np.int64], rows: Rows, t: int, ref: Refusal
    ) -> int: ...

    def tx_bulks(self, ring_dev: NetDev, ring: TxRing, xs: Sequence[Xmit], t: int) -> None: ...

    def rx(self, dev: NetDev, rxq: RxQueue, rows: Rows, t: int, cpu: int, ref: Refusal) -> int: ...

    def wake(self, cpu: int, t: int) -> None:
        """A cpumap flush woke the kthread on ``cpu`` (``wake_up_process``)."""


class MapEntryView(Protocol):
    """A devmap entry as the rooms read it: its target and egress program."""

    @property
    def dev(self) -> str: ...

    @property
    def egress(self) -> Program | None: ...


class DevMapView(Protocol):
    """A devmap as the rooms read it: ``__dev_map_lookup_elem`` and the broadcast walk."""

    def lookup(self, key: int) -> MapEntryView | None: ...

    def walk(self) -> Sequence[tuple[int, MapEntryView]]: ...


class CpuMapEntryView(Protocol):
    """A cpumap entry as the rooms read it: the program its kthread runs."""

    @property
    def prog(self) -> Program | None: ...


class CpuMapView(Protocol):
    """A cpumap as ``bpf_redirect_map`` reads it (``__cpu_map_lookup_elem``), and its
    entries."""

    def lookup(self, key: int) -> object | None: ...

    @property
    def entries(self) -> Mapping[int, CpuMapEntryView]: ...


class Host(Protocol):
    """The simulated host as the rooms read it (``xdptui.sim.world.World``)."""

    devices: dict[str, NetDev]
    by_ifindex: dict[int, NetDev]
    entries: Entries
    sources: list[Source]
    nr_cpus: int
    devmap_egress: str

    @property
    def maps(self) -> Mapping[str, DevMapView]: ...

    @property
    def cpumaps(self) -> Mapping[str, CpuMapView]: ...

    @property
    def xsks(self) -> Mapping[str, XskSocket]: ...

    @property
    def xskmaps(self) -> Mapping[str, XskMap]: ...

    @property
    def xsk_by_index(self) -> Mapping[int, XskSocket]: ...

    @property
    def epoch(self) -> int: ...

    def touch(self) -> None: ...


class Accounts(Protocol):
    """How the data path counts frames a ring or a driver took or refused
    (``xdptui.sim.refusals.Accounting``)."""

    def refusal(self, kind: str, src: NetDev, xmit: Xmit | None = None) -> Refusal: ...

    def xdp_tx_failed(self, dev: NetDev, rows: Rows) -> None: ...

    def xmit_error(self, x: Xmit, errno: Errno, count_dev: bool = True) -> None: ...

    def xmit_part(self, x: Xmit, slave: NetDev, rows: Rows, calls: int) -> Xmit: ...

    def veth_tx_refused(
        self, dev: NetDev, peer: NetDev | None, n: int, err: Errno | None
    ) -> None: ...

    def accepted(self, ref: Refusal, rows: Rows, into_rx: bool) -> None: ...

    def refused(self, ref: Refusal, ring_dev: NetDev, n: int, taken: int = 0) -> None: ...


class XdpCore(Protocol):
    """What devices, bonds and devmaps call back into the data path (``Datapath``)."""

    @property
    def world(self) -> Host: ...

    @property
    def io(self) -> IO: ...

    @property
    def tp(self) -> Tracepoints: ...

    @property
    def watch(self) -> int | None: ...

    def watched(self, rows: Rows) -> bool: ...

    def hop(
        self,
        t: int,
        dev: str,
        stage: str,
        detail: str,
        end: bool = False,
        program: object = None,
    ) -> None: ...

    @property
    def accounts(self) -> Accounts: ...

    def by_rx_queue(self, dev: NetDev, rows: Rows) -> list[tuple[int, Rows]]: ...
