"""Every ALU, jump, load and atomic instruction, hand-assembled (ISA v4 included: sdiv, smod,
movsx, ldsx, bswap) and run on edge-case operands here and in the kernel (BPF_PROG_LOAD +
BPF_PROG_TEST_RUN): the results written back into the packet must be equal."""

from __future__ import annotations

import itertools
import os
import random
import struct

import bpf_kernel_oracle as kern
import pytest
from bpf_asm import alu, exit_, insn, jmp, ldx, mov, stx, with_packet

from xdptui.bpf import isa
from xdptui.bpf.isa import decode
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.vm import run_batch

WHY_NOT = kern.available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")

EDGES = [
    0,
    1,
    2,
    3,
    7,
    31,
    32,
    33,
    63,
    64,
    65,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    0x100000000,
    0x7FFFFFFFFFFFFFFF,
    0x8000000000000000,
    0xFFFFFFFFFFFFFFFF,
    0xFFFFFFFF80000000,
    0xFFFFFFFFFFFFFFFE,
]


def operand_packets() -> list[bytes]:
    rnd = random.Random(4)
    pairs = list(itertools.product(EDGES, EDGES))
    pairs += [
        (rnd.getrandbits(64), rnd.getrandbits(rnd.choice((3, 6, 32, 64)))) for _ in range(200)
    ]
    return [struct.pack("<QQ", a, b) + bytes(16) for a, b in pairs]


PACKETS = operand_packets()


def compare(code: bytes) -> None:
    prog = BpfProgram("t", "xdp", decode(code), [], "GPL")
    fd = kern.load_raw(code)
    try:
        kernel = [kern.test_run(fd, p) for p in PACKETS]
    finally:
        os.close(fd)
    result = run_batch(prog, PACKETS)
    for i, k in enumerate(kernel):
        assert (int(result.retval[i]), result.data[i]) == (k.retval, k.data), (
            f"operands {PACKETS[i][:16].hex()}: model {result.retval[i]} "
            f"{result.data[i][16:24].hex()} kernel {k.retval} {k.data[16:24].hex()}"
        )


ALU_OPS = {
    "add": isa.BPF_ADD,
    "sub": isa.BPF_SUB,
    "mul": isa.BPF_MUL,
    "div": isa.BPF_DIV,
    "mod": isa.BPF_MOD,
    "or": isa.BPF_OR,
    "and": isa.BPF_AND,
    "xor": isa.BPF_XOR,
    "lsh": isa.BPF_LSH,
    "rsh": isa.BPF_RSH,
    "arsh": isa.BPF_ARSH,
}
SIGNED = {"sdiv": isa.BPF_DIV, "smod": isa.BPF_MOD}
STORE = stx(isa.BPF_DW, 2, 7, 16)


@pytest.mark.parametrize("is64", [True, False], ids=["alu64", "alu32"])
@pytest.mark.parametrize("name", [*ALU_OPS, *SIGNED])
def test_alu_register_operands(name: str, is64: bool) -> None:
    op, off = (ALU_OPS[name], 0) if name in ALU_OPS else (SIGNED[name], 1)
    compare(with_packet(24, alu(op, 7, 8, is64=is64, off=off) + STORE))


IMMS = [0, 1, -1, 3, 31, 0x7FFFFFFF, -0x80000000, -7]


@pytest.mark.parametrize("is64", [True, False], ids=["alu64", "alu32"])
@pytest.mark.parametrize("name", [*ALU_OPS, *SIGNED])
def test_alu_immediate_operands(name: str, is64: bool) -> None:
    op, off = (ALU_OPS[name], 0) if name in ALU_OPS else (SIGNED[name], 1)
    body = b""
    for imm in IMMS:
        if op in (isa.BPF_DIV, isa.BPF_MOD) and imm == 0:
            continue  # the verifier refuses division by an immediate zero
        if op in (isa.BPF_LSH, isa.BPF_RSH, isa.BPF_ARSH) and not 0 <= imm < (64 if is64 else 32):
            continue  # and shifts out of range
        body += mov(7, 8) + alu(op, 7, imm=imm, is64=is64, off=off) + STORE
        body += ldx(isa.BPF_DW, 8, 2, 0)  # the next round starts from the other operand
    compare(with_packet(24, body))


