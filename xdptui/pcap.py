"""Capture files: reading pcap / pcapng (through scapy, imported only when a capture is read)
and writing pcapng with one interface per device and a comment per packet.

Reading keeps every frame exactly as captured -- its bytes, its timestamp in nanoseconds -- so
that a replayed capture's bytes decide RSS, bond hashes and program verdicts. Only Ethernet
captures (``LINKTYPE_ETHERNET``) carry what an XDP program sees; others are refused by name.

Writing is done here rather than with scapy's writer because the simulator's clock is in
nanoseconds: every Interface Description Block says ``if_tsresol = 9`` (pcapng, section 4.2),
so frames 6.7 ns apart at 148.8 Mpps keep their order and spacing in Wireshark and
``tcpdump -r --nano``.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

LINKTYPE_ETHERNET = 1
SNAPLEN = 262_144  # tcpdump's default snapshot length (MAXIMUM_SNAPLEN)
MAX_CAPTURE_FRAMES = 1_048_576  # a source's flow table holds at most this many entries
MAX_CAPTURE_BYTES = 256 * 1024 * 1024

_SHB, _IDB, _EPB = 0x0A0D0D0A, 0x00000001, 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_END, _OPT_COMMENT = 0, 1
_IF_NAME, _IF_DESCRIPTION, _IF_TSRESOL = 2, 3, 9
_SHB_USERAPPL = 4
_EPB_FLAGS = 2
_DIRECTION = {"in": 1, "out": 2}  # epb_flags bits 0-1: inbound / outbound


class CaptureError(ValueError):
    """A capture that can't be replayed; the message says why and what would do."""


@dataclass(frozen=True, eq=False)
class Capture:
    """The frames of a capture file in file order, with their timestamps (ns since the
    epoch, made non-decreasing: a timestamp that goes back is taken as its predecessor's)."""

    path: str
    frames: tuple[bytes, ...]
    times_ns: tuple[int, ...]
    truncated: int  # frames captured shorter than they were on the wire (snaplen)
    went_back: int  # timestamps earlier than the one before

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def span_ns(self) -> int:
        return self.times_ns[-1] - self.times_ns[0] if self.frames else 0


