"""Topology YAML (v1) -> :class:`xdptui.model.topology.Topology`, with ``FILE:LINE:COL`` errors.

The file is *composed*, not constructed, with PyYAML's SafeLoader, so every node keeps the line
and column it came from. Every problem becomes a :class:`Diagnostic` that names the field as a
path (``devices.eth0.queues``, ``traffic[1].rate``) and says what would be valid; all problems
of a file are collected in one pass and raised together as one :class:`TopologyError`.
The fields and their rules are docs/design.md's "Topology YAML (v1)"; where a rule is the kernel's
(bond option dependencies, devmap key range, device names) the message gives its errno.

The loader is four objects, composed: :class:`DocumentLoader` here (maps, traffic, timeline,
lessons) holds a :class:`~xdptui.topology_nodes.NodeReader` (node accessors and the diagnostics)
and a :class:`~xdptui.topology_programs.ProgramResolver` (programs and their files), and hands
``devices:`` to a :class:`~xdptui.topology_devices.DeviceLoader`.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from xdptui.model.catalog import CPUMAP_PROGRAMS_OK, DEVMAP_EGRESS_OK, did_you_mean
from xdptui.model.limits import (
    CPUS_MAX,
    MAX_TABLE_ENTRIES,
    NR_CPUS,
    SEED_MAX,
    TOPOLOGY_MAX_BYTES,
    U32_MAX,
    U63_MAX,
    flow_table_entries,
)
from xdptui.model.topology import (
    PROTOS,
    BondSpec,
    CpuMapEntrySpec,
    CpuMapSpec,
    Lesson,
    LessonStep,
    Loc,
    MapEntrySpec,
    MapSpec,
    ObjectMapSpec,
    Range,
    TimelineEntry,
    Topology,
    TrafficSpec,
    XskMapSpec,
)
from xdptui.model.topology_spec import (
    CPUMAP_ENTRY_KEYS,
    ENTRY_KEYS,
    LESSON_KEYS,
    MAP_KEYS,
    MAP_KINDS,
    STEP_AT_PATTERN,
    STEP_KEYS,
    TIMELINE_KEYS,
    TOP_KEYS,
    TRAFFIC_KEYS,
)
from xdptui.model.units import (
    AS_CAPTURED,
    LINE,
    parse_clock_speed,
)
from xdptui.topology_devices import DeviceLoader
from xdptui.topology_nodes import NodeReader
from xdptui.topology_objmaps import ObjectMapLoader
from xdptui.topology_programs import ProgramResolver
from xdptui.topology_xsk import XskLoader
from xdptui.topology_yaml import (
    _DEFAULT_SOURCE,
    _MAP_NAME,
    _NULL,
    _TABLE,
    CommandValidator,
    Diagnostic,
    TopologyError,
    _choices,
    _cidr_hosts,
    _compose,
    _construct,
    _describe,
    _format_mac,
    _in_file_order,
    _int_text,
    _join,
    _Pair,
    _parse_ipv4,
    _parse_mac,
    _read_regular_file,
    _Unreadable,
)

__all__ = ["CommandValidator", "Diagnostic", "TopologyError", "load_topology", "loads_topology"]

_CAPTURE_DECIDES = (
    "size",
    "proto",
    "src_mac",
    "dst_mac",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
    "vlan",
    "flows",
    "random",
    "gso",
)
"""Source fields a replayed capture's bytes decide."""


