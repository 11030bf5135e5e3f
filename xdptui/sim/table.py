"""State as columns: many objects of one kind (a device's RX queues, its TX rings, the CPUs)
kept as a table, one list per field, and each object a handle on its row.

A checkpoint copies a table's columns -- a list copy per field -- and makes new handles in
one pass, instead of copying every object field by field. Code reads and writes a handle's
fields as attributes (``Field`` is the descriptor). What a row owns that is itself mutable (a
ring's FIFO, a CPU's poll list) is a slot of the handle (``Row.OWN``), copied by its own rule
with the table.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, TypeVar, cast, overload

T = TypeVar("T")
R = TypeVar("R", bound="Row")


class Field(Generic[T]):
    """One column of a ``Row`` class, with the value a new row takes. Reading one is a
    Python call (about 0.1 us); hot code reads a table's columns whole."""

    __slots__ = ("default", "k", "name")

    def __init__(self, default: T) -> None:
        self.default = default
        self.name = ""
        self.k = -1  # its column's position in the table

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Field[T]: ...

    @overload
    def __get__(self, obj: Row, owner: type[Any]) -> T: ...

    def __get__(self, obj: Any, owner: type[Any]) -> Any:
        if obj is None:
            return self  # the field itself: ``Table.column(RxQueue.polls)``
        return obj.c[self.k][obj.i]

    def __set__(self, obj: Row, value: T) -> None:
        obj.c[self.k][obj.i] = value


class Row:
    """A handle on one row of a ``Table``: ``t`` the table, ``c`` its columns, ``i`` the row.
    Subclasses declare their columns as ``Field``s, and in ``OWN`` the slots that hold what a
    row owns, each with the function that copies it (``fresh`` makes them for a new row)."""

    __slots__ = ("c", "i", "index", "t")
    c: list[list[Any]]
    FIELDS: ClassVar[tuple[Field[Any], ...]] = ()
    OWN: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        assert not cls.FIELDS, "a Row class with fields is not subclassed"
        cls.FIELDS = tuple(f for f in vars(cls).values() if isinstance(f, Field))
        for k, f in enumerate(cls.FIELDS):
            f.k = k

    def __init__(self, t: Table[Any], i: int) -> None:
        self.t = t
        self.c = t.cols
        self.i = i
        self.index = i  # its number where the kernel numbers them (a queue, a ring, a CPU)

    def fresh(self) -> dict[str, Any]:
        """The owned slots' values of a new row."""
        return {}

    def __deepcopy__(self, memo: dict[int, Any]) -> Row:
        copy.deepcopy(self.t, memo)  # makes and registers every row's new handle
        return cast(Row, memo[id(self)])

    def __repr__(self) -> str:
        cols = ", ".join(f"{f.name}={self.c[f.k][self.i]!r}" for f in self.FIELDS)
        return f"{type(self).__name__}(index={self.index}, {cols})"


class Table(list[R], Generic[R]):
    """Rows of one ``Row`` class: a list of handles (index, slice and iterate it as a list)
    over one list per field. Built by ``Table.of(kind, rows)``; a row may be added
    (``add_row``: a bulk queue's first frame), never removed: a new shape is a new table."""

    kind: type[R]
    cols: list[list[Any]]  # a column per field, in ``kind.FIELDS``' order

    def column(self, f: Field[T]) -> list[T]:
        """The column of field ``f`` (``RxQueue.polls``): read it whole, write it in place."""
        return cast(list[T], self.cols[f.k])

    @classmethod
    def of(cls, kind: type[R], rows: Iterable[dict[str, Any]]) -> Table[R]:
        """A table of ``kind`` whose rows take ``rows``' values (by field or slot name; the
        fields' defaults and ``fresh`` for the rest)."""
        t: Table[R] = cls()
        t.kind = kind
        t.cols = [[] for _ in kind.FIELDS]
        for values in rows:
            t.add_row(values)
        return t

    def add_row(self, values: dict[str, Any]) -> R:
        """A new last row with ``values`` (by field or slot name; the fields' defaults and
        ``fresh`` for the rest); returns its handle."""
        kind = self.kind
        handle = kind(self, len(self))
        values = {**handle.fresh(), **values}
        for f in kind.FIELDS:
            self.cols[f.k].append(values.get(f.name, f.default))
        for name, _ in kind.OWN:
            setattr(handle, name, values[name])
        handle.index = values.get("index", handle.i)
        self.append(handle)
        return handle

    def adopt(self, i: int, row: R) -> None:
        """``row`` (a handle of another table) becomes row ``i`` of this one, its values
        replacing the row's: one object that outlives a re-shape keeps its identity."""
        for k, col in enumerate(self.cols):
            col[i] = row.c[k][row.i]
        row.t, row.c, row.i = self, self.cols, i
        self[i] = row

    def __deepcopy__(self, memo: dict[int, Any]) -> Table[R]:
        new: Table[R] = Table()
        memo[id(self)] = new
        new.kind = kind = self.kind
        new.cols = [col.copy() for col in self.cols]
        own = kind.OWN
        for i, old in enumerate(self):
            handle = kind(new, i)
            handle.index = old.index
            for name, copier in own:
                setattr(handle, name, copier(getattr(old, name)))
            memo[id(old)] = handle
            new.append(handle)
        return new
