"""Ring occupancy gauges: every RX descriptor ring and every XDP TX ring, one line each.

``eth0 q3 cpu3    [#####.....|...] 212/512 peak 480 drop 1.2K``

An RX ring fills when frames arrive faster than NAPI on the queue's CPU (the CPU its interrupt is
bound to, ``smp_affinity``) cleans them, 64 per poll (``napi_poll`` / ``ixgbe_clean_rx_irq``);
when it is full the NIC drops (``rx_dropped``). ``|`` marks the peak since start. An XDP TX ring is
picked by the driver's CPU->ring rule (``ixgbe_determine_xdp_ring``: the current CPU's ring, or
``cpu % rings`` with ``tx_lock`` when there are fewer rings than CPUs; the lock is marked 🔒); a
full TX ring refuses frames, counted as drops. A tap's rings (``tap``) hold frames for the
userspace reader. A devmap bulk queue (``bq cpu3 eth0→eth1``, one per CPU and target) is drawn
as its mean fill per flush over the last step out of 16 (``DEV_MAP_BULK_SIZE``): ``bq_enqueue``
adds redirected frames and ``bq_xmit_all`` empties it at the end of every NAPI poll, so between
polls it is always empty; ``⇢prog`` names the egress program its last bulk ran, ``in`` the
frames enqueued per second and ``drop`` what that program dropped (the window of every rate).
``▶`` marks what the event selected in the event list concerns.
One line-API widget draws all the gauges.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project import GaugeRow, RingsView

LOCK = "🔒"
MIN_BAR = 6
COMPACT_BELOW = 10  # bar cells under which the tail drops its words
MAX_BAR = 64


def gauge_cells(occupancy: int, size: int, peak: int | None, width: int) -> tuple[int, int | None]:
    """(filled cells, peak marker cell or None) for a ``width``-cell bar.

    Any occupancy shows at least one cell, so a nearly empty ring is not drawn as an empty one.
    """
    if size <= 0 or width <= 0:
        return 0, None
    filled = min(width, math.ceil(occupancy * width / size)) if occupancy > 0 else 0
    marker = None
    if peak is not None and peak > 0:
        marker = min(width, math.ceil(peak * width / size)) - 1
    return filled, marker


class RingsPanel(LinePanel[RingsView]):
    """Occupancy, peak and drops of every RX ring and XDP TX ring (filtered by device focus)."""

    HELP = """\
## Rings

One gauge per ring, `#` descriptors in use, `|` the peak since start:

* **RX rings** (`eth0 q3 cpu3`): RSS (`reta[hash % size]`) picks the queue; NAPI on the CPU
  the queue's IRQ is bound to (`napi_poll`, budget 64, the driver's `*_clean_rx_irq`) frees
  descriptors; a full ring drops (`rx_dropped`). A veth's queue is its `ptr_ring` (256) while
  it has a native program; otherwise `veth_xmit`'s skbs wait in the CPU's backlog: the bar is
  its input queue against `netdev_max_backlog` (`enqueue_to_backlog` takes an skb while it
  holds at most 1000), `+N in process` what `process_backlog` already moved to its
  `process_queue`, which no limit counts.
* **XDP TX rings** (`eth0 tx3 cpu3`): the driver picks one by the *current CPU*
  (`ixgbe_determine_xdp_ring`: `smp_processor_id()`, or `cpu % rings` under `tx_lock` when
  there are fewer rings than CPUs — 🔒); they drain at line rate; a full ring refuses.
  `rxq…` names the RX queues whose XDP_TX a ring takes (i40e, ice, mlx5); mlx5 has two per
  channel, the RQ's own for XDP_TX (`rxqN`) and the one `mlx5e_xdp_xmit` uses (`cpuN`).
* **tap rings** (`tap1 tap q0→user 1Mpps`): not XDP TX rings but a tap's per-queue ring
  (`tx_queue_len`) toward userspace (`tun_net_xmit`, `tun_xdp_xmit`); the reader takes frames
  at the rate shown (its rate split over the queues, `reader TAP rate R`), `read` counts them;
  a full ring drops. The Taps panel below shows the tap's fast/generic XDP paths.
