"""Load-time checks: what the kernel's verifier refuses and this package can see statically.

A small abstract interpretation in the manner of ``do_check()`` (``kernel/bpf/verifier.c``):
every path is walked with each register's kind -- context, packet pointer (``id``, ``off``,
``r``), ``data_end``, stack, scalar (constant or not) -- and comparisons of a packet pointer with
``data_end`` grow the range of every pointer sharing its id (``find_good_pkt_pointers()``).
Helpers that move packet data forget all packet pointers (``clear_all_pkt_pointers()``).
It refuses, with the verifier's wording and ``EACCES``:

- a packet access outside the range proven by a check (``invalid access to packet``);
- a context access that is not a 4-byte read of a ``struct xdp_md`` field the program type
  may read (``invalid bpf_context access``).

Anything it cannot follow (other pointer kinds, more than ``MAX_STEPS`` instructions walked)
it accepts; the interpreter still checks every access at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdptui.bpf import isa
from xdptui.bpf import memory as mem
from xdptui.bpf.isa import Insn
from xdptui.bpf.objfile import BpfProgram
from xdptui.model.errors import Errno, KernelError

MAX_STEPS = 200_000
PKT_CHANGING = {44, 54, 65}  # bpf_helper_changes_pkt_data() for XDP


@dataclass(frozen=True)
class Reg:
    """One register's abstract value."""

    kind: str  # "ctx", "pkt", "pkt_end", "stack", "scalar", "unknown"
    id: int = 0
    off: int = 0
    range: int = 0
    const: int | None = None


UNKNOWN = Reg("unknown")
SCALAR = Reg("scalar")


@dataclass(frozen=True)
class Frame:
    regs: tuple[Reg, ...]
    spills: tuple[tuple[int, Reg], ...]
    ret: int = -1


@dataclass(frozen=True)
class State:
    pc: int
    frames: tuple[Frame, ...]
    next_id: int = 1


def _const(v: int) -> Reg:
    return Reg("scalar", const=v & 0xFFFFFFFFFFFFFFFF)


def check(prog: BpfProgram) -> None:
    """Walk every path of ``prog``; raise ``KernelError(EACCES, ...)`` on a sure violation."""
    insns = prog.insns
    regs = [UNKNOWN] * 11
    regs[1] = Reg("ctx")
    regs[10] = Reg("stack")
    stack = [State(0, (Frame(tuple(regs), ()),))]
    seen: set[State] = set()
    steps = 0
    while stack:
        st = stack.pop()
        while True:
            if st in seen:
                break
            seen.add(st)
            steps += 1
            if steps > MAX_STEPS or not 0 <= st.pc < len(insns):
                return
            nxt = _step(prog, insns, st)
            if not nxt:
                break
            st = nxt[0]
            stack.extend(nxt[1:])


def _set(frame: Frame, reg: int, value: Reg) -> Frame:
    regs = list(frame.regs)
    regs[reg] = value
    return replace(frame, regs=tuple(regs))


def _top(st: State, frame: Frame, pc: int, next_id: int | None = None) -> State:
    return State(pc, (*st.frames[:-1], frame), st.next_id if next_id is None else next_id)


def _refuse_pkt(reg: int, r: Reg, off: int, size: int) -> KernelError:
    return KernelError(
        Errno.EACCES,
        f"invalid access to packet, off={r.off + off} size={size}, "
        f"R{reg}(id={r.id},off={r.off + off},r={r.range})\nR{reg} offset is outside of the packet",
    )


def _check_access(prog: BpfProgram, reg: int, r: Reg, off: int, size: int, write: bool) -> None:
    if r.kind == "pkt":
        start = r.off + off
        if start < 0 or start + size > r.range:
            raise _refuse_pkt(reg, r, off, size)
    elif r.kind == "ctx":
        ok_field = off in mem.XDP_MD_FIELDS and size == 4 and not write
        if off == 20 and prog.expected_attach_type != "xdp/devmap":
            ok_field = False
        if not ok_field:
            raise KernelError(Errno.EACCES, f"invalid bpf_context access off={off} size={size}")


