"""Where frames a ring or a driver did not take are counted, as the kernel counts them.

Each device's transmit rule hands back what it took and what it refused; the data path counts
them here: XDP_TX the driver could not queue (``xdp_tx_errors`` and ``xdp:xdp_exception``, a
veth's ``veth_xdp_flush_bq`` and ``xdp:xdp_bulk_tx``, a tap's ``tx_dropped``), an
``ndo_xdp_xmit`` that failed or took a prefix (``xdp:xdp_devmap_xmit`` drops and errors), generic
XDP_TX and the stack (``tx_dropped``), and what was taken (``tx_packets`` when frames leave a
veth sender, ``xdp_xmit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from xdptui.model.errors import Errno
from xdptui.sim.batch import Rows
from xdptui.sim.dev.netdev import Host, NetDev, Refusal, Xmit
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import calls_full

if TYPE_CHECKING:
    from xdptui.sim.tally import Tracepoints


class FollowedFrame(Protocol):
    """The followed frame's journey, as the counting of refusals adds to it."""

    @property
    def hops(self) -> list[tuple[int, str, str, str, object]]: ...

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


class Accounting:
    """The data path's counting of taken and refused frames: ``Datapath.accounts``, the
    rooms' ``dp.accounts``."""

    def __init__(self, world: Host, tp: Tracepoints, follow: FollowedFrame) -> None:
        self.world = world
        self.tp = tp
        self.follow = follow

    def refusal(self, kind: str, src: NetDev, xmit: Xmit | None = None) -> Refusal:
        return Refusal(kind, src, xmit)

    def xdp_tx_failed(self, dev: NetDev, rows: Rows) -> None:
        """XDP_TX the driver could not queue at all: ``xdp_exception`` and a drop."""
        if self.follow.watched(rows):
            self.follow.hop(
                self.follow.hops[-1][0],
                dev.name,
                "drop",
                "XDP_TX failed: no XDP TX ring (or no peer program)",
                end=True,
            )
        dev.add("xdp_tx_errors", rows.total)
        self.tp.exception[(dev.name, "XDP_TX")] += rows.total

    def veth_tx_refused(self, dev: NetDev, peer: NetDev | None, n: int, err: Errno | None) -> None:
        """``veth_xdp_flush_bq``: frames ``veth_xdp_xmit`` did not take (its error, or a full
        ``ptr_ring``) are freed and fire ``xdp:xdp_bulk_tx`` with the error -- no
        ``xdp_exception``; they are the rq's ``xdp_tx_err``, which ``veth_get_stats64`` shows
        as this end's ``tx_dropped`` and the peer's ``rx_dropped``."""
        dev.add("xdp_tx_errors", n)
        dev.add("tx_dropped", n)
        if peer is not None:
            peer.add("rx_dropped", n)
        self.tp.bulk_tx[(dev.name, err.name if err is not None else "")] += (0, n)

    def xmit_error(self, x: Xmit, errno: Errno, count_dev: bool = True) -> None:
        """``ndo_xdp_xmit`` returned an error: nothing sent, devmap frees the bulk and the
        flush counts as a driver error."""
        n = x.rows.total
        if self.follow.watched(x.rows):
            self.follow.hop(
                x.t,
                x.dst.name,
                "drop",
                f"ndo_xdp_xmit returned {errno.name}: devmap frees the bulk",
                end=True,
            )
        if count_dev:
            x.dst.add("xdp_xmit", n)
            x.dst.add("xdp_xmit_errors", n)
        x.tally.drops += n
        x.tally.err += x.calls
        x.err = errno.name

    def xmit_part(self, x: Xmit, slave: NetDev, rows: Rows, calls: int) -> Xmit:
        """Frames of a bond's ``bond_xdp_xmit`` handed on to one slave (the devmap tally and
        the flush stay the bond's); all of them to it: when the polls made them, too."""
        whole = rows.total == x.rows.total
        return Xmit(
            x.src, slave, x.cpu, x.t, rows, calls, x.tally, parent=x,
            sched=x.sched if whole else None, scheds=x.scheds if whole else None,
        )  # fmt: skip

    def accepted(self, ref: Refusal, rows: Rows, into_rx: bool) -> None:
        """Frames a ring took. Frames put into a veth peer's receive queue are counted as
        ``Veth.sent_into`` says; a NIC or tap counts ``tx_packets`` when they leave its
        ring."""
        n = rows.total
        x = ref.xmit
        if ref.kind == "xmit" and x is not None:
            x.dst.add("xdp_xmit", n)
            x.tally.sent += n
            x.add_sent(n)
            if x.parent is not None:  # a bond's frames, handed to this slave
                x.parent.dst.handed_down(n)
            if isinstance(x.dst, Nic):
                x.dst.xdpsq(xdp_tx=False, xmit=n)
        if ref.kind == "tx" and isinstance(ref.src, Nic):
            ref.src.xdpsq(xdp_tx=True, xmit=n)
        if into_rx:
            sender = x.dst if ref.kind == "xmit" and x is not None else ref.src
            nbytes = rows.bytes(self.world.entries.size)
            if isinstance(sender, Veth):
                sender.sent_into(self.world.devices.get(sender.peer), n, nbytes)
            else:
                sender.add("tx_packets", n)
                sender.add("tx_bytes", nbytes)
            if ref.kind == "tx" and isinstance(sender, Veth):  # veth_xdp_flush_bq: sent
                sender.rq_stats["xdp_tx"] += n
                self.tp.bulk_tx[(sender.name, "")] += (n, 0)

    def refused(self, ref: Refusal, ring_dev: NetDev, n: int, taken: int = 0) -> None:
        """Frames a full ring refused, counted where the kernel counts them: XDP_TX as
        ``xdp_tx_errors`` + ``xdp_exception`` (a tap: ``tx_dropped`` per frame); an
        ``ndo_xdp_xmit`` prefix as devmap ``drops`` (a tap also adds one ``tx_dropped`` per
        call that met the full ring); generic XDP_TX and the stack as ``tx_dropped``; a veth's
        skbs as the sender's ``tx_dropped``, and the peer's ``rx_dropped`` too where its
        backlog refused them."""
        if not n:
            return
        kind = ref.kind
        if kind == "tx" and isinstance(ref.src, Veth):
            self.veth_tx_refused(ref.src, ring_dev, n, None)
        elif kind == "tx":
            ref.src.add("xdp_tx_errors", n)
            if isinstance(ref.src, Nic):
                ref.src.xdpsq(xdp_tx=True, full=n)
                ref.src.xdp_handle(dropped=n)
            if isinstance(ring_dev, Tun):
                ring_dev.add("tx_dropped", n)
            else:
                self.tp.exception[(ref.src.name, "XDP_TX")] += n
        elif kind == "xmit" and ref.xmit is not None:
            x = ref.xmit
            # a bond hands a slave one frame per call (``bond_xdp_xmit``) and stops at the
            # first it refuses: of a call's refused frames only that one reached the slave
            handed = n if x.parent is None else min(n, calls_full(x, n, taken))
            x.dst.add("xdp_xmit", handed)
            x.dst.add("xdp_xmit_errors", handed)
            if x.parent is not None:
                x.parent.dst.handed_down(handed)
            x.tally.drops += n
            if isinstance(ring_dev, Tun):
                ring_dev.add("tx_dropped", calls_full(x, n, taken))
            if isinstance(ring_dev, Nic):
                ring_dev.xdpsq(xdp_tx=False, full=calls_full(x, n, taken))
            if isinstance(x.dst, Veth):  # veth_get_stats64: the peer rq's peer_tq_xdp_xmit_err
                x.dst.add("tx_dropped", n)
                ring_dev.add("rx_dropped", n)
        elif kind == "gtx":
            ring_dev.add("tx_dropped", n)
            if not isinstance(ring_dev, Tun):
                self.tp.exception[(ref.src.name, "XDP_TX")] += n
        elif kind == "veth_skb":  # veth_xmit's NET_RX_DROP: priv->dropped
            ref.src.add("tx_dropped", n)
            if isinstance(ring_dev, Veth) and ring_dev.backlog():  # enqueue_to_backlog counts
                ring_dev.add("rx_dropped", n)  # skb->dev's too (dev_core_stats_rx_dropped_inc)
        else:
            ring_dev.add("tx_dropped", n)
