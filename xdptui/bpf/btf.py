"""Just enough BTF to read BTF-defined maps (``.maps``) and spot CO-RE relocations.

Follows ``include/uapi/linux/btf.h`` and libbpf's ``parse_btf_map_def()``: a map is a
``struct`` whose members are pointers; ``__uint(name, N)`` is ``int (*name)[N]`` and
``__type(key, T)`` is ``T *key``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from xdptui.model.errors import Errno, KernelError

BTF_MAGIC = 0xEB9F
KIND_INT, KIND_PTR, KIND_ARRAY, KIND_STRUCT, KIND_UNION, KIND_ENUM = 1, 2, 3, 4, 5, 6
KIND_TYPEDEF, KIND_VOLATILE, KIND_CONST, KIND_RESTRICT = 8, 9, 10, 11
KIND_FUNC_PROTO, KIND_VAR, KIND_DATASEC, KIND_FLOAT = 13, 14, 15, 16
KIND_DECL_TAG, KIND_TYPE_TAG, KIND_ENUM64 = 17, 18, 19
_VALUES_TYPES = (3, 12, 13)  # BPF_MAP_TYPE_PROG_ARRAY, ARRAY_OF_MAPS, HASH_OF_MAPS
_MODIFIERS = (KIND_TYPEDEF, KIND_VOLATILE, KIND_CONST, KIND_RESTRICT, KIND_TYPE_TAG)


@dataclass
class BtfType:
    """One BTF type: its kind, name, ``size``-or-``type`` word and the kind's extra data."""

    kind: int
    name: str
    size_or_type: int
    vlen: int
    members: list[tuple[str, int, int]] = field(default_factory=list)  # (name, type, offset)
    array: tuple[int, int] = (0, 0)  # (element type, nelems)


