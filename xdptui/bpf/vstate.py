"""The verifier's state: registers, stack slots and call frames (``struct bpf_reg_state``,
``bpf_stack_state``, ``bpf_func_state``, ``bpf_verifier_state``), and state equivalence for
pruning (``states_equal``, ``regsafe``, ``stacksafe``).

Registers are immutable values; a state's frames hold lists and dicts of them, copied when a
branch is pushed or a state is kept for pruning. Stack bytes are ``i`` (never written,
``STACK_INVALID``), ``m`` (``STACK_MISC``), ``z`` (``STACK_ZERO``) or ``s`` (part of an
8-byte register spill, ``STACK_SPILL``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from xdptui.bpf import scalar as sc
from xdptui.bpf import tnum as tn
from xdptui.model.errors import Errno

if TYPE_CHECKING:
    from xdptui.bpf.maps import BpfMap

# enum bpf_reg_type (the kinds an XDP program meets)
NOT_INIT, SCALAR, CTX, MAP_PTR, MAP_VALUE, STACK, PKT, PKT_META, PKT_END = range(9)
TYPE_NAMES = {
    NOT_INIT: "?",
    SCALAR: "scalar",
    CTX: "ctx",
    MAP_PTR: "map_ptr",
    MAP_VALUE: "map_value",
    STACK: "fp",
    PKT: "pkt",
    PKT_META: "pkt_meta",
    PKT_END: "pkt_end",
}
PKT_TYPES = (PKT, PKT_META)
MAX_BPF_REG = 11
SLOT = 8
Range = sc.Range
ZERO64 = sc.const(0)
ZERO32 = sc.const(0, 32)


class VerifierError(Exception):
    """A refusal: the errno ``bpf(BPF_PROG_LOAD)`` returns and the verifier log's last lines."""

    def __init__(self, errno: Errno, *lines: str) -> None:
        super().__init__("; ".join(lines))
        self.errno = errno
        self.lines = lines
        self.insn = -1  # the instruction refused, where one was


class Reg:
    """One register: its type; for a pointer the fixed ``off``, the variable offset ``r``,
    ``id`` (packet pointers sharing a range, map values sharing a null check, linked
    scalars), the packet ``rng`` proven, the ``map`` (object map index) and the stack
    ``frame``; for a scalar its 64- and 32-bit ranges, and for a linked scalar that a
    constant was added to since the link was made (``BPF_ADD_CONST64``/``32``), the width
    of that addition in ``link`` (64 or 32) and the constant in ``delta``."""

    __slots__ = ("delta", "frame", "id", "link", "map", "null", "off", "r", "r32", "rng", "t")

    def __init__(
        self,
        t: int,
        r: Range = ZERO64,
        r32: Range = ZERO32,
        off: int = 0,
        id: int = 0,
        rng: int = 0,
        map: int = -1,
        frame: int = 0,
        null: bool = False,
        link: int = 0,
        delta: int = 0,
    ) -> None:
        self.t = t
        self.r = r
        self.r32 = r32
        self.off = off
        self.id = id
        self.rng = rng
        self.map = map
        self.frame = frame
        self.null = null
        self.link = link
        self.delta = delta

    def with_(self, **kw: object) -> Reg:
        out = Reg(
            self.t,
            self.r,
            self.r32,
            self.off,
            self.id,
            self.rng,
            self.map,
            self.frame,
            self.null,
            self.link,
            self.delta,
        )
        for k, v in kw.items():
            setattr(out, k, v)
        return out

    def unlinked(self) -> Reg:
        """``clear_scalar_id``: no longer linked to any other register."""
        return self.with_(id=0, link=0, delta=0) if self.id else self

    def key(self) -> tuple[object, ...]:
        return (
            self.t,
            self.r,
            self.r32 if self.t == SCALAR else None,
            self.off,
            self.id,
            self.rng,
            self.map,
            self.frame,
            self.null,
            self.link,
            self.delta,
        )

    @property
    def is_ptr(self) -> bool:
        return self.t not in (NOT_INIT, SCALAR)

    @property
    def var_const(self) -> bool:
        """The variable part is a known constant (``tnum_is_const(var_off)``)."""
        return self.r[1] == 0

    def type_str(self) -> str:
        """``reg_type_str``."""
        name = TYPE_NAMES[self.t]
        return f"{name}_or_null" if self.null else name

    def __repr__(self) -> str:
        if self.t == SCALAR:
            return sc.fmt(self.r)
        extra = f"(off={self.off}" + (f",r={self.rng}" if self.t in PKT_TYPES else "") + ")"
        return self.type_str() + extra


INIT = Reg(NOT_INIT)
UNKNOWN = Reg(SCALAR, sc.unknown(64), sc.unknown(32))


def scalar(r: Range, r32: Range | None = None) -> Reg:
    return Reg(SCALAR, r, sc.narrow(r) if r32 is None else r32)


def const(v: int) -> Reg:
    return scalar(sc.const(v))


def zext(r32: Range) -> Reg:
    return Reg(SCALAR, sc.zext(r32), r32)


