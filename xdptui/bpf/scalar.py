"""What the verifier knows of a scalar: a tnum and unsigned and signed bounds, per width.

Follows ``kernel/bpf/verifier.c``: ``reg_bounds_sync()`` (``__update_reg_bounds``,
``__reg_deduce_bounds``, ``__reg_bound_offset``), the ``scalar_min_max_*()`` functions of
``adjust_scalar_min_max_vals()``, ``is_branch_taken()`` and ``reg_set_min_max()``. A range is
``(value, mask, umin, umax, smin, smax)`` in one width (64, or 32 for a subregister); a
register keeps one of each width, as the kernel keeps ``u32_min_value`` beside ``umin_value``.
Operations the kernel does not track (division, modulo, byte swaps, variable shifts) give an
unknown value, as ``is_safe_to_compute_dst_reg_range()`` decides.
"""

from __future__ import annotations

from xdptui.bpf import isa
from xdptui.bpf import tnum as tn

Range = tuple[int, int, int, int, int, int]  # value, mask, umin, umax, smin, smax

# The ALU operations whose result range is computed (is_safe_to_compute_dst_reg_range).
_TRACKED = {isa.BPF_ADD, isa.BPF_SUB, isa.BPF_MUL, isa.BPF_AND, isa.BPF_OR, isa.BPF_XOR}
_SHIFTS = {isa.BPF_LSH, isa.BPF_RSH, isa.BPF_ARSH}


def signed(x: int, bits: int) -> int:
    return x - (1 << bits) if x >> (bits - 1) else x


def smin_of(bits: int) -> int:
    return -(1 << (bits - 1))


def smax_of(bits: int) -> int:
    return (1 << (bits - 1)) - 1


def const(v: int, bits: int = 64) -> Range:
    v &= tn.full(bits)
    s = signed(v, bits)
    return (v, 0, v, v, s, s)


def unknown(bits: int = 64) -> Range:
    return (0, tn.full(bits), 0, tn.full(bits), smin_of(bits), smax_of(bits))


def is_const(r: Range) -> bool:
    return r[1] == 0


def sync(r: Range, bits: int) -> Range | None:
    """``reg_bounds_sync``; None when no value is left (a branch that cannot be taken)."""
    v, m, umin, umax, smin, smax = r
    if m == 0:  # a constant: consistent with its bounds, or nothing
        s = v - (1 << bits) if v >> (bits - 1) else v
        if umin <= v <= umax and smin <= s <= smax:
            return (v, 0, v, v, s, s)
        return None
    f = tn.full(bits)
    sb = 1 << (bits - 1)
    for _ in range(2):
        before = (v, m, umin, umax, smin, smax)
        # __update_reg_bounds: what the tnum says.
        smin = max(smin, signed(v | (m & sb), bits))
        smax = min(smax, signed(v | (m & ~sb & f), bits))
        umin = max(umin, v)
        umax = min(umax, v | m)
        # __reg_deduce_bounds: signed and unsigned ranges inform each other.
        if smin >= 0 or smax < 0:
            lo = max(umin, smin & f)
            hi = min(umax, smax & f)
            umin, umax = lo, hi
            smin, smax = signed(lo, bits), signed(hi, bits)
        elif umax < sb:
            smin = umin
            smax = umax = min(smax, umax)
        elif umin >= sb:
            umin = max(umin, smin & f)
            smin = signed(umin, bits)
            smax = signed(umax, bits)
        if umin > umax or smin > smax:
            return None
        # __reg_bound_offset: the tnum learns from the range.
        rv, rm = tn.trange(umin, umax, bits)
        if (v ^ rv) & ~(m | rm) & f:
            return None
        v, m = tn.intersect((v, m), (rv, rm))
        if before == (v, m, umin, umax, smin, smax):
            break
    if umin > umax or smin > smax or (v & ~m) != v:
        return None
    return (v, m, umin, umax, smin, smax)


def narrow(r: Range) -> Range:
    """The low 32 bits of a 64-bit range (``__reg_combine_64_into_32``)."""
    if r[1] == 0:
        return const(r[0] & tn.M32, 32)
    v, m = tn.cast((r[0], r[1]), 4)
    out: Range = (v, m, 0, tn.M32, smin_of(32), smax_of(32))
    if r[3] <= tn.M32:
        out = (v, m, r[2], r[3], out[4], out[5])
    if r[4] >= smin_of(32) and r[5] <= smax_of(32):
        out = (out[0], out[1], out[2], out[3], r[4], r[5])
    return sync(out, 32) or (v, m, 0, tn.M32, smin_of(32), smax_of(32))


