"""ALU instructions and conditional jumps as the verifier follows them.

``check_alu_op`` / ``adjust_reg_min_max_vals``: scalars through ``scalar``'s range
arithmetic, pointers through ``adjust_ptr_min_max_vals`` (a constant moves the fixed offset, a
scalar makes a variable offset, and a packet pointer that moves by a variable gets a new id
and no range; ``check_reg_sane_offset`` bounds both). ``check_cond_jmp_op``: a branch whose
outcome the ranges decide is followed one way only; otherwise both ways, each knowing what
the comparison proved (``reg_set_min_max``), a null check splitting a map value from NULL
(``mark_ptr_or_null_regs``), and a packet pointer compared with ``data_end`` (or a metadata
pointer with ``data``) proving a range for every pointer of its id (``find_good_pkt_pointers``).
A scalar copied by ``mov`` stays linked to its source, and what a branch proves of one holds
for the other (``sync_linked_regs``).
"""

from __future__ import annotations

from xdptui.bpf import isa
from xdptui.bpf import scalar as sc
from xdptui.bpf import tnum as tn
from xdptui.bpf.isa import Insn
from xdptui.bpf.vstate import (
    CTX,
    MAP_PTR,
    MAP_VALUE,
    PKT,
    PKT_END,
    PKT_META,
    PKT_TYPES,
    SCALAR,
    STACK,
    UNKNOWN,
    Env,
    Reg,
    State,
    VerifierError,
    assign_scalar_id,
    reg_width,
    scalar,
    zext,
)
from xdptui.model.errors import Errno

BPF_MAX_VAR_OFF = 1 << 29
MAX_PACKET_OFF = 0xFFFF
ALU_STR = {
    isa.BPF_ADD: "+=",
    isa.BPF_SUB: "-=",
    isa.BPF_MUL: "*=",
    isa.BPF_DIV: "/=",
    isa.BPF_OR: "|=",
    isa.BPF_AND: "&=",
    isa.BPF_LSH: "<<=",
    isa.BPF_RSH: ">>=",
    isa.BPF_NEG: "neg",
    isa.BPF_MOD: "%=",
    isa.BPF_XOR: "^=",
    isa.BPF_MOV: "=",
    isa.BPF_ARSH: "s>>=",
    isa.BPF_END: "endian",
}
_ARITH_OK = (CTX, MAP_VALUE, STACK, PKT, PKT_META)
UNKNOWN32 = zext(sc.unknown(32))


_CONSTS: dict[int, Reg] = {}


def _imm(ins: Insn, is64: bool) -> Reg:
    """The immediate as a register (sign-extended for ALU64); shared, registers are values."""
    v = (ins.imm if is64 else ins.imm & tn.M32) & tn.M64
    reg = _CONSTS.get(v)
    if reg is None:
        reg = scalar(sc.const(v))
        if len(_CONSTS) < 4096:
            _CONSTS[v] = reg
    return reg


def check_alu(env: Env, st: State, ins: Insn) -> None:
    """One ALU or ALU64 instruction: the new value of ``dst``."""
    op, is64, d = ins.op, ins.cls == isa.BPF_ALU64, ins.dst
    bits = 64 if is64 else 32
    if op == isa.BPF_MOV:
        if ins.source == isa.BPF_X:
            src = env.read(st, ins.src)
            out = _mov(env, st, ins, src, is64)
        else:
            out = _imm(ins, is64)
        env.write(st, d, out)
        return
    dst = env.read(st, d)
    if op in (isa.BPF_NEG, isa.BPF_END):
        if dst.t != SCALAR:
            out = UNKNOWN if is64 else UNKNOWN32
        elif op == isa.BPF_NEG:
            out = _scalar_op(isa.BPF_SUB, scalar(sc.const(0)), dst, is64)
        else:
            out = _endian(dst, ins)
        env.write(st, d, out)
        return
    if ins.source == isa.BPF_X:
        src = env.read(st, ins.src)
    else:
        if op in (isa.BPF_DIV, isa.BPF_MOD) and ins.imm == 0:
            raise VerifierError(Errno.EINVAL, "div by zero")
        if op in (isa.BPF_LSH, isa.BPF_RSH, isa.BPF_ARSH) and not 0 <= ins.imm < bits:
            raise VerifierError(Errno.EINVAL, f"invalid shift {ins.imm}")
        src = _imm(ins, is64)
    if src.t != SCALAR:
        if dst.t != SCALAR:
            if op == isa.BPF_SUB:
                env.write(st, d, UNKNOWN if is64 else UNKNOWN32)
                return
            raise VerifierError(Errno.EACCES, f"R{d} pointer {ALU_STR[op]} pointer prohibited")
        out = _ptr_arith(env, ins, src, dst, True)
    elif dst.t != SCALAR:
        out = _ptr_arith(env, ins, dst, src, False)
    else:
        out = _link_delta(op, dst, src, is64, _scalar_op(op, dst, src, is64))
    env.write(st, d, out)


