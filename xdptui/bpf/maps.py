"""BPF maps: array, per-CPU array, hash, per-CPU hash, LRU hash, devmap, devmap_hash, and the
map-in-map types array_of_maps and hash_of_maps.

Each map keeps its values in one byte arena, so a program's pointer to a value is an offset
into it (``kernel/bpf/arraymap.c``, ``hashtab.c``, ``devmap.c``). The user-space calls follow
``BPF_MAP_LOOKUP_ELEM`` / ``UPDATE_ELEM`` / ``DELETE_ELEM`` (per-CPU values are
``round_up(value_size, 8)`` bytes per possible CPU, as the syscall copies them); the
program-side calls take a batch of keys and apply them in packet order.
"""

from __future__ import annotations

import copy
import enum
import json
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno, KernelError
from xdptui.model.limits import NR_CPUS

U8Array = npt.NDArray[np.uint8]
I64Array = npt.NDArray[np.int64]


class MapType(enum.IntEnum):
    """``enum bpf_map_type`` (``include/uapi/linux/bpf.h``), every value named."""

    UNSPEC = 0
    HASH = 1
    ARRAY = 2
    PROG_ARRAY = 3
    PERF_EVENT_ARRAY = 4
    PERCPU_HASH = 5
    PERCPU_ARRAY = 6
    STACK_TRACE = 7
    CGROUP_ARRAY = 8
    LRU_HASH = 9
    LRU_PERCPU_HASH = 10
    LPM_TRIE = 11
    ARRAY_OF_MAPS = 12
    HASH_OF_MAPS = 13
    DEVMAP = 14
    SOCKMAP = 15
    CPUMAP = 16
    XSKMAP = 17
    SOCKHASH = 18
    CGROUP_STORAGE = 19
    REUSEPORT_SOCKARRAY = 20
    PERCPU_CGROUP_STORAGE = 21
    QUEUE = 22
    STACK = 23
    SK_STORAGE = 24
    DEVMAP_HASH = 25
    STRUCT_OPS = 26
    RINGBUF = 27
    INODE_STORAGE = 28
    TASK_STORAGE = 29
    BLOOM_FILTER = 30
    USER_RINGBUF = 31
    CGRP_STORAGE = 32
    ARENA = 33


# Update flags (include/uapi/linux/bpf.h).
BPF_ANY = 0
BPF_NOEXIST = 1
BPF_EXIST = 2

# Map flags (map_flags).
BPF_F_RDONLY_PROG = 1 << 7
BPF_F_INNER_MAP = 1 << 12

HASH_TYPES = (MapType.HASH, MapType.PERCPU_HASH, MapType.LRU_HASH, MapType.LRU_PERCPU_HASH)
ARRAY_TYPES = (MapType.ARRAY, MapType.PERCPU_ARRAY)
PERCPU_TYPES = (MapType.PERCPU_ARRAY, MapType.PERCPU_HASH, MapType.LRU_PERCPU_HASH)
DEVMAP_TYPES = (MapType.DEVMAP, MapType.DEVMAP_HASH)
# Maps whose contents the host keeps (bound to the host's maps by name): devmaps, cpumaps and
# xskmaps (AF_XDP sockets).
HOST_TYPES = (*DEVMAP_TYPES, MapType.CPUMAP, MapType.XSKMAP)
# Map-in-map: the values are inner maps, given by fd and read back as map ids (4 bytes).
OF_MAPS_TYPES = (MapType.ARRAY_OF_MAPS, MapType.HASH_OF_MAPS)
# Types whose ops have no ``map_meta_equal``: ``bpf_map_meta_alloc`` refuses them as inner maps.
NO_META_EQUAL = frozenset(
    (
        MapType.PROG_ARRAY,
        MapType.CGROUP_STORAGE,
        MapType.PERCPU_CGROUP_STORAGE,
        MapType.STRUCT_OPS,
        MapType.SK_STORAGE,
        MapType.INODE_STORAGE,
        MapType.TASK_STORAGE,
        MapType.CGRP_STORAGE,
        MapType.ARENA,
    )
)
# Maps a program may name but that this package only records output into.
EVENT_TYPES = (MapType.PERF_EVENT_ARRAY, MapType.RINGBUF)
# The map types this package runs; an object may declare others (they are created empty and
# a program that uses one is refused when it is verified).
MODELLED = frozenset((*HASH_TYPES, *ARRAY_TYPES, *HOST_TYPES, *EVENT_TYPES, *OF_MAPS_TYPES))

