"""Runs one kernel-oracle scenario for real and prints what the kernel counted, as JSON.

Started by ``oracle.py`` as ``unshare -nm python3 netns_run.py OBJ SCENARIO``: the network
namespace is new and empty, the mount namespace private (bpffs mounted fresh), so nothing here
outlives the process. Devices are veth pairs and taps; programs come from ``progs.c``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

SYS_BPF = 321  # x86_64
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM, BPF_OBJ_GET = 0, 1, 2, 7
BPF_PROG_TEST_RUN, BPF_F_TEST_XDP_LIVE_FRAMES = 10, 2
BPF_MAP_TYPE_CPUMAP = 16
TRACEFS = "/sys/kernel/tracing"
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


def udp_frame(i: int, size: int) -> bytes:
    """An IPv4/UDP frame of ``size`` bytes from 10.0.0.1:1024 to 10.0.0.2, even ones to port 9
    and odd ones to port 10 (c_drop_udp9 drops half); the MACs are frame()'s."""
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    addrs = bytes([10, 0, 0, 1, 10, 0, 0, 2])
    ip = struct.pack("!BBHHHBBH8s", 0x45, 0, size - 14, i, 0, 64, 17, 0, addrs)
    csum = sum(struct.unpack("!10H", ip))
    csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~(csum + (csum >> 16)) & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 1024, 9 if i % 2 == 0 else 10, size - 34, 0)
    return eth + ip + udp + bytes(size - 42)


