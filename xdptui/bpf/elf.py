"""``load_object()``: an ELF object as ``clang -O2 -g -target bpf -c`` emits it.

Follows libbpf's ``bpf_object__open()`` and ``bpf_object__relocate()``: program sections by
name (``SEC("xdp")``, ``xdp/...``, ``xdp.frags``, ``xdp/devmap``), ``.maps`` (BTF-defined) and
the legacy ``maps`` section (``struct bpf_map_def``), ``.rodata*`` / ``.data*`` / ``.bss*`` as
single-entry array maps, ``license``, ``R_BPF_64_64`` map and global-data references on
``ld_imm64``, and bpf-to-bpf calls into ``.text`` (``R_BPF_64_32`` or pc-relative).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import Section, SymbolTableSection

from xdptui.bpf import isa
from xdptui.bpf.btf import Btf, core_relo_sections
from xdptui.bpf.isa import Insn
from xdptui.bpf.maps import (
    BPF_F_RDONLY_PROG,
    MAP_MEMORY_BUDGET,
    OF_MAPS_TYPES,
    BpfMap,
    MapDef,
    MapType,
    check_def,
    fill_init_slots,
    inner_template,
    mem_usage,
)
from xdptui.bpf.memory import map_handle, map_region
from xdptui.bpf.objfile import BpfObject, BpfProgram
from xdptui.model.errors import Errno, KernelError

EM_BPF = 247
CALL = isa.BPF_JMP | isa.BPF_CALL
LD_IMM64 = isa.BPF_LD | isa.BPF_IMM | isa.BPF_DW
MAX_OBJECT_BYTES = 16 << 20  # a larger "object" is refused before it is parsed
R_BPF_64_64 = 1
R_BPF_64_ABS64 = 2
SHF_EXECINSTR = 0x4
DATA_PREFIXES = (".rodata", ".data", ".bss")


@dataclass
class _Sym:
    name: str
    value: int
    size: int
    shndx: int | str
    kind: str  # STT_FUNC, STT_OBJECT, STT_SECTION, STT_NOTYPE
    bind: str


# Section names libbpf's section_defs give another program type: iproute2 loads any other
# section as XDP when asked for it (``ip link set dev X xdp obj F.o sec NAME``), these are
# programs of another kind that an XDP hook cannot run.
OTHER_TYPES = (
    ("socket", "socket filter"),
    ("sk_reuseport", "sk_reuseport"),
    ("kprobe", "kprobe"),
    ("kretprobe", "kprobe"),
    ("uprobe", "uprobe"),
    ("uretprobe", "uprobe"),
    ("ksyscall", "kprobe"),
    ("usdt", "usdt"),
    ("tc", "tc"),
    ("tcx", "tc"),
    ("classifier", "tc"),
    ("action", "tc action"),
    ("netkit", "netkit"),
    ("tracepoint", "tracepoint"),
    ("tp", "tracepoint"),
    ("raw_tracepoint", "raw tracepoint"),
    ("raw_tp", "raw tracepoint"),
    ("tp_btf", "BTF tracepoint"),
    ("fentry", "tracing (fentry)"),
    ("fexit", "tracing (fexit)"),
    ("fmod_ret", "tracing (fmod_ret)"),
    ("freplace", "extension (freplace)"),
    ("lsm", "LSM"),
    ("iter", "iterator"),
    ("syscall", "syscall"),
    ("perf_event", "perf event"),
    ("lwt_in", "LWT"),
    ("lwt_out", "LWT"),
    ("lwt_xmit", "LWT"),
    ("lwt_seg6local", "LWT"),
    ("sockops", "sock_ops"),
    ("sk_skb", "sk_skb"),
    ("sk_msg", "sk_msg"),
    ("lirc_mode2", "lirc"),
    ("flow_dissector", "flow dissector"),
    ("cgroup_skb", "cgroup skb"),
    ("cgroup", "cgroup"),
    ("struct_ops", "struct_ops"),
    ("sk_lookup", "sk_lookup"),
    ("netfilter", "netfilter"),
)


def xdp_attach_type(section: str) -> tuple[str, bool] | None:
    """The program type libbpf and iproute2 decide for a section: (expected attach type,
    frags) for XDP -- ``xdp``, ``xdp/devmap``, ``xdp.frags/cpumap``... and any name libbpf
    gives no other type (``ip link ... obj F.o sec xdp_pass`` loads it as XDP) -- or None
    for a section of another program type (``kprobe/...``, ``tc``, ``fentry/...``)."""
    base, _, rest = section.partition("/")
    if base in ("xdp", "xdp.frags"):
        frags = base == "xdp.frags"
        if rest == "devmap":
            return "xdp/devmap", frags
        if rest == "cpumap":
            return "xdp/cpumap", frags
        return "xdp", frags
    head = base.split(".")[0]
    if any(head == prefix for prefix, _kind in OTHER_TYPES):
        return None
    return "xdp", False


def other_type(section: str) -> str:
    """The kind of program a non-XDP section holds, as its libbpf name says."""
    head = section.partition("/")[0].split(".")[0]
    return next((kind for prefix, kind in OTHER_TYPES if head == prefix), "another type of")


def load_object(path: str | Path, ncpus: int = 1) -> BpfObject:
    """Open, parse and relocate an object; ``ncpus`` sizes per-CPU maps (possible CPUs).

    Every way a file can be wrong -- not ELF, truncated, inconsistent headers, sections,
    symbols, relocations or BTF -- is a ``KernelError`` naming the file and what is wrong
    (EINVAL), never another exception: an object is untrusted input."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_OBJECT_BYTES + 1)
    except OSError as exc:
        raise KernelError(Errno.ENOENT, f"{path}: {exc.strerror}") from None
    if len(raw) > MAX_OBJECT_BYTES:
        raise KernelError(
            Errno.E2BIG,
            f"{path}: larger than {MAX_OBJECT_BYTES >> 20} MiB, too large for a BPF object",
        )
    try:
        return _Loader(ELFFile(io.BytesIO(raw)), path, ncpus).load()
    except KernelError:
        raise
    except ELFError as exc:
        raise KernelError(Errno.EINVAL, f"{path}: not an ELF object: {exc}") from None
    except RecursionError:
        raise KernelError(Errno.EINVAL, f"{path}: malformed object: nesting too deep") from None
    except Exception as exc:  # anything a malformed file makes a parser raise
        raise KernelError(
            Errno.EINVAL, f"{path}: malformed object ({type(exc).__name__}: {exc})"[:400]
        ) from None


