"""Taps: per tap, the fast/generic XDP path split with each slow-path reason, what the program
did on each path, and per queue the tap ring toward userspace with its fill and the reader.

``tap0 · tap · 2 queues · writer write · reader 4Mpps · xdp1 native``
``  paths    fast 1.80Mpps 90%   generic 200Kpps 10%``
``  generic  gso 200Kpps``
``  verdicts fast: XDP_DROP 1.80Mpps · generic: XDP_DROP 200Kpps``
``  tap ring q0→user [####......] 212/500 reader 2Mpps read 2Mpps drop 0``
"""

from __future__ import annotations

import math
from typing import ClassVar

from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project_taps import TapCount, TapRow, TapsView

BAR = 12


def _share(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "-"


def _counted(c: TapCount) -> str:
    return format_pps(c.per_s) if c.per_s is not None else format_count(c.count)


class TapsPanel(LinePanel[TapsView]):
    """The two XDP paths of every tap and its rings toward userspace."""

    HELP = """\
## Taps

A write into a tap (`tun_get_user`) runs the program on the page before any skb exists —
the **fast** path, `tun_build_skb` (`xdp_fast_path`) — only when it is small, not GSO, not
blocking and fits a page with headroom (`tun_can_build_skb`): SKB_DATA_ALIGN(len + 64
TUN_RX_PAD + 256 XDP_PACKET_HEADROOM) + 320 skb_shared_info <= 4096 PAGE_SIZE, with `len`
the frame without its virtio-net header (`tun_get_user` takes it off first): frames up to
**3456 bytes** on x86-64. Every other write builds an skb and runs the program
as **generic** XDP (`do_xdp_generic`, `xdp_generic_path`); `generic` lists the reason each
one took it (gso, too big, blocking, zerocopy, sndbuf, napi frags, tun (L3)). `verdicts`
says what the program returned on each path.

**vhost** (`writer: vhost`): vhost-net hands a VM's writes over in batches of up to 64
(`vhost_net_build_xdp` → `tun_sendmsg` → `tun_xdp_one`, one flush per batch), but only frames
its own page takes: SKB_DATA_ALIGN(len + 12 + SKB_DATA_ALIGN(64 + 256 + 12)) + 320 <= 4096,
counting the 12-byte virtio-net header — frames up to **3380 bytes**. A bigger write sends the
batch so far, then goes alone through `tun_get_user` (the fast path up to 3456 bytes, its
redirect flushed at once).

**tap rings** (`q0→user`): frames toward userspace (`tun_net_xmit`, `tun_xdp_xmit`) wait in a
ring of `tx_queue_len` per queue (`cpu % numqueues`) until the reader takes them at its rate
(`reader TAP rate R`; split evenly over the queues); a full ring drops (`tx_dropped` counts
each `ndo_xdp_xmit` call that met it). Slow the reader (`t`, or `reader tap1 rate 200Kpps`)
and watch the ring fill.
"""

    DEFAULT_CSS = """
    TapsPanel {
        height: auto;
        max-height: 75%;
        & > .taps-panel--name { text-style: bold; }
        & > .taps-panel--dim { color: $foreground-muted; }
        & > .taps-panel--fast { color: $success; }
        & > .taps-panel--generic { color: $warning; }
        & > .taps-panel--verdict { color: $accent; }
        & > .taps-panel--fill { color: $success; }
        & > .taps-panel--fill-full { color: $error; text-style: bold; }
        & > .taps-panel--empty { color: $foreground-muted 50%; }
        & > .taps-panel--drop { color: $error; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "taps-panel--name",
        "taps-panel--dim",
        "taps-panel--fast",
        "taps-panel--generic",
        "taps-panel--verdict",
        "taps-panel--fill",
        "taps-panel--fill-full",
        "taps-panel--empty",
        "taps-panel--drop",
    }

    def build(self, view: TapsView, width: int) -> tuple[list[Strip], list[Strip]]:
        body: list[Strip] = []
        for row in view.rows:
            body += self._tap(row)
        return [], body

    def _tap(self, row: TapRow) -> list[Strip]:
        s = self.style_of
        dim = s("taps-panel--dim")
        reader = format_pps(row.reader_pps) if row.reader_pps is not None else "none (carrier off)"
        head: list[Part] = [
            (row.name, s("taps-panel--name")),
            (
                f" · {row.mode} · {row.queues} queue{'s' if row.queues != 1 else ''}"
                f" · writer {row.writer} · reader {reader} · ",
                dim,
            ),
            (row.program or "no program", s("taps-panel--verdict") if row.program else dim),
        ]
        lines = [strip(head)]
        total = row.fast.count + row.generic.count
        rate_total = (row.fast.per_s or 0) + (row.generic.per_s or 0)
        if row.fast.per_s is not None and rate_total > 0:
            fast_share = _share(round(row.fast.per_s), round(rate_total))
            gen_share = _share(round(row.generic.per_s or 0), round(rate_total))
        else:
            fast_share = _share(row.fast.count, total)
            gen_share = _share(row.generic.count, total)
        paths: list[Part] = [
            ("  paths     ", dim),
            (f"fast {_counted(row.fast)} {fast_share}", s("taps-panel--fast")),
            (" · ", dim),
            (f"generic {_counted(row.generic)} {gen_share}", s("taps-panel--generic")),
        ]
        if row.throttled:
            paths.append((f" · throttled {format_count(row.throttled)}", dim))
        if total:
            lines.append(strip(paths))
        if row.slow_reasons:
            why: list[Part] = [("  generic   ", dim)]
            for i, reason in enumerate(row.slow_reasons):
                why.append((" · " if i else "", dim))
                why.append((f"{reason.key} {_counted(reason)}", s("taps-panel--generic")))
            lines.append(strip(why))
        if row.fast_verdicts or row.generic_verdicts:
            verdicts: list[Part] = [("  verdicts  ", dim)]
            for label, items in (("fast", row.fast_verdicts), ("generic", row.generic_verdicts)):
                if not items:
                    continue
                if len(verdicts) > 1:
                    verdicts.append(("  ·  ", dim))
                verdicts.append((f"{label}: ", dim))
                verdicts.append(
                    (" ".join(f"{v.key} {_counted(v)}" for v in items), s("taps-panel--verdict"))
                )
            lines.append(strip(verdicts))
        for ring in row.rings:
            share = ring.occupancy / ring.size if ring.size else 0.0
            filled = min(BAR, math.ceil(share * BAR)) if ring.occupancy else 0
            fill = s("taps-panel--fill-full" if share >= 0.9 else "taps-panel--fill")
            per_q = format_pps(ring.reader_pps) if ring.reader_pps is not None else "none"
            read = format_pps(ring.sent_per_s) if ring.sent_per_s is not None else "-"
            dropped = (
                format_pps(ring.dropped_per_s)
                if ring.dropped_per_s is not None
                else format_count(ring.dropped)
            )
            hot = ring.dropped_per_s if ring.dropped_per_s is not None else ring.dropped
            lines.append(
                strip(
                    [
                        (f"  tap ring q{ring.queue}→user [", dim),
                        ("#" * filled, fill),
                        ("." * (BAR - filled), s("taps-panel--empty")),
                        ("] ", dim),
                        (f"{ring.occupancy}/{ring.size}", fill if share >= 0.9 else dim),
                        (f" reader {per_q}/q read {read} drop ", dim),
                        (dropped, s("taps-panel--drop") if hot else dim),
                    ]
                )
            )
        return lines
