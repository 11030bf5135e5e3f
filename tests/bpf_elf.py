"""A small writer of BPF ELF objects, so tests can make objects from raw instructions (hostile
ones included) without clang: program sections with a function symbol each, ``license``, a
legacy ``maps`` section (``struct bpf_map_def``) with ``R_BPF_64_64`` relocations on the
``ld_imm64`` that name a map, and ``.bss`` / ``.data`` of any size."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS, SHT_REL = 1, 2, 3, 8, 9
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
STT_OBJECT, STT_FUNC, STB_GLOBAL = 1, 2, 1
R_BPF_64_64 = 1
EM_BPF = 247


@dataclass
class MapSpec:
    name: str
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int = 0


@dataclass
class Obj:
    """What the object holds: programs by section name (function name = section with
    ``/`` and ``.`` made ``_``), map references as (section, instruction index, map name)."""

    progs: dict[str, bytes]
    maps: list[MapSpec] = field(default_factory=list)
    refs: list[tuple[str, int, str]] = field(default_factory=list)
    license: bytes = b"GPL\0"
    bss: int = 0
    data: bytes = b""


class _Strings:
    def __init__(self) -> None:
        self.blob = bytearray(b"\0")

    def add(self, s: str) -> int:
        off = len(self.blob)
        self.blob += s.encode() + b"\0"
        return off


def elf_bytes(obj: Obj) -> bytes:
    """The object as ``clang -target bpf -c`` would lay it out (one function per section)."""
    shstr, strtab = _Strings(), _Strings()
    # (name, type, flags, data or size for NOBITS, link, info, align, entsize)
    sections: list[list[object]] = [["", 0, 0, b"", 0, 0, 0, 0]]
    syms = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]
    prog_idx: dict[str, int] = {}
    for name, code in obj.progs.items():
        prog_idx[name] = len(sections)
        sections.append([name, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, code, 0, 0, 8, 0])
    lic_idx = len(sections)
    sections.append(["license", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, obj.license, 0, 0, 1, 0])
    maps_idx = 0
    if obj.maps:
        maps_idx = len(sections)
        blob = b"".join(
            struct.pack("<5I", m.map_type, m.key_size, m.value_size, m.max_entries, m.flags)
            for m in obj.maps
        )
        sections.append(["maps", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, blob, 0, 0, 4, 0])
    if obj.bss:
        sections.append([".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, obj.bss, 0, 0, 8, 0])
    if obj.data:
        sections.append([".data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, obj.data, 0, 0, 8, 0])
    for name, idx in prog_idx.items():
        fn = name.replace("/", "_").replace(".", "_")
        size = len(obj.progs[name])
        syms.append(
            struct.pack("<IBBHQQ", strtab.add(fn), (STB_GLOBAL << 4) | STT_FUNC, 0, idx, 0, size)
        )
    syms.append(
        struct.pack(
            "<IBBHQQ",
            strtab.add("_license"),
            (STB_GLOBAL << 4) | STT_OBJECT,
            0,
            lic_idx,
            0,
            len(obj.license),
        )
    )
    map_sym: dict[str, int] = {}
    for i, m in enumerate(obj.maps):
        map_sym[m.name] = len(syms)
        syms.append(
            struct.pack(
                "<IBBHQQ",
                strtab.add(m.name),
                (STB_GLOBAL << 4) | STT_OBJECT,
                0,
                maps_idx,
                20 * i,
                20,
            )
        )
    symtab_idx = len(sections)
    strtab_idx = symtab_idx + 1
    sections.append([".symtab", SHT_SYMTAB, 0, b"".join(syms), strtab_idx, 1, 8, 24])
    sections.append([".strtab", SHT_STRTAB, 0, b"", 0, 0, 1, 0])  # filled below
    for name in obj.progs:
        rels = [(i, m) for sec, i, m in obj.refs if sec == name]
        if rels:
            data = b"".join(
                struct.pack("<QQ", 8 * i, (map_sym[m] << 32) | R_BPF_64_64) for i, m in rels
            )
            sections.append([f".rel{name}", SHT_REL, 0, data, symtab_idx, prog_idx[name], 8, 16])
    shstr_idx = len(sections)
    sections.append([".shstrtab", SHT_STRTAB, 0, b"", 0, 0, 1, 0])
    sections[strtab_idx][3] = bytes(strtab.blob)
    names = [shstr.add(str(s[0])) if s[0] else 0 for s in sections]
    sections[shstr_idx][3] = bytes(shstr.blob)
    out = bytearray(64)
    offsets = []
    for s in sections:
        data = s[3]
        if isinstance(data, bytes):
            out += b"\0" * (-len(out) % 8)
            offsets.append(len(out))
            out += data
        else:
            offsets.append(len(out))
    out += b"\0" * (-len(out) % 8)
    shoff = len(out)
    for s, name_off, off in zip(sections, names, offsets, strict=True):
        _, typ, flags, data, link, info, align, entsize = s
        size = len(data) if isinstance(data, bytes) else int(data)  # type: ignore[arg-type]
        out += struct.pack(
            "<IIQQQQIIQQ", name_off, typ, flags, 0, off, size, link, info, align, entsize
        )
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    out[:64] = ident + struct.pack(
        "<HHIQQQIHHHHHH", 1, EM_BPF, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections), shstr_idx
    )
    return bytes(out)
