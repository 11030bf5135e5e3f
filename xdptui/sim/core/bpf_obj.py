"""Real XDP objects in the simulated host: what ``ip link set dev X xdp obj F.o sec S`` (libbpf's
``bpf_object__open`` + ``bpf_object__load``, then ``BPF_PROG_LOAD``) leaves in the kernel.

Each load creates the object's maps afresh (``.data``/``.bss`` from the file), as libbpf does
for maps that are not pinned; their kernel names follow libbpf's ``internal_map_name``. A
devmap the object declares is the host's devmap of that name (created if the topology has
none), as a map pinned by name would be: ``bpftool map update name M ...`` fills it, and the
program's ``bpf_redirect_map`` sees what it holds. The program's tag is the kernel's
``bpf_prog_calc_tag``: SHA-256 over the instructions with the map file descriptors zeroed.

What never changes once a file is parsed (its instructions, compiled once) is shared by every
load and by every copy of the state; a load's maps are its own and are copied with the state.
An outer map (array or hash of maps) holds its inner maps by id, so a copy of the state keeps
each outer slot pointing at the copy of its inner map.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdptui.bpf import isa
from xdptui.bpf.elf import MAX_OBJECT_BYTES, load_object
from xdptui.bpf.maps import HOST_TYPES, BpfMap, MapType, fill_init_slots, kernel_map_name
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.vm import compile_program
from xdptui.model.errors import Errno, KernelError

ATTACH_XDP = "xdp"
ATTACH_DEVMAP = "xdp/devmap"
ATTACH_CPUMAP = "xdp/cpumap"
# What a program finds behind an xskmap lookup: xdptui's stand-in for the socket (the kernel's
# is a struct xdp_sock whose queue_id a program may read: not modelled).
XSK_FD_BASE = 3
# Helpers whose result is not a function of the frame: the program's verdict may change from
# one frame of an entry to the next.
VARYING_HELPERS = {
    5: "bpf_ktime_get_ns",
    7: "bpf_get_prandom_u32",
    8: "bpf_get_smp_processor_id",
    125: "bpf_ktime_get_boot_ns",
    160: "bpf_ktime_get_coarse_ns",
}
# One frame's outcome: return code, bpf_redirect ifindex, bpf_redirect_map's map and key, its
# flags, and the frame it leaves (bytes, size, GSO; None: unchanged).
Outcome = tuple[int, int, int, int, int, tuple[bytes, int, bool] | None]
_CODE: dict[tuple[str, str, int], ObjCode] = {}  # (sha256, section, ncpus) -> parsed code


def prog_tag(insns: list[isa.Insn]) -> str:
    """``bpf_prog_calc_tag``: a digest of the instructions, the imm of a map or map-value
    ld_imm64 (both halves) zeroed since file descriptors are unstable; its first 8 bytes.
    The digest is SHA-256 since Linux 6.18 (program signing; SHA-1 before), as this
    project's kernel oracle shows (``tests/test_bpf_datapath_kernel.py``)."""
    out: list[isa.Insn] = []
    was_map = False
    # libbpf hands the kernel map references as fds (BPF_PSEUDO_MAP_FD / _VALUE): the tag
    # digests those, whatever index form this package keeps them in.
    as_fd = {isa.BPF_PSEUDO_MAP_IDX: isa.BPF_PSEUDO_MAP_FD}
    as_fd[isa.BPF_PSEUDO_MAP_IDX_VALUE] = isa.BPF_PSEUDO_MAP_VALUE
    for ins in insns:
        if not was_map and ins.is_ld_imm64() and ins.src in as_fd:
            was_map = True
            ins = dataclasses.replace(ins, src=as_fd[ins.src], imm=0)
        elif was_map and ins.code == 0 and ins.dst == 0 and ins.src == 0 and ins.off == 0:
            was_map = False
            ins = dataclasses.replace(ins, imm=0)
        else:
            was_map = False
        out.append(ins)
    return hashlib.sha256(isa.encode(out)).hexdigest()[:16]


@dataclass(eq=False)
class ObjCode:
    """A parsed, verified program of one object file: shared, never copied."""

    path: str
    section: str
    name: str  # the ELF function's name
    sha256: str
    template: BpfProgram  # linked and compiled; its maps hold the file's initial contents
    tag: str
    varying: str | None  # a helper that makes the verdict vary frame to frame
    evals: dict[Any, Any] = field(default_factory=dict)  # per-entry results, by what they depend on

    def __deepcopy__(self, memo: dict[int, Any]) -> ObjCode:
        return self

    @property
    def insns(self) -> int:
        return len(self.template.insns)

    @property
    def attach(self) -> str:
        return self.template.expected_attach_type


