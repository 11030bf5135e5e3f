"""A few-line assembler for hand-written test programs (struct bpf_insn encoding)."""

from __future__ import annotations

import struct

from xdptui.bpf import isa


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def alu(
    op: int, dst: int, src: int | None = None, imm: int = 0, is64: bool = True, off: int = 0
) -> bytes:
    cls = isa.BPF_ALU64 if is64 else isa.BPF_ALU
    if src is None:
        return insn(cls | op | isa.BPF_K, dst, 0, off, imm)
    return insn(cls | op | isa.BPF_X, dst, src, off, 0)


def mov(dst: int, src: int | None = None, imm: int = 0) -> bytes:
    return alu(isa.BPF_MOV, dst, src, imm)


def ldx(size: int, dst: int, src: int, off: int, signed: bool = False) -> bytes:
    mode = isa.BPF_MEMSX if signed else isa.BPF_MEM
    return insn(isa.BPF_LDX | mode | size, dst, src, off)


def stx(size: int, dst: int, src: int, off: int) -> bytes:
    return insn(isa.BPF_STX | isa.BPF_MEM | size, dst, src, off)


def jmp(
    op: int, dst: int, off: int, src: int | None = None, imm: int = 0, is32: bool = False
) -> bytes:
    cls = isa.BPF_JMP32 if is32 else isa.BPF_JMP
    if src is None:
        return insn(cls | op | isa.BPF_K, dst, 0, off, imm)
    return insn(cls | op | isa.BPF_X, dst, src, off)


def call(helper: int) -> bytes:
    return insn(isa.BPF_JMP | isa.BPF_CALL, imm=helper)


def exit_() -> bytes:
    return insn(isa.BPF_JMP | isa.BPF_EXIT)


def with_packet(n: int, body: bytes) -> bytes:
    """r6 = ctx, r2 = data (checked for ``n`` bytes), r7 / r8 = the first two u64 of the
    packet; then ``body`` (which must end in exit); r0 = XDP_PASS if the packet is short."""
    head = (
        mov(6, 1)
        + ldx(isa.BPF_W, 2, 6, 0)
        + ldx(isa.BPF_W, 3, 6, 4)
        + mov(4, 2)
        + alu(isa.BPF_ADD, 4, imm=n)
        + jmp(isa.BPF_JGT, 4, len(body) // 8 + 2, src=3)
        + ldx(isa.BPF_DW, 7, 2, 0)
        + ldx(isa.BPF_DW, 8, 2, 8)
    )
    return head + body + mov(0, imm=2) + exit_()
