"""Values derived from one configuration, shared by every copy of the state.

A checkpoint or a fork deep-copies the simulator's state. What is a pure function of a
configuration -- compiled paths, flow classes, queue layouts, hashes -- is keyed by the world's
epoch (unique across copies, ``World.touch``) or by its inputs, so copies can share it instead
of duplicating megabytes of per-entry arrays.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import numpy as np

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

# values ``copy.deepcopy`` returns as they are: a field holding one is shared, not asked for
_ATOMIC = frozenset({int, float, bool, str, bytes, type(None), np.int64, np.float64, np.bool_})


class SharedCache(dict[K, V]):
    """A dict that ``copy.deepcopy`` shares instead of copying."""

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedCache[K, V]:
        return self


def deepcopy_fields(obj: T, memo: dict[int, Any]) -> T:
    """``copy.deepcopy`` of an object with a ``__dict__``, field by field, without asking it to
    copy each number or string (a state holds thousands of small objects: rings, queues,
    CPUs). Used as a class's ``__deepcopy__``."""
    cls = type(obj)
    new = cls.__new__(cls)
    memo[id(obj)] = new
    fields = dict(obj.__dict__)
    for k, v in fields.items():
        if type(v) not in _ATOMIC:
            fields[k] = copy.deepcopy(v, memo)
    new.__dict__.update(fields)
    return new
