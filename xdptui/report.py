"""The v1 JSON report (docs/design.md, "JSON report (v1)") and the headless run's summary
table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

from xdptui.model.report_spec import (
    REPORT_VERSION,
    DeviceEntry,
    MapEntry,
    Report,
    TrafficEntry,
    XdpEntry,
)
from xdptui.model.units import format_duration, format_rate
from xdptui.model.views import DeviceView, Frame
from xdptui.sim.engine import Simulator

__all__ = ["REPORT_VERSION", "build_report", "dumps", "summary"]


def build_report(sim: Simulator) -> Report:
    """Everything a run produced, in the declared shape (``xdptui.model.report_spec``)."""
    frame = sim.frame()
    tp = frame.tracepoints
    return {
        "report": REPORT_VERSION,
        "topology": frame.name,
        "seed": frame.seed,
        "sim_ns": frame.t_ns,
        "devices": {dev.name: _device(dev) for dev in frame.devices},
        "maps": {
            m.name: MapEntry(
                type=m.type,
                max_entries=m.max_entries,
                entries={str(e.key): {"dev": e.dev, "egress": e.egress} for e in m.entries},
            )
            for m in frame.maps
        },
        "tracepoints": {
            "xdp_exception": [
                {"dev": x.dev, "action": x.action, "count": x.count} for x in tp.xdp_exception
            ],
            "xdp_redirect_err": [
                {"dev": x.dev, "err": x.err, "count": x.count} for x in tp.xdp_redirect_err
            ],
            "xdp_devmap_xmit": [
                {
                    "from": x.from_dev,
                    "to": x.to_dev,
                    "sent": x.sent,
                    "drops": x.drops,
                    "err": x.err,
                    "flushes": x.flushes,
                }
                for x in tp.xdp_devmap_xmit
            ],
        },
        "traffic": {
            src.spec.name: _source(src.device, src.local, src.emitted, src.lost)
            for src in sim.world.sources
        },
        "events": [
            {"t_ns": e.t_ns, "cmd": e.cmd, "ok": e.ok, "errno": e.errno, "reply": e.reply}
            for e in frame.events
            if e.origin != "system"
        ],
    }


def _device(dev: DeviceView) -> DeviceEntry:
    xdp: XdpEntry | None = None
    if dev.xdp is not None:
        xdp = {"program": dev.xdp.program, "mode": dev.xdp.mode}
        if dev.xdp.inherited_from:
            xdp["inherited_from"] = dev.xdp.inherited_from
    entry: DeviceEntry = {
        "type": dev.type,
        "up": dev.up,
        "carrier": dev.carrier,
        "master": dev.master,
        "xdp": xdp,
        "counters": dict(dev.counters),
        "queues": [
            {
                "queue": q.queue,
                "cpu": q.cpu,
                "rx_packets": q.rx_packets,
                "rx_dropped": q.rx_dropped,
                "ring_peak": q.peak,
            }
            for q in dev.queues
        ],
        "xdp_tx_rings": [
            {
                "ring": r.ring,
                "cpus": list(r.cpus),
                "locked": r.locked,
                "sent": r.sent,
                "dropped": r.dropped,
            }
            for r in dev.xdp_tx_rings
        ],
    }
    if dev.driver is not None:
        entry["driver"] = dev.driver
    details = dict(dev.details)
    if "peer" in details:
        entry["peer"] = details["peer"]
    if dev.type == "tun":
        entry["mode"] = details["mode"]
        entry["slow_path_reasons"] = {
            k.split(".", 1)[1]: int(v) for k, v in details.items() if k.startswith("slow_path.")
        }
        entry["writes_throttled"] = int(details["writes_throttled"])
        entry["verdicts_by_path"] = {
            k.split(".", 1)[1]: int(v) for k, v in details.items() if k.startswith("verdicts.")
        }
    if dev.type == "bond":
        entry["mode"] = details["mode"]
        entry["xmit_hash_policy"] = details["xmit_hash_policy"]
        entry["slaves"] = details["slaves"].split()
        entry["active_slave"] = details["active_slave"] or None
    return _declared_order(entry)


def _declared_order(entry: DeviceEntry) -> DeviceEntry:
    """The keys in the declaration's order (``driver`` right after ``type``)."""
    order = DeviceEntry.__annotations__
    return cast(DeviceEntry, {k: entry[k] for k in order if k in entry})  # type: ignore[literal-required]


def _source(device: str, local: bool, emitted: int, lost: int) -> TrafficEntry:
    if local:
        return {"from": device, "emitted": emitted, "lost_link_down": lost}
    return {"to": device, "emitted": emitted, "lost_link_down": lost}


def dumps(report: Mapping[str, object]) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"


def summary(frame: Frame) -> str:
    """A readable table: per device the main counters as totals and average rates."""
    secs = frame.t_ns / 1e9 if frame.t_ns else 1.0
    cols = (
        "rx_packets",
        "rx_dropped",
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
        prog = f"{dev.xdp.program}/{dev.xdp.mode}" if dev.xdp else "-"
        state = "" if dev.up else " (down)"
        lines.append(
            f"{(dev.name + state):<10} {prog[:18]:<18}"
            + "".join(f"{_count(counters[c]):>11}" for c in cols)
        )
    lines.append("")
    lines.append("rates (average over the run):")
    for dev in frame.devices:
        counters = dict(dev.counters)
        if counters["rx_packets"] or counters["tx_packets"] or counters["rx_dropped"]:
            lines.append(
                f"  {dev.name:<10} rx {format_rate(counters['rx_packets'] / secs):>12}"
                f"   tx {format_rate(counters['tx_packets'] / secs):>12}"
                f"   rx_dropped {format_rate(counters['rx_dropped'] / secs):>12}"
            )
    tp = frame.tracepoints
    if tp.xdp_exception or tp.xdp_redirect_err or tp.xdp_devmap_xmit:
        lines.append("")
        lines.append("tracepoints:")
        for x in tp.xdp_exception:
            lines.append(f"  xdp:xdp_exception     {x.dev:<10} {x.action:<14} {x.count}")
        for r in tp.xdp_redirect_err:
            lines.append(f"  xdp:xdp_redirect_err  {r.dev:<10} {r.err:<14} {r.count}")
        for m in tp.xdp_devmap_xmit:
            avg = (m.sent + m.drops) / m.flushes if m.flushes else 0.0
            lines.append(
                f"  xdp:xdp_devmap_xmit   {m.from_dev}->{m.to_dev}  sent {m.sent} drops {m.drops}"
                f" err {m.err} flushes {m.flushes} bulk-avg {avg:.1f}"
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