def reg_width(reg: Reg) -> int:
    """``get_reg_width``: the bits a scalar's unsigned maximum needs (``fls64``)."""
    return int(reg.r[3]).bit_length()


def assign_scalar_id(env: Env, reg: Reg) -> Reg:
    """``assign_scalar_id_before_mov``: a scalar about to be copied (by ``mov``, a spill or a
    fill) gets an id, unless it is a known constant, so that what a branch later proves of
    one copy holds for the others (``sync_linked_regs``). A register a constant was added to
    since its link was made leaves that link first: one delta per register is all the
    kernel keeps."""
    if reg.t != SCALAR:
        return reg
    if reg.link:
        reg = reg.unlinked()
    if reg.id or reg.var_const:
        return reg
    return reg.with_(id=env.new_id())


class Slot:
    """One 8-byte stack slot: the bytes' kinds and, for a spill, the register spilled."""

    __slots__ = ("kinds", "reg")

    def __init__(self, kinds: str, reg: Reg | None = None) -> None:
        self.kinds = kinds
        self.reg = reg


class Func:
    """A call frame: registers, stack slots (index i covers fp-8(i+1) .. fp-8i), the call
    instruction that made it, and the deepest stack byte used."""

    __slots__ = ("callsite", "depth", "regs", "stack")

    def __init__(self, regs: list[Reg], stack: dict[int, Slot], callsite: int, depth: int) -> None:
        self.regs = regs
        self.stack = stack
        self.callsite = callsite
        self.depth = depth

    def copy(self) -> Func:
        return Func(list(self.regs), dict(self.stack), self.callsite, self.depth)


class State:
    """A verifier state: the frames, and for pruning the parent checkpoint, how many paths
    from it are still being explored (``branches``) and how useful it was (hits, misses)."""

    __slots__ = ("branches", "frames", "hit", "insn", "miss", "parent")

    def __init__(self, frames: list[Func], parent: State | None = None, insn: int = 0) -> None:
        self.frames = frames
        self.parent = parent
        self.branches = 1
        self.insn = insn
        self.hit = 0
        self.miss = 0

    def copy(self) -> State:
        out = State([f.copy() for f in self.frames], self.parent, self.insn)
        out.branches = self.branches
        return out

    @property
    def cur(self) -> Func:
        return self.frames[-1]

    def all_regs(self) -> list[tuple[Func, int, Reg]]:
        """Every register and spilled register (``bpf_for_each_reg_in_vstate``): (frame,
        index, reg) with index >= 0 a register number, < 0 a stack slot ``-1 - spi``."""
        out: list[tuple[Func, int, Reg]] = []
        for f in self.frames:
            for i, r in enumerate(f.regs):
                if r.t != NOT_INIT:
                    out.append((f, i, r))
            for spi, slot in f.stack.items():
                if slot.reg is not None:
                    out.append((f, -1 - spi, slot.reg))
        return out

    def replace_reg(self, f: Func, index: int, reg: Reg) -> None:
        if index >= 0:
            f.regs[index] = reg
        else:
            spi = -1 - index
            f.stack[spi] = Slot(f.stack[spi].kinds, reg)


# -- equivalence (pruning) ---------------------------------------------------------------------


class IdMap:
    """``check_ids``: old ids must map one-to-one onto current ids."""

    __slots__ = ("back", "fwd")

    def __init__(self) -> None:
        self.fwd: dict[int, int] = {}
        self.back: dict[int, int] = {}

    def check(self, old: int, cur: int) -> bool:
        if (old == 0) != (cur == 0):
            return False
        if old == 0:
            return True
        seen = self.fwd.get(old)
        if seen is not None:
            return seen == cur
        if cur in self.back:
            return False
        self.fwd[old] = cur
        self.back[cur] = old
        return True

    def check_scalar(self, old: int, cur: int) -> bool:
        """``check_scalar_ids``: only links in the old state matter."""
        if old == 0:
            return True
        return self.check(old, cur if cur else -(len(self.fwd) + 1))


def _within(old: Range, cur: Range) -> bool:
    """``range_within`` and ``tnum_in``."""
    return (
        old[2] <= cur[2]
        and cur[3] <= old[3]
        and old[4] <= cur[4]
        and cur[5] <= old[5]
        and tn.contains((old[0], old[1]), (cur[0], cur[1]))
    )


