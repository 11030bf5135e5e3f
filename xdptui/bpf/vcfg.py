"""The verifier's passes before it walks any path: instruction fields, ``ld_imm64`` operands,
subprograms and the control-flow graph.

Follows ``resolve_pseudo_ldimm64`` ("unknown opcode", map references), the reserved-field
checks of ``check_alu_op`` / ``do_check`` / ``check_atomic`` / ``check_ld_imm``,
``check_subprogs`` (jumps stay inside their subprogram, each ends in exit or a jump) and
``check_cfg`` (every instruction reachable; prune points at conditional jumps, after calls
and at jump targets, as ``visit_insn`` marks them). Loops are allowed (a privileged load).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdptui.bpf import isa
from xdptui.bpf.isa import Insn
from xdptui.bpf.maps import BpfMap
from xdptui.bpf.vstate import MAX_BPF_REG, VerifierError
from xdptui.model.errors import Errno

# ld_imm64 src_reg values the loader produces from relocations (the kernel's fd_array forms).
BPF_PSEUDO_MAP_IDX = 5
BPF_PSEUDO_MAP_IDX_VALUE = 6
BPF_MAX_VAR_OFF = 1 << 29

_LD_ST_SIZES = (isa.BPF_B, isa.BPF_H, isa.BPF_W, isa.BPF_DW)


def _valid_opcode(code: int) -> bool:
    """``bpf_opcode_in_insntable``."""
    cls = code & 7
    if cls in (isa.BPF_ALU, isa.BPF_ALU64):
        op = code & 0xF0
        return op <= isa.BPF_END and not (op == isa.BPF_END and cls == isa.BPF_ALU64 and code & 8)
    if cls in (isa.BPF_JMP, isa.BPF_JMP32):
        op = code & 0xF0
        if op > isa.BPF_JSLE:
            return False
        if cls == isa.BPF_JMP32 and op in (isa.BPF_CALL, isa.BPF_EXIT):
            return False
        return not (op in (isa.BPF_CALL, isa.BPF_EXIT, isa.BPF_JA) and code & 8)
    size, mode = code & 0x18, code & 0xE0
    if cls == isa.BPF_LD:
        return code == 0x18 or (mode in (isa.BPF_ABS, isa.BPF_IND) and size != isa.BPF_DW)
    if cls == isa.BPF_LDX:
        return mode == isa.BPF_MEM or (mode == isa.BPF_MEMSX and size != isa.BPF_DW)
    if cls == isa.BPF_ST:
        return mode == isa.BPF_MEM
    return mode == isa.BPF_MEM or (mode == isa.BPF_ATOMIC and size in (isa.BPF_W, isa.BPF_DW))


def check_fields(insns: list[Insn], maps: list[BpfMap]) -> None:
    """Opcodes, reserved fields, register numbers and ``ld_imm64`` operands."""
    n = len(insns)
    i = 0
    while i < n:
        ins = insns[i]
        if not _valid_opcode(ins.code):
            raise VerifierError(Errno.EINVAL, f"unknown opcode {ins.code:02x}")
        if ins.is_ld_imm64():
            _ld_imm64(insns, i, maps)
            i += 2
            continue
        _reserved(ins)
        for r in (ins.dst, ins.src):
            if r >= MAX_BPF_REG:
                raise VerifierError(Errno.EINVAL, f"R{r} is invalid")
        i += 1


def _ld_imm64(insns: list[Insn], i: int, maps: list[BpfMap]) -> None:
    ins = insns[i]
    if i == len(insns) - 1:
        raise VerifierError(Errno.EINVAL, "invalid bpf_ld_imm64 insn")
    hi = insns[i + 1]
    if hi.code or hi.dst or hi.src or hi.off:
        raise VerifierError(Errno.EINVAL, "invalid bpf_ld_imm64 insn")
    if ins.off:
        raise VerifierError(Errno.EINVAL, "BPF_LD_IMM64 uses reserved fields")
    if ins.dst >= MAX_BPF_REG:
        raise VerifierError(Errno.EINVAL, f"R{ins.dst} is invalid")
    if ins.src == 0:
        return
    if ins.src in (isa.BPF_PSEUDO_MAP_FD, isa.BPF_PSEUDO_MAP_VALUE):
        # No relocation made this a map reference: the number is not an open map's fd.
        raise VerifierError(Errno.EBADF, f"fd {ins.imm} is not pointing to valid bpf_map")
    if ins.src == isa.BPF_PSEUDO_FUNC:
        raise VerifierError(Errno.EOPNOTSUPP, isa.CALLBACKS_NOT_MODELLED)
    if ins.src not in (BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE):
        raise VerifierError(Errno.EINVAL, "unrecognized bpf_ld_imm64 insn")
    if not 0 <= ins.imm < len(maps):
        raise VerifierError(Errno.EINVAL, f"fd_idx {ins.imm} is out of range")
    if ins.src == BPF_PSEUDO_MAP_IDX_VALUE:
        off = hi.imm & 0xFFFFFFFF
        m = maps[ins.imm]
        if off >= BPF_MAX_VAR_OFF:
            raise VerifierError(Errno.EINVAL, f"direct value offset of {off} is not allowed")
        if m.max_entries != 1 or off >= m.value_size:
            raise VerifierError(
                Errno.EINVAL,
                f"invalid access to map value pointer, value_size={m.value_size} off={off}",
            )


def _reserved(ins: Insn) -> None:
    """The reserved-field checks, with the kernel's wording."""
    cls, op, x = ins.cls, ins.op, ins.source == isa.BPF_X
    if cls in (isa.BPF_ALU, isa.BPF_ALU64):
        bad = False
        what = "BPF_ALU"
        if op == isa.BPF_NEG:
            bad, what = bool(x or ins.src or ins.off or ins.imm), "BPF_NEG"
        elif op == isa.BPF_END:
            bad = ins.src != 0 or ins.off != 0 or ins.imm not in (16, 32, 64)
            what = "BPF_END"
        elif op == isa.BPF_MOV:
            what = "BPF_MOV"
            offs = (0, 8, 16) if cls == isa.BPF_ALU else (0, 8, 16, 32)
            bad = (ins.off not in offs or ins.imm != 0) if x else (ins.src != 0 or ins.off != 0)
        else:
            sdiv = op in (isa.BPF_DIV, isa.BPF_MOD)
            bad = ins.off not in ((0, 1) if sdiv else (0,)) or (ins.imm != 0 if x else ins.src != 0)
        if bad:
            raise VerifierError(Errno.EINVAL, f"{what} uses reserved fields")
    elif cls == isa.BPF_STX and ins.mode == isa.BPF_ATOMIC:
        ok = {isa.BPF_ADD, isa.BPF_AND, isa.BPF_OR, isa.BPF_XOR}
        base = ins.imm & ~isa.BPF_FETCH
        if ins.imm not in (isa.BPF_XCHG, isa.BPF_CMPXCHG) and base not in ok:
            raise VerifierError(
                Errno.EINVAL, f"BPF_ATOMIC uses invalid atomic opcode {ins.imm:02x}"
            )
    elif (cls == isa.BPF_STX and ins.imm != 0) or (cls == isa.BPF_ST and ins.src != 0):
        what = "BPF_STX" if cls == isa.BPF_STX else "BPF_ST"
        raise VerifierError(Errno.EINVAL, f"{what} uses reserved fields")
    elif cls == isa.BPF_LDX and ins.imm != 0:
        raise VerifierError(Errno.EINVAL, "BPF_LDX uses reserved fields")
    elif cls in (isa.BPF_JMP, isa.BPF_JMP32):
        _reserved_jmp(ins)


