"""Bonding with XDP (``drivers/net/bonding/bond_main.c``, seed ``bond-xdp.txt``).

The bond's state as the driver keeps it -- slave list in enslave order, each slave's link as the
bond believes it (``slave->link``, updated by the MII monitor), ``curr_active_slave``, the
``usable_slaves`` array of the hash modes and the per-CPU round-robin counter -- and the slave
choice for frames, for XDP (``bond_xdp_get_xmit_slave``) and for the stack
(``bond_start_xmit``), over rows of frames without a per-frame loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.model.topology import HASH_MODES, bond_xdp_check
from xdptui.sim.batch import Rows
from xdptui.sim.dev.netdev import MODE_DRV, NetDev
from xdptui.sim.hashing import FlowHeaders, bond_xmit_hash
from xdptui.sim.shared import SharedCache

if TYPE_CHECKING:
    from xdptui.sim.dev.netdev import XdpCore, Xmit

IntArray = npt.NDArray[np.int64]

IPPROTO_IGMP = 2


@dataclass(eq=False)
class Bond(NetDev):
    mode: str = "balance-rr"
    xmit_hash_policy: str = "layer2"
    slaves: list[str] = field(default_factory=list)
    miimon_ms: int = 100
    primary: str | None = None
    packets_per_slave: int = 1
    curr_active: str | None = None
    link: dict[str, bool] = field(default_factory=dict)  # slave->link == BOND_LINK_UP
    usable: list[str] = field(default_factory=list)  # bond->usable_slaves (hash modes)
    rr_counter: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rx_up: int = 0  # frames delivered up through the bond (bond_handle_frame)
    tx_down: int = 0  # frames sent down through it to a slave
    stack_down: int = 0  # ... of which skbs (bond_start_xmit); the rest came by bond_xdp_xmit
    folded: dict[str, int] = field(default_factory=dict)  # bond->bond_stats of released slaves
    hash_cache: SharedCache[tuple[object, ...], IntArray] = field(
        default_factory=SharedCache, repr=False, compare=False
    )  # the slave per entry for one hash setup (the flow table's headers, the usable slaves)

    @property
    def bond_prog(self) -> bool:
        return self.xdp.get(MODE_DRV) is not None

    def has_ndo_bpf(self) -> bool:
        return True

    def handed_down(self, n: int) -> None:
        self.tx_down += n

    def ndo_xmit_ready(self, dp: XdpCore) -> bool:
        """``bond_xdp_set_features``: the AND of the slaves' features (none without slaves
        or in a mode that can't run XDP)."""
        if not self.slaves or not bond_xdp_check(self.mode, self.xmit_hash_policy):
            return False
        return all(dp.world.devices[s].ndo_xmit_ready(dp) for s in self.slaves)

    def ndo_xdp_xmit(self, dp: XdpCore, x: Xmit) -> None:
        """``bond_xdp_xmit`` (bond_main.c, v6.15): a slave per frame
        (``bond_xdp_get_xmit_slave``), each frame handed to that slave's ``ndo_xdp_xmit``
        alone; the loop stops at the first frame without a slave (-ENXIO) or that a slave
        refuses, and ``bq_xmit_all`` frees the rest of the bulk. The bond returns an error
        (the flush's ``err``) only when that was the first frame."""
        lg = BondLogic(self, dp.world.devices)
        c0 = int(self.rr_counter[x.cpu]) if 0 <= x.cpu < len(self.rr_counter) else 0
        splits = lg.xdp_split(x.cpu, _positions(x.rows), dp.world.entries.headers)
        refusal = {name: lg.xmit_refusal(dp, name, x.cpu) for name, _ in splits}
        if x.rows.ordered:
            examined = self._xmit_in_order(dp, x, splits, refusal)
            if self.mode == "balance-rr" and examined < len(x.rows):
                # frames after the break never reached bond_rr_gen_slave_id
                igmp = dp.world.entries.proto[x.rows.entry[:examined]] == IPPROTO_IGMP
                self.rr_counter[x.cpu] = c0 + examined - int(igmp.sum())
        else:
            self._xmit_bulks(dp, x, splits, refusal, c0)

    def _xmit_in_order(
        self,
        dp: XdpCore,
        x: Xmit,
        splits: list[tuple[str | None, Rows]],
        refusal: dict[str | None, Errno | None],
    ) -> int:
        """Exact mode: one bulk, frame by frame (runs of frames to one slave together).
        Returns how many frames the loop looked at."""
        rows = x.rows
        n = len(rows)
        label = np.zeros(n, dtype=np.int64)
        names: list[str | None] = []
        for name, part in splits:
            assert part.ident is not None
            label[part.ident] = len(names)
            names.append(name)
        starts = np.concatenate(([0], np.flatnonzero(np.diff(label)) + 1)).tolist()
        for i, pos in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else n
            name = names[int(label[pos])]
            err = refusal[name]
            if err is not None:
                if name is not None:  # the slave got the frame and refused it
                    dp.world.devices[name].add("xdp_xmit", 1)
                    dp.world.devices[name].add("xdp_xmit_errors", 1)
                    self.tx_down += 1
                _bond_stop(dp, x, rows.slice(pos, n), err, first=pos == 0)
                return int(pos) + 1
            assert name is not None
            slave = dp.world.devices[name]
            run = rows.slice(pos, end)
            part_x = dp.accounts.xmit_part(x, slave, run, run.total)
            part_x.full_calls = 1  # (handed one by one: the first refused frame ends it)
            err_flushes = x.tally.err
            slave.ndo_xdp_xmit(dp, part_x)
            x.tally.err = err_flushes  # the bond's return value decides the flush's error
            if part_x.err is not None:  # (one frame handed down, refused: ``xmit_error``)
                self.tx_down += 1
            if part_x.sent < run.total:  # the slave refused a frame: the loop breaks
                if pos == 0 and part_x.sent == 0 and part_x.err is not None:
                    # an error on the very first frame is the bond's; a full ring is not
                    # one (the slave returns 0 frames sent, the bond 0: ``err < 0`` only)
                    x.tally.err += x.calls
                    x.err = part_x.err
                _bond_stop(dp, x, rows.slice(end, n), None, first=False)
                return int(pos) + part_x.sent + 1
        return n

    def _xmit_bulks(
        self,
        dp: XdpCore,
        x: Xmit,
        splits: list[tuple[str | None, Rows]],
        refusal: dict[str | None, Errno | None],
        c0: int,
    ) -> None:
        """Fast mode: ``x.calls`` bulks of frames in no recorded order. With a share q of
        frames going to a slave that refuses, a bulk of b frames sends its frames up to the
        first such frame: round-robin from the counter's sequence, averaged over where a bulk
        starts in it; the hash modes as if each frame drew its slave independently,
        (1-q)(1-(1-q)^b)/q frames. A full ring's refusals are counted when the slave's rings
        settle (``Accounts.refused``: one frame handed per call that met it)."""
        total = x.rows.total
        bad = sum(p.total for name, p in splits if refusal[name] is not None)
        if not bad:  # (what each slave takes counts as handed down: ``handed_down``)
            for name, part in splits:
                assert name is not None
                slave = dp.world.devices[name]
                slave.ndo_xdp_xmit(dp, dp.accounts.xmit_part(x, slave, part, part.total))
            return
        calls = max(1, x.calls)
        b = max(1.0, total / calls)
        q = bad / total
        first_share, stop_share = q, 1 - (1 - q) ** b
        if self.mode == "balance-rr":
            lg = BondLogic(self, dp.world.devices)
            sent_per_bulk, first_share, stop_share, counter = lg.rr_bulks(
                c0, round(b), calls, refusal
            )
            self.rr_counter[x.cpu] = counter
        else:
            sent_per_bulk = _iid_sent(b, q)
        good = total - bad
        keep = min(1.0, sent_per_bulk * calls / good) if good else 0.0
        stopped = min(bad, round(calls * stop_share))  # bulks that met a refusing frame
        first_bad = min(stopped, round(calls * first_share))  # ... as their first frame
        for name, part in splits:
            err = refusal[name]
            if err is not None:
                if name is not None:
                    share = round(stopped * part.total / bad)
                    dp.world.devices[name].add("xdp_xmit", share)
                    dp.world.devices[name].add("xdp_xmit_errors", share)
                    self.tx_down += share
                _bond_stop(dp, x, part, err, first=False)
                continue
            assert name is not None
            slave = dp.world.devices[name]
            taken = part.head(round(keep * part.total))
            if taken.total:
                slave.ndo_xdp_xmit(dp, dp.accounts.xmit_part(x, slave, taken, taken.total))
            _bond_stop(dp, x, part.minus(taken), None, first=False)
        x.tally.err += first_bad

    def stack_xmit(self, dp: XdpCore, cpu: int, t: int, rows: Rows) -> None:
        """``bond_start_xmit``: the mode's slave choice (round-robin shares the per-CPU
        counter with XDP), then the slave's own transmit path."""
        lg = BondLogic(self, dp.world.devices)
        for name, part in lg.stack_split(cpu, rows, dp.world.entries.headers):
            if name is None:
                self.add("tx_dropped", part.total)  # bond_tx_drop: dev_core_stats_tx_dropped_inc
                continue
            self.tx_down += part.total
            self.stack_down += part.total
            dp.world.devices[name].stack_xmit(dp, cpu, t, part)

    def generic_xmit(self, dp: XdpCore, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        self.stack_xmit(dp, cpu, t, rows)


FOLDED_STATS = (
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "tx_packets",
    "tx_bytes",
    "tx_dropped",
    "rx_missed_errors",
)
"""The ``rtnl_link_stats64`` fields xdptui keeps that ``bond_fold_stats`` sums (the XDP
counters are driver statistics, not link statistics: they are not folded)."""


def bond_get_stats(bond: Bond, devices: dict[str, NetDev]) -> dict[str, int]:
    """``bond_get_stats`` (bond_main.c, v6.15): ``bond->bond_stats`` -- what released slaves
    left behind -- plus ``bond_fold_stats`` of every current slave, active and backup alike;
    ``dev_get_stats`` then adds the bond's own core drops (``bond_tx_drop``). The bond's own
    ``rx_up``/``tx_down`` are not link statistics."""
    out = dict(bond.counters)
    for key in FOLDED_STATS:
        own = bond.counters.get(key, 0) if key == "tx_dropped" else 0
        total = own + bond.folded.get(key, 0)
        for name in bond.slaves:
            dev = devices.get(name)
            if dev is None:
                continue
            total += (
                bond_get_stats(dev, devices).get(key, 0)
                if isinstance(dev, Bond)
                else dev.get_stats64().get(key, 0)
            )
        if key in out or total:
            out[key] = total
    return out


def _positions(rows: Rows) -> Rows:
    """Ordered rows whose ``ident`` is each frame's position (to put a split back in order)."""
    if not rows.ordered:
        return rows
    return Rows(rows.entry, rows.count, True, np.arange(len(rows), dtype=np.int64))


def _iid_sent(b: float, q: float) -> float:
    """Frames sent before the first refused one in a bulk of ``b``, each refused with
    probability ``q``."""
    return float((1 - q) * (1 - (1 - q) ** b) / q)


def _bond_stop(dp: XdpCore, x: Xmit, tail: Rows, err: Errno | None, first: bool) -> None:
    """``bond_xdp_xmit`` broke out of its loop: ``bq_xmit_all`` frees ``tail`` (the devmap's
    drops); when the very first frame failed the bond returned ``err`` (a flush error)."""
    if not tail.total:
        return
    x.tally.drops += tail.total
    if first:
        x.tally.err += x.calls
        x.err = err.name if err is not None else x.err
    if dp.watched(tail):
        why = f"{err.name} on an earlier frame" if err is not None else "a slave refused a frame"
        dp.hop(x.t, x.dst.name, "drop", f"bond_xdp_xmit stopped ({why}): the bulk's rest is freed",
               end=True)  # fmt: skip


def slave_is_up(dev: NetDev) -> bool:
    """``bond_slave_is_up``: running and carrier ok."""
    return dev.running


class BondLogic:
    """Slave choice and array maintenance for one bond; ``devices`` resolves names."""

    def __init__(self, bond: Bond, devices: dict[str, NetDev]) -> None:
        self.bond = bond
        self.devices = devices

    def can_tx(self, name: str) -> bool:
        """``bond_slave_can_tx``: up, link UP as the bond sees it, and active (in
        active-backup only the current active slave is)."""
        dev = self.devices.get(name)
        if dev is None or not slave_is_up(dev) or not self.bond.link.get(name, False):
            return False
        return not (self.bond.mode == "active-backup" and name != self.bond.curr_active)

    def xmit_refusal(self, dp: XdpCore, name: str | None, cpu: int) -> Errno | None:
        """What the slave's ``ndo_xdp_xmit`` answers before queueing anything: no slave ->
        -ENXIO (``bond_xdp_xmit``); a slave that is down -> -ENETDOWN (``ixgbe_xdp_xmit``'s
        ``__IXGBE_DOWN``, ``i40e_xdp_xmit``'s ``__I40E_VSI_DOWN``, ``mlx5e_xdp_xmit``'s
        ``MLX5E_STATE_OPENED``); one that can't take redirected frames (a veth whose peer has
        no program, a NIC without an XDP ring for this CPU) -> -ENXIO."""
        if name is None:
            return Errno.ENXIO
        dev = self.devices[name]
        if not dev.admin_up:
            return Errno.ENETDOWN
        if not dev.ndo_xmit_ready(dp):
            return Errno.ENXIO
        ring_of_cpu = getattr(dev, "ring_of_cpu", None)
        if ring_of_cpu is not None and 0 <= cpu < len(ring_of_cpu) and ring_of_cpu[cpu] < 0:
            return Errno.ENXIO
        return None

    def rr_bulks(
        self, c0: int, b: int, calls: int, refusal: dict[str | None, Errno | None]
    ) -> tuple[float, float, float, int]:
        """Round-robin bulks of ``b`` frames from counter ``c0``: each frame pre-increments
        the per-CPU counter (``bond_rr_gen_slave_id``) and the loop stops at the first frame
        for a refusing slave, so the next bulk starts right after it. Returns the frames sent
        per bulk, the share of bulks refused on their first frame, the share that met a
        refusal at all and how far the counter moved (followed bulk by bulk for up to 64
        bulks, then extrapolated)."""
        table = self.slave_by_id_table()
        cnt = len(table)
        pps = max(1, self.bond.packets_per_slave)
        if not cnt:
            return 0.0, 1.0, 1.0, calls
        c = c0
        sent = first = stopped = 0
        steps = min(calls, 64)
        for _ in range(steps):
            k = 0
            while k < b:
                c += 1
                if refusal.get(table[(c // pps) % cnt]) is not None:
                    break
                k += 1
            sent += k
            first += k == 0
            stopped += k < b
        scale = calls / max(steps, 1)
        n = max(steps, 1)
        return sent / n, first / n, stopped / n, c0 + round((c - c0) * scale)

    def update_slave_arr(self) -> None:
        """``bond_update_slave_arr``: usable slaves in list order (802.3ad: those in the active
        aggregator -- one aggregator of all up slaves here)."""
        self.bond.usable = [s for s in self.bond.slaves if self.can_tx(s)]

    def select_active(self) -> str | None:
        """``bond_find_best_slave``: the primary if its link is up, else keep the current
        active slave if still up, else the first slave whose link is up."""
        b = self.bond
        up = [s for s in b.slaves if b.link.get(s) and slave_is_up(self.devices[s])]
        new: str | None
        if b.primary in up:
            new = b.primary
        elif b.curr_active in up:
            new = b.curr_active
        else:
            new = up[0] if up else None
        b.curr_active = new
        return new

    def slave_by_id_table(self) -> list[str | None]:
        """``bond_get_slave_by_id`` for every id: the first slave from position id on that can
        transmit, wrapping to the start; None if none can."""
        slaves = self.bond.slaves
        n = len(slaves)
        out: list[str | None] = []
        for i in range(n):
            chosen = None
            for j in list(range(i, n)) + list(range(i)):
                if self.can_tx(slaves[j]):
                    chosen = slaves[j]
                    break
            out.append(chosen)
        return out

    def hash_slaves(self, headers: FlowHeaders, xdp: bool) -> IntArray:
        """Per entry, the index into ``bond.slaves`` that ``usable_slaves[hash % count]``
        picks, -1 when no slave is usable (``bond_xdp_xmit_3ad_xor_slave_get``)."""
        b = self.bond
        n = len(headers)
        if not b.usable:
            return np.full(n, -1, dtype=np.int64)
        key = (id(headers), n, b.xmit_hash_policy, xdp, tuple(b.slaves), tuple(b.usable))
        hit = b.hash_cache.get(key)
        if hit is not None:
            return hit
        vlan = None if xdp else headers.vlan
        h = bond_xmit_hash(b.xmit_hash_policy, headers, vlan).astype(np.int64)
        usable_idx = np.array([b.slaves.index(s) for s in b.usable], dtype=np.int64)
        picked: IntArray = usable_idx[h % len(usable_idx)]
        picked.flags.writeable = False
        if len(b.hash_cache) >= 8:
            b.hash_cache.clear()
        b.hash_cache[key] = picked
        return picked

    def xdp_slave_of_entry(self, headers: FlowHeaders) -> IntArray | None:
        """Per entry, the slave index ``bond_xdp_get_xmit_slave`` picks when that does not
        depend on the frame's order (hash modes, active-backup; -1 = none); None for
        round-robin, which counts frames per CPU."""
        b = self.bond
        if b.mode in HASH_MODES:
            return self.hash_slaves(headers, xdp=True)
        if b.mode == "active-backup":
            idx = b.slaves.index(b.curr_active) if b.curr_active in b.slaves else -1
            return np.full(len(headers), idx, dtype=np.int64)
        if b.mode == "balance-rr":
            return None
        return np.full(len(headers), -1, dtype=np.int64)

    def stack_slave_of_entry(self, headers: FlowHeaders) -> IntArray | None:
        """Per entry, the slave index ``bond_start_xmit`` picks when that is a function of the
        frame (hash modes, active-backup); None when it is not (round-robin, broadcast)."""
        b = self.bond
        if b.mode in ("balance-rr", "broadcast"):
            return None
        if b.mode == "active-backup":
            idx = b.slaves.index(b.curr_active) if b.curr_active in b.slaves else -1
            return np.full(len(headers), idx, dtype=np.int64)
        return self.hash_slaves(headers, xdp=False)

    def rr_split(
        self, cpu: int, rows: Rows, proto: npt.NDArray[np.uint8]
    ) -> list[tuple[str | None, Rows]]:
        """Round-robin on one CPU: the per-CPU counter is pre-incremented per frame (the first
        frame on a CPU gets id 1), id = counter / packets_per_slave % slave_cnt (all slaves, not
        only usable), then ``bond_get_slave_by_id``. IGMP goes to the current active slave
        (else slave id 0). ``packets_per_slave 0`` means a random id: modelled as an even
        spread."""
        b = self.bond
        cnt = len(b.slaves)
        if cnt == 0:
            return [(None, rows)]
        table = self.slave_by_id_table()
        out: list[tuple[str | None, Rows]] = []
        igmp = proto[rows.entry] == IPPROTO_IGMP
        if np.any(igmp):
            target = b.curr_active if b.curr_active is not None else table[0]
            out.append((target, rows.where(igmp)))
            rows = rows.where(~igmp)
        n = rows.total
        if not n:
            return out
        c0 = int(b.rr_counter[cpu])
        b.rr_counter[cpu] = c0 + n
        pps = b.packets_per_slave
        if rows.ordered:
            counter = c0 + 1 + np.arange(n, dtype=np.int64)
            ids = (counter // pps) % cnt if pps else counter % cnt
            for i in np.unique(ids):
                out.append((table[int(i)], rows.where(ids == i)))
            return out
        per_id = (
            n // cnt + (np.arange(cnt) < n % cnt).astype(np.int64)
            if pps == 0
            else rr_counts(c0 + 1, c0 + n + 1, pps, cnt)
        )
        left = rows
        for i in range(cnt):
            if per_id[i] <= 0:
                continue
            part = left.head(int(per_id[i]))
            left = left.minus(part)
            out.append((table[i], part))
        return out

    def rr_split_counted(
        self, cpu: int, rows: Rows, here: str, n_here: int
    ) -> list[tuple[str | None, Rows]]:
        """``rr_split`` where NAPI's loop counted how many of ``rows`` the per-CPU counter
        gave the receiving slave ``here`` (``napi.transmit``): those, and the rest to the one
        other slave every other id maps to."""
        b = self.bond
        b.rr_counter[cpu] += rows.total
        others = [s for s in self.slave_by_id_table() if s is not None and s != here]
        mine = rows.head(n_here)
        out: list[tuple[str | None, Rows]] = [(here, mine)] if mine.total else []
        rest = rows.minus(mine)
        if rest.total:
            out.append((others[0] if others else here, rest))
        return out

    def xdp_split(
        self, cpu: int, rows: Rows, headers: FlowHeaders
    ) -> list[tuple[str | None, Rows]]:
        """``bond_xdp_get_xmit_slave`` for rows polled on ``cpu``: (slave or None, rows)."""
        if self.bond.mode == "balance-rr":
            return self.rr_split(cpu, rows, headers.proto)
        idx = self.xdp_slave_of_entry(headers)
        assert idx is not None
        return self._by_index(rows, idx)

    def stack_split(
        self, cpu: int, rows: Rows, headers: FlowHeaders
    ) -> list[tuple[str | None, Rows]]:
        """``bond_start_xmit`` per mode for frames the local stack sends out of the bond.
        broadcast copies to every slave that can transmit; tlb/alb are approximated by the
        hash over active slaves (their load balancing is not modelled: UNVERIFIED)."""
        b = self.bond
        if b.mode == "balance-rr":
            return self.rr_split(cpu, rows, headers.proto)
        if b.mode == "active-backup":
            return [(b.curr_active, rows)]
        if b.mode == "broadcast":
            out: list[tuple[str | None, Rows]] = [(s, rows) for s in b.slaves if self.can_tx(s)]
            return out or [(None, rows)]
        if b.mode not in HASH_MODES:
            self.update_slave_arr()
        return self._by_index(rows, self.hash_slaves(headers, xdp=False))

    def _by_index(self, rows: Rows, idx: IntArray) -> list[tuple[str | None, Rows]]:
        per_row = idx[rows.entry]
        out: list[tuple[str | None, Rows]] = []
        for i in np.unique(per_row):
            name = self.bond.slaves[int(i)] if i >= 0 else None
            out.append((name, rows.where(per_row == i)))
        return out


def rr_below(x: Any, pps: int, cnt: int, s: Any) -> Any:
    """How many of the per-CPU counter's values v in [0, x) give slave id ``s``: the id is
    (v / packets_per_slave) % slaves (``bond_rr_gen_slave_id``). Integers or arrays (they
    broadcast); NAPI's compiled loop calls it too (``napi.rr_ids``)."""
    period = pps * cnt
    return (x // period) * pps + np.minimum(np.maximum(x % period - s * pps, 0), pps)


def rr_counts(a: int, b: int, pps: int, cnt: int) -> IntArray:
    """How many counter values k in [a, b) give id (k // pps) % cnt == i, for every i."""
    ids = np.arange(cnt, dtype=np.int64)
    out: IntArray = rr_below(b, pps, cnt, ids) - rr_below(a, pps, cnt, ids)
    return out


def rr_poll_counts(
    x: IntArray | None, table: list[str | None], pps: int, c0: int, slave: str
) -> IntArray | None:
    """Per poll, the round-robin frames that go to ``slave``: the per-CPU counter runs on
    from ``c0`` through the polls' frames (``bond_rr_gen_slave_id``), each id mapped by
    ``bond_get_slave_by_id`` (``table``). ``x``: the round-robin frames of each poll."""
    if x is None or len(x) <= 1 or not table:
        return None
    cnt = len(table)
    pps = max(1, pps)
    a = c0 + 1 + np.concatenate(([0], np.cumsum(x)[:-1]))
    ids = np.arange(cnt, dtype=np.int64)[None, :]
    per_id = rr_below((a + x)[:, None], pps, cnt, ids) - rr_below(a[:, None], pps, cnt, ids)
    mine = np.array([name == slave for name in table], dtype=bool)
    counts: IntArray = per_id[:, mine].sum(axis=1)
    return counts
