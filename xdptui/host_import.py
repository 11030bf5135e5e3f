"""``xdptui import``: a topology (YAML, with comments) of what a host shows (``host_facts``).

Devices keep their kernel names and order (so their ifindexes follow the host's order): NICs
with driver, channels, rings, speed and the CPUs their queue IRQs are bound to; bonds with
mode, policy, miimon and slaves; veth pairs; tun/tap devices; the devmaps the attached programs
use, with their entries by device name; which program sits where, by name and tag -- run as
the object ``--obj NAME=FILE.o`` gives, since the kernel can't hand the ELF back. Whatever the
host doesn't show (a tap's reader, the traffic, a NIC this model has no driver profile for) is
said in a comment where it would go, never filled in silently.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from xdptui.host_facts import XDP_MODES, HostFacts, Link
from xdptui.model.limits import CPUS_MAX, MTU_MAX, MTU_MIN, max_channels, ring_sizes

DRIVERS = {"ice": "ice", "ixgbe": "ixgbe", "i40e": "i40e", "mlx5_core": "mlx5"}
"""``ethtool -i`` driver names with a profile in ``xdptui.sim.drivers``."""
_SKIP_KINDS = {"loopback"}
_MODELLED = {"", "veth", "tun", "bond"}


class ImportError_(Exception):
    """An ``--obj`` argument or output that can't be used; the message says why."""


@dataclass
class Imported:
    """The YAML lines and the comments said on the way (also in the YAML)."""

    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    copied: list[tuple[Path, Path]] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _ethtool_field(text: str, name: str, section: str = "") -> str | None:
    """``Name: value`` in ethtool's output (after the line ``section`` when given)."""
    if section:
        at = text.find(section)
        if at < 0:
            return None
        text = text[at:]
    m = re.search(rf"^\s*{re.escape(name)}:\s*(.+?)\s*$", text, re.M)
    return m.group(1) if m else None


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _irq_cpus(facts: HostFacts, link: Link, queues: int, bus: str) -> list[int] | None:
    """Each queue's IRQ CPU: the first CPU of the affinity list of the interrupt
    /proc/interrupts names for it -- ``DEV-TxRx-N`` (ixgbe), ``ice-DEV-TxRx-N`` (ice),
    ``i40e-BUS-TxRx-N`` (i40e), ``mlx5_compN@pci:BUS`` (mlx5)."""
    pats = [re.compile(rf"^(?:\w+-)?{re.escape(link.name)}-TxRx-(\d+)$")]
    if bus:
        pats.append(re.compile(rf"^\w+-{re.escape(bus)}-TxRx-(\d+)$"))
        pats.append(re.compile(rf"^mlx5_comp(\d+)@pci:{re.escape(bus)}$"))
    found: dict[int, int] = {}
    for line in facts.interrupts.splitlines():
        parts = line.split()
        if not parts or not parts[0].rstrip(":").isdigit():
            continue
        irq = int(parts[0].rstrip(":"))
        for pat in pats:
            m = pat.match(parts[-1])
            if m and irq in facts.affinity:
                first = re.split(r"[,-]", facts.affinity[irq])[0]
                if first.isdigit():
                    found[int(m.group(1))] = int(first)
    if not all(q in found for q in range(queues)):
        return None
    return [found[q] for q in range(queues)]


def _nearest_ring(driver: str, size: int) -> int:
    sizes = ring_sizes(driver)
    fit = [s for s in sizes if s <= size]
    return fit[-1] if fit else sizes[0]