def _reserved_jmp(ins: Insn) -> None:
    cls, op = ins.cls, ins.op
    if op == isa.BPF_CALL:
        if (
            (ins.src != isa.BPF_PSEUDO_KFUNC_CALL and ins.off != 0)
            or ins.src not in (0, isa.BPF_PSEUDO_CALL, isa.BPF_PSEUDO_KFUNC_CALL)
            or ins.dst != 0
        ):
            raise VerifierError(Errno.EINVAL, "BPF_CALL uses reserved fields")
    elif op == isa.BPF_JA:
        if (
            ins.src
            or ins.dst
            or (cls == isa.BPF_JMP and ins.imm)
            or (cls == isa.BPF_JMP32 and ins.off)
        ):
            raise VerifierError(Errno.EINVAL, "BPF_JA uses reserved fields")
    elif op == isa.BPF_EXIT:
        if ins.imm or ins.src or ins.dst:
            raise VerifierError(Errno.EINVAL, "BPF_EXIT uses reserved fields")
    elif (ins.imm if ins.source == isa.BPF_X else ins.src) != 0:
        raise VerifierError(Errno.EINVAL, "BPF_JMP/JMP32 uses reserved fields")


def jump_target(pc: int, ins: Insn) -> int:
    if ins.cls == isa.BPF_JMP32 and ins.op == isa.BPF_JA:
        return pc + ins.imm + 1
    return pc + ins.off + 1


