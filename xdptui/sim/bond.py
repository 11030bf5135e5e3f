"""Bonding with XDP (``drivers/net/bonding/bond_main.c``, seed ``bond-xdp.txt``).

The bond's state as the driver keeps it -- slave list in enslave order, each slave's link as the
bond believes it (``slave->link``, updated by the MII monitor), ``curr_active_slave``, the
``usable_slaves`` array of the hash modes and the per-CPU round-robin counter -- and the slave
choice for a batch of frames, for XDP (``bond_xdp_get_xmit_slave``) and for the stack
(``bond_start_xmit``), as counts per (row, entry) without a per-frame loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import HASH_MODES
from xdptui.sim.hashing import FlowHeaders, bond_xmit_hash
from xdptui.sim.netdev import NetDev
from xdptui.sim.splitting import split_rows

IntArray = npt.NDArray[np.int64]

IPPROTO_IGMP = 2


@dataclass
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
    hash_cache: dict[tuple[object, ...], IntArray] = field(default_factory=dict, compare=False)

    @property
    def bond_prog(self) -> bool:
        return self.xdp.get("native") is not None


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
        picks, -1 when no slave is usable (``bond_xdp_xmit_3ad_xor_slave_get``). The hash is
        a per-flow constant: cached until the policy, the array or the flow table change."""
        b = self.bond
        n = len(headers)
        if not b.usable:
            return np.full(n, -1, dtype=np.int64)
        key = (b.xmit_hash_policy, tuple(b.slaves), tuple(b.usable), xdp, id(headers), n)
        cached = b.hash_cache.get(key)
        if cached is not None:
            return cached
        vlan = None if xdp else headers.vlan
        h = bond_xmit_hash(b.xmit_hash_policy, headers, vlan).astype(np.int64)
        usable_idx = np.array([b.slaves.index(s) for s in b.usable], dtype=np.int64)
        picked: IntArray = usable_idx[h % len(usable_idx)]
        if len(b.hash_cache) > 16:
            b.hash_cache.clear()
        b.hash_cache[key] = picked
        return picked

    def rr_split(
        self, cpus: IntArray, counts: IntArray, proto: npt.NDArray[np.uint8]
    ) -> dict[str | None, IntArray]:
        """Round-robin over rows polled on their CPUs: the per-CPU counter is pre-incremented
        per frame (the first frame on a CPU gets id 1), id = counter / packets_per_slave %
        slave_cnt (all slaves, not only usable), then ``bond_get_slave_by_id``. IGMP goes to the
        current active slave (else slave id 0). ``packets_per_slave 0`` means a random id:
        modelled as an even spread."""
        b = self.bond
        out: dict[str | None, IntArray] = {}
        cnt = len(b.slaves)
        if cnt == 0:
            out[None] = counts.copy()
            return out
        table = self.slave_by_id_table()
        igmp = proto == IPPROTO_IGMP
        if np.any(igmp & (counts.sum(axis=0) > 0)):
            target = b.curr_active if b.curr_active is not None else table[0]
            part = np.where(igmp[None, :], counts, 0)
            _add(out, target, part)
            counts = np.where(igmp[None, :], 0, counts)
        per_row = counts.sum(axis=1)
        pps = b.packets_per_slave
        ids = np.zeros((counts.shape[0], cnt), dtype=np.int64)
        for k in np.flatnonzero(per_row):
            n = int(per_row[k])
            cpu = int(cpus[k])
            c0 = int(b.rr_counter[cpu])
            if pps == 0:
                ids[k] = n // cnt + (np.arange(cnt) < n % cnt)
            else:
                ids[k] = _rr_counts(c0 + 1, c0 + n + 1, pps, cnt)
            b.rr_counter[cpu] = c0 + n
        remaining = counts.copy()
        left = per_row.copy()
        for i in range(cnt):
            take = ids[:, i]
            if not take.any():
                continue
            part = split_rows(remaining, np.minimum(take, left))
            remaining -= part
            left -= take
            _add(out, table[i], part)
        return out

    def xdp_split(
        self, cpus: IntArray, counts: IntArray, headers: FlowHeaders
    ) -> dict[str | None, IntArray]:
        """``bond_xdp_get_xmit_slave`` for a batch: slave name -> counts (None: no slave)."""
        b = self.bond
        if b.mode == "balance-rr":
            return self.rr_split(cpus, counts, headers.proto)
        if b.mode == "active-backup":
            return {b.curr_active: counts.copy()}
        if b.mode in HASH_MODES:
            return self._by_index(counts, self.hash_slaves(headers, xdp=True))
        return {None: counts.copy()}

    def stack_split(
        self, cpus: IntArray, counts: IntArray, headers: FlowHeaders
    ) -> dict[str | None, IntArray]:
        """``bond_start_xmit`` per mode for frames the local stack sends out of the bond.
        broadcast copies to every slave that can transmit; tlb/alb are approximated by the
        hash over active slaves (their load balancing is not modelled: UNVERIFIED)."""
        b = self.bond
        if b.mode == "balance-rr":
            return self.rr_split(cpus, counts, headers.proto)
        if b.mode == "active-backup":
            return {b.curr_active: counts.copy()}
        if b.mode == "broadcast":
            out: dict[str | None, IntArray] = {}
            for s in b.slaves:
                if self.can_tx(s):
                    out[s] = counts.copy()
            return out or {None: counts.copy()}
        if b.mode in HASH_MODES:
            return self._by_index(counts, self.hash_slaves(headers, xdp=False))
        self.update_slave_arr()
        return self._by_index(counts, self.hash_slaves(headers, xdp=False))

    def _by_index(self, counts: IntArray, idx: IntArray) -> dict[str | None, IntArray]:
        out: dict[str | None, IntArray] = {}
        for i in np.unique(idx):
            name = self.bond.slaves[int(i)] if i >= 0 else None
            _add(out, name, np.where((idx == i)[None, :], counts, 0))
        return out


def _add(out: dict[str | None, IntArray], key: str | None, part: IntArray) -> None:
    if key in out:
        out[key] = out[key] + part
    else:
        out[key] = part


def _rr_counts(a: int, b: int, pps: int, cnt: int) -> IntArray:
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
