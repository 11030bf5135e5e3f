"""vhost-net's transmit side (``drivers/vhost/net.c``): how a VM's frames reach a tap.

``handle_tx_copy`` takes the VM's buffers one by one. While the tap's sndbuf is unlimited
(``sock_can_batch``), each buffer becomes an xdp_buff on a page of its own
(``vhost_net_build_xdp``) and up to ``VHOST_NET_BATCH`` of them go to ``tun_sendmsg`` at once
(``vhost_tx_batch``: ``tun_xdp_one`` each, one ``xdp_do_flush`` for the batch). A buffer too big
for that page (-ENOSPC) first sends the batch built so far, then goes alone through
``sendmsg`` -> ``tun_get_user``, where ``tun_can_build_skb`` picks its path and a redirect is
flushed at once. Zerocopy (``handle_tx_zerocopy``) never batches.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xdptui.sim.kconst import (
    NET_IP_ALIGN,
    NET_SKB_PAD,
    VHOST_NET_BATCH,
    XDP_PACKET_HEADROOM,
    fits_a_page,
    page_limit,
    skb_data_align,
)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

VHOST_NET_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
VNET_HDR_LEN = 12
"""``sock_hlen`` with a vnet header on the tap: ``sizeof(struct virtio_net_hdr_mrg_rxbuf)``
(VIRTIO_NET_F_MRG_RXBUF or VIRTIO_F_VERSION_1, what every current VM negotiates)."""


def _pad(vnet_hdr: bool, xdp: bool) -> tuple[int, int]:
    """(sock_hlen, pad): pad = SKB_DATA_ALIGN(VHOST_NET_RX_PAD + headroom + sock_hlen), with
    XDP_PACKET_HEADROOM of headroom while the tap has a program (``vhost_sock_xdp``)."""
    hlen = VNET_HDR_LEN if vnet_hdr else 0
    headroom = XDP_PACKET_HEADROOM if xdp else 0
    return hlen, int(skb_data_align(VHOST_NET_RX_PAD + headroom + hlen))


def builds_xdp(size: IntArray, vnet_hdr: bool, xdp: bool) -> BoolArray:
    """``vhost_net_build_xdp``: the buffer -- the frame and its ``sock_hlen`` vnet header --
    fits a page after ``pad`` (-ENOSPC otherwise)."""
    hlen, pad = _pad(vnet_hdr, xdp)
    return fits_a_page(np.asarray(size, np.int64) + hlen, pad)


def batch_limit(vnet_hdr: bool, xdp: bool) -> int:
    """The longest frame ``vhost_net_build_xdp`` takes (x86-64, vnet header, a program: 3380
    bytes; tun's own fast path takes 3456)."""
    hlen, pad = _pad(vnet_hdr, xdp)
    return page_limit(pad) - hlen


BATCH_MAX = batch_limit(vnet_hdr=True, xdp=True)
"""The longest frame a vhost batch takes from a VM with a program on the tap (3380 bytes)."""


def first_send(batched: BoolArray, done: int = 0) -> int:
    """How many of the waiting buffers (in order) ``handle_tx_copy`` sends next, ``done``
    buffers after its last ``vhost_tx_batch``: a buffer ``vhost_net_build_xdp`` refuses goes
    alone; otherwise the batch runs until ``done_idx`` reaches VHOST_NET_BATCH or up to the
    first refused buffer, which sends it."""
    if not len(batched):
        return 0
    if not batched[0]:
        return 1
    k = min(VHOST_NET_BATCH - done, len(batched))
    refused = np.flatnonzero(~batched[:k])
    return int(refused[0]) if len(refused) else k


def done_after(sent: int, batch: bool, done: int, emptied: bool) -> int:
    """``done_idx`` after a send: a batch (``vhost_tx_batch``) and an emptied virtqueue reset
    it; a single buffer adds one (and VHOST_NET_BATCH of them reset it too)."""
    if batch or emptied:
        return 0
    return (done + sent) % VHOST_NET_BATCH


def sends(batched: BoolArray, done: int = 0, cuts: IntArray | None = None) -> IntArray:
    """The sizes of the successive sends ``handle_tx_copy`` makes of ``batched`` (one flag per
    buffer, in order), starting ``done`` buffers after a ``vhost_tx_batch``: each refused
    buffer alone; each run of accepted ones in batches cut where ``done_idx`` reaches
    VHOST_NET_BATCH (the singles just before a run count towards its first batch). ``cuts``
    (sorted positions) are where a run of ``handle_tx_copy`` ended with the virtqueue empty:
    the batch so far is sent and ``done_idx`` starts again from 0. Vectorised over the runs,
    not the buffers."""
    n = len(batched)
    if not n:
        return np.zeros(0, np.int64)
    refused = np.flatnonzero(~batched)
    cut = np.zeros(0, np.int64) if cuts is None else np.asarray(cuts, np.int64)
    cut = cut[(cut > 0) & (cut < n)]
    # the marks between runs, in order: a refused buffer (at its position) or a cut (just
    # before its position); run r is the accepted buffers between mark r-1 and mark r
    pos = np.concatenate((refused, cut))
    is_cut = np.concatenate((np.zeros(len(refused), bool), np.ones(len(cut), bool)))
    order = np.lexsort((~is_cut, pos))  # at one position the cut comes first
    pos, is_cut = pos[order], is_cut[order]
    lo = np.r_[0, pos + ~is_cut]  # run r starts after mark r-1
    hi = np.r_[pos, n]
    run = hi - lo
    m = len(run)
    idx = np.arange(m)
    n_ref = np.r_[0, np.cumsum(~is_cut)]  # refused marks before run r
    # done_idx resets at a non-empty run's batch (counting from the mark after it) and at
    # a cut (counting from the mark after it); before any, it carries ``done``
    reset_run = np.where(run > 0, idx, -1)
    reset_cut = np.r_[-1, np.where(is_cut, idx[:-1] + 1, -1)]
    since = np.maximum.accumulate(np.maximum(np.r_[-1, reset_run[:-1]], reset_cut))
    carried = np.where(since < 0, done + n_ref, n_ref - n_ref[np.maximum(since, 0)])
    start = carried % VHOST_NET_BATCH
    head = np.minimum(run, VHOST_NET_BATCH - start)
    per_run = np.where(run > 0, 1 + -(-(run - head) // VHOST_NET_BATCH), 0)
    single = np.r_[~is_cut, False].astype(np.int64)  # the refused buffer after run r
    slot = np.cumsum(per_run + single) - (per_run + single)
    rank = _ranks(per_run)
    rest = np.repeat(run - head, per_run) - (rank - 1) * VHOST_NET_BATCH
    size = np.where(rank == 0, np.repeat(head, per_run), np.minimum(rest, VHOST_NET_BATCH))
    out = np.empty(int((per_run + single).sum()), np.int64)
    out[np.repeat(slot, per_run) + rank] = size
    out[(slot + per_run)[single.astype(bool)]] = 1
    return out


def _ranks(counts: IntArray) -> IntArray:
    """0, 1, ..., c-1 for each count c, concatenated."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    out: IntArray = np.arange(total, dtype=np.int64) - starts
    return out
