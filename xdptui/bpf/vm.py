"""Running a program over a batch of packets, vectorised, with sequential results.

The program is compiled once into basic blocks of closures over NumPy arrays (one element per
packet). A batch starts as one group at instruction 0; a conditional jump splits a group by
its mask; groups waiting at the same instruction merge again, the lowest instruction first, so
a parse tree costs a pass per distinct path, not per packet. Loops re-run their body for the
packets still in them; bpf-to-bpf calls push a 512-byte stack frame and the caller's r6-r10
per packet.

Order: a batch must give exactly what running its packets one by one gives. Packets only share
map memory, so every map access is logged by word. Reads, non-fetching atomic adds, and the
updates of one atomic instruction (applied in packet order, fetches included; a
``load; add; store`` of the same map word is run as one) are safe to share. Any other sharing
-- a packet reading what an earlier one wrote, or an LRU or full map taking inserts -- rolls
the maps back and runs the batch as a shorter prefix, then goes on from there (down to a
packet at a time when every packet depends on the one before).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.bpf import access, alu, isa
from xdptui.bpf import memory as mem
from xdptui.bpf.batch import AccessLog, Batch, Group, PrivateAbort, Record, merge
from xdptui.bpf.helpers import helper
from xdptui.bpf.isa import MAX_BPF_STACK, MAX_CALL_FRAMES, Insn
from xdptui.bpf.liveness import live_in, live_out
from xdptui.bpf.maps import MapSnapshot
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.packets import Packets
from xdptui.model.errors import Errno, KernelError

U64 = npt.NDArray[np.uint64]
Op = Callable[[Batch, Group], None]
Cond = Callable[[Group], npt.NDArray[np.bool_]]
MAX_INSNS = 1_000_000  # the verifier's BPF_COMPLEXITY_LIMIT_INSNS, as a run-time cap here
ACTIONS = ("XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT")


def action_name(code: int) -> str:
    """``enum xdp_action`` names; others print as bpftool prints an unknown number."""
    return ACTIONS[code] if 0 <= code < len(ACTIONS) else "unknown"


@dataclass
class Block:
    """Straight-line ops from ``start``, then one terminator."""

    start: int
    ops: list[Op]
    count: int  # instructions in the block
    kind: str  # "cond", "goto", "exit", "call", "fall"
    target: int = -1
    fall: int = -1
    cond: Cond | None = None
    live: int = 0x7FF  # registers live at ``start`` (a bit mask): the rest are not carried
    target_live: int = 0x7FF
    fall_live: int = 0x7FF


@dataclass
class Redirect:
    """Where ``bpf_redirect`` / ``bpf_redirect_map`` pointed a packet (``bpf_redirect_info``)."""

    ifindex: int | None = None
    map: str | None = None
    key: int | None = None
    flags: int = 0


@dataclass
class BatchResult:
    """Per packet: the return value, the bytes from ``data_meta`` to ``data_end`` (what
    ``BPF_PROG_TEST_RUN`` returns in data_out, packed: ``out``), the redirect target; the
    output records in packet order; and how many instructions ran."""

    retval: npt.NDArray[np.uint32]
    out: Packets
    meta_len: npt.NDArray[np.int64]
    redirect_ifindex: npt.NDArray[np.int64]  # bpf_redirect's ifindex, or -1
    redirect_map: npt.NDArray[np.int64]  # bpf_redirect_map's map (object index), or -1
    redirect_key: npt.NDArray[np.int64]
    redirect_flags: npt.NDArray[np.int64]
    map_names: tuple[str, ...]
    records: list[Record] = field(default_factory=list)
    insns: int = 0
    passes: int = 1  # runs needed to keep the batch sequential (1: fully vectorised)
    visits: list[tuple[npt.NDArray[np.int64], int]] = field(default_factory=list, repr=False)
    log: AccessLog | None = None  # recording runs: every map access, by word
    adds: list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64], int, U64]] = field(
        default_factory=list
    )  # recording runs: (map, packets, arena offsets, size, values) of each commutative add

    @cached_property
    def counts(self) -> npt.NDArray[np.int64]:
        """The instructions each packet ran (from the block runs, when asked for)."""
        out = np.zeros(len(self.retval), dtype=np.int64)
        for rows, count in self.visits:
            out[rows] += count
        return out

    @cached_property
    def data(self) -> list[bytes]:
        """Each packet's data_out as ``bytes``."""
        return self.out.to_bytes()

    @cached_property
    def redirects(self) -> list[Redirect | None]:
        """Each packet's redirect target, or None."""
        out: list[Redirect | None] = [None] * len(self.retval)
        for i in np.flatnonzero(self.redirect_ifindex >= 0).tolist():
            out[i] = Redirect(ifindex=int(self.redirect_ifindex[i]))
        for i in np.flatnonzero(self.redirect_map >= 0).tolist():
            out[i] = Redirect(
                map=self.map_names[int(self.redirect_map[i])],
                key=int(self.redirect_key[i]),
                flags=int(self.redirect_flags[i]),
            )
        return out


