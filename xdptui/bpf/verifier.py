"""Load-time checks (placeholder; replaced below)."""

from __future__ import annotations

from xdptui.bpf.objfile import BpfProgram


def check(prog: BpfProgram) -> None:
    """Refuse what the verifier would refuse and can be seen statically."""
