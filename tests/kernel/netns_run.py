"""Runs one kernel-oracle scenario for real and prints what the kernel counted, as JSON.

Started by ``oracle.py`` as ``unshare -nm python3 netns_run.py OBJ SCENARIO``: the network
namespace is new and empty, the mount namespace private (bpffs mounted fresh), so nothing here
outlives the process. Devices are veth pairs and taps; programs come from ``progs.c``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable

SYS_BPF = 321  # x86_64
BPF_MAP_UPDATE_ELEM, BPF_OBJ_GET = 2, 7
PIN = "/sys/fs/bpf/o"
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000
VNET_HDR = bytes(10)  # struct virtio_net_hdr, no GSO (TUNSETVNETHDRSZ left at its default 10)

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long


def bpf(cmd: int, attr: bytearray) -> int:
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    ret = _libc.syscall(SYS_BPF, cmd, buf, len(attr))
    if ret < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return int(ret)


def obj_get(path: str) -> int:
    name = ctypes.create_string_buffer(path.encode())
    attr = bytearray(16)
    struct.pack_into("<Q", attr, 0, ctypes.addressof(name))
    return bpf(BPF_OBJ_GET, attr)


def sh(*cmd: str) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return res.stdout


def ifindex(dev: str) -> int:
    return socket.if_nametoindex(dev)


def veth(a: str, b: str) -> None:
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    sh("ip", "link", "set", a, "up")
    sh("ip", "link", "set", b, "up")


def attach(dev: str, prog: str, mode: str = "xdpdrv") -> None:
    sh("bpftool", "net", "attach", mode, "pinned", f"{PIN}/{prog}", "dev", dev)


def dm_update(
    key: int, dev: str, egress: str | None = None, m: str = "dm", flags: int = 0, ifx: int = 0
) -> str:
    """BPF_MAP_UPDATE_ELEM of a ``struct bpf_devmap_val``; returns the errno name or ''."""
    fd = obj_get(f"{PIN}/maps/{m}")
    pfd = obj_get(f"{PIN}/{egress}") if egress else -1
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    v = ctypes.create_string_buffer(struct.pack("<Ii", ifindex(dev) if dev else ifx, pfd), 8)
    attr = bytearray(32)
    struct.pack_into("<IIQQQ", attr, 0, fd, 0, ctypes.addressof(k), ctypes.addressof(v), flags)
    try:
        bpf(BPF_MAP_UPDATE_ELEM, attr)
        return ""
    except OSError as exc:
        import errno

        return errno.errorcode[exc.errno]
    finally:
        os.close(fd)
        if pfd >= 0:
            os.close(pfd)


def frame(i: int, size: int) -> bytes:
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    return eth + struct.pack("<I", i) + bytes(max(0, size - 18))


def send(dev: str, n: int, size: int = 64) -> None:
    """n frames out of ``dev`` from the stack (AF_PACKET: dev_queue_xmit -> veth_xmit)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    for i in range(n):
        s.send(frame(i, size))
        if i % 32 == 31:
            time.sleep(0.001)  # let the peer's NAPI drain its 256-slot ring
    s.close()
    time.sleep(0.05)


def stats(dev: str) -> dict[str, int]:
    """``ip -s link`` counters and ``ethtool -S`` of one device."""
    link = json.loads(sh("ip", "-j", "-s", "link", "show", "dev", dev))[0]["stats64"]
    out = {f"rx_{k}": v for k, v in link["rx"].items()} | {
        f"tx_{k}": v for k, v in link["tx"].items()
    }
    try:
        text = sh("ethtool", "-S", dev)
    except RuntimeError:
        return out
    for line in text.splitlines()[1:]:
        key, _, val = line.strip().rpartition(":")
        if key and val.strip().lstrip("-").isdigit():
            out[f"ethtool:{key.strip()}"] = int(val)
    return out


def tap(name: str, nonblock: bool, vnet: bool = False) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | (os.O_NONBLOCK if nonblock else 0))
    flags = IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if vnet else 0)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), flags))
    sh("ip", "link", "set", name, "up")
    return fd


# ------------------------------------------------------------------ scenarios


def veth_xdp_tx(peer_prog: str | None) -> dict[str, object]:
    """va runs x_tx; 100 frames sent out of vb arrive on va and are bounced to vb."""
    veth("va", "vb")
    attach("va", "x_tx")
    if peer_prog:
        attach("vb", peer_prog)
    send("vb", 100)
    return {"va": stats("va"), "vb": stats("vb")}


def redirect_into_veth(peer_prog: str | None, peer_up: bool = True) -> dict[str, object]:
    """vs runs x_redir (dm[0] = va); 100 frames sent out of vi arrive on vs; va's peer vb has
    ``peer_prog``."""
    veth("vi", "vs")
    veth("va", "vb")
    attach("vs", "x_redir")
    if peer_prog:
        attach("vb", peer_prog)
    if not peer_up:
        sh("ip", "link", "set", "vb", "down")
    err = dm_update(0, "va")
    send("vi", 100)
    return {"update": err, "vs": stats("vs"), "va": stats("va"), "vb": stats("vb")}


def egress_verdict(egress: str) -> dict[str, object]:
    """As redirect_into_veth with a program on vb, and dm[0] carrying an egress program."""
    veth("vi", "vs")
    veth("va", "vb")
    attach("vs", "x_redir")
    attach("vb", "x_pass")
    err = dm_update(0, "va", egress)
    send("vi", 100)
    return {"update": err, "vs": stats("vs"), "va": stats("va"), "vb": stats("vb")}


