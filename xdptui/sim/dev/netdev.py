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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdptui.model.errors import Errno
from xdptui.model.views import COUNTERS
from xdptui.sim import costs
from xdptui.sim.dev.rings import RxQueue
from xdptui.sim.programs import Program

if TYPE_CHECKING:
    from xdptui.sim.batch import Rows
    from xdptui.sim.datapath import Datapath
    from xdptui.sim.devmap import Xmit

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
    rxq: list[RxQueue] = field(default_factory=list)
    down_until_ns: int = 0  # a driver reset keeps the link down until then

    @property
    def running(self) -> bool:
        """IFF_UP and carrier: frames can be received and sent."""
        return self.admin_up and self.carrier

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

    # ------------------------------------------------------------ the device protocol

    def has_ndo_bpf(self) -> bool:
        return False

    def ndo_xmit_ready(self, dp: Datapath) -> bool:
        """NETDEV_XDP_ACT_NDO_XMIT: may a redirect target this device."""
        return False

    def costs(self) -> costs.DriverCosts:
        return costs.COSTS["generic"]

    def xdp_tx(self, dp: Datapath, cpu: int, queue: int, t: int, rows: Rows) -> None:
        """XDP_TX from this device's own RX path. Devices without a rule fail it."""
        dp.xdp_tx_failed(self, rows)

    def ndo_xdp_xmit(self, dp: Datapath, x: Xmit) -> None:
        """A bulk from a devmap flush; devices without ``ndo_xdp_xmit`` never get here
        (``__xdp_enqueue`` refuses them with EOPNOTSUPP)."""
        dp.xmit_error(x, Errno.EOPNOTSUPP)

    def generic_xmit(self, dp: Datapath, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        """``generic_xdp_tx``: the skb goes out through the device's transmit path."""
        self.add("tx_dropped", rows.total)

    def stack_xmit(self, dp: Datapath, cpu: int, t: int, rows: Rows) -> None:
        """The local stack sends ``rows`` out of this device."""
        self.add("tx_dropped", rows.total)
