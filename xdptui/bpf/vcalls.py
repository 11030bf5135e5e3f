"""Calls as the verifier follows them: helpers (``check_helper_call``: the prototype's
arguments, ``check_map_func_compatibility``, the return value, ``r1``-``r5`` clobbered,
packet pointers forgotten after a helper that moves packet data) and bpf-to-bpf calls
(``check_func_call`` / ``prepare_func_exit``: a new frame with ``r1``-``r5`` passed, at most
``MAX_CALL_FRAMES`` deep).
"""

from __future__ import annotations

from xdptui.bpf import scalar as sc
from xdptui.bpf import vhelpers as vh
from xdptui.bpf import vmem
from xdptui.bpf.isa import MAX_CALL_FRAMES, Insn
from xdptui.bpf.maps import MapType
from xdptui.bpf.vstate import (
    CTX,
    INIT,
    MAP_PTR,
    MAP_VALUE,
    NOT_INIT,
    PKT_END,
    PKT_TYPES,
    SCALAR,
    STACK,
    UNKNOWN,
    Env,
    Func,
    Reg,
    State,
    VerifierError,
)
from xdptui.model.errors import Errno

MEM_TYPES = "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_"
ARRAY_TYPES = (MapType.ARRAY, MapType.PERCPU_ARRAY)
# The inner map types whose maps the interpreter runs behind a map-in-map.
INNER_RUN = frozenset(
    (
        *ARRAY_TYPES,
        MapType.HASH,
        MapType.PERCPU_HASH,
        MapType.LRU_HASH,
        MapType.LRU_PERCPU_HASH,
    )
)
# Maps a program may declare but whose use this package does not model yet.
UNMODELLED: dict[int, str] = {}


def _map_type_name(t: int) -> str:
    try:
        return f"BPF_MAP_TYPE_{MapType(t).name}"
    except ValueError:
        return f"map type {t}"


def helper_call(env: Env, st: State, ins: Insn) -> None:
    """One helper call, checked against its prototype; r0 gets its result."""
    fid = ins.imm
    name = vh.name(fid)
    if not 0 < fid < len(vh.NAMES) or fid not in vh.XDP_ALLOWED:
        if 0 < fid < len(vh.NAMES):
            raise VerifierError(
                Errno.EINVAL, f"program of this type cannot use helper {name}#{fid}"
            )
        raise VerifierError(Errno.EINVAL, f"invalid func unknown#{fid}")
    proto = vh.PROTOS.get(fid)
    if proto is None:
        why = vh.UNMODELLED_WHY.get(fid)
        raise VerifierError(
            Errno.EOPNOTSUPP,
            f"helper {name}#{fid}{f' ({why})' if why else ''} is not modelled by xdptui",
        )
    regs = st.cur.regs
    map_reg: Reg | None = None
    args = proto.args
    for i, kind in enumerate(args):
        regno = i + 1
        reg = regs[regno]
        if reg.t == NOT_INIT:
            raise VerifierError(Errno.EACCES, f"R{regno} !read_ok")
        if kind == "any":
            continue
        if kind == "map":
            if reg.t != MAP_PTR or reg.null:
                raise VerifierError(
                    Errno.EACCES, f"R{regno} type={reg.type_str()} expected=map_ptr"
                )
            map_reg = reg
            _compatible(env, reg.map, fid, name)
        elif kind == "ctx":
            if reg.t != CTX:
                raise VerifierError(Errno.EACCES, f"R{regno} type={reg.type_str()} expected=ctx")
            if reg.off or reg.r != sc.const(0):
                raise VerifierError(
                    Errno.EACCES,
                    f"dereference of modified ctx ptr R{regno} off={reg.off} disallowed",
                )
        elif kind in ("key", "value"):
            assert map_reg is not None
            m = env.maps[map_reg.map]
            size = m.key_size if kind == "key" else m.value_size
            _mem_arg(env, st, regno, reg, size, False)
        elif kind in ("mem", "mem?", "out", "u32*"):
            if kind == "u32*":
                _mem_arg(env, st, regno, reg, 4, True)
                continue
            size_reg = regs[regno + 1]
            if kind == "mem?" and reg.t == SCALAR and reg.r == sc.const(0):
                continue
            size = _size_arg(regno + 1, size_reg, args[i + 1] == "size0")
            if size:
                _mem_arg(env, st, regno, reg, size, kind == "out")
    r0 = _ret(env, st, fid, proto.ret, map_reg)
    for r in range(6):
        regs[r] = INIT
    regs[0] = r0
    if proto.pkt_changing:
        _forget_packet(st)


