"""What each device's XDP program decides for every flow-table entry (``net/core/filter.c``).

A program's verdict, redirect target and the checks ``xdp_do_redirect`` makes depend only on a
frame's headers and on configuration, so they are computed once per entry whenever the
configuration changes (the world's epoch) and both modes read them. Compiled here:

* the program's return code and the effective action (``bpf_warn_invalid_xdp_action``: an
  unknown code is XDP_ABORTED);
* ``bpf_redirect`` / ``bpf_redirect_map`` targets and ``__xdp_do_redirect_frame`` /
  ``__xdp_enqueue``'s refusals, in the kernel's order;
* ``xdp_master_redirect``: a bond slave's XDP_TX becomes a redirect to the slave the bond picks;
* per-frame CPU cost, and for tun/tap which frames take the fast path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.sim import costs
from xdptui.sim.bond.bond_main import Bond, BondLogic
from xdptui.sim.columns import compact, filled, narrow, once
from xdptui.sim.core.bpf_eval import EvalCore, ObjEval, evaluate, rx_queues
from xdptui.sim.dev.netdev import MODE_DRV, MODE_SKB, Host, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.kconst import (
    CPU_TARGET,
    XDP_ABORTED,
    XDP_PASS,
    XDP_REDIRECT,
    XDP_TX,
    XSK_TARGET,
    max_fwd_len,
)
from xdptui.sim.programs import Program, XdpContext
from xdptui.sim.xsk import check_errors as xsk_errors
from xdptui.sim.xsk import rcv_cost as xsk_cost

IntArray = npt.NDArray[np.int64]
A = TypeVar("A", bound=npt.NDArray[Any])
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

TX_HERE = -1  # master redirect: XDP_TX out of the receiving slave
TX_ABORT = -2  # master redirect: the bond is down (XDP_ABORTED)
TX_RR = -3  # master redirect: round-robin, decided per frame
RR_CLASS = -7  # the bulk class of round-robin master redirects
BROADCAST = -9  # the bulk class of broadcast redirects (every target takes every frame)


class FilterCore(EvalCore, Protocol):
    """The data path as ``filter.c``'s rules read it: whether redirects key on a master."""

    @property
    def master_key(self) -> bool: ...


@dataclass
class Compiled:
    """What a device's RX path does with each entry, fixed until the next state change."""

    mode: str | None  # native | generic | None (no program: straight to the stack)
    raw: IntArray  # the program's return code per entry
    act: IntArray  # effective action
    target: IntArray  # redirect target ifindex, -1 if none
    err: IntArray  # errno of a failed redirect (0 = enqueued)
    key: IntArray  # devmap key per entry (-1: ifindex redirect)
    map_name: str | None
    broadcast: int  # BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS flags, 0 = unicast
    fast: BoolArray  # tun/tap: the frame takes the fast path (Tun.fast_path)
    master: str | None  # the bond whose xdp_master_redirect rewrites XDP_TX
    tx_slave: IntArray  # XDP_TX: TX_HERE, TX_ABORT, TX_RR or the ifindex of another slave
    tx_err: IntArray  # errno of the master redirect's __xdp_enqueue checks
    cost: FloatArray  # ns per frame on the polling CPU (without poll and flush costs)
    bq_class: IntArray  # the bulk queue a frame joins: target ifindex, RR_CLASS, or -1
    obj: ObjEval | None = None  # a real program: its per-entry run (``bpf_eval``)
    out: IntArray | None = None  # the entry of the frame the program leaves (None: unchanged)
    derived: dict[str, Any] = field(default_factory=dict)  # columns read from these, kept

    def column(self, name: str, f: Callable[[Compiled], npt.NDArray[Any]]) -> Any:
        """The per-entry column ``f`` reads from this compile, made once."""
        hit = self.derived.get(name)
        if hit is None:
            hit = self.derived[name] = f(self)
        return hit

    def __deepcopy__(self, memo: dict[int, Any]) -> Compiled:
        """A copy of the state shares the per-entry columns (nothing changes them after the
        compile); a real program's run goes with the copy's program, whose maps are state."""
        other = copy.copy(self)
        memo[id(self)] = other
        if self.obj is not None:
            other.obj = copy.deepcopy(self.obj, memo)
        return other


