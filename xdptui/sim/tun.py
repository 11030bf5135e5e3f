"""tun/tap devices with XDP (``drivers/net/tun.c`` ~v5.15-6.1, seed ``tun-xdp.txt``).

Userspace writes are the device's RX: each queue (``tfile``) is written by one writer thread
(a VM's vhost worker or a program) on its own CPU. Whether a write takes the fast path -- the
program runs on the page before any skb exists (``tun_build_skb``) -- or the slow path -- an
skb is built and the program runs as generic XDP (``do_xdp_generic``) -- is decided per frame
by ``tun_can_build_skb`` and the virtio-net header's GSO type. Frames toward userspace (the
tap's TX: XDP_TX, redirects into the tap, the stack) wait in each queue's ``tx_ring``
(``tx_queue_len`` slots) until the reader takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.sim.netdev import NetDev, TxRings

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PAGE_SIZE = 4096
XDP_PACKET_HEADROOM = 256
NET_SKB_PAD = 64  # max(32, L1_CACHE_BYTES) on x86-64
NET_IP_ALIGN = 0  # x86
TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
SKB_SHARED_INFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86-64
VNET_HDR_LEN = 12  # struct virtio_net_hdr_mrg_rxbuf
VHOST_NET_BATCH = 64  # UNVERIFIED (drivers/vhost/net.c)

SLOW_REASONS = ("gso", "too big", "blocking", "zerocopy", "sndbuf", "napi frags", "tun (L3)")


def _align(n: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64] | int:
    """SKB_DATA_ALIGN: round up to the cache line (64)."""
    return (n + 63) // 64 * 64


@dataclass
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
    tx: TxRings | None = None  # one tx_ring (toward userspace) per queue
    throttled: int = 0  # frames the writers could not write yet (CPU-bound writers)
    slow_reasons: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SLOW_REASONS, 0))
    path_verdicts: dict[str, int] = field(default_factory=dict)  # "fast.XDP_DROP" -> frames

    @property
    def attached(self) -> bool:
        """A queue is attached while a reader (the userspace side) holds the tap open."""
        return self.reader_pps is not None

    def can_build_skb(self, size: IntArray) -> BoolArray:
        """``tun_can_build_skb`` per frame size: tap, default sndbuf, non-blocking, not
        zerocopy, and the frame plus TUN_RX_PAD and XDP headroom fits a page with the
        skb_shared_info (frames up to ~3.4 KB); IFF_NAPI_FRAGS takes its own path."""
        length = size + (VNET_HDR_LEN if self.vnet_hdr else 0)
        fits = _align(length + TUN_RX_PAD + XDP_PACKET_HEADROOM) + SKB_SHARED_INFO <= PAGE_SIZE
        ok = self.mode == "tap" and self.sndbuf_default and not self.blocking
        ok = ok and not self.zerocopy and not self.napi_frags
        return np.asarray(fits, dtype=bool) & ok

    def slow_reason(self, size: IntArray, gso: BoolArray) -> list[tuple[str, BoolArray]]:
        """Why each frame takes the slow path (the first reason that applies)."""
        n = len(size)
        length = size + (VNET_HDR_LEN if self.vnet_hdr else 0)
        too_big = _align(length + TUN_RX_PAD + XDP_PACKET_HEADROOM) + SKB_SHARED_INFO > PAGE_SIZE
        rules: list[tuple[str, BoolArray]] = [
            ("tun (L3)", np.full(n, self.mode != "tap")),
            ("napi frags", np.full(n, self.napi_frags)),
            ("sndbuf", np.full(n, not self.sndbuf_default)),
            ("blocking", np.full(n, self.blocking)),
            ("zerocopy", np.full(n, self.zerocopy)),
            ("too big", np.asarray(too_big, dtype=bool)),
            ("gso", gso.astype(bool)),
        ]
        taken = np.zeros(n, dtype=bool)
        out: list[tuple[str, BoolArray]] = []
        for name, mask in rules:
            mine = mask & ~taken
            taken |= mine
            out.append((name, mine))
        return out