class _Loader:
    def __init__(self, elf: ELFFile, path: str, ncpus: int) -> None:
        self.elf = elf
        self.path = path
        self.ncpus = ncpus
        if elf["e_machine"] != "EM_BPF" and elf["e_machine"] != EM_BPF:
            raise KernelError(
                Errno.EINVAL, f"{path}: not a BPF object (e_machine {elf['e_machine']})"
            )
        if not elf.little_endian:
            raise KernelError(Errno.EINVAL, f"{path}: big-endian BPF objects are not supported")
        self.sections: list[Section] = list(elf.iter_sections())
        self.syms: list[_Sym] = []
        for sec in self.sections:
            if isinstance(sec, SymbolTableSection):
                for s in sec.iter_symbols():
                    self.syms.append(
                        _Sym(
                            s.name,
                            s["st_value"],
                            s["st_size"],
                            s["st_shndx"],
                            s["st_info"]["type"],
                            s["st_info"]["bind"],
                        )
                    )
        btf_sec = elf.get_section_by_name(".BTF")
        self.btf: Btf | None = Btf(btf_sec.data()) if btf_sec is not None else None
        ext = elf.get_section_by_name(".BTF.ext")
        if ext is not None:  # CO-RE records checked; the instructions keep clang's values
            core_relo_sections(ext.data(), self.btf)
        self.maps: list[BpfMap] = []
        # (section index, offset in section) -> map index, for map relocations
        self.map_at: dict[tuple[int, int], int] = {}
        self.data_map: dict[int, int] = {}  # section index -> map index of its global data
        self._decoded: dict[int, list[Insn]] = {}
        self.charged = 0  # bytes of map memory the object's maps cost so far
        self.values_off: dict[int, int] = {}  # map index -> offset of its .values member
        self._rel_cache: dict[int, dict[int, tuple[int, _Sym]]] = {}

    def sec_name(self, idx: int) -> str:
        return self.sections[idx].name

    def load(self) -> BpfObject:
        lic = self.elf.get_section_by_name("license")
        license = lic.data().split(b"\0")[0].decode() if lic is not None else ""
        self._maps()
        programs: dict[str, BpfProgram] = {}
        skipped: dict[str, str] = {}
        refused: dict[str, Errno] = {}  # why a program could not be linked, as its errno
        text_idx = next((i for i, s in enumerate(self.sections) if s.name == ".text"), None)
        for idx, sec in enumerate(self.sections):
            if not (sec["sh_flags"] & SHF_EXECINSTR) or sec.name == ".text" or sec["sh_size"] == 0:
                continue
            funcs = [
                s
                for s in self.syms
                if s.shndx == idx and s.kind == "STT_FUNC" and s.bind != "STB_LOCAL"
            ] or [_Sym(sec.name, 0, sec["sh_size"], idx, "STT_FUNC", "STB_GLOBAL")]
            attach = xdp_attach_type(sec.name)
            for fn in funcs:
                if attach is None:
                    skipped[fn.name] = (
                        f"section '{sec.name}' is a {other_type(sec.name)} program, not XDP"
                    )
                    continue
                try:
                    insns = self._link(idx, fn, text_idx)
                except KernelError as exc:
                    skipped[fn.name] = exc.extack
                    refused[fn.name] = exc.errno
                    continue
                programs[fn.name] = BpfProgram(
                    fn.name, sec.name, insns, self.maps, license, attach[0], attach[1]
                )
        obj = BpfObject(
            self.path, programs, {m.name: m for m in self.maps}, license, skipped, refused
        )
        return obj

    # -- maps ------------------------------------------------------------------------------
    def _add_map(self, mdef: MapDef) -> int:
        """Create a map as libbpf's ``bpf_object__create_maps`` does, charging what the
        kernel's ``map_mem_usage`` says it costs to the object's budget (ENOMEM past it, as a
        memory cgroup would refuse it)."""
        check_def(mdef)  # the kernel's own limits come before the memory charge
        cost = mem_usage(mdef, self.ncpus)
        if self.charged + cost > MAP_MEMORY_BUDGET:
            raise KernelError(
                Errno.ENOMEM,
                f"map '{mdef.name}': failed to create: Cannot allocate memory(-12): its "
                f"{cost:,} bytes take the object's maps past xdptui's budget of "
                f"{MAP_MEMORY_BUDGET >> 20} MiB",
            )
        m = BpfMap(mdef, self.ncpus)
        self.charged += cost
        m.region = map_region(len(self.maps))
        self.maps.append(m)
        return len(self.maps) - 1

    def _maps(self) -> None:
        for idx, sec in enumerate(self.sections):
            if sec.name == ".maps":
                self._btf_maps(idx)
            elif sec.name == "maps":
                self._legacy_maps(idx, sec.data())
            elif sec.name.startswith(DATA_PREFIXES) and sec["sh_type"] in (
                "SHT_PROGBITS",
                "SHT_NOBITS",
            ):
                if sec["sh_flags"] & SHF_EXECINSTR:
                    continue
                size = sec["sh_size"]
                if size == 0:
                    continue
                ro = sec.name.startswith(".rodata")
                flags = BPF_F_RDONLY_PROG if ro else 0
                mi = self._add_map(MapDef(sec.name, MapType.ARRAY, 4, size, 1, flags))
                self.maps[mi].freeze_on_load = ro
                if sec["sh_type"] == "SHT_PROGBITS":
                    self.maps[mi].arena[:size] = memoryview(sec.data())
                    self.maps[mi].touch(size)
                self.data_map[idx] = mi
        # A fresh kernel's ids, in creation order; then libbpf fills the outer maps' slots.
        for i, m in enumerate(self.maps):
            m.map_id = i + 1
        fill_init_slots(self.maps)

    def _btf_maps(self, idx: int) -> None:
        if self.btf is None:
            raise KernelError(Errno.EINVAL, f"{self.path}: .maps section without .BTF")
        for s in sorted(
            (s for s in self.syms if s.shndx == idx and s.kind == "STT_OBJECT"),
            key=lambda s: s.value,
        ):
            d = self.btf.map_def(s.name)
            if "map_type" not in d and "type" not in d:
                raise KernelError(Errno.EINVAL, f"map '{s.name}': no type")
            mtype = d.get("type", 0)
            if mtype in (MapType.PERF_EVENT_ARRAY,):
                d.setdefault("key_size", 4)
                d.setdefault("value_size", 4)
                d.setdefault("max_entries", self.ncpus)
            if mtype == MapType.RINGBUF:
                d.setdefault("key_size", 0)
                d.setdefault("value_size", 0)
            mdef = MapDef(
                s.name,
                mtype,
                d.get("key_size", 0),
                d.get("value_size", 0),
                d.get("max_entries", 0),
                d.get("map_flags", 0),
                d.get("pinning", 0),
            )
            mi = self._add_map(mdef)
            self.map_at[(idx, s.value)] = mi
            if mtype in OF_MAPS_TYPES and "inner_type" in d:
                self.maps[mi].inner_meta = inner_template(
                    MapDef(
                        f"{s.name}.inner",
                        d["inner_type"],
                        d.get("inner_key_size", 0),
                        d.get("inner_value_size", 0),
                        d.get("inner_max_entries", 0),
                        d.get("inner_map_flags", 0),
                    )
                )
            self.values_off[mi] = d.get("values_off", 0)
        self._init_slots(idx)

    def _init_slots(self, idx: int) -> None:
        """libbpf's ``bpf_object__collect_map_relos``: each relocation in ``.maps`` is one
        initializer of an outer map's ``.values`` (``[i] = &inner``), 8 bytes per slot."""
        by_offset = sorted((off, mi) for (sec, off), mi in self.map_at.items() if sec == idx)
        for n, (_type, sym, r_off) in enumerate(self._data_relocs(idx)):
            holder = [(off, mi) for off, mi in by_offset if off <= r_off]
            if not holder:
                raise KernelError(Errno.EINVAL, f".maps relo #{n}: no map holds offset {r_off}")
            off, mi = holder[-1]
            outer = self.maps[mi]
            target = self.map_at.get((sym.shndx, sym.value)) if isinstance(sym.shndx, int) else None
            if target is None:
                raise KernelError(
                    Errno.EINVAL, f".maps relo #{n}: '{sym.name}' isn't a BTF-defined map"
                )
            if outer.map_type == MapType.PROG_ARRAY:
                continue  # a tail call's program: tail calls are not modelled
            moff = r_off - off - self.values_off.get(mi, 0)
            if not outer.is_of_maps or moff < 0 or moff % 8:
                raise KernelError(
                    Errno.EINVAL,
                    f".maps relo #{n}: map '{outer.name}' has no .values slot at {r_off - off}",
                )
            outer.init_slots[moff // 8] = target

    def _data_relocs(self, idx: int) -> list[tuple[int, _Sym, int]]:
        """Relocations of a data section: (type, symbol, byte offset)."""
        return [
            (r["r_info_type"], self.syms[r["r_info_sym"]], r["r_offset"])
            for sec in self.sections
            if isinstance(sec, RelocationSection) and sec["sh_info"] == idx
            for r in sec.iter_relocations()
        ]

    def _legacy_maps(self, idx: int, data: bytes) -> None:
        syms = sorted(
            (
                s
                for s in self.syms
                if s.shndx == idx and s.kind in ("STT_OBJECT", "STT_NOTYPE") and s.name
            ),
            key=lambda s: s.value,
        )
        for s in syms:
            raw = data[s.value : s.value + 20].ljust(20, b"\0")
            mtype, ks, vs, me, fl = struct.unpack("<5I", raw)
            self.map_at[(idx, s.value)] = self._add_map(MapDef(s.name, mtype, ks, vs, me, fl))

    # -- programs --------------------------------------------------------------------------
    def _code(self, idx: int) -> list[Insn]:
        if idx not in self._decoded:
            self._decoded[idx] = isa.decode(self.sections[idx].data())
        return self._decoded[idx]

    def _relocs(self, idx: int) -> dict[int, tuple[int, _Sym]]:
        """Relocations of section ``idx``: instruction index -> (type, symbol)."""
        if idx in self._rel_cache:
            return self._rel_cache[idx]
        out: dict[int, tuple[int, _Sym]] = {}
        self._rel_cache[idx] = out
        for sec in self.sections:
            if isinstance(sec, RelocationSection) and sec["sh_info"] == idx:
                for r in sec.iter_relocations():
                    out[r["r_offset"] // isa.INSN_SIZE] = (
                        r["r_info_type"],
                        self.syms[r["r_info_sym"]],
                    )
        return out

    def _func_at(self, sec_idx: int, target: int) -> tuple[int, int]:
        """The function of section ``sec_idx`` holding instruction ``target``: (first, count)."""
        for s in self.syms:
            if s.shndx == sec_idx and s.kind == "STT_FUNC" and s.size:
                first, count = s.value // isa.INSN_SIZE, s.size // isa.INSN_SIZE
                if first <= target < first + count:
                    return first, count
        code = self._code(sec_idx)
        if not 0 <= target < len(code):
            raise KernelError(
                Errno.EINVAL, f"call to instruction {target} outside '{self.sec_name(sec_idx)}'"
            )
        return 0, len(code)

    def _link(self, idx: int, fn: _Sym, text_idx: int | None) -> list[Insn]:
        """The program's instructions, then each ``.text`` subprogram it calls (directly or
        through another), in the order first called, relocated (``bpf_object__relocate``,
        ``bpf_object__append_subprog_code``: only the subprograms a program uses are appended,
        or the kernel would find the others unreachable)."""
        start, count = fn.value // isa.INSN_SIZE, fn.size // isa.INSN_SIZE
        if count == 0:
            count = len(self._code(idx)) - start
        pieces = [(idx, start, count)]
        placed = {(idx, start): 0}
        total = count
        image: list[Insn] = []
        k = 0
        while k < len(pieces):
            sec_idx, first, cnt = pieces[k]
            base = placed[(sec_idx, first)]
            code = self._code(sec_idx)[first : first + cnt]
            relocs = self._relocs(sec_idx)
            part = list(code)
            special = {i - first for i in relocs if first <= i < first + cnt}
            special.update(
                i for i, ins in enumerate(code) if ins.code == CALL or ins.code == LD_IMM64
            )
            for i in sorted(special):
                ins = code[i]
                if not (isa.is_call(ins) and ins.src == isa.BPF_PSEUDO_CALL):
                    part[i] = self._relocate(sec_idx, first + i, ins, relocs)
                    continue
                target_sec, target = self._call_target(sec_idx, first + i, ins, relocs)
                if target_sec == sec_idx and first <= target < first + cnt:
                    img_target = base + target - first
                else:
                    if target_sec != text_idx:
                        raise KernelError(
                            Errno.EINVAL,
                            f"call into section '{self.sec_name(target_sec)}' outside the program",
                        )
                    fstart, fcount = self._func_at(target_sec, target)
                    key = (target_sec, fstart)
                    if key not in placed:
                        placed[key] = total
                        pieces.append((target_sec, fstart, fcount))
                        total += fcount
                    img_target = placed[key] + target - fstart
                part[i] = Insn(ins.code, ins.dst, ins.src, ins.off, img_target - (base + i) - 1)
            image.extend(part)
            k += 1
        return self._fold_ld_imm64(image)

    def _call_target(
        self, sec_idx: int, sec_i: int, ins: Insn, relocs: dict[int, tuple[int, _Sym]]
    ) -> tuple[int, int]:
        """Where a bpf-to-bpf call goes: (section, instruction index in it)."""
        rel = relocs.get(sec_i)
        if rel is None:
            return sec_idx, sec_i + ins.imm + 1
        sym = rel[1]
        if sym.shndx == "SHN_UNDEF":  # an extern (__ksym): libbpf resolves it in vmlinux BTF
            raise _kfunc(sym.name)
        if not isinstance(sym.shndx, int):
            raise KernelError(Errno.EINVAL, f"call to '{sym.name}', which is not defined here")
        return sym.shndx, sym.value // isa.INSN_SIZE + ins.imm + 1

    def _relocate(
        self, sec_idx: int, sec_i: int, ins: Insn, relocs: dict[int, tuple[int, _Sym]]
    ) -> Insn:
        rel = relocs.get(sec_i)
        if isa.is_call(ins):
            if ins.src == isa.BPF_PSEUDO_KFUNC_CALL or (rel and rel[1].shndx == "SHN_UNDEF"):
                raise _kfunc(rel[1].name if rel else str(ins.imm))
            return ins  # a helper, by number
        if rel is None:
            if ins.is_ld_imm64() and ins.src == isa.BPF_PSEUDO_FUNC:
                raise KernelError(Errno.EOPNOTSUPP, isa.CALLBACKS_NOT_MODELLED)
            return ins
        rtype, sym = rel
        if not ins.is_ld_imm64():
            raise KernelError(
                Errno.EINVAL, f"relocation against '{sym.name}' on a non-ld_imm64 instruction"
            )
        if rtype not in (R_BPF_64_64, R_BPF_64_ABS64):
            raise KernelError(
                Errno.EINVAL, f"unsupported relocation type {rtype} against '{sym.name}'"
            )
        if sym.shndx == "SHN_UNDEF":
            raise KernelError(
                Errno.EINVAL, f"extern '{sym.name}' (kconfig / ksym) is not supported"
            )
        shndx = int(sym.shndx)
        key = (shndx, sym.value)
        if key in self.map_at:
            return Insn(ins.code, ins.dst, isa.BPF_PSEUDO_MAP_IDX, ins.off, self.map_at[key], 0)
        if shndx in self.data_map:
            mi = self.data_map[shndx]
            return Insn(
                ins.code, ins.dst, isa.BPF_PSEUDO_MAP_IDX_VALUE, ins.off, mi, sym.value + ins.imm
            )
        sname = self.sec_name(shndx)
        if sname == ".text" or self.sections[shndx]["sh_flags"] & SHF_EXECINSTR:
            # libbpf turns the address of a function into BPF_PSEUDO_FUNC, which the kernel
            # loads (a bpf_loop or bpf_for_each_map_elem callback): a feature xdptui does
            # not model, not a malformed object.
            raise KernelError(Errno.EOPNOTSUPP, isa.CALLBACKS_NOT_MODELLED)
        raise KernelError(
            Errno.EINVAL, f"relocation against '{sym.name}' in section '{sname}' is not supported"
        )

    def _fold_ld_imm64(self, image: list[Insn]) -> list[Insn]:
        """Give every ld_imm64 its full 64-bit operand in ``imm64``: a constant, a map handle
        (``BPF_PSEUDO_MAP_IDX``) or a pointer into a map value (``BPF_PSEUDO_MAP_IDX_VALUE``),
        the second slot's imm holding the offset as the kernel reads it. An ld_imm64 that
        names a map with no relocation (``BPF_PSEUDO_MAP_FD``) keeps its number: the
        verifier refuses it as the kernel refuses an fd that is no map."""
        out = list(image)
        skip = -1
        for i in [i for i, ins in enumerate(out) if ins.code == LD_IMM64]:
            if i == skip or i + 1 >= len(out):
                continue
            ins, hi = out[i], out[i + 1]
            value = (ins.imm & 0xFFFFFFFF) | ((hi.imm & 0xFFFFFFFF) << 32)
            if ins.src == isa.BPF_PSEUDO_MAP_IDX and 0 <= ins.imm < len(self.maps):
                value = map_handle(ins.imm)
            elif ins.src == isa.BPF_PSEUDO_MAP_IDX_VALUE and 0 <= ins.imm < len(self.maps):
                off = ins.imm64 & 0xFFFFFFFF
                value = (self.maps[ins.imm].region << 32) + off
                out[i + 1] = Insn(hi.code, hi.dst, hi.src, hi.off, off)
            out[i] = Insn(ins.code, ins.dst, ins.src, ins.off, ins.imm, value)
            skip = i + 1
        return out


def _kfunc(name: str) -> KernelError:
    """A call to a kernel function through BTF (``BPF_PSEUDO_KFUNC_CALL``, an ``extern ...
    __ksym`` libbpf finds in vmlinux BTF): the kernel's functions are not part of the model."""
    return KernelError(
        Errno.EOPNOTSUPP, f"call to kfunc '{name}': kernel functions (kfuncs) are not modelled"
    )
