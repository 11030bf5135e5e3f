"""The helpers XDP programs call, vectorised over a group of packets.

Each follows its ``BPF_CALL_x`` in ``net/core/filter.c``, ``kernel/bpf/helpers.c`` or
``kernel/trace/bpf_trace.c``: same arguments, same return values (negative errno on failure).
Time, randomness and the CPU come from the caller: ``ktime_get_ns`` returns the batch's time,
``get_prandom_u32`` a value derived from (seed, packet, call number) so a batch gives what
running its packets one by one gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from xdptui.bpf import access
from xdptui.bpf import memory as mem
from xdptui.bpf.batch import READ, WRITE, Batch, Group, Record
from xdptui.bpf.maps import DEVMAP_TYPES, HOST_TYPES, BpfMap, MapType
from xdptui.model.errors import Errno, KernelError

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Helper = Callable[[Batch, Group], None]

XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = 0, 1, 2, 3, 4
BPF_F_BROADCAST = 1 << 3
BPF_F_EXCLUDE_INGRESS = 1 << 4
BPF_F_CTXLEN_MASK = 0xFFFFF << 32
EFAULT = 14


def _neg(errno: int, n: int) -> U64:
    return np.full(n, -errno, dtype=np.int64).view(np.uint64)


def _s32(a: U64) -> I64:
    return (a & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)


def _map_index(b: Batch, g: Group, reg: int) -> int:
    v = g.r[reg]
    if len(v) == 0:
        return 0
    if not (v == v[0]).all():
        raise KernelError(Errno.EINVAL, "R1 must be a constant map pointer")
    mi = int(v[0]) - mem.MAPPTR_BASE
    if not 0 <= mi < len(b.maps):
        raise KernelError(Errno.EACCES, f"R{reg} type=scalar expected=map_ptr")
    return mi


def _mem_rows(b: Batch, g: Group, reg: int, size: int | I64) -> npt.NDArray[np.uint8]:
    """``size`` bytes from the memory each row's register points to."""
    addr = g.r[reg]
    if isinstance(size, int):
        out = np.zeros((len(g), size), dtype=np.uint8)
        for region, sel in access.split_regions(addr):
            r = g.idx if sel is None else g.idx[sel]
            off = ((addr if sel is None else addr[sel]) & np.uint64(mem.OFFSET_MASK)).astype(
                np.int64
            )
            data = access.read_bytes(b, region, r, off, size)
            if sel is None:
                return data
            out[sel] = data
        return out
    raise TypeError(size)


def map_lookup_elem(b: Batch, g: Group) -> None:
    mi = _map_index(b, g, 1)
    m = b.maps[mi]
    if m.map_type in (MapType.PERF_EVENT_ARRAY, MapType.RINGBUF):
        raise KernelError(
            Errno.EINVAL, f"cannot pass map_type {m.map_type} into func bpf_map_lookup_elem#1"
        )
    keys = _mem_rows(b, g, 2, m.key_size)
    if m.is_hash:
        b.log_keys(mi, keys, g.idx, READ)
    if m.is_lru:  # a lookup refreshes the element: it changes what an eviction takes
        b.inserts.setdefault(mi, []).extend(g.idx.tolist())
    off = m.slot_offsets(keys, b.cpu)
    found = off >= 0
    if m.is_of_maps:
        g.r[0] = _inner_handles(b, g, m, off)
        return
    g.r[0] = np.where(found, np.uint64(m.region << 32) + off.astype(np.uint64), np.uint64(0))


def _inner_handles(b: Batch, g: Group, m: BpfMap, off: I64) -> U64:
    """``array_of_map_lookup_elem`` / ``htab_of_map_lookup_elem``: the inner map in the slot
    (the map handle of the object's map with that id), or NULL."""
    found = off >= 0
    out = np.zeros(len(g), dtype=np.uint64)
    if not found.any():
        return out
    b.log_arena(m.region, off[found], 4, g.idx[found], READ)
    where = off[found][:, None] + np.arange(4)
    ids = m.arena[where].copy().view("<u4").reshape(-1)
    index = {x.map_id: i for i, x in enumerate(b.maps) if x.map_id}
    handles = np.array(
        [mem.map_handle(index[i]) if i in index else 0 for i in ids.tolist()], dtype=np.uint64
    )
    out[found] = handles
    return out