def regsafe(old: Reg, cur: Reg, ids: IdMap, exact: bool) -> bool:
    """Whether everything proven from ``old`` holds for ``cur`` (``regsafe``)."""
    if old is cur and not old.id:
        return True
    if old.t == NOT_INIT:
        return not exact or cur.t == NOT_INIT
    if exact:
        return old.key() == cur.key() or (
            old.t == cur.t
            and old.r == cur.r
            and old.off == cur.off
            and old.rng == cur.rng
            and old.map == cur.map
            and old.frame == cur.frame
            and old.null == cur.null
            and (old.t != SCALAR or old.r32 == cur.r32)
            and old.link == cur.link
            and old.delta == cur.delta
            and ids.check(old.id, cur.id)
        )
    if old.t != cur.t or old.null != cur.null:
        return False
    t = old.t
    if t == SCALAR:
        # regsafe: a link with a delta must be the same link (width and constant) now
        if old.id and (old.link != cur.link or old.delta != cur.delta):
            return False
        return (
            _within(old.r, cur.r) and _within(old.r32, cur.r32) and ids.check_scalar(old.id, cur.id)
        )
    if old.off != cur.off or not _within(old.r, cur.r):
        return False
    if t == MAP_VALUE:
        return old.map == cur.map and (not old.null or ids.check(old.id, cur.id))
    if t in PKT_TYPES:
        return cur.rng >= old.rng and ids.check(old.id, cur.id)
    if t == STACK:
        return old.frame == cur.frame
    if t == MAP_PTR:
        return old.map == cur.map and (not old.null or ids.check(old.id, cur.id))
    return True


def _slot_as_reg(slot: Slot | None) -> Reg | None:
    """What a full-slot fill of ``slot`` reads, when that is a scalar (or None)."""
    if slot is None:
        return UNKNOWN
    if slot.reg is not None:
        return slot.reg
    if slot.kinds == "zzzzzzzz":
        return const(0)
    return UNKNOWN


def stacksafe(old: Func, cur: Func, ids: IdMap, exact: bool) -> bool:
    """``stacksafe``: every slot the old state relied on holds at least as much now."""
    for spi, o in old.stack.items():
        c = cur.stack.get(spi)
        if exact:
            if c is None:
                if o.kinds != "iiiiiiii":
                    return False
                continue
            if o.kinds != c.kinds:
                return False
            if o.reg is not None and (c.reg is None or not regsafe(o.reg, c.reg, ids, True)):
                return False
            continue
        if o.reg is not None:
            if c is not None and c.reg is not None:
                if not regsafe(o.reg, c.reg, ids, False):
                    return False
                continue
            if o.reg.t != SCALAR:
                return False
            if c is not None and "s" in c.kinds:
                return False
            filled = _slot_as_reg(c)
            if c is not None and c.kinds != "zzzzzzzz" and "z" in c.kinds:
                filled = UNKNOWN
            if filled is None or not regsafe(o.reg, filled, ids, False):
                return False
            continue
        ck = c.kinds if c is not None else "iiiiiiii"
        cptr = c is not None and c.reg is not None and c.reg.t != SCALAR
        czero = c is not None and c.reg is not None and c.reg.t == SCALAR and c.reg.r == ZERO64
        for i, k in enumerate(o.kinds):
            if k == "i":
                continue
            if k == "m":
                if cptr:
                    return False
                continue
            if k == "z" and not (ck[i] == "z" or czero):
                return False
    return True


_LIVE_LISTS: dict[int, tuple[int, ...]] = {}


def _live_list(mask: int) -> tuple[int, ...]:
    out = _LIVE_LISTS.get(mask)
    if out is None:
        out = _LIVE_LISTS[mask] = tuple(i for i in range(MAX_BPF_REG) if (mask >> i) & 1)
    return out


ALL_REGS = (1 << MAX_BPF_REG) - 1


def states_equal(old: State, cur: State, live: list[int], exact: bool) -> bool:
    """``states_equal``: same call chain, and each frame's live registers and stack safe.
    ``live[i]`` is the bitmask of registers live in frame ``i``; ``exact`` compares all
    (``states_maybe_looping`` first, on the current frame's registers)."""
    frames_o, frames_c = old.frames, cur.frames
    if len(frames_o) != len(frames_c):
        return False
    if exact:
        ro, rc = frames_o[-1].regs, frames_c[-1].regs
        for i in range(MAX_BPF_REG):
            a, b = ro[i], rc[i]
            if a is not b and (a.t != b.t or a.r != b.r or a.off != b.off):
                return False
    ids = IdMap()
    for fo, fc, mask in zip(frames_o, frames_c, live, strict=True):
        if fo.callsite != fc.callsite:
            return False
        ro, rc = fo.regs, fc.regs
        for i in _live_list(ALL_REGS if exact else mask):
            if not regsafe(ro[i], rc[i], ids, exact):
                return False
        if (fo.stack or fc.stack) and not stacksafe(fo, fc, ids, exact):
            return False
    return True


class Env(Protocol):
    """The verifier's environment (``struct bpf_verifier_env``) as the instruction checks
    (``valu``, ``vmem``, ``vcalls``) call it; ``xdptui.bpf.verifier.Verifier`` is it."""

    maps: list[BpfMap]  # the program's maps, then the outer maps' inner templates
    inner_meta: dict[int, int]  # outer map index -> index of its inner template in ``maps``
    attach: str

    def new_id(self) -> int: ...

    def read(self, st: State, regno: int) -> Reg: ...

    def write(self, st: State, regno: int, reg: Reg) -> None: ...

    def branch(self, st: State, target: int) -> State: ...

    def note_call(self, st: State, target: int) -> None: ...

    def note_return(self, st: State, callee: Func) -> None: ...
