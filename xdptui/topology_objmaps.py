"""The topology loader's object maps: ``maps: {NAME: {type: object, entries: [{key, value}]}}``
gives elements to a map an object attached at start declares.

Keys and values are bpftool's words (``hex 35 00``, ``0x35 0``, ``53 0``), parsed by the same
code as ``bpftool map update``'s (``commands.parse_bytes``, bpftool's ``parse_bytes``), and
held to the declaring map's sizes as bpftool holds them (``BpfMap.tool_key`` /
``tool_value``: ``Error: key expected 2 bytes got 1``), each refusal at the file, line and
field that gave it. The map is found by its kernel name (``bpftool map show``'s, libbpf's
``internal_map_name`` for ``.data``/``.bss``) among the maps of the objects the devices'
``xdp:`` attach; the engine applies the elements after those attaches (``sim.engine``).

An array or hash of maps takes ``value: {map: NAME}``: a map of the same object put in that
slot (``bpftool map update ... value name NAME``), which must fit the slots' template as
``bpf_map_meta_equal`` holds it (same type, key and value sizes, flags, and an array's
max_entries)."""

from __future__ import annotations

from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode

from xdptui.bpf.elf import load_object
from xdptui.bpf.maps import HOST_TYPES, BpfMap, MapType, kernel_map_name, meta_equal
from xdptui.commands import parse_bytes
from xdptui.model.catalog import is_object_program
from xdptui.model.errors import KernelError, UsageError
from xdptui.model.topology import DeviceSpec, ObjectMapEntrySpec, ObjectMapSpec
from xdptui.model.topology_spec import INNER_MAP_KEYS, OBJECT_MAP_ENTRY_KEYS
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
        self._objects: dict[int, dict[str, BpfMap]] = {}  # id(map) -> its object's maps

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
        inner = None
        if isinstance(value_node, MappingNode):
            inner = self.inner_map(value_node, f"{path}.value")
            if inner is None:
                return None
            value: tuple[str, bytes] | None = (f"name {inner}", b"")
        else:
            value = self.words(value_node, f"{path}.value", "value")
        if key is None or value is None:
            return None
        entry = ObjectMapEntrySpec(
            key[0], value[0], key[1], value[1], self.nodes.loc(key_node), inner
        )
        self.where[name].append((entry, key_node, value_node, path))
        return entry

    def inner_map(self, node: Node, path: str) -> str | None:
        """``{map: NAME}``: the map that goes in a map-in-map's slot."""
        fields = self.nodes.mapping(node, path, INNER_MAP_KEYS, "an inner map {map: NAME}")
        if fields is None:
            return None
        name_node = self.nodes.require(fields, "map", node, path, "a map of the same object")
        return None if name_node is None else self.nodes.text(name_node, f"{path}.map")

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
        valid = sorted(n for n, m in maps.items() if m.map_type not in HOST_TYPES)
        for spec in specs:
            node = self.name_nodes[spec.name]
            m = maps.get(spec.name)
            if m is None or m.map_type in HOST_TYPES:
                have = ", ".join(valid) if valid else "none (no device attaches a BPF object)"
                why = (
                    f"'{spec.name}' is a devmap: give it type devmap"
                    if m is not None
                    else f"no BPF object a device attaches at start has a map '{spec.name}'"
                )
                self.nodes.error(node, f"maps.{spec.name}", f"{why}; valid: {have}")
                continue
            for entry, key_node, value_node, path in self.where[spec.name]:
                if m.is_of_maps or entry.value_map is not None:
                    self.slot(m, maps, entry, (key_node, value_node), path)
                    continue
                self.sizes(m, entry, (key_node, value_node), path)

    def slot(
        self,
        m: BpfMap,
        maps: dict[str, BpfMap],
        entry: ObjectMapEntrySpec,
        nodes: tuple[Node, Node],
        path: str,
    ) -> None:
        """A map-in-map's element: the key as bpftool holds it, the value an inner map of
        the same object that fits the slots' template (``bpf_map_meta_equal``, else the
        update's EINVAL)."""
        where = _join(path, "value")
        if entry.value_map is None:
            self.nodes.error(
                nodes[1], where, f"{m.name} is {_a(m)}: its value is a map, {{map: NAME}}"
            )
            return
        if not m.is_of_maps:
            self.nodes.error(
                nodes[1],
                where,
                f"{{map: {entry.value_map}}} is a value for an array or hash of maps; "
                f"{m.name} is {_a(m)} map: give its value's bytes",
            )
            return
        try:
            m.tool_key(entry.key_bytes)
        except KernelError as exc:
            self.nodes.error(nodes[0], _join(path, "key"), f"bpftool map update: {exc.extack}")
        siblings = self.siblings(m)
        inner = siblings.get(entry.value_map)
        if inner is None:
            have = ", ".join(sorted(n for n, x in siblings.items() if not x.is_of_maps)) or "none"
            self.nodes.error(
                nodes[1],
                where,
                f"no map '{entry.value_map}' in the object that declares {m.name}; valid: {have}",
            )
            return
        assert m.inner_meta is not None
        if not meta_equal(m.inner_meta, inner):
            t = m.inner_meta
            self.nodes.error(
                nodes[1],
                where,
                f"bpftool map update: Error: update failed: Invalid argument ('{inner.name}' "
                f"is {_a(inner)} of key {inner.key_size}B value {inner.value_size}B "
                f"max_entries {inner.max_entries}; {m.name}'s slots take {_a(t)} of key "
                f"{t.key_size}B value {t.value_size}B max_entries {t.max_entries})",
            )

    def siblings(self, m: BpfMap) -> dict[str, BpfMap]:
        """The maps of the object that declares ``m``, by kernel name."""
        return self._objects.get(id(m), {})

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

    def attached_maps(self, devices: tuple[DeviceSpec, ...], cpus: int) -> dict[str, BpfMap]:
        """The maps of the objects the devices attach at start, by kernel name (the first
        object's, when several declare one name: they have the same definition or a
        ``type: object`` entry could not fill both)."""
        out: dict[str, BpfMap] = {}
        objects = self._objects
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
            names = {kernel_map_name(stem, m.name): m for m in prog.maps}
            for m in prog.maps:  # the maps the load creates (bpftool map show lists them)
                out.setdefault(kernel_map_name(stem, m.name), m)
                objects[id(m)] = names
        return out


def _a(m: BpfMap) -> str:
    """``an array`` / ``a hash``: the map's type with its article."""
    kind = MapType(m.map_type).name.lower()
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