S32_MIN, S32_MAX = -(1 << 31), (1 << 31) - 1


def _link_delta(op: int, dst: Reg, src: Reg, is64: bool, out: Reg) -> Reg:
    """``adjust_reg_min_max_vals``: ``rX += K`` (or ``-= K``) on a linked scalar keeps the
    link with the constant as its delta (``BPF_ADD_CONST64``, or ``BPF_ADD_CONST32`` for a
    32-bit add to a value that fits in 32 bits), so that a later branch on rX still bounds
    its copies; any other operation, a second delta, or a constant outside s32 ends it."""
    if op not in (isa.BPF_ADD, isa.BPF_SUB) or not dst.id:
        return out
    k = src.r if is64 else src.r32
    if k[1] != 0:  # is_reg_const
        return out
    val = sc.signed(k[0], 64 if is64 else 32)
    if is64 and not S32_MIN <= val <= S32_MAX:
        return out
    if not is64 and dst.r[3] > tn.M32:
        return out
    if op == isa.BPF_SUB:
        if val == S32_MIN:
            return out
        val = -val
    if dst.link:
        return out
    return out.with_(id=dst.id, link=64 if is64 else 32, delta=val)


def _mov(env: Env, st: State, ins: Insn, src: Reg, is64: bool) -> Reg:
    """``check_alu_op``'s ``BPF_MOV``: a copy of a scalar stays linked to its source (both
    get one id, ``assign_scalar_id_before_mov``) whenever the copy holds the same value: a
    64-bit move; a 32-bit move of a value that fits in 32 bits; a sign-extending move of a
    value below the sign bit."""
    if src.t != SCALAR:
        if is64 and ins.off == 0:
            return src
        return UNKNOWN if is64 else UNKNOWN32
    # a sign-extending move copies the value only while it is below its sign bit
    fits = src.r[3] < 1 << (ins.off - 1) if ins.off else is64 or reg_width(src) <= 32
    if fits:
        src = assign_scalar_id(env, src)
        env.write(st, ins.src, src)
    if is64 and ins.off == 0:
        return src
    if is64:
        out = scalar(sc.movsx(src.r, ins.off, 64))
    elif ins.off:
        out = zext(sc.movsx(src.r32, ins.off, 32))
    else:
        out = zext(src.r32)
    return out.with_(id=src.id) if fits and src.id else out


def _endian(dst: Reg, ins: Insn) -> Reg:
    """``BPF_END``: a byte swap (or a truncation, for ``to_le`` on a little-endian host)."""
    bits = ins.imm
    swap = ins.cls == isa.BPF_ALU64 or ins.source == isa.BPF_X
    f = (1 << bits) - 1
    v, m = dst.r[0] & f, dst.r[1] & f
    if swap:
        n = bits // 8
        v = int.from_bytes(v.to_bytes(n, "little"), "big")
        m = int.from_bytes(m.to_bytes(n, "little"), "big")
    return scalar(sc.sync((v, m, 0, f, 0, f), 64) or sc.unknown())


def _scalar_op(op: int, a: Reg, b: Reg, is64: bool) -> Reg:
    if is64:
        return scalar(sc.alu(op, a.r, b.r, 64))
    return zext(sc.alu(op, a.r32, b.r32, 32))


