"""XDP programs as vectorised functions from a batch of flow-table rows to an action array.

A program sees one row per flow-table entry: every frame of an entry carries the same headers,
so a header-only verdict is computed once per entry and reused for every frame (docs/design.md,
"Principles": batches, not packets). User programs have the same signature:
``def prog(ctx: XdpContext) -> numpy array of actions`` in ``path/to/file.py:prog``.
"""

from __future__ import annotations

import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.model.catalog import is_user_program, program_info
from xdptui.model.errors import Errno, KernelError
from xdptui.model.limits import PROGRAM_TIME_LIMIT_S
from xdptui.sim import costs
from xdptui.sim.columns import filled
from xdptui.sim.core.bpf_obj import ObjProgram, load_program, split_spec
from xdptui.sim.kconst import (
    BPF_F_BROADCAST,
    BPF_F_EXCLUDE_INGRESS,
    XDP_ABORTED,
    XDP_ACTION_MASK,
    XDP_DROP,
    XDP_PASS,
    XDP_REDIRECT,
    XDP_TX,
)

IntArray = npt.NDArray[np.int64]


@dataclass(eq=False)
class XdpContext:
    """The rows a program runs on, plus what its helper calls recorded (``bpf_redirect_info``)."""

    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    ethertype: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    size: IntArray
    ingress_ifindex: int
    params: Mapping[str, str] = field(default_factory=dict)
    lookup_map: Callable[[str, int], int | None] | None = None
    egress_ifindex: int = 0  # devmap egress programs: the device the bulk goes out of
    rx_queues: Callable[[], IntArray] | None = None  # rx_queue_index per row, made when read
    # Recorded by the helpers, per row: target ifindex (-1 none), map name and key; one value
    # for every row is stored once (read-only) until a helper records per row.
    redirect_ifindex: IntArray = field(init=False)
    redirect_key: IntArray = field(init=False)
    redirect_map_name: str | None = field(init=False, default=None)
    redirect_broadcast_flags: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.redirect_ifindex = filled(len(self.size), -1, np.int64)
        self.redirect_key = filled(len(self.size), -1, np.int64)

    def __len__(self) -> int:
        return len(self.size)

    @cached_property
    def rx_queue_index(self) -> IntArray | None:
        """The receive queue of each row's frame (None: queue 0 for every row)."""
        return self.rx_queues() if self.rx_queues is not None else None

    def full(self, action: int) -> IntArray:
        return np.full(len(self), action, dtype=np.int64)

    def redirect(self, ifindex: int | IntArray, flags: int = 0) -> IntArray:
        """``bpf_redirect()`` in XDP (``net/core/filter.c``): flags must be 0, else the helper
        returns XDP_ABORTED; the target is not checked until ``xdp_do_redirect``."""
        if flags:
            return self.full(XDP_ABORTED)
        target = np.asarray(ifindex, dtype=np.int64)
        self.redirect_ifindex = (
            filled(len(self), target, np.int64)
            if target.ndim == 0
            else np.broadcast_to(target, (len(self),)).copy()
        )
        return self.full(XDP_REDIRECT)

    def redirect_map(self, map_name: str, key: int | IntArray, flags: int = 0) -> IntArray:
        """``bpf_redirect_map()`` (``__bpf_xdp_redirect_map``): a hit returns XDP_REDIRECT; a
        miss returns the low action bits of flags (default XDP_ABORTED) with no tracepoint;
        flags outside BROADCAST|EXCLUDE_INGRESS|action bits -> XDP_ABORTED."""
        allowed = BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS | XDP_ACTION_MASK
        if flags & ~allowed:
            return self.full(XDP_ABORTED)
        self.redirect_map_name = map_name
        if flags & BPF_F_BROADCAST:
            self.redirect_broadcast_flags = flags
            return self.full(XDP_REDIRECT)
        keys = np.broadcast_to(np.asarray(key, dtype=np.int64), (len(self),))
        lookup = self.lookup_map
        out = self.full(flags & XDP_ACTION_MASK)
        distinct = keys[:1] if keys.strides[0] == 0 and len(keys) else np.unique(keys)
        for k in distinct:  # per distinct key, never per frame
            target = lookup(map_name, int(k)) if lookup else None
            if target is None:
                continue
            if len(distinct) == 1:  # every row hits: one value, stored once
                out[:] = XDP_REDIRECT
                self.redirect_ifindex = filled(len(self), target, np.int64)
                self.redirect_key = filled(len(self), k, np.int64)
                continue
            hit = keys == k
            out[hit] = XDP_REDIRECT
            self.redirect_ifindex = _writable(self.redirect_ifindex)
            self.redirect_key = _writable(self.redirect_key)
            self.redirect_ifindex[hit] = target
            self.redirect_key[hit] = k
        return out


