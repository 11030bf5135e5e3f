"""What happened, as pcapng: the frames devices received, sent, dropped, passed up or
redirected during a run (``xdptui run --pcap DEV:WHAT=OUT``), and a followed frame before and
after each hop (``xdptui trace --pcap OUT``, the app's ``w``).

One pcapng interface per device (named by it), nanosecond timestamps of simulated time, and a
comment on every packet saying where it was and what happened to it there: the poll that took
it and the program's verdict, the ring it went to, the ring that refused it. tcpdump
(``tcpdump -r OUT --nano``) and Wireshark read the files.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from xdptui.model.views import PacketView, TraceHop
from xdptui.pcap import PcapngWriter, write_atomically
from xdptui.sim.core.derived import frame_bytes
from xdptui.sim.frame_log import KINDS, FrameLog

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator


class PcapSpecError(ValueError):
    """A ``--pcap`` argument that names no device or kind; the message says what would do."""


@dataclass(frozen=True)
class PcapSpec:
    """``DEV:WHAT=OUT``: the frames of kind ``what`` at ``dev``, written to ``out``."""

    dev: str
    what: str
    out: str


def parse_spec(text: str, devices: list[str]) -> PcapSpec:
    """``eth0:drop=drops.pcapng`` (``WHAT`` one of rx, tx, drop, pass, redirect, all)."""
    head, eq, out = text.partition("=")
    dev, colon, what = head.partition(":")
    if not eq or not colon or not out or not dev:
        raise PcapSpecError(
            f"--pcap {text!r}: give DEV:WHAT=OUT.pcapng, e.g. eth0:drop=drops.pcapng"
        )
    if dev not in devices:
        raise PcapSpecError(f"--pcap {text!r}: no device {dev!r}; devices: {', '.join(devices)}")
    if what not in KINDS:
        raise PcapSpecError(f"--pcap {text!r}: WHAT is one of {', '.join(KINDS)}, not {what!r}")
    return PcapSpec(dev, what, out)


def start_recording(sim: Simulator, specs: list[PcapSpec]) -> FrameLog:
    """Record the frames ``specs`` ask for from now on (exact mode: a frame is a row)."""
    wants: dict[str, set[str]] = {}
    for s in specs:
        wants.setdefault(s.dev, set()).add(s.what)
    log = FrameLog({d: frozenset(k) for d, k in wants.items()})
    sim.exact = True
    sim.state.dp.frame_log = log
    return log


def write_recording(sim: Simulator, log: FrameLog, specs: list[PcapSpec]) -> dict[str, int]:
    """Each output file with the frames its specs chose, in time order; frames per file."""
    by_file: dict[str, list[PcapSpec]] = {}
    for s in specs:
        by_file.setdefault(s.out, []).append(s)
    written: dict[str, int] = {}
    for out, mine in by_file.items():
        content, written[out] = _pcapng(sim, log, mine)
        write_atomically(out, content)
    return written


def device_pcapng(sim: Simulator, dev: str, window_ns: int) -> tuple[bytes, int]:
    """The next ``window_ns`` of ``dev``'s frames (every kind), recorded on a fork so the
    simulator itself runs on untouched; the pcapng and how many frames it holds."""
    fork = sim.fork()
    spec = PcapSpec(dev, "all", "")
    log = start_recording(fork, [spec])
    fork.run_until(fork.now_ns + window_ns)
    return _pcapng(fork, log, [spec])


def _pcapng(sim: Simulator, log: FrameLog, mine: list[PcapSpec]) -> tuple[bytes, int]:
    data = frame_bytes(sim.state.world.entries)
    sizes = sim.state.world.entries.size
    rows: list[tuple[int, int, str, int, str]] = []
    for k, rec in enumerate(log.records):
        if not any(s.dev == rec.dev and (s.what == "all" or s.what in rec.kinds) for s in mine):
            continue
        for t, e, c in zip(rec.times.tolist(), rec.entries.tolist(), rec.comments, strict=True):
            rows.append((t, k, rec.dev, e, c))
    rows.sort(key=lambda r: (r[0], r[1]))
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    for s in mine:
        w.interface(s.dev)
    for t, _, dev, e, comment in rows:
        w.packet(dev, t, data[e], comment, orig_len=int(sizes[e]))
    return buf.getvalue(), len(rows)


class Packets(Protocol):
    """What a followed packet's export reads: the frame's bytes before and after its first
    program (``Simulator.packet``)."""

    def packet(
        self, source: str, flow: int, hops: tuple[TraceHop, ...] = ()
    ) -> PacketView | None: ...


def trace_pcapng(sim: Packets, source: str, flow: int, hops: tuple[TraceHop, ...]) -> bytes:
    """A followed frame as pcapng: the frame at each hop, on that hop's device, with the hop
    as its comment; where a program ran, the frame before and after it."""
    view = sim.packet(source, flow, hops)
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    if view is None:
        return buf.getvalue()
    frame = view.data_before
    rewritten = False
    for h in hops:
        note = f"{h.stage}: {h.detail}"
        if h.program is not None:
            w.packet(h.dev, h.t_ns, h.program.before, f"before {h.program.program}: {note}")
            frame, rewritten = h.program.after, True
            after = f"after {h.program.program}: {h.program.action}"
            w.packet(
                h.dev,
                h.t_ns,
                frame,
                after + (f", {h.program.redirect}" if h.program.redirect else ""),
            )
            continue
        if h.stage == "xdp" and h.dev == view.device and not rewritten and "returns" in h.detail:
            w.packet(h.dev, h.t_ns, frame, f"before {view.program}: {note}")
            frame, rewritten = view.data_after, True
            w.packet(h.dev, h.t_ns, frame, f"after {view.program}: {view.note}")
            continue
        w.packet(h.dev, h.t_ns, frame, note)
    return buf.getvalue()


__all__ = [
    "PcapSpec",
    "PcapSpecError",
    "device_pcapng",
    "parse_spec",
    "start_recording",
    "trace_pcapng",
    "write_recording",
]
