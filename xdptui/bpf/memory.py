"""The interpreter's address space: every pointer is ``region << 32 | offset``.

Region 1 is the context (``struct xdp_md``), 2 a packet's frame buffer, 3 the program's stack
(one 512-byte frame per call depth), 4 the map handles that ``ld_imm64`` loads, and 16 + i the
value arena of the object's i-th map. Each packet of a batch has its own frame buffer and stack
at the same addresses; map arenas are shared. A frame is laid out as
``bpf_prog_test_run_xdp()`` lays it: ``XDP_PACKET_HEADROOM`` before the data, 4096 bytes in
all, the last ``SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`` of them reserved.
"""

from __future__ import annotations

REGION_SHIFT = 32
OFFSET_MASK = (1 << REGION_SHIFT) - 1
CTX_REGION = 1
PKT_REGION = 2
STACK_REGION = 3
MAPPTR_REGION = 4
FIRST_MAP_REGION = 16

CTX_BASE = CTX_REGION << REGION_SHIFT
PKT_BASE = PKT_REGION << REGION_SHIFT
STACK_BASE = STACK_REGION << REGION_SHIFT
MAPPTR_BASE = MAPPTR_REGION << REGION_SHIFT

FRAME_SIZE = 4096  # bpf_prog_test_run_xdp: a page per frame
XDP_PACKET_HEADROOM = 256
SKB_SHARED_INFO_SIZE = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86_64
MAX_LINEAR = FRAME_SIZE - XDP_PACKET_HEADROOM - SKB_SHARED_INFO_SIZE  # 3520 bytes of data
DATA_HARD_END = FRAME_SIZE - SKB_SHARED_INFO_SIZE  # xdp_data_hard_end()
XDP_FRAME_SIZE = 40  # sizeof(struct xdp_frame): adjust_head/meta keep it free at the start
XDP_META_MAX = 255  # xdp_metalen_invalid(): skb_shared_info.meta_len is a u8
ETH_HLEN = 14

# struct xdp_md field offsets (include/uapi/linux/bpf.h).
XDP_MD_FIELDS = {
    0: "data",
    4: "data_end",
    8: "data_meta",
    12: "ingress_ifindex",
    16: "rx_queue_index",
    20: "egress_ifindex",
}


def map_region(index: int) -> int:
    """The region of the object's ``index``-th map arena."""
    return FIRST_MAP_REGION + index


def map_handle(index: int) -> int:
    """What ``ld_imm64`` with ``BPF_PSEUDO_MAP_FD`` puts in a register for the i-th map."""
    return MAPPTR_BASE + index