def _alu(st: State, fr: Frame, ins: Insn) -> State:
    dst = fr.regs[ins.dst]
    is64 = ins.cls == isa.BPF_ALU64
    src = fr.regs[ins.src] if ins.source == isa.BPF_X else _const(ins.imm)
    op = ins.op
    if op == isa.BPF_MOV and ins.off == 0:
        val = src if is64 else (_const(src.const & 0xFFFFFFFF) if src.const is not None else SCALAR)
        return _top(st, _set(fr, ins.dst, val), st.pc + 1)
    if dst.kind == "pkt" and is64 and op in (isa.BPF_ADD, isa.BPF_SUB) and src.kind == "scalar":
        if src.const is not None:
            delta = src.const if src.const < 1 << 63 else src.const - (1 << 64)
            delta = delta if op == isa.BPF_ADD else -delta
            return _top(st, _set(fr, ins.dst, replace(dst, off=dst.off + delta)), st.pc + 1)
        if op == isa.BPF_ADD:
            fresh = Reg("pkt", st.next_id, 0, 0)
            return _top(st, _set(fr, ins.dst, fresh), st.pc + 1, st.next_id + 1)
    if dst.kind == "scalar" and src.kind == "pkt" and is64 and op == isa.BPF_ADD:
        fresh = (
            Reg("pkt", st.next_id, 0, 0)
            if dst.const is None
            else replace(src, off=src.off + dst.const)
        )
        return _top(st, _set(fr, ins.dst, fresh), st.pc + 1, st.next_id + 1)
    result = (
        SCALAR
        if dst.kind in ("scalar", "pkt", "pkt_end") and src.kind in ("scalar", "pkt", "pkt_end")
        else UNKNOWN
    )
    if dst.const is not None and src.const is not None and result is SCALAR:
        v = _fold(op, dst.const, src.const, is64)
        if v is not None:
            result = _const(v)
    return _top(st, _set(fr, ins.dst, result), st.pc + 1)


def _fold(op: int, a: int, b: int, is64: bool) -> int | None:
    mask = (1 << 64) - 1 if is64 else 0xFFFFFFFF
    a, b = a & mask, b & mask
    shift = 63 if is64 else 31
    ops = {
        isa.BPF_ADD: a + b,
        isa.BPF_SUB: a - b,
        isa.BPF_MUL: a * b,
        isa.BPF_AND: a & b,
        isa.BPF_OR: a | b,
        isa.BPF_XOR: a ^ b,
        isa.BPF_LSH: a << (b & shift),
        isa.BPF_RSH: a >> (b & shift),
    }
    v = ops.get(op)
    return None if v is None else v & mask


def _grow(fr: Frame, pkt_id: int, new_range: int) -> Frame:
    def up(r: Reg) -> Reg:
        if r.kind == "pkt" and r.id == pkt_id and r.range < new_range:
            return replace(r, range=new_range)
        return r

    return Frame(tuple(up(r) for r in fr.regs), tuple((o, up(r)) for o, r in fr.spills), fr.ret)


def _branch(st: State, fr: Frame, ins: Insn, target: int) -> list[State]:
    a = fr.regs[ins.dst]
    b = fr.regs[ins.src] if ins.source == isa.BPF_X else _const(ins.imm)
    op = ins.op
    fall, taken = fr, fr
    if ins.cls == isa.BPF_JMP and {a.kind, b.kind} == {"pkt", "pkt_end"}:
        pkt = a if a.kind == "pkt" else b
        flip = a.kind == "pkt_end"
        # Normalise to "pkt OP end".
        if flip:
            op = {
                isa.BPF_JGT: isa.BPF_JLT,
                isa.BPF_JLT: isa.BPF_JGT,
                isa.BPF_JGE: isa.BPF_JLE,
                isa.BPF_JLE: isa.BPF_JGE,
            }.get(op, op)
        if op == isa.BPF_JGT:  # taken: pkt > end; fall: pkt <= end
            fall = _grow(fr, pkt.id, pkt.off)
        elif op == isa.BPF_JGE:  # fall: pkt < end
            fall = _grow(fr, pkt.id, pkt.off + 1)
        elif op == isa.BPF_JLT:
            taken = _grow(fr, pkt.id, pkt.off + 1)
        elif op == isa.BPF_JLE:
            taken = _grow(fr, pkt.id, pkt.off)
    elif a.const is not None and b.const is not None and a.kind == b.kind == "scalar":
        import numpy as np

        from xdptui.bpf import alu

        hit = bool(
            alu.condition(
                op,
                ins.cls == isa.BPF_JMP32,
                np.array([a.const], dtype=np.uint64),
                np.array([b.const], dtype=np.uint64),
            )[0]
        )
        return [_top(st, fr, target if hit else st.pc + 1)]
    return [_top(st, fall, st.pc + 1), _top(st, taken, target)]


