"""Compiled loops: a rule that must go poll by poll (NAPI's interrupts and polls) is written once,
as plain Python over NumPy arrays and integers, and compiled with numba the first time it runs.

``compile_functions(module, names)`` rebinds each named function of ``module`` to numba's
``njit`` of it (the caller decides when: ``xdptui.sim.fast_napi`` after its first 20,000
polls; compiled on its first call, cached on disk: next to the module, or in the
user's cache directory where the package is read-only), so compiled callers call compiled
callees and later runs load the machine code instead of compiling. numba is imported then, not
when the module is: the app's start does not pay for it. With ``XDPTUI_NO_JIT=1`` the functions
stay plain Python (slow, for debugging; the results are the same).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

_done: set[str] = set()


def compile_functions(
    module: ModuleType, names: tuple[str, ...], inline: tuple[str, ...] = (), nrt: bool = True
) -> None:
    """Compile ``module``'s functions ``names`` on their first call (once per process); those
    also in ``inline`` are compiled into their compiled callers (no call per poll).

    ``nrt=False``: compiled without numba's runtime, for functions that allocate nothing (the
    caller passes their scratch). With it, every array a compiled function hands another --
    inlined or not -- is reference counted with an atomic increment and decrement; in NAPI's
    loop that was over 40 % of its time (``perf record``: ``NRT_incref`` / ``NRT_decref``)."""
    if module.__name__ in _done or os.environ.get("XDPTUI_NO_JIT"):
        return
    import numba

    opts: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": nrt}
    for name in names:
        fn = getattr(module, name)
        if name in inline:
            setattr(module, name, numba.njit(inline="always", **opts)(fn))
        else:
            setattr(module, name, numba.njit(**opts)(fn))
    _done.add(module.__name__)


def compiled(module: ModuleType) -> bool:
    """Whether ``module``'s functions were compiled (its callers then pass arrays, not lists)."""
    return module.__name__ in _done
