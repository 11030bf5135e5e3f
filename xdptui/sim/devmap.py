"""BPF_MAP_TYPE_DEVMAP / DEVMAP_HASH (``kernel/bpf/devmap.c``, seed devmap-prog-on-flush.txt).

A map holds entries key -> (device, optional egress program). Update and delete follow
``dev_map_update_elem`` / ``dev_map_hash_update_elem`` / ``dev_map_delete_elem`` with their
errors; lookups are what ``bpf_redirect_map`` does; ``broadcast_targets`` is
``dev_map_enqueue_multi``'s walk (index order for DEVMAP, bucket order for DEVMAP_HASH).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdptui.model.errors import Errno, KernelError
from xdptui.sim.kconst import BPF_ANY, BPF_EXIST, BPF_NOEXIST
from xdptui.sim.programs import Program


@dataclass
class DevmapEntry:
    dev: str
    egress: Program | None = None


@dataclass
class DevMap:
    name: str
    type: str  # devmap | devmap_hash
    max_entries: int
    map_id: int
    entries: dict[int, DevmapEntry] = field(default_factory=dict)

    @property
    def n_buckets(self) -> int:
        """``roundup_pow_of_two(max_entries)`` (DEVMAP_HASH)."""
        n = 1
        while n < self.max_entries:
            n <<= 1
        return n

    def update(self, key: int, entry: DevmapEntry, flags: int = BPF_ANY) -> None:
        """``dev_map_update_elem`` / ``__dev_map_hash_update_elem`` checks, in order."""
        if flags > BPF_EXIST:
            raise KernelError(Errno.EINVAL, "")
        if self.type == "devmap":
            if not 0 <= key < self.max_entries:
                raise KernelError(Errno.E2BIG, "")
            if flags == BPF_NOEXIST:
                raise KernelError(Errno.EEXIST, "")  # array slots always exist
        else:
            present = key in self.entries
            if flags == BPF_NOEXIST and present:
                raise KernelError(Errno.EEXIST, "")
            if flags == BPF_EXIST and not present:
                raise KernelError(Errno.ENOENT, "")
            if not present and len(self.entries) >= self.max_entries:
                raise KernelError(Errno.E2BIG, "")
        self.entries[key] = entry

    def delete(self, key: int) -> None:
        """``dev_map_delete_elem``: out of range -> EINVAL, empty slot -> 0; hash: missing ->
        ENOENT."""
        if self.type == "devmap":
            if not 0 <= key < self.max_entries:
                raise KernelError(Errno.EINVAL, "")
            self.entries.pop(key, None)
            return
        if key not in self.entries:
            raise KernelError(Errno.ENOENT, "")
        del self.entries[key]

    def lookup(self, key: int) -> DevmapEntry | None:
        return self.entries.get(key)

    def walk(self) -> list[tuple[int, DevmapEntry]]:
        """Entries in ``dev_map_enqueue_multi`` order: slot order, or bucket order (key &
        (n_buckets - 1), insertion order inside a bucket) for DEVMAP_HASH."""
        if self.type == "devmap":
            return sorted(self.entries.items())
        mask = self.n_buckets - 1
        return sorted(self.entries.items(), key=lambda kv: kv[0] & mask)