def _compatible(env: Env, mi: int, fid: int, name: str) -> None:
    """``check_map_func_compatibility`` (and this package's unmodelled map types)."""
    if not 0 <= mi < len(env.maps):
        raise VerifierError(Errno.EACCES, "map_ptr expected")
    t = env.maps[mi].map_type
    only = vh.MAP_ONLY.get(t)
    ok = only is None or fid in only
    allowed = vh.FUNC_ONLY.get(fid)
    if allowed is not None and t not in allowed:
        ok = False
    if not ok:
        raise VerifierError(Errno.EINVAL, f"cannot pass map_type {t} into func {name}#{fid}")
    why = UNMODELLED.get(t)
    if why is not None:
        raise VerifierError(
            Errno.EOPNOTSUPP,
            f"map '{env.maps[mi].name}' ({_map_type_name(t)}) passed to {name}: {why} "
            "are not modelled yet",
        )
    m = env.maps[mi]
    if m.is_of_maps and m.inner_meta is None:
        raise VerifierError(
            Errno.EOPNOTSUPP,
            f"map '{m.name}' ({_map_type_name(t)}) has no inner map template (declare it "
            "with __array(values, struct inner)): map-in-map without one is not modelled",
        )
    if mi >= len(env.maps) - len(env.inner_meta) and t not in INNER_RUN:
        raise VerifierError(
            Errno.EOPNOTSUPP,
            f"inner map '{m.name}' ({_map_type_name(t)}) passed to {name}: inner maps of "
            "this type are not modelled yet",
        )


def _size_arg(regno: int, reg: Reg, zero_ok: bool) -> int:
    """``check_mem_size_reg``: the largest size the register may hold."""
    if reg.t != SCALAR:
        raise VerifierError(Errno.EACCES, f"R{regno} type={reg.type_str()} expected=scalar")
    if reg.r[4] < 0:
        raise VerifierError(
            Errno.EACCES,
            f"R{regno} min value is negative, either use unsigned or 'var &= const'",
        )
    if reg.r[2] == 0 and not zero_ok:
        raise VerifierError(Errno.EACCES, "invalid zero-sized read")
    if reg.r[3] >= vmem.BPF_MAX_VAR_OFF:
        raise VerifierError(
            Errno.EACCES,
            f"R{regno} unbounded memory access, use 'var &= const' or 'if (var < const)'",
        )
    return reg.r[3]


def _mem_arg(env: Env, st: State, regno: int, reg: Reg, size: int, write: bool) -> None:
    """``check_helper_mem_access``: ``size`` bytes at the pointer must be there."""
    if reg.null:
        raise VerifierError(Errno.EACCES, f"R{regno} type={reg.type_str()} expected={MEM_TYPES}")
    if reg.t == STACK:
        vmem.helper_stack(st.frames[reg.frame], reg, regno, size, write)
    elif reg.t in PKT_TYPES:
        vmem.packet_access(reg, regno, reg.off, size)
    elif reg.t == MAP_VALUE:
        vmem.check_access(env, st, regno, 0, size, write)
    else:
        raise VerifierError(Errno.EACCES, f"R{regno} type={reg.type_str()} expected={MEM_TYPES}")


def _ret(env: Env, st: State, fid: int, kind: str, map_reg: Reg | None) -> Reg:
    if kind != "map_value_or_null":
        return UNKNOWN
    assert map_reg is not None
    m = env.maps[map_reg.map]
    meta = env.inner_meta.get(map_reg.map)
    if meta is not None:
        # check_helper_call: a lookup in an outer map gives its value or NULL; once the NULL
        # is ruled out, mark_ptr_not_null_reg makes it CONST_PTR_TO_MAP of the inner map's
        # template (map->inner_map_meta). Linux 6.18's log names it map_ptr_or_null already.
        return Reg(MAP_PTR, map=meta, id=env.new_id(), null=True)
    out = Reg(MAP_VALUE, map=map_reg.map, id=env.new_id(), null=True)
    if m.map_type in ARRAY_TYPES:
        # An array lookup with a constant key inside the array cannot fail (Linux 6.14+).
        key = st.cur.regs[2]
        if key.t == STACK and key.var_const:
            off = key.off + sc.signed(key.r[0], 64)
            raw = vmem.stack_bytes(st.frames[key.frame], off, 4)
            if raw is not None and int.from_bytes(raw, "little") < m.max_entries:
                out = out.with_(null=False, id=0)
    return out


def _forget_packet(st: State) -> None:
    """``clear_all_pkt_pointers``: after the packet moved, old pointers are unknown."""
    for f, i, reg in st.all_regs():
        if reg.t in PKT_TYPES or reg.t == PKT_END:
            st.replace_reg(f, i, UNKNOWN)


def func_call(env: Env, st: State, ins: Insn, pc: int) -> int:
    """``check_func_call``: enter the subprogram at ``pc + imm + 1``; returns that index."""
    target = pc + ins.imm + 1
    if len(st.frames) >= MAX_CALL_FRAMES:
        raise VerifierError(
            Errno.E2BIG, f"the call stack of {len(st.frames) + 1} frames is too deep"
        )
    caller = st.cur
    regs = [INIT] * 11
    for r in range(1, 6):
        regs[r] = caller.regs[r]
    frameno = len(st.frames)
    regs[10] = Reg(STACK, frame=frameno)
    for r in range(6):
        caller.regs[r] = INIT
    st.frames.append(Func(regs, {}, pc, 0))
    env.note_call(st, target)
    return target


def func_exit(env: Env, st: State) -> int:
    """``prepare_func_exit``: back to the caller with r0; returns where it resumes."""
    callee = st.frames.pop()
    r0 = callee.regs[0]
    if r0.t == STACK and r0.frame == len(st.frames):
        raise VerifierError(Errno.EINVAL, "cannot return stack pointer to the caller frame")
    st.cur.regs[0] = r0
    env.note_return(st, callee)
    return callee.callsite + 1