def _writable(col: IntArray) -> IntArray:
    """``col``, or a copy of it that helpers may record into."""
    return col if col.flags.writeable else np.array(col)


ProgramFunc = Callable[[XdpContext], IntArray]


class ProgramFailed(KernelError):
    """A Python program raised, returned the wrong thing, exited or overran its time limit."""

    def __init__(self, name: str, prog_id: int, why: str) -> None:
        super().__init__(Errno.EINVAL, f"program {name} {why}")
        self.prog_name = name
        self.prog_id = prog_id
        self.why = why


class _Overran(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Stop the code inside after ``seconds`` of wall time (``_Overran``): an interval timer on
    the main thread; elsewhere signals cannot reach it and the code runs unbounded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def overran(_signum: int, _frame: object) -> None:
        raise _Overran

    old = signal.signal(signal.SIGALRM, overran)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _contained(what: str, call: Callable[[], Any]) -> tuple[Any, str | None]:
    """Run user code: its result, or why it failed (exceptions, ``sys.exit``, Ctrl-C raised by
    the code, a hang past the time limit) -- nothing it does ends the process."""
    try:
        with time_limit(PROGRAM_TIME_LIMIT_S):
            return call(), None
    except _Overran:
        return None, f"ran longer than {PROGRAM_TIME_LIMIT_S:g} s ({what} stopped)"
    except SystemExit as exc:
        return None, f"called sys.exit({exc.code!r})"
    except KeyboardInterrupt:
        return None, "raised KeyboardInterrupt"
    except Exception as exc:
        return None, f"raised {exc!r}"


@dataclass(frozen=True)
class Program:
    """A loaded program: name as the user typed it, its function, its cost and parameters."""

    name: str
    func: ProgramFunc
    cost_ns: float
    params: tuple[tuple[str, str], ...] = ()
    prog_id: int = 0
    obj: ObjProgram | None = None  # a real XDP object, run by ``xdptui.sim.core.bpf_run``

    @property
    def param_map(self) -> dict[str, str]:
        return dict(self.params)

    def run(self, ctx: XdpContext) -> IntArray:
        """Run on every row; a user program's failure or bad result is ``ProgramFailed``
        (refused at attach like the verifier would; detached if it fails later)."""
        result, why = _contained("the run", lambda: self.func(ctx))
        if why is not None:
            raise ProgramFailed(self.name, self.prog_id, why)
        actions = np.asarray(result)
        if not np.issubdtype(actions.dtype, np.integer) or actions.shape not in ((), (len(ctx),)):
            raise ProgramFailed(
                self.name,
                self.prog_id,
                "must return one integer action per row, "
                f"got {type(result).__name__} of shape {actions.shape} dtype {actions.dtype}",
            )
        if actions.shape == ():
            actions = np.full(len(ctx), int(actions), dtype=np.int64)
        return actions.astype(np.int64, copy=False)


def _is_l4(ctx: XdpContext) -> npt.NDArray[np.bool_]:
    l4: npt.NDArray[np.bool_] = (ctx.ethertype == 0x0800) & ((ctx.proto == 6) | (ctx.proto == 17))
    return l4


def _constant(action: int) -> ProgramFunc:
    def prog(ctx: XdpContext) -> IntArray:
        return ctx.full(action)

    return prog


def _redirect(ctx: XdpContext) -> IntArray:
    return ctx.redirect(int(ctx.params["ifindex"]), int(ctx.params.get("flags", "0")))


def _redirect_map(ctx: XdpContext) -> IntArray:
    return ctx.redirect_map(
        ctx.params["map"], int(ctx.params.get("key", "0")), int(ctx.params.get("flags", "0"))
    )


def _redirect_map_multi(ctx: XdpContext) -> IntArray:
    flags = BPF_F_BROADCAST
    if ctx.params.get("exclude_ingress", "1") in ("1", "true"):
        flags |= BPF_F_EXCLUDE_INGRESS
    return ctx.redirect_map(ctx.params["map"], 0, flags)


def _redirect_cpu(ctx: XdpContext) -> IntArray:
    """``xdp_redirect_cpu``'s programs: every frame to one cpumap key (``cpu``), or spread
    over ``cpus`` by a multiplicative hash of the 5-tuple (as its ``lb_hash_ip_pairs`` spreads
    by a hash of the addresses)."""
    cpus = [int(x) for x in ctx.params.get("cpus", "").split(",") if x.strip()]
    if not cpus:
        return ctx.redirect_map(ctx.params["map"], int(ctx.params.get("cpu", "0")), 0)
    mix = (
        ctx.src_ip.astype(np.uint64)
        ^ ctx.dst_ip.astype(np.uint64)
        ^ ((ctx.src_port.astype(np.uint64) << np.uint64(16)) | ctx.dst_port.astype(np.uint64))
        ^ ctx.proto.astype(np.uint64)
    )
    h = ((mix * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)) >> np.uint64(16)
    keys = np.array(cpus, np.int64)[(h % np.uint64(len(cpus))).astype(np.int64)]
    return ctx.redirect_map(ctx.params["map"], keys, 0)


def _xsk_redirect(ctx: XdpContext) -> IntArray:
    """xdp-tools' and xdpsock's AF_XDP program: ``bpf_redirect_map(&xsks_map,
    ctx->rx_queue_index, XDP_PASS)`` -- the socket of the frame's queue, else the stack."""
    queue = ctx.rx_queue_index
    if queue is None:
        queue = ctx.full(0)
    return ctx.redirect_map(ctx.params["map"], queue, XDP_PASS)


def _l4lb(ctx: XdpContext) -> IntArray:
    """Hairpin L4 LB: TCP/UDP is rewritten toward a backend and sent back out (XDP_TX)."""
    return np.where(_is_l4(ctx), XDP_TX, XDP_PASS).astype(np.int64)


def _drop_port(ctx: XdpContext) -> IntArray:
    port = int(ctx.params.get("port", "9"))
    hit = _is_l4(ctx) & (ctx.dst_port == port)
    return np.where(hit, XDP_DROP, XDP_PASS).astype(np.int64)


BUILTINS: dict[str, ProgramFunc] = {
    "xdp_pass": _constant(XDP_PASS),
    "xdp_drop": _constant(XDP_DROP),
    "xdp_tx": _constant(XDP_TX),
    "xdp_aborted": _constant(XDP_ABORTED),
    "xdp1": _constant(XDP_DROP),  # samples/bpf/xdp1_kern.c: count per IP proto, XDP_DROP
    "xdp2": _constant(XDP_TX),  # samples/bpf/xdp2_kern.c: swap MACs, XDP_TX
    "redirect": _redirect,
    "redirect_map": _redirect_map,
    "redirect_map_multi": _redirect_map_multi,
    "redirect_cpu": _redirect_cpu,
    "xsk_redirect": _xsk_redirect,
    "l4lb": _l4lb,
    "drop_port": _drop_port,
}


def load_user_function(spec: str, base_dir: Path | None = None) -> ProgramFunc:
    """Import ``path/to/file.py:function``; errors read like a failed ``ip link ... obj``."""
    path_text, _, func_name = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path  # relative to the topology's directory, never the cwd
    if not path.is_file():
        raise KernelError(Errno.ENOENT, f"No such file: {path_text}")
    module_spec = importlib.util.spec_from_file_location(f"xdptui_user_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise KernelError(Errno.EINVAL, f"cannot load {path_text}")
    module = importlib.util.module_from_spec(module_spec)
    loader = module_spec.loader
    _, why = _contained("its import", lambda: loader.exec_module(module))
    if why is not None:
        raise KernelError(Errno.EINVAL, f"{path_text}: importing it {why}")
    func = getattr(module, func_name, None)
    if not callable(func):
        raise KernelError(Errno.ENOENT, f"{path_text} has no function {func_name}()")
    return func  # type: ignore[no-any-return]


def make_program(
    name: str, params: Mapping[str, str], prog_id: int, base_dir: Path | None = None
) -> Program:
    """Build a Program from a built-in name or a user ``file.py:function`` spec."""
    if name in BUILTINS:
        info = program_info(name)
        assert info is not None
        merged = {p.name: p.default for p in info.params if p.default is not None}
        merged.update(params)
        return Program(
            name,
            BUILTINS[name],
            costs.PROGRAM_COST.get(name, 0.0),
            tuple(sorted(merged.items())),
            prog_id,
        )
    if is_user_program(name):
        func = load_user_function(name, base_dir)
        return Program(name, func, costs.USER_PROGRAM_COST, tuple(sorted(params.items())), prog_id)
    raise KernelError(Errno.ENOENT, f"unknown program '{name}'")


def _object_func(ctx: XdpContext) -> IntArray:
    """An object's program runs on frame bytes (``xdptui.sim.core.bpf_run``), never here."""
    raise KernelError(Errno.EINVAL, "a BPF object does not run on header rows")


def make_object_program(
    spec: str,
    prog_id: int,
    base_dir: Path | None,
    world: Any,
    attach: str,
) -> tuple[Program, list[tuple[str, str, int, int]]]:
    """Load ``PATH.o`` / ``PATH.o:SECTION`` (relative to the topology's directory) for
    ``attach``; returns the program and the host devmaps to create for it."""
    path_text, section = split_spec(spec)
    path = Path(path_text)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    obj, create = load_program(
        path, section, attach, world, {**world.maps, **world.cpumaps, **world.xskmaps}
    )
    return Program(spec, _object_func, costs.OBJECT_PROGRAM_COST, (), prog_id, obj), create
