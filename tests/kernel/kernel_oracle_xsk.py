"""AF_XDP kernel-oracle scenarios: built for real in a throwaway network namespace by
``xsk_run.py`` (one ``unshare -nm`` process per scenario) with the XDP programs of
``xsk_progs.c`` and the AF_XDP socket of ``xsk_sock.c``.

``why_not()`` says why this machine cannot run them (the tests skip with that reason);
``kernel(name)`` runs one scenario and returns what the kernel counted, cached per session.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import kernel_oracle_net

HERE = Path(__file__).resolve().parent
AF_XDP = 44


@functools.cache
def why_not() -> str | None:
    """None when the scenarios can run here, else the reason they cannot."""
    if (why := kernel_oracle_net.why_not()) is not None:
        return why
    if not Path("/usr/include/linux/if_xdp.h").exists():
        return "no <linux/if_xdp.h> (apt-get install linux-libc-dev)"
    if "\ttracefs\n" not in Path("/proc/filesystems").read_text():
        return "no tracefs (xdp:xdp_redirect_err is read from a tracefs instance)"
    try:
        socket.socket(AF_XDP, socket.SOCK_RAW, 0).close()
    except OSError as exc:
        return f"no AF_XDP sockets in this kernel (CONFIG_XDP_SOCKETS): {exc.strerror}"
    try:
        built()
    except RuntimeError as exc:
        return str(exc)
    return None


@functools.cache
def built() -> tuple[Path, Path]:
    """``xsk_progs.c`` as a BPF object and ``xsk_sock.c`` as a program, in a new temp dir."""
    out = Path(tempfile.mkdtemp(prefix="xdptui-xsk-"))
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    cmds = {
        "xsk_progs.c": ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-c"],
        "xsk_sock.c": ["clang", "-O2", "-Wall"],
    }
    paths = []
    for src, cmd in cmds.items():
        dst = out / src.replace(".c", ".o" if "-c" in cmd else "")
        res = subprocess.run(
            [*cmd, str(HERE / src), "-o", str(dst)], capture_output=True, text=True
        )
        if res.returncode != 0:
            raise RuntimeError(f"clang {src} failed: {res.stderr[-500:]}")
        paths.append(dst)
    return paths[0], paths[1]


@functools.cache
def kernel(name: str) -> dict[str, Any]:
    """Run scenario ``name`` for real: the socket's statistics (``xsk``), x_xsk's redirects and
    redirect errors (by errno), the frames the stack saw on vs, and the veth pair's counters
    (``ip -s link`` as rx_*/tx_*, ``ethtool -S`` as ``ethtool:NAME``)."""
    obj, sock = built()
    res = subprocess.run(
        ["unshare", "-nm", "python3", str(HERE / "xsk_run.py"), str(obj), str(sock), name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if res.returncode != 0:
        raise RuntimeError(f"scenario {name}: {res.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(res.stdout)
    return out
