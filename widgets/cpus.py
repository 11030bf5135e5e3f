"""The CPU map: per CPU, how busy NAPI keeps it, the RX queues it polls, the XDP TX rings it uses.

``cpu3 [###...]  42%  eth0:q3  eth0:tx3 eth1:tx3🔒``

A CPU polls the RX queues whose interrupts are bound to it (``napi_schedule`` on the CPU that
took the IRQ; ``net_rx_action`` runs the polls with budget 64). Its XDP_TX and redirected frames go
to the XDP TX ring the driver picks for the *current CPU* (``ixgbe_determine_xdp_ring``,
``ice_xdp_locking_key``), not a ring paired with the RX queue; 🔒 marks a ring shared with other
CPUs, which every transmit must lock. Busy is the share of the last interval spent in NAPI.
``bq→eth1`` is this CPU's devmap bulk queue towards eth1 (``bq_enqueue``: one per CPU and target).
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from textual.strip import Strip

from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project import CpuMapView, CpuRow

LOCK = "🔒"
BUSY_BAR = 6


class CpuMap(LinePanel[CpuMapView]):
    """One line per CPU: busy share, RX queues polled, XDP TX rings used (🔒: shared ring)."""

    HELP = """\
## CPUs

One line per CPU: the share of the last interval NAPI kept it busy, the RX queues whose
interrupts are bound to it (`napi_schedule` on the CPU that took the IRQ; `net_rx_action` runs
the polls, budget 64), the XDP TX ring it uses on each device — chosen for the *current CPU*
(`ixgbe_determine_xdp_ring`, `ice_xdp_locking_key`), not paired with the RX queue; 🔒 marks a
ring shared with other CPUs, which every transmit must lock (`tx_lock`) — and its devmap bulk
queues (`bq→eth1`: `this_cpu_ptr(dev->xdp_bulkq)`, one per CPU and target).

