"""libbpf through ctypes: one program of an object loaded by the machine's kernel, as a loader
that picks it (``ip link ... obj F.o sec S``, ``xdp-loader load --prog-name``) would have it.

The object is opened with ``bpf_object__open_file``; every other program has autoload off
(``bpf_program__set_autoload``), the chosen one is made ``BPF_PROG_TYPE_XDP``
(``bpf_program__set_type``, which a section libbpf does not know needs), no map is pinned
(``bpf_map__set_pin_path(NULL)``: nothing is shared with other loaders), and
``bpf_object__load`` creates the maps and runs the verifier. A refusal carries the errno and
the verifier log's last lines (``bpf_program__set_log_buf``).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field

BPF_PROG_TYPE_XDP = 6
_LOG_SIZE = 1 << 20

_lib: ctypes.CDLL | None = None


def libbpf() -> ctypes.CDLL:
    """libbpf.so.1, its prototypes declared, printing silenced."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, res, args in (
        ("bpf_object__open_file", vp, [cp, vp]),
        ("bpf_object__next_program", vp, [vp, vp]),
        ("bpf_object__next_map", vp, [vp, vp]),
        ("bpf_object__load", i, [vp]),
        ("bpf_object__close", None, [vp]),
        ("bpf_program__name", cp, [vp]),
        ("bpf_program__section_name", cp, [vp]),
        ("bpf_program__set_type", i, [vp, i]),
        ("bpf_program__set_autoload", i, [vp, ctypes.c_bool]),
        ("bpf_program__set_log_buf", i, [vp, vp, ctypes.c_size_t]),
        ("bpf_program__set_log_level", i, [vp, ctypes.c_uint32]),
        ("bpf_program__fd", i, [vp]),
        ("bpf_map__name", cp, [vp]),
        ("bpf_map__fd", i, [vp]),
        ("bpf_map__set_pin_path", i, [vp, cp]),
        ("libbpf_set_print", vp, [vp]),
    ):
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    lib.libbpf_set_print(None)
    _lib = lib
    return lib


@dataclass
class KernelProgram:
    """One program as the kernel loaded it (``fd`` >= 0), or why it refused it."""

    section: str
    name: str
    fd: int = -1
    maps: dict[str, int] = field(default_factory=dict)  # the kernel's map name -> fd
    errno: int = 0
    log: str = ""


def program_names(path: str) -> list[tuple[str, str]]:
    """(section, function name) of every program in the object, in libbpf's order."""
    lib = libbpf()
    obj = lib.bpf_object__open_file(path.encode(), None)
    if not obj:
        raise OSError(ctypes.get_errno(), f"libbpf cannot open {path}")
    try:
        out = []
        prog = lib.bpf_object__next_program(obj, None)
        while prog:
            out.append(
                (lib.bpf_program__section_name(prog).decode(), lib.bpf_program__name(prog).decode())
            )
            prog = lib.bpf_object__next_program(obj, prog)
        return out
    finally:
        lib.bpf_object__close(obj)


class LoadedProgram:
    """``with LoadedProgram(path, name) as kp:`` -- the object closed (maps and program
    freed) on exit."""

    def __init__(self, path: str, name: str) -> None:
        self.lib = libbpf()
        self.path = path
        self.log = ctypes.create_string_buffer(_LOG_SIZE)
        self.obj = None
        self.result = KernelProgram("", name)

    def __enter__(self) -> KernelProgram:
        """Loaded without a log first (a verbose log can fill its buffer: ENOSPC, which is
        not the verifier's verdict); a refusal is loaded again with the log, for the reason."""
        self.load(with_log=False)
        if self.result.fd < 0 and self.result.errno != 2:
            errno = self.result.errno
            self.lib.bpf_object__close(self.obj)
            self.load(with_log=True)
            self.result.errno = errno
        return self.result

    def load(self, with_log: bool) -> None:
        lib = self.lib
        self.obj = lib.bpf_object__open_file(self.path.encode(), None)
        if not self.obj:
            raise OSError(ctypes.get_errno(), f"libbpf cannot open {self.path}")
        chosen = None
        prog = lib.bpf_object__next_program(self.obj, None)
        while prog:
            if lib.bpf_program__name(prog).decode() == self.result.name:
                chosen = prog
            else:
                lib.bpf_program__set_autoload(prog, False)
            prog = lib.bpf_object__next_program(self.obj, prog)
        if chosen is None:
            self.result.errno = 2
            return
        self.result.section = lib.bpf_program__section_name(chosen).decode()
        lib.bpf_program__set_type(chosen, BPF_PROG_TYPE_XDP)
        if with_log:
            lib.bpf_program__set_log_buf(chosen, ctypes.addressof(self.log), _LOG_SIZE)
            lib.bpf_program__set_log_level(chosen, 1)
        m = lib.bpf_object__next_map(self.obj, None)
        while m:
            lib.bpf_map__set_pin_path(m, None)
            m = lib.bpf_object__next_map(self.obj, m)
        ctypes.set_errno(0)
        if lib.bpf_object__load(self.obj) != 0:
            self.result.errno = ctypes.get_errno() or 22
            lines = self.log.value.decode(errors="replace").strip().splitlines()
            self.result.log = "\n".join(lines[-4:])
            return
        self.result.fd = lib.bpf_program__fd(chosen)
        m = lib.bpf_object__next_map(self.obj, None)
        while m:
            self.result.maps[lib.bpf_map__name(m).decode()] = lib.bpf_map__fd(m)
            m = lib.bpf_object__next_map(self.obj, m)

    def __exit__(self, *exc: object) -> None:
        if self.obj:
            self.lib.bpf_object__close(self.obj)


def strerror(errno: int) -> str:
    return os.strerror(errno) if errno else ""