def zext(r32: Range) -> Range:
    """A 32-bit result zero-extended into the full register."""
    if r32[1] == 0:
        return (r32[0], 0, r32[0], r32[0], r32[0], r32[0])
    v, m, umin, umax = r32[0], r32[1], r32[2], r32[3]
    return sync((v, m, umin, umax, umin, umax), 64) or unknown(64)


def merge32(r64: Range, r32: Range) -> Range:
    """What a refined subregister teaches the full register (``__reg_combine_32_into_64``)."""
    v, m = r64[0], r64[1]
    hi_mask = tn.M64 ^ tn.M32
    nv = (v & hi_mask) | r32[0]
    nm = (m & hi_mask) | r32[1]
    out = (nv, nm, r64[2], r64[3], r64[4], r64[5])
    if (v | m) <= tn.M32:  # the upper half is known zero: the ranges are the same
        out = (nv, nm, max(r64[2], r32[2]), min(r64[3], r32[3]), r64[4], r64[5])
    return sync(out, 64) or r64


def alu(op: int, a: Range, b: Range, bits: int) -> Range:
    """``dst op= src`` on ranges; an op the kernel does not track gives an unknown value."""
    if op in _SHIFTS:
        if not is_const(b) or b[0] >= bits:
            return unknown(bits)
        return _shift(op, a, b[0], bits)
    if op not in _TRACKED:
        return unknown(bits)
    f = tn.full(bits)
    if a[1] == 0 and b[1] == 0:
        x, y = a[0], b[0]
        if op == isa.BPF_ADD:
            return const(x + y, bits)
        if op == isa.BPF_SUB:
            return const(x - y, bits)
        if op == isa.BPF_MUL:
            return const(x * y, bits)
        if op == isa.BPF_AND:
            return const(x & y, bits)
        if op == isa.BPF_OR:
            return const(x | y, bits)
        return const(x ^ y, bits)
    lo, hi = smin_of(bits), smax_of(bits)
    av, bv = (a[0], a[1]), (b[0], b[1])
    if op == isa.BPF_ADD:
        t = tn.add(av, bv, bits)
        smin, smax = a[4] + b[4], a[5] + b[5]
        if smin < lo or smax > hi:
            smin, smax = lo, hi
        umin, umax = a[2] + b[2], a[3] + b[3]
        if umax > f:
            umin, umax = 0, f
    elif op == isa.BPF_SUB:
        t = tn.sub(av, bv, bits)
        smin, smax = a[4] - b[5], a[5] - b[4]
        if smin < lo or smax > hi:
            smin, smax = lo, hi
        if a[2] < b[3]:
            umin, umax = 0, f
        else:
            umin, umax = a[2] - b[3], a[3] - b[2]
    elif op == isa.BPF_MUL:
        t = tn.mul(av, bv, bits)
        half = tn.M32 if bits == 64 else 0xFFFF
        if a[4] < 0 or b[4] < 0 or a[3] > half or b[3] > half:
            umin, umax, smin, smax = 0, f, lo, hi
        else:
            umin, umax = a[2] * b[2], a[3] * b[3]
            smin, smax = (umin, umax) if umax <= hi else (lo, hi)
    elif op == isa.BPF_AND:
        t = tn.t_and(av, bv)
        umin, umax = t[0], min(a[3], b[3])
        smin, smax = (lo, hi) if a[4] < 0 or b[4] < 0 else (umin, umax)
    elif op == isa.BPF_OR:
        t = tn.t_or(av, bv)
        umin, umax = max(a[2], b[2]), t[0] | t[1]
        smin, smax = (lo, hi) if a[4] < 0 or b[4] < 0 else (umin, umax)
    else:  # XOR
        t = tn.t_xor(av, bv)
        umin, umax = t[0], t[0] | t[1]
        smin, smax = (lo, hi) if a[4] < 0 or b[4] < 0 else (umin, umax)
    return sync((t[0], t[1], umin, umax, smin, smax), bits) or unknown(bits)


