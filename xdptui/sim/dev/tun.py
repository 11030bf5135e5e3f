"""tun/tap devices with XDP (``drivers/net/tun.c`` ~v5.15-6.1, seed ``tun-xdp.txt``).

Userspace writes are the device's RX: each queue (``tfile``) is written by one writer thread
(a VM's vhost worker or a program) on its own CPU, one frame per write or ``VHOST_NET_BATCH``
per ``tun_sendmsg``. Whether a write takes the fast path -- the program runs on the page before
any skb exists (``tun_build_skb``) -- or the slow path -- an skb is built and the program runs
as generic XDP (``do_xdp_generic``) -- is decided per frame by ``tun_can_build_skb`` and the
virtio-net header's GSO type. Frames toward userspace (XDP_TX, redirects into the tap, the
stack) wait in each queue's ``tx_ring`` (``tx_queue_len`` slots) until the reader takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs, kconst
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.rings import TxRing, tx_ring_table
from xdptui.sim.dev.vhost_net import builds_xdp
from xdptui.sim.kconst import (
    NET_IP_ALIGN,
    NET_SKB_PAD,
    XDP_PACKET_HEADROOM,
)
from xdptui.sim.table import Table

if TYPE_CHECKING:
    from xdptui.sim.batch import Rows
    from xdptui.sim.dev.netdev import XdpCore, Xmit

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
SLOW_REASONS = ("gso", "too big", "blocking", "zerocopy", "sndbuf", "napi frags", "tun (L3)")


def fits_a_page(size: IntArray) -> BoolArray:
    """``tun_can_build_skb`` (v6.5+, with XDP_PACKET_HEADROOM): SKB_DATA_ALIGN(len +
    TUN_RX_PAD + XDP_PACKET_HEADROOM) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) <=
    PAGE_SIZE, where ``len`` is the frame alone: ``tun_get_user`` has already taken the
    virtio-net header off it."""
    return kconst.fits_a_page(size, TUN_RX_PAD + XDP_PACKET_HEADROOM)


FAST_PATH_MAX = kconst.page_limit(TUN_RX_PAD + XDP_PACKET_HEADROOM)
"""The longest frame a tap write can take the fast path with (``tun_can_build_skb``)."""


@dataclass(eq=False)
class Tun(NetDev):
    mode: str = "tap"
    queues: int = 1
    tx_queue_len: int = 500
    vnet_hdr: bool = True
    reader_pps: float | None = None
    writer: str = "write"
    blocking: bool = False
    zerocopy: bool = False
    sndbuf_default: bool = True
    napi_frags: bool = False
    # one tx_ring (toward userspace) per queue
    tx: Table[TxRing] = field(default_factory=lambda: tx_ring_table(0, 0))
    reader_free_ps: list[int] = field(default_factory=list)  # exact mode, per queue (ps)
    throttled: int = 0  # frames the writers could not write yet (CPU-bound writers)
    slow_reasons: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SLOW_REASONS, 0))
    path_verdicts: dict[str, int] = field(default_factory=dict)  # "fast.XDP_DROP" -> frames

    @property
    def attached(self) -> bool:
        """A queue is attached while a reader (the userspace side) holds the tap open."""
        return self.reader_pps is not None

    def reader_ps(self) -> int:
        """Time (ps) the reader of one queue takes per frame (its rate split over the
        queues)."""
        if not self.reader_pps:
            return 10**18
        return max(1, round(1e12 * self.queues / self.reader_pps))

    def has_ndo_bpf(self) -> bool:
        """Only TAP devices have ``ndo_bpf = tun_xdp`` (``tap_netdev_ops``)."""
        return self.mode == "tap"

    def ndo_xmit_ready(self, dp: XdpCore) -> bool:
        return self.mode == "tap"  # tap_netdev_ops has ndo_xdp_xmit (tun_xdp_xmit)

    def costs(self) -> costs.DriverCosts:
        return costs.COSTS["tap-vhost" if self.writer == "vhost" else "tap"]

    def can_build_skb(self, size: IntArray) -> BoolArray:
        """``tun_can_build_skb`` per frame size: tap, default sndbuf, non-blocking, not
        zerocopy, and the frame fits (``fits_a_page``); IFF_NAPI_FRAGS takes its own path."""
        fits = fits_a_page(size)
        ok = self.mode == "tap" and self.sndbuf_default and not self.blocking
        ok = ok and not self.zerocopy and not self.napi_frags
        return np.asarray(fits, dtype=bool) & ok

    def batched(self, size: IntArray, xdp: bool = True) -> BoolArray:
        """The writes a vhost writer hands over in batches (``tun_sendmsg`` -> ``tun_xdp_one``):
        ``handle_tx_copy`` batches only with the default unlimited sndbuf (``sock_can_batch``)
        and without zerocopy, and only buffers ``vhost_net_build_xdp`` takes."""
        size = np.asarray(size, np.int64)
        if self.writer != "vhost" or self.mode != "tap" or not self.sndbuf_default:
            return np.zeros(len(size), dtype=bool)
        if self.zerocopy:
            return np.zeros(len(size), dtype=bool)
        return builds_xdp(size, self.vnet_hdr, xdp)

    def fast_path(self, size: IntArray, gso: BoolArray) -> BoolArray:
        """The program runs on the page: in a vhost batch (``tun_xdp_one``) or on a single
        write ``tun_can_build_skb`` lets through (``tun_build_skb``); never for GSO."""
        fast: BoolArray = (self.batched(size) | self.can_build_skb(size)) & ~gso.astype(bool)
        return fast

    def slow_reason(self, size: IntArray, gso: BoolArray) -> list[tuple[str, BoolArray]]:
        """Why each frame takes the slow path (the first reason that applies): a write in a
        vhost batch only for GSO (``tun_xdp_one``), a single write as ``tun_can_build_skb``
        decides."""
        n = len(size)
        single = ~self.batched(size)
        too_big = ~fits_a_page(size)
        rules: list[tuple[str, BoolArray]] = [
            ("tun (L3)", np.full(n, self.mode != "tap")),
            ("napi frags", np.full(n, self.napi_frags) & single),
            ("sndbuf", np.full(n, not self.sndbuf_default)),
            ("blocking", np.full(n, self.blocking) & single),
            ("zerocopy", np.full(n, self.zerocopy)),
            ("too big", np.asarray(too_big, dtype=bool) & single),
            ("gso", gso.astype(bool)),
        ]
        taken = np.zeros(n, dtype=bool)
        out: list[tuple[str, BoolArray]] = []
        for name, mask in rules:
            mine = mask & ~taken
            taken |= mine
            out.append((name, mine))
        return out

    # ------------------------------------------------------------ data path

    def xdp_tx(self, dp: XdpCore, cpu: int, queue: int, t: int, rows: Rows) -> None:
        """``tun_xdp_tx`` -> ``tun_xdp_xmit`` on this tap, one frame per call: back toward
        userspace on queue ``smp_processor_id() % numqueues``."""
        dp.io.tx(self, self.tx[cpu % self.queues], rows, t, dp.accounts.refusal("tx", self))

    def ndo_xdp_xmit(self, dp: XdpCore, x: Xmit) -> None:
        """``tun_xdp_xmit``: no attached queue -> -ENXIO for the whole bulk; else queue
        ``smp_processor_id() % numqueues``, pushed until its ring is full."""
        if not self.attached:
            dp.accounts.xmit_error(x, Errno.ENXIO)
            return
        dp.io.tx(
            self, self.tx[x.cpu % self.queues], x.rows, x.t, dp.accounts.refusal("xmit", x.src, x)
        )

    def generic_xmit(self, dp: XdpCore, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        """``tun_net_xmit``: the skb joins the queue's ring toward userspace."""
        dp.io.tx(self, self.tx[cpu % self.queues], rows, t, dp.accounts.refusal("gtx", src))

    def stack_xmit(self, dp: XdpCore, cpu: int, t: int, rows: Rows) -> None:
        self.generic_xmit(dp, self, cpu, t, rows)