def build(facts: HostFacts, objs: dict[str, Path], out_dir: Path) -> Imported:
    """The topology of ``facts``; objects outside ``out_dir`` are copied into
    ``out_dir/objects`` (a topology names its objects relative to its own directory)."""
    imp = Imported()
    cpus = facts.cpus or 1
    if not facts.cpus:
        imp.note("the CPU count was not saved (nproc): 1 CPU assumed")
    cpus = min(cpus, CPUS_MAX)
    progs = {int(p["id"]): p for p in facts.progs if "id" in p}
    by_index = {link.ifindex: link for link in facts.links}
    kept = [link for link in facts.links if link.kind in _MODELLED and link.kind not in _SKIP_KINDS]
    for link in facts.links:
        if link.kind not in _MODELLED and link.kind not in _SKIP_KINDS:
            imp.note(f"{link.name} ({link.kind}) is not modelled: left out")
    kept = [link for link in kept if not _veth_alone(link, imp)]
    names = {link.name for link in kept}
    used_maps: set[int] = set()
    dev_lines: list[str] = []
    for link in kept:
        dev_lines += _device(facts, link, cpus, names, progs, objs, out_dir, used_maps, imp)
    map_lines = _maps(facts, used_maps, by_index, names, imp)
    L = imp.lines
    L.append(f"# imported by xdptui import from {facts.where}")
    L.append("# what the host could not show is said in comments like this one")
    L.append(f"name: imported {facts.where}")
    L.append("description: the XDP data path of a real host, as xdptui import read it")
    L.append(f"cpus: {cpus}")
    L.append("devices:")
    L += dev_lines or ["  {}"]
    if map_lines:
        L.append("maps:")
        L += map_lines
    L.append("# traffic: the host's traffic can't be read; add a source, e.g. a capture:")
    L.append("#   - {name: cap, to: DEV, pcap: capture.pcapng}")
    L.append("traffic: []")
    for note in reversed(imp.notes):
        L.insert(2, f"# note: {note}")
    return imp


def _veth_alone(link: Link, imp: Imported) -> bool:
    if link.kind == "veth" and (link.peer_elsewhere or link.peer is None):
        imp.note(f"{link.name}: a veth whose peer is in another namespace: left out")
        return True
    return False


def _device(
    facts: HostFacts,
    link: Link,
    cpus: int,
    names: set[str],
    progs: dict[int, dict[str, object]],
    objs: dict[str, Path],
    out_dir: Path,
    used_maps: set[int],
    imp: Imported,
) -> list[str]:
    f: list[str] = []
    comments: list[str] = []
    eth = facts.ethtool.get(link.name, {})
    if link.kind == "":
        f += _nic(facts, link, cpus, eth, comments)
    elif link.kind == "veth":
        f.append("type: veth")
        f.append(f"peer: {link.peer}")
        queues = _int(_ethtool_field(eth.get("-l", ""), "RX", "Current hardware settings"))
        if queues and queues > 1:
            f.append(f"queues: {queues}")
    elif link.kind == "tun":
        f += _tun(link, comments)
    else:
        f += _bond(facts, link, names, comments)
    if not link.up:
        f.append("up: false")
    if link.mtu != 1500:
        if MTU_MIN <= link.mtu <= MTU_MAX:
            f.append(f"mtu: {link.mtu}")
        else:
            comments.append(f"mtu {link.mtu} is beyond what the model takes: 1500 kept")
    xdp = _attachment(link, progs, objs, out_dir, used_maps, imp, comments)
    if xdp:
        f.append(f"xdp: {xdp}")
    lines = [f"  # {c}" for c in comments]
    lines.append(f"  {link.name}: {{{', '.join(f)}}}")
    return lines