def make_context(
    world: Host, dev: NetDev | None, prog: Program, egress: NetDev | None = None
) -> XdpContext:
    """The rows ``prog`` runs on when attached to ``dev`` (or, for a devmap egress program,
    run on frames leaving ``egress``): every entry of every source."""
    e = world.entries

    def lookup(name: str, key: int) -> int | None:
        xm = world.xskmaps.get(name)
        if xm is not None:  # __xsk_map_lookup_elem: the socket at the key
            sock = xm.lookup(key)
            xs = world.xsks.get(sock) if sock is not None else None
            return XSK_TARGET - xs.index if xs is not None else None
        cm = world.cpumaps.get(name)
        if cm is not None:  # __cpu_map_lookup_elem: the entry's CPU (the key)
            return CPU_TARGET - key if cm.lookup(key) is not None else None
        m = world.maps.get(name)
        entry = m.lookup(key) if m is not None else None
        if entry is None:
            return None
        target = world.devices.get(entry.dev)
        return target.ifindex if target is not None else None

    return XdpContext(
        src_mac=e.src_mac,
        dst_mac=e.dst_mac,
        ethertype=e.ethertype,
        src_ip=e.src_ip,
        dst_ip=e.dst_ip,
        proto=e.proto,
        src_port=e.src_port,
        dst_port=e.dst_port,
        size=e.size,
        ingress_ifindex=dev.ifindex if dev is not None else 0,
        params=prog.param_map,
        lookup_map=lookup,
        egress_ifindex=egress.ifindex if egress is not None else 0,
        rx_queues=(lambda: rx_queues(dev, e)) if dev is not None and egress is None else None,
    )


def master_of(dp: FilterCore, dev: NetDev) -> Bond | None:
    """The bond whose ``xdp_master_redirect`` takes this slave's XDP_TX: the static key
    ``bpf_master_redirect_enabled_key`` is on while any bond has a program, and then every
    bond slave's XDP_TX is rewritten (``bpf_prog_run_xdp``)."""
    if dev.master is None or not dp.master_key:
        return None
    bond = dp.world.devices.get(dev.master)
    return bond if isinstance(bond, Bond) else None


def enqueue_errors(
    dp: FilterCore, tgt_ifindex: IntArray, mode: str, size: IntArray | None = None
) -> IntArray:
    """``__xdp_do_redirect_frame`` / ``__xdp_enqueue`` checks in the kernel's order: no such
    ifindex -> EINVAL; target lacks NDO_XMIT -> EOPNOTSUPP (native only); not IFF_UP ->
    ENETDOWN; frame longer than mtu + ETH_HLEN + VLAN_HLEN -> EMSGSIZE (``xdp_ok_fwd_dev``).
    ``size``: each frame's length after the program (default: the entry's)."""
    w = dp.world
    sizes = w.entries.size if size is None else size

    def check(ifindex: int) -> int:  # 0: enqueued unless too long
        tgt = w.by_ifindex.get(ifindex)
        if tgt is None:
            return Errno.EINVAL
        if mode == MODE_DRV and not tgt.ndo_xmit_ready(dp):
            return Errno.EOPNOTSUPP
        return 0 if tgt.admin_up else Errno.ENETDOWN

    def too_long(ifindex: int) -> BoolArray:
        over: BoolArray = sizes > max_fwd_len(w.by_ifindex[ifindex].mtu)
        return over

    n = len(tgt_ifindex)
    if once(tgt_ifindex):  # one target: one check, one column
        one = int(tgt_ifindex[0])
        if one < 0:
            return filled(n, 0, np.int64)
        if check(one):
            return filled(n, check(one), np.int64)
        return compact(np.where(too_long(one), np.int64(Errno.EMSGSIZE), np.int64(0)))
    err = np.zeros(n, dtype=np.int64)
    for ifindex in np.unique(tgt_ifindex[tgt_ifindex >= 0]):
        rows = tgt_ifindex == ifindex
        errno = check(int(ifindex))
        if errno:
            err[rows] = errno
        else:
            err[rows & too_long(int(ifindex))] = Errno.EMSGSIZE
    return err