@dataclass(eq=False)
class ObjProgram:
    """One load of an object's program: its maps (the object's own, and devmaps bound to the
    host's by name), the map ids ``bpftool`` shows, and what the data path learnt running it."""

    code: ObjCode
    maps: list[BpfMap]
    map_ids: tuple[int, ...]  # per object map: its id (a bound devmap: the host map's id)
    bound: dict[int, str]  # object map index -> host devmap name
    prog: BpfProgram = field(init=False)
    # Per device: (input entry, outcome) -> the entry pinned to that outcome (stateful programs).
    pins: dict[str, dict[tuple[int, Outcome], int]] = field(default_factory=dict)
    approximated: int = 0  # frames fast mode gave a sampled outcome to (stateful programs)
    frames_run: int = 0  # frames run one by one (exact mode, stateful programs)
    depends: str | None = None  # why its verdict can vary frame to frame, once seen
    fault: str | None = None  # a run-time refusal its frames met (those are XDP_ABORTED)
    # The host's devices as bpf_check_mtu finds them: ifindex -> (mtu, L2 header length).
    devices: dict[int, tuple[int, int]] = field(default_factory=dict)
    user_gen: int = 0  # how many times bpftool changed its maps (probes depend on it)

    def __post_init__(self) -> None:
        self.prog = dataclasses.replace(self.code.template, maps=self.maps)

    def __deepcopy__(self, memo: dict[int, Any]) -> ObjProgram:
        other = ObjProgram(
            self.code,
            copy.deepcopy(self.maps, memo),
            self.map_ids,
            dict(self.bound),
            {k: dict(v) for k, v in self.pins.items()},
            self.approximated,
            self.frames_run,
            self.depends,
            self.fault,
            dict(self.devices),
            self.user_gen,
        )
        memo[id(self)] = other
        return other

    @property
    def name(self) -> str:
        return self.code.name

    def map_name(self, index: int) -> str:
        """The kernel's name of the object's ``index``-th map."""
        stem = Path(self.code.path).name.removesuffix(".o")
        return kernel_map_name(stem, self.maps[index].name)