def broadcast() -> dict[str, object]:
    """Three pairs; vs (ingress) runs x_bcast over dm = {vs, va, vc}: exclude-ingress leaves
    va and vc; their peers vb and vd run x_pass."""
    veth("vi", "vs")
    veth("va", "vb")
    veth("vc", "vd")
    attach("vs", "x_bcast")
    attach("vb", "x_pass")
    attach("vd", "x_pass")
    errs = [dm_update(0, "vs"), dm_update(1, "va"), dm_update(2, "vc")]
    send("vi", 100)
    return {"update": errs, **{d: stats(d) for d in ("vs", "va", "vb", "vc", "vd")}}


def update_errors() -> dict[str, object]:
    """Map updates the kernel refuses, in the order its checks run."""
    veth("va", "vb")
    return {
        "dm key out of range": dm_update(8, "va"),
        "dm BPF_NOEXIST": dm_update(8, "va", flags=1),
        "dm ok": dm_update(0, "va"),
        "dm ifindex 0 (an empty slot)": dm_update(1, ""),
        "dm no such ifindex": dm_update(1, "", ifx=9999),
        "dm BPF_NOEXIST on a used slot": dm_update(0, "va", flags=1),
        "dm bad flags": dm_update(0, "va", flags=4),
        "dm egress is not a devmap program": dm_update(2, "va", "x_pass"),
        "dm key out of range with a bad egress": dm_update(9, "va", "x_pass"),
        "dmh ok": dm_update(100, "va", m="dmh"),
        "dmh BPF_EXIST on a new key": dm_update(101, "va", m="dmh", flags=2),
        "dmh BPF_NOEXIST on a used key": dm_update(100, "va", m="dmh", flags=1),
    }


def generic_on_veth(prog: str) -> dict[str, object]:
    """va runs ``prog`` as generic XDP; 100 frames sent out of vb."""
    veth("va", "vb")
    attach("va", prog, "xdpgeneric")
    send("vb", 100)
    return {"va": stats("va"), "vb": stats("vb")}


def tap_writes(
    prog: str, nonblock: bool, size: int, mode: str = "xdpdrv", vnet: bool = False
) -> dict[str, object]:
    """100 writes of ``size``-byte frames through /dev/net/tun into tap0 running ``prog``
    (x_redir: dm[0] is va, a veth whose peer has no program)."""
    fd = tap("tap0", nonblock, vnet)
    if prog == "x_redir":
        veth("va", "vb")
        dm_update(0, "va")
    attach("tap0", prog, mode)
    for i in range(100):
        os.write(fd, (VNET_HDR if vnet else b"") + frame(i, size))
    time.sleep(0.02)
    out = {"tap0": stats("tap0")}
    os.close(fd)
    return out


SCENARIOS: dict[str, Callable[[], dict[str, object]]] = {
    "veth_tx_no_peer_prog": lambda: veth_xdp_tx(None),
    "veth_tx_peer_pass": lambda: veth_xdp_tx("x_pass"),
    "redirect_veth_peer_prog": lambda: redirect_into_veth("x_drop"),
    "redirect_veth_no_peer_prog": lambda: redirect_into_veth(None),
    "redirect_veth_peer_down": lambda: redirect_into_veth("x_drop", peer_up=False),
    "egress_drop": lambda: egress_verdict("e_drop"),
    "egress_pass": lambda: egress_verdict("e_pass"),
    "egress_abort": lambda: egress_verdict("e_abort"),
    "broadcast_exclude_ingress": broadcast,
    "update_errors": update_errors,
    "generic_veth_drop": lambda: generic_on_veth("x_drop"),
    "generic_veth_tx": lambda: generic_on_veth("x_tx"),
    "tap_fast_drop": lambda: tap_writes("x_drop", True, 64),
    "tap_fast_drop_at_limit": lambda: tap_writes("x_drop", True, 3456),
    "tap_slow_drop_above_limit": lambda: tap_writes("x_drop", True, 3457),
    "tap_vnet_fast_drop_at_limit": lambda: tap_writes("x_drop", True, 3456, vnet=True),
    "tap_vnet_slow_drop_above_limit": lambda: tap_writes("x_drop", True, 3457, vnet=True),
    "tap_slow_drop_blocking": lambda: tap_writes("x_drop", False, 64),
    "tap_fast_pass": lambda: tap_writes("x_pass", True, 64),
    "tap_fast_tx": lambda: tap_writes("x_tx", True, 64),
    "tap_fast_abort": lambda: tap_writes("x_abort", True, 64),
    "tap_fast_redirect_err": lambda: tap_writes("x_redir", True, 64),
    "tap_generic_drop": lambda: tap_writes("x_drop", True, 64, "xdpgeneric"),
}


def main() -> None:
    obj, name = sys.argv[1], sys.argv[2]
    os.makedirs("/sys/fs/bpf", exist_ok=True)
    sh("mount", "-t", "bpf", "bpf", "/sys/fs/bpf")
    for key in ("all", "default"):  # no router solicitations or MLD reports in the counts
        with open(f"/proc/sys/net/ipv6/conf/{key}/disable_ipv6", "w") as f:
            f.write("1")
    sh("bpftool", "prog", "loadall", obj, PIN, "pinmaps", f"{PIN}/maps")
    print(json.dumps(SCENARIOS[name]()))


if __name__ == "__main__":
    main()