# -- compilation ---------------------------------------------------------------------------------
def _imm64(v: int) -> np.uint64:
    return np.uint64(v & 0xFFFFFFFFFFFFFFFF)


def _src(ins: Insn) -> Callable[[Group], U64]:
    if ins.source == isa.BPF_X:
        s = ins.src
        return lambda g: g.r[s]
    k = _imm64(ins.imm)
    return lambda g: np.full(len(g), k, dtype=np.uint64)


def _alu_op(ins: Insn) -> Op:
    is64 = ins.cls == isa.BPF_ALU64
    op, off, dst = ins.op, ins.off, ins.dst
    if op == isa.BPF_END:
        bits = ins.imm
        if bits not in (16, 32, 64):
            raise KernelError(Errno.EINVAL, f"BPF_END uses reserved fields (imm {bits})")
        swap = is64 or ins.source == isa.BPF_X  # bswap (ALU64) or to big-endian

        def end(b: Batch, g: Group) -> None:
            v = g.r[dst]
            if swap:
                g.r[dst] = alu.bswap(v, bits)
            elif bits < 64:
                g.r[dst] = v & np.uint64((1 << bits) - 1)

        return end
    src = _src(ins)

    def op_fn(b: Batch, g: Group) -> None:
        g.r[dst] = alu.alu(op, off, is64, g.r[dst], src(g))

    return op_fn


def _ldx(ins: Insn) -> Op:
    dst, base, off, size = ins.dst, ins.src, ins.off, ins.size
    signed = ins.mode == isa.BPF_MEMSX
    o = _imm64(off)

    def ldx(b: Batch, g: Group) -> None:
        g.r[dst] = access.load(b, g.idx, g.r[base] + o, size, signed)

    return ldx


def _st(ins: Insn) -> Op:
    dst, off, size = ins.dst, ins.off, ins.size
    o = _imm64(off)
    if ins.cls == isa.BPF_ST:
        k = _imm64(ins.imm)

        def st(b: Batch, g: Group) -> None:
            access.store(b, g.idx, g.r[dst] + o, size, np.full(len(g), k, dtype=np.uint64))

        return st
    src = ins.src

    def stx(b: Batch, g: Group) -> None:
        access.store(b, g.idx, g.r[dst] + o, size, g.r[src])

    return stx


def _atomic(ins: Insn) -> Op:
    dst, src, off, size, imm = ins.dst, ins.src, ins.off, ins.size, ins.imm
    if size not in (4, 8):
        raise KernelError(Errno.EINVAL, f"invalid atomic operand size {size}")
    o = _imm64(off)
    fetch = bool(imm & isa.BPF_FETCH)
    if imm == isa.BPF_XCHG:
        op = -1
    elif imm == isa.BPF_CMPXCHG:
        op = -2
    elif imm & ~isa.BPF_FETCH in (isa.BPF_ADD, isa.BPF_OR, isa.BPF_AND, isa.BPF_XOR):
        op = imm & ~isa.BPF_FETCH
    else:
        raise KernelError(Errno.EINVAL, f"BPF_ATOMIC uses invalid atomic opcode {imm:#04x}")
    m32 = np.uint64(0xFFFFFFFF)

    def atom(b: Batch, g: Group) -> None:
        cmp = g.r[0] if op == -2 else None
        old = access.atomic(b, g.idx, g.r[dst] + o, size, op, fetch, g.r[src], cmp)
        if op == -2:
            g.r[0] = old if size == 8 else old & m32
        elif fetch:
            g.r[src] = old if size == 8 else old & m32

    return atom