def compile_device(dp: FilterCore, dev: NetDev) -> Compiled:
    """Run ``dev``'s program over every entry and resolve what follows from each verdict."""
    w = dp.world
    e = w.entries
    n = len(e)
    minus: IntArray = filled(n, -1, np.int64)
    zeros: IntArray = filled(n, 0, np.int64)
    att = dev.prog
    fast: BoolArray = filled(n, False, np.bool_)
    if att is None:
        full: IntArray = filled(n, XDP_PASS, np.int64)
        d = dev.costs()
        cost: FloatArray = filled(n, d.rx_frame + d.build_skb + costs.STACK_RX, np.float64)
        return Compiled(
            None, full, full, minus, zeros, minus, None, 0, fast, None, minus, zeros, cost, minus
        )
    ev: ObjEval | None = None
    out: IntArray | None = None
    if att.prog.obj is not None:  # a real object: run on every entry's bytes
        ev = evaluate(dp, att.prog, dev, None)
        raw, redirect_ifindex, redirect_key = ev.raw, ev.target, ev.key
        map_name, broadcast = ev.map_name, ev.broadcast
        out = np.where(ev.out < 0, np.arange(n), ev.out)  # (sizes, hashes: until it is added)
    else:
        ctx = make_context(w, dev, att.prog)
        raw = compact(att.prog.run(ctx))
        redirect_ifindex, redirect_key = compact(ctx.redirect_ifindex), compact(ctx.redirect_key)
        map_name, broadcast = ctx.redirect_map_name, ctx.redirect_broadcast_flags
        del ctx  # each column is kept as it is made, stored once where it holds one value
    valid = (raw >= XDP_ABORTED) & (raw <= XDP_REDIRECT)
    act = raw if valid.all() else compact(np.where(valid, raw, XDP_ABORTED))
    target = _where(act == XDP_REDIRECT, redirect_ifindex, minus)
    if isinstance(dev, Tun) and att.mode == MODE_DRV:
        fast = compact(dev.fast_path(e.size, e.gso))
    out_size = e.size[out] if out is not None else None
    err = zeros if broadcast else enqueue_errors(dp, target, att.mode, out_size)
    if (target <= XSK_TARGET).any():  # xsk_rcv_check
        sizes = e.size if out_size is None else out_size
        queue = rx_queues(dev, e)
        err = _where(
            target <= XSK_TARGET, xsk_errors(w.xsk_by_index, dev.name, target, queue, sizes), err
        )
    bond = master_of(dp, dev)
    tx_slave: IntArray = filled(n, TX_HERE, np.int64)
    tx_err = zeros
    if bond is not None:
        tx_slave, tx_err = _master_redirect(dp, dev, bond, att.mode, out)
    c = Compiled(
        att.mode,
        raw,
        act,
        target,
        err,
        redirect_key,
        map_name,
        broadcast,
        fast,
        bond.name if bond is not None else None,
        tx_slave,
        tx_err,
        filled(n, 0.0, np.float64),
        minus,
    )
    c.bq_class = compact(_bq_class(c))
    c.cost = compact(_cost(dp, dev, c, att.prog))
    if ev is not None:
        c.obj, c.out = ev, ev.out
        c.cost = c.cost + ev.insns * costs.BPF_INSN_NS
    shared = c.raw is c.act  # every verdict valid: one column
    # (a real program's frames are also pinned to the entries of their outcomes, which are
    # read here: ``bpf_run``)
    reach = reached(w, dev) if ev is None else None
    for name in _COLUMNS:
        setattr(c, name, compact(_only(getattr(c, name), reach)))
    c.act = narrow(c.act)
    if shared:
        c.raw = c.act
    return c


# The per-entry columns of a compile, stored without memory where they hold one value.
_COLUMNS = ("raw", "act", "target", "err", "key", "fast", "tx_slave", "tx_err", "cost", "bq_class")


