"""veth pairs with XDP (``drivers/net/veth.c``).

What one end sends arrives on its peer's receive queue (``rq``): a ``ptr_ring`` of
``VETH_RING_SIZE`` frames polled by the peer's NAPI on the sending CPU (``__veth_xdp_flush``
schedules it there). XDP frames -- XDP_TX on a veth, or a redirect into one -- take that path
only while the receiving end has an XDP program (its ``rq->napi`` exists): that is also when
the sending end advertises NDO_XMIT (``veth_set_xdp_features``). Without one, ``veth_xmit``'s
skbs go into the sending CPU's backlog (``__netif_rx``), which the queue stands for here:
``netdev_max_backlog`` limits its input queue, ``process_backlog`` drains it (``queue_size``,
``backlog_room``, ``process_queue_after``), and what both ends count is one counter
(``veth_get_stats64``: ``sent_into``, ``polled``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs
from xdptui.sim.dev.netdev import MODE_DRV, NetDev
from xdptui.sim.kconst import ETH_HLEN, NETDEV_MAX_BACKLOG, VETH_RING_SIZE

if TYPE_CHECKING:
    from xdptui.sim.batch import Rows
    from xdptui.sim.dev.netdev import XdpCore, Xmit


@dataclass(eq=False)
class Veth(NetDev):
    peer: str = ""
    queues: int = 1
    peer_queues: int = 1  # the other end's: its TX queues pick this end's RX queue
    # struct veth_stats of the receive queues (summed; ``ethtool -S`` shows it on one queue):
    # what the native program did (``veth_xdp_rcv_one``) and what its XDP_TX bulk sent.
    rq_stats: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("xdp_packets", "xdp_bytes", "drops", "xdp_redirect", "xdp_drops", "xdp_tx"), 0
        )
    )

    def has_ndo_bpf(self) -> bool:
        return True

    def costs(self) -> costs.DriverCosts:
        return costs.COSTS["veth"]

    def rx_queue_of(self, rss: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """``veth_xmit``: the peer's TX queue (``netdev_pick_tx``, the flow hash over its
        ``peer_queues``) names this end's receive queue (``skb_get_queue_mapping``); one past
        this end's queues, which the kernel sends the non-NAPI way, wraps here."""
        out: npt.NDArray[np.int64] = (
            rss.astype(np.int64) % max(self.peer_queues, 1) % max(len(self.rxq), 1)
        )
        return out

    def peer_dev(self, dp: XdpCore) -> NetDev | None:
        return dp.world.devices.get(self.peer)

    def xdp_napi(self, dp: XdpCore) -> NetDev | None:
        """The peer whose ``rq->napi`` takes XDP frames: up, with an XDP program."""
        peer = self.peer_dev(dp)
        if peer is None or not peer.running or peer.xdp.get(MODE_DRV) is None:
            return None
        return peer

    def skb_rx(self, dp: XdpCore) -> NetDev | None:
        """The end whose receive queues take what ``veth_xmit`` sends (an skb: the stack's,
        or generic XDP's redirect): the peer while it runs -- into its ``rq->napi`` ring with
        an XDP program, else into the stack's backlog (``__netif_rx``)."""
        peer = self.peer_dev(dp)
        return peer if peer is not None and peer.running else None

    @staticmethod
    def ring_bytes(nbytes: int, n: int, skbs: bool) -> int:
        """``veth_xdp_rcv``'s ``xdp_bytes`` for ``n`` frames of ``nbytes`` taken from a ring:
        an xdp_frame's whole length (``xdp_get_frame_len``), an skb's ``skb->len`` --
        ``__dev_forward_skb`` pulled its Ethernet header (``eth_type_trans``) before
        ``veth_xdp_rx`` queued it. They are the ring's end's ``rx_bytes`` and, through
        ``veth_get_stats64``, the sending end's ``tx_bytes`` (the machine's kernel counts 50
        bytes for a 64-byte frame the stack sent)."""
        return nbytes - ETH_HLEN * n if skbs else nbytes

    def sent_into(self, peer: NetDev | None, n: int, nbytes: int) -> None:
        """``veth_get_stats64``: ``n`` frames of ``nbytes`` this end put into its peer's receive
        queue. Into the peer's backlog (``veth_xmit`` with no ``rq->napi``, ``__netif_rx``),
        ``dev_sw_netstats_tx_add`` counts them at once: this end's ``tx_*``, which the peer
        reads as its ``rx_*``. Into the peer's ring, nothing yet: its NAPI counts them as it
        takes them (``polled``)."""
        if not isinstance(peer, Veth) or not peer.backlog():
            return
        self.add("tx_packets", n)
        self.add("tx_bytes", nbytes)
        peer.add("rx_packets", n)
        peer.add("rx_bytes", nbytes)

    def polled(self, peer: NetDev | None, n: int, nbytes: int) -> None:
        """``veth_xdp_rcv``: ``n`` frames of ``nbytes`` (``ring_bytes``) this end's NAPI took from
        its ring, the rq's ``xdp_packets`` and ``xdp_bytes``: this end's ``rx_*`` and, through
        ``veth_get_stats64``, its peer's ``tx_*`` -- so frames freed before a poll took them
        (``napi_del``) count on neither end."""
        self.rq_stats["xdp_bytes"] += nbytes
        self.add("rx_packets", n)
        self.add("rx_bytes", nbytes)
        if peer is not None:
            peer.add("tx_packets", n)
            peer.add("tx_bytes", nbytes)

    def queue_size(self) -> int:
        """What one receive queue holds: the ``ptr_ring`` (``VETH_RING_SIZE``) while this end
        has a native program (its ``rq->napi``); otherwise ``veth_xmit``'s skbs wait in the
        CPU's backlog, whose ``input_pkt_queue`` takes one while it holds at most
        ``netdev_max_backlog`` (``enqueue_to_backlog``: ``qlen <= max_backlog``)."""
        return NETDEV_MAX_BACKLOG + 1 if self.backlog() else VETH_RING_SIZE

    def resize_queues(self) -> None:
        """Its queues as ``queue_size`` says (a native program attached or removed: they are
        empty then, ``Control._backlog_taken`` and ``napi_del``)."""
        size = self.queue_size()
        for rxq in self.rxq:
            if rxq.size != size:
                rxq.size = size
                rxq.proc = 0

    def backlog(self) -> bool:
        """Whether its receive queues are the backlog's (no native program), not a ring."""
        return self.xdp.get(MODE_DRV) is None

    def napi_del(self) -> int:
        """``veth_disable_xdp`` (the native program removed while up, or ``veth_close`` with
        one attached) -> ``veth_napi_del``, GRO not requested: ``ptr_ring_cleanup`` frees what
        the rings held (``veth_ptr_free``), counted by no statistic. Returns the frames
        freed."""
        return sum(rq.clear() for rq in self.rxq)

    def ndo_xmit_ready(self, dp: XdpCore) -> bool:
        peer = self.peer_dev(dp)
        return peer is not None and peer.xdp.get(MODE_DRV) is not None

    def xdp_tx(self, dp: XdpCore, cpu: int, queue: int, t: int, rows: Rows) -> None:
        """``veth_xdp_tx`` -> ``veth_xdp_flush_bq`` -> ``veth_xdp_xmit`` toward the peer's
        ``rq[veth_select_rxq]`` (``smp_processor_id() % real_num_rx_queues``)."""
        peer = self.xdp_napi(dp)
        if peer is None:  # veth_xdp_xmit: no rq->napi on the peer -> -ENXIO for the bulk
            if dp.watched(rows):
                dp.hop(
                    t,
                    self.name,
                    "drop",
                    "veth_xdp_flush_bq: peer has no NAPI, -ENXIO (xdp_bulk_tx)",
                    end=True,
                )
            dp.accounts.veth_tx_refused(self, self.peer_dev(dp), rows.total, Errno.ENXIO)
            return
        rq = peer.rxq[cpu % len(peer.rxq)]
        dp.io.rx(peer, rq, rows, t, cpu, dp.accounts.refusal("tx", self))

    def ndo_xdp_xmit(self, dp: XdpCore, x: Xmit) -> None:
        """``veth_ndo_xdp_xmit``: no peer NAPI (no program, or the peer is down) -> -ENXIO
        and the whole bulk is this end's ``tx_dropped`` (``priv->dropped``), not the rq's
        xmit stats; a full ``ptr_ring`` takes a prefix."""
        peer = self.xdp_napi(dp)
        if peer is None:
            dp.accounts.xmit_error(x, Errno.ENXIO, count_dev=False)
            self.add("tx_dropped", x.rows.total)
            return
        rq = peer.rxq[x.cpu % len(peer.rxq)]
        dp.io.rx(peer, rq, x.rows, x.t, x.cpu, dp.accounts.refusal("xmit", x.src, x))

    def generic_xmit(self, dp: XdpCore, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        self.stack_xmit(dp, cpu, t, rows)

    def stack_xmit(self, dp: XdpCore, cpu: int, t: int, rows: Rows) -> None:
        """``veth_xmit``: into the peer's receive queue ``skb_get_queue_mapping`` names -- the
        TX queue ``netdev_pick_tx`` chose on this end, a flow hash over *this* end's queues; a
        full ring is the sender's ``tx_dropped`` (``priv->dropped``). A peer that is down
        (reached only by generic XDP: ``generic_xdp_tx`` looks at no carrier) refuses each
        skb in ``__dev_forward_skb2`` (``__is_skb_forwardable``): its ``rx_dropped`` and the
        sender's ``tx_dropped``, as the machine's kernel counts them."""
        peer = self.peer_dev(dp)
        if peer is None or not peer.running:
            self.add("tx_dropped", rows.total)
            if peer is not None:
                peer.add("rx_dropped", rows.total)
            if dp.watched(rows):
                why = f"veth_xmit: {self.peer} is down, __dev_forward_skb2 drops it"
                dp.hop(t, self.name, "drop", why, end=True)
            return
        for q, part in dp.by_rx_queue(peer, rows):
            dp.io.rx(peer, peer.rxq[q], part, t, cpu, dp.accounts.refusal("veth_skb", self))


def backlog_room(size: int, held: int, proc: int) -> int:
    """Skbs a veth's backlog takes now (``enqueue_to_backlog``): ``size`` less what it holds
    beyond ``process_queue`` -- ``process_backlog`` moves the whole ``input_pkt_queue`` there
    (``proc`` of the ``held``), and only the input queue counts against
    ``netdev_max_backlog``. A ring's ``proc`` is 0: its size less what it holds."""
    room = size - (held - proc)
    return room if room > 0 else 0


def process_queue_after(proc: int, held: int, k: int) -> int:
    """``process_backlog`` took ``k`` of the ``held`` skbs, ``proc`` of them in
    ``process_queue``: it dequeues from there and, whenever that empties with quota left,
    splices the whole ``input_pkt_queue`` onto it; so ``process_queue`` keeps ``proc - k`` if
    it held enough, else every skb left."""
    return proc - k if proc >= k else held - k