def _step(prog: BpfProgram, insns: list[Insn], st: State) -> list[State]:
    ins = insns[st.pc]
    fr = st.frames[-1]
    cls = ins.cls
    if ins.is_ld_imm64():
        return [
            _top(st, _set(fr, ins.dst, _const(ins.imm64) if ins.src == 0 else UNKNOWN), st.pc + 2)
        ]
    if cls in (isa.BPF_ALU, isa.BPF_ALU64):
        return [_alu(st, fr, ins)]
    if cls == isa.BPF_LDX:
        base = fr.regs[ins.src]
        _check_access(prog, ins.src, base, ins.off, ins.size, False)
        if base.kind == "ctx":
            val = {0: Reg("pkt", 0, 0, 0), 4: Reg("pkt_end")}.get(ins.off, SCALAR)
        elif base.kind == "stack":
            val = dict(fr.spills).get(base.off + ins.off, UNKNOWN) if ins.size == 8 else SCALAR
        else:
            val = SCALAR if base.kind == "pkt" else UNKNOWN
        return [_top(st, _set(fr, ins.dst, val), st.pc + 1)]
    if cls in (isa.BPF_ST, isa.BPF_STX):
        base = fr.regs[ins.dst]
        _check_access(prog, ins.dst, base, ins.off, ins.size, True)
        if base.kind == "stack":
            slot = base.off + ins.off
            spills = {o: r for o, r in fr.spills if not (slot - 8 < o < slot + ins.size)}
            if cls == isa.BPF_STX and ins.size == 8 and ins.mode == isa.BPF_MEM:
                spills[slot] = fr.regs[ins.src]
            fr = replace(fr, spills=tuple(sorted(spills.items())))
        if ins.mode == isa.BPF_ATOMIC and ins.imm & isa.BPF_FETCH:
            fr = _set(fr, 0 if ins.imm == isa.BPF_CMPXCHG else ins.src, UNKNOWN)
        return [_top(st, fr, st.pc + 1)]
    if cls not in (isa.BPF_JMP, isa.BPF_JMP32):
        return []
    op = ins.op
    if op == isa.BPF_EXIT:
        if len(st.frames) == 1:
            return []
        caller = st.frames[-2]
        regs = list(caller.regs)
        regs[0] = fr.regs[0]
        for r in range(1, 6):
            regs[r] = UNKNOWN
        return [State(fr.ret, (*st.frames[:-2], replace(caller, regs=tuple(regs))), st.next_id)]
    if op == isa.BPF_CALL:
        if ins.src == isa.BPF_PSEUDO_CALL:
            if len(st.frames) >= isa.MAX_CALL_FRAMES:
                return []
            regs = list(fr.regs[:6]) + [UNKNOWN] * 4 + [Reg("stack")]
            callee = Frame(tuple(regs), (), st.pc + 1)
            return [State(st.pc + ins.imm + 1, (*st.frames, callee), st.next_id)]
        regs = list(fr.regs)
        regs[0] = SCALAR
        for r in range(1, 6):
            regs[r] = UNKNOWN
        frames = list(st.frames)
        frames[-1] = replace(fr, regs=tuple(regs))
        if ins.imm in PKT_CHANGING:
            frames = [_forget_pkt(f) for f in frames]
        return [State(st.pc + 1, tuple(frames), st.next_id)]
    if op == isa.BPF_JA:
        off = ins.imm if cls == isa.BPF_JMP32 else ins.off
        return [_top(st, fr, st.pc + off + 1)]
    return _branch(st, fr, ins, st.pc + ins.off + 1)


def _forget_pkt(fr: Frame) -> Frame:
    def f(r: Reg) -> Reg:
        return UNKNOWN if r.kind in ("pkt", "pkt_end") else r

    return Frame(tuple(f(r) for r in fr.regs), tuple((o, f(r)) for o, r in fr.spills), fr.ret)