def map_update_elem(b: Batch, g: Group) -> None:
    mi = _map_index(b, g, 1)
    m = b.maps[mi]
    if m.map_type in DEVMAP_TYPES or m.map_type in (MapType.PERF_EVENT_ARRAY, MapType.RINGBUF):
        raise KernelError(
            Errno.EINVAL, f"cannot pass map_type {m.map_type} into func bpf_map_update_elem#2"
        )
    keys = _mem_rows(b, g, 2, m.key_size)
    values = _mem_rows(b, g, 3, m.value_size)
    flags = g.r[4].astype(np.int64)
    b.before_write(mi)
    before = set(m.slots) if m.is_hash else set()
    free_before = len(m.free)
    ret = m.prog_update(keys, values, flags, b.cpu)
    g.r[0] = ret.view(np.uint64)
    _log_update(b, mi, keys, g.idx, ret, before, free_before)


def _log_update(
    b: Batch,
    mi: int,
    keys: npt.NDArray[np.uint8],
    rows: I64,
    ret: I64,
    before: set[bytes],
    free_before: int,
) -> None:
    m = b.maps[mi]
    if m.is_hash:
        b.log_keys(mi, keys, rows, WRITE)
        new = [int(rows[i]) for i in range(len(rows)) if keys[i].tobytes() not in before]
        b.inserts.setdefault(mi, []).extend(new)
        if (ret == -Errno.E2BIG).any() or (m.is_lru and free_before < len(new)):
            b.hit_full.add(mi)
        ok = ret == 0
        if ok.any():
            off = m.slot_offsets(keys[ok], b.cpu)
            for k in range(0, m.value_size, 8):
                b.log_arena(m.region, off + k, 1, rows[ok], WRITE)
    else:
        ok = ret == 0
        idx = np.zeros((int(ok.sum()), 8), dtype=np.uint8)
        idx[:, : m.key_size] = keys[ok][:, :8]
        slot = idx.view("<u8").reshape(-1).astype(np.int64)
        cpu_off = (b.cpu % m.ncpus) * m.value_size if m.is_percpu else 0
        for k in range(0, m.value_size, 8):
            b.log_arena(m.region, slot * m.stride + cpu_off + k, 1, rows[ok], WRITE)


def map_delete_elem(b: Batch, g: Group) -> None:
    mi = _map_index(b, g, 1)
    m = b.maps[mi]
    if m.map_type in DEVMAP_TYPES:
        raise KernelError(
            Errno.EINVAL, f"cannot pass map_type {m.map_type} into func bpf_map_delete_elem#3"
        )
    keys = _mem_rows(b, g, 2, m.key_size)
    b.before_write(mi)
    ret = m.prog_delete(keys)
    if m.is_hash:
        b.log_keys(mi, keys, g.idx, WRITE)
        # A delete frees room: with the map full, it decides whether a later insert fits.
        b.inserts.setdefault(mi, []).extend(g.idx[ret == 0].tolist())
    g.r[0] = ret.view(np.uint64)


def ktime_get_ns(b: Batch, g: Group) -> None:
    g.r[0] = np.full(len(g), b.time_ns, dtype=np.uint64)


def get_prandom_u32(b: Batch, g: Group) -> None:
    """``bpf_user_rnd_u32``: here a hash of (seed, packet, how many calls it made before)."""
    calls = b.rnd_calls[g.idx]
    b.rnd_calls[g.idx] += 1
    x = (
        np.uint64((b.seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        ^ ((g.idx + b.first).astype(np.uint64) << np.uint64(20))
        ^ calls.astype(np.uint64)
    )
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xFF51AFD7ED558CCD)
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xC4CEB9FE1A85EC53)
        x ^= x >> np.uint64(33)
    g.r[0] = x & np.uint64(0xFFFFFFFF)


def get_smp_processor_id(b: Batch, g: Group) -> None:
    g.r[0] = np.full(len(g), b.cpu, dtype=np.uint64)