class Btf:
    """The types of a ``.BTF`` section, id 0 being ``void``."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 24:
            raise KernelError(Errno.EINVAL, "BTF section too short")
        magic, _ver, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != BTF_MAGIC:
            raise KernelError(Errno.EINVAL, "invalid BTF magic")
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, 8)
        strs = data[hdr_len + str_off : hdr_len + str_off + str_len]
        self.strings = strs
        self.types: list[BtfType] = [BtfType(0, "void", 0, 0)]
        pos, end = hdr_len + type_off, hdr_len + type_off + type_len
        while pos < end:
            name_off, info, sot = struct.unpack_from("<III", data, pos)
            pos += 12
            kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
            t = BtfType(kind, _cstr(strs, name_off), sot, vlen)
            if kind in (KIND_INT, KIND_VAR, KIND_DECL_TAG):
                pos += 4
            elif kind == KIND_ARRAY:
                elem, _index, nelems = struct.unpack_from("<III", data, pos)
                t.array = (elem, nelems)
                pos += 12
            elif kind in (KIND_STRUCT, KIND_UNION, KIND_DATASEC):
                for _ in range(vlen):
                    m_name, m_type, m_off = struct.unpack_from("<III", data, pos)
                    t.members.append((_cstr(strs, m_name), m_type, m_off))
                    pos += 12
            elif kind in (KIND_ENUM, KIND_FUNC_PROTO):
                pos += 8 * vlen
            elif kind == KIND_ENUM64:
                pos += 12 * vlen
            elif kind > KIND_ENUM64:
                raise KernelError(Errno.EINVAL, f"BTF kind {kind} unknown")
            self.types.append(t)

    def type(self, tid: int) -> BtfType:
        if not 0 <= tid < len(self.types):
            raise KernelError(Errno.EINVAL, f"BTF: type id {tid} out of range")
        return self.types[tid]

    def resolve(self, tid: int) -> BtfType:
        """Skip typedefs and modifiers (a chain that loops is malformed BTF)."""
        t = self.type(tid)
        for _ in range(len(self.types)):
            if t.kind not in _MODIFIERS:
                return t
            t = self.type(t.size_or_type)
        raise KernelError(Errno.EINVAL, "BTF: a loop of typedefs or modifiers")

    def size_of(self, tid: int, depth: int = 0) -> int:
        """``btf__resolve_size`` (nested arrays at most 32 deep, as libbpf's MAX_RESOLVE_DEPTH)."""
        if depth > 32:
            raise KernelError(Errno.EINVAL, "BTF: type nesting too deep")
        t = self.resolve(tid)
        if t.kind in (KIND_INT, KIND_STRUCT, KIND_UNION, KIND_ENUM, KIND_ENUM64, KIND_FLOAT):
            return t.size_or_type
        if t.kind == KIND_PTR:
            return 8
        if t.kind == KIND_ARRAY:
            return t.array[1] * self.size_of(t.array[0], depth + 1)
        raise KernelError(Errno.EINVAL, f"BTF: cannot size type '{t.name}' of kind {t.kind}")

    def var_type(self, name: str) -> int | None:
        """The type id of the global variable ``name`` (a BTF_KIND_VAR)."""
        for t in self.types:
            if t.kind == KIND_VAR and t.name == name:
                return t.size_or_type
        return None

    def map_def(self, name: str) -> dict[str, int]:
        """The members of a BTF-defined map, as libbpf's ``parse_btf_map_def()`` reads them:
        numbers for ``__uint``, sizes for ``__type``; ``__array(values, ...)`` declares a
        map-in-map (its inner map's definition, ``inner_*``) or a prog array, whose values
        are 4-byte ids (libbpf sets ``value_size`` 4)."""
        tid = self.var_type(name)
        if tid is None:
            raise KernelError(Errno.EINVAL, f"map '{name}': no BTF for it in .maps")
        return self._def_of(tid, name, inner=False)

    def _def_of(self, tid: int, name: str, inner: bool) -> dict[str, int]:
        st = self.resolve(tid)
        if st.kind != KIND_STRUCT:
            raise KernelError(Errno.EINVAL, f"map '{name}': unexpected def kind {st.kind}")
        out: dict[str, int] = {}
        for m_name, m_type, m_off in st.members:
            if m_name == "values":
                out.update(self._values(m_type, name, inner))
                out["values_off"] = (m_off & 0xFFFFFF) // 8  # where .values initializers sit
                continue
            ptr = self.resolve(m_type)
            if ptr.kind != KIND_PTR:
                raise KernelError(Errno.EINVAL, f"map '{name}': attr '{m_name}': expected PTR")
            target = self.resolve(ptr.size_or_type)
            if m_name in ("key", "value"):
                out[f"{m_name}_size"] = self.size_of(ptr.size_or_type)
            elif target.kind == KIND_ARRAY:
                out[m_name] = target.array[1]
            else:
                raise KernelError(Errno.EINVAL, f"map '{name}': attr '{m_name}' not understood")
        if "values" in out and out.get("type") not in _VALUES_TYPES:
            raise KernelError(Errno.EINVAL, f"map '{name}': should be map-in-map or prog-array")
        return out

    def _values(self, m_type: int, name: str, inner: bool) -> dict[str, int]:
        """``__array(values, struct inner)`` (map-in-map) or ``__array(values, int (void *))``
        (prog array): a zero-sized array of pointers."""
        if inner:
            raise KernelError(Errno.EINVAL, f"map '{name}': multi-level inner maps not supported")
        arr = self.resolve(m_type)
        if arr.kind != KIND_ARRAY or arr.array[1] != 0:
            raise KernelError(Errno.EINVAL, f"map '{name}': values spec is not a zero-sized array")
        ptr = self.resolve(arr.array[0])
        if ptr.kind != KIND_PTR:
            raise KernelError(Errno.EINVAL, f"map '{name}': values type should be a pointer")
        target = self.resolve(ptr.size_or_type)
        out = {"values": 1, "value_size": 4}
        if target.kind == KIND_STRUCT:
            inner_def = self._def_of(ptr.size_or_type, f"{name}.inner", inner=True)
            out.update({f"inner_{k}": v for k, v in inner_def.items()})
        elif target.kind != KIND_FUNC_PROTO:
            raise KernelError(
                Errno.EINVAL, f"map '{name}': values should be a map definition or a program"
            )
        return out


def _cstr(strs: bytes, off: int) -> str:
    end = strs.find(b"\0", off)
    return strs[off : end if end >= 0 else len(strs)].decode("utf-8", "replace")


CORE_KINDS = (
    "field byte offset",
    "field byte size",
    "field exists",
    "field signed",
    "field lshift",
    "field rshift",
    "local type id",
    "target type id",
    "type exists",
    "type size",
    "enum value exists",
    "enum value",
    "type matches",
)


def core_relo_sections(ext: bytes, btf: Btf | None) -> dict[str, int]:
    """Sections with CO-RE relocations in ``.BTF.ext`` (``struct btf_ext_header``), by count,
    each record checked (``struct bpf_core_relo``: an instruction offset inside its section
    and 8-byte aligned, a type id of the object's BTF, an access string of indices, a kind
    libbpf knows): a malformed record is EINVAL.

    xdptui resolves CO-RE relocations against the types the object was built against (its own
    BTF is the simulated kernel's: it models none of the kernel internals whose layout varies
    between kernels), so each instruction keeps the value clang emitted for it, as libbpf
    would compute it against a kernel of those types."""
    if len(ext) < 32 or btf is None:
        return {}
    _magic, _ver, _flags, hdr_len = struct.unpack_from("<HBBI", ext, 0)
    if hdr_len < 32:
        return {}
    core_off, core_len = struct.unpack_from("<II", ext, 24)
    if core_len == 0:
        return {}
    # Look up section names in the .BTF string table: the names are string offsets in it.
    pos, end = hdr_len + core_off, hdr_len + core_off + core_len
    if end > len(ext):
        raise KernelError(Errno.EINVAL, ".BTF.ext: CO-RE relocations past the section's end")
    rec_size = struct.unpack_from("<I", ext, pos)[0]
    if rec_size < 16:
        raise KernelError(Errno.EINVAL, f".BTF.ext: CO-RE record size {rec_size} below 16")
    pos += 4
    out: dict[str, int] = {}
    raw_strs = btf.strings
    while pos < end:
        sec_off, num = struct.unpack_from("<II", ext, pos)
        pos += 8
        for _ in range(num):
            insn_off, type_id, access_off, kind = struct.unpack_from("<IIII", ext, pos)
            pos += rec_size
            access = _cstr(raw_strs, access_off)
            if (
                insn_off % 8
                or not 0 < type_id < len(btf.types)
                or kind >= len(CORE_KINDS)
                or not all(part.isdigit() for part in access.split(":"))
            ):
                raise KernelError(
                    Errno.EINVAL,
                    f".BTF.ext: malformed CO-RE relocation (insn_off {insn_off}, type "
                    f"{type_id}, access '{access}', kind {kind})",
                )
        out[_cstr(raw_strs, sec_off)] = num
    return out
