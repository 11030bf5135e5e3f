"""The v1 JSON report (docs/design.md, "JSON report (v1)"): everything a run produced, in
the declared shape (``xdptui.model.report_spec``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from xdptui.bpf.maps import MapType
from xdptui.model.report_spec import (
    REPORT_VERSION,
    BpfMapElem,
    BpfMapEntry,
    CpumapEntryEntry,
    DeviceEntry,
    MapEntry,
    MapEntryEntry,
    ObjectEntry,
    Report,
    TrafficEntry,
    XdpEntry,
    XskEntry,
    XskmapEntryEntry,
)
from xdptui.model.views import DeviceView, EventView, Frame, MapEntryView, XskView
from xdptui.sim.show import object_maps

if TYPE_CHECKING:
    from xdptui.sim.world import World


def build_report(frame: Frame, world: World, commands: Iterable[EventView]) -> Report:
    """Everything a run produced, in the declared shape (``xdptui.model.report_spec``): the
    frame's counters, the world's sources, the commands applied."""
    tp = frame.tracepoints
    report: Report = {
        "report": REPORT_VERSION,
        "topology": frame.name,
        "seed": frame.seed,
        "sim_ns": frame.t_ns,
        "devices": {dev.name: _device(dev) for dev in frame.devices},
        "maps": {
            m.name: MapEntry(
                type=m.type,
                max_entries=m.max_entries,
                entries={str(e.key): _map_entry(m.type, e) for e in m.entries},
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
            "xdp_bulk_tx": [
                {"dev": x.dev, "err": x.err, "sent": x.sent, "drops": x.drops}
                for x in tp.xdp_bulk_tx
            ],
        },
        "traffic": {
            src.spec.name: _source(src.device, src.local, src.emitted, src.lost)
            for src in world.sources
        },
        "events": [
            {"t_ns": e.t_ns, "cmd": e.cmd, "ok": e.ok, "errno": e.errno, "reply": e.reply}
            for e in commands
        ],
    }
    if any(m.type == "cpumap" for m in frame.maps):
        report["tracepoints"]["xdp_cpumap_enqueue"] = [
            {
                "map": x.map,
                "cpu": x.cpu,
                "to_cpu": x.to_cpu,
                "processed": x.processed,
                "drops": x.drops,
                "hits": x.hits,
            }
            for x in tp.xdp_cpumap_enqueue
        ]
        report["tracepoints"]["xdp_cpumap_kthread"] = [
            {
                "map": k.map,
                "cpu": k.cpu,
                "processed": k.processed,
                "drops": k.drops,
                "sched": k.sched,
                "xdp_pass": k.xdp_pass,
                "xdp_drop": k.xdp_drop,
                "xdp_redirect": k.xdp_redirect,
                "hits": k.hits,
            }
            for k in tp.xdp_cpumap_kthread
        ]
    if frame.objects:
        report["objects"] = _objects(frame, world)
    if frame.xsks:
        report["xsks"] = {x.name: _xsk(x) for x in frame.xsks}
    return report


def _map_entry(kind: str, e: MapEntryView) -> MapEntryEntry | CpumapEntryEntry | XskmapEntryEntry:
    if kind == "cpumap":
        return {"qsize": e.qsize, "prog": e.egress}
    if kind == "xskmap":
        return {"sock": e.dev}
    return {"dev": e.dev, "egress": e.egress}


def _xsk(x: XskView) -> XskEntry:
    entry = _xsk_entry(x)
    if x.writer is not None:
        w = x.writer
        entry["writer"] = {
            "batch": w.batch,
            "offered_pps": w.offered_pps,
            "per_kick": w.per_kick,
            "sendto": w.kicks,
            "eagain": w.eagain,
            "not_written": w.not_written,
        }
    return entry


def _xsk_entry(x: XskView) -> XskEntry:
    return {
        "dev": x.dev,
        "queue": x.queue,
        "mode": x.mode,
        "frames": x.frames,
        "frame_size": x.frame_size,
        "reader_pps": x.reader_pps,
        "need_wakeup": x.need_wakeup,
        "counters": dict(x.counters),
        "rings": {
            r.name: {
                "size": r.size,
                "entries": r.entries,
                "producer": r.producer,
                "consumer": r.consumer,
            }
            for r in x.rings
        },
        "umem": dict(x.owners),
    }


def _objects(frame: Frame, world: World) -> list[ObjectEntry]:
    """Each loaded object with its maps' non-zero elements (as ``bpftool -j map dump``)."""
    by_id = {m.map_id: m for m in object_maps(world)}
    out: list[ObjectEntry] = []
    for o in frame.objects:
        maps: dict[str, BpfMapEntry] = {}
        for map_id in o.map_ids:
            m = by_id.get(map_id)
            if m is None:
                continue  # a devmap: the report's "maps"
            elems: list[BpfMapElem] = []
            step = (m.map.value_size + 7) & ~7
            for key, value in m.map.nonzero_items():
                if m.map.is_percpu:
                    vals = [
                        value[c * step : c * step + m.map.value_size].hex()
                        for c in range(m.map.ncpus)
                    ]
                    elems.append({"key": key.hex(), "values": vals})
                else:
                    elems.append({"key": key.hex(), "value": value.hex()})
            maps[m.name] = {"id": map_id, "type": _map_type(m.map.map_type), "elements": elems}
        out.append(
            {
                "id": o.prog_id,
                "name": o.name,
                "file": o.file,
                "section": o.section,
                "tag": o.tag,
                "insns": o.insns,
                "per_frame": o.per_frame,
                "approximated": o.approximated,
                "frames_run": o.frames_run,
                "maps": maps,
            }
        )
    return out


def _map_type(t: int) -> str:
    return MapType(t).name.lower()


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
    if dev.veth is not None:
        entry["peer"] = dev.veth.peer
    if dev.tap is not None:
        entry["mode"] = dev.tap.mode
        entry["slow_path_reasons"] = dict(dev.tap.slow_path)
        entry["writes_throttled"] = dev.tap.writes_throttled
        entry["verdicts_by_path"] = dict(dev.tap.verdicts_by_path)
    if dev.bond is not None:
        entry["mode"] = dev.bond.mode
        entry["xmit_hash_policy"] = dev.bond.xmit_hash_policy
        entry["slaves"] = list(dev.bond.slaves)
        entry["active_slave"] = dev.bond.active_slave
        entry["rx_up"] = dev.bond.rx_up
        entry["tx_down"] = dev.bond.tx_down
    return _declared_order(entry)


def _declared_order(entry: DeviceEntry) -> DeviceEntry:
    """The keys in the declaration's order (``driver`` right after ``type``)."""
    order = DeviceEntry.__annotations__
    return cast(DeviceEntry, {k: entry[k] for k in order if k in entry})  # type: ignore[literal-required]


def _source(device: str, local: bool, emitted: int, lost: int) -> TrafficEntry:
    if local:
        return {"from": device, "emitted": emitted, "lost_link_down": lost}
    return {"to": device, "emitted": emitted, "lost_link_down": lost}
