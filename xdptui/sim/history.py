"""What a state remembers of its past -- the command log, the screen's log -- as append-only
sequences a copy shares, so a checkpoint (``copy.deepcopy`` of the state) costs the same after
ten commands or a million.

A :class:`Chain` keeps its items in sealed chunks of :data:`CHUNK` (immutable tuples, linked
newest first) and one open tail. Copying it copies the tail and shares every sealed chunk;
appending to one copy never changes what another holds, so a refused command or a rewind that
goes back to an earlier copy finds exactly what that copy had. ``keep``: only the newest that
many items (at least) are remembered; older chunks are let go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

CHUNK = 64  # items in a sealed chunk


class _Sealed(Generic[T]):
    """One sealed chunk and the chunk before it (None: the oldest kept)."""

    __slots__ = ("depth", "items", "older")

    def __init__(self, items: tuple[T, ...], older: _Sealed[T] | None) -> None:
        self.items = items
        self.older = older
        self.depth: int = 1 if older is None else older.depth + 1  # chunks down to the oldest kept


class Chain(Generic[T]):
    """An append-only sequence whose copies share everything but the newest ``CHUNK`` items;
    with ``keep``, only the newest ``keep`` (rounded up to a chunk) are kept."""

    __slots__ = ("_keep", "_sealed", "_tail")

    def __init__(self, keep: int | None = None) -> None:
        self._sealed: _Sealed[T] | None = None
        self._tail: list[T] = []
        self._keep = keep

    def append(self, item: T) -> None:
        self._tail.append(item)
        if len(self._tail) == CHUNK:
            self._sealed = _Sealed(tuple(self._tail), self._sealed)
            self._tail = []
            if self._keep is not None and self._sealed.depth > self._keep // CHUNK + 1:
                self._sealed = _relink(self._sealed, self._keep // CHUNK + 1)

    def __len__(self) -> int:
        """Items kept."""
        return len(self._tail) + CHUNK * (self._sealed.depth if self._sealed else 0)

    def __iter__(self) -> Iterator[T]:
        """Oldest first."""
        chunks: list[tuple[T, ...]] = []
        node = self._sealed
        while node is not None:
            chunks.append(node.items)
            node = node.older
        for items in reversed(chunks):
            yield from items
        yield from list(self._tail)

    def newest(self, n: int) -> tuple[T, ...]:
        """The newest ``n`` items kept, oldest first (walks only the chunks they are in)."""
        parts: list[tuple[T, ...]] = [tuple(self._tail)]
        have = len(self._tail)
        node = self._sealed
        while node is not None and have < n:
            parts.append(node.items)
            have += CHUNK
            node = node.older
        out = tuple(item for part in reversed(parts) for item in part)
        return out[max(0, len(out) - n) :]

    def __copy__(self) -> Chain[T]:
        other: Chain[T] = Chain(self._keep)
        other._sealed = self._sealed
        other._tail = list(self._tail)
        return other

    def __deepcopy__(self, memo: dict[int, Any]) -> Chain[T]:
        """Items are immutable values: a deep copy is a shallow one."""
        return self.__copy__()


def _relink(node: _Sealed[T], depth: int) -> _Sealed[T]:
    """The newest ``depth`` chunks of ``node``, linked anew (the older ones let go; the copies
    that still hold them keep them alive)."""
    newest: list[tuple[T, ...]] = []
    cursor: _Sealed[T] | None = node
    while cursor is not None and len(newest) < depth:
        newest.append(cursor.items)
        cursor = cursor.older
    head: _Sealed[T] | None = None
    for items in reversed(newest):
        head = _Sealed(items, head)
    assert head is not None
    return head


Input = tuple[int, int, str, str]  # when, its timer sequence number, kind, data


class Inputs:
    """The inputs logged for replay (user commands, mode switches, lesson steps), numbered
    from the first ever logged, in time order. Only those from :attr:`first` on are kept: the
    older ones came before every checkpoint a rewind can still restore."""

    __slots__ = ("_items", "first")

    def __init__(self, items: list[Input] | None = None, first: int = 0) -> None:
        self._items: list[Input] = items if items is not None else []
        self.first = first

    @property
    def count(self) -> int:
        """Inputs ever logged: the number the next one gets."""
        return self.first + len(self._items)

    @property
    def kept(self) -> int:
        return len(self._items)

    def __getitem__(self, number: int) -> Input:
        if number < self.first:
            raise IndexError(f"input {number} was forgotten (the oldest kept is {self.first})")
        return self._items[number - self.first]

    def __iter__(self) -> Iterator[Input]:
        """The kept ones, oldest first."""
        return iter(list(self._items))

    def last(self) -> Input | None:
        return self._items[-1] if self._items else None

    def append(self, item: Input) -> None:
        self._items.append(item)

    def truncate(self, count: int) -> None:
        """Forget the inputs numbered ``count`` and above (a future a new input replaces)."""
        del self._items[max(0, count - self.first) :]

    def forget_before(self, number: int) -> None:
        """Let go of the inputs numbered below ``number``."""
        drop = max(0, number - self.first)
        del self._items[:drop]
        self.first += drop

    def replaced(self, items: list[Input]) -> Inputs:
        """Another log numbered from the same first input, holding ``items``."""
        return Inputs(items, self.first)

    def copy(self) -> Inputs:
        return Inputs(list(self._items), self.first)
