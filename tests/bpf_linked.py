"""Hand-written programs on linked scalars (``sync_linked_regs``): a copy of a scalar made by
``mov``, a spill or a fill shares the source's id, and what a branch proves of one copy holds
for the others. Each reads the never-written r9 on a path that only such a link proves dead.
``tests/test_bpf_scalar_ids.py`` checks xdptui's verifier on them, and
``tests/kernel/test_verifier_kernel.py`` the kernel's."""

from __future__ import annotations

from bpf_asm import alu, call, exit_, jmp, ldx, mov, stx

from xdptui.bpf import isa as B

RANDOM = call(7)  # bpf_get_prandom_u32: r0 = an unknown u32
DEAD_READ = ldx(B.BPF_DW, 0, 9, 0)  # "R9 !read_ok" wherever the verifier walks it


def one_random_bit(mask: int = 0x80) -> bytes:
    """r0 = 0 or ``mask``: an inexact value (a known constant would need no link)."""
    return RANDOM + alu(B.BPF_AND, 0, imm=mask)


def r1_zero_means_r0_zero(copy: bytes, tail: bytes = mov(0, imm=2) + exit_()) -> bytes:
    """After ``copy`` makes r1 from r0: where r1 == 0, r0 == 0 holds only through the link;
    without it the verifier walks into the dead read. Both ways go on to ``tail``."""
    return (
        copy
        + jmp(B.BPF_JNE, 1, 3, imm=0)
        + jmp(B.BPF_JEQ, 0, 2, imm=0)
        + DEAD_READ
        + exit_()
        + tail
    )


# Copies that keep the link (the kernel loads each program below).
LINKED = {
    "a 64-bit spill and fill": stx(B.BPF_DW, 10, 0, -8) + ldx(B.BPF_DW, 1, 10, -8),
    "a 32-bit spill and fill": stx(B.BPF_W, 10, 0, -8) + ldx(B.BPF_W, 1, 10, -8),
    "a 16-bit spill and fill": stx(B.BPF_H, 10, 0, -8) + ldx(B.BPF_H, 1, 10, -8),
    "an 8-bit spill and fill": stx(B.BPF_B, 10, 0, -8) + ldx(B.BPF_B, 1, 10, -8),
    "a 32-bit fill of a 64-bit spill of a small value": (
        stx(B.BPF_DW, 10, 0, -8) + ldx(B.BPF_W, 1, 10, -8)
    ),
    "a 32-bit move of a value that fits in 32 bits": alu(B.BPF_MOV, 1, 0, is64=False),
    "a sign-extending move of a value below the sign bit": alu(B.BPF_MOV, 1, 0, off=16),
}
LINKED_PROGRAMS = {name: one_random_bit() + r1_zero_means_r0_zero(c) for name, c in LINKED.items()}

# r0 >= 1 proven after a 32-bit spill holds for the value filled back.
RANGE_AFTER_SPILL = (
    RANDOM
    + alu(B.BPF_AND, 0, imm=0xFFFF)
    + stx(B.BPF_W, 10, 0, -8)
    + jmp(B.BPF_JLT, 0, 3, imm=1)
    + ldx(B.BPF_W, 1, 10, -8)
    + jmp(B.BPF_JGE, 1, 1, imm=1)
    + DEAD_READ
    + mov(0, imm=2)
    + exit_()
)

# A 64-bit spill and fill (linked) first; then r1 = 1 << 32 plus a random bit, spilled and
# filled back as 32 bits into r2: the fill narrows it, so what r2 == 0 proves says nothing of
# r1, r1 >> 32 stays 1 and the context pointer moved by it is refused ("dereference of
# modified ctx ptr R6 off=1 disallowed").
NARROWING_FILL = (
    mov(6, 1)
    + one_random_bit()
    + r1_zero_means_r0_zero(
        stx(B.BPF_DW, 10, 0, -16) + ldx(B.BPF_DW, 1, 10, -16),
        one_random_bit(8)
        + mov(1, imm=1)
        + alu(B.BPF_LSH, 1, imm=32)
        + alu(B.BPF_ADD, 1, 0)
        + stx(B.BPF_DW, 10, 1, -8)
        + ldx(B.BPF_W, 2, 10, -8)
        + jmp(B.BPF_JNE, 2, 0, imm=0)
        + alu(B.BPF_RSH, 1, imm=32)
        + alu(B.BPF_ADD, 6, 1)
        + ldx(B.BPF_W, 0, 6, 0)
        + exit_(),
    )
)

# w1 = w0 of a value wider than 32 bits (r0 is 1 << 32 plus a random bit): no link, so
# w1 == 0 says nothing of r0 and the read of r9 is walked ("R9 !read_ok").
WIDE_32_BIT_MOVE = (
    one_random_bit()
    + mov(2, imm=1)
    + alu(B.BPF_LSH, 2, imm=32)
    + alu(B.BPF_OR, 0, 2)
    + r1_zero_means_r0_zero(alu(B.BPF_MOV, 1, 0, is64=False))
)


# -- links with a constant delta (BPF_ADD_CONST64 / BPF_ADD_CONST32) -------------------------
ADD, SUB, JGT, JLE = B.BPF_ADD, B.BPF_SUB, B.BPF_JGT, B.BPF_JLE