* **AF_XDP rings** (`xsk0 fill user→kernel`, `xsk0 RX kernel→user 1Mpps`): a socket's fill
  ring holds the UMEM chunks userspace gave the kernel (`taken`: one per received frame;
  `drop`: frames that found it empty, `rx_fill_ring_empty_descs`) -- drawn red when it runs
  *empty*; its RX ring holds received frames until the reader takes them (`read`; `drop`:
  frames that found it full, `rx_ring_full`). `z` zooms on a socket: all four rings and the
  UMEM's chunks by owner.
* **devmap bulk queues** (`bq cpu3 eth0→eth1`): per CPU and target
  (`this_cpu_ptr(dev->xdp_bulkq)`), filled by `bq_enqueue` and flushed into the target's
  `ndo_xdp_xmit` by `bq_xmit_all` at the end of each poll (`xdp_do_flush`), after the
  entry's egress program ran on the whole bulk; drawn as the mean frames per flush out of 16.

Click a device (Paths or Devices tab) to show only its rings.
"""

    DEFAULT_CSS = """
    RingsPanel {
        & > .rings-panel--label { }
        & > .rings-panel--tx-label { color: $text-secondary; }
        & > .rings-panel--bq-label { color: $accent; }
        & > .rings-panel--lock { color: $warning; }
        & > .rings-panel--fill { color: $success; }
        & > .rings-panel--fill-warn { color: $warning; }
        & > .rings-panel--fill-full { color: $error; text-style: bold; }
        & > .rings-panel--empty { color: $foreground-muted 50%; }
        & > .rings-panel--peak { color: $warning; text-style: bold; }
        & > .rings-panel--bracket { color: $foreground-muted; }
        & > .rings-panel--numbers { }
        & > .rings-panel--dim { color: $foreground-muted; }
        & > .rings-panel--drop { color: $error; text-style: bold; }
        & > .rings-panel--marked { color: $warning; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rings-panel--label",
        "rings-panel--tx-label",
        "rings-panel--bq-label",
        "rings-panel--lock",
        "rings-panel--fill",
        "rings-panel--fill-warn",
        "rings-panel--fill-full",
        "rings-panel--empty",
        "rings-panel--peak",
        "rings-panel--bracket",
        "rings-panel--numbers",
        "rings-panel--dim",
        "rings-panel--drop",
        "rings-panel--marked",
    }

    def update_view(self, view: RingsView) -> bool:
        changed = super().update_view(view)
        title = f"Rings: {view.focus}" if view.focus else "Rings"
        if changed and self.border_title != title:
            self.border_title = title
        return changed

    def build(self, view: RingsView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        if not view.rows:
            return [], [strip([("no rings", s("rings-panel--dim"))])]
        labels = [
            ("▶" if row.marked else " ") + row.label + (LOCK if row.locked else "")
            for row in view.rows
        ]
        label_w = max(cell_len(label) for label in labels)
        sizes_w = max(len(str(row.size)) for row in view.rows)
        fixed = label_w + 3  # " [" + "]"
        tails = [_tail(row, sizes_w, compact=False) for row in view.rows]
        tail_w = max(sum(len(text) for text, _ in tail) for tail in tails)
        if width - fixed - tail_w < COMPACT_BELOW:
            # Narrow panel: keep the bar, drop the words (the | marker still shows the peak).
            tails = [_tail(row, sizes_w, compact=True) for row in view.rows]
            tail_w = max(sum(len(text) for text, _ in tail) for tail in tails)
        bar_w = max(MIN_BAR, min(MAX_BAR, width - fixed - tail_w - 1))

        body: list[Strip] = []
        for row, label, tail in zip(view.rows, labels, tails, strict=True):
            label_style = s(
                {"tx": "rings-panel--tx-label", "bq": "rings-panel--bq-label"}.get(
                    row.kind, "rings-panel--label"
                )
            )
            mark = ("▶", s("rings-panel--marked")) if row.marked else (" ", label_style)
            parts: list[Part] = [mark, (row.label, label_style)]
            if row.locked:
                parts.append((LOCK, s("rings-panel--lock")))
            parts.append((" " * (label_w - cell_len(label)), label_style))
            filled, marker = gauge_cells(row.occupancy, row.size, row.peak, bar_w)
            share = row.occupancy / row.size if row.size else 0.0
            if row.kind == "xsk_fill":  # a fill ring is in trouble when it is empty
                share = 1.0 - share
            fill_style = s(
                "rings-panel--fill-full"
                if share >= 0.9
                else "rings-panel--fill-warn"
                if share >= 0.5
                else "rings-panel--fill"
            )
            parts.append((" [", s("rings-panel--bracket")))
            parts += _bar(
                filled, marker, bar_w, fill_style, s("rings-panel--empty"), s("rings-panel--peak")
            )
            parts.append(("]", s("rings-panel--bracket")))
            for text, part in tail:
                parts.append((text, s(part)))
            body.append(strip(parts))
        return [], body


def _bar(
    filled: int, marker: int | None, width: int, fill: Style, empty: Style, peak: Style
) -> list[Part]:
    """``#`` for descriptors in use, ``.`` for free ones, ``|`` at the peak."""
    if marker is None or marker < 0:
        return [("#" * filled, fill), ("." * (width - filled), empty)]
    parts: list[Part] = []
    if marker < filled:
        parts += [("#" * marker, fill), ("|", peak), ("#" * (filled - marker - 1), fill)]
        parts.append(("." * (width - filled), empty))
    else:
        parts += [("#" * filled, fill), ("." * (marker - filled), empty), ("|", peak)]
        parts.append(("." * (width - marker - 1), empty))
    return parts


def _tail(row: GaugeRow, sizes_w: int, *, compact: bool) -> list[tuple[str, str]]:
    """The numbers after the bar, as (text, component) pairs."""
    if row.kind == "bq":
        average = f"{row.average:.1f}" if row.average is not None else "-"
        bq: list[tuple[str, str]] = [
            (f" {average:>{sizes_w}}/{row.size:<{sizes_w}}", "rings-panel--numbers")
        ]
        if not compact:
            bq.append((f" per flush, in {format_pps(row.rate)}", "rings-panel--dim"))
        if row.dropped:
            egress = f" {row.program} drop " if not compact and row.program else " ✗"
            bq.append((egress, "rings-panel--dim"))
            bq.append((format_pps(row.drop_rate), "rings-panel--drop"))
        return bq
    tail: list[tuple[str, str]] = [
        (f" {row.occupancy:>{sizes_w}}/{row.size:<{sizes_w}}", "rings-panel--numbers")
    ]
    if row.kind == "backlog":  # its input queue against netdev_max_backlog, then the rest
        tail.append(
            (
                f" +{row.processing}" if compact else f" +{row.processing} in process",
                "rings-panel--dim",
            )
        )
    if not compact:
        if row.kind in ("rx", "backlog"):
            peak = row.peak if row.peak is not None else 0
            tail.append((f" peak {peak:>{sizes_w}}", "rings-panel--dim"))
        else:
            words = {
                "tap": "read",
                "ptr_ring": "taken",
                "xsk_fill": "taken",
                "xsk_rx": "read",
                "xsk_tx": "sent",
                "xsk_comp": "read",
            }
            word = words.get(row.kind, "sent")
            tail.append((f" {word} {format_count(row.sent or 0):>{sizes_w}}", "rings-panel--dim"))
    tail.append((" drop " if not compact else " ✗", "rings-panel--dim"))
    tail.append(
        (format_count(row.dropped), "rings-panel--drop" if row.dropped else "rings-panel--numbers")
    )
    return tail
