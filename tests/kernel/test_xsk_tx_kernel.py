"""The machine's kernel as the oracle for AF_XDP's TX side in copy mode (``xsk_sendmsg`` ->
``__xsk_generic_xmit`` in net/xdp/xsk.c): the writer's loop of ``xsk_tx.c -W`` against a real
veth pair, and the simulator's writer (a source ``from:`` the socket) on the same set-up.

``xsk_tx -W BATCH -k KICKS`` does what xdptui's writer does, kick by kick: reap every
completion, put min(BATCH, room in the TX ring, chunks it owns) fresh descriptors on the TX
ring, one ``sendto``. The kernel sends at most 32 a call (``TX_BATCH_SIZE``; EAGAIN with
descriptors left), each after reserving a completion slot (none: EAGAIN), and ``veth_xmit``
frees each skb -- publishing its completion -- before ``sendto`` returns; a call that ends on
an empty TX ring counts ``tx_ring_empty_descs``. Every count is compared: frames sent, what
the TX and completion rings hold at the end, the EAGAIN answers, the descriptors never
written, ``tx_ring_empty_descs`` and both ends' link counters.

Skips with the reason where the machine cannot run it (not root, no gcc, no AF_XDP).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import topo

from xdptui.sim.engine import Simulator

HERE = Path(__file__).resolve().parent
AF_XDP = 44


@functools.cache
def why_not() -> str | None:
    if os.uname().sysname != "Linux":
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs root (a network namespace, AF_XDP)"
    if shutil.which("gcc") is None or shutil.which("unshare") is None:
        return "needs gcc and unshare"
    if not Path("/usr/include/linux/if_xdp.h").exists():
        return "no <linux/if_xdp.h> (apt-get install linux-libc-dev)"
    try:
        socket.socket(AF_XDP, socket.SOCK_RAW, 0).close()
    except OSError as exc:
        return f"no AF_XDP sockets in this kernel: {exc.strerror}"
    return None


pytestmark = pytest.mark.skipif(why_not() is not None, reason=f"kernel oracle: {why_not()}")


@functools.cache
def xsk_tx() -> Path:
    out = Path(tempfile.mkdtemp(prefix="xdptui-xsktx-")) / "xsk_tx"
    res = subprocess.run(
        ["gcc", "-O2", "-Wall", str(HERE / "xsk_tx.c"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"gcc xsk_tx.c failed: {res.stderr[-300:]}")
    return out


def kernel(batch: int, tx: int, comp: int, chunks: int, kicks: int) -> dict[str, Any]:
    """The writer loop on a fresh veth pair vs/vi (IPv6 off: no stray frames)."""
    script = (
        "sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1 && "
        "ip link add vs type veth peer name vi && ip link set vs up && ip link set vi up && "
        f"{xsk_tx()} -d vs -P vi -W {batch} -k {kicks} -t {tx} -C {comp} -F {chunks}"
    )
    res = subprocess.run(
        ["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=60
    )
    if res.returncode != 0:
        raise RuntimeError(f"xsk_tx: {res.stderr[-800:]}")
    line = next(x for x in res.stdout.splitlines() if x.startswith('{"writer"'))
    out: dict[str, Any] = json.loads(line)
    return out


SIM = """
name: xsk tx oracle
cpus: 2
devices:
  vs: {{type: veth, peer: vi}}
  vi: {{type: veth, peer: vs}}
  xsk0: {{type: xsk, dev: vs, queue: 0, frames: {frames}, fill: 2048, tx: {tx}, comp: {comp},
         batch: {batch}}}
traffic:
  - {{name: app, from: xsk0, rate: 1Mpps, size: 64}}
"""


def simulated(batch: int, tx: int, comp: int, chunks: int, kicks: int) -> dict[str, Any]:
    """The same loop in the simulator: the writer owns the chunks the fill ring did not get
    at bind; a kick every ``batch`` µs, the first at 1 ns."""
    src = SIM.format(batch=batch, tx=tx, comp=comp, frames=2048 + chunks)
    sim = Simulator(topo(src), exact=True)
    sim.run_until(1 + (kicks - 1) * batch * 1000)
    r: dict[str, Any] = sim.report()
    return r


@pytest.mark.parametrize(
    ("batch", "tx", "comp", "chunks", "kicks"),
    [
        (1, 2048, 2048, 2048, 50),
        (16, 2048, 2048, 2048, 20),
        (64, 256, 2048, 2048, 40),
        (32, 2048, 16, 2048, 20),
        (200, 512, 64, 2048, 20),
        (100, 2048, 2048, 52, 10),
    ],
    ids=["one-a-kick", "batch16", "budget", "comp16", "batch200", "few-chunks"],
)
def test_the_writer_loop_counts_what_the_kernel_counts(
    batch: int, tx: int, comp: int, chunks: int, kicks: int
) -> None:
    k = kernel(batch, tx, comp, chunks, kicks)
    r = simulated(batch, tx, comp, chunks, kicks)
    x = r["xsks"]["xsk0"]
    got = {
        "sent": x["counters"]["tx_packets"],
        "tx_ring": x["rings"]["tx"]["entries"],
        "comp_ring": x["rings"]["comp"]["entries"],
        "eagain": x["writer"]["eagain"],
        "not_written": x["writer"]["not_written"],
        "tx_ring_empty_descs": x["counters"]["tx_ring_empty_descs"],
        "vs_tx": r["devices"]["vs"]["counters"]["tx_packets"],
        "vi_rx": r["devices"]["vi"]["counters"]["rx_packets"],
    }
    want = {
        "sent": k["tx_cons"],
        "tx_ring": k["tx_prod"] - k["tx_cons"],
        "comp_ring": k["cq_prod"] - k["cq_cons"],
        "eagain": k["eagain"],
        "not_written": k["not_written"],
        "tx_ring_empty_descs": k["stats"]["tx_ring_empty_descs"],
        "vs_tx": k["dev"]["tx_packets"],
        "vi_rx": k["peer"]["rx_packets"],
    }
    assert got == want
    assert k["ebusy"] == 0 and k["stats"]["tx_invalid_descs"] == 0
