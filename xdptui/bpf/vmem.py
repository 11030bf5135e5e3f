"""Memory accesses as the verifier checks them (``check_mem_access`` and what it calls).

Context (``xdp_is_valid_access``: 4-byte reads of ``struct xdp_md``), packet and metadata
(``check_packet_access``: the fixed offset inside the range a comparison proved), map values
(``check_map_access``, ``check_mem_region_access``; read-only maps that are frozen read as
constants, as ``bpf_map_direct_read`` gives them), and the stack (``check_stack_access_within_
bounds``, ``check_stack_write_fixed_off``, ``check_stack_read_fixed_off``: spills keep the
register, partial fills of a pointer are refused). Privileged rules: reading stack never
written is allowed (``allow_uninit_stack``).
"""

from __future__ import annotations

from xdptui.bpf import memory as mem
from xdptui.bpf import scalar as sc
from xdptui.bpf import tnum as tn
from xdptui.bpf.isa import MAX_BPF_STACK
from xdptui.bpf.maps import BPF_F_RDONLY_PROG, MapType
from xdptui.bpf.vstate import (
    CTX,
    MAP_PTR,
    MAP_VALUE,
    PKT,
    PKT_END,
    PKT_META,
    SCALAR,
    SLOT,
    STACK,
    UNKNOWN,
    Env,
    Func,
    Reg,
    Slot,
    State,
    VerifierError,
    assign_scalar_id,
    const,
    reg_width,
    scalar,
)
from xdptui.model.errors import Errno

BPF_MAX_VAR_OFF = 1 << 29
XDP_MD_SIZE = 24


def tnum_str(r: sc.Range) -> str:
    """``tnum_strn`` as the messages print a variable offset."""
    if r[1] == 0:
        return str(sc.signed(r[0], 64))
    return f"({r[0]:#x}; {r[1]:#x})"


def loaded(size: int, signed: bool = False) -> Reg:
    """A value read from memory: ``size`` bytes, zero- (or sign-) extended."""
    if size == 8:
        return UNKNOWN
    bits = 8 * size
    if signed:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return scalar(sc.sync((0, tn.M64, 0, tn.M64, lo, hi), 64) or sc.unknown())
    return scalar((0, (1 << bits) - 1, 0, (1 << bits) - 1, 0, (1 << bits) - 1))


def coerce(reg: Reg, size: int) -> Reg:
    """``coerce_reg_to_size``: the low ``size`` bytes of a scalar (its id untouched: the
    callers break a link the truncation makes false)."""
    if size == 8 or reg.t != SCALAR:
        return reg
    f = (1 << (8 * size)) - 1
    v, m = reg.r[0] & f, reg.r[1] & f
    lo, hi = (reg.r[2], reg.r[3]) if reg.r[3] <= f else (0, f)
    r = (v, m, lo, hi, lo, hi)
    out = scalar(sc.sync(r, 64) or sc.unknown())
    return out.with_(id=reg.id, link=reg.link, delta=reg.delta) if reg.id else out


def check_access(
    env: Env,
    st: State,
    regno: int,
    off: int,
    size: int,
    write: bool,
    value: Reg | None = None,
    st_imm: int | None = None,
    signed: bool = False,
    atomic: bool = False,
    value_regno: int = -1,
) -> Reg | None:
    """``check_mem_access``: refuse a bad access; for a read, the register loaded.
    ``value_regno`` is the register a store writes (its id may change on a spill)."""
    reg = st.cur.regs[regno]
    t = reg.t
    if reg.null:
        raise VerifierError(Errno.EACCES, f"R{regno} invalid mem access '{reg.type_str()}'")
    if t == STACK:
        _stack_aligned(reg, off, size)
        f = st.frames[reg.frame]
        if not reg.var_const:
            lo, hi = _stack_var_bounds(reg, regno, off, size, write)
            f.depth = max(f.depth, -lo)
            if write:
                _stack_write_var(f, lo, hi, value, st_imm)
                return None
            return UNKNOWN
        o = stack_off(reg, regno, off, size, write)
        f.depth = max(f.depth, -o)
        if write:
            if (
                value is not None
                and value.t == SCALAR
                and value_regno >= 0
                and o % SLOT == 0
                and reg_width(value) <= 8 * size
            ):
                # check_stack_write_fixed_off: a spill that holds the whole value links
                # the register and its stack copy.
                value = assign_scalar_id(env, value)
                st.cur.regs[value_regno] = value
            stack_write(f, o, size, value, st_imm, f is not st.cur)
            return None
        return stack_read(f, o, size, signed, env)
    if atomic and t != MAP_VALUE:
        raise VerifierError(
            Errno.EACCES, f"BPF_ATOMIC stores into R{regno} {reg.type_str()} is not allowed"
        )
    if t == CTX:
        return _ctx_access(env, reg, regno, off, size, write)
    if t in (PKT, PKT_META):
        packet_access(reg, regno, off + reg.off, size)
        return None if write else loaded(size, signed)
    if t == MAP_VALUE:
        m = env.maps[reg.map]
        o = off + reg.off
        if atomic and (reg.r[1] & (size - 1) or (reg.r[0] + o) % size):
            raise VerifierError(
                Errno.EACCES,
                f"misaligned value access off {tnum_str(reg.r)}+{reg.off}+{off} size {size}",
            )
        if write and m.map_flags & BPF_F_RDONLY_PROG:
            raise VerifierError(
                Errno.EACCES,
                f"write into map forbidden, value_size={m.value_size} off={o} size={size}",
            )
        region_access(reg, regno, o, size, m.value_size)
        if write:
            return None
        if m.frozen and m.map_flags & BPF_F_RDONLY_PROG and reg.var_const:
            start = sc.signed(reg.r[0], 64) + o
            raw = bytes(m.arena[start : start + size])
            v = int.from_bytes(raw, "little", signed=signed)
            return const(v)
        return loaded(size, signed)
    if t == MAP_PTR:
        _map_ptr_access(env, reg, regno, off + reg.off, write)
    raise VerifierError(Errno.EACCES, f"R{regno} invalid mem access '{reg.type_str()}'")


