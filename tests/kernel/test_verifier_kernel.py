"""The verifier against the machine's: each hand-written program (and each variant that a
careless or hostile author would write) is loaded by ``BPF_PROG_LOAD`` as XDP and checked by
xdptui's verifier; both must accept it, or both refuse it with the same errno, and every line
of xdptui's message must be in the kernel's log.

Skips with the reason where the machine cannot load programs (not root, no BPF).
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable

import bpf_kernel_oracle as kern
import pytest
from bpf_asm import alu, call, exit_, insn, jmp, ldx, mov, stx
from bpf_linked import (
    DELTA_LINKED,
    DELTA_UNLINKED,
    LINKED_PROGRAMS,
    NARROWING_FILL,
    RANGE_AFTER_SPILL,
    WIDE_32_BIT_MOVE,
)

from xdptui.bpf import isa
from xdptui.bpf.isa import decode
from xdptui.bpf.maps import BpfMap, MapDef, MapType
from xdptui.bpf.memory import map_handle
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.verifier import check
from xdptui.model.errors import KernelError

WHY_NOT = kern.available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
B = isa
XDP_DEVMAP = 33  # enum bpf_attach_type: BPF_XDP_DEVMAP

# A program is built by a function of the map references it may use: ``m(i)`` is the
# two-slot ld_imm64 of the i-th map (an fd for the kernel, an index for xdptui).
Build = Callable[[Callable[[int, int], bytes]], bytes]


def _kernel_ld_map(fds: list[int]) -> Callable[[int, int], bytes]:
    return lambda dst, i: insn(0x18, dst, 1, 0, fds[i]) + insn(0, 0, 0, 0, 0)


def _our_ld_map(dst: int, i: int) -> bytes:
    return insn(0x18, dst, isa.BPF_PSEUDO_MAP_IDX, 0, i) + insn(0, 0, 0, 0, 0)


def _map_create(d: MapDef) -> int:
    attr = bytearray(72)
    struct.pack_into("<IIIII", attr, 0, d.map_type, d.key_size, d.value_size, d.max_entries, 0)
    return kern.bpf(0, attr)  # BPF_MAP_CREATE


def kernel_load(code: bytes, attach: int) -> tuple[int, str]:
    """(0 or the errno, the verifier log) of a BPF_PROG_LOAD of ``code`` as XDP."""
    ins = ctypes.create_string_buffer(code, len(code))
    lic = ctypes.create_string_buffer(b"GPL\0")
    log = ctypes.create_string_buffer(1 << 20)
    attr = bytearray(144)
    struct.pack_into(
        "<IIQQIIQ",
        attr,
        0,
        6,
        len(code) // 8,
        ctypes.addressof(ins),
        ctypes.addressof(lic),
        1,
        len(log),
        ctypes.addressof(log),
    )
    struct.pack_into("<I", attr, 68, attach)
    try:
        fd = kern.bpf(5, attr)
    except OSError as exc:
        if exc.errno == 28:  # ENOSPC: the log filled; load again without one for the errno
            struct.pack_into("<IIQ", attr, 24, 0, 0, 0)
            try:
                fd = kern.bpf(5, attr)
            except OSError as again:
                return again.errno or 0, log.value.decode(errors="replace")
            os.close(fd)
            return 0, ""
        return exc.errno or 0, log.value.decode(errors="replace")
    os.close(fd)
    return 0, log.value.decode(errors="replace")


def ours(code_bytes: bytes, maps: list[MapDef], attach: str) -> KernelError | None:
    bpf_maps = []
    for i, d in enumerate(maps):
        m = BpfMap(d)
        m.region = 16 + i
        bpf_maps.append(m)
    insns = decode(code_bytes)
    for i, ins in enumerate(insns):  # what the loader's relocation gives an ld_imm64 of a map
        if ins.is_ld_imm64() and ins.src == isa.BPF_PSEUDO_MAP_IDX:
            insns[i] = isa.Insn(ins.code, ins.dst, ins.src, ins.off, ins.imm, map_handle(ins.imm))
    prog = BpfProgram("t", "xdp", insns, bpf_maps, "GPL", attach)
    try:
        check(prog)
    except KernelError as exc:
        return exc
    return None


ARRAY = MapDef("arr", MapType.ARRAY, 4, 8, 4)
HASH = MapDef("h", MapType.HASH, 4, 8, 16)
DEVMAP = MapDef("dm", MapType.DEVMAP, 4, 4, 8)
PASS = mov(0, imm=2) + exit_()
PKT = ldx(B.BPF_W, 2, 1, 0) + ldx(B.BPF_W, 3, 1, 4)  # r2 = data, r3 = data_end
KEY0 = mov(2, 10) + alu(B.BPF_ADD, 2, imm=-4) + mov(3, imm=0) + stx(B.BPF_W, 10, 3, -4)
RND = call(7)  # r0 = an unknown scalar


def checked(n: int, op: int, reverse: bool = False) -> bytes:
    """r4 = data + n compared with data_end by ``op`` (operands swapped with ``reverse``)."""
    cmp = jmp(op, 3, 2, src=4) if reverse else jmp(op, 4, 2, src=3)
    return PKT + mov(4, 2) + alu(B.BPF_ADD, 4, imm=n) + cmp


def _range_case(op: int, rev: bool, taken: bool, n: int) -> Build:
    """Read byte ``n - 1`` on one side of the comparison of data + 8 with data_end."""
    read = ldx(B.BPF_B, 0, 2, n - 1) + exit_()
    return lambda m: checked(8, op, rev) + (PASS + read if taken else read + PASS)


CASES: dict[str, tuple[Build, list[MapDef]]] = {
    "write to r10": (lambda m: mov(10, imm=0) + PASS, []),
    "read of an unset register": (lambda m: mov(0, 2) + exit_(), []),
    "exit with r0 unset": (lambda m: exit_(), []),
    "stack write at -600": (lambda m: mov(1, imm=0) + stx(B.BPF_DW, 10, 1, -600) + PASS, []),
    "stack write at 0": (lambda m: mov(1, imm=0) + stx(B.BPF_DW, 10, 1, 0) + PASS, []),
    "misaligned stack write": (lambda m: mov(1, imm=0) + stx(B.BPF_W, 10, 1, -6) + PASS, []),
    "uninitialised stack read": (lambda m: ldx(B.BPF_DW, 1, 10, -8) + PASS, []),
    "spilled pointer read in part": (
        lambda m: stx(B.BPF_DW, 10, 1, -8) + ldx(B.BPF_W, 0, 10, -8) + PASS,
        [],
    ),
    "spilled pointer filled and used": (
        lambda m: (
            stx(B.BPF_DW, 10, 1, -8) + ldx(B.BPF_DW, 1, 10, -8) + ldx(B.BPF_W, 0, 1, 0) + PASS
        ),
        [],
    ),
    "unchecked packet read": (lambda m: PKT + ldx(B.BPF_B, 0, 2, 0) + PASS, []),
    "context read past struct xdp_md": (lambda m: ldx(B.BPF_W, 0, 1, 24) + PASS, []),
    "context write": (lambda m: mov(2, imm=0) + stx(B.BPF_W, 1, 2, 0) + PASS, []),
    "one-byte context read": (lambda m: ldx(B.BPF_B, 0, 1, 0) + PASS, []),
    "egress_ifindex outside a devmap program": (lambda m: ldx(B.BPF_W, 0, 1, 20) + PASS, []),
    "read through a moved context pointer": (
        lambda m: mov(2, 1) + alu(B.BPF_ADD, 2, imm=4) + ldx(B.BPF_W, 0, 2, 0) + PASS,
        [],
    ),
    "read through data_end": (lambda m: PKT + ldx(B.BPF_W, 0, 3, 0) + PASS, []),
    "arithmetic on data_end": (lambda m: PKT + alu(B.BPF_ADD, 3, imm=4) + PASS, []),
    "read through a scalar": (lambda m: mov(1, imm=0) + ldx(B.BPF_W, 0, 1, 0) + PASS, []),
    "bitwise op on a pointer": (lambda m: mov(0, 10) + alu(B.BPF_AND, 0, imm=1) + PASS, []),
    "32-bit pointer arithmetic": (
        lambda m: mov(0, 10) + alu(B.BPF_ADD, 0, imm=1, is64=False) + PASS,
        [],
    ),
    "pointer plus pointer": (lambda m: mov(1, 10) + alu(B.BPF_ADD, 1, 10) + PASS, []),
    "scalar minus pointer": (lambda m: mov(1, imm=5) + alu(B.BPF_SUB, 1, 10) + PASS, []),
    "pointer times two": (lambda m: mov(1, 10) + alu(B.BPF_MUL, 1, imm=2) + PASS, []),
    "subtraction from the frame pointer": (
        lambda m: mov(1, 10) + alu(B.BPF_SUB, 1, imm=8) + PASS,
        [],
    ),
    "pointer minus pointer is a scalar": (
        lambda m: mov(0, 10) + alu(B.BPF_SUB, 0, 1) + exit_(),
        [],
    ),
    "a pointer returned": (lambda m: mov(0, 1) + exit_(), []),
    "division by constant zero": (lambda m: mov(0, imm=1) + alu(B.BPF_DIV, 0, imm=0) + exit_(), []),
    "shift by 64": (lambda m: mov(0, imm=1) + alu(B.BPF_LSH, 0, imm=64) + exit_(), []),
    "register 11": (lambda m: mov(11, imm=2) + PASS, []),
    "unknown opcode": (lambda m: insn(0xFF) + PASS, []),
    "BPF_LD_ABS": (lambda m: insn(0x20) + PASS, []),
    "jump out of the program": (lambda m: jmp(B.BPF_JA, 0, 10) + PASS, []),
    "unreachable instruction": (lambda m: PASS + PASS, []),
    "last instruction not an exit": (lambda m: mov(0, imm=2), []),
    "unknown helper": (lambda m: call(10000) + PASS, []),
    "helper XDP may not use": (lambda m: call(26) + PASS, []),
    "r1 read after a helper call": (lambda m: call(7) + mov(0, 1) + exit_(), []),
    "a map fd that is no map": (lambda m: insn(0x18, 1, 1, 0, 9999) + insn(0) + PASS, []),
    "infinite loop": (lambda m: mov(0, imm=2) + jmp(B.BPF_JA, 0, -1) + exit_(), []),
    "a loop of a million iterations": (
        lambda m: mov(0, imm=0) + alu(B.BPF_ADD, 0, imm=1) + jmp(B.BPF_JNE, 0, -2, imm=0) + exit_(),
        [],
    ),
    "a bounded loop": (
        lambda m: (
            mov(0, imm=0) + alu(B.BPF_ADD, 0, imm=1) + jmp(B.BPF_JLT, 0, -2, imm=100) + exit_()
        ),
        [],
    ),
    "recursion": (
        lambda m: insn(0x85, 0, 1, 0, 1) + exit_() + insn(0x85, 0, 1, 0, -1) + exit_(),
        [],
    ),
    "two frames of 512 bytes of stack": (
        lambda m: (
            insn(0x85, 0, 1, 0, 3)
            + mov(1, imm=0)
            + stx(B.BPF_DW, 10, 1, -8)
            + exit_()
            + mov(1, imm=0)
            + stx(B.BPF_DW, 10, 1, -512)
            + mov(0, imm=2)
            + exit_()
        ),
        [],
    ),
    # packet ranges, every comparison both ways
    **{
        f"data+8 {name} data_end, {'taken' if taken else 'fall-through'} reads {n}": (
            _range_case(op, rev, taken, n),
            [],
        )
        for name, op, rev in (
            ("JGT", B.BPF_JGT, False),
            ("JGE", B.BPF_JGE, False),
            ("JLT", B.BPF_JLT, False),
            ("JLE", B.BPF_JLE, False),
            ("reversed JGT", B.BPF_JGT, True),
            ("reversed JLE", B.BPF_JLE, True),
            ("JEQ", B.BPF_JEQ, False),
        )
        for taken in (False, True)
        for n in (8, 9)
    },
    "data_meta read unchecked": (
        lambda m: ldx(B.BPF_W, 2, 1, 8) + ldx(B.BPF_B, 0, 2, 0) + PASS,
        [],
    ),
    "data_meta read past its check": (
        lambda m: (
            ldx(B.BPF_W, 2, 1, 8)
            + ldx(B.BPF_W, 3, 1, 0)
            + mov(4, 2)
            + alu(B.BPF_ADD, 4, imm=4)
            + jmp(B.BPF_JGT, 4, 2, src=3)
            + ldx(B.BPF_W, 0, 2, 0)
            + ldx(B.BPF_W, 0, 2, 4)
            + PASS
        ),
        [],
    ),
    "data_meta read inside its check": (
        lambda m: (
            ldx(B.BPF_W, 2, 1, 8)
            + ldx(B.BPF_W, 3, 1, 0)
            + mov(4, 2)
            + alu(B.BPF_ADD, 4, imm=4)
            + jmp(B.BPF_JGT, 4, 1, src=3)
            + ldx(B.BPF_W, 0, 2, 0)
            + PASS
        ),
        [],
    ),
    "packet pointer plus an unbounded scalar": (
        lambda m: ldx(B.BPF_W, 6, 1, 0) + RND + alu(B.BPF_ADD, 6, 0) + PASS,
        [],
    ),
    "packet pointer plus a masked scalar, checked": (
        lambda m: (
            ldx(B.BPF_W, 6, 1, 0)
            + ldx(B.BPF_W, 7, 1, 4)
            + RND
            + alu(B.BPF_AND, 0, imm=15)
            + mov(2, 6)
            + alu(B.BPF_ADD, 2, 0)
            + mov(4, 2)
            + alu(B.BPF_ADD, 4, imm=4)
            + jmp(B.BPF_JGT, 4, 2, src=7)
            + ldx(B.BPF_W, 0, 2, 0)
            + exit_()
            + PASS
        ),
        [],
    ),
    "stack index by modulo": (
        lambda m: (
            RND
            + alu(B.BPF_MOD, 0, imm=8)
            + mov(1, 10)
            + alu(B.BPF_ADD, 1, imm=-64)
            + alu(B.BPF_ADD, 1, 0)
            + PASS
        ),
        [],
    ),
    "stack index by mask": (
        lambda m: (
            RND
            + alu(B.BPF_AND, 0, imm=7)
            + alu(B.BPF_LSH, 0, imm=3)
            + mov(1, 10)
            + alu(B.BPF_ADD, 1, imm=-64)
            + alu(B.BPF_ADD, 1, 0)
            + mov(2, imm=0)
            + stx(B.BPF_DW, 1, 2, 0)
            + PASS
        ),
        [],
    ),
    "negated index": (
        lambda m: (
            RND
            + alu(B.BPF_AND, 0, imm=255)
            + alu(B.BPF_NEG, 0)
            + mov(2, 10)
            + alu(B.BPF_ADD, 2, 0)
            + ldx(B.BPF_B, 0, 2, 0)
            + exit_()
        ),
        [],
    ),
    "byte-swapped index": (
        lambda m: (
            RND
            + alu(B.BPF_AND, 0, imm=255)
            + insn(0xDC, 0, 0, 0, 16)
            + alu(B.BPF_RSH, 0, imm=8)
            + mov(2, 10)
            + alu(B.BPF_ADD, 2, imm=-256)
            + alu(B.BPF_ADD, 2, 0)
            + ldx(B.BPF_B, 0, 2, 0)
            + exit_()
        ),
        [],
    ),
    "division of constants is not tracked": (
        lambda m: (
            mov(1, imm=64)
            + alu(B.BPF_DIV, 1, imm=8)
            + mov(2, 10)
            + alu(B.BPF_ADD, 2, imm=-16)
            + alu(B.BPF_ADD, 2, 1)
            + PASS
        ),
        [],
    ),
    "map value used without a NULL check": (
        lambda m: KEY0 + m(1, 0) + call(1) + ldx(B.BPF_DW, 1, 0, 0) + PASS,
        [HASH],
    ),
    "array lookup with a constant key needs no NULL check": (
        lambda m: KEY0 + m(1, 0) + call(1) + ldx(B.BPF_DW, 1, 0, 0) + PASS,
        [ARRAY],
    ),
    "map value written past its end": (
        lambda m: (
            KEY0
            + m(1, 0)
            + call(1)
            + jmp(B.BPF_JEQ, 0, 2, imm=0)
            + mov(1, imm=1)
            + stx(B.BPF_DW, 0, 1, 8)
            + PASS
        ),
        [HASH],
    ),
    "map value plus an unbounded scalar": (
        lambda m: (
            KEY0
            + m(1, 0)
            + call(1)
            + jmp(B.BPF_JEQ, 0, 5, imm=0)
            + mov(6, 0)
            + RND
            + alu(B.BPF_ADD, 6, 0)
            + mov(1, imm=1)
            + stx(B.BPF_B, 6, 1, 0)
            + PASS
        ),
        [HASH],
    ),
    "map value indexed within bounds": (
        lambda m: (
            KEY0
            + m(1, 0)
            + call(1)
            + jmp(B.BPF_JEQ, 0, 6, imm=0)
            + mov(6, 0)
            + RND
            + alu(B.BPF_AND, 0, imm=7)
            + alu(B.BPF_ADD, 6, 0)
            + mov(1, imm=1)
            + stx(B.BPF_B, 6, 1, 0)
            + PASS
        ),
        [HASH],
    ),
    "arithmetic on a map value that may be NULL": (
        lambda m: KEY0 + m(1, 0) + call(1) + alu(B.BPF_ADD, 0, imm=1) + PASS,
        [HASH],
    ),
    "map key outside the stack": (
        lambda m: mov(2, 10) + alu(B.BPF_ADD, 2, imm=-2) + m(1, 0) + call(1) + PASS,
        [HASH],
    ),
    "context as a map key": (lambda m: mov(2, 1) + m(1, 0) + call(1) + PASS, [HASH]),
    "an array passed to bpf_redirect_map": (
        lambda m: m(1, 0) + mov(2, imm=0) + mov(3, imm=0) + call(51) + exit_(),
        [ARRAY],
    ),
    "a devmap passed to bpf_redirect_map": (
        lambda m: m(1, 0) + mov(2, imm=0) + mov(3, imm=0) + call(51) + exit_(),
        [DEVMAP],
    ),
    "a write into a devmap value": (
        lambda m: (
            KEY0
            + m(1, 0)
            + call(1)
            + jmp(B.BPF_JEQ, 0, 2, imm=0)
            + mov(1, imm=1)
            + stx(B.BPF_W, 0, 1, 0)
            + PASS
        ),
        [DEVMAP],
    ),
    "a subprogram that returns nothing": (
        lambda m: insn(0x85, 0, 1, 0, 2) + mov(0, imm=2) + exit_() + mov(1, imm=1) + exit_(),
        [],
    ),
    "a subprogram's unset r0 read by its caller": (
        lambda m: insn(0x85, 0, 1, 0, 1) + exit_() + mov(1, imm=1) + exit_(),
        [],
    ),
    # linked scalars (sync_linked_regs) through moves, spills and fills
    **{
        f"linked scalars: {name}": (lambda m, code=code: code, [])
        for name, code in LINKED_PROGRAMS.items()
    },
    "linked scalars: a range proven after a spill": (lambda m: RANGE_AFTER_SPILL, []),
    "linked scalars: a narrowing fill": (lambda m: NARROWING_FILL, []),
    "linked scalars: a 32-bit move of a wider value": (lambda m: WIDE_32_BIT_MOVE, []),
    **{
        f"linked scalars with a delta: {name}": (lambda m, code=code: code, [])
        for name, code in {**DELTA_LINKED, **DELTA_UNLINKED}.items()
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_verifier_decides_as_the_kernel_does(name: str) -> None:
    build, maps = CASES[name]
    attach = "xdp"
    fds = [_map_create(d) for d in maps]
    try:
        kernel_code = build(_kernel_ld_map(fds))
        errno, log = kernel_load(kernel_code, 0 if attach == "xdp" else XDP_DEVMAP)
    finally:
        for fd in fds:
            os.close(fd)
    refused = ours(build(_our_ld_map), maps, attach)
    tail = "\n".join(log.strip().splitlines()[-4:])
    if errno == 0:
        assert refused is None, f"the kernel loads it; xdptui: {refused}"
        return
    assert refused is not None, f"the kernel refuses it ({os.strerror(errno)}): {tail}"
    assert refused.errno.value == errno, (refused, tail)
    for line in refused.extack.rsplit(" (insn", 1)[0].split("; "):
        assert line in log, (line, tail)


def _range_family() -> dict[str, bytes]:
    """Every way a program proves a range, as the kernel's selftests enumerate them: data (or
    data_meta) + k compared with data_end (or data) by each operator, in either order, and
    an 8- or 4-byte read on either side, just inside or just outside what was proven."""
    out: dict[str, bytes] = {}
    ops = {"JGT": B.BPF_JGT, "JLT": B.BPF_JLT, "JGE": B.BPF_JGE, "JLE": B.BPF_JLE}
    for meta in (False, True):
        if meta:  # r2 = data_meta, r3 = data
            head = ldx(B.BPF_W, 2, 1, 8) + ldx(B.BPF_W, 3, 1, 0)
        else:  # r2 = data, r3 = data_end
            head = ldx(B.BPF_W, 2, 1, 0) + ldx(B.BPF_W, 3, 1, 4)
        for name, op in ops.items():
            for rev in (False, True):
                for k in (7, 8, 9):
                    for size, sz in ((8, B.BPF_DW), (4, B.BPF_W)):
                        for taken in (False, True):
                            cmp = jmp(op, 3, 2, src=1) if rev else jmp(op, 1, 2, src=3)
                            read = ldx(sz, 0, 1, -8) + mov(0, imm=0) + exit_()
                            body = (PASS + read) if taken else (read + PASS)
                            code = head + mov(1, 2) + alu(B.BPF_ADD, 1, imm=k) + cmp + body
                            side = "taken" if taken else "fall-through"
                            what = f"{'meta' if meta else 'data'}+{k} {'rev ' if rev else ''}{name}"
                            out[f"{what} {side} u{8 * size}"] = code
    return out


RANGE_FAMILY = _range_family()


@pytest.mark.parametrize("name", sorted(RANGE_FAMILY))
def test_every_packet_and_metadata_range_is_proven_as_the_kernel_proves_it(name: str) -> None:
    code = RANGE_FAMILY[name]
    errno, log = kernel_load(code, 0)
    refused = ours(code, [], "xdp")
    if errno == 0:
        assert refused is None, f"the kernel loads it; xdptui: {refused}"
    else:
        assert refused is not None, f"a false accept: the kernel refuses it ({log[-300:]})"
        assert refused.errno.value == errno