# Memory. Maps cost what the kernel's map_mem_usage() says they cost, and an object's maps
# together may cost at most MAP_MEMORY_BUDGET: a stated limit, as a memory cgroup would set
# one (the kernel charges map memory to the loader's memcg and fails with ENOMEM past it).
# Values live in arenas allocated lazily (untouched pages cost nothing; a hash map's arena
# grows with its entries), and copies take only the part ever written.
MAP_MEMORY_BUDGET = 512 << 20
KMALLOC_MAX_SIZE = 1 << 22  # 4 MiB on x86_64 (MAX_PAGE_ORDER 10)
PCPU_MIN_UNIT_SIZE = 32 << 10
MAX_BPF_STACK = 512
U32_MAX = (1 << 32) - 1
HTAB_ELEM_SIZE = 48  # sizeof(struct htab_elem)
HTAB_BUCKET_SIZE = 16  # sizeof(struct bucket)
HTAB_MAP_LOCK_COUNT = 8
BPF_ARRAY_SIZE = 320  # sizeof(struct bpf_array), roughly
BPF_HTAB_SIZE = 704  # sizeof(struct bpf_htab), roughly


def _round8(n: int) -> int:
    return (n + 7) & ~7


@dataclass(frozen=True)
class MapDef:
    """What a map is declared as: ``struct bpf_map_def`` or a BTF-defined ``.maps`` entry."""

    name: str
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    map_flags: int = 0
    pinning: int = 0  # LIBBPF_PIN_BY_NAME (1): libbpf pins it at /sys/fs/bpf/NAME


@dataclass
class MapSnapshot:
    """A map's state, to roll a batch back (see ``vm``): the arena as far as it was ever
    written, and the hash slots."""

    arena: U8Array
    slots: OrderedDict[bytes, int]
    free: list[int]
    nslots: int