# The kernel struct behind each map type's ops (``map_btf_id``), as check_ptr_to_map_access
# names it.
MAP_STRUCT: dict[int, str] = {
    MapType.ARRAY: "bpf_array",
    MapType.PERCPU_ARRAY: "bpf_array",
    MapType.PROG_ARRAY: "bpf_array",
    MapType.PERF_EVENT_ARRAY: "bpf_array",
    MapType.ARRAY_OF_MAPS: "bpf_array",
    MapType.HASH: "bpf_htab",
    MapType.PERCPU_HASH: "bpf_htab",
    MapType.LRU_HASH: "bpf_htab",
    MapType.LRU_PERCPU_HASH: "bpf_htab",
    MapType.HASH_OF_MAPS: "bpf_htab",
    MapType.DEVMAP: "bpf_dtab",
    MapType.DEVMAP_HASH: "bpf_dtab",
    MapType.CPUMAP: "bpf_cpu_map",
    MapType.XSKMAP: "xsk_map",
    MapType.RINGBUF: "bpf_ringbuf_map",
}


def _map_ptr_access(env: Env, reg: Reg, regno: int, off: int, write: bool) -> None:
    """``check_ptr_to_map_access``: a map pointer (``ld_imm64`` of a map, or an inner map
    from a map-in-map) is the kernel's ``struct bpf_map`` behind it. A privileged program may
    read its fields through BTF; a negative offset or any write is refused."""
    tname = MAP_STRUCT.get(env.maps[reg.map].map_type, "bpf_map")
    if off < 0:
        raise VerifierError(Errno.EACCES, f"R{regno} is {tname} invalid negative access: off={off}")
    if write:
        raise VerifierError(Errno.EACCES, f"only read from {tname} is supported")
    raise VerifierError(
        Errno.EOPNOTSUPP,
        f"R{regno} reads 'struct {tname}' at off={off}: the kernel's map structures "
        "(read through vmlinux BTF) are not modelled by xdptui",
    )


def _ctx_access(env: Env, reg: Reg, regno: int, off: int, size: int, write: bool) -> Reg:
    """``check_ctx_access`` with ``xdp_is_valid_access``."""
    if reg.off != 0 or not reg.var_const or reg.r[0] != 0:
        if not reg.var_const:
            raise VerifierError(
                Errno.EACCES, f"variable ctx access var_off={tnum_str(reg.r)} disallowed"
            )
        raise VerifierError(
            Errno.EACCES, f"dereference of modified ctx ptr R{regno} off={reg.off} disallowed"
        )
    ok = (
        not write
        and 0 <= off < XDP_MD_SIZE
        and size == 4
        and off % 4 == 0
        and (off != 20 or env.attach == "xdp/devmap")
    )
    if not ok:
        raise VerifierError(Errno.EACCES, f"invalid bpf_context access off={off} size={size}")
    field = mem.XDP_MD_FIELDS[off]
    if field == "data":
        return Reg(PKT)
    if field == "data_end":
        return Reg(PKT_END)
    if field == "data_meta":
        return Reg(PKT_META)
    return loaded(4)


