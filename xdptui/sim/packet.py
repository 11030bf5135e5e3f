"""A followed frame's bytes and headers, before and after the program it meets first.

The bytes are the flow's own header fields (``build_frame_bytes``: Ethernet, an 802.1Q tag,
IPv4, UDP/TCP/ICMP, padded to the frame's size, real checksums). "After" is what the program
writes back: the kernel samples behind ``xdp2`` and ``redirect`` swap the MAC addresses
(``swap_src_dst_mac`` in ``samples/bpf/xdp2_kern.c`` and ``xdp_redirect_kern.c``); the other
built-ins only return a verdict, and a Python program (a verdict per flow) writes nothing, so
their frames leave as they came. The headers are dissected from the bytes themselves.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import TYPE_CHECKING

import numpy as np

from xdptui.bpf.frames import build_frame_bytes
from xdptui.model.views import HeaderLayer, PacketView, TraceHop
from xdptui.pcap import summary
from xdptui.sim.dev.veth import Veth
from xdptui.sim.zoom import verdicts

if TYPE_CHECKING:
    from xdptui.sim.entries import Entries
    from xdptui.sim.state import State

MAC_SWAPPERS = frozenset({"xdp2", "redirect"})
"""Built-ins whose kernel sample swaps the MACs before sending the frame on."""
_PROTOS = {1: "ICMP", 6: "TCP", 17: "UDP", 58: "ICMPv6"}


def packet_view(
    st: State, source: str, flow: int, hops: tuple[TraceHop, ...] = ()
) -> PacketView | None:
    """The next frame of ``source``'s ``flow``, as the program on its device sees it; a real
    object's run among ``hops`` (on that device) gives the bytes it left."""
    world = st.world
    src = next((s for s in world.sources if s.spec.name == source), None)
    if src is None or not 0 <= flow < src.spec.flows:
        return None
    n = src.emitted + (flow - src.emitted) % src.spec.flows
    entry = src.offset + n % len(src.table)
    e = world.entries
    vlan = int(e.headers.vlan[entry]) & 0x0FFF
    data = captured_bytes(e, entry) or build_frame_bytes(
        src_mac=_mac(int(e.src_mac[entry])),
        dst_mac=_mac(int(e.dst_mac[entry])),
        vlans=(vlan,) if vlan else (),
        src_ip=str(ipaddress.IPv4Address(int(e.src_ip[entry]))),
        dst_ip=str(ipaddress.IPv4Address(int(e.dst_ip[entry]))),
        proto=int(e.proto[entry]),
        src_port=int(e.src_port[entry]),
        dst_port=int(e.dst_port[entry]),
        size=int(e.size[entry]),
    )
    dev = world.devices.get(src.device)
    if src.local and isinstance(dev, Veth):
        dev = world.devices.get(dev.peer)  # veth_xmit: it arrives on the peer
    elif src.local:
        dev = None  # the local stack sends it: XDP runs on receive, nothing meets it here
    att = dev.prog if dev is not None else None
    program = att.prog.name if att is not None else ""
    out, note = _rewrite(program, data)
    name = dev.name if dev is not None else src.device
    run = next(
        (h.program for h in hops if h.dev == name and h.program is not None),
        None,
    )
    if run is not None and run.before == data:
        out = run.after
        note = f"{run.program} ran {run.insns} insns: {run.action}" + (
            f", {run.redirect}" if run.redirect else ""
        )
    if dev is None:
        note = f"sent by the local stack out of {src.device}: no XDP program on its way"
    if src.spec.pcap is not None:  # scapy dissects what the captured bytes hold
        note = f"captured: {summary(data)}; {note}"
    (verdict,) = verdicts(st, name, np.array([entry], np.int64))
    return PacketView(
        source=source,
        flow=flow,
        device=name,
        program=program,
        verdict=verdict,
        before=dissect(data),
        after=dissect(out),
        data_before=data,
        data_after=out,
        changed=_changed(data, out),
        note=note,
    )


def captured_bytes(e: Entries, entry: int) -> bytes | None:
    """A replayed capture's frame, as captured (None for a pktgen-like source's entry)."""
    for first, frames in e.captured:
        if first <= entry < first + len(frames):
            return frames[entry - first]
    return None


def _rewrite(program: str, data: bytes) -> tuple[bytes, str]:
    if not program:
        return data, "no XDP program: the frame goes to the stack as it came"
    if program in MAC_SWAPPERS:
        return data[6:12] + data[0:6] + data[12:], f"{program} swaps the MAC addresses"
    if program == "l4lb":
        return data, "l4lb's rewrite toward a backend is not modelled: shown as received"
    return data, f"{program} returns a verdict and writes nothing: the bytes leave as they came"


