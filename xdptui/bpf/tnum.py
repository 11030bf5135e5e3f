"""Tristate numbers: what the verifier knows of a value bit by bit (``kernel/bpf/tnum.c``).

A tnum is ``(value, mask)``: bits set in ``mask`` are unknown, the others equal ``value``'s.
Each function takes the width in bits (64, or 32 for a subregister) and keeps both words
inside it, so the same code serves ALU64 and ALU32.
"""

from __future__ import annotations

Tnum = tuple[int, int]

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


def full(bits: int) -> int:
    return (1 << bits) - 1


def const(v: int, bits: int = 64) -> Tnum:
    """``tnum_const``."""
    return (v & full(bits), 0)


def unknown(bits: int = 64) -> Tnum:
    return (0, full(bits))


def trange(lo: int, hi: int, bits: int = 64) -> Tnum:
    """``tnum_range``: the values ``lo..hi`` (unsigned)."""
    chi = lo ^ hi
    if chi == 0:
        return (lo, 0)
    n = chi.bit_length()
    if n > bits - 1:
        return unknown(bits)
    delta = (1 << n) - 1
    return (lo & ~delta & full(bits), delta)


def add(a: Tnum, b: Tnum, bits: int) -> Tnum:
    """``tnum_add``."""
    f = full(bits)
    sm = (a[1] + b[1]) & f
    sv = (a[0] + b[0]) & f
    sigma = (sm + sv) & f
    chi = sigma ^ sv
    mu = chi | a[1] | b[1]
    return (sv & ~mu & f, mu)


def sub(a: Tnum, b: Tnum, bits: int) -> Tnum:
    """``tnum_sub``."""
    f = full(bits)
    dv = (a[0] - b[0]) & f
    alpha = (dv + a[1]) & f
    beta = (dv - b[1]) & f
    chi = alpha ^ beta
    mu = chi | a[1] | b[1]
    return (dv & ~mu & f, mu)


def t_and(a: Tnum, b: Tnum) -> Tnum:
    """``tnum_and``."""
    alpha = a[0] | a[1]
    beta = b[0] | b[1]
    v = a[0] & b[0]
    return (v, alpha & beta & ~v)


def t_or(a: Tnum, b: Tnum) -> Tnum:
    """``tnum_or``."""
    v = a[0] | b[0]
    mu = a[1] | b[1]
    return (v, mu & ~v)


def t_xor(a: Tnum, b: Tnum) -> Tnum:
    """``tnum_xor``."""
    v = a[0] ^ b[0]
    mu = a[1] | b[1]
    return (v & ~mu, mu)


def mul(a: Tnum, b: Tnum, bits: int) -> Tnum:
    """``tnum_mul``: shift-and-add over ``a``'s bits."""
    f = full(bits)
    acc_v = (a[0] * b[0]) & f
    acc_m: Tnum = (0, 0)
    av, am = a
    bv, bm = b
    while av or am:
        if av & 1:
            acc_m = add(acc_m, (0, bm), bits)
        elif am & 1:
            acc_m = add(acc_m, (0, (bv | bm) & f), bits)
        av >>= 1
        am >>= 1
        bv = (bv << 1) & f
        bm = (bm << 1) & f
    return add((acc_v, 0), acc_m, bits)


def lshift(a: Tnum, s: int, bits: int) -> Tnum:
    f = full(bits)
    return ((a[0] << s) & f, (a[1] << s) & f)


def rshift(a: Tnum, s: int) -> Tnum:
    return (a[0] >> s, a[1] >> s)


def arshift(a: Tnum, s: int, bits: int) -> Tnum:
    """``tnum_arshift``: the sign bit (known or not) fills from the left."""
    f = full(bits)

    def sar(x: int) -> int:
        if x >> (bits - 1):
            x -= 1 << bits
        return (x >> s) & f

    return (sar(a[0]), sar(a[1]))


def intersect(a: Tnum, b: Tnum) -> Tnum:
    """``tnum_intersect``: what both say (the caller knows they agree)."""
    v = a[0] | b[0]
    mu = a[1] & b[1]
    return (v & ~mu, mu)


def contains(outer: Tnum, inner: Tnum) -> bool:
    """``tnum_in``: every value ``inner`` allows, ``outer`` allows."""
    if inner[1] & ~outer[1]:
        return False
    return (inner[0] & ~outer[1]) == outer[0]


def cast(a: Tnum, nbytes: int) -> Tnum:
    """``tnum_cast``: the low ``nbytes`` bytes."""
    f = (1 << (8 * nbytes)) - 1
    return (a[0] & f, a[1] & f)


def is_const(a: Tnum) -> bool:
    return a[1] == 0