def test_neg_mov_movsx_and_byte_swaps() -> None:
    body = b""
    for is64 in (True, False):
        body += mov(7, 8) + alu(isa.BPF_NEG, 7, imm=0, is64=is64) + STORE + ldx(isa.BPF_DW, 8, 2, 0)
        body += alu(isa.BPF_MOV, 7, 8, is64=is64) + STORE
        for bits in (8, 16, 32) if is64 else (8, 16):
            body += alu(isa.BPF_MOV, 7, 8, is64=is64, off=bits) + STORE
            body += ldx(isa.BPF_DW, 8, 2, 16)
    for bits in (16, 32, 64):
        body += (
            mov(7, 8) + insn(isa.BPF_ALU | isa.BPF_END | isa.BPF_X, 7, imm=bits) + STORE
        )  # to be
        body += (
            mov(7, 8) + insn(isa.BPF_ALU | isa.BPF_END | isa.BPF_K, 7, imm=bits) + STORE
        )  # to le
        body += ldx(isa.BPF_DW, 8, 2, 16)
        body += mov(7, 8) + insn(isa.BPF_ALU64 | isa.BPF_END, 7, imm=bits) + STORE  # bswap (v4)
    compare(with_packet(24, body))


def test_sign_extending_and_narrow_loads() -> None:
    body = b""
    for size in (isa.BPF_B, isa.BPF_H, isa.BPF_W):
        for off in (0, 1, 3, 8):
            body += ldx(size, 7, 2, off, signed=True) + STORE + ldx(isa.BPF_DW, 9, 2, 16)
            body += ldx(size, 7, 2, off) + alu(isa.BPF_ADD, 7, 9) + STORE
    compare(with_packet(24, body))


JUMPS = {
    "jeq": isa.BPF_JEQ,
    "jne": isa.BPF_JNE,
    "jgt": isa.BPF_JGT,
    "jge": isa.BPF_JGE,
    "jlt": isa.BPF_JLT,
    "jle": isa.BPF_JLE,
    "jset": isa.BPF_JSET,
    "jsgt": isa.BPF_JSGT,
    "jsge": isa.BPF_JSGE,
    "jslt": isa.BPF_JSLT,
    "jsle": isa.BPF_JSLE,
}


@pytest.mark.parametrize("is32", [False, True], ids=["jmp", "jmp32"])
@pytest.mark.parametrize("name", list(JUMPS))
def test_conditional_jumps(name: str, is32: bool) -> None:
    op = JUMPS[name]
    body = mov(9, imm=0)
    for i, (src, imm) in enumerate([(8, 0), (None, 0), (None, -1), (None, 0x7FFFFFFF), (None, 5)]):
        body += jmp(op, 7, 1, src=src, imm=imm, is32=is32) + alu(isa.BPF_OR, 9, imm=1 << i)
    body += stx(isa.BPF_DW, 2, 9, 16)
    compare(with_packet(24, body))


ATOMICS = {
    "add": isa.BPF_ADD,
    "or": isa.BPF_OR,
    "and": isa.BPF_AND,
    "xor": isa.BPF_XOR,
    "fetch_add": isa.BPF_ADD | isa.BPF_FETCH,
    "fetch_or": isa.BPF_OR | isa.BPF_FETCH,
    "fetch_and": isa.BPF_AND | isa.BPF_FETCH,
    "fetch_xor": isa.BPF_XOR | isa.BPF_FETCH,
    "xchg": isa.BPF_XCHG,
    "cmpxchg": isa.BPF_CMPXCHG,
}


@pytest.mark.parametrize("size", [isa.BPF_W, isa.BPF_DW], ids=["w", "dw"])
@pytest.mark.parametrize("name", list(ATOMICS))
def test_atomics_on_the_stack(name: str, size: int) -> None:
    imm = ATOMICS[name]
    body = (
        stx(isa.BPF_DW, 10, 7, -8)
        + mov(0, 7)
        + alu(isa.BPF_XOR, 0, imm=0x55)  # cmpxchg compares with r0: equal for some operands
        + insn(isa.BPF_STX | isa.BPF_ATOMIC | size, 10, 8, -8, imm)
        + ldx(isa.BPF_DW, 7, 10, -8)
        + STORE
        + stx(isa.BPF_DW, 2, 8, 8)
        + stx(isa.BPF_DW, 2, 0, 0)
    )
    compare(with_packet(24, body))


