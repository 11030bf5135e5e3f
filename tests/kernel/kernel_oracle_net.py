"""Kernel-oracle scenarios: built for real in a throwaway network namespace by
``netns_run.py`` (one ``unshare -nm`` process per scenario) with the programs of ``progs.c``.

``why_not()`` says why this machine cannot run them (the tests skip with that reason);
``kernel(name)`` runs one scenario and returns what the kernel counted, cached per session.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEEDED = ("clang", "bpftool", "ip", "ethtool", "unshare")


@functools.cache
def why_not() -> str | None:
    """None when the scenarios can run here, else the reason they cannot."""
    if os.uname().sysname != "Linux" or os.uname().machine != "x86_64":
        return "needs an x86_64 Linux kernel"
    if os.geteuid() != 0:
        return "needs root (network namespaces, BPF_PROG_LOAD)"
    missing = [tool for tool in NEEDED if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install clang bpftool ethtool iproute2)"
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        return "libbpf-dev is not installed (bpf/bpf_helpers.h)"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    res = subprocess.run(
        ["unshare", "-nm", "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb"],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        return f"cannot make a veth pair in a new namespace: {res.stderr.strip()}"
    try:
        obj()
    except RuntimeError as exc:
        return str(exc)
    return None


@functools.cache
def obj() -> Path:
    out = Path(tempfile.mkdtemp(prefix="xdptui-kernel-")) / "progs.o"
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-c", str(HERE / "progs.c")]
    res = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"clang progs.c failed: {res.stderr[-500:]}")
    return out


@functools.cache
def kernel(name: str) -> dict[str, Any]:
    """Run scenario ``name`` for real; its devices' counters (``ip -s link`` as rx_*/tx_*,
    ``ethtool -S`` as ``ethtool:NAME``) or what it returned."""
    res = subprocess.run(
        ["unshare", "-nm", "python3", str(HERE / "netns_run.py"), str(obj()), name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if res.returncode != 0:
        raise RuntimeError(f"scenario {name}: {res.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(res.stdout)
    return out