def _fused_add(ld: Insn, add: Insn, observed: bool) -> Op:
    """``rX = *(rA + off); rX += v; *(rA + off) = rX`` -- or ``rY += rX`` and store ``rY`` --
    as one fetch-add (see module doc); when the registers it sets are dead after the store
    (``observed`` False), a plain commutative add."""
    commuted = add.dst != ld.dst  # rY += rX: the addend is rY, the sum lands in rY
    addend = (lambda g: g.r[add.dst]) if commuted else _src(add)
    return _fetch_add(ld, add, addend, observed, ld.dst if commuted else None, add.dst)


def _fused_copy_add(ld: Insn, mv: Insn, add: Insn, observed: bool) -> Op:
    """``rX = *(rA + off); rY = rX; rY += v; *(rA + off) = rY`` -- a value read and stored
    back bumped, the value read kept (``x = *p; *p = x + 1``, a round robin's next slot) --
    as one fetch-add: rX the old value, rY the sum."""
    return _fetch_add(ld, add, _src(add), observed, ld.dst, mv.dst)


def _fetch_add(
    ld: Insn,
    add: Insn,
    addend: Callable[[Group], U64],
    observed: bool,
    old_to: int | None,
    sum_to: int,
) -> Op:
    """The word ``ld`` reads gets the addend added atomically (in packet order); the old value
    goes to ``old_to`` (when kept) and the sum, 32-bit for an ALU32 add, to ``sum_to``."""
    base, size, o = ld.src, ld.size, _imm64(ld.off)
    is64 = add.cls == isa.BPF_ALU64
    m32 = np.uint64(0xFFFFFFFF)

    def fused(b: Batch, g: Group) -> None:
        v = addend(g)
        old = access.atomic(b, g.idx, g.r[base] + o, size, 0, observed, v, None, fused=True)
        with np.errstate(over="ignore"):
            res = old + v
        if old_to is not None:
            g.r[old_to] = old
        g.r[sum_to] = res if is64 else res & m32

    return fused


def _ld_imm64(ins: Insn) -> Op:
    dst, v = ins.dst, _imm64(ins.imm64)

    def ld(b: Batch, g: Group) -> None:
        g.r[dst] = np.full(len(g), v, dtype=np.uint64)

    return ld


# Helpers taking a map, and the register it is in.
MAP_ARG = {1: 1, 2: 1, 3: 1, 51: 1, 130: 1, 25: 2, 121: 2}


def _call_helper(ins: Insn) -> Op:
    try:
        fn = helper(ins.imm)
    except KernelError as exc:
        # The verifier refuses a call it can reach; one it cannot is dead code, which the
        # kernel keeps out of the program (``sanitize_dead_code``) and loads.
        refusal = exc

        def dead(b: Batch, g: Group) -> None:
            raise refusal

        return dead
    reg = MAP_ARG.get(ins.imm)

    def call(b: Batch, g: Group) -> None:
        fn(b, g)

    if reg is None:
        return call

    def call_per_map(b: Batch, g: Group) -> None:
        # One call site may be reached with different maps (the verifier allows it when each
        # path's map pointer is a constant): run the helper once per map.
        maps = g.r[reg]
        if len(maps) == 0 or (maps == maps[0]).all():
            fn(b, g)
            return
        r0 = np.zeros(len(g), dtype=np.uint64)
        for value in np.unique(maps):
            sel = maps == value
            sub = g.take(sel)
            fn(b, sub)
            r0[sel] = sub.r[0]
        g.r[0] = r0

    return call_per_map


def _cond(ins: Insn) -> Cond:
    op, is32, dst = ins.op, ins.cls == isa.BPF_JMP32, ins.dst
    src = _src(ins)
    return lambda g: alu.condition(op, is32, g.r[dst], src(g))


def _is_jump(ins: Insn) -> bool:
    return ins.cls in (isa.BPF_JMP, isa.BPF_JMP32) and not (
        ins.op == isa.BPF_CALL and ins.src != isa.BPF_PSEUDO_CALL
    )


def _jump_target(pc: int, ins: Insn) -> int:
    if ins.cls == isa.BPF_JMP32 and ins.op == isa.BPF_JA:
        return pc + ins.imm + 1
    if ins.op == isa.BPF_CALL:
        return pc + ins.imm + 1
    return pc + ins.off + 1