def read_capture(path: str | Path) -> Capture:
    """The frames of a pcap or pcapng file (``CaptureError`` says what is wrong with it)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise CaptureError(f"capture '{path}' can't be read: {exc.strerror}") from None
    if not p.is_file():
        raise CaptureError(f"capture '{path}' is not a regular file")
    if st.st_size > MAX_CAPTURE_BYTES:
        raise CaptureError(
            f"capture '{path}' is {st.st_size} bytes; at most {MAX_CAPTURE_BYTES} can be replayed"
        )
    return _read(str(p.resolve()), st.st_mtime_ns, st.st_size)


def _quiet_scapy() -> None:
    """scapy logs its readers' complaints to stderr; ours say it in one error line."""
    for name in ("scapy", "scapy.runtime", "scapy.loading"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@lru_cache(maxsize=8)
def _read(path: str, _mtime: int, _size: int) -> Capture:
    _quiet_scapy()
    try:
        from scapy.error import Scapy_Exception
        from scapy.utils import RawPcapReader
    except ImportError:  # pragma: no cover - scapy is in the pcap and dev extras
        raise CaptureError("replaying a capture needs scapy: pip install 'xdptui[pcap]'") from None
    frames: list[bytes] = []
    times: list[int] = []
    truncated = went_back = 0
    try:
        reader = RawPcapReader(path)
    except (Scapy_Exception, OSError, struct.error, EOFError) as exc:
        raise CaptureError(f"capture '{path}' is neither pcap nor pcapng ({exc})") from None
    try:
        nano = bool(getattr(reader, "nano", False))
        for data, meta in reader:
            link = getattr(meta, "linktype", getattr(reader, "linktype", LINKTYPE_ETHERNET))
            if link != LINKTYPE_ETHERNET:
                raise CaptureError(
                    f"capture '{path}' frame {len(frames)} has link type {link}; only Ethernet "
                    "(1) frames carry what an XDP program sees (capture with tcpdump -i DEV, "
                    "not -i any)"
                )
            t = _time_ns(meta, nano)
            if times and t < times[-1]:
                went_back += 1
                t = times[-1]
            if getattr(meta, "caplen", len(data)) < getattr(meta, "wirelen", len(data)):
                truncated += 1
            frames.append(bytes(data))
            times.append(t)
            if len(frames) > MAX_CAPTURE_FRAMES:
                raise CaptureError(
                    f"capture '{path}' has more than {MAX_CAPTURE_FRAMES} frames, the most a "
                    "source's flow table holds; cut it (editcap -r IN OUT 1-1048576)"
                )
    except (Scapy_Exception, struct.error, EOFError, ValueError) as exc:
        if isinstance(exc, CaptureError):
            raise
        raise CaptureError(
            f"capture '{path}' is damaged after {len(frames)} frames: {exc}"
        ) from None
    finally:
        reader.close()
    if not frames:
        raise CaptureError(f"capture '{path}' holds no frames")
    return Capture(path, tuple(frames), tuple(times), truncated, went_back)


def _time_ns(meta: object, nano: bool) -> int:
    if hasattr(meta, "tshigh"):  # pcapng: a 64-bit count of tsresol units
        ticks = (int(meta.tshigh) << 32) | int(meta.tslow)  # type: ignore[attr-defined]
        res = int(getattr(meta, "tsresol", 1_000_000))
        return ticks * 1_000_000_000 // res
    sec = int(getattr(meta, "sec", 0))
    frac = int(getattr(meta, "usec", 0))
    return sec * 1_000_000_000 + (frac if nano else frac * 1000)


def summary(data: bytes) -> str:
    """One line for a frame, as scapy dissects it (``Ether / IP / UDP 10.0.0.1:1024 >
    10.0.0.2:80``); the bytes' length when scapy is not installed."""
    _quiet_scapy()
    try:
        from scapy.layers.l2 import Ether
    except ImportError:  # pragma: no cover - scapy is in the pcap and dev extras
        return f"{len(data)} bytes"
    try:
        return str(Ether(data).summary())
    except Exception:  # scapy raises many kinds on odd bytes: show what we know
        return f"{len(data)} bytes"


# ---------------------------------------------------------------- writing pcapng


def _option(code: int, value: bytes) -> bytes:
    pad = (-len(value)) % 4
    return struct.pack("<HH", code, len(value)) + value + b"\0" * pad


def _block(kind: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


class PcapngWriter:
    """A pcapng file (little-endian, one section): an interface per device, named by it,
    declared when its first frame is written; each frame an Enhanced Packet Block with its
    simulated time in nanoseconds and a comment."""

    def __init__(self, out: BinaryIO, application: str = "xdptui") -> None:
        self.out = out
        self.interfaces: dict[str, int] = {}
        opts = _option(_SHB_USERAPPL, application.encode()) + _option(_OPT_END, b"")
        body = struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1) + opts
        out.write(_block(_SHB, body))

    def interface(self, name: str, description: str = "") -> int:
        got = self.interfaces.get(name)
        if got is not None:
            return got
        opts = _option(_IF_NAME, name.encode()) + _option(_IF_TSRESOL, bytes([9]))
        if description:
            opts += _option(_IF_DESCRIPTION, description.encode())
        opts += _option(_OPT_END, b"")
        body = struct.pack("<HHI", LINKTYPE_ETHERNET, 0, SNAPLEN) + opts
        self.out.write(_block(_IDB, body))
        self.interfaces[name] = len(self.interfaces)
        return self.interfaces[name]

    def packet(
        self,
        device: str,
        t_ns: int,
        data: bytes,
        comment: str = "",
        direction: str = "",
        orig_len: int | None = None,
    ) -> None:
        """One frame seen at ``device`` at simulated time ``t_ns``; ``orig_len``: its length
        on the wire when only the first ``len(data)`` bytes are known."""
        ifid = self.interface(device)
        data = data[:SNAPLEN]
        wire = max(len(data), orig_len or 0)
        pad = (-len(data)) % 4
        opts = b""
        if comment:
            opts += _option(_OPT_COMMENT, comment.encode())
        if direction in _DIRECTION:
            opts += _option(_EPB_FLAGS, struct.pack("<I", _DIRECTION[direction]))
        if opts:
            opts += _option(_OPT_END, b"")
        head = struct.pack(
            "<IIIII", ifid, (t_ns >> 32) & 0xFFFFFFFF, t_ns & 0xFFFFFFFF, len(data), wire
        )
        self.out.write(_block(_EPB, head + data + b"\0" * pad + opts))


def write_atomically(path: str | Path, content: bytes) -> None:
    """Write ``content`` to ``path`` through a temporary file, so a failed export leaves
    nothing half-written."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(content)
        tmp.replace(p)
    finally:
        tmp.unlink(missing_ok=True)