def _sane(reg: Reg, what: str) -> None:
    """``check_reg_sane_offset``."""
    val = sc.signed(reg.r[0], 64)
    if reg.r[1] == 0 and not -BPF_MAX_VAR_OFF < val < BPF_MAX_VAR_OFF:
        raise VerifierError(Errno.EINVAL, f"math between {what} pointer and {val} is not allowed")
    if not -BPF_MAX_VAR_OFF < reg.off < BPF_MAX_VAR_OFF:
        raise VerifierError(Errno.EINVAL, f"{what} pointer offset {reg.off} is not allowed")
    smin = reg.r[4]
    if smin == sc.smin_of(64):
        raise VerifierError(
            Errno.EINVAL,
            f"math between {what} pointer and register with unbounded min value is not allowed",
        )
    if not -BPF_MAX_VAR_OFF < smin < BPF_MAX_VAR_OFF:
        raise VerifierError(Errno.EINVAL, f"value {smin} makes {what} pointer be out of bounds")


def _ptr_arith(env: Env, ins: Insn, ptr: Reg, off: Reg, reversed_: bool) -> Reg:
    """``adjust_ptr_min_max_vals``: ``ptr op= off`` (``reversed_``: ``scalar += ptr``)."""
    d, op = ins.dst, ins.op
    if ins.cls != isa.BPF_ALU64:
        if op == isa.BPF_SUB:
            return UNKNOWN32
        raise VerifierError(Errno.EACCES, f"R{d} 32-bit pointer arithmetic prohibited")
    what = ptr.type_str()
    if ptr.null:
        raise VerifierError(
            Errno.EACCES, f"R{d} pointer arithmetic on {what} prohibited, null-check it first"
        )
    known = off.r[1] == 0
    val = sc.signed(off.r[0], 64)
    if ptr.t not in _ARITH_OK:
        if ptr.t == MAP_PTR and known and val == 0 and op == isa.BPF_ADD:
            return ptr
        raise VerifierError(Errno.EACCES, f"R{d} pointer arithmetic on {what} prohibited")
    if op in (isa.BPF_AND, isa.BPF_OR, isa.BPF_XOR):
        raise VerifierError(
            Errno.EACCES, f"R{d} bitwise operator {ALU_STR[op]} on pointer prohibited"
        )
    if op not in (isa.BPF_ADD, isa.BPF_SUB):
        raise VerifierError(
            Errno.EACCES, f"R{d} pointer arithmetic with {ALU_STR[op]} operator prohibited"
        )
    _sane(off, what)
    _sane(ptr, what)
    if op == isa.BPF_ADD:
        if known and -(1 << 31) <= ptr.off + val < 1 << 31:
            out = ptr.with_(off=ptr.off + val)
        else:
            out = ptr.with_(r=sc.alu(isa.BPF_ADD, ptr.r, off.r, 64))
            if ptr.t in PKT_TYPES:
                out = out.with_(id=env.new_id(), rng=0)
    else:
        if reversed_:
            raise VerifierError(Errno.EACCES, f"R{d} tried to subtract pointer from scalar")
        if ptr.t == STACK:
            raise VerifierError(Errno.EACCES, f"R{d} subtraction from stack pointer prohibited")
        if known and -(1 << 31) <= ptr.off - val < 1 << 31:
            out = ptr.with_(off=ptr.off - val)
        else:
            out = ptr.with_(r=sc.alu(isa.BPF_SUB, ptr.r, off.r, 64))
            if ptr.t in PKT_TYPES:
                out = out.with_(id=env.new_id(), rng=0 if off.r[4] < 0 else ptr.rng)
    _sane(out, what)
    return out


# -- conditional jumps -------------------------------------------------------------------------