def _nic(
    facts: HostFacts, link: Link, cpus: int, eth: dict[str, str], comments: list[str]
) -> list[str]:
    drv_name = _ethtool_field(eth.get("-i", ""), "driver") or ""
    bus = _ethtool_field(eth.get("-i", ""), "bus-info") or ""
    driver = DRIVERS.get(drv_name, "generic")
    if driver == "generic":
        why = f"driver {drv_name}" if drv_name else "no ethtool -i output"
        comments.append(f"{link.name}: {why} has no profile here: the generic driver stands in")
    f = ["type: nic", f"driver: {driver}"]
    speed = _ethtool_field(eth.get("", ""), "Speed")
    m = re.match(r"^(\d+)Mb/s$", speed or "")
    if m:
        mbps = int(m.group(1))
        f.append(f"speed: {mbps // 1000}G" if mbps % 1000 == 0 else f"speed: {mbps}M")
    else:
        comments.append(f"{link.name}: speed unknown ({speed or 'no ethtool output'}): 100G kept")
    chan = eth.get("-l", "")
    queues = _int(_ethtool_field(chan, "Combined", "Current hardware settings")) or _int(
        _ethtool_field(chan, "RX", "Current hardware settings")
    )
    top = max_channels(driver, cpus)
    if queues is None:
        comments.append(f"{link.name}: channels unknown (ethtool -l): {min(cpus, top)} queues")
    else:
        if queues > top:
            comments.append(f"{link.name}: {queues} channels, more than {top} (CPUs, driver)")
        queues = max(1, min(queues, top))
        f.append(f"queues: {queues}")
    rings = eth.get("-g", "")
    for key, word in (("ring", "RX"), ("tx_ring", "TX")):
        size = _int(_ethtool_field(rings, word, "Current hardware settings"))
        if size is None:
            continue
        fit = _nearest_ring(driver, size)
        if fit != size:
            comments.append(f"{link.name}: {word} ring {size} taken as {fit} (powers of two)")
        f.append(f"{key}: {fit}")
    irq = _irq_cpus(facts, link, queues or min(cpus, top), bus) if queues else None
    if irq is not None:
        f.append(f"irq_cpus: [{', '.join(str(min(c, cpus - 1)) for c in irq)}]")
    else:
        comments.append(f"{link.name}: queue IRQs not found in /proc/interrupts: queue i on CPU i")
    return f


def _tun(link: Link, comments: list[str]) -> list[str]:
    info = link.info
    mode = info.get("type", "tap")
    f = ["type: tun", f"mode: {mode}"]
    attached = int(info.get("numqueues", 0) or 0)
    if info.get("multi_queue") and attached > 1:
        f.append(f"queues: {attached}")
    if link.txqlen != 500:
        f.append(f"tx_queue_len: {max(1, link.txqlen)}")
    if not info.get("vnet_hdr", True):
        f.append("vnet_hdr: false")
    if attached:
        f.append("reader: 1Mpps")
        comments.append(
            f"{link.name}: a reader has {attached} queue(s) open, but how fast it reads can't "
            "be seen: 1Mpps is a placeholder, set reader: to its rate"
        )
    else:
        comments.append(f"{link.name}: no reader has it open (carrier off): no reader")
    return f


def _bond(facts: HostFacts, link: Link, names: set[str], comments: list[str]) -> list[str]:
    info = link.info
    slaves = [s.name for s in facts.links if s.master == link.name and s.name in names]
    f = [
        "type: bond",
        f"mode: {info.get('mode', 'balance-rr')}",
        f"xmit_hash_policy: {info.get('xmit_hash_policy', 'layer2')}",
        f"miimon: {int(info.get('miimon', 0) or 0)}",
        f"slaves: [{', '.join(slaves)}]",
    ]
    if info.get("primary"):
        f.append(f"primary: {info['primary']}")
    if not info:
        comments.append(f"{link.name}: bond options not shown: balance-rr, layer2, miimon 0")
    return f


def _attachment(
    link: Link,
    progs: dict[int, dict[str, object]],
    objs: dict[str, Path],
    out_dir: Path,
    used_maps: set[int],
    imp: Imported,
    comments: list[str],
) -> str:
    """The device's own program (native before generic; offload is not modelled)."""
    if not link.xdp:
        return ""
    chosen = ""
    for mode, prog_id in sorted(link.xdp):
        p = progs.get(prog_id, {})
        name = str(p.get("name", f"id {prog_id}"))
        tag = str(p.get("tag", "?"))
        ids = p.get("map_ids")
        used_maps.update(int(i) for i in ids if isinstance(i, int)) if isinstance(
            ids, list
        ) else None
        where = XDP_MODES.get(mode, "?")
        comments.append(f"{link.name} runs {name} (id {prog_id}, tag {tag}) in {where} mode")
        if chosen or mode == 3:
            comments.append(f"{link.name}: {name} in {where} mode is not imported")
            continue
        obj = objs.get(name)
        if obj is None:
            comments.append(
                f"{link.name}: give --obj {name}=FILE.o to run it (the kernel can't hand the "
                "ELF back): no program attached here"
            )
            continue
        mine = _object_tag(obj, name)
        if mine is None:
            comments.append(f"{link.name}: {obj} has no program {name}: no program attached here")
            continue
        if mine != tag:
            comments.append(
                f"{link.name}: {obj}'s {name} has tag {mine}, the host's {tag}: other code "
                "(another build, other constants); attached anyway"
            )
        rel = _place(obj, out_dir, imp)
        chosen = f"{{program: {rel}, mode: {where}, section: {name}}}"
    return chosen