`LOCK` (where a ring is shared: ixgbe with more than 64 CPUs, `ixgbe_xdp_locking_key`) is the
share of the CPU's time spent taking those locks: the frames it put into its locked rings per
second (XDP_TX of what it polled, and its bulk queues' flushes) times the lock's cost in the
cost model (an estimate, marked UNVERIFIED in `sim/costs.py`). `j` jumps
to the CPUs sharing the next locked ring, as the report's `xdp_tx_rings` lists them (only
those are listed; after the last ring every CPU again); ↑↓ pgup pgdn scroll.
"""

    DEFAULT_CSS = """
    CpuMap {
        & > .cpu-map--heading { text-style: bold; color: $foreground-muted; }
        & > .cpu-map--cpu { text-style: bold; }
        & > .cpu-map--busy { color: $success; }
        & > .cpu-map--busy-high { color: $error; text-style: bold; }
        & > .cpu-map--idle { color: $foreground-muted 50%; }
        & > .cpu-map--dim { color: $foreground-muted; }
        & > .cpu-map--rx { color: $accent; }
        & > .cpu-map--tx { color: $text-secondary; }
        & > .cpu-map--lock { color: $warning; }
        & > .cpu-map--bq { color: $accent; }
        & > .cpu-map--marked { text-style: bold reverse; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cpu-map--heading",
        "cpu-map--cpu",
        "cpu-map--busy",
        "cpu-map--busy-high",
        "cpu-map--idle",
        "cpu-map--dim",
        "cpu-map--rx",
        "cpu-map--tx",
        "cpu-map--lock",
        "cpu-map--bq",
        "cpu-map--marked",
    }

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.ring: str | None = None
        """The locked ring whose CPUs are marked (``eth0:tx3``), None: none."""

    def locked_rings(self) -> list[str]:
        """The locked rings of the view, in device and ring order."""
        view = self.view
        names = {
            r for row in (view.rows if view else ()) for r, locked in row.xdp_tx_rings if locked
        }

        def order(name: str) -> tuple[str, int]:
            dev, _, ring = name.rpartition(":tx")
            return dev, int(ring) if ring.isdigit() else 0

        return sorted(names, key=order)

    def action_jump_ring(self) -> None:
        """The next locked ring: only the CPUs sharing it are listed (CPU 64 beside CPU 0);
        after the last ring, every CPU again."""
        rings = self.locked_rings()
        if not rings:
            self.notify("no XDP TX ring is shared here", timeout=3)
            return
        index = rings.index(self.ring) + 1 if self.ring in rings else 0
        self.ring = rings[index] if index < len(rings) else None
        self._rebuild()
        self.scroll_to(y=0, animate=False)

    def _shares(self, row: CpuRow) -> bool:
        return self.ring is not None and any(r == self.ring for r, _ in row.xdp_tx_rings)

    def build(self, view: CpuMapView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        if not view.rows:
            return [], [strip([("no CPUs", s("cpu-map--dim"))])]
        locks = any(row.lock is not None for row in view.rows)
        cpu_w = max(len(f"▶cpu{row.cpu}") for row in view.rows)
        rx_texts = [" ".join(row.rx_queues) or "-" for row in view.rows]
        rx_w = max(len("RX"), *(cell_len(t) for t in rx_texts))
        heading = s("cpu-map--heading")
        head = [
            strip(
                [
                    (" CPU".ljust(cpu_w), heading),
                    (" " + "BUSY".ljust(BUSY_BAR + 2 + 5), heading),
                    ("   LOCK" if locks else "", heading),
                    ("  " + "RX".ljust(rx_w), heading),
                    ("  XDP TX · bulk queues", heading),
                ]
            )
        ]
        if self.ring is not None:
            sharers = [f"cpu{row.cpu}" for row in view.rows if self._shares(row)]
            head.append(
                strip(
                    [
                        (f" ▶ {self.ring}{LOCK} shared by ", s("cpu-map--lock")),
                        (", ".join(sharers), s("cpu-map--marked")),
                        ("  (j: the next ring; after the last, every CPU)", s("cpu-map--dim")),
                    ]
                )
            )
        body: list[Strip] = []
        for row, rx_text in zip(view.rows, rx_texts, strict=True):
            if self.ring is not None and not self._shares(row):
                continue
            filled = min(BUSY_BAR, math.ceil(row.busy * BUSY_BAR)) if row.busy > 0 else 0
            busy_style = s("cpu-map--busy-high" if row.busy >= 0.9 else "cpu-map--busy")
            marked = row.marked or self._shares(row)
            parts: list[Part] = [
                (
                    f"{'▶' if marked else ' '}cpu{row.cpu}".ljust(cpu_w),
                    s("cpu-map--marked" if marked else "cpu-map--cpu"),
                ),
                (" [", s("cpu-map--dim")),
                ("#" * filled, busy_style),
                ("." * (BUSY_BAR - filled), s("cpu-map--idle")),
                ("]", s("cpu-map--dim")),
                (f"{round(row.busy * 100):>4}%", busy_style),
            ]
            if locks:
                share = "" if row.lock is None else f"{row.lock * 100:.1f}%"
                parts.append((share.rjust(7), s("cpu-map--lock")))
            parts += [
                ("  " + rx_text + " " * (rx_w - cell_len(rx_text)), s("cpu-map--rx")),
                (" ", s("cpu-map--dim")),
            ]
            tokens: list[list[Part]] = []
            if not row.xdp_tx_rings:
                tokens.append([(" -", s("cpu-map--dim"))])
            for ring, locked in row.xdp_tx_rings:
                token: list[Part] = [(" " + ring, s("cpu-map--tx"))]
                if locked:
                    token.append((LOCK, s("cpu-map--lock")))
                tokens.append(token)
            tokens += [[(" " + bq, s("cpu-map--bq"))] for bq in row.bulk_queues]
            body += [strip(line) for line in _wrap_tokens(parts, tokens, width)]
        return head, body


def _wrap_tokens(prefix: list[Part], tokens: list[list[Part]], width: int) -> list[list[Part]]:
    """``prefix`` then the tokens, on as many lines as ``width`` needs: a token is never cut,
    continuation lines start under the first token (the XDP TX column)."""
    indent = sum(cell_len(text) for text, _ in prefix)
    lines: list[list[Part]] = [list(prefix)]
    used = indent
    for token in tokens:
        size = sum(cell_len(text) for text, _ in token)
        if used + size > width and used > indent:
            lines.append([(" " * indent, Style())])
            used = indent
        lines[-1] += token
        used += size
    return lines
