"""Bonding with XDP (``drivers/net/bonding/bond_main.c``, seed ``bond-xdp.txt``).

The bond's state as the driver keeps it -- slave list in enslave order, each slave's link as the
bond believes it (``slave->link``, updated by the MII monitor), ``curr_active_slave``, the
``usable_slaves`` array of the hash modes and the per-CPU round-robin counter -- and the slave
choice for frames, for XDP (``bond_xdp_get_xmit_slave``) and for the stack
(``bond_start_xmit``), over rows of frames without a per-frame loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.model.topology import HASH_MODES, bond_xdp_check
from xdptui.sim.batch import Rows
from xdptui.sim.dev.netdev import MODE_DRV, NetDev
from xdptui.sim.hashing import FlowHeaders, bond_xmit_hash
from xdptui.sim.shared import SharedCache

if TYPE_CHECKING:
    from xdptui.sim.datapath import Datapath
    from xdptui.sim.devmap import Xmit

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
    hash_cache: SharedCache[tuple[object, ...], IntArray] = field(
        default_factory=SharedCache, repr=False, compare=False
    )  # the slave per entry for one hash setup (the flow table's headers, the usable slaves)

    @property
    def bond_prog(self) -> bool:
        return self.xdp.get(MODE_DRV) is not None

    def has_ndo_bpf(self) -> bool:
        return True

    def ndo_xmit_ready(self, dp: Datapath) -> bool:
        """``bond_xdp_set_features``: the AND of the slaves' features (none without slaves
        or in a mode that can't run XDP)."""
        if not self.slaves or not bond_xdp_check(self.mode, self.xmit_hash_policy):
            return False
        return all(dp.world.devices[s].ndo_xmit_ready(dp) for s in self.slaves)

    def ndo_xdp_xmit(self, dp: Datapath, x: Xmit) -> None:
        """``bond_xdp_xmit``: a slave per frame (``bond_xdp_get_xmit_slave``), each handed to
        that slave's ``ndo_xdp_xmit`` one frame per call; no slave -> -ENXIO."""
        self.add("tx_packets", x.rows.total)
        self.add("tx_bytes", x.rows.bytes(dp.world.entries.size))
        for name, part in BondLogic(self, dp.world.devices).xdp_split(
            x.cpu, x.rows, dp.world.entries.headers
        ):
            if name is None:
                self.add("tx_packets", -part.total)
                dp.xmit_error(dp.xmit_part(x, self, part, x.calls), Errno.ENXIO, count_dev=False)
                continue
            slave = dp.world.devices[name]
            slave.ndo_xdp_xmit(dp, dp.xmit_part(x, slave, part, part.total))

    def stack_xmit(self, dp: Datapath, cpu: int, t: int, rows: Rows) -> None:
        """``bond_start_xmit``: the mode's slave choice (round-robin shares the per-CPU
        counter with XDP), then the slave's own transmit path."""
        self.add("tx_packets", rows.total)
        self.add("tx_bytes", rows.bytes(dp.world.entries.size))
        lg = BondLogic(self, dp.world.devices)
        for name, part in lg.stack_split(cpu, rows, dp.world.entries.headers):
            if name is None:
                self.add("tx_dropped", part.total)
                self.add("tx_packets", -part.total)
                continue
            dp.world.devices[name].stack_xmit(dp, cpu, t, part)

    def generic_xmit(self, dp: Datapath, src: NetDev, cpu: int, t: int, rows: Rows) -> None:
        self.stack_xmit(dp, cpu, t, rows)


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


def rr_counts(a: int, b: int, pps: int, cnt: int) -> IntArray:
    """How many counter values k in [a, b) give id (k // pps) % cnt == i, for every i."""
    period = pps * cnt
    lo = np.arange(cnt, dtype=np.int64) * pps
    hi = lo + pps

    def upto(x: int) -> IntArray:
        full = (x // period) * pps
        rem = x % period
        part: IntArray = np.clip(rem - lo, 0, hi - lo)
        return full + part

    out: IntArray = upto(b) - upto(a)
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
    lo = np.arange(cnt, dtype=np.int64) * pps
    period = pps * cnt

    def upto(v: IntArray) -> IntArray:
        out: IntArray = (v[:, None] // period) * pps + np.clip(v[:, None] % period - lo, 0, pps)
        return out

    per_id = upto(a + x) - upto(a)
    mine = np.array([name == slave for name in table], dtype=bool)
    counts: IntArray = per_id[:, mine].sum(axis=1)
    return counts
