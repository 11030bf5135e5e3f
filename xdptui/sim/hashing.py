"""Vectorized flow hashes: the NIC's Toeplitz RSS hash and the bonding driver's xmit hashes.

Every function works on whole NumPy arrays of flows at once; the only Python loops are over the
(at most 96) bits of the hash input, never over packets or flows. All bond hash arithmetic is done
in ``uint32``, exactly as the kernel's ``u32`` math, so results can be compared bit for bit with a
real host.

Conventions for the arrays (see :class:`FlowHeaders`):

* IPv4 addresses are ``uint32`` holding the address *value*, i.e. 10.0.0.1 is ``0x0A000001``
  (what ``ntohl(iph->saddr)`` gives). Where the kernel reads the raw ``__be32`` as a ``u32`` on a
  little-endian host, the functions here byte-swap explicitly.
* Ports are ``uint16`` values (host order, e.g. 80).
* MAC addresses are ``uint64`` holding the 48-bit address with byte 0 (the first on the wire) in
  bits 47..40: 00:11:22:33:44:55 is ``0x001122334455``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import XMIT_HASH_POLICIES
from xdptui.sim.columns import owned

__all__ = [
    "DEFAULT_RSS_KEY",
    "ETH_P_IP",
    "IPPROTO_ICMP",
    "IPPROTO_IGMP",
    "IPPROTO_TCP",
    "IPPROTO_UDP",
    "FlowHeaders",
    "bond_eth_hash",
    "bond_ip_hash",
    "bond_vlan_srcmac_hash",
    "bond_xmit_hash",
    "default_reta",
    "rss_queue",
    "toeplitz_hash",
    "toeplitz_hash_bytes",
]

DEFAULT_RSS_KEY: bytes = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)
"""The 40-byte RSS key of Microsoft's RSS verification suite.

