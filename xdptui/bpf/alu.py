"""ALU and jump semantics on arrays of 64-bit registers, as the kernel defines them.

Follows ``___bpf_prog_run()`` (``kernel/bpf/core.c``) and the verifier's rewrites in
``do_misc_fixups()``: unsigned division by zero gives 0, modulo by zero leaves the dividend
(zero-extended for 32-bit), signed division by -1 negates and signed modulo by -1 gives 0;
shift amounts are masked to 63 (31 for 32-bit); 32-bit results are zero-extended.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xdptui.bpf import isa

U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]
M32 = np.uint64(0xFFFFFFFF)


def _s64(a: U64) -> npt.NDArray[np.int64]:
    return a.view(np.int64)


def _s32(a: U64) -> npt.NDArray[np.int64]:
    return (a & M32).astype(np.uint32).view(np.int32).astype(np.int64)


def _u(a: npt.NDArray[np.int64]) -> U64:
    return a.astype(np.int64).view(np.uint64)


def _udiv(a: U64, b: U64) -> U64:
    out = np.zeros_like(a)
    nz = b != 0
    np.floor_divide(a, b, out=out, where=nz)
    return out


def _umod(a: U64, b: U64) -> U64:
    out = a.copy()
    nz = b != 0
    np.remainder(a, b, out=out, where=nz)
    return out


def _sdiv(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], bits: int) -> U64:
    """Signed division truncating toward zero; /0 gives 0, /-1 negates (wrapping)."""
    out = np.zeros(len(a), dtype=np.int64)
    ok = (b != 0) & (b != -1)
    if ok.any():
        aa, bb = a[ok], b[ok]
        r = np.fmod(aa, bb)
        out[ok] = (aa - r) // bb
    neg = b == -1
    if neg.any():
        with np.errstate(over="ignore"):
            out[neg] = (-(a[neg].view(np.uint64))).view(np.int64)
    res = out.view(np.uint64)
    return res & M32 if bits == 32 else res


def _smod(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], bits: int, orig: U64) -> U64:
    """Signed remainder with the dividend's sign; %0 leaves the dividend, %-1 gives 0."""
    out = np.zeros(len(a), dtype=np.int64)
    ok = (b != 0) & (b != -1)
    if ok.any():
        out[ok] = np.fmod(a[ok], b[ok])
    res = out.view(np.uint64).copy()
    zero = b == 0
    res[zero] = orig[zero]
    return res & M32 if bits == 32 else res


def bswap(a: U64, bits: int) -> U64:
    """Reverse the low ``bits`` bits' bytes (the result is zero-extended)."""
    if bits == 16:
        return ((a & np.uint64(0xFF)) << np.uint64(8)) | ((a >> np.uint64(8)) & np.uint64(0xFF))
    if bits == 32:
        return (a & M32).astype(np.uint32).byteswap().astype(np.uint64)
    return a.byteswap()


def sign_extend(a: U64, bits: int) -> U64:
    """Sign-extend the low ``bits`` bits to 64."""
    if bits == 8:
        return _u(a.astype(np.uint8).view(np.int8).astype(np.int64))
    if bits == 16:
        return _u(a.astype(np.uint16).view(np.int16).astype(np.int64))
    if bits == 32:
        return _u(a.astype(np.uint32).view(np.int32).astype(np.int64))
    return a


def alu(op: int, off: int, is64: bool, a: U64, b: U64) -> U64:
    """``dst op= src`` for one ALU / ALU64 opcode (``b`` already the 64-bit source)."""
    with np.errstate(over="ignore"):
        if is64:
            return _alu64(op, off, a, b)
        return _alu32(op, off, a, b)


def _alu64(op: int, off: int, a: U64, b: U64) -> U64:
    if op == isa.BPF_ADD:
        return a + b
    if op == isa.BPF_SUB:
        return a - b
    if op == isa.BPF_MUL:
        return a * b
    if op == isa.BPF_DIV:
        return _sdiv(_s64(a), _s64(b), 64) if off == 1 else _udiv(a, b)
    if op == isa.BPF_MOD:
        return _smod(_s64(a), _s64(b), 64, a) if off == 1 else _umod(a, b)
    if op == isa.BPF_OR:
        return a | b
    if op == isa.BPF_AND:
        return a & b
    if op == isa.BPF_XOR:
        return a ^ b
    if op == isa.BPF_LSH:
        return a << (b & np.uint64(63))
    if op == isa.BPF_RSH:
        return a >> (b & np.uint64(63))
    if op == isa.BPF_ARSH:
        return _u(_s64(a) >> (b & np.uint64(63)).astype(np.int64))
    if op == isa.BPF_NEG:
        return np.uint64(0) - a
    if op == isa.BPF_MOV:
        return sign_extend(b, off) if off in (8, 16, 32) else b.copy()
    raise ValueError(op)


def _alu32(op: int, off: int, a: U64, b: U64) -> U64:
    a32, b32 = a & M32, b & M32
    if op == isa.BPF_ADD:
        r = a32 + b32
    elif op == isa.BPF_SUB:
        r = a32 - b32
    elif op == isa.BPF_MUL:
        r = a32 * b32
    elif op == isa.BPF_DIV:
        return _sdiv(_s32(a), _s32(b), 32) if off == 1 else _udiv(a32, b32)
    elif op == isa.BPF_MOD:
        return _smod(_s32(a), _s32(b), 32, a32) if off == 1 else _umod(a32, b32)
    elif op == isa.BPF_OR:
        r = a32 | b32
    elif op == isa.BPF_AND:
        r = a32 & b32
    elif op == isa.BPF_XOR:
        r = a32 ^ b32
    elif op == isa.BPF_LSH:
        r = a32 << (b32 & np.uint64(31))
    elif op == isa.BPF_RSH:
        r = a32 >> (b32 & np.uint64(31))
    elif op == isa.BPF_ARSH:
        r = _u(_s32(a) >> (b32 & np.uint64(31)).astype(np.int64))
    elif op == isa.BPF_NEG:
        r = np.uint64(0) - a32
    elif op == isa.BPF_MOV:
        r = sign_extend(b, off) if off in (8, 16) else b32
    else:
        raise ValueError(op)
    return r & M32


def condition(op: int, is32: bool, a: U64, b: U64) -> Bools:
    """Whether a conditional jump is taken."""
    if is32:
        a, b = a & M32, b & M32
        sa, sb = _s32(a), _s32(b)
    else:
        sa, sb = _s64(a), _s64(b)
    res: Bools
    if op == isa.BPF_JEQ:
        res = a == b
    elif op == isa.BPF_JNE:
        res = a != b
    elif op == isa.BPF_JGT:
        res = a > b
    elif op == isa.BPF_JGE:
        res = a >= b
    elif op == isa.BPF_JLT:
        res = a < b
    elif op == isa.BPF_JLE:
        res = a <= b
    elif op == isa.BPF_JSET:
        res = (a & b) != 0
    elif op == isa.BPF_JSGT:
        res = sa > sb
    elif op == isa.BPF_JSGE:
        res = sa >= sb
    elif op == isa.BPF_JSLT:
        res = sa < sb
    elif op == isa.BPF_JSLE:
        res = sa <= sb
    else:
        raise ValueError(op)
    return res
