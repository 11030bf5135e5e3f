"""Crafted packets for the kernel comparison: Ethernet, VLAN, QinQ, IPv4 (with options and
fragments), IPv6, UDP / TCP / ICMP, ARP, random bytes, truncated headers; 14 to 3000 bytes.
Deterministic (a seeded generator)."""

from __future__ import annotations

import random
import struct

from xdptui.bpf.frames import build_frame_bytes

PROTOS = (17, 6, 1)


def corpus(count: int = 1100, seed: int = 15) -> list[bytes]:
    rnd = random.Random(seed)
    out: list[bytes] = []
    while len(out) < count:
        kind = rnd.randrange(10)
        size = (
            rnd.choice(
                (14, 15, 20, 33, 34, 42, 54, 60, 64, 65, 128, 512, 1000, 1500, 1514, 2048, 3000)
            )
            if rnd.random() < 0.4
            else rnd.randint(14, 1600)
        )
        v6 = rnd.random() < 0.3
        src = (
            f"2001:db8:{rnd.choice(('1', 'bad'))}::{rnd.randint(1, 9)}"
            if v6
            else f"10.0.{rnd.randint(0, 3)}.{rnd.randint(1, 254)}"
        )
        if v6 and rnd.random() < 0.2:
            src = "fe80::1"
        dst = f"2001:db8:2::{rnd.randint(1, 9)}" if v6 else f"10.1.0.{rnd.randint(0, 9)}"
        proto = rnd.choice(PROTOS)
        if v6 and proto == 1:
            proto = 58
        vlans: tuple[int, ...] = ()
        if kind == 1:
            vlans = (rnd.choice((100, 200, 4095)),)
        elif kind == 2:
            vlans = (rnd.choice((10, 100)), rnd.choice((100, 300)))
        elif kind == 3:
            vlans = tuple(rnd.choice((100, 7)) for _ in range(rnd.randint(3, 5)))
        frame = build_frame_bytes(
            src_mac=bytes([2, 0, 0, 0, rnd.randrange(256), rnd.randrange(256)]),
            dst_mac=bytes([rnd.choice((2, 0xFF)), 0, 0, 0, 0, rnd.randrange(256)]),
            vlans=vlans,
            qinq=kind == 2 and rnd.random() < 0.5,
            src_ip=src,
            dst_ip=dst,
            proto=proto,
            src_port=rnd.randrange(65536),
            dst_port=rnd.choice((53, 80, 443, 1024, rnd.randrange(65536))),
            size=max(size, 14),
            ttl=rnd.choice((0, 1, 2, 64, 255)),
            tcp_flags=rnd.choice((0x02, 0x10, 0x11, 0x04, 0x12)),
            icmp_type=rnd.choice((0, 8, 128, 129, 3)),
        )
        if kind == 4:  # not IP
            frame = (
                frame[:12] + struct.pack("!H", rnd.choice((0x0806, 0x88CC, 0x0000))) + frame[14:]
            )
        elif kind == 5:  # truncated headers
            frame = frame[: rnd.randint(14, min(len(frame), 80))]
        elif kind == 6:  # random bytes
            frame = bytes(rnd.randrange(256) for _ in range(max(14, size % 300)))
        elif kind == 7 and not v6 and len(frame) >= 34:  # IPv4 fragments, odd IHL
            b = bytearray(frame)
            off = 14 + 4 * len(vlans)
            if len(b) > off + 8:
                b[off] = 0x40 | rnd.choice((3, 5, 6, 15))
                b[off + 6] = rnd.choice((0x20, 0x00, 0x40, 0x1F))
            frame = bytes(b)
        elif kind == 8:  # arbitrary bytes in the fields the test programs read
            b = bytearray(frame)
            for i in rnd.sample(range(min(len(b), 64)), k=min(len(b), 8)):
                b[i] = rnd.randrange(256)
            frame = bytes(b)
        if len(frame) >= 14:
            out.append(frame[:3520])
    return out
