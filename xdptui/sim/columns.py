"""Per-entry columns that hold one value everywhere take no memory: a read-only view of that
value with stride 0 (``np.broadcast_to``). Most compiled columns are constant on most devices
(every entry passes, none redirects), and a flow table of a million entries would otherwise
pay eight bytes per entry per column per device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

A = TypeVar("A", bound=npt.NDArray[Any])


def once(col: npt.NDArray[Any]) -> bool:
    """Whether a per-entry column holds one value, stored once (stride 0: ``filled``)."""
    return col.ndim == 1 and len(col) > 1 and col.strides[0] == 0


def joined(parts: list[npt.NDArray[Any]], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """Columns end to end as ``dtype``: one value without storage when every part holds that
    one value (a header field every source keeps constant), else each part written into its
    slice (no concatenation in the parts' own type to convert after)."""
    n = sum(len(p) for p in parts)
    heads = {np.asarray(p[:1], dtype).tobytes() for p in parts if len(p)}
    if len(heads) <= 1 and all(len(p) <= 1 or once(p) for p in parts):
        first = next((p[0] for p in parts if len(p)), 0)
        return filled(n, first, dtype)
    out = np.empty(n, dtype)
    at = 0
    for p in parts:
        out[at : at + len(p)] = p
        at += len(p)
    return out


def filled(n: int, value: Any, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """``n`` copies of ``value``, read-only and without storage."""
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


def compact(col: A) -> A:
    """``col`` itself, or its one value without storage when every entry holds it; read-only
    either way (nothing writes a compiled column after its compile)."""
    if col.ndim == 1 and len(col) > 1 and col.strides[0] != 0:
        first = col[0]
        if bool(np.all(col == first)):
            out: A = np.broadcast_to(col[:1].copy(), col.shape)  # type: ignore[assignment]
            return out
    if col.flags.writeable and col.base is None:
        col.flags.writeable = False
    return col


def owned(value: npt.ArrayLike, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """``value`` as a read-only array of ``dtype`` nobody else can change: a read-only array
    of that dtype is shared (this project never writes one), anything else copied; one value
    everywhere is stored once."""
    arr = np.asarray(value, dtype=dtype)
    if once(arr):
        return filled(len(arr), arr[0], dtype)
    if arr is value and arr.flags.writeable:
        arr = arr.copy()
    return compact(arr)


def narrow(col: A) -> A:
    """An integer column whose values fit in 8 bits as int8 (a program's verdicts: one byte
    per entry, not eight), read-only; anything else as it is."""
    if col.dtype.kind != "i" or col.itemsize == 1 or not len(col) or not col.strides[0]:
        return col
    lo, hi = int(col.min()), int(col.max())
    if lo < -128 or hi > 127:
        return col
    out: A = col.astype(np.int8)  # type: ignore[assignment]
    out.flags.writeable = False
    return out


def values(col: A) -> A:
    """The distinct values of a per-entry column, sorted; one read where it holds one value."""
    if once(col):
        one: A = col[:1]  # type: ignore[assignment]
        return one
    out: A = np.unique(col)  # type: ignore[assignment]
    return out


def holds(col: npt.NDArray[Any], value: Any) -> bool:
    """Whether any entry of a per-entry column holds ``value``; one read where it holds one
    value."""
    if once(col):
        return bool(col[0] == value)
    return bool((col == value).any())


def each(f: Callable[..., npt.NDArray[Any]], *cols: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``f`` entry by entry over per-entry columns, kept as ``compact`` keeps a column; where
    every column holds one value, ``f`` runs on one entry."""
    n = len(cols[0])
    if all(once(c) for c in cols):
        one = f(*(c[:1] for c in cols))
        return filled(n, one[0], one.dtype)
    return compact(f(*cols))


# each entry's flow class (``classes.FlowClasses.of_entry``: int8 while they fit)
ClassIds = npt.NDArray[np.signedinteger[Any]]
