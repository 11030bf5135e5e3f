"""A loaded object: its programs, maps and license (what ``bpf_object__open()`` gives).

``load_object()`` lives in ``elf``; this module holds the values it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xdptui.bpf.isa import Insn
from xdptui.bpf.maps import BpfMap
from xdptui.model.errors import Errno, KernelError


@dataclass
class BpfProgram:
    """One program, linked: its own instructions followed by the ``.text`` subprograms, every
    map reference resolved to a map handle or value pointer (``ld_imm64.imm64``). A program
    is data: ``xdptui.bpf.vm.run_batch`` runs it."""

    name: str
    section: str
    insns: list[Insn]
    maps: list[BpfMap]  # the object's maps, indexed as the handles and regions number them
    license: str
    expected_attach_type: str = "xdp"  # "xdp", "xdp/devmap" (egress) or "xdp/cpumap"
    frags: bool = False
    _compiled: Any = field(default=None, repr=False)


@dataclass
class BpfObject:
    """An ELF object's programs (by name), maps (by name) and license."""

    path: str
    programs: dict[str, BpfProgram]
    maps: dict[str, BpfMap]
    license: str
    # Programs present but not runnable here, with the reason (e.g. not XDP), and the errno
    # of those the loader refused (EINVAL when not given).
    skipped: dict[str, str] = field(default_factory=dict)
    skipped_errno: dict[str, Errno] = field(default_factory=dict)

    def program(self, name: str | None = None) -> BpfProgram:
        """A program by function name or section name; the first XDP program without one."""
        if name is None:
            if not self.programs:
                why = "; ".join(f"{k}: {v}" for k, v in self.skipped.items())
                raise KernelError(
                    Errno.ENOENT, f"{self.path}: no XDP program" + (f" ({why})" if why else "")
                )
            return next(iter(self.programs.values()))
        if name in self.programs:
            return self.programs[name]
        for prog in self.programs.values():
            if prog.section == name:
                return prog
        if name in self.skipped:
            errno = self.skipped_errno.get(name, Errno.EINVAL)
            raise KernelError(errno, f"{name}: {self.skipped[name]}")
        raise KernelError(Errno.ENOENT, f"{self.path}: no program or section '{name}'")