def send(dev: str, n: int, size: int = 64, make: Callable[[int, int], bytes] = frame) -> None:
    """n frames out of ``dev`` from the stack (AF_PACKET: dev_queue_xmit -> veth_xmit)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    for i in range(n):
        s.send(make(i, size))
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


def prog_id(prog: str) -> int:
    return int(json.loads(sh("bpftool", "-j", "prog", "show", "pinned", f"{PIN}/{prog}"))["id"])


def map_id(m: str) -> int:
    return int(json.loads(sh("bpftool", "-j", "map", "show", "pinned", f"{PIN}/maps/{m}"))["id"])


def cm_create(max_entries: int, value_size: int = 8) -> tuple[int, str]:
    """BPF_MAP_CREATE of a cpumap (key 4 bytes): its fd, or -1 and the errno name."""
    attr = bytearray(72)
    struct.pack_into("<IIIII", attr, 0, BPF_MAP_TYPE_CPUMAP, 4, value_size, max_entries, 0)
    try:
        return bpf(BPF_MAP_CREATE, attr), ""
    except OSError as exc:
        return -1, errno.errorcode[exc.errno]


def cm_update(fd: int, key: int, qsize: int, prog: str | None = None, flags: int = 0) -> str:
    """BPF_MAP_UPDATE_ELEM of a ``struct bpf_cpumap_val`` {qsize, bpf_prog.fd} (``prog`` pinned,
    else fd -1: no program) into the cpumap ``fd``; returns the errno name or ''. A map of
    value size 4 reads only qsize (cpu_map_update_elem copies map->value_size bytes)."""
    pfd = obj_get(f"{PIN}/{prog}") if prog else -1
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    v = ctypes.create_string_buffer(struct.pack("<Ii", qsize, pfd), 8)
    attr = bytearray(32)
    struct.pack_into("<IIQQQ", attr, 0, fd, 0, ctypes.addressof(k), ctypes.addressof(v), flags)
    try:
        bpf(BPF_MAP_UPDATE_ELEM, attr)
        return ""
    except OSError as exc:
        return errno.errorcode[exc.errno]
    finally:
        if pfd >= 0:
            os.close(pfd)


def cm_lookup(fd: int, key: int, value_size: int = 8) -> str:
    """BPF_MAP_LOOKUP_ELEM on the cpumap ``fd``: ``qsize=N`` (and ``prog=NAME`` when the entry
    has a program: cpu_map_lookup_elem gives its id, named here by the pinned programs), or the
    errno name."""
    k = ctypes.create_string_buffer(struct.pack("<I", key), 4)
    v = ctypes.create_string_buffer(8)
    attr = bytearray(32)
    struct.pack_into("<IIQQQ", attr, 0, fd, 0, ctypes.addressof(k), ctypes.addressof(v), 0)
    try:
        bpf(BPF_MAP_LOOKUP_ELEM, attr)
    except OSError as exc:
        return errno.errorcode[exc.errno]
    qsize, pid = struct.unpack("<II", v.raw)
    if value_size == 4 or pid == 0:
        return f"qsize={qsize}"
    names = {prog_id(p): p for p in ("c_pass", "c_drop_udp9")}
    return f"qsize={qsize} prog={names.get(pid, pid)}"


Event = tuple[str, dict[str, str]]


@contextlib.contextmanager
def tracing(*events: str) -> Iterator[Callable[[], list[Event]]]:
    """The ``xdp`` tracepoints ``events`` recorded in a tracefs instance of this process's own
    (its own ring buffer and enables: nothing else tracing on the machine is touched); yields a
    reader of what was recorded so far: (event, its printk fields) in time order."""
    if not os.path.isdir(f"{TRACEFS}/instances"):
        sh("mount", "-t", "tracefs", "nodev", TRACEFS)  # the private mount namespace only
    inst = f"{TRACEFS}/instances/xdptui-{os.getpid()}"
    os.mkdir(inst)
    line = re.compile(r"\s(xdp_\w+): (.*)$")

    def read() -> list[Event]:
        with open(f"{inst}/trace") as f:
            hits = [m.groups() for m in map(line.search, f) if m]
        return [(ev, dict(re.findall(r"(\w+)=(\S+)", rest))) for ev, rest in hits]

    try:
        for ev in events:
            with open(f"{inst}/events/xdp/{ev}/enable", "w") as f:
                f.write("1")
        yield read
    finally:
        for ev in events:
            with open(f"{inst}/events/xdp/{ev}/enable", "w") as f:
                f.write("0")
        os.rmdir(inst)


CPUMAP_EVENTS = ("xdp_cpumap_enqueue", "xdp_cpumap_kthread", "xdp_exception")
# Each event's row: the fields that key it, and the fields summed over its hits.
ROWS = {
    "xdp_cpumap_enqueue": (("cpu", "to_cpu"), ("processed", "drops")),
    "xdp_cpumap_kthread": (
        ("cpu",),
        ("processed", "drops", "sched", "xdp_pass", "xdp_drop", "xdp_redirect"),
    ),
    "xdp_exception": (("action", "dev"), ()),
}


def rows(events: list[Event], ev: str) -> list[dict[str, int | str]]:
    """Hits of ``ev`` summed per row as the simulator reports them, with their number
    (``hits``): xdp_cpumap_enqueue (bq_flush_to_queue: one hit per bulk moved to the ptr_ring)
    per (cpu, to_cpu); xdp_cpumap_kthread (cpu_map_kthread_run: one hit per batch of at most
    CPUMAP_BATCH frames taken off the ring) per cpu; xdp_exception per action and device."""
    keys, fields = ROWS[ev]
    out: dict[tuple[str, ...], dict[str, int | str]] = {}
    for name, f in events:
        if name != ev:
            continue
        key = tuple(f[k] for k in keys)
        first = {k: int(v) if v.isdigit() else v for k, v in zip(keys, key, strict=True)}
        row = out.setdefault(key, first | dict.fromkeys((*fields, "hits"), 0))
        for k in fields:
            row[k] = int(row[k]) + int(f[k])
        row["hits"] = int(row["hits"]) + 1
    return list(out.values())


def cpumap_trace(events: list[Event], mid: int, pid: int) -> dict[str, object]:
    """The rows of the events of cpumap ``mid`` and of program ``pid`` (xdp_exception, its
    ifindex named), and each cpumap hit's ``processed`` in order (``enqueue_bulks``,
    ``kthread_batches``)."""
    mine = [
        (e, f) for e, f in events if f.get("map_id") == str(mid) or f.get("prog_id") == str(pid)
    ]
    for _, f in mine:
        if "ifindex" in f:
            f["dev"] = socket.if_indextoname(int(f["ifindex"]))
    out: dict[str, object] = {ev: rows(mine, ev) for ev in CPUMAP_EVENTS}
    for ev, key in (
        ("xdp_cpumap_enqueue", "enqueue_bulks"),
        ("xdp_cpumap_kthread", "kthread_batches"),
    ):
        out[key] = [int(f["processed"]) for e, f in mine if e == ev]
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


def redirect_into_veth(
    peer_prog: str | None, peer_up: bool = True, mode: str = "xdpdrv", down: str = ""
) -> dict[str, object]:
    """vs runs x_redir (dm[0] = va; ``mode``: native or generic XDP); 100 frames sent out of vi
    arrive on vs; va's peer vb has ``peer_prog`` (native); ``down``: a device set down."""
    veth("vi", "vs")
    veth("va", "vb")
    attach("vs", "x_redir", mode)
    if peer_prog:
        attach("vb", peer_prog)
    if not peer_up:
        sh("ip", "link", "set", "vb", "down")
    if down:
        sh("ip", "link", "set", down, "down")
    err = dm_update(0, "va")
    send("vi", 100)
    return {"update": err, "vs": stats("vs"), "va": stats("va"), "vb": stats("vb")}