def _fusable(insns: list[Insn], pc: int, leaders: set[int]) -> bool:
    """``ldx rX, [rA+off]; add rX, v; stx [rA+off], rX`` (or ``add rY, rX; stx ..., rY``)
    inside one block, the add touching neither rA nor, for ``rX += v``, rX through v."""
    if pc + 2 >= len(insns) or (pc + 1) in leaders or (pc + 2) in leaders:
        return False
    ld, add, st = insns[pc], insns[pc + 1], insns[pc + 2]
    if not (
        ld.cls == isa.BPF_LDX
        and ld.mode == isa.BPF_MEM
        and ld.dst != ld.src
        and add.cls in (isa.BPF_ALU64, isa.BPF_ALU)
        and (add.cls == isa.BPF_ALU64 or ld.size <= 4)  # a 32-bit sum stores 32 bits
        and add.op == isa.BPF_ADD
        and add.off == 0
        and add.dst != ld.src
        and st.cls == isa.BPF_STX
        and st.mode == isa.BPF_MEM
        and st.dst == ld.src
        and st.off == ld.off
        and st.size == ld.size
        and st.src == add.dst
    ):
        return False
    if add.dst == ld.dst:
        return add.source == isa.BPF_K or add.src not in (ld.dst, ld.src)
    return add.source == isa.BPF_X and add.src == ld.dst


def _fusable_copy(insns: list[Insn], pc: int, leaders: set[int]) -> bool:
    """``ldx rX, [rA+off]; mov rY, rX; add rY, v; stx [rA+off], rY`` inside one block, v
    neither rX nor rY (see :func:`_fused_copy_add`)."""
    if pc + 3 >= len(insns) or any(pc + k in leaders for k in (1, 2, 3)):
        return False
    ld, mv, add, st = insns[pc : pc + 4]
    x, y, a = ld.dst, mv.dst, ld.src
    return (
        ld.cls == isa.BPF_LDX
        and ld.mode == isa.BPF_MEM
        and len({x, y, a}) == 3
        and mv.cls in (isa.BPF_ALU64, isa.BPF_ALU)
        and (mv.cls == isa.BPF_ALU64 or ld.size <= 4)
        and mv.op == isa.BPF_MOV
        and mv.source == isa.BPF_X
        and mv.src == x
        and mv.off == 0
        and add.cls in (isa.BPF_ALU64, isa.BPF_ALU)
        and add.op == isa.BPF_ADD
        and add.off == 0
        and add.dst == y
        and (add.cls == isa.BPF_ALU64 or ld.size <= 4)  # a 32-bit sum stores 32 bits
        and (add.source == isa.BPF_K or add.src not in (x, y))
        and st.cls == isa.BPF_STX
        and st.mode == isa.BPF_MEM
        and (st.dst, st.off, st.size, st.src) == (a, ld.off, ld.size, y)
    )


def compile_program(prog: BpfProgram) -> dict[int, Block]:
    """Split into basic blocks and compile each instruction once (cached on the program)."""
    if prog._compiled is not None:
        return prog._compiled  # type: ignore[no-any-return]
    from xdptui.bpf.verifier import check

    check(prog)
    insns = prog.insns
    n = len(insns)
    live = live_out(insns)
    leaders = {0}
    for pc, ins in enumerate(insns):
        if ins.is_ld_imm64():
            continue
        if _is_jump(ins):
            if ins.op not in (isa.BPF_EXIT,):
                t = _jump_target(pc, ins)
                if not 0 <= t < n:
                    raise KernelError(Errno.EINVAL, f"jump out of range from insn {pc} to {t}")
                leaders.add(t)
            if pc + 1 < n:
                leaders.add(pc + 1)
    blocks: dict[int, Block] = {}
    for start in sorted(leaders):
        ops: list[Op] = []
        pc = start
        block = None
        while pc < n:
            ins = insns[pc]
            if pc != start and pc in leaders:
                block = Block(start, ops, pc - start, "fall", fall=pc)
                break
            if ins.is_ld_imm64():
                ops.append(_ld_imm64(ins))
                pc += 2
                continue
            if _is_jump(ins):
                count = pc - start + 1
                if ins.op == isa.BPF_EXIT:
                    block = Block(start, ops, count, "exit")
                elif ins.op == isa.BPF_CALL:
                    block = Block(
                        start, ops, count, "call", target=_jump_target(pc, ins), fall=pc + 1
                    )
                elif ins.op == isa.BPF_JA:
                    block = Block(start, ops, count, "goto", target=_jump_target(pc, ins))
                else:
                    block = Block(
                        start, ops, count, "cond", _jump_target(pc, ins), pc + 1, _cond(ins)
                    )
                break
            if _fusable_copy(insns, pc, leaders):
                ld, mv, add = insns[pc], insns[pc + 1], insns[pc + 2]
                observed = bool(live[pc + 3] & ((1 << ld.dst) | (1 << mv.dst)))
                ops.append(_fused_copy_add(ld, mv, add, observed))
                pc += 4
                continue
            ops.append(_compile_one(insns, pc, leaders))
            if ops[-1] is _SKIP2:
                ops.pop()
                sets = (1 << insns[pc].dst) | (1 << insns[pc + 1].dst)
                observed = bool(live[pc + 2] & sets)
                ops.append(_fused_add(insns[pc], insns[pc + 1], observed))
                pc += 3
                continue
            pc += 1
        if block is None:
            raise KernelError(Errno.EINVAL, "the last insn is not an exit or jmp")
        blocks[start] = block
    entry = live_in(insns)
    for blk in blocks.values():
        blk.live = entry[blk.start]
        blk.target_live = entry[blk.target] if 0 <= blk.target < n else 0x7FF
        blk.fall_live = entry[blk.fall] if 0 <= blk.fall < n else 0x7FF
    prog._compiled = blocks
    return blocks