def _changed(before: bytes, after: bytes) -> tuple[int, ...]:
    """Offsets that differ; a longer or shorter frame differs past the shorter one's end."""
    diff = [i for i in range(min(len(before), len(after))) if before[i] != after[i]]
    return tuple(diff + list(range(min(len(before), len(after)), max(len(before), len(after)))))


def _mac(value: int) -> str:
    return ":".join(f"{(value >> (8 * (5 - i))) & 0xFF:02x}" for i in range(6))


def dissect(data: bytes) -> tuple[HeaderLayer, ...]:
    """Ethernet, VLAN tags, IPv4/IPv6 and UDP/TCP/ICMP headers, as fields."""
    layers: list[HeaderLayer] = []
    if len(data) < 14:
        return ()
    etype = struct.unpack_from("!H", data, 12)[0]
    layers.append(
        HeaderLayer(
            "Ethernet II",
            0,
            (("dst", _mac(int.from_bytes(data[0:6]))), ("src", _mac(int.from_bytes(data[6:12])))),
        )
    )
    off = 14
    while etype in (0x8100, 0x88A8) and len(data) >= off + 4:
        tci, etype = struct.unpack_from("!HH", data, off)
        layers.append(
            HeaderLayer("802.1Q", off - 2, (("vid", str(tci & 0x0FFF)), ("pcp", str(tci >> 13))))
        )
        off += 4
    layers[0] = HeaderLayer(layers[0].name, 0, (*layers[0].fields, ("type", f"0x{etype:04x}")))
    proto = -1
    if etype == 0x0800 and len(data) >= off + 20:
        ihl = (data[off] & 0x0F) * 4
        total, ident, frag, ttl, proto, csum = struct.unpack_from("!HHHBBH", data, off + 2)
        src = ipaddress.IPv4Address(data[off + 12 : off + 16])
        dst = ipaddress.IPv4Address(data[off + 16 : off + 20])
        layers.append(
            HeaderLayer(
                "IPv4",
                off,
                (
                    ("src", str(src)),
                    ("dst", str(dst)),
                    ("proto", f"{proto} ({_PROTOS.get(proto, '?')})"),
                    ("ttl", str(ttl)),
                    ("len", str(total)),
                    ("id", f"0x{ident:04x}"),
                    ("flags", "DF" if frag & 0x4000 else "-"),
                    ("csum", f"0x{csum:04x}"),
                ),
            )
        )
        off += ihl
    elif etype == 0x86DD and len(data) >= off + 40:
        plen, proto, hops = struct.unpack_from("!HBB", data, off + 4)
        src6 = ipaddress.IPv6Address(data[off + 8 : off + 24])
        dst6 = ipaddress.IPv6Address(data[off + 24 : off + 40])
        layers.append(
            HeaderLayer(
                "IPv6",
                off,
                (
                    ("src", str(src6)),
                    ("dst", str(dst6)),
                    ("next", f"{proto} ({_PROTOS.get(proto, '?')})"),
                    ("hop limit", str(hops)),
                    ("payload", str(plen)),
                ),
            )
        )
        off += 40
    if proto == 17 and len(data) >= off + 8:
        sport, dport, length, csum = struct.unpack_from("!HHHH", data, off)
        layers.append(
            HeaderLayer(
                "UDP",
                off,
                (
                    ("sport", str(sport)),
                    ("dport", str(dport)),
                    ("len", str(length)),
                    ("csum", f"0x{csum:04x}"),
                ),
            )
        )
    elif proto == 6 and len(data) >= off + 20:
        sport, dport, seq, ack, _, flags, window, csum = struct.unpack_from("!HHIIBBHH", data, off)
        names = "".join(c for bit, c in zip(range(6), "FSRPAU", strict=True) if flags >> bit & 1)
        layers.append(
            HeaderLayer(
                "TCP",
                off,
                (
                    ("sport", str(sport)),
                    ("dport", str(dport)),
                    ("seq", str(seq)),
                    ("ack", str(ack)),
                    ("flags", names or "-"),
                    ("win", str(window)),
                    ("csum", f"0x{csum:04x}"),
                ),
            )
        )
    elif proto in (1, 58) and len(data) >= off + 4:
        typ, code, csum = struct.unpack_from("!BBH", data, off)
        layers.append(
            HeaderLayer(
                _PROTOS[proto],
                off,
                (("type", str(typ)), ("code", str(code)), ("csum", f"0x{csum:04x}")),
            )
        )
    return tuple(layers)