def _shift(op: int, a: Range, s: int, bits: int) -> Range:
    f = tn.full(bits)
    lo, hi = smin_of(bits), smax_of(bits)
    if op == isa.BPF_LSH:
        t = tn.lshift((a[0], a[1]), s, bits)
        if a[3] > 1 << (bits - 1 - s):
            umin, umax = 0, f
        else:
            umin, umax = a[2] << s, a[3] << s
        out = (t[0], t[1], umin, umax, lo, hi)
    elif op == isa.BPF_RSH:
        t = tn.rshift((a[0], a[1]), s)
        out = (t[0], t[1], a[2] >> s, a[3] >> s, lo, hi)
    else:
        t = tn.arshift((a[0], a[1]), s, bits)
        out = (t[0], t[1], 0, f, a[4] >> s, a[5] >> s)
    return sync(out, bits) or unknown(bits)


def movsx(r: Range, from_bits: int, bits: int) -> Range:
    """``BPF_MOVSX``: sign-extend the low ``from_bits`` (``coerce_reg_to_size_sx``)."""
    top = (1 << (from_bits - 1)) - 1
    if is_const(r):
        return const(signed(r[0] & ((1 << from_bits) - 1), from_bits), bits)
    if r[3] <= top:
        return r if bits == 64 else narrow(r)
    return sync((0, tn.full(bits), 0, tn.full(bits), -(top + 1), top), bits) or unknown(bits)


_NEGATE = {
    isa.BPF_JEQ: isa.BPF_JNE,
    isa.BPF_JNE: isa.BPF_JEQ,
    isa.BPF_JGT: isa.BPF_JLE,
    isa.BPF_JLE: isa.BPF_JGT,
    isa.BPF_JGE: isa.BPF_JLT,
    isa.BPF_JLT: isa.BPF_JGE,
    isa.BPF_JSGT: isa.BPF_JSLE,
    isa.BPF_JSLE: isa.BPF_JSGT,
    isa.BPF_JSGE: isa.BPF_JSLT,
    isa.BPF_JSLT: isa.BPF_JSGE,
    isa.BPF_JSET: -1,
    -1: isa.BPF_JSET,
}
_FLIP = {  # a OP b  ==  b FLIP(OP) a
    isa.BPF_JGT: isa.BPF_JLT,
    isa.BPF_JLT: isa.BPF_JGT,
    isa.BPF_JGE: isa.BPF_JLE,
    isa.BPF_JLE: isa.BPF_JGE,
    isa.BPF_JSGT: isa.BPF_JSLT,
    isa.BPF_JSLT: isa.BPF_JSGT,
    isa.BPF_JSGE: isa.BPF_JSLE,
    isa.BPF_JSLE: isa.BPF_JSGE,
}


def negate(op: int) -> int:
    """The condition of the fall-through (``rev_opcode``); ``-1`` is "not JSET"."""
    return _NEGATE[op]


def flip(op: int) -> int:
    """``flip_opcode``: the same test with the operands swapped."""
    return _FLIP.get(op, op)


def branch_taken(op: int, a: Range, b: Range) -> int:
    """``is_scalar_branch_taken``: 1 always, 0 never, -1 unknown."""
    if op == isa.BPF_JEQ or op == isa.BPF_JNE:
        eq = -1
        if is_const(a) and is_const(b):
            eq = int(a[0] == b[0])
        elif (
            a[2] > b[3]
            or a[3] < b[2]
            or a[4] > b[5]
            or a[5] < b[4]
            or (a[0] ^ b[0]) & ~(a[1] | b[1])
        ):
            eq = 0
        if eq < 0:
            return -1
        return eq if op == isa.BPF_JEQ else 1 - eq
    if op == isa.BPF_JSET or op == -1:
        if not is_const(b):
            return -1
        hit = -1
        if a[0] & b[0]:
            hit = 1
        elif not (a[0] | a[1]) & b[0]:
            hit = 0
        if hit < 0:
            return -1
        return hit if op == isa.BPF_JSET else 1 - hit
    lo_a, hi_a, lo_b, hi_b = (
        (a[2], a[3], b[2], b[3])
        if op in (isa.BPF_JGT, isa.BPF_JGE, isa.BPF_JLT, isa.BPF_JLE)
        else (a[4], a[5], b[4], b[5])
    )
    if op in (isa.BPF_JGT, isa.BPF_JSGT):
        return 1 if lo_a > hi_b else 0 if hi_a <= lo_b else -1
    if op in (isa.BPF_JGE, isa.BPF_JSGE):
        return 1 if lo_a >= hi_b else 0 if hi_a < lo_b else -1
    if op in (isa.BPF_JLT, isa.BPF_JSLT):
        return 1 if hi_a < lo_b else 0 if lo_a >= hi_b else -1
    return 1 if hi_a <= lo_b else 0 if lo_a > hi_b else -1