def _byte() -> bytes:
    """r0 = an unknown byte."""
    return RANDOM + alu(B.BPF_AND, 0, imm=0xFF)


def _bounds_then_dead(first: bytes, then: bytes) -> bytes:
    """``first`` jumps past the rest when taken; ``then`` skips the dead read when taken.
    Only a link carries what ``first``'s fall-through proves over to ``then``."""
    return first + then + DEAD_READ + mov(0, imm=2) + exit_()


def _k(reg: int, value: int) -> bytes:
    """reg = ``value``, a constant too wide for an immediate."""
    return (
        mov(reg, imm=value >> 31)
        + alu(B.BPF_LSH, reg, imm=31)
        + alu(ADD, reg, imm=value & (2**31 - 1))
    )


# The kernel loads each of these: the branch on one copy bounds the other through the delta.
DELTA_LINKED = {
    "r1 = r0 + 8, r1 <= 16 bounds r0 by 8": _byte()
    + mov(1, 0)
    + alu(ADD, 1, imm=8)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=16), jmp(JLE, 0, 1, imm=8)),
    "r1 = r0 - 8 (64-bit), r1 <= 16 bounds r0 by 24": _byte()
    + mov(1, 0)
    + alu(SUB, 1, imm=8)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=16), jmp(JLE, 0, 1, imm=24)),
    "w1 = w0 + 8, w1 <= 16 bounds r0 by 8": _byte()
    + alu(B.BPF_MOV, 1, 0, is64=False)
    + alu(ADD, 1, imm=8, is64=False)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=16), jmp(JLE, 0, 1, imm=8)),
    "w1 = w0 - 1 wraps at zero, w1 < 10 proves r0 != 0": _byte()
    + alu(B.BPF_MOV, 1, 0, is64=False)
    + alu(SUB, 1, imm=1, is64=False)
    + _bounds_then_dead(jmp(B.BPF_JGE, 1, 3, imm=10), jmp(B.BPF_JNE, 0, 1, imm=0)),
    "r0 <= 10 bounds r1 = r0 + 100 by 110": _byte()
    + mov(1, 0)
    + alu(ADD, 1, imm=100)
    + _bounds_then_dead(jmp(JGT, 0, 3, imm=10), jmp(JLE, 1, 1, imm=110)),
    "r1 = r0 + 4 <= 14 bounds r2 = r0 + 10 by 20": _byte()
    + mov(1, 0)
    + mov(2, 0)
    + alu(ADD, 1, imm=4)
    + alu(ADD, 2, imm=10)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=14), jmp(JLE, 2, 1, imm=20)),
}

# The kernel refuses each of these ("R9 !read_ok"): no link carries the bound.
DELTA_UNLINKED = {
    "a second constant ends the link": _byte()
    + mov(1, 0)
    + alu(ADD, 1, imm=4)
    + alu(ADD, 1, imm=4)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=16), jmp(JLE, 0, 1, imm=8)),
    "a 64-bit and a 32-bit delta are not compared": _byte()
    + mov(1, 0)
    + alu(ADD, 1, imm=4)
    + alu(B.BPF_MOV, 2, 0, is64=False)
    + alu(ADD, 2, imm=8, is64=False)
    + _bounds_then_dead(jmp(JGT, 1, 3, imm=16), jmp(JLE, 2, 1, imm=20)),
    "a constant outside s32 ends the link": _byte()
    + _k(2, 1 << 31)
    + _k(3, (1 << 31) + 8)
    + mov(1, 0)
    + alu(ADD, 1, 2)
    + _bounds_then_dead(jmp(JGT, 1, 3, src=3), jmp(JLE, 0, 1, imm=8)),
    "a spill of a copy with a delta starts a new link": _byte()
    + mov(1, 0)
    + alu(ADD, 1, imm=4)
    + stx(B.BPF_DW, 10, 1, -8)
    + jmp(JGT, 0, 4, imm=10)
    + ldx(B.BPF_DW, 2, 10, -8)
    + jmp(JLE, 2, 1, imm=14)
    + DEAD_READ
    + mov(0, imm=2)
    + exit_(),
    # r1 = r0 + 8 on the first path, r0 + 4 on the second (r0 >= 4 there): the same ranges
    # at the join, but r1 <= 12 proves r0 <= 4 only on the first. Pruning the second path
    # at the join as already safe would load a program that reads r9.
    "states with different deltas are not equal": RANDOM
    + mov(6, 0)
    + alu(B.BPF_AND, 6, imm=1)
    + _byte()
    + jmp(B.BPF_JEQ, 6, 3, imm=0)
    + mov(1, 0)
    + alu(ADD, 1, imm=8)
    + jmp(B.BPF_JA, 0, 4)
    + jmp(B.BPF_JLT, 0, 6, imm=4)
    + mov(1, 0)
    + alu(ADD, 1, imm=4)
    + jmp(B.BPF_JA, 0, 0)
    + _bounds_then_dead(jmp(JGT, 1, 2, imm=12), jmp(JLE, 0, 1, imm=4)),
}
