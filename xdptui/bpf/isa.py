"""The eBPF instruction set: opcode fields and instruction decoding.

Follows ``include/uapi/linux/bpf.h``, ``include/uapi/linux/bpf_common.h`` and the ISA
document (``Documentation/bpf/standardization/instruction-set.rst``), v1 to v4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INSN_SIZE = 8
MAX_BPF_STACK = 512
MAX_CALL_FRAMES = 8

# Instruction classes (low three bits of the opcode).
BPF_LD = 0x00
BPF_LDX = 0x01
BPF_ST = 0x02
BPF_STX = 0x03
BPF_ALU = 0x04
BPF_JMP = 0x05
BPF_JMP32 = 0x06
BPF_ALU64 = 0x07

# Size and mode of loads and stores.
BPF_W = 0x00
BPF_H = 0x08
BPF_B = 0x10
BPF_DW = 0x18
SIZE_BYTES = {BPF_W: 4, BPF_H: 2, BPF_B: 1, BPF_DW: 8}
BPF_IMM = 0x00
BPF_ABS = 0x20
BPF_IND = 0x40
BPF_MEM = 0x60
BPF_MEMSX = 0x80
BPF_ATOMIC = 0xC0

# Source operand.
BPF_K = 0x00
BPF_X = 0x08

# ALU operations.
BPF_ADD = 0x00
BPF_SUB = 0x10
BPF_MUL = 0x20
BPF_DIV = 0x30
BPF_OR = 0x40
BPF_AND = 0x50
BPF_LSH = 0x60
BPF_RSH = 0x70
BPF_NEG = 0x80
BPF_MOD = 0x90
BPF_XOR = 0xA0
BPF_MOV = 0xB0
BPF_ARSH = 0xC0
BPF_END = 0xD0

# Jump operations.
BPF_JA = 0x00
BPF_JEQ = 0x10
BPF_JGT = 0x20
BPF_JGE = 0x30
BPF_JSET = 0x40
BPF_JNE = 0x50
BPF_JSGT = 0x60
BPF_JSGE = 0x70
BPF_CALL = 0x80
BPF_EXIT = 0x90
BPF_JLT = 0xA0
BPF_JLE = 0xB0
BPF_JSLT = 0xC0
BPF_JSLE = 0xD0

# Atomic operations (imm of a BPF_STX | BPF_ATOMIC instruction).
BPF_FETCH = 0x01
BPF_XCHG = 0xE0 | BPF_FETCH
BPF_CMPXCHG = 0xF0 | BPF_FETCH

# src_reg of ld_imm64 and of calls.
BPF_PSEUDO_MAP_FD = 1
BPF_PSEUDO_MAP_VALUE = 2
BPF_PSEUDO_FUNC = 4
# what a program that takes a function's address (a callback) is told, by the loader and the
# verifier alike
CALLBACKS_NOT_MODELLED = (
    "callbacks (bpf_loop, bpf_for_each_map_elem, timers) are not modelled by xdptui"
)
BPF_PSEUDO_MAP_IDX = 5  # a map by its index in the object (what the loader's relocations make)
BPF_PSEUDO_MAP_IDX_VALUE = 6
BPF_PSEUDO_CALL = 1
BPF_PSEUDO_KFUNC_CALL = 2

INSN_DTYPE = np.dtype([("code", "u1"), ("regs", "u1"), ("off", "<i2"), ("imm", "<i4")])


@dataclass(frozen=True, slots=True)
class Insn:
    """One 8-byte ``struct bpf_insn``; ``imm64`` holds the full constant of an ld_imm64."""

    code: int
    dst: int
    src: int
    off: int
    imm: int
    imm64: int = 0

    @property
    def cls(self) -> int:
        return self.code & 0x07

    @property
    def op(self) -> int:
        return self.code & 0xF0

    @property
    def source(self) -> int:
        return self.code & 0x08

    @property
    def size(self) -> int:
        return SIZE_BYTES[self.code & 0x18]

    @property
    def mode(self) -> int:
        return self.code & 0xE0

    def is_ld_imm64(self) -> bool:
        return self.code == BPF_LD | BPF_IMM | BPF_DW


def decode(raw: bytes) -> list[Insn]:
    """Decode a program's bytes into instructions (little-endian, as ``-target bpf`` emits)."""
    arr = np.frombuffer(raw, dtype=INSN_DTYPE)
    out: list[Insn] = []
    for code, regs, off, imm in arr.tolist():
        out.append(Insn(int(code), int(regs) & 0x0F, int(regs) >> 4, int(off), int(imm)))
    return out


def encode(insns: list[Insn]) -> bytes:
    """The inverse of :func:`decode` (ld_imm64 keeps its two slots as they are)."""
    arr = np.zeros(len(insns), dtype=INSN_DTYPE)
    for i, ins in enumerate(insns):
        arr[i] = (ins.code, (ins.src << 4) | ins.dst, ins.off, ins.imm)
    return arr.tobytes()


def is_call(ins: Insn) -> bool:
    return ins.code == BPF_JMP | BPF_CALL
