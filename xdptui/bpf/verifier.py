"""The verifier: every path of a program walked before it may run (``bpf_check`` in
``kernel/bpf/verifier.c``), with the kernel's limits and messages.

``do_check`` walks the paths depth first: each instruction updates the current state
(``valu``, ``vmem``, ``vcalls``); a branch both ways pushes the other side, at most
``BPF_COMPLEXITY_LIMIT_JMP_SEQ`` deep. At the prune points ``vcfg`` marks, ``is_state_visited``
compares the state with the ones kept there: one that covers it (``vstate.states_equal``,
registers live there) ends the path; one still being explored that equals it exactly is a loop
that never ends ("infinite loop detected"); otherwise the state may be kept, with the kernel's
heuristics (a state every 2 jumps and 8 instructions, every 20 jumps or 100 instructions
inside a loop, and ones that keep missing evicted). More than ``BPF_COMPLEXITY_LIMIT_INSNS``
instructions processed is "BPF program is too large". What it refuses raises
``KernelError`` with the errno ``BPF_PROG_LOAD`` returns and the log's last lines, so what
``xdptui check`` accepts is what the interpreter may run.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.bpf import isa, valu, vcalls, vcfg, vmem
from xdptui.bpf import scalar as sc
from xdptui.bpf.isa import MAX_BPF_STACK, Insn
from xdptui.bpf.liveness import live_in
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.vstate import (
    CTX,
    INIT,
    MAP_PTR,
    MAP_VALUE,
    NOT_INIT,
    STACK,
    UNKNOWN,
    Func,
    Reg,
    State,
    VerifierError,
    scalar,
    states_equal,
)
from xdptui.model.errors import Errno, KernelError

BPF_COMPLEXITY_LIMIT_INSNS = 1_000_000
BPF_COMPLEXITY_LIMIT_JMP_SEQ = 8192
BPF_MAXINSNS_PRIV = 1_000_000  # bpf_prog_load: insn_cnt above this is E2BIG
CALLEE_SAVED = 0b11111000000  # r6-r10


@dataclass
class Stats:
    """The verifier log's last line: ``processed N insns ... total_states ... peak_states``."""

    processed: int
    total_states: int
    peak_states: int
    max_states_per_insn: int