def cond_jump(env: Env, st: State, ins: Insn, pc: int) -> tuple[State | None, State | None]:
    """``check_cond_jmp_op``: the fall-through state and the taken state (None where that
    way cannot happen). The fall-through is ``st`` itself, refined."""
    op, is32 = ins.op, ins.cls == isa.BPF_JMP32
    a = env.read(st, ins.dst)
    if ins.source == isa.BPF_X:
        b = env.read(st, ins.src)
    else:
        b = scalar(sc.const(ins.imm & tn.M32 if is32 else ins.imm))
    if a.t == SCALAR and b.t == SCALAR:
        ra, rb = (a.r32, b.r32) if is32 else (a.r, b.r)
        pred = sc.branch_taken(op, ra, rb)
        if pred != -1:
            return (None, st) if pred else (st, None)
        taken_r = sc.refine(op, ra, rb, 32 if is32 else 64)
        fall_r = sc.refine(sc.negate(op), ra, rb, 32 if is32 else 64)
        if taken_r is None:
            return (st, None) if fall_r is not None else (None, None)
        if fall_r is None:
            return (None, st)
        taken = env.branch(st, pc + ins.off + 1)
        _apply(taken, ins, a, b, taken_r, is32)
        _apply(st, ins, a, b, fall_r, is32)
        return st, taken
    null_check = (
        ins.source == isa.BPF_K and ins.imm == 0 and op in (isa.BPF_JEQ, isa.BPF_JNE) and not is32
    )
    if null_check and a.is_ptr and not a.null:
        return (None, st) if op == isa.BPF_JNE else (st, None)
    if not is32:
        pred = _pkt_branch_taken(op, a, b)
        if pred != -1:
            return (None, st) if pred else (st, None)
    taken = env.branch(st, pc + ins.off + 1)
    if null_check and a.null and a.t in (MAP_VALUE, MAP_PTR):
        _null_split(st, a.id, op == isa.BPF_JNE)
        _null_split(taken, a.id, op == isa.BPF_JEQ)
    elif not is32:
        _pkt_compare(st, taken, op, a, b, ins)
    return st, taken


def _apply(
    st: State, ins: Insn, a: Reg, b: Reg, refined: tuple[sc.Range, sc.Range], is32: bool
) -> None:
    ra, rb = refined
    _set_scalar(st, ins.dst, a, ra, is32)
    if ins.source == isa.BPF_X and ins.src != ins.dst:
        _set_scalar(st, ins.src, b, rb, is32)


def _set_scalar(st: State, regno: int, old: Reg, r: sc.Range, is32: bool) -> None:
    if is32:
        r64 = sc.merge32(old.r, r)
        r32 = r
    else:
        r64 = r
        r32 = _intersect32(old.r32, sc.narrow(r))
    new = old.with_(r=r64, r32=r32)
    st.cur.regs[regno] = new
    if old.id:
        _sync_linked_regs(st, new)


def _sync_linked_regs(st: State, known: Reg) -> None:
    """``sync_linked_regs``: every scalar (register or spill, any frame) linked to ``known``
    learns what the branch proved of it: the same range when both hold the same value, else
    ``known``'s range plus the difference of their deltas (computed in 32 bits and
    zero-extended when either delta came from a 32-bit add). A 32-bit and a 64-bit delta
    are not comparable and are left alone."""
    for f, i, reg in st.all_regs():
        if reg.t != SCALAR or reg.id != known.id or reg is known:
            continue
        if {reg.link, known.link} == {32, 64}:
            continue
        if reg.delta == known.delta:
            st.replace_reg(f, i, reg.with_(r=known.r, r32=known.r32))
            continue
        diff = reg.delta - known.delta
        if 32 in (reg.link, known.link):
            moved = zext(sc.alu(isa.BPF_ADD, known.r32, sc.const(diff & tn.M32, 32), 32))
        else:
            moved = scalar(sc.alu(isa.BPF_ADD, known.r, sc.const(diff & tn.M64), 64))
        st.replace_reg(f, i, reg.with_(r=moved.r, r32=moved.r32))


def _intersect32(a: sc.Range, b: sc.Range) -> sc.Range:
    if (a[0] ^ b[0]) & ~(a[1] | b[1]):
        return b
    t = tn.intersect((a[0], a[1]), (b[0], b[1]))
    r = (t[0], t[1], max(a[2], b[2]), min(a[3], b[3]), max(a[4], b[4]), min(a[5], b[5]))
    return sc.sync(r, 32) or b