def redirect(b: Batch, g: Group) -> None:
    """``bpf_xdp_redirect``: flags must be 0, else XDP_ABORTED."""
    flags = g.r[2]
    ok = flags == 0
    rows = g.idx[ok]
    b.redirect_ifindex[rows] = (g.r[1][ok] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    b.redirect_map[rows] = -1
    b.redirect_key[rows] = -1
    b.redirect_flags[rows] = 0
    g.r[0] = np.where(ok, np.uint64(XDP_REDIRECT), np.uint64(XDP_ABORTED))


def redirect_map(b: Batch, g: Group) -> None:
    """``__bpf_xdp_redirect_map``: the low two flag bits are the action when the key is not
    in the map; flags beyond those and BPF_F_BROADCAST / EXCLUDE_INGRESS give XDP_ABORTED."""
    mi = _map_index(b, g, 1)
    m = b.maps[mi]
    if m.map_type not in HOST_TYPES:
        kind = MapType(m.map_type).name if m.map_type in {t.value for t in MapType} else m.map_type
        raise KernelError(
            Errno.EINVAL, f"bpf_redirect_map into BPF_MAP_TYPE_{kind} is not modelled"
        )
    flags = g.r[3]
    action_mask = np.uint64(3)
    allowed = action_mask | np.uint64(BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS)
    if m.map_type in (MapType.CPUMAP, MapType.XSKMAP):  # cpu_map_redirect, xsk_map_redirect:
        # no broadcast (their flag mask is 0)
        allowed = action_mask
    bad = (flags & ~allowed) != 0
    key = g.r[2] & np.uint64(0xFFFFFFFF)
    keys = key.astype("<u4").view(np.uint8).reshape(-1, 4)
    if m.key_size != 4:
        keys = np.zeros((len(g), m.key_size), dtype=np.uint8)
        keys[:, : min(4, m.key_size)] = (
            key.astype("<u4").view(np.uint8).reshape(-1, 4)[:, : m.key_size]
        )
    off = m.slot_offsets(keys, b.cpu)
    if m.is_hash:
        b.log_keys(mi, keys, g.idx, READ)
    found = (off >= 0) | ((flags & np.uint64(BPF_F_BROADCAST)) != 0)
    ret = np.where(found, np.uint64(XDP_REDIRECT), flags & action_mask)
    ret = np.where(bad, np.uint64(XDP_ABORTED), ret)
    hit = found & ~bad
    rows = g.idx[hit]
    b.redirect_map[rows] = mi
    b.redirect_key[rows] = key[hit].astype(np.int64)
    b.redirect_flags[rows] = (
        flags[hit] & np.uint64(BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS)
    ).astype(np.int64)
    b.redirect_ifindex[rows] = -1
    miss = g.idx[~found & ~bad]
    b.redirect_map[miss] = -1
    b.redirect_ifindex[miss] = -1
    g.r[0] = ret


def xdp_adjust_head(b: Batch, g: Group) -> None:
    rows = g.idx
    delta = _s32(g.r[2])
    meta_len = b.data_off[rows] - b.meta_off[rows]
    data = b.data_off[rows] + delta
    ok = (data >= mem.XDP_FRAME_SIZE + meta_len) & (data <= b.end_off[rows] - mem.ETH_HLEN)
    r, d, ml = rows[ok], delta[ok], meta_len[ok]
    moved = ml > 0
    for i in np.flatnonzero(moved):
        row, src = int(r[i]), int(b.meta_off[r[i]])
        base = row * b.width
        buf = b.writable()
        chunk = buf[base + src : base + src + int(ml[i])].copy()
        buf[base + src + int(d[i]) : base + src + int(d[i]) + int(ml[i])] = chunk
    b.meta_off[r] += d
    b.data_off[r] += d
    g.r[0] = np.where(ok, np.uint64(0), _neg(Errno.EINVAL, len(g)))


def xdp_adjust_meta(b: Batch, g: Group) -> None:
    rows = g.idx
    delta = _s32(g.r[2])
    meta = b.meta_off[rows] + delta
    metalen = b.data_off[rows] - meta
    inval = (meta < mem.XDP_FRAME_SIZE) | (meta > b.data_off[rows])
    acces = ~inval & (((metalen & 3) != 0) | (metalen > mem.XDP_META_MAX))
    ok = ~inval & ~acces
    b.meta_off[rows[ok]] = meta[ok]
    ret = np.where(
        inval, _neg(Errno.EINVAL, len(g)), np.where(acces, _neg(Errno.EACCES, len(g)), np.uint64(0))
    )
    g.r[0] = ret


def xdp_adjust_tail(b: Batch, g: Group) -> None:
    rows = g.idx
    delta = _s32(g.r[2])
    end = b.end_off[rows] + delta
    ok = (end <= mem.DATA_HARD_END) & (end >= b.data_off[rows] + mem.ETH_HLEN)
    grow = ok & (delta > 0)
    if grow.any():
        b.ensure_width(int(end[grow].max()))
    for i in np.flatnonzero(grow):
        base = int(rows[i]) * b.width
        b.writable()[base + int(b.end_off[rows[i]]) : base + int(end[i])] = 0
    b.end_off[rows[ok]] = end[ok]
    g.r[0] = np.where(ok, np.uint64(0), _neg(Errno.EINVAL, len(g)))


def check_mtu(b: Batch, g: Group) -> None:
    """``bpf_xdp_check_mtu(ctx, ifindex, &mtu_len, len_diff, flags)``: flags must be 0
    (EINVAL); ifindex 0 is the receiving device, another must exist (ENODEV); the frame
    (or ``*mtu_len`` + the device's L2 header, when set) plus ``len_diff`` against the MTU
    plus that header: BPF_MTU_CHK_RET_FRAG_NEEDED (1) over it, else 0; ``*mtu_len`` becomes
    the device's MTU (an error leaves it as it was, as Linux 6.18 does)."""
    n = len(g)
    ret = np.zeros(n, dtype=np.uint64)
    given = _mem_rows(b, g, 3, 4).copy().view("<u4").reshape(-1).astype(np.int64)
    mtu_out = given.astype(np.uint64)
    for i in range(n):
        row = int(g.idx[i])
        flags = int(g.r[5][i])
        ifindex = int(g.r[2][i]) & 0xFFFFFFFF
        if flags:
            ret[i] = np.int64(-Errno.EINVAL).astype(np.uint64)
            continue
        dev = b.devices.get(ifindex or int(b.ingress_ifindex[row]))
        if dev is None:
            ret[i] = np.int64(-Errno.ENODEV).astype(np.uint64)
            continue
        mtu, hlen = dev
        xdp_len = int(b.end_off[row] - b.data_off[row])
        if given[i]:
            xdp_len = int(given[i]) + hlen
        xdp_len += int(_s32(g.r[4][i : i + 1])[0])
        ret[i] = 1 if xdp_len > mtu + hlen else 0
        mtu_out[i] = mtu
    data = mtu_out.astype("<u4").view(np.uint8).reshape(-1, 4)
    for region, sel in access.split_regions(g.r[3]):
        rows = g.idx if sel is None else g.idx[sel]
        off = ((g.r[3] if sel is None else g.r[3][sel]) & np.uint64(mem.OFFSET_MASK)).astype(
            np.int64
        )
        access.write_bytes(b, region, rows, off, data if sel is None else data[sel])
    g.r[0] = ret


def xdp_get_buff_len(b: Batch, g: Group) -> None:
    g.r[0] = (b.end_off[g.idx] - b.data_off[g.idx]).astype(np.uint64)


def _load_store_args(b: Batch, g: Group) -> tuple[I64, I64, npt.NDArray[np.bool_], U64]:
    off = (g.r[2] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    length = (g.r[4] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    size = b.end_off[g.idx] - b.data_off[g.idx]
    fault = (off > 0xFFFF) | (length > 0xFFFF)
    inval = ~fault & (off + length > size)
    ret = np.where(
        fault, _neg(EFAULT, len(g)), np.where(inval, _neg(Errno.EINVAL, len(g)), np.uint64(0))
    )
    return off, length, ~fault & ~inval, ret


def xdp_load_bytes(b: Batch, g: Group) -> None:
    """``bpf_xdp_load_bytes(ctx, offset, buf, len)`` (linear data only)."""
    off, length, ok, ret = _load_store_args(b, g)
    for ln in np.unique(length[ok]):
        sel = ok & (length == ln)
        rows = g.idx[sel]
        data = access.read_bytes(b, mem.PKT_REGION, rows, b.data_off[rows] + off[sel], int(ln))
        dst = g.r[3][sel]
        for region, rsel in access.split_regions(dst):
            rr = rows if rsel is None else rows[rsel]
            doff = ((dst if rsel is None else dst[rsel]) & np.uint64(mem.OFFSET_MASK)).astype(
                np.int64
            )
            access.write_bytes(b, region, rr, doff, data if rsel is None else data[rsel])
    g.r[0] = ret


def xdp_store_bytes(b: Batch, g: Group) -> None:
    """``bpf_xdp_store_bytes(ctx, offset, buf, len)`` (linear data only)."""
    off, length, ok, ret = _load_store_args(b, g)
    for ln in np.unique(length[ok]):
        sel = ok & (length == ln)
        rows = g.idx[sel]
        sub = g.take(sel)
        data = _mem_rows(b, sub, 3, int(ln))
        access.write_bytes(b, mem.PKT_REGION, rows, b.data_off[rows] + off[sel], data)
    g.r[0] = ret


def _csum_partial(data: npt.NDArray[np.uint8], seed: U64) -> U64:
    """x86-64 ``csum_partial()``: 64-bit little-endian words (the tail zero-padded) added with
    end-around carry onto the seed, folded to 32 bits."""
    n = data.shape[1]
    pad = (-n) % 8
    if pad:
        data = np.concatenate([data, np.zeros((len(data), pad), dtype=np.uint8)], axis=1)
    words = np.ascontiguousarray(data).view("<u4").astype(np.uint64)
    # Summing 32-bit halves then folding gives the same end-around-carry sum as 64-bit adds.
    total = seed.astype(np.uint64) + words.sum(axis=1, dtype=np.uint64)
    for _ in range(3):
        total = (total & np.uint64(0xFFFFFFFF)) + (total >> np.uint64(32))
    out: U64 = total
    return out


def _csum_add(a: U64, b: U64) -> U64:
    s = a + b
    return (s & np.uint64(0xFFFFFFFF)) + (s >> np.uint64(32))


def csum_diff(b: Batch, g: Group) -> None:
    """``bpf_csum_diff(from, from_size, to, to_size, seed)`` as Linux 6.13+ has it:
    ``csum_partial(to) - csum_partial(from)`` in ones' complement (``~csum_partial(from,
    ~seed)`` with no ``to``, the seed with neither), folded to 16 bits by
    ``csum_from32to16()``."""
    fs = (g.r[2] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    ts = (g.r[4] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    m32 = np.uint64(0xFFFFFFFF)
    out = np.zeros(len(g), dtype=np.uint64)
    seed = g.r[5] & m32
    for f, t in {(int(a), int(c)) for a, c in zip(fs, ts, strict=True)}:
        sel = (fs == f) & (ts == t)
        sub = g.take(sel)
        sd = seed[sel]
        if f and t:
            to = _csum_partial(_mem_rows(b, sub, 3, t), sd)
            frm = _csum_partial(_mem_rows(b, sub, 1, f), np.zeros_like(sd))
            ret = _csum_add(to, ~frm & m32)
        elif t:
            ret = _csum_partial(_mem_rows(b, sub, 3, t), sd)
        elif f:
            ret = ~_csum_partial(_mem_rows(b, sub, 1, f), ~sd & m32) & m32
        else:
            ret = sd
        ret = (ret + (((ret >> np.uint64(16)) | (ret << np.uint64(16))) & m32)) & m32
        out[sel] = ret >> np.uint64(16)
    g.r[0] = out


def _emit(
    b: Batch, rows: I64, kind: str, data: npt.NDArray[np.uint8], texts: list[str] | None = None
) -> None:
    for i, row in enumerate(rows.tolist()):
        rec = Record(b.first + row, kind, data[i].tobytes(), texts[i] if texts else "")
        b.records.append((row, len(b.records), rec))


def perf_event_output(b: Batch, g: Group) -> None:
    """``bpf_xdp_event_output``: the sample, then ``flags >> 32`` bytes of the packet."""
    mi = _map_index(b, g, 2)
    size = (g.r[5] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    ctxlen = ((g.r[3] & np.uint64(BPF_F_CTXLEN_MASK)) >> np.uint64(32)).astype(np.int64)
    out = np.zeros(len(g), dtype=np.uint64)
    for s, c in {(int(a), int(x)) for a, x in zip(size, ctxlen, strict=True)}:
        sel = (size == s) & (ctxlen == c)
        sub = g.take(sel)
        data = _mem_rows(b, sub, 4, s) if s else np.zeros((len(sub), 0), dtype=np.uint8)
        if c:
            too_long = c > (b.end_off[sub.idx] - b.data_off[sub.idx])
            if too_long.any():
                out[sel] = _neg(EFAULT, int(sel.sum()))
                continue
            pkt = access.read_bytes(b, mem.PKT_REGION, sub.idx, b.data_off[sub.idx], c)
            data = np.concatenate([data, pkt], axis=1)
        _emit(b, sub.idx, f"perf_event_output:{b.maps[mi].name}", data)
    g.r[0] = out


def ringbuf_output(b: Batch, g: Group) -> None:
    mi = _map_index(b, g, 1)
    size = (g.r[3] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    for s in np.unique(size):
        sel = size == s
        sub = g.take(sel)
        data = _mem_rows(b, sub, 2, int(s))
        _emit(b, sub.idx, f"ringbuf_output:{b.maps[mi].name}", data)
    g.r[0] = np.zeros(len(g), dtype=np.uint64)


_FMT = re.compile(rb"%([-+ #0]*\d*)(ll|l|h|hh)?([diuxXcps%])")


def trace_printk(b: Batch, g: Group) -> None:
    """``bpf_trace_printk(fmt, fmt_size, a1, a2, a3)``: the line as the trace pipe shows it
    (integer conversions only); returns its length."""
    fsize = int(g.r[2][0]) if len(g) else 0
    fmts = _mem_rows(b, g, 1, fsize) if fsize else np.zeros((len(g), 0), dtype=np.uint8)
    out = np.zeros(len(g), dtype=np.uint64)
    texts = []
    for i in range(len(g)):
        fmt = fmts[i].tobytes().split(b"\0")[0]
        args = [int(g.r[3][i]), int(g.r[4][i]), int(g.r[5][i])]
        texts.append(_format(fmt, args))
        out[i] = len(texts[-1])
    _emit(b, g.idx, "trace_printk", fmts, texts)
    g.r[0] = out


def _format(fmt: bytes, args: list[int]) -> str:
    it = iter(args)

    def one(m: re.Match[bytes]) -> bytes:
        flags, length, conv = m.group(1).decode(), m.group(2), m.group(3).decode()
        if conv == "%":
            return b"%"
        v = next(it, 0)
        bits = 64 if length in (b"l", b"ll") else 32
        v &= (1 << bits) - 1
        if conv in "di" and v >> (bits - 1):
            v -= 1 << bits
        if conv in "ps":
            return f"{v:#x}".encode()
        return (
            f"%{flags}{conv if conv != 'i' else 'd'}".encode() % v
            if conv != "c"
            else bytes([v & 0xFF])
        )

    return _FMT.sub(one, fmt).decode("utf-8", "replace")


HELPERS: dict[int, tuple[str, Helper]] = {
    1: ("bpf_map_lookup_elem", map_lookup_elem),
    2: ("bpf_map_update_elem", map_update_elem),
    3: ("bpf_map_delete_elem", map_delete_elem),
    5: ("bpf_ktime_get_ns", ktime_get_ns),
    6: ("bpf_trace_printk", trace_printk),
    7: ("bpf_get_prandom_u32", get_prandom_u32),
    8: ("bpf_get_smp_processor_id", get_smp_processor_id),
    23: ("bpf_redirect", redirect),
    25: ("bpf_perf_event_output", perf_event_output),
    28: ("bpf_csum_diff", csum_diff),
    44: ("bpf_xdp_adjust_head", xdp_adjust_head),
    51: ("bpf_redirect_map", redirect_map),
    54: ("bpf_xdp_adjust_meta", xdp_adjust_meta),
    65: ("bpf_xdp_adjust_tail", xdp_adjust_tail),
    121: ("bpf_xdp_output", perf_event_output),
    125: ("bpf_ktime_get_boot_ns", ktime_get_ns),
    130: ("bpf_ringbuf_output", ringbuf_output),
    160: ("bpf_ktime_get_coarse_ns", ktime_get_ns),
    163: ("bpf_check_mtu", check_mtu),
    188: ("bpf_xdp_get_buff_len", xdp_get_buff_len),
    189: ("bpf_xdp_load_bytes", xdp_load_bytes),
    190: ("bpf_xdp_store_bytes", xdp_store_bytes),
}
# Helpers an XDP program may call that are refused here, by name.
REFUSED: dict[int, str] = {
    12: "bpf_tail_call (tail calls)",
    69: "bpf_fib_lookup (the kernel's FIB)",
    93: "bpf_spin_lock",
    131: "bpf_ringbuf_reserve",
    164: "bpf_for_each_map_elem (callbacks)",
    181: "bpf_loop (callbacks)",
}


def helper(func_id: int) -> Helper:
    """The helper for a call's imm, or a refusal naming it (checked at load time)."""
    if func_id in HELPERS:
        return HELPERS[func_id][1]
    if func_id in REFUSED:
        raise KernelError(Errno.EINVAL, f"{REFUSED[func_id]} is not supported")
    raise KernelError(Errno.EINVAL, f"program of this type cannot use helper #{func_id}")
