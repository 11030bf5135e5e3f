"""The machine's own kernel as the oracle: objects loaded by bpftool (libbpf), then run with
BPF_PROG_TEST_RUN and read back with the map commands through the bpf(2) syscall.

``available()`` says why the kernel cannot be used here (not root, no BPF, no bpftool, no
clang); the differential tests skip with that reason.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import struct
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

SYS_BPF = 321  # x86_64
BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM, BPF_MAP_GET_NEXT_KEY = 1, 2, 4
BPF_PROG_LOAD, BPF_OBJ_GET, BPF_PROG_TEST_RUN = 5, 7, 10
BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 14, 15
BPF_PROG_TYPE_XDP = 6
BPFFS = Path("/sys/fs/bpf")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long


def bpf(cmd: int, attr: bytearray) -> int:
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    ret = _libc.syscall(SYS_BPF, cmd, buf, len(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(ret)


def _addr(b: ctypes.Array[ctypes.c_char]) -> int:
    return ctypes.addressof(b)


def available() -> str | None:
    """None when the kernel oracle can run, else the reason it cannot."""
    if os.uname().machine != "x86_64":
        return "the oracle's syscall numbers are x86_64's"
    if os.geteuid() != 0:
        return "needs root for BPF_PROG_LOAD"
    if shutil.which("bpftool") is None:
        return "bpftool is not installed"
    if not BPFFS.is_dir():
        return "no /sys/fs/bpf"
    if not os.path.ismount(BPFFS):
        res = subprocess.run(["mount", "-t", "bpf", "bpf", str(BPFFS)], capture_output=True)
        if res.returncode != 0:
            return "cannot mount bpffs"
    try:
        fd = load_raw(bytes.fromhex("b700000002000000" + "9500000000000000"))
    except OSError as exc:
        return f"BPF_PROG_LOAD failed: {exc.strerror}"
    os.close(fd)
    return None


BPF_FUNC_XDP_ADJUST_META = 54


@functools.cache
def helper_refused(helper: int) -> str | None:
    """Why this kernel refuses an XDP program that calls ``helper`` at all (None: it loads
    one). Kernels differ: 6.18.44-fc refuses ``bpf_xdp_adjust_meta`` in any XDP program
    ("program of this type cannot use helper"), where the kernel source's ``xdp_func_proto``
    offers it; xdptui follows the source, so tests of that helper skip on such a kernel."""
    code = (
        "b702000000000000"  # r2 = 0 (r1: the context)
        + "85000000" + struct.pack("<i", helper).hex()  # call helper
        + "b700000002000000"  # r0 = XDP_PASS
        + "9500000000000000"  # exit
    )  # fmt: skip
    try:
        fd = load_raw(bytes.fromhex(code))
    except OSError as exc:
        why = ": program of this type cannot use helper" if "cannot use helper" in str(exc) else ""
        err = os.strerror(exc.errno or 0)
        return f"this kernel ({os.uname().release}) refuses XDP helper #{helper} ({err}{why})"
    os.close(fd)
    return None


def load_raw(insns: bytes, license: bytes = b"GPL\0") -> int:
    """BPF_PROG_LOAD of raw XDP instructions (no maps); returns the program fd."""
    ins = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(license, len(license))
    attr = bytearray(128)
    struct.pack_into("<IIQQ", attr, 0, BPF_PROG_TYPE_XDP, len(insns) // 8, _addr(ins), _addr(lic))
    try:
        return bpf(BPF_PROG_LOAD, attr)
    except OSError:
        pass
    log = ctypes.create_string_buffer(1 << 22)
    struct.pack_into("<IIQ", attr, 24, 1, len(log), _addr(log))
    try:
        return bpf(BPF_PROG_LOAD, attr)
    except OSError as exc:
        raise OSError(
            exc.errno, f"{exc.strerror}: {log.value.decode(errors='replace')[-500:]}"
        ) from None


@dataclass
class TestRun:
    retval: int
    data: bytes


def test_run(prog_fd: int, data: bytes, repeat: int = 1) -> TestRun:
    """One BPF_PROG_TEST_RUN (no ctx: ingress is lo, queue 0), ``repeat`` runs on its buffer."""
    din = ctypes.create_string_buffer(data, len(data))
    dout = ctypes.create_string_buffer(8192)
    attr = bytearray(80)
    struct.pack_into(
        "<IIIIQQII", attr, 0, prog_fd, 0, len(data), len(dout), _addr(din), _addr(dout), repeat, 0
    )
    bpf(BPF_PROG_TEST_RUN, attr)
    retval, _size_in, size_out = struct.unpack_from("<III", attr, 4)
    return TestRun(retval, dout.raw[:size_out])


def obj_get(path: Path) -> int:
    p = ctypes.create_string_buffer(str(path).encode())
    attr = bytearray(24)
    struct.pack_into("<Q", attr, 0, _addr(p))
    return bpf(BPF_OBJ_GET, attr)


@dataclass
class MapInfo:
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    name: str


def map_info(fd: int) -> MapInfo:
    info = ctypes.create_string_buffer(96)
    attr = bytearray(16)
    struct.pack_into("<IIQ", attr, 0, fd, 96, _addr(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    t, _id, ks, vs, me, _fl = struct.unpack_from("<6I", info.raw, 0)
    name = info.raw[24:40].split(b"\0")[0].decode()
    return MapInfo(t, ks, vs, me, name)


def map_items(fd: int, info: MapInfo, value_len: int) -> dict[bytes, bytes]:
    """Every (key, value) of a map, through GET_NEXT_KEY and LOOKUP_ELEM."""
    out: dict[bytes, bytes] = {}
    key = ctypes.create_string_buffer(info.key_size)
    nxt = ctypes.create_string_buffer(info.key_size)
    val = ctypes.create_string_buffer(value_len)
    first = True
    while True:
        attr = bytearray(32)
        struct.pack_into("<IIQQ", attr, 0, fd, 0, 0 if first else _addr(key), _addr(nxt))
        try:
            bpf(BPF_MAP_GET_NEXT_KEY, attr)
        except OSError:
            return out
        first = False
        ctypes.memmove(key, nxt, info.key_size)
        attr = bytearray(32)
        struct.pack_into("<IIQQ", attr, 0, fd, 0, _addr(key), _addr(val))
        try:
            bpf(BPF_MAP_LOOKUP_ELEM, attr)
        except OSError:
            continue
        out[key.raw] = val.raw


def map_update(fd: int, key: bytes, value: bytes, flags: int = 0) -> None:
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    attr = bytearray(32)
    struct.pack_into("<IIQQQ", attr, 0, fd, 0, _addr(k), _addr(v), flags)
    bpf(BPF_MAP_UPDATE_ELEM, attr)


def prog_map_ids(prog_fd: int) -> list[int]:
    """The ids of the maps a program uses (``struct bpf_prog_info``: nr_map_ids, map_ids)."""
    ids = (ctypes.c_uint32 * 64)()
    info = ctypes.create_string_buffer(256)
    struct.pack_into("<IQ", info, 52, 64, ctypes.addressof(ids))
    attr = bytearray(16)
    struct.pack_into("<IIQ", attr, 0, prog_fd, 256, _addr(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    n = struct.unpack_from("<I", info.raw, 52)[0]
    return list(ids[: min(n, 64)])


def map_fd_by_id(map_id: int) -> int:
    attr = bytearray(16)
    struct.pack_into("<I", attr, 0, map_id)
    return bpf(BPF_MAP_GET_FD_BY_ID, attr)


class LoadedObject:
    """An object loaded by ``bpftool prog loadall``; its maps found through the program.

    Maps the object pins by name (``LIBBPF_PIN_BY_NAME``) land in /sys/fs/bpf/NAME: those must
    not exist before (else they would be reused) and are removed afterwards."""

    def __init__(self, obj: Path, pinned_by_name: tuple[str, ...] = ()) -> None:
        self.fds: list[int] = []
        self.by_name = [BPFFS / n for n in pinned_by_name]
        self.dir = BPFFS / f"xdptui_{uuid.uuid4().hex[:12]}"
        for pin in self.by_name:
            if pin.exists():
                raise FileExistsError(f"{pin} is already pinned (in use by another loader?)")
        self.progs_dir = self.dir / "progs"
        self.dir.mkdir()
        res = subprocess.run(
            ["bpftool", "prog", "loadall", str(obj), str(self.progs_dir), "type", "xdp"],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            self.close()
            raise OSError(f"bpftool prog loadall {obj}: {res.stderr.strip()[-800:]}")

    def prog_fd(self, name: str) -> int:
        fd = obj_get(self.progs_dir / name)
        self.fds.append(fd)
        return fd

    def maps(self, prog_fd: int) -> dict[str, int]:
        """The program's maps by the kernel's name for them, as fds."""
        out = {}
        for map_id in prog_map_ids(prog_fd):
            fd = map_fd_by_id(map_id)
            self.fds.append(fd)
            out[map_info(fd).name] = fd
        return out

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        for pin in self.by_name:
            pin.unlink(missing_ok=True)
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
            subprocess.run(["rm", "-rf", str(self.dir)], capture_output=True)

    def __enter__(self) -> LoadedObject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