def packet_access(reg: Reg, regno: int, off: int, size: int) -> None:
    """``check_packet_access``: ``off`` (with the register's fixed offset) inside ``r``."""
    if reg.rng < 0:  # known to be at or beyond data_end (mark_pkt_end)
        raise VerifierError(Errno.EINVAL, f"R{regno} offset is outside of the packet")
    if reg.r[4] < 0:
        raise VerifierError(
            Errno.EACCES,
            f"R{regno} min value is negative, either use unsigned index or do a if (index >=0) "
            "check.",
        )
    if off < 0 or size < 0 or off + size > reg.rng:
        raise VerifierError(
            Errno.EACCES,
            f"invalid access to packet, off={off} size={size}, "
            f"R{regno}(id={reg.id},off={off},r={reg.rng})",
            f"R{regno} offset is outside of the packet",
        )


def region_access(reg: Reg, regno: int, off: int, size: int, mem_size: int) -> None:
    """``check_mem_region_access`` for a map value of ``mem_size`` bytes."""
    smin, umax = reg.r[4], reg.r[3]
    if smin < 0 and (smin == sc.smin_of(64) or smin + off < 0):
        raise VerifierError(
            Errno.EACCES,
            f"R{regno} min value is negative, either use unsigned index or do a if (index >=0) "
            "check.",
        )
    lo = smin + off
    if lo < 0 or size < 0 or lo + size > mem_size:
        raise VerifierError(
            Errno.EACCES,
            f"invalid access to map value, value_size={mem_size} off={lo} size={size}",
            f"R{regno} min value is outside of the allowed memory range",
        )
    if umax >= BPF_MAX_VAR_OFF:
        raise VerifierError(
            Errno.EACCES,
            f"R{regno} unbounded memory access, make sure to bounds check any such access",
        )
    hi = umax + off
    if hi + size > mem_size:
        raise VerifierError(
            Errno.EACCES,
            f"invalid access to map value, value_size={mem_size} off={hi} size={size}",
            f"R{regno} max value is outside of the allowed memory range",
        )


# -- the stack -------------------------------------------------------------------------------


def _stack_aligned(reg: Reg, off: int, size: int) -> None:
    """``check_ptr_alignment``: stack accesses are always strictly aligned."""
    v, m = tn.add((reg.r[0], reg.r[1]), tn.const(reg.off + off), 64)
    if (v | m) & (size - 1):
        raise VerifierError(
            Errno.EACCES,
            f"misaligned stack access off {tnum_str(reg.r)}+{reg.off}+{off} size {size}",
        )


def _bounds_errno(lo: int, hi: int, size: int) -> Errno | None:
    """``check_stack_access_within_bounds``: EACCES below the stack or at a non-negative
    start, EINVAL for an access that starts inside and runs past the frame pointer."""
    if lo < -MAX_BPF_STACK or lo > -1:
        return Errno.EACCES
    if hi > 0 or size <= 0:
        return Errno.EINVAL
    return None


def stack_off(reg: Reg, regno: int, off: int, size: int, write: bool) -> int:
    """The frame offset of a constant-offset stack access, inside [-512, 0)."""
    o = reg.off + sc.signed(reg.r[0], 64) + off
    err = _bounds_errno(o, o + size, size)
    if err is not None:
        what = "write to" if write else "read from"
        raise VerifierError(err, f"invalid {what} stack R{regno} off={o} size={size}")
    return o


def _stack_var_bounds(reg: Reg, regno: int, off: int, size: int, write: bool) -> tuple[int, int]:
    what = "write to" if write else "read from"
    if reg.r[5] >= BPF_MAX_VAR_OFF or reg.r[4] <= -BPF_MAX_VAR_OFF:
        raise VerifierError(
            Errno.EACCES, f"invalid unbounded variable-offset {what} stack R{regno}"
        )
    lo = reg.off + reg.r[4] + off
    hi = reg.off + reg.r[5] + off + size
    err = _bounds_errno(lo, hi, size)
    if err is not None:
        raise VerifierError(
            err,
            f"invalid variable-offset {what} stack R{regno} var_off={tnum_str(reg.r)} "
            f"off={reg.off + off} size={size}",
        )
    return lo, hi


def _scrub(kinds: str) -> str:
    """``mark_stack_slot_misc``: spilled bytes become misc; zero and never-written stay."""
    return kinds.replace("s", "m")