def _SKIP2(b: Batch, g: Group) -> None:  # marker: the next three insns fuse into one op
    raise AssertionError


def _compile_one(insns: list[Insn], pc: int, leaders: set[int]) -> Op:
    ins = insns[pc]
    cls = ins.cls
    if cls in (isa.BPF_ALU, isa.BPF_ALU64):
        return _alu_op(ins)
    if cls == isa.BPF_LDX and ins.mode in (isa.BPF_MEM, isa.BPF_MEMSX):
        if _fusable(insns, pc, leaders):
            return _SKIP2
        return _ldx(ins)
    if cls in (isa.BPF_ST, isa.BPF_STX) and ins.mode == isa.BPF_MEM:
        return _st(ins)
    if cls == isa.BPF_STX and ins.mode == isa.BPF_ATOMIC:
        return _atomic(ins)
    if cls in (isa.BPF_JMP, isa.BPF_JMP32) and ins.op == isa.BPF_CALL:
        return _call_helper(ins)
    if cls == isa.BPF_LD and ins.mode in (isa.BPF_ABS, isa.BPF_IND):
        raise KernelError(
            Errno.EINVAL, "BPF_LD_[ABS|IND] instructions not allowed for this program type"
        )
    raise KernelError(Errno.EINVAL, f"unknown opcode {ins.code:02x} at insn {pc}")


# -- execution ---------------------------------------------------------------------------------
def _execute(b: Batch, blocks: dict[int, Block]) -> None:
    pending: dict[int, list[Group]] = {0: [b.initial_group()]}
    heap = [0]
    while heap:
        pc = heapq.heappop(heap)
        groups = pending.pop(pc, None)
        if not groups:
            continue
        blk = blocks[pc]
        g = merge(groups, blk.live)
        for op in blk.ops:
            op(b, g)
        b.visits.append((g.idx, blk.count))
        b.insns += blk.count * len(g)
        g.top += blk.count
        if g.top > b.max_insns:
            g.top = int(b.icount()[g.idx].max())
        if g.top > b.max_insns:
            raise KernelError(
                Errno.E2BIG,
                f"packet {b.first + int(g.idx[0])}: more than {b.max_insns} instructions "
                "(the verifier's complexity limit)",
            )
        for nxt, sub in _successors(b, blk, g):
            if len(sub) == 0:
                continue
            if nxt not in pending:
                pending[nxt] = []
                heapq.heappush(heap, nxt)
            pending[nxt].append(sub)


