"""Loads and stores through the interpreter's address space (``memory``), vectorised.

Every access is checked against the region it falls in: the packet between ``data_meta`` and
``data_end``, the stack, one map value, or a 4-byte ``struct xdp_md`` field. An access anywhere
else is refused with ``EACCES`` and the verifier's wording -- never a read of host memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.bpf import memory as mem
from xdptui.bpf.batch import ADD, FETCH, READ, WRITE, Batch, PrivateAbort
from xdptui.bpf.maps import BPF_F_RDONLY_PROG
from xdptui.model.errors import Errno, KernelError

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("<u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}
SIGNED: dict[int, np.dtype[Any]] = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4")}
SHIFT = {2: 1, 4: 2, 8: 3}


def _fail(b: Batch, row: int, what: str) -> KernelError:
    return KernelError(Errno.EACCES, f"packet {b.first + row}: {what}")


def split_regions(addr: U64) -> list[tuple[int, npt.NDArray[np.bool_] | None]]:
    """(region, selector) pairs; the selector is None when every address is in one region."""
    region = (addr >> np.uint64(32)).astype(np.int64)
    if len(region) == 0:
        return []
    r0 = int(region[0])
    if (region == r0).all():
        return [(r0, None)]
    return [(int(r), region == r) for r in np.unique(region)]


def _flat(
    b: Batch, region: int, rows: I64, off: I64, size: int, write: bool
) -> tuple[npt.NDArray[np.uint8], I64]:
    """The byte array and where each access is in it, after the bounds check: the flat index
    of its first byte, or (a stack access across two 8-byte words) of each byte, one row
    per access."""
    if region == mem.PKT_REGION:
        ok = (off >= b.meta_off[rows]) & (off + size <= b.end_off[rows])
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            rel = int(off[i] - b.data_off[rows[i]])
            raise _fail(
                b,
                int(rows[i]),
                f"invalid access to packet, off={rel} size={size}, "
                f"{int(b.end_off[rows[i]] - b.data_off[rows[i]])} bytes of packet",
            )
        return (b.writable() if write else b.buf), rows * b.width + off
    if region == mem.STACK_REGION:
        o = int(off[0]) if len(off) else 0
        if o >= 0 and o + size <= b.stack_width and (o & 7) + size <= 8 and (off == o).all():
            # One offset for every row (the frame pointer is the same in each): in bounds
            # for all, and their bytes lie in one 8-byte word.
            start: I64 = rows * 8 + ((o >> 3) * b.n * 8 + (o & 7))
            return b.stack, start
        ok = (off >= 0) & (off + size <= b.stack_width)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise _fail(b, int(rows[i]), f"invalid stack access off={int(off[i])} size={size}")
        # Word-major: 8-byte word w of every row, then word w + 1 (``Batch.stack``).
        start = ((off >> 3) * b.n + rows) * 8 + (off & 7)
        if ((off & 7) + size > 8).any():
            byte = off[:, None] + np.arange(size)
            return b.stack, ((byte >> 3) * b.n + rows[:, None]) * 8 + (byte & 7)
        return b.stack, start
    mi = region - mem.FIRST_MAP_REGION
    if 0 <= mi < len(b.maps):
        m = b.maps[mi]
        vs = m.value_size
        ok = (off >= 0) & (off + size <= m.arena.size) & ((off % vs) + size <= vs)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise _fail(
                b,
                int(rows[i]),
                f"invalid access to map value, value_size={vs} off={int(off[i] % vs)} size={size}",
            )
        if write and m.map_flags & BPF_F_RDONLY_PROG:
            raise _fail(b, int(rows[0]), f"write into map forbidden, value_size={vs}")
        priv = b.private.get(mi)
        if priv is not None:  # each row's own copy (``Batch.privatise``)
            flat = rows * priv.size + off
            each = _each_byte(flat, size)
            if write:
                priv.dirty[each] = True
            else:
                priv.read_first[each] |= ~priv.dirty[each]
            return priv.data, flat
        if write:
            m.touch(int(off.max()) + size)
        return m.arena, off
    if region == mem.CTX_REGION:
        raise _fail(b, int(rows[0]), "invalid bpf_context access" if write else "ctx access")
    what = "map_ptr" if region == mem.MAPPTR_REGION else "scalar"
    raise _fail(b, int(rows[0]), f"invalid mem access '{what}'")


def read_bytes(b: Batch, region: int, rows: I64, off: I64, size: int) -> npt.NDArray[np.uint8]:
    """``size`` bytes at each (row, offset), as a (len(rows), size) array."""
    arr, flat = _flat(b, region, rows, off, size, False)
    if region >= mem.FIRST_MAP_REGION and not b.is_private(region):
        b.log_arena(region, off, size, rows, READ)
    cols = []
    pos = 0
    while pos < size:
        step = next(c for c in (8, 4, 2, 1) if c <= size - pos)
        part = flat + pos if flat.ndim == 1 else flat[:, pos : pos + step]
        word = gather_uint(arr, part, step).astype(DTYPES[step])
        cols.append(word.view(np.uint8).reshape(-1, step))
        pos += step
    out: npt.NDArray[np.uint8] = cols[0] if len(cols) == 1 else np.concatenate(cols, axis=1)
    return out


def write_bytes(b: Batch, region: int, rows: I64, off: I64, data: npt.NDArray[np.uint8]) -> None:
    size = data.shape[1]
    arr, flat = _flat(b, region, rows, off, size, True)
    if region >= mem.FIRST_MAP_REGION and not b.is_private(region):
        b.before_write(region - mem.FIRST_MAP_REGION)
        b.log_arena(region, off, size, rows, WRITE)
    arr[_each_byte(flat, size)] = data


def _each_byte(flat: I64, size: int) -> I64:
    """The flat index of every byte of each access (``_flat``'s first bytes widened)."""
    if flat.ndim == 2:
        return flat
    out: I64 = flat[:, None] + np.arange(size)
    return out


def _ctx_load(b: Batch, rows: I64, off: I64, size: int) -> U64:
    if size != 4 or not np.isin(off, list(mem.XDP_MD_FIELDS)).all():
        raise _fail(b, int(rows[0]), f"invalid bpf_context access off={int(off[0])} size={size}")
    out = np.zeros(len(rows), dtype=np.uint64)
    base = np.uint64(mem.PKT_BASE)
    for field_off, name in mem.XDP_MD_FIELDS.items():
        sel = off == field_off
        if not sel.any():
            continue
        r = rows[sel]
        if name == "data":
            out[sel] = base + b.data_off[r].astype(np.uint64)
        elif name == "data_end":
            out[sel] = base + b.end_off[r].astype(np.uint64)
        elif name == "data_meta":
            out[sel] = base + b.meta_off[r].astype(np.uint64)
        elif name == "ingress_ifindex":
            out[sel] = b.ingress_ifindex[r]
        elif name == "rx_queue_index":
            out[sel] = b.rx_queue_index[r]
        else:
            out[sel] = b.egress_ifindex[r]
    return out


def gather_uint(arr: npt.NDArray[np.uint8], flat: I64, size: int) -> U64:
    """The little-endian ``size``-byte integer at each flat index of ``arr``: one gather from
    a wider view when every index has the same alignment (a field of every packet, a stack
    slot of every row), else a gather per byte."""
    if flat.ndim == 2:
        out = arr[flat[:, 0]].astype(np.uint64)
        for k in range(1, size):
            out |= arr[flat[:, k]].astype(np.uint64) << np.uint64(8 * k)
        return out
    if size == 1 or len(flat) == 0:
        return arr[flat].astype(np.uint64)
    a = int(flat[0]) & (size - 1)
    if not ((flat - a) & (size - 1)).any():
        wide = arr[a : a + (len(arr) - a) // size * size].view(DTYPES[size])
        got: U64 = wide[(flat - a) >> SHIFT[size]].astype(np.uint64)
        return got
    out = arr[flat].astype(np.uint64)
    for k in range(1, size):
        out |= arr[flat + k].astype(np.uint64) << np.uint64(8 * k)
    return out


def scatter_uint(arr: npt.NDArray[np.uint8], flat: I64, size: int, value: U64) -> None:
    """Store the low ``size`` bytes of each value little-endian at its flat index."""
    if flat.ndim == 2:
        for k in range(size):
            arr[flat[:, k]] = (value >> np.uint64(8 * k)).astype(np.uint8)
        return
    if size == 1 or len(flat) == 0:
        arr[flat] = value.astype(np.uint8)
        return
    a = int(flat[0]) & (size - 1)
    if not ((flat - a) & (size - 1)).any():
        wide = arr[a : a + (len(arr) - a) // size * size].view(DTYPES[size])
        wide[(flat - a) >> SHIFT[size]] = value.astype(DTYPES[size])
        return
    for k in range(size):
        arr[flat + k] = (value >> np.uint64(8 * k)).astype(np.uint8)


def load(b: Batch, rows: I64, addr: U64, size: int, signed: bool = False) -> U64:
    """``*(u<size> *)addr`` for each row (sign-extending for ``BPF_MEMSX``)."""
    out = np.zeros(len(rows), dtype=np.uint64)
    for region, sel in split_regions(addr):
        r = rows if sel is None else rows[sel]
        off = (addr if sel is None else addr[sel]) & np.uint64(mem.OFFSET_MASK)
        off_i = off.astype(np.int64)
        if region == mem.CTX_REGION:
            val = _ctx_load(b, r, off_i, size)
        else:
            arr, flat = _flat(b, region, r, off_i, size, False)
            if region >= mem.FIRST_MAP_REGION and not b.is_private(region):
                b.log_arena(region, off_i, size, r, READ)
            val = gather_uint(arr, flat, size)
            if signed:
                val = val.astype(SIGNED[size]).astype(np.int64).view(np.uint64)
        if sel is None:
            return val
        out[sel] = val
    return out


def store(b: Batch, rows: I64, addr: U64, size: int, value: U64) -> None:
    """``*(u<size> *)addr = value`` for each row."""
    for region, sel in split_regions(addr):
        r = rows if sel is None else rows[sel]
        a = addr if sel is None else addr[sel]
        v = value if sel is None else value[sel]
        off = (a & np.uint64(mem.OFFSET_MASK)).astype(np.int64)
        arr, flat = _flat(b, region, r, off, size, True)
        if region >= mem.FIRST_MAP_REGION and not b.is_private(region):
            b.before_write(region - mem.FIRST_MAP_REGION)
            b.log_arena(region, off, size, r, WRITE)
        scatter_uint(arr, flat, size, v)


def atomic(
    b: Batch,
    rows: I64,
    addr: U64,
    size: int,
    op: int,
    fetch: bool,
    src: U64,
    cmp: U64 | None,
    fused: bool = False,
) -> U64:
    """An atomic read-modify-write; returns each row's old value.

    ``op`` is the ALU op applied (``BPF_ADD``, ``OR``, ``AND``, ``XOR``) or ``-1`` for xchg,
    ``-2`` for cmpxchg. On a map value shared by several rows the updates are applied in row
    order, so each row sees what running the packets one by one would have shown it."""
    old = np.zeros(len(rows), dtype=np.uint64)
    mask = np.uint64((1 << (8 * size)) - 1) if size < 8 else np.uint64(0xFFFFFFFFFFFFFFFF)
    for region, sel in split_regions(addr):
        r = rows if sel is None else rows[sel]
        a = addr if sel is None else addr[sel]
        s = src if sel is None else src[sel]
        c = None if cmp is None else (cmp if sel is None else cmp[sel])
        off = (a & np.uint64(mem.OFFSET_MASK)).astype(np.int64)
        if region not in (mem.STACK_REGION,) and region < mem.FIRST_MAP_REGION:
            if region == mem.PKT_REGION and fused:
                o = load(b, r, a, size)
                store(b, r, a, size, o + s)
                if sel is None:
                    return o
                old[sel] = o
                continue
            raise _fail(b, int(r[0]), "BPF_ATOMIC stores into this memory are not allowed")
        if b.is_private(region):
            raise PrivateAbort(region - mem.FIRST_MAP_REGION)
        arr, flat = _flat(b, region, r, off, size, True)
        if not fused and (off % size != 0).any():
            raise _fail(b, int(r[0]), f"misaligned access off={int(off[0])} size={size}")
        if region >= mem.FIRST_MAP_REGION:
            b.before_write(region - mem.FIRST_MAP_REGION)
            kind = ADD if (op == 0 and not fetch) else FETCH
            b.log_arena(region, off, size, r, kind)
            if kind == ADD and b.record:
                b.record_add(region - mem.FIRST_MAP_REGION, r, off, size, s & mask)
        o = _apply(arr, flat, size, op, s, c, mask)
        if sel is None:
            return o
        old[sel] = o
    return old


def _apply(
    arr: npt.NDArray[np.uint8],
    flat: I64,
    size: int,
    op: int,
    s: U64,
    c: U64 | None,
    mask: np.uint64,
) -> U64:
    idx = _each_byte(flat, size)
    flat = idx[:, 0]
    cur = np.ascontiguousarray(arr[idx]).view(DTYPES[size]).reshape(-1).astype(np.uint64)
    if len(flat) > 1 and op == 0 and c is None and (flat == flat[0]).all():
        # Every row adds to one word (a counter): each sees the adds of the rows before it.
        with np.errstate(over="ignore"):
            ss = s & mask
            before = np.cumsum(ss, dtype=np.uint64) - ss
            old: U64 = (cur[0] + before) & mask
            final = (old[-1] + ss[-1]) & mask
        arr[idx[0]] = np.array([final], dtype=DTYPES[size]).view(np.uint8)
        return old
    uniq, inv, counts = np.unique(flat, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    if (counts == 1).all():
        new = _combine(op, cur, s, c, mask)
        arr[idx] = new.astype(DTYPES[size]).view(np.uint8).reshape(-1, size)
        return cur
    if op == 0 and c is None:
        # Sequential fetch-add: each row sees the start value plus the adds of earlier rows.
        order = np.argsort(inv, kind="stable")
        ss = s[order] & mask
        csum = np.cumsum(ss, dtype=np.uint64)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        before = csum - ss
        seg_base = before[starts]
        excl = before - np.repeat(seg_base, counts)
        old = np.empty_like(cur)
        old[order] = (cur[order] + excl) & mask
        totals = np.add.reduceat(ss, starts) if len(ss) else ss
        first_cur = cur[order][starts]
        final = (first_cur + totals) & mask
        uidx = uniq[:, None] + np.arange(size)
        arr[uidx] = final.astype(DTYPES[size]).view(np.uint8).reshape(-1, size)
        return old
    # Other operations on shared words: one after another, in row order.
    old = np.empty_like(cur)
    state: dict[int, int] = {}
    for i in range(len(flat)):
        key = int(flat[i])
        v = state.get(key, int(cur[i]))
        old[i] = v
        one = _combine(
            op,
            np.array([v], dtype=np.uint64),
            s[i : i + 1],
            None if c is None else c[i : i + 1],
            mask,
        )
        state[key] = int(one[0])
    for key, v in state.items():
        arr[key : key + size] = np.frombuffer(int(v).to_bytes(size, "little"), dtype=np.uint8)
    return old


def _combine(op: int, cur: U64, s: U64, c: U64 | None, mask: np.uint64) -> U64:
    with np.errstate(over="ignore"):
        if op == 0:
            return (cur + s) & mask
        if op == 0x40:
            return (cur | s) & mask
        if op == 0x50:
            return cur & s & mask
        if op == 0xA0:
            return (cur ^ s) & mask
        if op == -1:
            return s & mask
        assert c is not None
        return np.where(cur == (c & mask), s & mask, cur)