def reached(world: Host, dev: NetDev) -> BoolArray | None:
    """The entries whose frames ``dev``'s receive path takes, where that is not every entry: a
    port receives what its wire brings, its sources' frames, and nothing else (a redirect or
    XDP_TX toward it goes out of its TX rings; no path ends in a NIC's RX queues). None: any
    entry may. (A real program's run also reads the entries its outcomes are pinned to.)"""
    if not isinstance(dev, Nic):
        return None
    mine = np.zeros(len(world.entries), dtype=np.bool_)
    for src in world.sources:
        if src.spec.to == dev.name:
            mine[src.offset : src.offset + len(src.table)] = True
    return None if mine.all() else mine


def _only(col: A, reach: BoolArray | None) -> A:
    r"""``col`` at the entries ``reach``\ed, and elsewhere (never read) the first reached
    entry's value: a column that holds one value wherever it is read is stored once."""
    if reach is None or len(col) <= 1 or once(col):
        return col
    first = int(np.argmax(reach)) if reach.any() else 0
    out: A = np.where(reach, col, col[first])  # type: ignore[assignment]
    return out


def _where(cond: BoolArray, a: IntArray, b: IntArray) -> IntArray:
    """``np.where`` over compiled columns, kept as ``columns.compact`` keeps a column."""
    if cond.all():
        return a
    if not cond.any():
        return b
    return compact(np.where(cond, a, b))


def _master_redirect(
    dp: FilterCore, dev: NetDev, bond: Bond, mode: str, out: IntArray | None = None
) -> tuple[IntArray, IntArray]:
    """``xdp_master_redirect`` per entry: bond not up -> XDP_ABORTED; the bond's slave is the
    receiving one, or none -> XDP_TX here; another slave -> a redirect to its ifindex, as
    ``bpf_redirect(slave, 0)`` would be, with ``__xdp_enqueue``'s checks. The bond hashes the
    frame the program left (``out``: its entry)."""
    w = dp.world
    n = len(w.entries)
    if not bond.admin_up:
        return np.full(n, TX_ABORT, dtype=np.int64), np.zeros(n, dtype=np.int64)
    headers = w.entries.headers if out is None else w.entries.headers.take(out)
    idx = BondLogic(bond, w.devices).xdp_slave_of_entry(headers)
    if idx is None:
        return np.full(n, TX_RR, dtype=np.int64), np.zeros(n, dtype=np.int64)
    ifindex = np.array([w.devices[s].ifindex for s in bond.slaves] + [-1], dtype=np.int64)
    slave = ifindex[idx]  # idx -1 picks the trailing -1: no slave
    slave = np.where((slave < 0) | (slave == dev.ifindex), TX_HERE, slave)
    return slave, enqueue_errors(dp, slave, mode, None if out is None else w.entries.size[out])


def _bq_class(c: Compiled) -> IntArray:
    """The bulk queue each entry's frame joins (native redirects only)."""
    if c.mode != MODE_DRV:
        return np.full(len(c.act), -1, dtype=np.int64)
    red = (c.act == XDP_REDIRECT) & (c.err == 0)
    cls = np.where(red & (c.broadcast == 0), c.target, -1)
    if c.broadcast:
        cls = np.where(red, BROADCAST, cls)  # every broadcast frame joins every target's queue
    tx = c.act == XDP_TX
    cls = np.where(tx & (c.tx_slave >= 0) & (c.tx_err == 0), c.tx_slave, cls)
    out: IntArray = np.where(tx & (c.tx_slave == TX_RR), RR_CLASS, cls)
    return out


def _cost(dp: FilterCore, dev: NetDev, c: Compiled, prog: Program) -> FloatArray:
    """CPU ns per frame for the CPU that polls ``dev``: running the program and acting on
    its verdict. Poll and bulk-flush costs are charged per poll and per flush."""
    native = _cost_mode(dp, dev, c, prog, generic=c.mode == MODE_SKB)
    if isinstance(dev, Tun) and c.mode == MODE_DRV:
        generic = _cost_mode(dp, dev, c, prog, generic=True)
        return np.where(c.fast, native + costs.TUN_FAST, generic)
    return native


