"""The bytes an XDP program sees (``xdp_buff`` data, ``data`` .. ``data_end``), per entry.

A traffic source's entries carry header fields; a real program reads bytes. The bytes are
built here exactly as ``xdptui.bpf.frames.build_frame_bytes`` builds them (Ethernet, one
optional 802.1Q tag, IPv4, UDP / TCP / ICMP, the payload pattern, RFC 1071 checksums) --
vectorised over every entry of a size, so a flow table of 65,536 entries takes a fraction of
a second. A frame a program rewrote goes the other way: its bytes are parsed back into the
header fields the rest of the data path (hashes, built-in programs, RSS) reads.

Frames longer than the interpreter's linear data (``MAX_LINEAR``: 3,520 bytes, what
``bpf_prog_test_run_xdp`` gives one page) are seen up to that length; the rest of such a
frame (a GSO super-frame) is carried past the program unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.bpf.memory import MAX_LINEAR
from xdptui.sim.hashing import toeplitz_hash

U8 = npt.NDArray[np.uint8]
IntArray = npt.NDArray[np.int64]

ETH_P_IP = 0x0800
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
L4_HEADER = {IPPROTO_UDP: 8, IPPROTO_TCP: 20, IPPROTO_ICMP: 8}
IP_TTL = 64
TCP_SYN = 0x02
ICMP_ECHO = 8


def _payload_pattern(n: int) -> U8:
    """``build_frame_bytes``'s payload: byte i is (7 i + 3) mod 256."""
    return ((np.arange(n, dtype=np.int64) * 7 + 3) & 0xFF).astype(np.uint8)


def _be(values: npt.ArrayLike, width: int) -> U8:
    """Big-endian bytes of each value, as a (len, width) array."""
    v = np.asarray(values, dtype=np.uint64)
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64) * np.uint64(8)
    out: U8 = ((v[:, None] >> shifts[None, :]) & np.uint64(0xFF)).astype(np.uint8)
    return out