def load_topology(path: str | Path, validate_command: CommandValidator | None = None) -> Topology:
    """Read and validate a topology file; raise :class:`TopologyError` listing every problem."""
    filename = str(path)
    try:
        data = _read_regular_file(Path(path), TOPOLOGY_MAX_BYTES)
    except _Unreadable as exc:
        raise TopologyError([Diagnostic(Loc(filename, 1, 1), f"can't read file: {exc}")]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"invalid YAML: the file is not UTF-8 (byte 0x{data[exc.start]:02x})"
        raise TopologyError([Diagnostic(Loc(filename, line, col), message)]) from None
    return loads_topology(text, filename, validate_command)


def loads_topology(
    text: str, filename: str = "<input>", validate_command: CommandValidator | None = None
) -> Topology:
    """Parse and validate topology YAML text; ``filename`` is used in messages and is the base
    for relative user program paths (the current directory for ``<input>``-style names)."""
    root = _compose(text, filename)
    base_dir = Path(".") if filename.startswith("<") else Path(filename).parent
    loader = DocumentLoader(filename, base_dir, validate_command)
    topology = loader.topology(root)
    if loader.nodes.diagnostics:
        raise TopologyError(_in_file_order(loader.nodes.diagnostics))
    return topology


class DocumentLoader:
    """The whole document: maps, traffic, timeline, lessons, and ``devices:`` through a
    :class:`DeviceLoader`. It holds the parts every section shares, the :class:`NodeReader`
    (one list of diagnostics for the file) and the :class:`ProgramResolver` (programs named in
    ``xdp:``, ``egress:`` and commands, resolved against ``base_dir``); ``validate`` checks
    each timeline and lesson command."""

    def __init__(self, filename: str, base_dir: Path, validate: CommandValidator | None) -> None:
        self.nodes = NodeReader(filename)
        self.programs = ProgramResolver(self.nodes, base_dir)
        self.validate = validate
        self.object_maps = ObjectMapLoader(self.nodes)
        self.object_map_specs: list[ObjectMapSpec] = []
        self.cpumap_specs: list[CpuMapSpec] = []
        self.xsk = XskLoader(self.nodes)
        self.xskmap_specs: list[XskMapSpec] = []
        self.from_nodes: dict[str, tuple[Node, str]] = {}  # each source's 'from:' and path
        self.bond_slaves: dict[str, tuple[str, ...]] = {}  # each bond's slaves, by name

    def topology(self, root: Node | None) -> Topology:
        filename = self.nodes.filename
        default_name = "topology" if filename.startswith("<") else Path(filename).stem
        if root is None or (isinstance(root, ScalarNode) and root.tag == _NULL):
            self.nodes.diagnostics.append(
                Diagnostic(Loc(filename, 1, 1), "the file is empty; a topology needs 'devices:'")
            )
            return Topology(name=default_name, source=filename)
        if not isinstance(root, MappingNode):
            self.nodes.error(
                root, "", f"a topology is a mapping (name:, devices:, ...), not {_describe(root)}"
            )
            return Topology(name=default_name, source=filename)
        fields = self.nodes.known(self.nodes.pairs(root, "", "a mapping") or [], "", TOP_KEYS)
        name = self.nodes.opt(fields, "name", "", self.nodes.text, default_name)
        description = self.nodes.opt(fields, "description", "", self.nodes.text, "")
        seed = self.nodes.opt(
            fields, "seed", "", lambda n, p: self.nodes.integer(n, p, 0, SEED_MAX), 1
        )
        cpus = self.nodes.opt(
            fields, "cpus", "", lambda n, p: self.nodes.integer(n, p, 1, CPUS_MAX), 4
        )
        self.nodes.map_names = self.prescan_maps(fields.get("maps"))
        devices_node = self.nodes.require(fields, "devices", root, "", "a mapping of device names")
        devices = (
            DeviceLoader(self.nodes, self.programs, cpus, self.xsk).devices(devices_node)
            if devices_node is not None
            else ()
        )
        no_timeline: tuple[TimelineEntry, ...] = ()
        no_lessons: tuple[Lesson, ...] = ()
        timeline = self.nodes.opt(fields, "timeline", "", self.timeline, no_timeline)
        lessons = self.nodes.opt(fields, "lessons", "", self.lessons, no_lessons)
        self.check_step_refs(timeline, lessons)
        no_maps: tuple[MapSpec, ...] = ()
        maps = self.nodes.opt(fields, "maps", "", self.maps, no_maps)
        object_maps = tuple(self.object_map_specs)
        self.object_maps.check(object_maps, devices, cpus)
        xsks = self.xsk.check(devices, cpus)
        self.bond_slaves = {d.name: d.slaves for d in devices if isinstance(d, BondSpec)}
        no_traffic: tuple[TrafficSpec, ...] = ()
        traffic = self.nodes.opt(fields, "traffic", "", self.traffic, no_traffic)
        self.xsk.check_writers(traffic, xsks, devices, self.from_nodes)
        return Topology(
            name=name,
            description=description,
            seed=seed,
            cpus=cpus,
            devices=devices,
            maps=maps,
            cpumaps=tuple(self.cpumap_specs),
            xsks=xsks,
            xskmaps=tuple(self.xskmap_specs),
            object_maps=object_maps,
            traffic=traffic,
            timeline=timeline,
            lessons=lessons,
            source=filename,
        )

    @staticmethod
    def prescan_maps(pair: _Pair | None) -> list[str]:
        """Map names, so device programs can refer to maps defined further down."""
        if pair is None or not isinstance(pair.value, MappingNode):
            return []
        return [str(k.value) for k, _ in pair.value.value if isinstance(k, ScalarNode)]

    def check_step_refs(
        self, timeline: tuple[TimelineEntry, ...], lessons: tuple[Lesson, ...]
    ) -> None:
        """Every ``at: step N`` names a step the lessons have."""
        for entry in timeline:
            if entry.step is None:
                continue
            lesson, step = entry.step
            if lesson >= len(lessons):
                have = f"has {len(lessons)}" if lessons else "has none"
                where = f"lesson {lesson + 1}" if lesson else "a lesson"
                self.nodes.diagnostics.append(
                    Diagnostic(entry.loc, f"timeline: at: names {where}; the topology {have}")
                )
            elif step >= len(lessons[lesson].steps):
                n = len(lessons[lesson].steps)
                self.nodes.diagnostics.append(
                    Diagnostic(
                        entry.loc,
                        f"timeline: at: step {step + 1} of lesson {lesson + 1} "
                        f"({lessons[lesson].title!r}) does not exist; valid: step 1..{n}",
                    )
                )

    def maps(self, node: Node, path: str) -> tuple[MapSpec, ...] | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return ()
        pairs = self.nodes.pairs(
            node, path, "a mapping of map names to {type, max_entries, entries}"
        )
        specs = [self.map_spec(pair, _join(path, pair.key)) for pair in pairs or []]
        return tuple(s for s in specs if s is not None)

    def map_spec(self, pair: _Pair, path: str) -> MapSpec | None:
        if not _MAP_NAME.match(pair.key):
            self.nodes.error(
                pair.key_node,
                path,
                "a map name is 1-15 letters, digits, '_' or '.' (BPF_OBJ_NAME_LEN)",
            )
        fields = self.nodes.mapping(
            pair.value, path, MAP_KEYS, "a mapping {type, max_entries, entries}"
        )
        if fields is None:
            return None
        type_node = self.nodes.require(fields, "type", pair.key_node, path, _choices(MAP_KINDS))
        kind = (
            None
            if type_node is None
            else self.nodes.choice(type_node, f"{path}.type", MAP_KINDS, "map type")
        )
        if kind == "object":
            spec = self.object_maps.spec(pair, fields, path)
            if spec is not None:
                self.object_map_specs.append(spec)
            return None
        if kind == "xskmap":
            xspec = self.xsk.xskmap(pair, fields, path)
            if xspec is not None:
                self.xskmap_specs.append(xspec)
            return None
        if kind == "cpumap":
            cspec = self.cpumap_spec(pair, fields, path)
            if cspec is not None:
                self.cpumap_specs.append(cspec)
            return None
        limit = 1 << 31 if kind == "devmap_hash" else U32_MAX
        size_node = self.nodes.require(fields, "max_entries", pair.key_node, path, "an integer > 0")
        size = (
            None
            if size_node is None
            else self.nodes.integer(size_node, f"{path}.max_entries", 1, limit)
        )
        entries: tuple[MapEntrySpec, ...] = ()
        if "entries" in fields:
            entries = self.map_entries(fields["entries"].value, f"{path}.entries", kind, size)
        if kind is None or size is None:
            return None
        map_type: Literal["devmap", "devmap_hash"] = (
            "devmap_hash" if kind == "devmap_hash" else "devmap"
        )
        return MapSpec(pair.key, map_type, size, entries, loc=self.nodes.loc(pair.key_node))

    def cpumap_spec(self, pair: _Pair, fields: dict[str, _Pair], path: str) -> CpuMapSpec | None:
        """``type: cpumap``: max_entries (at most NR_CPUS, ``cpu_map_alloc``: E2BIG) and
        entries {CPU: {qsize, prog}}, each checked as ``cpu_map_update_elem`` would."""
        size_node = self.nodes.require(fields, "max_entries", pair.key_node, path, "an integer > 0")
        size = (
            None
            if size_node is None
            else self.nodes.integer(size_node, f"{path}.max_entries", 1, NR_CPUS)
        )
        entries: list[CpuMapEntrySpec] = []
        node = fields["entries"].value if "entries" in fields else None
        if node is not None and not (isinstance(node, ScalarNode) and node.tag == _NULL):
            for epair in self.nodes.pairs(node, f"{path}.entries", "a mapping of CPUs") or []:
                epath = _join(f"{path}.entries", epair.key)
                entry = self.cpumap_entry(epair, epath, size)
                if entry is not None:
                    entries.append(entry)
        if size is None:
            return None
        return CpuMapSpec(
            pair.key,
            size,
            tuple(sorted(entries, key=lambda e: e.key)),
            self.nodes.loc(pair.key_node),
        )

    def cpumap_entry(self, pair: _Pair, path: str, size: int | None) -> CpuMapEntrySpec | None:
        key = (
            _int_text(_construct(pair.key_node)) if isinstance(pair.key_node, ScalarNode) else None
        )
        if key is None:
            self.nodes.error(
                pair.key_node, path, f"a cpumap key is a CPU, got {_describe(pair.key_node)}"
            )
            return None
        if size is not None and key >= size:
            self.nodes.error(
                pair.key_node,
                path,
                f"key {key} is out of range for a cpumap with max_entries {size} "
                f"(the kernel answers E2BIG); valid: 0..{size - 1}",
            )
            return None
        fields = self.nodes.mapping(pair.value, path, CPUMAP_ENTRY_KEYS, "{qsize, prog}")
        if fields is None:
            return None
        q_node = self.nodes.require(fields, "qsize", pair.value, path, "the ring size, 1..16384")
        qsize = None if q_node is None else self.nodes.integer(q_node, f"{path}.qsize", 1, 16384)
        prog = self.nodes.opt(fields, "prog", path, self.cpumap_program, None)
        if qsize is None:
            return None
        return CpuMapEntrySpec(key, qsize, prog, self.nodes.loc(pair.key_node))

    def cpumap_program(self, node: Node, path: str) -> str | None:
        """A cpumap entry's program: the built-ins xdptui runs in a kthread."""
        name = self.nodes.text(node, path, "cpumap program name")
        if name is None or name in CPUMAP_PROGRAMS_OK:
            return name
        valid = ", ".join(sorted(CPUMAP_PROGRAMS_OK))
        hint = did_you_mean(name, sorted(CPUMAP_PROGRAMS_OK))
        self.nodes.error(node, path, f"unknown cpumap program '{name}'{hint}; valid: {valid}")
        return None

    def map_entries(
        self, node: Node, path: str, kind: str | None, size: int | None
    ) -> tuple[MapEntrySpec, ...]:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return ()
        pairs = self.nodes.pairs(node, path, "a mapping of keys to devices")
        entries: dict[int, MapEntrySpec] = {}
        for pair in pairs or []:
            epath = _join(path, pair.key)
            key = self.map_key(pair, epath, kind, size)
            if key is not None and key in entries:
                self.nodes.error(pair.key_node, epath, f"key {key} is given twice")
                continue
            entry = self.map_entry(pair.value, epath)
            if key is not None and entry is not None:
                dev, egress = entry
                entries[key] = MapEntrySpec(key, dev, egress, loc=self.nodes.loc(pair.key_node))
        if kind == "devmap_hash" and size is not None and len(entries) > size:
            self.nodes.error(
                node,
                path,
                f"{len(entries)} entries don't fit max_entries {size} (the kernel answers E2BIG)",
            )
        return tuple(entries[k] for k in sorted(entries))

    def map_key(self, pair: _Pair, path: str, kind: str | None, size: int | None) -> int | None:
        key = (
            _int_text(_construct(pair.key_node)) if isinstance(pair.key_node, ScalarNode) else None
        )
        if key is None or key > U32_MAX:
            self.nodes.error(
                pair.key_node,
                path,
                f"a map key is an integer 0..{U32_MAX}, got {_describe(pair.key_node)}",
            )
            return None
        if kind == "devmap" and size is not None and key >= size:
            self.nodes.error(
                pair.key_node,
                path,
                f"key {key} is out of range for a devmap with max_entries {size} "
                f"(the kernel answers E2BIG); valid: 0..{size - 1}",
            )
            return None
        return key

    def map_entry(self, node: Node, path: str) -> tuple[str, str | None] | None:
        if isinstance(node, ScalarNode):
            dev = self.nodes.device_ref(node, path)
            return None if dev is None else (dev, None)
        fields = self.nodes.mapping(node, path, ENTRY_KEYS, "a device name or {dev, egress}")
        if fields is None:
            return None
        dev_node = self.nodes.require(fields, "dev", node, path, "the target device")
        dev = None if dev_node is None else self.nodes.device_ref(dev_node, f"{path}.dev")
        egress = self.nodes.opt(
            fields,
            "egress",
            path,
            lambda n, p: self.programs.program(n, p, DEVMAP_EGRESS_OK, "devmap egress program"),
            None,
        )
        return None if dev is None else (dev, egress)

    # traffic

    def traffic(self, node: Node, path: str) -> tuple[TrafficSpec, ...] | None:
        items = self.nodes.sequence(node, path, "a list of traffic sources")
        names: dict[str, int] = {}
        specs: list[TrafficSpec] = []
        for i, item in enumerate(items or []):
            parsed = self.source(item, f"{path}[{i}]")
            if parsed is None:
                continue
            spec, name_node = parsed
            if spec.name in names:
                first = names[spec.name]
                self.nodes.error(
                    name_node,
                    f"{path}[{i}].name",
                    f"duplicate source name '{spec.name}' (first used by {path}[{first}])",
                )
                continue
            names[spec.name] = i
            specs.append(spec)
        return tuple(specs)

    def source(self, node: Node, path: str) -> tuple[TrafficSpec, Node] | None:
        """One source, and the node of its name (for the uniqueness check)."""
        fields = self.nodes.mapping(
            node, path, TRAFFIC_KEYS, "a mapping {name, to|from, rate, ...}"
        )
        if fields is None:
            return None
        name_node = self.nodes.require(fields, "name", node, path, "a unique source name")
        name = None if name_node is None else self.nodes.text(name_node, f"{path}.name")
        to = self.nodes.opt(fields, "to", path, self.receiver_ref, None)
        from_ = self.nodes.opt(fields, "from", path, self.sender_ref, None)
        if from_ is not None and name_node is not None:
            key = self.nodes.text(name_node, f"{path}.name") or ""
            self.from_nodes[key] = (fields["from"].value, f"{path}.from")
        if "to" in fields and "from" in fields:
            self.nodes.error(
                fields["from"].key_node,
                path,
                "give exactly one of 'to' (frames arrive on the device) and 'from' "
                "(the local stack sends out of it), not both",
            )
        elif "to" not in fields and "from" not in fields:
            self.nodes.error(
                node,
                path,
                "missing 'to: DEV' (frames arrive on DEV) "
                "or 'from: DEV' (the local stack sends out of DEV)",
            )
        spec = TrafficSpec(
            name=name or "",
            to=to,
            from_=from_,
            rate=self.nodes.opt(fields, "rate", path, self.nodes.rate, LINE),
            count=self.nodes.opt(
                fields, "count", path, lambda n, p: self.nodes.integer(n, p, 1, U63_MAX), None
            ),
            start_ns=self.nodes.opt(fields, "start", path, self.nodes.duration, 0),
            sizes=self.nodes.opt(fields, "size", path, self.sizes, (64,)),
            proto=self.nodes.opt(
                fields, "proto", path, lambda n, p: self.nodes.choice(n, p, PROTOS, "proto"), "udp"
            ),
            src_mac=self.nodes.opt(
                fields, "src_mac", path, self.mac_range, _DEFAULT_SOURCE.src_mac
            ),
            dst_mac=self.nodes.opt(
                fields, "dst_mac", path, self.mac_range, _DEFAULT_SOURCE.dst_mac
            ),
            src_ip=self.nodes.opt(fields, "src_ip", path, self.ip_range, _DEFAULT_SOURCE.src_ip),
            dst_ip=self.nodes.opt(fields, "dst_ip", path, self.ip_range, _DEFAULT_SOURCE.dst_ip),
            src_port=self.nodes.opt(
                fields, "src_port", path, self.port_range, _DEFAULT_SOURCE.src_port
            ),
            dst_port=self.nodes.opt(
                fields, "dst_port", path, self.port_range, _DEFAULT_SOURCE.dst_port
            ),
            vlan=self.nodes.opt(
                fields, "vlan", path, lambda n, p: self.nodes.integer(n, p, 1, 4094), None
            ),
            flows=self.nodes.opt(
                fields,
                "flows",
                path,
                lambda n, p: self.nodes.integer(n, p, 1, MAX_TABLE_ENTRIES, _TABLE),
                1,
            ),
            random=self.nodes.opt(fields, "random", path, self.nodes.boolean, False),
            gso=self.nodes.opt(fields, "gso", path, self.share, 0.0),
            loc=self.nodes.loc(node),
        )
        if "pcap" in fields or "loop" in fields or spec.rate.kind == "captured":
            spec = self.capture_source(spec, fields, node, path)
        elif not self.check_flow_table(spec, fields, node, path):
            return None
        return None if name is None or name_node is None else (spec, name_node)

    def receiver_ref(self, node: Node, path: str) -> str | None:
        """``to:``: a device frames arrive on. Not a bond: a bond has no wire of its own, its
        frames arrive on its slaves (``bond_handle_frame``, the slaves' rx_handler), on
        whichever the link partner sends them to."""
        name = self.nodes.device_ref(node, path)
        if name is not None and name in self.bond_slaves:
            slaves = self.bond_slaves[name]
            onto = f"; give one of them ({', '.join(slaves)})" if slaves else ""
            self.nodes.error(
                node,
                path,
                f"'{name}' is a bond: frames from the wire arrive on its slaves{onto}, a "
                "source for each slave the link partner sends to",
            )
            return None
        return name

    def sender_ref(self, node: Node, path: str) -> str | None:
        """``from:``: a device the local stack sends out of, or an AF_XDP socket's writer."""
        if isinstance(node, ScalarNode) and str(node.value) in self.xsk.names:
            return str(node.value)
        return self.nodes.device_ref(node, path)

    def capture_source(
        self, spec: TrafficSpec, fields: dict[str, _Pair], node: Node, path: str
    ) -> TrafficSpec:
        """A source that replays a capture (DESIGN, "Traffic from a capture"): the file is
        read now, so a missing, damaged or non-Ethernet capture is this line's error. Its
        frames are its flows; without ``loop`` the source stops after the last one."""
        pair = fields.get("pcap")
        if pair is None:
            key = "loop" if "loop" in fields else "rate"
            self.nodes.error(
                fields[key].key_node,
                _join(path, key),
                f"'{key}: {fields[key].value.value}' is for a source that replays a capture; "
                "add pcap: FILE (a pcap or pcapng file)",
            )
            return spec
        for key in _CAPTURE_DECIDES:
            if key in fields:
                self.nodes.error(
                    fields[key].key_node,
                    _join(path, key),
                    f"'{key}' can't be set on a source that replays a capture: the captured "
                    "bytes decide it",
                )
        text = self.nodes.text(pair.value, _join(path, "pcap"), "a pcap or pcapng file")
        if text is None:
            return spec
        from xdptui.pcap import CaptureError, read_capture

        file = Path(text).expanduser()
        resolved = file if file.is_absolute() else self.programs.base_dir / file
        try:
            cap = read_capture(resolved)
        except CaptureError as exc:
            self.nodes.error(pair.value, _join(path, "pcap"), str(exc))
            return spec
        loop = self.nodes.opt(fields, "loop", path, self.nodes.boolean, False)
        rate = spec.rate if "rate" in fields else AS_CAPTURED
        if rate.kind == "captured" and loop and cap.span_ns <= 0:
            self.nodes.error(
                fields["loop"].key_node,
                _join(path, "loop"),
                "every frame of this capture has the same timestamp, so it has no pace to "
                "loop at; give a rate (e.g. rate: 1Mpps)",
            )
        count = spec.count
        if not loop:
            count = len(cap) if count is None else min(count, len(cap))
        return replace(
            spec,
            pcap=str(resolved.resolve()),
            loop=loop,
            rate=rate,
            count=count,
            flows=len(cap),
            sizes=(len(cap.frames[0]),),
        )

    def check_flow_table(
        self, spec: TrafficSpec, fields: dict[str, _Pair], node: Node, path: str
    ) -> bool:
        """The source's flow table fits (``build_flow_table``: ``lcm(flows, len(sizes))``
        entries, stretched to a multiple of 20 for a GSO share strictly between 0 and 1)."""
        n_sizes = len(spec.sizes)
        entries = flow_table_entries(spec.flows, n_sizes, spec.gso)
        if entries <= MAX_TABLE_ENTRIES:
            return True
        gso = 0.0 < spec.gso < 1.0
        need = f"lcm({spec.flows} flows, {n_sizes} sizes{', 20 for the GSO share' if gso else ''})"
        step = math.lcm(n_sizes, 20) if gso else n_sizes
        best = (min(spec.flows, MAX_TABLE_ENTRIES) // step) * step
        fix = (
            f"e.g. flows: {best} (a multiple of {step})"
            if best
            else f"use fewer sizes (at most {MAX_TABLE_ENTRIES // (20 if gso else 1)})"
        )
        key = next((k for k in ("flows", "size", "gso") if k in fields), None)
        at = fields[key].value if key is not None else node
        self.nodes.error(
            at,
            _join(path, key) if key else path,
            f"the flow table needs {need} = {entries} entries, more than the "
            f"{MAX_TABLE_ENTRIES} a source may have; valid: flows whose table is at most "
            f"{MAX_TABLE_ENTRIES} entries, {fix}",
        )
        return False

    def sizes(self, node: Node, path: str) -> tuple[int, ...] | None:
        if isinstance(node, SequenceNode):
            if not node.value:
                self.nodes.error(node, path, "a size mix needs at least one size (60..9600)")
                return None
            sizes = [
                self.nodes.integer(n, f"{path}[{i}]", 60, 9600) for i, n in enumerate(node.value)
            ]
            return None if None in sizes else tuple(s for s in sizes if s is not None)
        size = self.nodes.integer(node, path, 60, 9600)
        return None if size is None else (size,)

    def share(self, node: Node, path: str) -> float | None:
        what = "a share 0..1 (e.g. 0.3)"
        sc = self.nodes.scalar(node, path, what)
        if sc is None:
            return None
        value = _construct(sc)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.nodes.expected(sc, path, what)
            return None
        if not (math.isfinite(value) and 0 <= value <= 1):
            self.nodes.error(sc, path, f"{value} is out of range; valid: 0..1")
            return None
        return float(value)

    def field_range(
        self,
        node: Node,
        path: str,
        what: str,
        parse: Callable[[str], int | None],
        show: Callable[[int], str],
    ) -> Range | None:
        """One value or ``first-last``, first <= last."""
        text = self.nodes.text(node, path, what)
        if text is None:
            return None
        first_text, dash, last_text = text.partition("-")
        first = parse(first_text.strip())
        last = parse(last_text.strip()) if dash else first
        if first is None or last is None:
            self.nodes.error(node, path, f"'{text}' is not {what}")
            return None
        if first > last:
            self.nodes.error(
                node,
                path,
                f"range {show(first)}-{show(last)} runs backwards; "
                "the first value must be <= the last",
            )
            return None
        return Range(first, last)

    def mac_range(self, node: Node, path: str) -> Range | None:
        what = "a MAC address or first-last range (e.g. 00:11:22:33:44:55)"
        return self.field_range(node, path, what, _parse_mac, _format_mac)

    def ip_range(self, node: Node, path: str) -> Range | None:
        what = "an IPv4 address, first-last range or CIDR (e.g. 10.0.0.1, 10.0.0.0/24)"
        if isinstance(node, ScalarNode) and "/" in str(node.value):
            block = _cidr_hosts(str(node.value))
            if block is None:
                self.nodes.error(node, path, f"'{node.value}' is not {what}")
            return block
        return self.field_range(
            node, path, what, _parse_ipv4, lambda v: str(ipaddress.IPv4Address(v))
        )

    def port_range(self, node: Node, path: str) -> Range | None:
        what = "a port 0..65535 or first-last range (e.g. 1024-65535)"

        def parse(text: str) -> int | None:
            value = int(text) if text.isdigit() else None
            return value if value is not None and value <= 65535 else None

        return self.field_range(node, path, what, parse, str)

    # timeline and lessons

    def command(self, node: Node, path: str) -> str | None:
        """A command string; a Python program it names is checked like ``xdp:``'s and written
        back as its absolute path, so the command runs the file beside the topology."""
        text = self.nodes.text(node, path, "a command string")
        if text is None:
            return None
        if self.validate is not None:
            try:
                problem = self.validate(text)
            except Exception as exc:  # a bug in the validator must not become a traceback here
                problem = f"can't check this command ({type(exc).__name__}: {exc})"
            if problem is not None:
                self.nodes.error(node, path, problem)
                return text
        return self.programs.in_command(node, path, text)

    def timeline(self, node: Node, path: str) -> tuple[TimelineEntry, ...] | None:
        items = self.nodes.sequence(node, path, "a list of {at, do}")
        entries: list[TimelineEntry] = []
        for i, item in enumerate(items or []):
            ipath = f"{path}[{i}]"
            fields = self.nodes.mapping(
                item, ipath, TIMELINE_KEYS, "a mapping {at: TIME, do: COMMAND}"
            )
            if fields is None:
                continue
            at_node = self.nodes.require(fields, "at", item, ipath, "when, e.g. 2ms")
            do_node = self.nodes.require(
                fields, "do", item, ipath, "a command, e.g. 'ip link set dev eth1 down'"
            )
            step = self.step_ref(at_node) if at_node is not None else None
            at = None
            if at_node is not None and step is None:
                if isinstance(at_node, ScalarNode) and re.match(
                    r"^\s*(step|lesson)\b", str(at_node.value)
                ):
                    self.nodes.error(
                        at_node,
                        f"{ipath}.at",
                        f"{_describe(at_node)} is not a lesson step; use 'step N' or "
                        "'lesson L step N' (counted from 1), or a time such as 4ms",
                    )
                    continue
                at = self.nodes.duration(at_node, f"{ipath}.at")
            do = None if do_node is None else self.command(do_node, f"{ipath}.do")
            if (at is not None or step is not None) and do is not None:
                entries.append(TimelineEntry(at or 0, do, loc=self.nodes.loc(item), step=step))
        return tuple(sorted(entries, key=lambda e: (e.step is not None, e.at_ns)))

    def step_ref(self, node: Node) -> tuple[int, int] | None:
        """``at: step N`` / ``at: lesson L step N`` as (lesson, step) from 0; None otherwise."""
        if not isinstance(node, ScalarNode):
            return None
        m = re.match(STEP_AT_PATTERN, str(node.value))
        if m is None:
            return None
        return (int(m.group(1) or 1) - 1, int(m.group(2)) - 1)

    def lessons(self, node: Node, path: str) -> tuple[Lesson, ...] | None:
        items = self.nodes.sequence(node, path, "a list of {title, steps}")
        lessons: list[Lesson] = []
        for i, item in enumerate(items or []):
            ipath = f"{path}[{i}]"
            fields = self.nodes.mapping(item, ipath, LESSON_KEYS, "a mapping {title, steps}")
            if fields is None:
                continue
            title_node = self.nodes.require(fields, "title", item, ipath, "the lesson's title")
            title = None if title_node is None else self.nodes.text(title_node, f"{ipath}.title")
            no_steps: tuple[LessonStep, ...] = ()
            steps = self.nodes.opt(fields, "steps", ipath, self.steps, no_steps)
            if title is not None:
                lessons.append(Lesson(title, steps))
        return tuple(lessons)

    def steps(self, node: Node, path: str) -> tuple[LessonStep, ...] | None:
        items = self.nodes.sequence(node, path, "a list of {text, commands}")
        steps: list[LessonStep] = []
        for i, item in enumerate(items or []):
            spath = f"{path}[{i}]"
            fields = self.nodes.mapping(item, spath, STEP_KEYS, "a mapping {text, commands}")
            if fields is None:
                continue
            text_node = self.nodes.require(fields, "text", item, spath, "what to say at this step")
            text = None if text_node is None else self.nodes.text(text_node, f"{spath}.text")
            no_commands: tuple[str, ...] = ()
            commands = self.nodes.opt(fields, "commands", spath, self.commands, no_commands)
            speed = self.nodes.opt(fields, "speed", spath, self.clock_speed, None)
            pause = self.nodes.opt(fields, "pause", spath, self.nodes.boolean, False)
            at = self.nodes.opt(fields, "at", spath, self.nodes.duration, None)
            if text is not None:
                steps.append(LessonStep(text, commands, speed, pause, at))
        return tuple(steps)

    def clock_speed(self, node: Node, path: str) -> int | None:
        return self.nodes.unit(node, path, parse_clock_speed, "a clock speed (e.g. 10us/s, real)")

    def commands(self, node: Node, path: str) -> tuple[str, ...] | None:
        items = self.nodes.sequence(node, path, "a list of command strings")
        if items is None:
            return None
        commands = [self.command(item, f"{path}[{i}]") for i, item in enumerate(items)]
        return tuple(c for c in commands if c is not None)