def stack_into_veth_peer_down() -> dict[str, object]:
    """vb is down; 100 frames sent out of va (dev_queue_xmit with va's carrier off)."""
    veth("va", "vb")
    sh("ip", "link", "set", "vb", "down")
    send("va", 100)
    return {"va": stats("va"), "vb": stats("vb")}


def stack_into_tap_no_reader() -> dict[str, object]:
    """tap0 is up but no process holds it (no carrier); 100 frames sent out of it."""
    sh("ip", "tuntap", "add", "mode", "tap", "tap0")
    sh("ip", "link", "set", "tap0", "up")
    send("tap0", 100)
    return {"tap0": stats("tap0")}


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


def generic_on_veth(prog: str, mode: str = "xdpgeneric") -> dict[str, object]:
    """va runs ``prog`` as generic XDP (or ``mode``); 100 frames sent out of vb."""
    veth("va", "vb")
    attach("va", prog, mode)
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


def cpumap_redirect(
    entry: tuple[int, str | None] | None, make: Callable[[int, int], bytes]
) -> dict[str, object]:
    """vs runs x_cpumap natively (every frame to cpu_map[1]); cpu_map[1] = ``entry`` (qsize, the
    program its kthread runs) or no entry; 100 frames made by ``make`` sent out of vi arrive on
    vs. The sender is pinned to CPU 0, so vs's NAPI poll (run in the softirq of the sending
    CPU) enqueues on CPU 0 and the frames cross to CPU 1's kthread. Returns the cpumap
    tracepoints, the update's errno and both devices' counters."""
    os.sched_setaffinity(0, {0})
    veth("vi", "vs")
    attach("vs", "x_cpumap")
    fd = obj_get(f"{PIN}/maps/cpu_map")
    err = cm_update(fd, 1, *entry) if entry else ""
    os.close(fd)
    with tracing(*CPUMAP_EVENTS) as read:
        send("vi", 100, make=make)
        time.sleep(0.05)  # the kthread on CPU 1 empties its ring
        events = read()
    trace = cpumap_trace(events, map_id("cpu_map"), prog_id("x_cpumap"))
    return {"update": err, **trace, "vs": stats("vs"), "vi": stats("vi")}


