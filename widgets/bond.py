"""The bond panel: mode, policy, active slave, and per slave its TX and XDP_TX-vs-redirect split.

``eth0  up  active usable  10.0Mpps  5.00Mpps [████████░░░░░░░░] 50%  5.00Mpps``

The split bar is the share of the frames the program bounced (XDP_TX) that left by the slave
they came in on (``xdp_tx``) against those ``xdp_master_redirect`` sent to another slave
(``xdp_redirect``), as ``bond_xdp_get_xmit_slave`` chose. A running legal-sequence plan (``b``:
change the mode) is listed below with each command's outcome.
"""

from __future__ import annotations

from typing import ClassVar

from textual.strip import Strip

from xdptui.widgets.format import format_count, format_pps
from xdptui.widgets.lines import LinePanel, Part, strip
from xdptui.widgets.project_bond import BondInfo, BondView, SlaveRow, split_share

NARROW_BELOW = 110  # columns under which each slave takes two lines
SPLIT_W = 16
PLAN_MARKS = {"done": "✓", "failed": "✗", "next": "▶", "pending": "·"}


class BondPanel(LinePanel[BondView]):
    """Every bond with its slaves' TX and XDP_TX/redirect split, and the running plan."""

    HELP = """\
## Bond

Mode, `xmit_hash_policy`, MII monitor interval, the active slave and `usable_slaves` of each
bond (`bond_update_slave_arr` rebuilds that array on every link change in the hash modes).

Per slave: link, TX rate (`tx_packets`), and what the program the bond pushed to it
(`bond_xdp_set` -> `dev_xdp_propagate`) did with XDP_TX: `xdp_tx` = sent back out of the
same slave, `xdp_redirect` = `xdp_master_redirect` picked another slave through
`bond_xdp_get_xmit_slave` (balance-rr: the per-CPU `rr_tx_counter`; active-backup:
`curr_active_slave`; xor/802.3ad: `bond_xmit_hash_xdp` over `usable_slaves`).

`b` changes the mode and policy: the app first tries the direct command and shows the
refusal (`bond_opt_check_deps`: ENOTEMPTY with slaves, EBUSY while up;
`bond_option_mode_set`: EOPNOTSUPP with a program the new mode can't run), then offers the
legal sequence, run one command per tick so the traffic lost on the way shows.
"""

    DEFAULT_CSS = """
    BondPanel {
        & > .bond-panel--name { text-style: bold; color: $accent; }
        & > .bond-panel--key { color: $foreground-muted; }
        & > .bond-panel--value { text-style: bold; }
        & > .bond-panel--heading { text-style: bold; color: $foreground-muted; }
        & > .bond-panel--up { color: $success; }
        & > .bond-panel--down { color: $error; text-style: bold; }
        & > .bond-panel--active { color: $warning; text-style: bold; }
        & > .bond-panel--tx { color: $success; }
        & > .bond-panel--redirect { color: $text-secondary; }
        & > .bond-panel--empty { color: $foreground-muted 50%; }
        & > .bond-panel--dim { color: $foreground-muted; }
        & > .bond-panel--ok { color: $success; }
        & > .bond-panel--failed { color: $error; text-style: bold; }
        & > .bond-panel--next { color: $warning; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "bond-panel--name",
        "bond-panel--key",
        "bond-panel--value",
        "bond-panel--heading",
        "bond-panel--up",
        "bond-panel--down",
        "bond-panel--active",
        "bond-panel--tx",
        "bond-panel--redirect",
        "bond-panel--empty",
        "bond-panel--dim",
        "bond-panel--ok",
        "bond-panel--failed",
        "bond-panel--next",
    }

    def _narrow_slaves(
        self, bond: BondInfo, name_w: int, counting: bool, width: int
    ) -> list[Strip]:
        """A narrow panel: each slave on two lines (its role, then its rates and split)."""
        s = self.style_of
        out: list[Strip] = []
        for row in bond.slaves:
            role = ("active " if row.active else "") + ("usable" if row.usable else "unusable")
            link = s("bond-panel--up" if row.state == "up" else "bond-panel--down")
            share = split_share(row.xdp_tx_rate, row.redirect_rate)
            tx_cells = round(share * SPLIT_W) if share is not None else 0
            out.append(
                strip(
                    [
                        ("  " + row.name.ljust(name_w), s("bond-panel--value")),
                        ("  " + row.state.ljust(12), link),
                        (role, s("bond-panel--active" if row.active else "bond-panel--dim")),
                    ]
                )
            )
            bar: list[Part] = (
                [("·" * SPLIT_W, s("bond-panel--empty"))]
                if share is None
                else [
                    ("█" * tx_cells, s("bond-panel--tx")),
                    ("░" * (SPLIT_W - tx_cells), s("bond-panel--redirect")),
                ]
            )
            out.append(
                strip(
                    [
                        (f"  TX {format_pps(row.tx_rate)} · XDP_TX ", s("bond-panel--dim")),
                        (format_pps(row.xdp_tx_rate), s("bond-panel--tx")),
                        (" [", s("bond-panel--dim")),
                        *bar,
                        ("] REDIR ", s("bond-panel--dim")),
                        (format_pps(row.redirect_rate), s("bond-panel--redirect")),
                        (f" · XMIT in {format_pps(row.xmit_rate)}", s("bond-panel--dim")),
                    ]
                )
            )
            if counting:
                tx, xdp_tx, redirect, xmit = (format_count(v) for v in row.totals)
                step = (
                    " (+" + " +".join(format_count(v) for v in row.steps) + ")"
                    if row.steps is not None
                    else ""
                )
                so_far: list[Part] = [
                    (f"  so far TX {tx} · XDP_TX ", s("bond-panel--dim")),
                    (xdp_tx, s("bond-panel--tx")),
                    (" · REDIR ", s("bond-panel--dim")),
                    (redirect, s("bond-panel--redirect")),
                    (f" · XMIT in {xmit}", s("bond-panel--dim")),
                ]
                if sum(len(t) for t, _ in so_far) + len(step) <= width:
                    out.append(strip([*so_far, (step, s("bond-panel--dim"))]))
                else:  # the last step's counts on a line of their own, never cut
                    out += [strip(so_far), strip([(f"  last step{step}", s("bond-panel--dim"))])]
        return out

    def _counts(self, row: SlaveRow, name_w: int) -> list[Strip]:
        """Stepping: under a slave's rates, its frames so far and what the last step added,
        column by column (the split bar by the counts so far)."""
        s = self.style_of
        share = split_share(float(row.totals[1]), float(row.totals[2]))
        pct = f"{round(share * 100):>3}% " if share is not None else "   - "
        out: list[Strip] = []
        for label, values in (("so far", row.totals), ("+ step", row.steps)):
            if values is None:
                continue
            tx, xdp_tx, redirect, xmit = (format_count(v) for v in values)
            mark = "+" if label == "+ step" else ""
            gap = " " * (SPLIT_W + 3) + (pct if label == "so far" else "     ")
            out.append(
                strip(
                    [
                        ("  " + " " * name_w + "  " + label.ljust(27), s("bond-panel--dim")),
                        ((mark + tx).rjust(10), s("bond-panel--value")),
                        ("  " + (mark + xdp_tx).rjust(10), s("bond-panel--tx")),
                        (gap, s("bond-panel--tx")),
                        ((mark + redirect).rjust(10), s("bond-panel--redirect")),
                        ("  " + (mark + xmit).rjust(10), s("bond-panel--dim")),
                    ]
                )
            )
        return out

    def build(self, view: BondView, width: int) -> tuple[list[Strip], list[Strip]]:
        s = self.style_of
        body: list[Strip] = []
        if not view.bonds:
            body.append(strip([("no bond in this topology", s("bond-panel--dim"))]))
        narrow = width < NARROW_BELOW
        for bond in view.bonds:
            key, value = s("bond-panel--key"), s("bond-panel--value")
            state = s("bond-panel--up" if bond.state == "up" else "bond-panel--down")
            first: list[Part] = [
                (bond.name, s("bond-panel--name")),
                ("  ", key),
                (bond.state, state),
                ("  mode ", key),
                (bond.mode, value),
                ("  xmit_hash_policy ", key),
                (bond.policy, value),
            ]
            rest: list[Part] = [
                ("  miimon ", key),
                (f"{bond.miimon}ms", value),
                ("  xdp ", key),
                (bond.program or "-", value),
            ]
            if narrow:
                body += [strip(first), strip(rest)]
            else:
                body.append(strip(first + rest))
            body.append(
                strip(
                    [
                        ("active slave ", key),
                        (bond.active or "none", s("bond-panel--active")),
                        ("   (b: change mode/policy)", s("bond-panel--dim")),
                    ]
                )
            )
            name_w = max([len("SLAVE"), *(len(r.name) for r in bond.slaves)])
            heading = s("bond-panel--heading")
            if narrow:
                body += self._narrow_slaves(bond, name_w, view.counting, width)
                body.append(strip([("", s("bond-panel--dim"))]))
                continue
            body.append(
                strip(
                    [
                        ("  " + "SLAVE".ljust(name_w), heading),
                        ("  LINK        ", heading),
                        ("ROLE           ", heading),
                        ("TX".rjust(10), heading),
                        ("  XDP_TX".rjust(12), heading),
                        ("  " + "█ XDP_TX · ░ redirect".center(SPLIT_W + 2) + "     ", heading),
                        ("REDIRECT".rjust(10), heading),
                        ("  XMIT IN".rjust(12), heading),
                    ]
                )
            )
            if not bond.slaves:
                body.append(strip([("  no slaves", s("bond-panel--dim"))]))
            for row in bond.slaves:
                role = ("active " if row.active else "") + ("usable" if row.usable else "unusable")
                share = split_share(row.xdp_tx_rate, row.redirect_rate)
                tx_cells = round(share * SPLIT_W) if share is not None else 0
                bar: list[Part] = [(" [", s("bond-panel--dim"))]
                if share is None:
                    bar.append(("·" * SPLIT_W, s("bond-panel--empty")))
                else:
                    bar += [
                        ("█" * tx_cells, s("bond-panel--tx")),
                        ("░" * (SPLIT_W - tx_cells), s("bond-panel--redirect")),
                    ]
                bar.append(("]", s("bond-panel--dim")))
                pct = f"{round(share * 100):>3}% " if share is not None else "   - "
                bar.append((pct, s("bond-panel--tx")))
                link = s("bond-panel--up" if row.state == "up" else "bond-panel--down")
                parts: list[Part] = [
                    ("  " + row.name.ljust(name_w), s("bond-panel--value")),
                    ("  " + row.state.ljust(12), link),
                    (
                        role.ljust(15),
                        s("bond-panel--active" if row.active else "bond-panel--dim"),
                    ),
                    (format_pps(row.tx_rate).rjust(10), s("bond-panel--value")),
                    ("  " + format_pps(row.xdp_tx_rate).rjust(10), s("bond-panel--tx")),
                    *bar,
                    (format_pps(row.redirect_rate).rjust(10), s("bond-panel--redirect")),
                    ("  " + format_pps(row.xmit_rate).rjust(10), s("bond-panel--dim")),
                ]
                body.append(strip(parts))
                if view.counting:
                    body += self._counts(row, name_w)
            body.append(strip([("", s("bond-panel--dim"))]))
        if view.plan:
            body.append(strip([(view.plan_title or "plan", s("bond-panel--heading"))]))
            for i, step in enumerate(view.plan, start=1):
                style = {
                    "done": "bond-panel--ok",
                    "failed": "bond-panel--failed",
                    "next": "bond-panel--next",
                }.get(step.status, "bond-panel--dim")
                parts = [
                    (f"  {i:>2} {PLAN_MARKS.get(step.status, '·')} ", s(style)),
                    (step.command, s(style)),
                ]
                if step.reply:
                    parts.append(("  " + step.reply.splitlines()[0], s("bond-panel--dim")))
                body.append(strip(parts))
        return [], body