def stack_write(
    f: Func, off: int, size: int, value: Reg | None, st_imm: int | None, caller: bool
) -> None:
    """``check_stack_write_fixed_off``: a spill keeps the register; other data is misc (or
    zero, for a known zero)."""
    spi = (-off - 1) // SLOT
    b = off + (spi + 1) * SLOT
    slot = f.stack.get(spi)
    kinds = slot.kinds if slot is not None else "iiiiiiii"
    if value is not None and b == 0 and value.t == SCALAR:
        kept = value if size == 8 or value.r[3] < 1 << (8 * size) else value.unlinked()
        f.stack[spi] = Slot("s" * size + _scrub(kinds[size:]), coerce(kept, size))
        return
    if value is None and st_imm is not None and b == 0:
        f.stack[spi] = Slot("s" * size + _scrub(kinds[size:]), coerce(const(st_imm), size))
        return
    if value is not None and value.t != SCALAR:
        if size != SLOT:
            raise VerifierError(Errno.EACCES, "invalid size of register spill")
        if caller and value.t == STACK:
            raise VerifierError(
                Errno.EINVAL, "cannot spill pointers to stack into stack frame of the caller"
            )
        f.stack[spi] = Slot("ssssssss", value)
        return
    zero = (value is not None and value.r == sc.const(0)) or st_imm == 0
    k = "z" if zero else "m"
    base = _scrub(kinds) if slot is not None and slot.reg is not None else kinds
    f.stack[spi] = Slot(base[:b] + k * size + base[b + size :])


def _stack_write_var(f: Func, lo: int, hi: int, value: Reg | None, st_imm: int | None) -> None:
    """``check_stack_write_var_off``: every byte it may write becomes misc."""
    zero = (value is not None and value.r == sc.const(0)) or st_imm == 0
    for o in range(lo, hi):
        spi = (-o - 1) // SLOT
        b = o + (spi + 1) * SLOT
        slot = f.stack.get(spi)
        kinds = _scrub(slot.kinds) if slot is not None else "iiiiiiii"
        k = "z" if zero and kinds[b] == "z" else "m"
        f.stack[spi] = Slot(kinds[:b] + k + kinds[b + 1 :])


def stack_read(f: Func, off: int, size: int, signed: bool = False, env: Env | None = None) -> Reg:
    """``check_stack_read_fixed_off``: a whole spill refills the register; a narrower fill
    from the spill's start refills it truncated, still linked to the spilled copy when the
    value fits in what is read (a 4-byte fill of a 4-byte spill links them first, as
    ``assign_scalar_id_before_mov`` does), unlinked when the fill narrows it."""
    spi = (-off - 1) // SLOT
    b = off + (spi + 1) * SLOT
    slot = f.stack.get(spi)
    if slot is None:
        return loaded(size, signed)
    kinds = slot.kinds[b : b + size]
    reg = slot.reg
    if reg is not None and slot.kinds[0] == "s":
        spill = len(slot.kinds) - len(slot.kinds.lstrip("s"))
        if size == SLOT and spill == SLOT and b == 0:
            return reg
        if reg.t != SCALAR:
            raise VerifierError(Errno.EACCES, "invalid size of register fill")
        if size <= spill and b == 0:
            if env is not None and size == 4 and spill == 4 and reg_width(reg) <= 32:
                reg = assign_scalar_id(env, reg)
                f.stack[spi] = Slot(slot.kinds, reg)
            out = coerce(reg, size)
            if reg_width(reg) > 8 * size:
                out = out.unlinked()
            return out if not signed else _sext(out, size)
        if kinds.count("s") == size and reg.r == sc.const(0):
            return const(0)
    if kinds == "z" * size:
        return const(0)
    return loaded(size, signed)


def _sext(reg: Reg, size: int) -> Reg:
    if size == 8:
        return reg
    return scalar(sc.movsx(reg.r, 8 * size, 64))


def helper_stack(f: Func, reg: Reg, regno: int, size: int, write: bool) -> None:
    """``check_stack_range_initialized`` for a helper's memory argument; bytes a helper
    writes become misc."""
    if not reg.var_const:
        lo, hi = _stack_var_bounds(reg, regno, 0, size, write)
    else:
        lo = stack_off(reg, regno, 0, size, False)
        hi = lo + size
    f.depth = max(f.depth, -lo)
    if not write:
        return
    for o in range(lo, hi):
        spi = (-o - 1) // SLOT
        b = o + (spi + 1) * SLOT
        slot = f.stack.get(spi)
        kinds = _scrub(slot.kinds) if slot is not None else "iiiiiiii"
        f.stack[spi] = Slot(kinds[:b] + "m" + kinds[b + 1 :])


def stack_bytes(f: Func, off: int, size: int) -> bytes | None:
    """The bytes at a constant stack offset when all are known (a map key the program
    wrote as constants): from spilled constants and zero bytes."""
    out = bytearray()
    for o in range(off, off + size):
        spi = (-o - 1) // SLOT
        b = o + (spi + 1) * SLOT
        slot = f.stack.get(spi)
        if slot is None:
            return None
        k = slot.kinds[b]
        if k == "z":
            out.append(0)
        elif k == "s" and slot.reg is not None and slot.reg.t == SCALAR and slot.reg.r[1] == 0:
            out.append((slot.reg.r[0] >> (8 * b)) & 0xFF)
        else:
            return None
    return bytes(out)