def _successors(b: Batch, blk: Block, g: Group) -> list[tuple[int, Group]]:
    if blk.kind == "fall":
        return [(blk.fall, g)]
    if blk.kind == "goto":
        return [(blk.target, g)]
    if blk.kind == "cond":
        assert blk.cond is not None
        taken = blk.cond(g)
        if taken.all():
            return [(blk.target, g)]
        if not taken.any():
            return [(blk.fall, g)]
        return [
            (blk.target, g.take(taken, blk.target_live)),
            (blk.fall, g.take(~taken, blk.fall_live)),
        ]
    if blk.kind == "call":
        d = b.depth[g.idx]
        if (d + 1 >= MAX_CALL_FRAMES).any():
            raise KernelError(
                Errno.E2BIG, f"the call stack of {MAX_CALL_FRAMES + 1} frames is too deep"
            )
        b.ensure_stack(int(d.max()) + 2)
        b.saved[g.idx, d] = np.stack(
            [reg if len(reg) else np.zeros(len(g), dtype=np.uint64) for reg in g.r[6:11]], axis=1
        )
        b.retpc[g.idx, d] = blk.fall
        b.depth[g.idx] = d + 1
        g.r[10] = np.uint64(mem.STACK_BASE) + ((d + 2) * MAX_BPF_STACK).astype(np.uint64)
        return [(blk.target, g)]
    # exit
    d = b.depth[g.idx]
    top = d == 0
    if top.all():
        _finish(b, g)
        return []
    if top.any():
        _finish(b, g.take(top))
        g = g.take(~top)
        d = d[~top]
    d = d - 1
    saved = b.saved[g.idx, d]
    for k in range(5):
        g.r[6 + k] = saved[:, k].copy()
    b.depth[g.idx] = d
    ret = b.retpc[g.idx, d]
    out = []
    for pc in np.unique(ret):
        sel = ret == pc
        out.append((int(pc), g if sel.all() else g.take(sel)))
    return out


def _finish(b: Batch, g: Group) -> None:
    b.retval[g.idx] = g.r[0]
    b.done[g.idx] = True


# -- the batch API -----------------------------------------------------------------------------
def _per_packet(value: int | npt.ArrayLike, n: int) -> U64:
    arr = np.asarray(value, dtype=np.int64)
    if arr.ndim == 0:
        return np.full(n, int(arr), dtype=np.uint64)
    if len(arr) != n:
        raise KernelError(Errno.EINVAL, f"{len(arr)} context values for {n} packets")
    return arr.astype(np.uint64)


def run_batch(
    prog: BpfProgram,
    packets: list[bytes] | Packets,
    *,
    ingress_ifindex: int | npt.ArrayLike = 1,
    rx_queue_index: int | npt.ArrayLike = 0,
    egress_ifindex: int | npt.ArrayLike = 0,
    cpu: int = 0,
    time_ns: int = 0,
    seed: int = 0,
    max_insns: int = MAX_INSNS,
    sequential: bool = True,
    record: bool = False,
    devices: dict[int, tuple[int, int]] | None = None,
) -> BatchResult:
    """Run ``prog`` over ``packets`` as if one by one in order, on CPU ``cpu``.

    ``packets``: frames as ``bytes``, or ``Packets`` packed once (the batch reads their rows
    in place and copies them on its first write into a packet: the caller's stay as they are).

    Context defaults are what ``BPF_PROG_TEST_RUN`` gives without a ctx (``lo``, queue 0).
    Map changes stay in the program's maps. Refusals raise ``KernelError``: EINVAL for what
    the loader or verifier refuses, EACCES for a bad memory access, E2BIG for a run over the
    instruction cap; the maps are then as before the batch.

    ``devices`` are the host's (ifindex -> (mtu, hard_header_len)) that ``bpf_check_mtu``
    looks up; without them, lo alone, as ``BPF_PROG_TEST_RUN`` has it.

    ``sequential=False`` runs the batch in one vectorised pass even where packets share
    map words (each packet sees the state the pass left, not its predecessors'): for
    probing what each packet does, never for results. ``record`` keeps the access log and
    the value of every commutative add in the result."""
    blocks = compile_program(prog)
    if not isinstance(packets, Packets):
        packets = Packets.from_bytes(packets)
    n = len(packets)
    ing = _per_packet(ingress_ifindex, n)
    rxq = _per_packet(rx_queue_index, n)
    egr = _per_packet(egress_ifindex, n)
    if prog.expected_attach_type != "xdp/devmap":
        egr = np.zeros(n, dtype=np.uint64)
    parts: list[Batch] = []
    before: dict[int, MapSnapshot] = {}  # each map's state before the batch, once it changed
    private: set[int] = set()  # scratch maps each row of a pass gets its own copy of
    refused: set[int] = set()  # maps a copy per row could not follow
    start, size, passes = 0, n, 0
    while start < n:
        end = min(n, start + size)
        b = Batch(
            prog,
            packets.rows(start, end),
            start,
            ing[start:end],
            rxq[start:end],
            egr[start:end],
            cpu,
            time_ns,
            seed,
            max_insns,
            record=record,
        )
        if devices is not None:
            b.devices = devices
        if private and b.n > 1:
            b.privatise(private)
        passes += 1
        try:
            _execute(b, blocks)
        except PrivateAbort as exc:
            b.rollback()
            private.discard(exc.mi)
            refused.add(exc.mi)
            continue
        except KernelError:
            b.rollback()
            for mi, snap in before.items():
                prog.maps[mi].restore(snap)
            raise
        cut = _first_cut(b) if sequential else None
        if cut is not None and cut < b.n:
            b.rollback()
            scratch = b.scratch_candidates() - refused - private
            if scratch and b.n > 1:  # the same packets again, each with its own copy of these
                private |= scratch
                continue
            size = max(1, cut)
            continue
        b.commit_private()
        for mi, snap in b.snapshots.items():
            before.setdefault(mi, snap)
        parts.append(b)
        start = end
        size = max(size * 2, 1)
    result = _result(prog, parts, passes)
    if record:
        result.log = AccessLog.join([b.access_log() for b in parts]) if parts else None
        result.adds = [a for b in parts for a in _shifted(b)]
    return result