def split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH.o`` or ``PATH.o:SECTION`` -> (path, section or None)."""
    if spec.endswith(".o"):
        return spec, None
    path, _, section = spec.rpartition(":")
    return path, section or None


def _code(path: Path, section: str | None, ncpus: int) -> ObjCode:
    try:
        size = path.stat().st_size
        data = path.read_bytes() if size <= MAX_OBJECT_BYTES else b""
    except OSError as exc:
        raise KernelError(
            Errno.ENOENT, f"failed to open object file {path}: {exc.strerror}"
        ) from None
    if size > MAX_OBJECT_BYTES:
        raise KernelError(Errno.E2BIG, f"{path}: {size} bytes is too large for a BPF object")
    sha = hashlib.sha256(data).hexdigest()
    key = (sha, section or "", ncpus)
    hit = _CODE.get(key)
    if hit is not None:
        return hit
    prog = load_object(path, ncpus).program(section)
    compile_program(prog)  # the verifier's checks, once
    varying = next(
        (
            VARYING_HELPERS[i.imm]
            for i in prog.insns
            if isa.is_call(i) and i.src == 0 and i.imm in VARYING_HELPERS
        ),
        None,
    )
    code = ObjCode(str(path), prog.section, prog.name, sha, prog, prog_tag(prog.insns), varying)
    _CODE[key] = code
    return code


def load_program(
    path: Path, section: str | None, attach: str, world: Any, host_maps: dict[str, Any]
) -> tuple[ObjProgram, list[tuple[str, str, int, int]]]:
    """Open, verify and load ``path``'s program for ``attach`` (a device's XDP hook, or a
    devmap entry's egress). Returns the load and the host devmaps it needs created (name,
    type, max_entries, map id) -- the caller creates them only once every check passed."""
    code = _code(path, section, world.nr_cpus)
    if attach == ATTACH_XDP and code.attach != ATTACH_XDP:
        raise KernelError(  # dev_xdp_attach
            Errno.EINVAL,
            f"BPF_XDP_{code.attach.partition('/')[2].upper()} programs can not "
            "be attached to a device",
        )
    if attach == ATTACH_DEVMAP and code.attach != ATTACH_DEVMAP:
        raise KernelError(  # __dev_map_alloc_node
            Errno.EINVAL,
            f"{code.name} is not a BPF_XDP_DEVMAP program (its section is {code.section}; "
            'egress programs are SEC("xdp/devmap"))',
        )
    maps = copy.deepcopy(code.template.maps)
    bound: dict[int, str] = {}
    create: list[tuple[str, str, int, int]] = []
    ids = [0] * len(maps)
    next_id = world.next_map_id
    # libbpf creates the declared maps first, then the global data ones (.rodata, .data, .bss)
    for i in sorted(range(len(maps)), key=lambda i: maps[i].name.startswith(".")):
        m = maps[i]
        if m.map_type not in HOST_TYPES:
            ids[i] = next_id
            next_id += 1
            continue
        kinds = {
            int(MapType.DEVMAP): "devmap",
            int(MapType.CPUMAP): "cpumap",
            int(MapType.XSKMAP): "xskmap",
        }
        kind = kinds.get(int(m.map_type), "devmap_hash")
        host = host_maps.get(m.name)
        if host is None:
            create.append((m.name, kind, m.max_entries, next_id))
            ids[i] = next_id
            next_id += 1
        elif host.type != kind or host.max_entries != m.max_entries:
            raise KernelError(  # libbpf: bpf_map__reuse_fd / map_is_reuse_compat
                Errno.EINVAL,
                f"couldn't reuse map '{m.name}': the host's is a {host.type} of "
                f"{host.max_entries} entries, the object declares a {kind} of "
                f"{m.max_entries} (parameter mismatch)",
            )
        else:
            ids[i] = host.map_id
        bound[i] = m.name
    # An outer map holds its inner maps by id: this load's ids, libbpf's initial slots again.
    for m, map_id in zip(maps, ids, strict=True):
        m.map_id = map_id
        if m.is_of_maps:
            m.clear()
    fill_init_slots(maps)
    return ObjProgram(code, maps, tuple(ids), bound), create


def sync_devmaps(obj: ObjProgram, world: Any) -> None:
    """Copy the host devmaps an object is bound to into its map memory, as the program's
    lookups see them (``struct bpf_devmap_val``: ifindex, then the egress program's id);
    and the host's devices, as ``bpf_check_mtu`` finds them (an L3 tun has no L2 header)."""
    obj.devices = {
        d.ifindex: (d.mtu, 0 if getattr(d, "mode", "tap") == "tun" else 14)
        for d in world.devices.values()
    }
    for i, name in obj.bound.items():
        m = obj.maps[i]
        m.clear()
        xsks = world.xskmaps.get(name)
        if xsks is not None:  # a socket at the key: a stand-in for its fd (never 0)
            for key, sock in xsks.entries.items():
                xs = world.xsks.get(sock)
                if xs is not None:
                    m.update(key, (XSK_FD_BASE + xs.index).to_bytes(4, "little"))
            continue
        cpus = world.cpumaps.get(name)
        if cpus is not None:  # struct bpf_cpumap_val: qsize, then the program's id
            for key, e in cpus.entries.items():
                prog_id = e.prog.prog_id if e.prog is not None else 0
                value = e.qsize.to_bytes(4, "little") + prog_id.to_bytes(4, "little")
                m.update(key, value[: m.value_size])
            continue
        host = world.maps.get(name)
        if host is None:
            continue
        for key, entry in host.walk():
            dev = world.devices.get(entry.dev)
            ifindex = dev.ifindex if dev is not None else 0
            value = ifindex.to_bytes(4, "little")
            if m.value_size >= 8:
                prog_id = entry.egress.prog_id if entry.egress is not None else 0
                value += prog_id.to_bytes(4, "little") + bytes(m.value_size - 8)
            m.update(key, value[: m.value_size])


def devmap_fingerprint(obj: ObjProgram) -> str:
    """What the bound devmaps hold (the only map contents a command can change)."""
    h = hashlib.sha1(str(obj.user_gen).encode())
    for i in sorted(obj.bound):
        h.update(obj.maps[i].arena.tobytes())
        h.update(b"".join(obj.maps[i].slots))
    return h.hexdigest()