def _object_tag(obj: Path, name: str) -> str | None:
    """The tag the kernel would give ``name`` of ``obj`` (``bpf_prog_calc_tag``)."""
    from xdptui.bpf import load_object
    from xdptui.model.errors import KernelError
    from xdptui.sim.core.bpf_obj import prog_tag

    try:
        return prog_tag(load_object(obj).program(name).insns)
    except (KernelError, OSError, ValueError):
        return None


def _place(obj: Path, out_dir: Path, imp: Imported) -> str:
    """``obj`` relative to the topology's directory, copied into ``objects/`` when outside."""
    src = obj.resolve()
    base = out_dir.resolve()
    if src.is_relative_to(base):
        return str(src.relative_to(base))
    dest = base / "objects" / src.name
    imp.copied.append((src, dest))
    imp.note(f"{src} copied to {dest} (a topology names objects below its own directory)")
    return str(dest.relative_to(base))


def _maps(
    facts: HostFacts,
    used: set[int],
    by_index: dict[int, Link],
    names: set[str],
    imp: Imported,
) -> list[str]:
    """The devmaps the attached programs use, entries by device name (``bpftool map dump``:
    a ``u32`` ifindex, or ``struct bpf_devmap_val`` with an egress program's id)."""
    out: list[str] = []
    for m in facts.maps:
        mid = int(m.get("id", -1))
        if mid not in used:
            continue
        kind = str(m.get("type", ""))
        name = str(m.get("name", f"map{mid}"))
        if kind not in ("devmap", "devmap_hash"):
            if name.endswith((".rodata", ".data", ".bss")):
                imp.note(
                    f"map {name}: the object's own global data, as its ELF has it (values a "
                    "loader set before loading are not seen)"
                )
            else:
                imp.note(f"map {name} ({kind}) starts empty: its contents here are not imported")
            continue
        entries: list[str] = []
        for e in facts.dumps.get(mid, []):
            value = e.get("value")
            if not isinstance(value, list):
                continue
            key = int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
            raw = bytes(int(b, 16) for b in value)
            ifindex = int.from_bytes(raw[:4], "little")
            dev = by_index.get(ifindex)
            if dev is None or dev.name not in names:
                imp.note(f"map {name} key {key}: ifindex {ifindex} is not a modelled device here")
                continue
            if len(raw) >= 8 and int.from_bytes(raw[4:8], "little"):
                imp.note(
                    f"map {name} key {key}: its egress program (id "
                    f"{int.from_bytes(raw[4:8], 'little')}) is not imported"
                )
            entries.append(f"{key}: {dev.name}")
        max_entries = int(m.get("max_entries", 1))
        out.append(
            f"  {name}: {{type: {kind}, max_entries: {max_entries}, "
            f"entries: {{{', '.join(entries)}}}}}"
        )
    return out


def copy_objects(imp: Imported) -> None:
    for src, dest in imp.copied:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def parse_obj(text: str) -> tuple[str, Path]:
    name, eq, path = text.partition("=")
    if not eq or not name or not path:
        raise ImportError_(
            f"--obj {text!r}: give NAME=FILE.o (the program's name as bpftool shows it)"
        )
    p = Path(path)
    if not p.is_file():
        raise ImportError_(f"--obj {text!r}: {path} is not a file")
    return name, p