class Verifier:
    """One ``bpf_check`` of one program (``struct bpf_verifier_env``)."""

    def __init__(self, prog: BpfProgram) -> None:
        self.prog = prog
        self.insns: list[Insn] = prog.insns
        # The program's maps, then each outer map's inner template (``map->inner_map_meta``):
        # a register holding an inner map points at its template, as in the kernel.
        self.maps = list(prog.maps)
        self.inner_meta: dict[int, int] = {}
        for i, m in enumerate(prog.maps):
            if m.inner_meta is not None:
                self.inner_meta[i] = len(self.maps)
                self.maps.append(m.inner_meta)
        self.attach = prog.expected_attach_type
        self.id_gen = 0
        self.processed = 0
        self.jmps = 0
        self.prev_processed = 0
        self.prev_jmps = 0
        self.explored: dict[int, list[State]] = {}
        self.pending: list[State] = []
        self.total_states = 0
        self.peak_states = 0
        self.cur_states = 0
        self.max_per_insn = 0
        self.live: list[int] = []
        self.cfg = vcfg.Cfg([0])
        self.depth: dict[int, int] = {}  # subprogram start -> deepest stack byte used
        self.calls: set[tuple[int, int]] = set()  # (caller start, callee start)

    # -- helpers the instruction modules call ------------------------------------------------
    def new_id(self) -> int:
        self.id_gen += 1
        return self.id_gen

    def read(self, st: State, regno: int) -> Reg:
        """``check_reg_arg(SRC_OP)``."""
        if regno >= 11:
            raise VerifierError(Errno.EINVAL, f"R{regno} is invalid")
        reg = st.cur.regs[regno]
        if reg.t == NOT_INIT:
            raise VerifierError(Errno.EACCES, f"R{regno} !read_ok")
        return reg

    def write(self, st: State, regno: int, reg: Reg) -> None:
        """``check_reg_arg(DST_OP)``."""
        if regno == 10:
            raise VerifierError(Errno.EACCES, "frame pointer is read only")
        if regno >= 11:
            raise VerifierError(Errno.EINVAL, f"R{regno} is invalid")
        st.cur.regs[regno] = reg

    def branch(self, st: State, target: int) -> State:
        """``push_stack``: the other way of a branch, explored later."""
        other = st.copy()
        other.insn = target
        if st.parent is not None:
            st.parent.branches += 1
        self.pending.append(other)
        if len(self.pending) > BPF_COMPLEXITY_LIMIT_JMP_SEQ:
            raise VerifierError(
                Errno.E2BIG, f"The sequence of {len(self.pending)} jumps is too complex."
            )
        return other

    def _start_of(self, st: State, i: int) -> int:
        """The first instruction of frame ``i``'s subprogram."""
        if i == 0:
            return 0
        site = st.frames[i].callsite
        return site + self.insns[site].imm + 1

    def note_call(self, st: State, target: int) -> None:
        self.calls.add((self._start_of(st, len(st.frames) - 2), target))

    def note_return(self, st: State, callee: Func) -> None:
        site = callee.callsite
        start = site + self.insns[site].imm + 1
        self.depth[start] = max(self.depth.get(start, 0), callee.depth)

    def _note_depths(self, st: State) -> None:
        for i, f in enumerate(st.frames):
            start = self._start_of(st, i)
            self.depth[start] = max(self.depth.get(start, 0), f.depth)

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> Stats:
        insns = self.insns
        if not insns or len(insns) > BPF_MAXINSNS_PRIV:
            raise VerifierError(Errno.E2BIG, f"program of {len(insns)} instructions")
        vcfg.check_fields(insns, self.prog.maps)
        self.cfg = vcfg.check_cfg(insns)
        self.live = live_in(insns)
        regs = [INIT] * 11
        regs[1] = Reg(CTX)
        regs[10] = Reg(STACK, frame=0)
        st: State | None = State([Func(regs, {}, -1, 0)], None, 0)
        pc = 0
        prune = self.cfg.prune
        while st is not None:
            self.processed += 1
            if self.processed > BPF_COMPLEXITY_LIMIT_INSNS:
                raise VerifierError(
                    Errno.E2BIG, f"BPF program is too large. Processed {self.processed} insn"
                )
            st.insn = pc
            if pc in prune and self._visited(st, pc):
                st, pc = self._end_path(st)
                continue
            try:
                nxt = self._step(st, pc)
            except VerifierError as err:
                err.insn = pc
                raise
            if nxt is None:
                st, pc = self._end_path(st)
            else:
                pc = nxt
        self._check_stack_depth()
        return Stats(self.processed, self.total_states, self.peak_states, self.max_per_insn)

    def _end_path(self, st: State) -> tuple[State | None, int]:
        """``update_branch_counts`` then ``pop_stack``."""
        self._note_depths(st)
        s: State | None = st
        while s is not None:
            s.branches -= 1
            if s.branches:
                break
            s = s.parent
        if not self.pending:
            return None, 0
        nxt = self.pending.pop()
        return nxt, nxt.insn

    def _live_masks(self, st: State, pc: int) -> list[int]:
        out = []
        frames = st.frames
        for i in range(len(frames)):
            if i == len(frames) - 1:
                out.append(self.live[pc] | (1 << 10))
            else:
                ret = frames[i + 1].callsite + 1
                live = self.live[ret] if ret < len(self.live) else 0
                out.append((live & CALLEE_SAVED) | (1 << 10))
        return out

    def _visited(self, cur: State, pc: int) -> bool:
        """``is_state_visited``: True when a kept state covers ``cur`` (prune the path)."""
        add_new = self.jmps - self.prev_jmps >= 2 and self.processed - self.prev_processed >= 8
        lst = self.explored.get(pc)
        if lst is None:
            lst = self.explored[pc] = []
        if lst:
            live = self._live_masks(cur, pc)
            if len(lst) > self.max_per_insn:
                self.max_per_insn = len(lst)
            evict = False
            for sl in lst:
                if sl.branches:
                    if states_equal(sl, cur, live, exact=True):
                        raise VerifierError(Errno.EINVAL, f"infinite loop detected at insn {pc}")
                    if (
                        self.jmps - self.prev_jmps < 20
                        and self.processed - self.prev_processed < 100
                    ):
                        add_new = False
                elif states_equal(sl, cur, live, exact=False):
                    sl.hit += 1
                    return True
                if add_new:
                    sl.miss += 1
                if sl.miss > sl.hit * 3 + 3:
                    evict = True
            if evict:
                kept = [sl for sl in lst if sl.miss <= sl.hit * 3 + 3]
                self.cur_states -= len(lst) - len(kept)
                lst[:] = kept
        if not add_new:
            return False
        new = cur.copy()
        new.insn = pc
        new.branches = 1
        cur.parent = new
        lst.append(new)
        self.total_states += 1
        self.cur_states += 1
        self.peak_states = max(self.peak_states, self.cur_states)
        self.prev_jmps = self.jmps
        self.prev_processed = self.processed
        return False

    def _step(self, st: State, pc: int) -> int | None:
        """One instruction; the next index, or None when the path ends (exit of main)."""
        ins = self.insns[pc]
        cls = ins.cls
        if cls in (isa.BPF_ALU, isa.BPF_ALU64):
            valu.check_alu(self, st, ins)
            return pc + 1
        if cls == isa.BPF_LDX:
            self.read(st, ins.src)
            val = vmem.check_access(
                self, st, ins.src, ins.off, ins.size, False, signed=ins.mode == isa.BPF_MEMSX
            )
            assert val is not None
            self.write(st, ins.dst, val)
            return pc + 1
        if cls == isa.BPF_STX:
            self.read(st, ins.dst)
            value = self.read(st, ins.src)
            if ins.mode == isa.BPF_ATOMIC:
                self._atomic(st, ins, value)
            else:
                vmem.check_access(
                    self, st, ins.dst, ins.off, ins.size, True, value, value_regno=ins.src
                )
            return pc + 1
        if cls == isa.BPF_ST:
            self.read(st, ins.dst)
            vmem.check_access(self, st, ins.dst, ins.off, ins.size, True, st_imm=ins.imm)
            return pc + 1
        if cls == isa.BPF_LD:
            if ins.is_ld_imm64():
                self.write(st, ins.dst, self._ld_imm64(ins, self.insns[pc + 1]))
                return pc + 2
            raise VerifierError(
                Errno.EINVAL, "BPF_LD_[ABS|IND] instructions not allowed for this program type"
            )
        self.jmps += 1
        op = ins.op
        if op == isa.BPF_CALL:
            if ins.src == isa.BPF_PSEUDO_CALL:
                return vcalls.func_call(self, st, ins, pc)
            vcalls.helper_call(self, st, ins)
            return pc + 1
        if op == isa.BPF_EXIT:
            if len(st.frames) > 1:  # a void subprogram may leave r0 unset for its caller
                return vcalls.func_exit(self, st)
            self.read(st, 0)  # check_return_code
            return None
        if op == isa.BPF_JA:
            return vcfg.jump_target(pc, ins)
        fall, taken = valu.cond_jump(self, st, ins, pc)
        if fall is None and taken is None:
            return None
        if fall is None:
            return vcfg.jump_target(pc, ins)
        if taken is not None and taken is st:
            return vcfg.jump_target(pc, ins)
        return pc + 1

    def _ld_imm64(self, ins: Insn, hi: Insn) -> Reg:
        if ins.src == 0:
            return scalar(sc.const(ins.imm64))
        if ins.src == vcfg.BPF_PSEUDO_MAP_IDX:
            return Reg(MAP_PTR, map=ins.imm)
        off = hi.imm & 0xFFFFFFFF
        return Reg(MAP_VALUE, map=ins.imm, off=off)

    def _atomic(self, st: State, ins: Insn, value: Reg) -> None:
        """``check_atomic``: a read and a write of the same memory, on the stack or a map
        value; the fetching forms load the old value."""
        if ins.size not in (4, 8):
            raise VerifierError(Errno.EINVAL, "invalid atomic operand size")
        if ins.imm == isa.BPF_CMPXCHG:
            self.read(st, 0)
        vmem.check_access(self, st, ins.dst, ins.off, ins.size, False, atomic=True)
        vmem.check_access(self, st, ins.dst, ins.off, ins.size, True, UNKNOWN, atomic=True)
        if ins.imm & isa.BPF_FETCH:
            out = vmem.loaded(ins.size)
            self.write(st, 0 if ins.imm == isa.BPF_CMPXCHG else ins.src, out)

    def _check_stack_depth(self) -> None:
        """``check_max_stack_depth``: the deepest chain of calls, each frame's stack rounded
        up to 16 bytes (``round_up_stack_depth`` for a JIT-compiled program), fits in 512."""
        depth = {s: 0 for s in self.cfg.starts}
        for start, used in self.depth.items():
            depth[start] = max(depth.get(start, 0), used)
        callees: dict[int, list[int]] = {}
        for a, b in self.calls:
            callees.setdefault(a, []).append(b)

        def walk(start: int, chain: int, frames: int) -> None:
            total = chain + ((depth.get(start, 0) + 15) // 16) * 16
            if total > MAX_BPF_STACK and frames > 1:
                raise VerifierError(
                    Errno.EACCES, f"combined stack size of {frames} calls is {total}. Too large"
                )
            for c in callees.get(start, []):
                if frames < 9:
                    walk(c, total, frames + 1)

        walk(0, 0, 1)


def check(prog: BpfProgram) -> Stats:
    """Verify ``prog`` as ``BPF_PROG_LOAD`` would; raise ``KernelError`` with the kernel's
    errno and message when it refuses."""
    for m in prog.maps:  # bpf_object__load: libbpf freezes .rodata before loading programs
        if m.freeze_on_load:
            m.frozen = True
    v = Verifier(prog)
    try:
        return v.run()
    except VerifierError as err:
        where = f" (insn {err.insn})" if err.insn >= 0 else ""
        raise KernelError(err.errno, "; ".join(err.lines) + where) from None
