"""Which registers are live after each instruction (backward dataflow over the program).

Used to tell a ``load; add; store`` whose loaded value is never read again -- a plain
counter update, commutative between packets -- from one whose value the program goes on to
use. Calls read r1-r5 and set r0-r5; ``exit`` reads r0.
"""

from __future__ import annotations

from xdptui.bpf import isa
from xdptui.bpf.isa import Insn

ARGS = 0b111110  # r1-r5
CLOBBERED = 0b111111  # r0-r5


def _use_def(ins: Insn) -> tuple[int, int]:
    cls, d, s = ins.cls, 1 << ins.dst, 1 << ins.src
    x = ins.source == isa.BPF_X
    if ins.is_ld_imm64():
        return 0, d
    if cls in (isa.BPF_ALU, isa.BPF_ALU64):
        if ins.op == isa.BPF_MOV:
            return (s if x else 0), d
        if ins.op in (isa.BPF_NEG, isa.BPF_END):
            return d, d
        return d | (s if x else 0), d
    if cls == isa.BPF_LDX:
        return s, d
    if cls == isa.BPF_ST:
        return d, 0
    if cls == isa.BPF_STX:
        if ins.mode == isa.BPF_ATOMIC:
            use = d | s | (1 if ins.imm == isa.BPF_CMPXCHG else 0)
            defs = 1 if ins.imm == isa.BPF_CMPXCHG else (s if ins.imm & isa.BPF_FETCH else 0)
            return use, defs
        return d | s, 0
    if cls in (isa.BPF_JMP, isa.BPF_JMP32):
        if ins.op == isa.BPF_CALL:
            return ARGS, CLOBBERED
        if ins.op == isa.BPF_EXIT:
            return 1, 0
        if ins.op == isa.BPF_JA:
            return 0, 0
        return d | (s if x else 0), 0
    return 0xFFF, 0


def _successors(pc: int, ins: Insn, n: int) -> list[int]:
    if ins.is_ld_imm64():
        return [pc + 2] if pc + 2 < n else []
    if ins.cls in (isa.BPF_JMP, isa.BPF_JMP32):
        if ins.op == isa.BPF_EXIT:
            return []
        if ins.op == isa.BPF_CALL:
            return [pc + 1] if pc + 1 < n else []
        if ins.op == isa.BPF_JA:
            off = ins.imm if ins.cls == isa.BPF_JMP32 else ins.off
            return [pc + off + 1]
        return [pc + 1, pc + ins.off + 1]
    return [pc + 1] if pc + 1 < n else []


def live_out(insns: list[Insn]) -> list[int]:
    """A bitmask per instruction of the registers read later on some path."""
    n = len(insns)
    ud = [_use_def(i) for i in insns]
    succ = [_successors(pc, ins, n) for pc, ins in enumerate(insns)]
    out = [0] * n
    live_in = [0] * n
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            o = 0
            for s in succ[pc]:
                if 0 <= s < n:
                    o |= live_in[s]
            use, defs = ud[pc]
            i = use | (o & ~defs)
            if o != out[pc] or i != live_in[pc]:
                out[pc], live_in[pc] = o, i
                changed = True
    return out


def live_in(insns: list[Insn]) -> list[int]:
    """A bitmask per instruction of the registers it or a later one reads before a write."""
    out = live_out(insns)
    res = []
    for pc, ins in enumerate(insns):
        use, defs = _use_def(ins)
        res.append(use | (out[pc] & ~defs))
    return res