def _fold(total: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """One's-complement fold of a 64-bit sum of 16-bit words, then complemented."""
    t = total.copy()
    for _ in range(4):
        t = (t & np.uint64(0xFFFF)) + (t >> np.uint64(16))
    out: npt.NDArray[np.uint64] = ~t & np.uint64(0xFFFF)
    return out


def _word_sum(rows: U8, start: int, end: int) -> npt.NDArray[np.uint64]:
    """Sum of the big-endian 16-bit words of ``rows[:, start:end]`` (odd length padded)."""
    part = rows[:, start:end].astype(np.uint64)
    if part.shape[1] % 2:
        part = np.concatenate([part, np.zeros((len(part), 1), np.uint64)], axis=1)
    out: npt.NDArray[np.uint64] = (part[:, 0::2] << np.uint64(8)).sum(axis=1) + part[:, 1::2].sum(
        axis=1
    )
    return out


@dataclass(frozen=True)
class Headers:
    """The fields a frame's bytes are built from (one row per entry)."""

    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    vlan: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    size: IntArray


def build_frames(h: Headers) -> list[bytes]:
    """Every row's frame bytes, as ``build_frame_bytes`` would give them (``size`` capped at
    ``MAX_LINEAR``). Rows are built together per (size, protocol, tagged)."""
    n = len(h.size)
    out: list[bytes] = [b""] * n
    linear = np.minimum(h.size, MAX_LINEAR)
    tagged = h.vlan != 0
    key = linear * 1024 + h.proto.astype(np.int64) * 2 + tagged
    for k in np.unique(key):
        idx = np.flatnonzero(key == k)
        rows = _build_group(h, idx, int(k) // 1024, int((k // 2) % 512), bool(k % 2))
        for i, data in zip(idx.tolist(), rows, strict=True):
            out[i] = data
    return out


def _build_group(h: Headers, idx: IntArray, size: int, proto: int, tagged: bool) -> list[bytes]:
    eth_len = 18 if tagged else 14
    l4h = L4_HEADER.get(proto, 0)
    pay = max(0, size - eth_len - 20 - l4h)
    total = eth_len + 20 + l4h + pay
    m = len(idx)
    f = np.zeros((m, total), dtype=np.uint8)
    f[:, 0:6] = _be(h.dst_mac[idx], 6)
    f[:, 6:12] = _be(h.src_mac[idx], 6)
    p = 12
    if tagged:
        f[:, 12:14] = _be(np.full(m, ETH_P_8021Q), 2)
        f[:, 14:16] = _be(h.vlan[idx].astype(np.uint64) & np.uint64(0x0FFF), 2)
        p = 16
    f[:, p : p + 2] = _be(np.full(m, ETH_P_IP), 2)
    ip = p + 2
    l4_len = l4h + pay
    f[:, ip] = 0x45
    f[:, ip + 2 : ip + 4] = _be(np.full(m, 20 + l4_len), 2)
    f[:, ip + 6] = 0x40  # DF
    f[:, ip + 8] = IP_TTL
    f[:, ip + 9] = proto
    f[:, ip + 12 : ip + 16] = _be(h.src_ip[idx], 4)
    f[:, ip + 16 : ip + 20] = _be(h.dst_ip[idx], 4)
    f[:, ip + 10 : ip + 12] = _be(_fold(_word_sum(f, ip, ip + 20)), 2)
    l4 = ip + 20
    f[:, l4 + l4h :] = _payload_pattern(pay)[None, :]
    sport, dport = h.src_port[idx], h.dst_port[idx]
    pseudo = _word_sum(f, ip + 12, ip + 20) + np.uint64(proto) + np.uint64(l4_len)
    if proto == IPPROTO_UDP:
        f[:, l4 : l4 + 2] = _be(sport, 2)
        f[:, l4 + 2 : l4 + 4] = _be(dport, 2)
        f[:, l4 + 4 : l4 + 6] = _be(np.full(m, l4_len), 2)
        c = _fold(pseudo + _word_sum(f, l4, total))
        c = np.where(c == 0, np.uint64(0xFFFF), c)
        f[:, l4 + 6 : l4 + 8] = _be(c, 2)
    elif proto == IPPROTO_TCP:
        f[:, l4 : l4 + 2] = _be(sport, 2)
        f[:, l4 + 2 : l4 + 4] = _be(dport, 2)
        f[:, l4 + 7] = 1  # seq 1
        f[:, l4 + 12] = 5 << 4
        f[:, l4 + 13] = TCP_SYN
        f[:, l4 + 14 : l4 + 16] = 0xFF
        f[:, l4 + 16 : l4 + 18] = _be(_fold(pseudo + _word_sum(f, l4, total)), 2)
    elif proto == IPPROTO_ICMP:
        f[:, l4] = ICMP_ECHO
        f[:, l4 + 4 : l4 + 6] = _be(sport, 2)
        f[:, l4 + 7] = 1  # sequence 1
        f[:, l4 + 2 : l4 + 4] = _be(_fold(_word_sum(f, l4, total)), 2)
    flat = f.tobytes()
    return [flat[i * total : (i + 1) * total] for i in range(m)]


@dataclass(frozen=True)
class Parsed:
    """Header fields parsed out of frames (what the kernel's flow dissector would see): the
    outer Ethernet addresses, the first VLAN id, the L3 ethertype, IPv4 addresses, protocol
    and ports (zero where the frame has none), and the RSS hash a receiving NIC computes."""

    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    vlan: npt.NDArray[np.uint16]
    ethertype: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    frag: npt.NDArray[np.bool_]
    rss_hash: npt.NDArray[np.uint32]


def _int(data: bytes, start: int, width: int) -> int:
    return int.from_bytes(data[start : start + width], "big") if len(data) >= start + width else 0


def parse_frames(frames: list[bytes]) -> Parsed:
    """Parse each frame: Ethernet, up to two VLAN tags (802.1Q / 802.1ad), IPv4 with its
    fragment bits, TCP / UDP ports and the ICMP echo identifier (as ``src_port``)."""
    n = len(frames)
    cols: dict[str, list[int]] = {
        k: [0] * n
        for k in ("src", "dst", "vlan", "etype", "sip", "dip", "proto", "sport", "dport", "frag")
    }
    for i, d in enumerate(frames):
        cols["dst"][i] = _int(d, 0, 6)
        cols["src"][i] = _int(d, 6, 6)
        p = 12
        etype = _int(d, p, 2)
        vlan = 0
        for _ in range(2):
            if etype not in (ETH_P_8021Q, ETH_P_8021AD):
                break
            vlan = vlan or (_int(d, p + 2, 2) & 0x0FFF)
            p += 4
            etype = _int(d, p, 2)
        cols["vlan"][i] = vlan
        cols["etype"][i] = etype
        ip = p + 2
        if etype != ETH_P_IP or len(d) < ip + 20 or d[ip] >> 4 != 4:
            continue
        ihl = (d[ip] & 0x0F) * 4
        cols["sip"][i] = _int(d, ip + 12, 4)
        cols["dip"][i] = _int(d, ip + 16, 4)
        proto = d[ip + 9]
        cols["proto"][i] = proto
        frag = _int(d, ip + 6, 2) & 0x3FFF != 0
        cols["frag"][i] = int(frag)
        l4 = ip + ihl
        if frag:
            continue
        if proto in (IPPROTO_TCP, IPPROTO_UDP):
            cols["sport"][i] = _int(d, l4, 2)
            cols["dport"][i] = _int(d, l4 + 2, 2)
        elif proto == IPPROTO_ICMP:
            cols["sport"][i] = _int(d, l4 + 4, 2)
    sip = np.array(cols["sip"], dtype=np.uint32)
    dip = np.array(cols["dip"], dtype=np.uint32)
    proto_a = np.array(cols["proto"], dtype=np.uint8)
    sport = np.array(cols["sport"], dtype=np.uint16)
    dport = np.array(cols["dport"], dtype=np.uint16)
    frag_a = np.array(cols["frag"], dtype=bool)
    etype_a = np.array(cols["etype"], dtype=np.uint16)
    l4 = ((proto_a == IPPROTO_TCP) | (proto_a == IPPROTO_UDP)) & ~frag_a
    ipv4 = etype_a == ETH_P_IP
    rss = np.zeros(n, dtype=np.uint32)
    if n:
        four = toeplitz_hash(sip, dip, sport, dport)
        two = toeplitz_hash(sip, dip)
        rss = np.where(l4, four, np.where(ipv4, two, 0)).astype(np.uint32)
    return Parsed(
        src_mac=np.array(cols["src"], dtype=np.uint64),
        dst_mac=np.array(cols["dst"], dtype=np.uint64),
        vlan=np.array(cols["vlan"], dtype=np.uint16),
        ethertype=etype_a,
        src_ip=sip,
        dst_ip=dip,
        proto=proto_a,
        src_port=sport,
        dst_port=dport,
        frag=frag_a,
        rss_hash=rss,
    )