def cpumap_live_frames(n: int, batch: int) -> dict[str, object]:
    """x_cpumap run by BPF_PROG_TEST_RUN in live-frames mode (bpf_test_run_xdp_live): ``n``
    copies of one frame, in batches of ``batch`` (xdp_test_run_batch runs the program on each
    and ends the batch with xdp_do_flush, as a driver ends its NAPI poll), with bottom halves
    off, on CPU 0; cpu_map[1] = {qsize 192, no program}. Unlike a veth's polls here (each
    carries the one frame a send() queued), the bulks depend on nothing but the kernel."""
    os.sched_setaffinity(0, {0})
    fd = obj_get(f"{PIN}/maps/cpu_map")
    err = cm_update(fd, 1, 192)
    os.close(fd)
    pfd = obj_get(f"{PIN}/x_cpumap")
    data = ctypes.create_string_buffer(frame(0, 64), 64)
    attr = bytearray(80)
    struct.pack_into("<IIIIQ", attr, 0, pfd, 0, 64, 0, ctypes.addressof(data))
    struct.pack_into("<I", attr, 32, n)  # repeat
    struct.pack_into("<III", attr, 64, BPF_F_TEST_XDP_LIVE_FRAMES, 0, batch)
    with tracing(*CPUMAP_EVENTS) as read:
        bpf(BPF_PROG_TEST_RUN, attr)
        time.sleep(0.05)  # the kthread on CPU 1 empties its ring
        events = read()
    os.close(pfd)
    trace = cpumap_trace(events, map_id("cpu_map"), prog_id("x_cpumap"))
    return {"update": err, **trace}


def cpumap_update_errors() -> dict[str, object]:
    """Cpumap updates (and creates) the kernel refuses, and lookups, in the order the checks
    of cpu_map_update_elem, __cpu_map_entry_alloc/__cpu_map_load_bpf_program and
    cpu_map_alloc run. cm: the pinned cpu_map (max_entries 4, value size 8); cm64: 64 entries
    (keys past the possible CPUs); cm4: value size 4 (qsize only)."""
    cm = obj_get(f"{PIN}/maps/cpu_map")
    cm64, _ = cm_create(64)
    cm4, cm4_err = cm_create(4, value_size=4)
    with open("/sys/devices/system/cpu/kernel_max") as f:
        nr_cpus = int(f.read()) + 1  # NR_CPUS
    with open("/sys/devices/system/cpu/possible") as f:
        last_possible = int(f.read().strip().split(",")[-1].split("-")[-1])
    bad_cpu = last_possible + 1
    out = {
        "cm key out of range": cm_update(cm, 4, 192),
        "cm key out of range with qsize 16385": cm_update(cm, 4, 16385),
        "cm key out of range with BPF_NOEXIST": cm_update(cm, 4, 192, flags=1),
        "cm flags > BPF_EXIST": cm_update(cm, 1, 192, flags=3),
        "cm flags > BPF_EXIST with key out of range": cm_update(cm, 4, 192, flags=3),
        "cm BPF_NOEXIST": cm_update(cm, 1, 192, flags=1),
        "cm BPF_NOEXIST with qsize 16385": cm_update(cm, 1, 16385, flags=1),
        "cm qsize 16385": cm_update(cm, 1, 16385),
        "cm qsize 16384": cm_update(cm, 1, 16384),
        "cm BPF_EXIST on a used key": cm_update(cm, 1, 256, flags=2),
        "cm BPF_EXIST on an empty key": cm_update(cm, 0, 192, flags=2),
        "cm lookup of an entry": cm_lookup(cm, 1),
        "cm prog is not a cpumap program": cm_update(cm, 1, 192, "x_pass"),
        "cm prog is a devmap program": cm_update(cm, 1, 192, "e_pass"),
        "cm lookup after a refused update": cm_lookup(cm, 1),
        "cm prog c_pass": cm_update(cm, 1, 192, "c_pass"),
        "cm lookup of an entry with c_pass": cm_lookup(cm, 1),
        "cm prog c_pass with qsize 16385": cm_update(cm, 1, 16385, "c_pass"),
        "cm qsize 0": cm_update(cm, 1, 0),
        "cm lookup after qsize 0": cm_lookup(cm, 1),
        "cm qsize 0 on an empty key": cm_update(cm, 1, 0),
        "cm lookup of a key out of range": cm_lookup(cm, 4),
        "cm64 key past the possible CPUs": cm_update(cm64, bad_cpu, 192),
        "cm64 key past the possible CPUs with qsize 16385": cm_update(cm64, bad_cpu, 16385),
        "cm64 key past the possible CPUs with a bad prog": cm_update(cm64, bad_cpu, 192, "x_pass"),
        "cm64 key of a possible CPU": cm_update(cm64, last_possible, 192),
        "cm4 create (value size 4)": cm4_err,
        "cm4 qsize 192": cm_update(cm4, 1, 192),
        "cm4 qsize 192 and c_pass (only qsize is read)": cm_update(cm4, 0, 192, "c_pass"),
        "cm4 lookup": cm_lookup(cm4, 0, value_size=4),
        "create value size 6": cm_create(4, value_size=6)[1],
        "create value size 12": cm_create(4, value_size=12)[1],
        "create max_entries 0": cm_create(0)[1],
        "create max_entries NR_CPUS": cm_create(nr_cpus)[1],
        "create max_entries NR_CPUS + 1": cm_create(nr_cpus + 1)[1],
    }
    for fd in (cm, cm64, cm4):
        if fd >= 0:
            os.close(fd)
    return out


