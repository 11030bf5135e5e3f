"""Values derived from one configuration, shared by every copy of the state.

A checkpoint or a fork deep-copies the simulator's state. What is a pure function of a
configuration -- compiled paths, flow classes, queue layouts, hashes -- is keyed by the world's
epoch (unique across copies, ``World.touch``) or by its inputs, so copies can share it instead
of duplicating megabytes of per-entry arrays.
"""

from __future__ import annotations

from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SharedCache(dict[K, V]):
    """A dict that ``copy.deepcopy`` shares instead of copying."""

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedCache[K, V]:
        return self
