"""The topology loader's object maps: ``maps: {NAME: {type: object, entries: [{key, value}]}}``
gives elements to a map an object attached at start declares.

Keys and values are bpftool's words (``hex 35 00``, ``0x35 0``, ``53 0``), parsed by the same
code as ``bpftool map update``'s (``commands.parse_bytes``, bpftool's ``parse_bytes``), and
held to the declaring map's sizes as bpftool holds them (``BpfMap.tool_key`` /
``tool_value``: ``Error: key expected 2 bytes got 1``), each refusal at the file, line and
field that gave it. The map is found by its kernel name (``bpftool map show``'s, libbpf's
``internal_map_name`` for ``.data``/``.bss``) among the maps of the objects the devices'
``xdp:`` attach; the engine applies the elements after those attaches (``sim.engine``)."""

from __future__ import annotations

from pathlib import Path

from yaml.nodes import Node, ScalarNode

from xdptui.bpf.elf import load_object
from xdptui.bpf.maps import DEVMAP_TYPES, BpfMap, kernel_map_name
from xdptui.commands import parse_bytes
from xdptui.model.catalog import is_object_program
from xdptui.model.errors import KernelError, UsageError
from xdptui.model.topology import DeviceSpec, ObjectMapEntrySpec, ObjectMapSpec
from xdptui.model.topology_spec import OBJECT_MAP_ENTRY_KEYS
from xdptui.topology_nodes import NodeReader
from xdptui.topology_programs import object_file
from xdptui.topology_yaml import _NULL, _join, _Pair

# Each entry with where its key and value were written (nodes, path), per map name.
_Nodes = dict[str, list[tuple[ObjectMapEntrySpec, Node, Node, str]]]


class ObjectMapLoader:
    """Reads ``type: object`` maps, then checks them against the objects attached at start."""

    def __init__(self, nodes: NodeReader) -> None:
        self.nodes = nodes
        self.where: _Nodes = {}
        self.name_nodes: dict[str, Node] = {}

    def spec(self, pair: _Pair, fields: dict[str, _Pair], path: str) -> ObjectMapSpec | None:
        """One ``type: object`` map: its entries, parsed as bpftool parses them."""
        if "max_entries" in fields:
            self.nodes.error(
                fields["max_entries"].key_node,
                f"{path}.max_entries",
                "an object's map has the max_entries its object declares; remove max_entries",
            )
        self.name_nodes[pair.key] = pair.key_node
        self.where[pair.key] = []
        entries: list[ObjectMapEntrySpec] = []
        node = fields["entries"].value if "entries" in fields else None
        if node is None or (isinstance(node, ScalarNode) and node.tag == _NULL):
            return ObjectMapSpec(pair.key, (), loc=self.nodes.loc(pair.key_node))
        items = self.nodes.sequence(node, f"{path}.entries", "a list of {key, value}")
        for i, item in enumerate(items or []):
            entry = self.entry(item, f"{path}.entries[{i}]", pair.key)
            if entry is not None:
                entries.append(entry)
        return ObjectMapSpec(pair.key, tuple(entries), loc=self.nodes.loc(pair.key_node))

    def entry(self, node: Node, path: str, name: str) -> ObjectMapEntrySpec | None:
        fields = self.nodes.mapping(node, path, OBJECT_MAP_ENTRY_KEYS, "a mapping {key, value}")
        if fields is None:
            return None
        key_node = self.nodes.require(fields, "key", node, path, "the key's bytes: hex 35 00")
        value_node = self.nodes.require(fields, "value", node, path, "the value's bytes: hex 01")
        if key_node is None or value_node is None:
            return None
        key = self.words(key_node, f"{path}.key", "key")
        value = self.words(value_node, f"{path}.value", "value")
        if key is None or value is None:
            return None
        entry = ObjectMapEntrySpec(key[0], value[0], key[1], value[1], self.nodes.loc(key_node))
        self.where[name].append((entry, key_node, value_node, path))
        return entry

    def words(self, node: Node, path: str, what: str) -> tuple[str, bytes] | None:
        """bpftool's words for a key or value and the bytes it makes of them."""
        text = self.nodes.text(node, path, f"the {what}'s bytes as bpftool takes them: hex 35 00")
        if text is None:
            return None
        try:
            return text, parse_bytes(text, what)
        except UsageError as exc:
            self.nodes.error(node, path, f"bpftool map update: {exc}")
            return None

    def check(
        self, specs: tuple[ObjectMapSpec, ...], devices: tuple[DeviceSpec, ...], cpus: int
    ) -> None:
        """Each named map is a map of an object some device attaches at start, and each
        element has the sizes bpftool would demand of it."""
        if not specs:
            return
        maps = self.attached_maps(devices, cpus)
        valid = sorted(n for n, m in maps.items() if m.map_type not in DEVMAP_TYPES)
        for spec in specs:
            node = self.name_nodes[spec.name]
            m = maps.get(spec.name)
            if m is None or m.map_type in DEVMAP_TYPES:
                have = ", ".join(valid) if valid else "none (no device attaches a BPF object)"
                why = (
                    f"'{spec.name}' is a devmap: give it type devmap"
                    if m is not None
                    else f"no BPF object a device attaches at start has a map '{spec.name}'"
                )
                self.nodes.error(node, f"maps.{spec.name}", f"{why}; valid: {have}")
                continue
            for entry, key_node, value_node, path in self.where[spec.name]:
                self.sizes(m, entry, (key_node, value_node), path)

    def sizes(
        self, m: BpfMap, entry: ObjectMapEntrySpec, nodes: tuple[Node, Node], path: str
    ) -> None:
        try:
            m.tool_key(entry.key_bytes)
        except KernelError as exc:
            self.nodes.error(nodes[0], _join(path, "key"), f"bpftool map update: {exc.extack}")
        try:
            m.tool_value(entry.value_bytes)
        except KernelError as exc:
            self.nodes.error(nodes[1], _join(path, "value"), f"bpftool map update: {exc.extack}")

    @staticmethod
    def attached_maps(devices: tuple[DeviceSpec, ...], cpus: int) -> dict[str, BpfMap]:
        """The maps of the objects the devices attach at start, by kernel name (the first
        object's, when several declare one name: they have the same definition or a
        ``type: object`` entry could not fill both)."""
        out: dict[str, BpfMap] = {}
        for dev in devices:
            if dev.xdp is None or not is_object_program(dev.xdp.program):
                continue
            file = object_file(dev.xdp.program)
            section = dev.xdp.program[len(file) + 1 :] or None
            try:
                prog = load_object(file, cpus).program(section)
            except KernelError:
                continue  # the device's xdp: has said why
            stem = Path(file).name.removesuffix(".o")
            for m in prog.maps:  # the maps the load creates (bpftool map show lists them)
                out.setdefault(kernel_map_name(stem, m.name), m)
        return out
