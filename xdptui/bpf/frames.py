"""A frame's real bytes from header fields: Ethernet (optional 802.1Q / 802.1ad tags), IPv4 or
IPv6, UDP / TCP / ICMP / ICMPv6, padded to a given size, with correct checksums.

Checksums follow RFC 1071 (IPv4 header, UDP, TCP, ICMP) with the RFC 768 / RFC 8200
pseudo-headers; a UDP checksum that computes to 0 is sent as 0xffff.
"""

from __future__ import annotations

import ipaddress
import struct

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58
_L4_HEADER = {IPPROTO_UDP: 8, IPPROTO_TCP: 20, IPPROTO_ICMP: 8, IPPROTO_ICMPV6: 8}


def checksum(data: bytes, start: int = 0) -> int:
    """RFC 1071 Internet checksum of ``data`` (odd length padded with a zero byte)."""
    if len(data) % 2:
        data += b"\0"
    total = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return int(~total & 0xFFFF)


def _mac(mac: str | bytes) -> bytes:
    if isinstance(mac, bytes):
        return mac
    return bytes(int(x, 16) for x in mac.split(":"))


def build_frame_bytes(
    *,
    src_mac: str | bytes = "02:00:00:00:00:01",
    dst_mac: str | bytes = "02:00:00:00:00:02",
    vlans: tuple[int, ...] = (),
    qinq: bool = False,
    src_ip: str = "10.0.0.1",
    dst_ip: str = "10.0.0.2",
    proto: int = IPPROTO_UDP,
    src_port: int = 1024,
    dst_port: int = 53,
    size: int = 64,
    ttl: int = 64,
    tcp_flags: int = 0x02,
    icmp_type: int = 8,
    ethertype: int | None = None,
) -> bytes:
    """A complete frame of ``size`` bytes (no FCS). ``vlans`` are VLAN ids, outermost first;
    with ``qinq`` the outer tag is 802.1ad. The addresses' family picks IPv4 or IPv6. An
    ``ethertype`` other than IPv4/IPv6 gives an Ethernet header and zero payload."""
    eth = _mac(dst_mac) + _mac(src_mac)
    for i, vid in enumerate(vlans):
        tpid = ETH_P_8021AD if (qinq and i == 0 and len(vlans) > 1) else ETH_P_8021Q
        eth += struct.pack("!HH", tpid, vid & 0x0FFF)
    src = ipaddress.ip_address(src_ip)
    dst = ipaddress.ip_address(dst_ip)
    if src.version != dst.version:
        raise ValueError("source and destination must be the same IP version")
    v6 = src.version == 6
    etype = ethertype if ethertype is not None else (ETH_P_IPV6 if v6 else ETH_P_IP)
    eth += struct.pack("!H", etype)
    if etype not in (ETH_P_IP, ETH_P_IPV6):
        return (eth + bytes(max(0, size - len(eth))))[: max(size, len(eth))]
    ip_hlen = 40 if v6 else 20
    l4_hlen = _L4_HEADER.get(proto, 0)
    payload_len = max(0, size - len(eth) - ip_hlen - l4_hlen)
    payload = bytes((i * 7 + 3) & 0xFF for i in range(payload_len))
    l4_len = l4_hlen + payload_len
    pseudo = _pseudo(src.packed, dst.packed, proto, l4_len, v6)
    l4 = _l4(proto, src_port, dst_port, payload, pseudo, tcp_flags, icmp_type, v6)
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, l4_len, proto, ttl) + src.packed + dst.packed
    else:
        hdr = struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + l4_len, 0, 0x4000, ttl, proto, 0, src.packed, dst.packed
        )
        ip = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return eth + ip + l4


def _pseudo(src: bytes, dst: bytes, proto: int, length: int, v6: bool) -> bytes:
    if v6:
        return src + dst + struct.pack("!IxxxB", length, proto)
    return src + dst + struct.pack("!xBH", proto, length)


def _l4(
    proto: int,
    sport: int,
    dport: int,
    payload: bytes,
    pseudo: bytes,
    flags: int,
    icmp_type: int,
    v6: bool,
) -> bytes:
    if proto == IPPROTO_UDP:
        hdr = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
        c = checksum(pseudo + hdr + payload) or 0xFFFF
        return hdr[:6] + struct.pack("!H", c) + payload
    if proto == IPPROTO_TCP:
        hdr = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags & 0xFF, 65535, 0, 0)
        c = checksum(pseudo + hdr + payload)
        return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload
    if proto in (IPPROTO_ICMP, IPPROTO_ICMPV6):
        hdr = struct.pack("!BBHHH", icmp_type, 0, 0, sport, 1)
        c = checksum((pseudo if v6 else b"") + hdr + payload)
        return hdr[:2] + struct.pack("!H", c) + hdr[4:] + payload
    return payload