@dataclass
class Cfg:
    """Subprogram starts and ends, and the instructions where states are compared."""

    starts: list[int]
    prune: set[int] = field(default_factory=set)


def check_cfg(insns: list[Insn]) -> Cfg:
    """``check_subprogs`` and ``check_cfg``."""
    n = len(insns)
    starts = {0}
    for pc, ins in enumerate(insns):
        if ins.code == isa.BPF_JMP | isa.BPF_CALL and ins.src == isa.BPF_PSEUDO_CALL:
            t = pc + ins.imm + 1
            if not 0 <= t < n:
                raise VerifierError(Errno.EINVAL, "call to invalid destination")
            starts.add(t)
        elif ins.code == isa.BPF_JMP | isa.BPF_CALL and ins.src == isa.BPF_PSEUDO_KFUNC_CALL:
            raise VerifierError(
                Errno.EOPNOTSUPP, f"calls to kernel functions (kfunc {ins.imm}) are not modelled"
            )
    order = sorted(starts)
    cfg = Cfg(order)
    ends = [*order[1:], n]
    half = {pc + 1 for pc, ins in enumerate(insns) if ins.is_ld_imm64()}
    for start, end in zip(order, ends, strict=True):
        for pc in range(start, end):
            if pc in half:
                continue
            ins = insns[pc]
            if ins.cls in (isa.BPF_JMP, isa.BPF_JMP32) and ins.op not in (
                isa.BPF_CALL,
                isa.BPF_EXIT,
            ):
                t = jump_target(pc, ins)
                if not start <= t < end:
                    raise VerifierError(Errno.EINVAL, f"jump out of range from insn {pc} to {t}")
        last = end - 1
        code = insns[last].code if last not in half else -1
        if code not in (isa.BPF_JMP | isa.BPF_EXIT, isa.BPF_JMP | isa.BPF_JA, isa.BPF_JMP32):
            raise VerifierError(Errno.EINVAL, "last insn is not an exit or jmp")
    _walk(insns, cfg, half)
    return cfg


def _walk(insns: list[Insn], cfg: Cfg, half: set[int]) -> None:
    n = len(insns)
    seen = [False] * n
    todo = [0]
    while todo:
        pc = todo.pop()
        if seen[pc]:
            continue
        seen[pc] = True
        ins = insns[pc]
        nxt: list[int] = []
        if ins.is_ld_imm64():
            seen[pc + 1] = True
            nxt = [pc + 2]
        elif ins.cls in (isa.BPF_JMP, isa.BPF_JMP32):
            op = ins.op
            if op == isa.BPF_EXIT:
                nxt = []
            elif op == isa.BPF_CALL:
                nxt = [pc + 1]
                cfg.prune.add(pc + 1)
                if ins.src == isa.BPF_PSEUDO_CALL:
                    cfg.prune.add(pc)
                    nxt.append(pc + ins.imm + 1)
            elif op == isa.BPF_JA:
                t = jump_target(pc, ins)
                nxt = [t]
                cfg.prune.add(t)
            else:
                cfg.prune.add(pc)
                nxt = [pc + 1, jump_target(pc, ins)]
        else:
            nxt = [pc + 1]
        for t in nxt:
            if t in half:
                raise VerifierError(Errno.EINVAL, f"jump into the middle of ldimm64 insn {t - 1}")
            if not 0 <= t < n:
                raise VerifierError(Errno.EINVAL, f"jump out of range from insn {pc} to {t}")
            if not seen[t]:
                todo.append(t)
    for pc in range(n):
        if not seen[pc]:
            raise VerifierError(Errno.EINVAL, f"unreachable insn {pc}")