def test_adjust_head_tail_and_meta_limits() -> None:
    """The helpers' bounds, stepped around the frame's limits (struct xdp_frame at the
    start, skb_shared_info at the end, 4-byte metadata up to its maximum; the metadata's
    only where this kernel offers ``bpf_xdp_adjust_meta``)."""
    body = mov(9, imm=0)
    steps = [(44, range(-260, -190, 1)), (65, range(-60, 40, 3)), (65, range(3440, 3540, 4))]
    if not kern.helper_refused(kern.BPF_FUNC_XDP_ADJUST_META):
        steps.append((kern.BPF_FUNC_XDP_ADJUST_META, range(-300, 0, 1)))
    for helper, deltas in steps:
        for delta in deltas:
            # r9 = r9 * 31 + the helper's return; undo a success
            body += mov(1, 6) + mov(2, imm=delta) + insn(isa.BPF_JMP | isa.BPF_CALL, imm=helper)
            body += alu(isa.BPF_MUL, 9, imm=31) + alu(isa.BPF_ADD, 9, 0)
            body += jmp(isa.BPF_JNE, 0, 3, imm=0)
            body += mov(1, 6) + mov(2, imm=-delta) + insn(isa.BPF_JMP | isa.BPF_CALL, imm=helper)
    code = (
        mov(6, 1)
        + body
        + mov(0, 9)
        + alu(isa.BPF_RSH, 9, imm=32)
        + alu(isa.BPF_XOR, 0, 9)
        + exit_()
    )
    prog = BpfProgram("t", "xdp", decode(code), [], "GPL")
    fd = kern.load_raw(code)
    packets = [bytes(range(256))[:n] for n in (14, 60, 100, 256)] + [bytes(1000), bytes(3000)]
    try:
        kernel = [kern.test_run(fd, p) for p in packets]
    finally:
        os.close(fd)
    result = run_batch(prog, packets)
    assert [(int(r), d) for r, d in zip(result.retval, result.data, strict=True)] == [
        (k.retval, k.data) for k in kernel
    ]


@pytest.mark.parametrize("size", [isa.BPF_W, isa.BPF_DW], ids=["w", "dw"])
@pytest.mark.parametrize("is64", [True, False], ids=["alu64", "alu32"])
@pytest.mark.parametrize("operand", ["imm", "reg"])
def test_a_value_read_and_stored_back_bumped(size: int, is64: bool, operand: str) -> None:
    """``x = *p; y = x; y += v; *p = y`` (run as one fetch-add) on operands around every
    wrap: x, y and the stored value as the kernel has them."""
    add = (
        alu(isa.BPF_ADD, 4, imm=-3, is64=is64)
        if operand == "imm"
        else alu(isa.BPF_ADD, 4, 8, is64=is64)
    )
    body = (
        ldx(size, 3, 2, 0)
        + mov(4, 3)
        + add
        + stx(size, 2, 4, 0)
        + stx(isa.BPF_DW, 2, 3, 8)
        + stx(isa.BPF_DW, 2, 4, 16)
    )
    compare(with_packet(24, body))


@pytest.mark.parametrize("size", [isa.BPF_W, isa.BPF_DW], ids=["w", "dw"])
@pytest.mark.parametrize("is64", [True, False], ids=["alu64", "alu32"])
def test_a_value_bumped_in_place(size: int, is64: bool) -> None:
    """``x = *p; x += v; *p = x`` (run as one add): a 32-bit sum stores 32 bits, even into
    a 64-bit word."""
    body = (
        ldx(size, 3, 2, 0)
        + alu(isa.BPF_ADD, 3, 8, is64=is64)
        + stx(size, 2, 3, 0)
        + stx(isa.BPF_DW, 2, 3, 8)
    )
    compare(with_packet(24, body))