The kernel fills each device's key with random bytes at boot (``netdev_rss_key_fill``, used by
e.g. ``ixgbe_init_rss_key``); the simulator uses this fixed, well-known key instead so runs are
deterministic and the hash can be checked against the published verification vectors."""

ETH_P_IP = 0x0800
IPPROTO_ICMP = 1
IPPROTO_IGMP = 2
IPPROTO_TCP = 6
IPPROTO_UDP = 17
_IPPROTO_DCCP = 33
_IPPROTO_SCTP = 132
_IPPROTO_UDPLITE = 136
# Protocols whose first 32 bits after the IP header are (sport, dport):
# include/net/ip.h / net/core/flow_dissector.c: proto_ports_offset() == 0 (ESP's SPI and AH's
# offset-4 word are not modelled: such flows hash with a zero ports word).
_PORTS_PROTOS = (IPPROTO_TCP, IPPROTO_UDP, _IPPROTO_DCCP, _IPPROTO_SCTP, _IPPROTO_UDPLITE)
_ICMP_ECHO = 8  # the model's ICMP flows are echo requests (type 8, code 0)

U32Array = npt.NDArray[np.uint32]


# --------------------------------------------------------------------------- flow headers


_FLOW_DTYPES: dict[str, type[np.generic]] = {
    "src_mac": np.uint64,
    "dst_mac": np.uint64,
    "ethertype": np.uint16,
    "vlan": np.uint16,
    "src_ip": np.uint32,
    "dst_ip": np.uint32,
    "proto": np.uint8,
    "src_port": np.uint16,
    "dst_port": np.uint16,
    "frag": np.bool_,
}


@dataclass(frozen=True, eq=False)
class FlowHeaders:
    """The header fields of N frames (or N flows), one equal-length 1-D array per field.

    ``ethertype`` is the L3 protocol the kernel's parser sees; ``vlan`` is the 802.1Q TCI
    (0 = untagged). ``frag`` marks IPv4 fragments (MF set or a non-zero fragment offset). Arrays
    are taken read-only in the dtypes below (``columns.owned``: a field with one value stores
    it once); all must have the same length.
    """

    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    ethertype: npt.NDArray[np.uint16]
    vlan: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    frag: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        n: int | None = None
        for f in fields(self):
            arr = owned(getattr(self, f.name), _FLOW_DTYPES[f.name])
            if arr.ndim != 1:
                raise ValueError(f"FlowHeaders.{f.name} must be 1-D, got shape {arr.shape}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"FlowHeaders.{f.name} has {arr.shape[0]} entries, expected {n}")
            object.__setattr__(self, f.name, arr)

    def __len__(self) -> int:
        return int(self.src_mac.shape[0])

    @classmethod
    def make(
        cls,
        *,
        src_mac: npt.ArrayLike,
        dst_mac: npt.ArrayLike,
        src_ip: npt.ArrayLike,
        dst_ip: npt.ArrayLike,
        ethertype: npt.ArrayLike = ETH_P_IP,
        vlan: npt.ArrayLike = 0,
        proto: npt.ArrayLike = IPPROTO_UDP,
        src_port: npt.ArrayLike = 0,
        dst_port: npt.ArrayLike = 0,
        frag: npt.ArrayLike = False,
    ) -> FlowHeaders:
        """Build headers from scalars and/or arrays, broadcasting them to a common length."""
        values = {
            "src_mac": src_mac,
            "dst_mac": dst_mac,
            "ethertype": ethertype,
            "vlan": vlan,
            "src_ip": src_ip,
            "dst_ip": dst_ip,
            "proto": proto,
            "src_port": src_port,
            "dst_port": dst_port,
            "frag": frag,
        }
        arrays = {k: np.asarray(v, dtype=_FLOW_DTYPES[k]) for k, v in values.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()), (1,))
        if len(shape) != 1:
            raise ValueError(f"FlowHeaders fields must broadcast to 1-D, got shape {shape}")
        out: dict[str, Any] = {k: np.broadcast_to(a, shape) for k, a in arrays.items()}
        return cls(**out)

    def take(self, index: npt.ArrayLike | slice) -> FlowHeaders:
        """The rows at ``index`` (integer array or boolean mask; a slice gives views), as new
        headers."""
        out: dict[str, Any] = {f.name: getattr(self, f.name)[index] for f in fields(self)}
        return type(self)(**out)


# --------------------------------------------------------------------------- RSS


def _key_windows(key: bytes, nbits: int) -> list[int]:
    """The 32-bit key window starting at each input bit position 0..nbits-1."""
    if len(key) * 8 < nbits + 32:
        raise ValueError(f"RSS key of {len(key)} bytes is too short for a {nbits}-bit input")
    k = int.from_bytes(key, "big")
    total = len(key) * 8
    return [(k >> (total - 32 - i)) & 0xFFFFFFFF for i in range(nbits)]


def toeplitz_hash(
    src_ip: npt.ArrayLike,
    dst_ip: npt.ArrayLike,
    src_port: npt.ArrayLike | None = None,
    dst_port: npt.ArrayLike | None = None,
    key: bytes = DEFAULT_RSS_KEY,
) -> U32Array:
    """The Microsoft RSS (Toeplitz) hash of IPv4 flows, as NIC hardware computes it.

    Input, in the RSS spec's order and in network byte order: source address, destination
    address, then (if given) source port and destination port: a 96-bit input for TCP/UDP, a
    64-bit one (2-tuple) when the ports are omitted. For every set input bit *i* (most
    significant first) the 32-bit key window starting at key bit *i* is XORed into the result.
    This is computed by NIC hardware from the key the driver programs (e.g. ixgbe's
    ``ixgbe_setup_mrqc`` with the key from ``netdev_rss_key_fill``); the kernel's software
    re-implementation for checking it is ``tools/testing/selftests/net/toeplitz.c``.

    Vectorized over arrays (broadcast against each other): loops only over the input bits.
    """
    if (src_port is None) != (dst_port is None):
        raise ValueError("give both src_port and dst_port, or neither (2-tuple hash)")
    words: list[tuple[npt.NDArray[np.uint32], int]] = [
        (np.asarray(src_ip, dtype=np.uint32), 32),
        (np.asarray(dst_ip, dtype=np.uint32), 32),
    ]
    if src_port is not None and dst_port is not None:
        words.append((np.asarray(src_port, dtype=np.uint16).astype(np.uint32), 16))
        words.append((np.asarray(dst_port, dtype=np.uint16).astype(np.uint32), 16))
    shape = np.broadcast_shapes(*(w.shape for w, _ in words))
    windows = _key_windows(key, sum(n for _, n in words))
    result = np.zeros(shape, dtype=np.uint32)
    pos = 0
    for word, nbits in words:
        for b in range(nbits):
            bit = (word >> np.uint32(nbits - 1 - b)) & np.uint32(1)
            result ^= bit * np.uint32(windows[pos])
            pos += 1
    return result


def toeplitz_hash_bytes(rows: npt.NDArray[np.uint8], key: bytes = DEFAULT_RSS_KEY) -> U32Array:
    """:func:`toeplitz_hash` over an input given as bytes, one row per frame: the RSS hash of
    IPv6 flows, whose input is the two 16-byte addresses then (TCP/UDP) the two ports, in
    network byte order (the RSS spec's IPv6 4-tuple and 2-tuple; e.g. ``ixgbe_setup_mrqc``'s
    ``IXGBE_MRQC_RSS_FIELD_IPV6_TCP``). Loops over the input bits only."""
    data = np.asarray(rows, dtype=np.uint8)
    nbits = data.shape[1] * 8
    windows = _key_windows(key, nbits)
    result = np.zeros(data.shape[0], dtype=np.uint32)
    for i in range(nbits):
        bit = (data[:, i // 8] >> np.uint8(7 - i % 8)) & np.uint8(1)
        result ^= bit.astype(np.uint32) * np.uint32(windows[i])
    return result


def rss_queue(hash_: npt.ArrayLike, reta: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The RX queue for each hash: ``reta[hash % len(reta)]``.

    Hardware indexes the redirection table with the hash's low bits
    (``hash & (entries - 1)``, entries a power of two on ixgbe/i40e/ice); modulo is the same for
    power-of-two tables."""
    table = np.asarray(reta, dtype=np.int64)
    if table.ndim != 1 or table.shape[0] == 0:
        raise ValueError("reta must be a non-empty 1-D table")
    h = np.asarray(hash_, dtype=np.uint32).astype(np.int64)
    queues: npt.NDArray[np.int64] = table[h % table.shape[0]]
    return queues


