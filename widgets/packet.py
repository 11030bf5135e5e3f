"""A followed frame's packet detail, as Wireshark's packet pane shows it: its headers before
and after the program it meets first (Ethernet, 802.1Q, IPv4/IPv6, UDP/TCP/ICMP, field by
field), and its bytes in hex, the bytes the program rewrote marked.

The bytes come from the flow's own header fields (``PacketView``): real frames, checksums
included, padded to the frame's size.
"""

from __future__ import annotations

from typing import ClassVar

from textual.strip import Strip

from xdptui.model.views import HeaderLayer, PacketView
from xdptui.widgets.format import program_name
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project_paths import FollowView

BYTES_PER_LINE = 16


def hexdump(
    data: bytes, changed: frozenset[int], per_line: int = BYTES_PER_LINE
) -> list[list[tuple[str, bool]]]:
    """``0000  00 22 33 ...  ."3...``: one list of (text, rewritten) runs per ``per_line``
    bytes (16, or 8 in a narrow panel)."""
    lines: list[list[tuple[str, bool]]] = []
    for start in range(0, len(data), per_line):
        chunk = data[start : start + per_line]
        runs: list[tuple[str, bool]] = [(f"{start:04x} ", False)]
        for i, byte in enumerate(chunk):
            runs.append((" " + f"{byte:02x}", start + i in changed))
        runs.append(("   " * (per_line - len(chunk)) + "  ", False))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        runs.append((text, False))
        lines.append(runs)
    return lines


class PacketPanel(LinePanel[FollowView]):
    """The followed frame's headers before and after its program, and its bytes."""

    HELP = """\
## Packet

The followed frame (`f`), field by field as a dissector shows it: Ethernet (and 802.1Q),
IPv4 or IPv6, UDP, TCP or ICMP -- before the program on the device it arrives at, and after
it: the samples behind `xdp2` and `redirect` swap the MAC addresses; the other built-ins and
Python programs return a verdict and write nothing. Below, the bytes in hex; the ones the
program rewrote are marked. Its hops are on the left.
"""

    DEFAULT_CSS = """
    PacketPanel {
        & > .packet-panel--title { text-style: bold; color: $accent; }
        & > .packet-panel--layer { text-style: bold; }
        & > .packet-panel--field { color: $foreground-muted; }
        & > .packet-panel--value { }
        & > .packet-panel--changed { background: $warning; color: $background; text-style: bold; }
        & > .packet-panel--dim { color: $foreground-muted; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "packet-panel--title",
        "packet-panel--layer",
        "packet-panel--field",
        "packet-panel--value",
        "packet-panel--changed",
        "packet-panel--dim",
    }

    def build(self, view: FollowView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        packet = view.packet
        if packet is None:
            return [], [strip([("no frame of this flow to show", s("packet-panel--dim"))])]
        prog = program_name(packet.program) or "no program"
        head = [
            strip(
                [(f"{packet.source} #{packet.flow} → {packet.device}", s("packet-panel--title"))]
            ),
            strip(
                [
                    (
                        f"{prog}: {packet.verdict}" if packet.program else prog,
                        s("packet-panel--value"),
                    ),
                    (f" · {len(packet.data_before)} bytes", s("packet-panel--dim")),
                ]
            ),
        ]
        body: list[Strip] = []
        same = packet.before == packet.after
        half = (width - 3) // 2
        if same or width < 70:
            body += self._layers(
                "before the program" if not same else "headers", packet.before, packet, False
            )
            if not same:
                body += self._layers("after the program", packet.after, packet, True)
        else:
            left = self._layer_lines("before the program", packet.before, packet, False)
            right = self._layer_lines("after the program", packet.after, packet, True)
            for i in range(max(len(left), len(right))):
                a = left[i] if i < len(left) else []
                b = right[i] if i < len(right) else []
                used = sum(len(t) for t, _ in a)
                body.append(
                    strip(
                        [
                            *a,
                            (" " * max(1, half - used), s("packet-panel--dim")),
                            ("│ ", s("packet-panel--dim")),
                            *b,
                        ]
                    )
                )
        body.append(strip([(packet.note, s("packet-panel--dim"))]))
        body.append(strip([("", s("packet-panel--dim"))]))
        changed = frozenset(packet.changed)
        label = "bytes after the program (rewritten marked)" if changed else "bytes"
        body.append(strip([(label, s("packet-panel--layer"))]))
        per_line = BYTES_PER_LINE if width >= 4 * BYTES_PER_LINE + 8 else BYTES_PER_LINE // 2
        for runs in hexdump(packet.data_after, changed, per_line):
            body.append(
                strip(
                    [
                        (text, s("packet-panel--changed" if hit else "packet-panel--value"))
                        for text, hit in runs
                    ]
                )
            )
        return head, body

    def _layers(
        self, title: str, layers: tuple[HeaderLayer, ...], packet: PacketView, after: bool
    ) -> list[Strip]:
        return [strip(parts) for parts in self._layer_lines(title, layers, packet, after)]

    def _layer_lines(
        self, title: str, layers: tuple[HeaderLayer, ...], packet: PacketView, after: bool
    ) -> list[list[Part]]:
        s = self.style_of
        changed = set(packet.changed)
        out: list[list[Part]] = [[(title, s("packet-panel--layer"))]]
        for layer in layers:
            out.append([(f" {layer.name}", s("packet-panel--layer"))])
            for name, value in layer.fields:
                hit = after and _field_changed(layer, name, changed)
                out.append(
                    [
                        (f"   {name:<9}", s("packet-panel--field")),
                        (value, s("packet-panel--changed" if hit else "packet-panel--value")),
                    ]
                )
        return out


def _field_changed(layer: HeaderLayer, name: str, changed: set[int]) -> bool:
    """Whether the rewritten bytes touch this Ethernet field (the MACs are what built-ins
    rewrite)."""
    spans = {"dst": range(0, 6), "src": range(6, 12)} if layer.name == "Ethernet II" else {}
    return any(i in changed for i in spans.get(name, ()))