def _null_split(st: State, id_: int, is_null: bool) -> None:
    """``mark_ptr_or_null_regs``: every copy of the pointer is NULL, or a valid pointer
    (``mark_ptr_not_null_reg``: a map value, or for an outer map's lookup the inner map's
    template as CONST_PTR_TO_MAP, usable as a helper's map argument)."""
    for f, i, reg in st.all_regs():
        if reg.t in (MAP_VALUE, MAP_PTR) and reg.null and reg.id == id_:
            st.replace_reg(f, i, scalar(sc.const(0)) if is_null else reg.with_(null=False))


def _init_pkt(reg: Reg, t: int) -> bool:
    """``reg_is_init_pkt_pointer``: ``ctx->data`` itself."""
    return reg.t == t and reg.off == 0 and reg.r[0] == 0 and reg.r[1] == 0


def _good_pkt(st: State, dst: Reg, open_: bool) -> None:
    """``find_good_pkt_pointers``: pointers of ``dst``'s id may read ``dst.off`` bytes (one
    more when the comparison was strict)."""
    if dst.off < 0 or (dst.off == 0 and open_):
        return
    if dst.r[3] > MAX_PACKET_OFF or dst.r[3] + dst.off > MAX_PACKET_OFF:
        return
    new_range = dst.off + (1 if open_ else 0)
    for f, i, reg in st.all_regs():
        if reg.t == dst.t and reg.id == dst.id and reg.rng < new_range:
            st.replace_reg(f, i, reg.with_(rng=new_range))


AT_PKT_END, BEYOND_PKT_END = -1, -2


def _pkt_branch_taken(op: int, a: Reg, b: Reg) -> int:
    """``is_pkt_ptr_branch_taken``: a pointer already known at or beyond ``data_end``."""
    if b.t == PKT_END:
        pkt = a
    elif a.t == PKT_END:
        pkt, op = b, sc.flip(op)
    else:
        return -1
    if pkt.t != PKT or pkt.rng >= 0:
        return -1
    if op in (isa.BPF_JLE, isa.BPF_JGT) and pkt.rng == BEYOND_PKT_END:
        return int(op == isa.BPF_JGT)
    if op in (isa.BPF_JLT, isa.BPF_JGE):
        return int(op == isa.BPF_JGE)
    return -1


def _mark_pkt_end(st: State, regno: int, beyond: bool) -> None:
    """``mark_pkt_end``: this register is at (or past) ``data_end``: nothing reads through it."""
    reg = st.cur.regs[regno]
    if reg.t == PKT:
        st.cur.regs[regno] = reg.with_(rng=BEYOND_PKT_END if beyond else AT_PKT_END)


def _pkt_compare(fall: State, taken: State, op: int, a: Reg, b: Reg, ins: Insn) -> None:
    """``try_match_pkt_pointers``: ``pkt' OP pkt_end`` and ``meta' OP pkt`` (either order):
    the way that proves ``ptr <= end`` gives its id ``off`` bytes (``ptr < end``: one more),
    the way that proves ``ptr > end`` (or ``>=``) marks the pointer beyond (or at) the end."""
    left = (a.t == PKT and b.t == PKT_END) or (a.t == PKT_META and _init_pkt(b, PKT))
    right = (a.t == PKT_END and b.t == PKT) or (_init_pkt(a, PKT) and b.t == PKT_META)
    if not (left or right):
        return
    ptr = a if left else b
    regno = ins.dst if left else ins.src
    if op not in (isa.BPF_JGT, isa.BPF_JLT, isa.BPF_JGE, isa.BPF_JLE):
        return
    if right:
        op = sc.flip(op)
    # Now "ptr OP end".
    if op == isa.BPF_JGT:
        _good_pkt(fall, ptr, False)
        _mark_pkt_end(taken, regno, True)
    elif op == isa.BPF_JGE:
        _good_pkt(fall, ptr, True)
        _mark_pkt_end(taken, regno, False)
    elif op == isa.BPF_JLT:
        _good_pkt(taken, ptr, True)
        _mark_pkt_end(fall, regno, False)
    else:
        _good_pkt(taken, ptr, False)
        _mark_pkt_end(fall, regno, True)