def _first_cut(b: Batch) -> int | None:
    """The first row whose result may differ from running the rows one by one: through the
    shared maps, or through a privatised one."""
    cuts = [c for c in (b.first_conflict(), b.private_cut()) if c is not None]
    return min(cuts) if cuts else None


def test_run(prog: BpfProgram, packet: bytes, repeat: int = 1) -> BatchResult:
    """``bpf_prog_test_run_xdp``: the program run ``repeat`` times on one buffer -- each run
    sees what the previous one left (bytes, ``adjust_head``/``_meta``/``_tail``), as
    ``bpf_test_run`` loops over the same ``xdp_buff`` -- and the last run's result. A devmap
    or cpumap program is EINVAL, as the kernel refuses to test-run those."""
    if prog.expected_attach_type in ("xdp/devmap", "xdp/cpumap"):
        raise KernelError(
            Errno.EINVAL,
            f"BPF_PROG_TEST_RUN: {prog.name} is a BPF_XDP_{prog.expected_attach_type[4:].upper()}"
            " program, which the kernel does not test-run",
        )
    blocks = compile_program(prog)
    one = np.ones(1, dtype=np.uint64)
    b = Batch(prog, Packets.from_bytes([packet]), 0, one, one * 0, one * 0, 0, 0, 0, MAX_INSNS)
    insns = 0
    for _ in range(repeat):
        b.done[:] = False
        b.depth[:] = 0
        b.visits.clear()
        try:
            _execute(b, blocks)
        except KernelError:
            b.rollback()
            raise
        insns += b.insns
        b.insns = 0
    b.insns = insns
    return _result(prog, [b], repeat)


def _shifted(b: Batch) -> list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64], int, U64]]:
    """A part's recorded adds with rows numbered in the whole batch."""
    return [(mi, rows + b.first, off, size, v) for mi, rows, off, size, v in b.adds]


def _result(prog: BpfProgram, parts: list[Batch], passes: int) -> BatchResult:
    def joined(column: Callable[[Batch], npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
        if not parts:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([column(b) for b in parts]).astype(dtype, copy=False)

    records: list[Record] = []
    for b in parts:
        records.extend(rec for _row, _seq, rec in sorted(b.records, key=lambda t: (t[0], t[1])))
    out = Packets.concat([b.out() for b in parts]) if parts else Packets.from_bytes([])
    return BatchResult(
        retval=joined(lambda b: b.retval & np.uint64(0xFFFFFFFF), np.uint32),
        out=out,
        meta_len=joined(lambda b: b.data_off - b.meta_off, np.int64),
        redirect_ifindex=joined(lambda b: b.redirect_ifindex, np.int64),
        redirect_map=joined(lambda b: b.redirect_map, np.int64),
        redirect_key=joined(lambda b: b.redirect_key, np.int64),
        redirect_flags=joined(lambda b: b.redirect_flags, np.int64),
        map_names=tuple(m.name for m in prog.maps),
        records=records,
        insns=sum(b.insns for b in parts),
        passes=passes,
        visits=[(rows + b.first if b.first else rows, c) for b in parts for rows, c in b.visits],
    )
