"""The v1 JSON report and the headless run's summary table (the report itself is built by
the engine: ``xdptui.sim.report``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from xdptui.model.report_spec import REPORT_VERSION, Report
from xdptui.model.units import format_duration, format_rate
from xdptui.model.views import Frame
from xdptui.sim import report as sim_report

if TYPE_CHECKING:
    from xdptui.sim.engine import Simulator

__all__ = ["REPORT_VERSION", "build_report", "dumps", "summary"]


def build_report(sim: Simulator) -> Report:
    """The JSON report (v1) of ``sim`` at its current time."""
    view = sim.view()
    return sim_report.build_report(sim.frame(), view.world, view.commands)


def dumps(report: Mapping[str, object]) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"


def summary(frame: Frame) -> str:
    """A readable table: per device the main counters as totals and average rates."""
    secs = frame.t_ns / 1e9 if frame.t_ns else 1.0
    cols = (
        "rx_packets",
        "rx_dropped",
        "rx_missed_errors",
        "xdp_drop",
        "xdp_pass",
        "xdp_tx",
        "xdp_redirect",
        "xdp_aborted",
        "xdp_tx_errors",
        "xdp_xmit",
        "tx_packets",
    )
    short = (
        "rx",
        "rx_drop",
        "missed",
        "drop",
        "pass",
        "tx",
        "redirect",
        "aborted",
        "tx_err",
        "xmit",
        "tx_pkts",
    )
    lines = [f"{frame.name}: {format_duration(frame.t_ns)} simulated, seed {frame.seed}"]
    head = f"{'device':<10} {'xdp':<18}" + "".join(f"{s:>11}" for s in short)
    lines.append(head)
    lines.append("-" * len(head))
    for dev in frame.devices:
        counters = dict(dev.counters)
        prog = _fit(program_label(dev.xdp.program), f"/{dev.xdp.mode}", 18) if dev.xdp else "-"
        state = "" if dev.up else " (down)"
        lines.append(
            f"{(dev.name + state):<10} {prog:<18}"
            + "".join(f"{_count(counters[c]):>11}" for c in cols)
        )
    lines.append("")
    lines.append("rates (average over the run):")
    for dev in frame.devices:
        counters = dict(dev.counters)
        if counters["rx_packets"] or counters["tx_packets"] or counters["rx_dropped"]:
            missed = counters["rx_missed_errors"]
            lines.append(
                f"  {dev.name:<10} rx {format_rate(counters['rx_packets'] / secs):>12}"
                f"   tx {format_rate(counters['tx_packets'] / secs):>12}"
                f"   rx_dropped {format_rate(counters['rx_dropped'] / secs):>12}"
                + (f"   missed {format_rate(missed / secs):>12}" if missed else "")
            )
    tp = frame.tracepoints
    if tp.xdp_exception or tp.xdp_redirect_err or tp.xdp_devmap_xmit or tp.xdp_bulk_tx:
        lines.append("")
        lines.append("tracepoints:")
        for x in tp.xdp_exception:
            lines.append(f"  xdp:xdp_exception     {x.dev:<10} {x.action:<14} {x.count}")
        for r in tp.xdp_redirect_err:
            lines.append(f"  xdp:xdp_redirect_err  {r.dev:<10} {r.err:<14} {r.count}")
        for b in tp.xdp_bulk_tx:
            err = b.err or "-"
            lines.append(
                f"  xdp:xdp_bulk_tx       {b.dev:<10} {err:<14} sent {b.sent} drops {b.drops}"
            )
        for m in tp.xdp_devmap_xmit:
            avg = (m.sent + m.drops) / m.flushes if m.flushes else 0.0
            lines.append(
                f"  xdp:xdp_devmap_xmit   {m.from_dev}->{m.to_dev}  sent {m.sent} drops {m.drops}"
                f" err {m.err} flushes {m.flushes} bulk-avg {avg:.1f}"
            )
    if tp.xdp_cpumap_enqueue or tp.xdp_cpumap_kthread:
        lines.append("")
        lines.append("cpumap (xdp-monitor's columns):")
        for q in tp.xdp_cpumap_enqueue:
            avg = q.processed / q.hits if q.hits else 0.0
            lines.append(
                f"  xdp:xdp_cpumap_enqueue {q.map} cpu{q.cpu}->cpu{q.to_cpu}  processed "
                f"{q.processed} drops {q.drops} bulk-avg {avg:.1f}"
            )
        for k in tp.xdp_cpumap_kthread:
            busy = k.busy_ns / frame.t_ns if frame.t_ns else 0.0
            verdicts = (
                f"prog {k.prog}: pass {k.xdp_pass} drop {k.xdp_drop}"
                if k.prog
                else "no prog: to the stack"
            )
            lines.append(
                f"  xdp:xdp_cpumap_kthread {k.map} cpu{k.cpu}  processed {k.processed} "
                f"({verdicts}) sched {k.sched} ring {k.ring}/{k.qsize} busy {busy:.0%}"
            )
    if frame.xsks:
        lines.append("")
        lines.append("AF_XDP sockets (XDP_STATISTICS, rings now):")
        for sock in frame.xsks:
            fill, rx = sock.ring("fill"), sock.ring("rx")
            c = dict(sock.counters)
            lines.append(
                f"  {sock.name:<10} {sock.dev} q{sock.queue} {sock.mode:<8} rx {c['rx_packets']}"
                f"  rx_dropped {c['rx_dropped']}  rx_ring_full {c['rx_ring_full']}"
                f"  rx_fill_ring_empty_descs {c['rx_fill_ring_empty_descs']}"
                f"  fill {fill.entries}/{fill.size}  rx ring {rx.entries}/{rx.size}"
            )
            if sock.writer is not None:
                w, tx = sock.writer, sock.ring("tx")
                lines.append(
                    f"  {'':<10} writer {w.batch}/sendto  tx {c['tx_packets']}  sendto "
                    f"{w.kicks}  EAGAIN {w.eagain}  not written {w.not_written}"
                    f"  tx_ring_empty_descs {c['tx_ring_empty_descs']}"
                    f"  tx ring {tx.entries}/{tx.size}"
                )
    failed = [e for e in frame.events if not e.ok]
    if failed:
        lines.append("")
        lines.append("refused commands:")
        for e in failed:
            lines.append(f"  {format_duration(e.t_ns):>8}  {e.cmd}  -> {e.errno}: {e.reply}")
    return "\n".join(lines)


def _count(n: int) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale * 10:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def program_label(program: str) -> str:
    """A program as a column shows it: a file's name (``router_stats.o``, ``f.py:prog``,
    ``x.o:xdp_pass``) rather than the path it was named by; a built-in by its name."""
    if "/" not in program:
        return program
    return program.rsplit("/", 1)[1]


def _fit(name: str, mode: str, width: int) -> str:
    """``name`` and ``mode`` in ``width`` characters: the name cut (and marked) if need be."""
    room = width - len(mode)
    return (name if len(name) <= room else name[: room - 1] + "…") + mode