class BpfMap:
    """One map. ``region`` is set by the object that owns it: pointers into the map's arena are
    ``region << 32 | offset`` in the interpreter's address space."""

    def __init__(self, mdef: MapDef, ncpus: int = 1, frozen: bool = False) -> None:
        self.name = mdef.name
        self.map_type = mdef.map_type
        self.key_size = mdef.key_size
        self.value_size = mdef.value_size
        self.max_entries = mdef.max_entries
        self.map_flags = mdef.map_flags
        if mdef.map_type in DEVMAP_TYPES:  # dev_map_init_map: values are read-only to programs
            self.map_flags |= BPF_F_RDONLY_PROG
        self.pinning = mdef.pinning
        # A map-in-map's template for its inner maps (``map->inner_map_meta``), the kernel id
        # the loader gave this map (what an outer map stores for it), and the inner maps
        # the object puts in its slots at load (``.values = { [0] = &inner }``: slot -> the
        # object's map index, libbpf's ``init_slots``).
        self.inner_meta: BpfMap | None = None
        self.map_id = 0
        self.init_slots: dict[int, int] = {}
        self.ncpus = ncpus if mdef.map_type in PERCPU_TYPES else 1
        self.frozen = frozen
        self.freeze_on_load = False  # .rodata: libbpf freezes it (bpf_map_freeze) at load
        self.region = 0
        check_def(mdef)
        self.stride = self.value_size * self.ncpus  # bytes of one slot (all CPUs' copies)
        self.modelled = mdef.map_type in MODELLED
        capacity = self.max_entries * self.stride if self.modelled and not self.is_hash else 0
        if mdef.map_type in EVENT_TYPES:
            capacity = 0
        self.arena = np.zeros(capacity, dtype=np.uint8)  # calloc: pages appear when written
        self.used = 0  # bytes of the arena ever written (what a copy must take)
        # Hash maps: key bytes -> slot, in insertion order (the iteration order of dumps);
        # slots freed by deletes are reused first, then new ones are added at the end.
        self.slots: OrderedDict[bytes, int] = OrderedDict()
        self.free: list[int] = []
        self.nslots = 0

    def __deepcopy__(self, memo: dict[int, object]) -> BpfMap:
        other = copy.copy(self)
        other.arena = np.zeros(self.arena.size, dtype=np.uint8)
        other.arena[: self.used] = self.arena[: self.used]
        other.slots = OrderedDict(self.slots)
        other.free = list(self.free)
        memo[id(self)] = other
        return other

    def touch(self, end: int) -> None:
        """Bytes up to ``end`` of the arena were written."""
        if end > self.used:
            self.used = end

    def clear(self) -> None:
        """Every element gone (an array back to zeros)."""
        self.arena[: self.used] = 0
        self.used = 0
        self.slots.clear()
        self.free = []
        self.nslots = 0

    def _new_slot(self) -> int:
        """A slot for a new hash element: a freed one, or one more at the end of the arena."""
        if self.free:
            return self.free.pop()
        slot = self.nslots
        self.nslots += 1
        need = self.nslots * self.stride
        if need > self.arena.size:
            grown = np.zeros(max(need, 2 * self.arena.size, 64 * self.stride), dtype=np.uint8)
            grown[: self.used] = self.arena[: self.used]
            self.arena = grown
        return slot

    # -- kind -----------------------------------------------------------------------------
    @property
    def is_hash(self) -> bool:
        return self.map_type in (*HASH_TYPES, MapType.DEVMAP_HASH, MapType.HASH_OF_MAPS)

    @property
    def is_of_maps(self) -> bool:
        """An outer map: its values are inner maps."""
        return self.map_type in OF_MAPS_TYPES

    @property
    def is_percpu(self) -> bool:
        return self.map_type in PERCPU_TYPES

    @property
    def is_lru(self) -> bool:
        return self.map_type in (MapType.LRU_HASH, MapType.LRU_PERCPU_HASH)

    def __repr__(self) -> str:
        kind = MapType(self.map_type).name.lower()
        return f"<BpfMap {self.name} {kind} key {self.key_size} value {self.value_size}>"

    # -- state ----------------------------------------------------------------------------
    def snapshot(self) -> MapSnapshot:
        return MapSnapshot(
            self.arena[: self.used].copy(), OrderedDict(self.slots), list(self.free), self.nslots
        )

    def restore(self, snap: MapSnapshot) -> None:
        n = snap.arena.size
        self.arena[:n] = snap.arena
        self.arena[n : self.used] = 0
        self.used = n
        self.slots = OrderedDict(snap.slots)
        self.free = list(snap.free)
        self.nslots = snap.nslots

    def _key_bytes(self, key: bytes | int) -> bytes:
        if isinstance(key, int):
            return key.to_bytes(self.key_size, "little", signed=key < 0)
        if len(key) != self.key_size:
            raise KernelError(Errno.EINVAL, f"key is {len(key)} bytes, map has key {self.key_size}")
        return bytes(key)

    def _slot_of(self, key: bytes) -> int | None:
        """The slot holding ``key``, or None (an array index out of range is None too)."""
        if self.is_hash:
            return self.slots.get(key)
        index = int.from_bytes(key, "little")
        return index if index < self.max_entries else None

    def _value_at(self, slot: int) -> bytes:
        """The user-space view of a slot: per-CPU values padded to 8 bytes each."""
        base = slot * self.stride
        if not self.is_percpu:
            return self.arena[base : base + self.value_size].tobytes()
        pad = b"\0" * (_round8(self.value_size) - self.value_size)
        return b"".join(
            self.arena[base + c * self.value_size : base + (c + 1) * self.value_size].tobytes()
            + pad
            for c in range(self.ncpus)
        )

    def _store(self, slot: int, value: bytes) -> None:
        base = slot * self.stride
        self.touch(base + self.stride)
        if not self.is_percpu:
            self.arena[base : base + self.value_size] = np.frombuffer(value, dtype=np.uint8)
            return
        step = _round8(self.value_size)
        for c in range(self.ncpus):
            chunk = value[c * step : c * step + self.value_size]
            start = base + c * self.value_size
            self.arena[start : start + self.value_size] = np.frombuffer(chunk, dtype=np.uint8)

    # -- user space (the bpf(2) map commands) ------------------------------------------------
    @property
    def user_value_size(self) -> int:
        return _round8(self.value_size) * self.ncpus if self.is_percpu else self.value_size

    def tool_key(self, key: bytes) -> bytes:
        """The key ``bpftool map update|delete|lookup`` passes on: exactly ``key_size`` bytes,
        else bpftool's own refusal (``parse_elem``)."""
        if len(key) != self.key_size:
            raise KernelError(
                Errno.EINVAL, f"Error: key expected {self.key_size} bytes got {len(key)}"
            )
        return key

    def tool_value(self, value: bytes) -> bytes:
        """The value bpftool passes on: ``user_value_size`` bytes, else its refusal. A per-CPU
        map's value given for one CPU is set on every possible CPU (xdptui's shorthand)."""
        if self.is_percpu and len(value) == self.value_size:
            step = _round8(self.value_size)
            return (value + bytes(step - self.value_size)) * self.ncpus
        if len(value) != self.user_value_size:
            raise KernelError(
                Errno.EINVAL,
                f"Error: value expected {self.user_value_size} bytes got {len(value)}",
            )
        return value

    def _modelled(self) -> None:
        if not self.modelled:
            raise KernelError(
                Errno.EOPNOTSUPP,
                f"{self.name}: {MapType(self.map_type).name.lower()} maps are not modelled yet",
            )

    def lookup(self, key: bytes | int) -> bytes:
        """``BPF_MAP_LOOKUP_ELEM``: the value, or ENOENT."""
        self._modelled()
        if self.map_type in EVENT_TYPES:
            raise KernelError(Errno.EOPNOTSUPP, f"{self.name}: lookup on this map type")
        slot = self._slot_of(self._key_bytes(key))
        if slot is None or (self._sparse and not self._devmap_set(slot)):
            raise KernelError(Errno.ENOENT, "No such file or directory")
        return self._value_at(slot)

    @property
    def _sparse(self) -> bool:
        """An array whose empty slots do not exist (a devmap's ifindex 0, an array of maps'
        NULL: ``dev_map_lookup_elem``, ``bpf_fd_array_map_lookup_elem`` give ENOENT)."""
        return self.map_type in (
            MapType.DEVMAP,
            MapType.CPUMAP,
            MapType.XSKMAP,
            MapType.ARRAY_OF_MAPS,
        )

    def _devmap_set(self, slot: int) -> bool:
        base = slot * self.stride
        return bool(self.arena[base : base + 4].any())

    def update(self, key: bytes | int, value: bytes | int, flags: int = BPF_ANY) -> None:
        """``BPF_MAP_UPDATE_ELEM`` with BPF_ANY / BPF_NOEXIST / BPF_EXIST."""
        self._modelled()
        kb = self._key_bytes(key)
        if isinstance(value, int):
            value = value.to_bytes(self.user_value_size, "little")
        if len(value) != self.user_value_size:
            raise KernelError(
                Errno.EINVAL, f"value is {len(value)} bytes, map wants {self.user_value_size}"
            )
        if self.frozen:
            raise KernelError(Errno.EPERM, f"{self.name} is frozen")
        if self.is_of_maps:
            raise KernelError(
                Errno.EINVAL, f"{self.name}: an outer map's value is an inner map (update_inner)"
            )
        err = self._update_one(kb, value, flags)
        if err:
            raise KernelError(Errno(-err), Errno(-err).strerror)

    def update_inner(self, key: bytes | int, inner: BpfMap, flags: int = BPF_ANY) -> None:
        """``BPF_MAP_UPDATE_ELEM`` on an outer map with an inner map's fd: the inner map must
        match the template (``bpf_map_fd_get_ptr``: ``map_meta_equal`` else EINVAL); an
        array of maps takes BPF_ANY only (``bpf_fd_array_map_update_elem``: EINVAL) and an
        index in range (E2BIG). The slot keeps the inner map's id, as
        ``bpf_map_fd_sys_lookup_elem`` reads it back."""
        self._modelled()
        kb = self._key_bytes(key)
        if self.inner_meta is None or not self.is_of_maps:
            raise KernelError(Errno.EINVAL, f"{self.name} is not a map-in-map")
        if not meta_equal(self.inner_meta, inner):
            raise KernelError(Errno.EINVAL, Errno.EINVAL.strerror)
        if self.map_type == MapType.ARRAY_OF_MAPS and flags != BPF_ANY:
            raise KernelError(Errno.EINVAL, Errno.EINVAL.strerror)
        err = self._update_one(kb, inner.map_id.to_bytes(4, "little"), flags)
        if err:
            raise KernelError(Errno(-err), Errno(-err).strerror)

    def _update_one(self, kb: bytes, value: bytes, flags: int) -> int:
        """Update one element; returns 0 or a negative errno as the kernel's map ops do."""
        if flags > BPF_EXIST:
            return -Errno.EINVAL
        if self.map_type in EVENT_TYPES:
            return -Errno.EOPNOTSUPP
        if not self.is_hash:
            index = int.from_bytes(kb, "little")
            if index >= self.max_entries:
                return -Errno.E2BIG
            if self.map_type == MapType.DEVMAP:
                # dev_map_update_elem: ifindex 0 clears the slot; every slot "exists".
                if flags == BPF_NOEXIST:
                    return -Errno.EEXIST
            elif flags == BPF_NOEXIST:
                return -Errno.EEXIST
            self._store(index, value)
            return 0
        slot = self.slots.get(kb)
        if slot is None and flags == BPF_EXIST:
            return -Errno.ENOENT
        if slot is not None and flags == BPF_NOEXIST:
            return -Errno.EEXIST
        if slot is None:
            if len(self.slots) >= self.max_entries:
                if not self.is_lru:
                    return -Errno.E2BIG
                # Evict the least recently used element (the kernel's LRU is approximate).
                _, old = self.slots.popitem(last=False)
                self.free.append(old)
            slot = self._new_slot()
            self.arena[slot * self.stride : (slot + 1) * self.stride] = 0
            self.slots[kb] = slot
        elif self.is_lru:
            self.slots.move_to_end(kb)
        self._store(slot, value)
        return 0

    def delete(self, key: bytes | int) -> None:
        """``BPF_MAP_DELETE_ELEM``: arrays refuse it (EINVAL), a missing key is ENOENT."""
        self._modelled()
        err = self._delete_one(self._key_bytes(key))
        if err:
            raise KernelError(Errno(-err), Errno(-err).strerror)

    def _delete_one(self, kb: bytes) -> int:
        if self.map_type == MapType.ARRAY_OF_MAPS:
            # fd_array_map_delete_elem: E2BIG past the end, ENOENT for an empty slot
            index = int.from_bytes(kb, "little")
            if index >= self.max_entries:
                return -Errno.E2BIG
            if not self._devmap_set(index):
                return -Errno.ENOENT
            self.arena[index * self.stride : (index + 1) * self.stride] = 0
            return 0
        if self.map_type in (MapType.DEVMAP, MapType.XSKMAP):  # xsk_map_delete_elem too
            index = int.from_bytes(kb, "little")
            if index >= self.max_entries:
                return -Errno.EINVAL
            self.arena[index * self.stride : (index + 1) * self.stride] = 0
            return 0
        if not self.is_hash:
            return -Errno.EINVAL
        slot = self.slots.pop(kb, None)
        if slot is None:
            return -Errno.ENOENT
        self.free.append(slot)
        return 0

    def items(self) -> list[tuple[bytes, bytes]]:
        """Every element as (key, user-space value), in ``BPF_MAP_GET_NEXT_KEY`` order."""
        if self.map_type in EVENT_TYPES or not self.modelled:
            return []
        if self.is_hash:
            return [(k, self._value_at(s)) for k, s in self.slots.items()]
        out = []
        for i in range(self.max_entries):
            if self._sparse and not self._devmap_set(i):
                continue
            out.append((i.to_bytes(self.key_size, "little"), self._value_at(i)))
        return out

    def nonzero_items(self) -> list[tuple[bytes, bytes]]:
        """The elements whose value is not all zeros, in :meth:`items` order -- found from
        the part of the arena ever written, so a large sparse array costs what it holds."""
        if not self.is_hash:
            if self.map_type in EVENT_TYPES or not self.modelled or not self.used:
                return []
            rows = min(self.max_entries, -(-self.used // self.stride))
            grid = self.arena[: rows * self.stride].reshape(rows, self.stride)
            hit = np.flatnonzero(grid.any(axis=1))
            return [(int(i).to_bytes(self.key_size, "little"), self._value_at(int(i))) for i in hit]
        return [(k, v) for k, v in self.items() if any(v)]

    def dump(self, as_json: bool = False) -> str:
        """What ``bpftool map dump`` prints for a map without BTF (``-j`` when ``as_json``)."""
        items = self.items()
        if as_json:
            return json.dumps([self._entry_json(k, v) for k, v in items], separators=(",", ":"))
        lines = [self._entry_plain(k, v) for k, v in items]
        n = len(items)
        lines.append(f"Found {n} element{'' if n == 1 else 's'}")
        return "\n".join(lines) + "\n"

    def entry_text(self, key: bytes, value: bytes, as_json: bool = False) -> str:
        """One element as ``bpftool map lookup`` prints it (``-j``: its JSON object)."""
        if as_json:
            return json.dumps(self._entry_json(key, value), separators=(",", ":"))
        return self._entry_plain(key, value)

    def _entry_json(self, key: bytes, value: bytes) -> dict[str, object]:
        entry: dict[str, object] = {"key": _hex_json(key)}
        if not self.is_percpu:
            entry["value"] = _hex_json(value)
            return entry
        step = _round8(self.value_size)
        entry["values"] = [
            {"cpu": c, "value": _hex_json(value[c * step : c * step + self.value_size])}
            for c in range(self.ncpus)
        ]
        return entry

    def _entry_plain(self, key: bytes, value: bytes) -> str:
        """bpftool's ``print_entry_plain``."""
        if not self.is_percpu:
            break_names = self.key_size > 16 or self.value_size > 16
            single = self.key_size + self.value_size <= 24 and not break_names
            sep = "\n" if break_names else " "
            return (
                f"key:{sep}{fprint_hex(key)}{'  ' if single else chr(10)}"
                f"value:{sep}{fprint_hex(value)}"
            )
        step = _round8(self.value_size)
        out = [f"key:\n{fprint_hex(key)}"]
        sep = "\n" if self.value_size > 16 else " "
        for c in range(self.ncpus):
            chunk = value[c * step : c * step + self.value_size]
            out.append(f"value (CPU {c:02d}):{sep}{fprint_hex(chunk)}")
        return "\n".join(out)

    # -- program side (helpers, vectorised over a batch) -------------------------------------
    def slot_offsets(self, keys: U8Array, cpu: int) -> I64Array:
        """``map_lookup_elem`` for each key row: the value's arena offset, or -1 (NULL)."""
        m = len(keys)
        out = np.full(m, -1, dtype=np.int64)
        if m == 0:
            return out
        cpu_off = (cpu % self.ncpus) * self.value_size if self.is_percpu else 0
        if not self.is_hash:
            index = _le_uint(keys)
            ok = index < self.max_entries
            if self._sparse:
                ok &= _devmap_present(self.arena, index, self.stride, self.max_entries)
            out[ok] = index[ok].astype(np.int64) * self.stride + cpu_off
            return out
        if not self.slots:
            return out
        if not self.is_lru and len(self.slots) <= 4 * m:
            # Few elements for many keys: the elements sorted once, each key searched.
            table = np.frombuffer(b"".join(self.slots), dtype=np.dtype((np.void, self.key_size)))
            slots = np.fromiter(self.slots.values(), dtype=np.int64, count=len(self.slots))
            order = np.argsort(table)
            table, slots = table[order], slots[order]
            want = _rows_as_void(keys)
            pos = np.minimum(np.searchsorted(table, want), len(table) - 1)
            hit = table[pos] == want
            out[hit] = slots[pos[hit]] * self.stride + cpu_off
            return out
        uniq, inverse = np.unique(_rows_as_void(keys), return_inverse=True)
        found = np.full(len(uniq), -1, dtype=np.int64)
        for i, u in enumerate(uniq.tolist()):
            slot = self.slots.get(bytes(u))
            if slot is not None:
                found[i] = slot * self.stride + cpu_off
                if self.is_lru:
                    self.slots.move_to_end(bytes(u))
        return found[inverse.reshape(-1)]

    def prog_update(self, keys: U8Array, values: U8Array, flags: I64Array, cpu: int) -> I64Array:
        """``map_update_elem`` from a program, one key after another in packet order. A per-CPU
        map's update from a program writes this CPU's copy only."""
        out = np.zeros(len(keys), dtype=np.int64)
        for i in range(len(keys)):
            kb = keys[i].tobytes()
            vb = values[i].tobytes()
            if self.is_percpu:
                out[i] = self._update_this_cpu(kb, vb, int(flags[i]), cpu)
            else:
                out[i] = self._update_one(kb, vb, int(flags[i]))
        return out

    def _update_this_cpu(self, kb: bytes, vb: bytes, flags: int, cpu: int) -> int:
        existing = self._slot_of(kb)
        full = bytearray(self.user_value_size)
        if existing is not None:
            full[:] = self._value_at(existing)
        step = _round8(self.value_size)
        c = cpu % self.ncpus
        full[c * step : c * step + self.value_size] = vb
        return self._update_one(kb, bytes(full), flags)

    def prog_delete(self, keys: U8Array) -> I64Array:
        """``map_delete_elem`` from a program, in packet order."""
        out = np.zeros(len(keys), dtype=np.int64)
        for i in range(len(keys)):
            out[i] = self._delete_one(keys[i].tobytes())
        return out


def check_def(mdef: MapDef) -> None:
    """``map_alloc_check`` and the allocation limits of the modelled types, with the kernel's
    errno: zero sizes EINVAL, values too large to kmalloc E2BIG, hash tables whose bucket
    array would overflow a u32 E2BIG (``array_map_alloc_check``, ``htab_map_alloc_check``,
    ``htab_map_alloc``, ``dev_map_alloc``)."""
    t, name = mdef.map_type, mdef.name
    if t not in {m.value for m in MapType} or t == MapType.UNSPEC:
        raise KernelError(Errno.EINVAL, f"map '{name}': unknown map type {t}")
    if t not in MODELLED or t in EVENT_TYPES:
        return  # declared only: created empty, refused where a program uses it
    ks, vs, me = mdef.key_size, mdef.value_size, mdef.max_entries
    if me == 0 or vs == 0 or ks == 0:
        raise KernelError(Errno.EINVAL, f"map '{name}': zero max_entries, key_size or value_size")
    percpu = t in PERCPU_TYPES
    if percpu and _round8(vs) > PCPU_MIN_UNIT_SIZE:
        raise KernelError(
            Errno.E2BIG, f"map '{name}': per-CPU value_size {vs} is over {PCPU_MIN_UNIT_SIZE}"
        )
    if t in OF_MAPS_TYPES and vs != 4:  # fd_array_map_alloc_check, fd_htab_map_alloc_check
        raise KernelError(Errno.EINVAL, f"map '{name}': a map-in-map's value_size must be 4")
    if t in ARRAY_TYPES or t in (MapType.DEVMAP, MapType.ARRAY_OF_MAPS):
        if ks != 4:
            raise KernelError(Errno.EINVAL, f"map '{name}': array maps need key_size 4")
        if vs > KMALLOC_MAX_SIZE:
            raise KernelError(
                Errno.E2BIG, f"map '{name}': value_size {vs} is over KMALLOC_MAX_SIZE"
            )
    if t in DEVMAP_TYPES and vs not in (4, 8):
        raise KernelError(Errno.EINVAL, f"map '{name}': devmap value_size must be 4 or 8")
    if t == MapType.XSKMAP and (ks != 4 or vs != 4):  # xsk_map_alloc
        raise KernelError(Errno.EINVAL, f"map '{name}': an xskmap's key and value are 4 bytes")
    if t == MapType.CPUMAP:  # cpu_map_alloc
        if ks != 4 or vs not in (4, 8):
            raise KernelError(
                Errno.EINVAL, f"map '{name}': a cpumap's key is 4 bytes, its value 4 or 8"
            )
        if me > NR_CPUS:
            raise KernelError(Errno.E2BIG, f"map '{name}': max_entries {me} is over NR_CPUS")
    if t in HASH_TYPES or t in (MapType.DEVMAP_HASH, MapType.HASH_OF_MAPS):
        if ks > MAX_BPF_STACK:
            raise KernelError(Errno.E2BIG, f"map '{name}': key_size {ks} is over {MAX_BPF_STACK}")
        if ks + vs >= KMALLOC_MAX_SIZE - HTAB_ELEM_SIZE:
            raise KernelError(
                Errno.E2BIG, f"map '{name}': key_size + value_size {ks + vs} is too large"
            )
        buckets = 1 << max(me - 1, 0).bit_length()
        if buckets > U32_MAX // HTAB_BUCKET_SIZE:
            raise KernelError(Errno.E2BIG, f"map '{name}': {me} entries need too many buckets")


def mem_usage(mdef: MapDef, ncpus: int) -> int:
    """What the kernel's ``map_mem_usage`` says a map costs (``array_map_mem_usage``,
    ``htab_map_mem_usage`` for a preallocated table); the types not modelled cost nothing."""
    t = mdef.map_type
    if t not in MODELLED or t in EVENT_TYPES:
        return 0
    vs8 = _round8(mdef.value_size)
    n = mdef.max_entries
    if t in (MapType.CPUMAP, MapType.XSKMAP):  # cpu_map_mem_usage, xsk_map_mem_usage: a
        return BPF_ARRAY_SIZE + n * 8  # pointer per slot (its entries are allocated on update)
    if t in ARRAY_TYPES or t in (MapType.DEVMAP, MapType.ARRAY_OF_MAPS):
        if t == MapType.PERCPU_ARRAY:
            return BPF_ARRAY_SIZE + n * 8 + n * vs8 * ncpus
        return BPF_ARRAY_SIZE + n * vs8
    buckets = 1 << max(n - 1, 0).bit_length()
    usage = BPF_HTAB_SIZE + HTAB_BUCKET_SIZE * buckets + 4 * ncpus * HTAB_MAP_LOCK_COUNT
    percpu = t in PERCPU_TYPES
    elem = HTAB_ELEM_SIZE + _round8(mdef.key_size) + (8 if percpu else vs8)
    entries = n + (0 if t in (MapType.LRU_HASH, MapType.LRU_PERCPU_HASH) else ncpus)
    usage += elem * entries
    if percpu:
        usage += vs8 * ncpus * entries
    return usage


def meta_equal(meta: BpfMap, inner: BpfMap) -> bool:
    """Whether ``inner`` may sit in a slot of an outer map whose template is ``meta``:
    ``bpf_map_meta_equal`` (type, key_size, value_size, map_flags), and for arrays
    ``array_map_meta_equal`` (max_entries too, unless the template has BPF_F_INNER_MAP).
    A map that is itself a map-in-map never fits (``bpf_map_meta_alloc``: one level)."""
    if inner.inner_meta is not None or inner.is_of_maps:
        return False
    same = (
        meta.map_type == inner.map_type
        and meta.key_size == inner.key_size
        and meta.value_size == inner.value_size
        and meta.map_flags == inner.map_flags
    )
    if same and meta.map_type in ARRAY_TYPES and not meta.map_flags & BPF_F_INNER_MAP:
        return meta.max_entries == inner.max_entries
    return same


def inner_template(mdef: MapDef) -> BpfMap:
    """The template an outer map's inner maps must match (``bpf_map_meta_alloc``: a copy of
    the inner map's type, sizes, flags and max_entries; ENOTSUPP for a type without
    ``map_meta_equal``, EINVAL for a map-in-map inside a map-in-map)."""
    if mdef.map_type in OF_MAPS_TYPES:
        raise KernelError(Errno.EINVAL, f"map '{mdef.name}': multi-level inner maps not supported")
    if mdef.map_type in NO_META_EQUAL:
        raise KernelError(
            Errno.ENOTSUPP,
            f"map '{mdef.name}': {MapType(mdef.map_type).name.lower()} maps cannot be inner maps",
        )
    return BpfMap(mdef, 1)


def fill_init_slots(maps: list[BpfMap]) -> None:
    """libbpf's ``init_map_in_map_slots``: each outer map's initial ``.values`` put in its
    slots (``bpf_map_update_elem(outer, &i, &inner_fd, 0)``), by the inner maps' ids."""
    for m in maps:
        for slot, target in m.init_slots.items():
            try:
                m.update_inner(slot.to_bytes(m.key_size, "little"), maps[target])
            except KernelError as exc:
                raise KernelError(
                    exc.errno,
                    f"map '{m.name}': failed to initialize slot [{slot}] to map "
                    f"'{maps[target].name}': {exc.errno.strerror}",
                ) from None


def _hex_json(data: bytes) -> list[str]:
    return [f"0x{b:02x}" for b in data]


def fprint_hex(data: bytes) -> str:
    """bpftool's ``fprint_hex``: bytes in hex, two spaces every 8, a new line every 16."""
    out = []
    for i, b in enumerate(data):
        pfx = "" if i == 0 else "\n" if i % 16 == 0 else "  " if i % 8 == 0 else " "
        out.append(f"{pfx}{b:02x}")
    return "".join(out)


def _le_uint(rows: U8Array) -> npt.NDArray[np.uint64]:
    """Little-endian unsigned value of each row of up to 8 bytes."""
    padded = np.zeros((len(rows), 8), dtype=np.uint8)
    padded[:, : rows.shape[1]] = rows[:, :8]
    return padded.view("<u8").reshape(-1)


def _rows_as_void(rows: U8Array) -> npt.NDArray[np.void]:
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.shape[1]))).reshape(-1)


def _devmap_present(
    arena: U8Array, index: npt.NDArray[np.uint64], stride: int, n: int
) -> npt.NDArray[np.bool_]:
    safe = np.minimum(index, n - 1).astype(np.int64) * stride
    word = arena[safe[:, None] + np.arange(4)]
    return np.asarray(word.any(axis=1))


BPF_OBJ_NAME_LEN = 16


def kernel_map_name(obj_name: str, map_name: str) -> str:
    """The map's name as the kernel keeps it: libbpf's ``internal_map_name`` for global data
    (a prefix of the object's name, then ``.rodata`` / ``.data`` / ``.bss``), else the name
    cut to 15 characters."""
    if map_name.startswith("."):
        pfx = min(BPF_OBJ_NAME_LEN - len(map_name) - 1, len(obj_name))
        return (obj_name[: max(pfx, 0)] + map_name)[: BPF_OBJ_NAME_LEN - 1]
    return map_name[: BPF_OBJ_NAME_LEN - 1]