def default_reta(size: int, queues: int) -> npt.NDArray[np.int64]:
    """The default redirection table: entry i → queue ``i % queues``
    (``include/linux/ethtool.h: ethtool_rxfh_indir_default``)."""
    if size < 1 or queues < 1:
        raise ValueError("RETA size and queue count must be at least 1")
    return np.arange(size, dtype=np.int64) % queues


# --------------------------------------------------------------------------- bonding


def _bswap32(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    return np.asarray(x, dtype=np.uint32).byteswap()


def _bswap16(x: npt.NDArray[np.uint16]) -> npt.NDArray[np.uint32]:
    return np.asarray(x, dtype=np.uint16).byteswap().astype(np.uint32)


def bond_eth_hash(
    src_mac: npt.ArrayLike, dst_mac: npt.ArrayLike, ethertype: npt.ArrayLike
) -> U32Array:
    """``drivers/net/bonding/bond_main.c: bond_eth_hash``:
    ``h_dest[5] ^ h_source[5] ^ be16_to_cpu(h_proto)`` (last MAC bytes, ethertype in host
    order). No folding."""
    src = np.asarray(src_mac, dtype=np.uint64)
    dst = np.asarray(dst_mac, dtype=np.uint64)
    last = ((dst ^ src) & np.uint64(0xFF)).astype(np.uint32)
    return last ^ np.asarray(ethertype, dtype=np.uint16).astype(np.uint32)


def bond_vlan_srcmac_hash(src_mac: npt.ArrayLike, vlan: npt.ArrayLike = 0) -> U32Array:
    """``bond_main.c: bond_vlan_srcmac_hash``: ``vlan ^ vendor ^ dev`` where vendor is source MAC
    bytes 0..2 and dev bytes 3..5, each as a 24-bit big-endian number, and vlan the skb's
    hardware-accelerated VLAN tag (``skb_vlan_tag_get``; always 0 on the XDP path, which has no
    skb). No folding."""
    src = np.asarray(src_mac, dtype=np.uint64)
    vendor = ((src >> np.uint64(24)) & np.uint64(0xFFFFFF)).astype(np.uint32)
    dev = (src & np.uint64(0xFFFFFF)).astype(np.uint32)
    return np.asarray(vlan, dtype=np.uint16).astype(np.uint32) ^ vendor ^ dev


def bond_ip_hash(
    h: npt.ArrayLike, src_ip: npt.ArrayLike, dst_ip: npt.ArrayLike, *, l34: bool
) -> U32Array:
    """``bond_main.c: bond_ip_hash`` for IPv4: ``h ^= daddr ^ saddr; h ^= h >> 16;
    h ^= h >> 8;`` then ``h >> 1`` for layer3+4 / encap3+4 (``l34``), ``h`` otherwise.

    The addresses are the raw ``__be32`` words read as ``u32`` on a little-endian host (a.b.c.d
    reads as ``a | b<<8 | c<<16 | d<<24``), i.e. the byte-swapped address values."""
    x = np.asarray(h, dtype=np.uint32)
    x = (
        x
        ^ _bswap32(np.asarray(dst_ip, dtype=np.uint32))
        ^ _bswap32(np.asarray(src_ip, dtype=np.uint32))
    )
    x = x ^ (x >> np.uint32(16))
    x = x ^ (x >> np.uint32(8))
    if l34:
        x = x >> np.uint32(1)
    return x


def _l4_word(flows: FlowHeaders) -> U32Array:
    """The 32-bit L4 word layer3+4 starts from (``__bond_xmit_hash``'s ``memcpy(&hash, ...)``).

    * TCP/UDP (and DCCP/SCTP/UDP-Lite): ``flow.ports.ports`` = the wire bytes sport_hi sport_lo
      dport_hi dport_lo read as a little-endian u32 = ``bswap16(sport) | bswap16(dport) << 16``.
    * ICMP: ``struct flow_dissector_key_icmp { struct { u8 type; u8 code; }; u16 id; }`` copied
      as a u32 = ``type | code << 8 | id << 16``; ``skb_flow_get_icmp_tci`` stores ``id`` in
      host order (``ntohs(echo.id)``) and uses 1 when the wire id is 0. The model's ICMP flows
      are echo requests (type 8, code 0) whose id is the ``src_port`` field, so the word is
      ``8 | (src_port or 1) << 16``. Since the id is non-zero, it replaces the ports word.
    * IGMP and other protocols: no ports (``proto_ports_offset`` fails) → 0.
    * IPv4 fragments: ``bond_flow_ip`` records no protocol (``ip_proto`` stays -1) → 0.
    """
    ports = _bswap16(flows.src_port) | (_bswap16(flows.dst_port) << np.uint32(16))
    sport = flows.src_port.astype(np.uint32)
    icmp_id = np.where(sport == 0, np.uint32(1), sport).astype(np.uint32)
    icmp = np.uint32(_ICMP_ECHO) | (icmp_id << np.uint32(16))
    has_ports = np.isin(flows.proto, np.array(_PORTS_PROTOS, dtype=np.uint8))
    word = np.where(has_ports, ports, np.uint32(0))
    word = np.where(flows.proto == IPPROTO_ICMP, icmp, word)
    word = np.where(flows.frag, np.uint32(0), word)
    return word.astype(np.uint32)


def bond_xmit_hash(policy: str, flows: FlowHeaders, vlan: npt.ArrayLike | None = None) -> U32Array:
    """``bond_main.c: __bond_xmit_hash`` (via ``bond_xmit_hash_xdp`` / ``bond_xmit_hash``) for
    every flow; the slave is then ``usable_slaves[hash % count]``.

    * ``layer2``: :func:`bond_eth_hash`.
    * ``layer2+3`` / ``encap2+3``: ``bond_ip_hash(bond_eth_hash, addrs)`` (folded, low bit kept).
    * ``layer3+4`` / ``encap3+4``: ``bond_ip_hash(L4 word, addrs) >> 1`` (see ``_l4_word``: ports
      word for TCP/UDP, ICMP type/code/id word for echoes, 0 for IGMP/other protocols and for
      fragments).
    * ``vlan+srcmac``: :func:`bond_vlan_srcmac_hash` with ``vlan`` (the skb's accelerated tag;
      ``None`` → 0, which is always right for XDP frames, which have no skb).

    Frames whose ``ethertype`` is not IPv4 (0x0800) fail ``bond_flow_dissect`` and fall back to
    plain :func:`bond_eth_hash` with no folding for all the 2+3/3+4 policies. IPv6 is not
    modelled (the flow arrays carry IPv4 addresses only), so 0x86DD takes that fallback too. On
    the XDP path the parser starts at ``eth->h_proto``, so a frame carrying an in-band 802.1Q
    tag should be passed with ethertype 0x8100 (it then hashes as non-IP).

    The encap policies use the full flow dissector (``__skb_flow_dissect`` with
    ``flow_keys_bonding``), which differs from the shallow bonding parser only when it walks into
    a tunnel (IP-in-IP, GRE, ...) to hash the inner headers. The simulator's frames are never
    tunnelled, so encap2+3 / encap3+4 give exactly the layer2+3 / layer3+4 values. The skb-path
    shortcut (encap3+4 returns ``skb->hash`` when ``skb->l4_hash`` is set) is the caller's
    business.
    """
    if policy not in XMIT_HASH_POLICIES:
        raise ValueError(
            f"unknown xmit_hash_policy {policy!r} (one of {', '.join(XMIT_HASH_POLICIES)})"
        )
    eth = bond_eth_hash(flows.src_mac, flows.dst_mac, flows.ethertype)
    if policy == "layer2":
        return eth
    if policy == "vlan+srcmac":
        tags = np.zeros(len(flows), dtype=np.uint16) if vlan is None else vlan
        return np.broadcast_to(bond_vlan_srcmac_hash(flows.src_mac, tags), (len(flows),)).copy()
    is_ip = flows.ethertype == ETH_P_IP
    if policy in ("layer2+3", "encap2+3"):
        hashed = bond_ip_hash(eth, flows.src_ip, flows.dst_ip, l34=False)
    else:  # layer3+4, encap3+4
        hashed = bond_ip_hash(_l4_word(flows), flows.src_ip, flows.dst_ip, l34=True)
    return np.where(is_ip, hashed, eth).astype(np.uint32)
