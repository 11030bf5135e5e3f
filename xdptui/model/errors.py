"""Kernel errno values and the error a refused command or attach carries.

Numbers are Linux's (``include/uapi/asm-generic/errno-base.h`` and ``errno.h``).
"""

from __future__ import annotations

import enum


class Errno(enum.IntEnum):
    """The errno values the modelled kernel paths return."""

    EPERM = 1
    ENOENT = 2
    ENXIO = 6
    E2BIG = 7
    EBADF = 9
    ENOMEM = 12
    EFAULT = 14
    EBUSY = 16
    EEXIST = 17
    ENODEV = 19
    EINVAL = 22
    ENOSPC = 28
    ENOBUFS = 105
    ERANGE = 34
    ENOTEMPTY = 39
    ENOLINK = 67
    EOVERFLOW = 75
    EOPNOTSUPP = 95
    ENETDOWN = 100
    EMSGSIZE = 90
    EACCES = 13
    EBADRQC = 56
    ENOTSUPP = 524  # the kernel's own (include/linux/errno.h), seen by user space as is

    @property
    def strerror(self) -> str:
        """The C library's strerror() text, as iproute2 prints it."""
        return _STRERROR[self]


_STRERROR: dict[Errno, str] = {
    Errno.EPERM: "Operation not permitted",
    Errno.ENOTSUPP: "Unknown error 524",
    Errno.ENOENT: "No such file or directory",
    Errno.ENXIO: "No such device or address",
    Errno.E2BIG: "Argument list too long",
    Errno.EBADF: "Bad file descriptor",
    Errno.ENOMEM: "Cannot allocate memory",
    Errno.EFAULT: "Bad address",
    Errno.EBUSY: "Device or resource busy",
    Errno.EEXIST: "File exists",
    Errno.ENODEV: "No such device",
    Errno.EINVAL: "Invalid argument",
    Errno.ENOSPC: "No space left on device",
    Errno.ENOBUFS: "No buffer space available",
    Errno.ERANGE: "Numerical result out of range",
    Errno.ENOTEMPTY: "Directory not empty",
    Errno.ENOLINK: "Link has been severed",
    Errno.EOVERFLOW: "Value too large for defined data type",
    Errno.EOPNOTSUPP: "Operation not supported",
    Errno.ENETDOWN: "Network is down",
    Errno.EMSGSIZE: "Message too long",
    Errno.EACCES: "Permission denied",
    Errno.EBADRQC: "Invalid request code",
}


class KernelError(Exception):
    """A refusal from a modelled kernel path: errno plus the extack message (may be empty)."""

    def __init__(self, errno: Errno, extack: str = "") -> None:
        super().__init__(f"{errno.name}: {extack}" if extack else errno.name)
        self.errno = errno
        self.extack = extack


class UsageError(Exception):
    """A command line the tool itself rejects before talking to the kernel (bad syntax)."""

    def __init__(self, message: str, errno: Errno = Errno.EINVAL) -> None:
        super().__init__(message)
        self.errno = errno