def refine(op: int, a: Range, b: Range, bits: int) -> tuple[Range, Range] | None:
    """``reg_set_min_max``: both operands knowing ``a OP b`` holds; None if it cannot."""
    va, ma, umin_a, umax_a, smin_a, smax_a = a
    vb, mb, umin_b, umax_b, smin_b, smax_b = b
    if op == isa.BPF_JEQ:
        if (va ^ vb) & ~(ma | mb):
            return None
        t = tn.intersect((va, ma), (vb, mb))
        both = (t[0], t[1], max(umin_a, umin_b), min(umax_a, umax_b))
        new = sync((*both, max(smin_a, smin_b), min(smax_a, smax_b)), bits)
        return None if new is None else (new, new)
    if op == isa.BPF_JNE:
        if is_const(b):
            a = _not_equal(a, vb, bits)
        if is_const(a):
            b = _not_equal(b, va, bits)
    elif op == isa.BPF_JSET:
        if is_const(b) and vb and vb & (vb - 1) == 0:
            t = tn.t_or((va, ma), (vb, 0))
            a = (t[0], t[1], umin_a, umax_a, smin_a, smax_a)
    elif op == -1:  # the fall-through of JSET: those bits are zero
        if is_const(b):
            t = tn.t_and((va, ma), (~vb & tn.full(bits), 0))
            a = (t[0], t[1], umin_a, umax_a, smin_a, smax_a)
    elif op in (isa.BPF_JLT, isa.BPF_JLE, isa.BPF_JSLT, isa.BPF_JSLE):
        out = refine(flip(op), b, a, bits)
        return None if out is None else (out[1], out[0])
    elif op == isa.BPF_JGT:
        a = (va, ma, max(umin_a, umin_b + 1), umax_a, smin_a, smax_a)
        b = (vb, mb, umin_b, min(umax_b, umax_a - 1), smin_b, smax_b)
    elif op == isa.BPF_JGE:
        a = (va, ma, max(umin_a, umin_b), umax_a, smin_a, smax_a)
        b = (vb, mb, umin_b, min(umax_b, umax_a), smin_b, smax_b)
    elif op == isa.BPF_JSGT:
        a = (va, ma, umin_a, umax_a, max(smin_a, smin_b + 1), smax_a)
        b = (vb, mb, umin_b, umax_b, smin_b, min(smax_b, smax_a - 1))
    elif op == isa.BPF_JSGE:
        a = (va, ma, umin_a, umax_a, max(smin_a, smin_b), smax_a)
        b = (vb, mb, umin_b, umax_b, smin_b, min(smax_b, smax_a))
    na, nb = sync(a, bits), sync(b, bits)
    if na is None or nb is None:
        return None
    return na, nb


def _not_equal(r: Range, c: int, bits: int) -> Range:
    v, m, umin, umax, smin, smax = r
    if umin == c:
        umin += 1
    elif umax == c:
        umax -= 1
    sc = signed(c, bits)
    if smin == sc:
        smin += 1
    elif smax == sc:
        smax -= 1
    return (v, m, umin, umax, smin, smax)


def fmt(r: Range, bits: int = 64) -> str:
    """The verifier log's way of showing a scalar (``scalar(umax=255)``, a constant)."""
    if is_const(r):
        return str(signed(r[0], bits)) if r[4] < 0 else str(r[0])
    parts = []
    if r[4] != smin_of(bits):
        parts.append(f"smin={r[4]}")
    if r[5] != smax_of(bits):
        parts.append(f"smax={r[5]}")
    if r[2]:
        parts.append(f"umin={r[2]}")
    if r[3] != tn.full(bits):
        parts.append(f"umax={r[3]}")
    if r[1] != tn.full(bits):
        parts.append(f"var_off=({r[0]:#x}; {r[1]:#x})")
    return f"scalar({','.join(parts)})"