SCENARIOS: dict[str, Callable[[], dict[str, object]]] = {
    "veth_tx_no_peer_prog": lambda: veth_xdp_tx(None),
    "veth_tx_peer_pass": lambda: veth_xdp_tx("x_pass"),
    "redirect_veth_peer_prog": lambda: redirect_into_veth("x_drop"),
    "redirect_veth_no_peer_prog": lambda: redirect_into_veth(None),
    "redirect_veth_peer_down": lambda: redirect_into_veth("x_drop", peer_up=False),
    "redirect_generic_veth_peer_prog": lambda: redirect_into_veth("x_pass", mode="xdpgeneric"),
    "redirect_generic_veth_no_peer_prog": lambda: redirect_into_veth(None, mode="xdpgeneric"),
    "redirect_generic_veth_peer_down": lambda: redirect_into_veth(
        None, peer_up=False, mode="xdpgeneric"
    ),
    "stack_veth_peer_down": stack_into_veth_peer_down,
    "redirect_veth_target_down": lambda: redirect_into_veth("x_drop", down="va"),
    "redirect_generic_veth_target_down": lambda: redirect_into_veth(
        "x_drop", mode="xdpgeneric", down="va"
    ),
    "stack_tap_no_reader": stack_into_tap_no_reader,
    "egress_drop": lambda: egress_verdict("e_drop"),
    "egress_pass": lambda: egress_verdict("e_pass"),
    "egress_abort": lambda: egress_verdict("e_abort"),
    "broadcast_exclude_ingress": broadcast,
    "update_errors": update_errors,
    "generic_veth_drop": lambda: generic_on_veth("x_drop"),
    "generic_veth_tx": lambda: generic_on_veth("x_tx"),
    "native_veth_drop": lambda: generic_on_veth("x_drop", "xdpdrv"),
    "native_veth_abort": lambda: generic_on_veth("x_abort", "xdpdrv"),
    "native_veth_pass": lambda: generic_on_veth("x_pass", "xdpdrv"),
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
    "cpumap_pass": lambda: cpumap_redirect((192, None), frame),
    "cpumap_prog_pass": lambda: cpumap_redirect((192, "c_pass"), udp_frame),
    "cpumap_prog_drop": lambda: cpumap_redirect((192, "c_drop_udp9"), udp_frame),
    "cpumap_missing_entry": lambda: cpumap_redirect(None, frame),
    "cpumap_live_frames": lambda: cpumap_live_frames(100, 64),
    "cpumap_update_errors": cpumap_update_errors,
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
