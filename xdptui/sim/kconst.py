"""Kernel constants the simulator follows, each defined once, with the header it comes from."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# include/linux/netdevice.h
NAPI_POLL_WEIGHT = 64
"""The per-instance NAPI budget: a poll handles at most this many frames."""

# include/net/xdp.h: XDP_BULK_QUEUE_SIZE, kernel/bpf/devmap.c: DEV_MAP_BULK_SIZE
DEV_MAP_BULK_SIZE = 16
"""Frames a per-CPU devmap bulk queue holds before ``bq_enqueue`` sends it."""

# drivers/net/veth.c
VETH_RING_SIZE = 256
"""The veth receive queue's ``xdp_ring`` (ptr_ring) size."""

# net/core/hotdata.c (sysctl net.core.netdev_max_backlog)
NETDEV_MAX_BACKLOG = 1000
"""The most skbs a CPU's backlog ``input_pkt_queue`` holds when ``enqueue_to_backlog`` takes
one more."""

# drivers/vhost/net.c
VHOST_NET_BATCH = 64
"""Buffers vhost-net hands to ``tun_sendmsg`` at once (one ``xdp_do_flush`` per batch)."""

# include/uapi/linux/bpf.h
XDP_PACKET_HEADROOM = 256

# x86-64 memory layout (arch/x86/include/asm/page_types.h, include/linux/skbuff.h)
PAGE_SIZE = 4096
NET_SKB_PAD = 64  # max(32, L1_CACHE_BYTES)
NET_IP_ALIGN = 0  # x86
SKB_SHARED_INFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
SMP_CACHE_BYTES = 64


def skb_data_align(n: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64]:
    """SKB_DATA_ALIGN: round up to the cache line."""
    out: npt.NDArray[np.int64] = -(-np.asarray(n, np.int64) // SMP_CACHE_BYTES) * SMP_CACHE_BYTES
    return out


def fits_a_page(size: npt.NDArray[np.int64] | int, pad: int) -> npt.NDArray[np.bool_]:
    """SKB_DATA_ALIGN(len + pad) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) <= PAGE_SIZE:
    a buffer of ``len`` bytes after ``pad`` of headroom, built into an skb on one page."""
    fits: npt.NDArray[np.bool_] = (
        skb_data_align(np.asarray(size) + pad) + SKB_SHARED_INFO <= PAGE_SIZE
    )
    return fits


def page_limit(pad: int) -> int:
    """The largest ``len`` :func:`fits_a_page` takes after ``pad``."""
    return (PAGE_SIZE - SKB_SHARED_INFO) // SMP_CACHE_BYTES * SMP_CACHE_BYTES - pad


# include/uapi/linux/if_ether.h, include/linux/if_vlan.h
ETH_HLEN = 14
VLAN_HLEN = 4

# IEEE 802.3: preamble + SFD (8) and the inter-frame gap (12) occupy the wire with every frame.
WIRE_OVERHEAD = 20

# include/uapi/linux/bpf.h: enum xdp_action
XDP_ABORTED = 0
XDP_DROP = 1
XDP_PASS = 2
XDP_TX = 3
XDP_REDIRECT = 4
ACTION_NAMES = ("XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT")

# include/uapi/linux/bpf.h: bpf_redirect_map flags
BPF_F_BROADCAST = 1 << 3
BPF_F_EXCLUDE_INGRESS = 1 << 4
XDP_ACTION_MASK = XDP_ABORTED | XDP_DROP | XDP_PASS | XDP_TX  # the low "fallback" bits

# include/uapi/linux/bpf.h: map update flags
BPF_ANY = 0
BPF_NOEXIST = 1
BPF_EXIST = 2


def action_name(code: int) -> str:
    """``__XDP_ACT_MAP``; codes above XDP_REDIRECT are what xdp-monitor buckets as XDP_UNKNOWN."""
    return ACTION_NAMES[code] if 0 <= code < len(ACTION_NAMES) else "XDP_UNKNOWN"


def max_fwd_len(mtu: int) -> int:
    """``xdp_ok_fwd_dev``: the longest frame a device takes, ``mtu + ETH_HLEN + VLAN_HLEN``."""
    return mtu + ETH_HLEN + VLAN_HLEN


# xdptui's encoding, not the kernel's: ``Compiled.target`` of a frame redirected into a cpumap
# entry is CPU_TARGET - cpu (never an ifindex, and below every other bulk class).
CPU_TARGET = -1000
# ... and of a frame redirected to an AF_XDP socket XSK_TARGET - its index (below every CPU).
XSK_TARGET = -1_000_000