def _cost_mode(
    dp: FilterCore, dev: NetDev, c: Compiled, prog: Program, generic: bool
) -> FloatArray:
    d = dev.costs()
    n = len(c.act)
    cost = np.full(n, d.rx_frame + prog.cost_ns + (d.generic_rx if generic else 0.0))
    act = c.act
    cost[act == XDP_PASS] += (0.0 if generic else d.build_skb) + costs.STACK_RX
    tx = act == XDP_TX
    if generic:
        cost[tx] += costs.GENERIC_TX
    else:
        cost[tx] += d.tx + (dev.lock_cost(dp.world.nr_cpus) if isinstance(dev, Nic) else 0.0)
    if c.master is not None:
        cost[tx] += costs.MASTER_REDIRECT
        for ifindex in np.unique(c.tx_slave[tx & (c.tx_slave >= 0)]):
            rows = tx & (c.tx_slave == ifindex)
            tgt = dp.world.by_ifindex[int(ifindex)]
            cost[rows] += xmit_cost(dp, dev, tgt, generic, None) - d.tx
    red = act == XDP_REDIRECT
    cost[red & (c.err != 0)] += d.redirect
    ok = red & (c.err == 0)
    if not np.any(ok):
        return cost
    cpu_red = ok & (c.target <= CPU_TARGET) & (c.target > XSK_TARGET)
    if cpu_red.any():  # cpu_map_enqueue, and a share of the bulk's flush
        cost[cpu_red] += costs.CPUMAP_ENQUEUE
        ok = ok & ~cpu_red
    xsk_red = ok & (c.target <= XSK_TARGET)
    if xsk_red.any():  # xsk_rcv: the copy into the UMEM chunk, or the zero-copy hand-over
        cost[xsk_red] += xsk_cost(dp.world.xsk_by_index, c.target, dp.world.entries.size)[xsk_red]
        ok = ok & ~xsk_red
    dmap = dp.world.maps.get(c.map_name) if c.map_name else None
    if c.broadcast and dmap is not None:
        for _key, bentry in dmap.walk():  # one clone (xdpf_clone) and one enqueue per target
            tgt_b = dp.world.devices.get(bentry.dev)
            if tgt_b is not None and tgt_b is not dev:
                cost[ok] += costs.CLONE + xmit_cost(dp, dev, tgt_b, generic, bentry.egress)
        return cost
    for ifindex in _distinct(c.target, ok):
        tgt = dp.world.by_ifindex[int(ifindex)]
        for key in _distinct(c.key, ok & (c.target == ifindex)):
            rows = ok & (c.target == ifindex) & (c.key == key)
            entry = dmap.lookup(int(key)) if dmap is not None and key >= 0 else None
            cost[rows] += xmit_cost(dp, dev, tgt, generic, entry.egress if entry else None)
    return cost


def _distinct(col: IntArray, rows: BoolArray) -> IntArray:
    """The values ``col`` holds at ``rows``, without copying a column of one value (stored
    once: ``columns.compact``) out to every entry."""
    if once(col):
        return col[:1] if rows.any() else col[:0]
    return np.unique(col[rows])


def xmit_cost(
    dp: FilterCore, src: NetDev, tgt: NetDev, generic: bool, egress: Program | None
) -> float:
    """One redirected frame from enqueue to the target's ring: the bulk queue,
    ``ndo_xdp_xmit`` and the devmap egress program where there is one (on the bulk at flush
    since the seed's patch, per frame at enqueue before it). The flush itself is charged per
    flush."""
    d = src.costs()
    td = tgt.costs()
    w = dp.world
    if generic:
        out = costs.GENERIC_REDIRECT + td.skb_xmit
    else:
        lock = tgt.lock_cost(w.nr_cpus) if isinstance(tgt, Nic) else 0.0
        out = d.redirect + td.xmit_frame + lock
        if w.devmap_egress == "enqueue":
            out += costs.PRE_PATCH_DEVMAP
    if egress is not None:
        stage = costs.EGRESS_ENQUEUE if w.devmap_egress == "enqueue" else costs.EGRESS_FLUSH
        out += egress.cost_ns + (costs.EGRESS_SKB if generic else stage)
    return out
