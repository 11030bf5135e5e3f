"""``bpftool map update|delete|lookup`` on a loaded object's own maps, in bpftool's words.

Keys and values are bytes as bpftool parses them (``key 0x01 0 0 0``, ``key hex 01 00 00 00``);
the map is found by name or id (``show.find_maps``), its length rules are bpftool's (``key
expected 4 bytes got 1``), and the map commands are ``BPF_MAP_UPDATE_ELEM`` /
``DELETE_ELEM`` / ``LOOKUP_ELEM`` with the kernel's errno (``maps.BpfMap``). A per-CPU
map's value is given for one CPU and set on every possible CPU, or given whole (rounded to 8
bytes per CPU), as ``bpf_map_update_elem`` copies it. A change makes the programs that read
the map be evaluated again (the owning load's ``user_gen`` is part of what their probes
depend on). An array or hash of maps takes a map as its value (``value id N`` / ``value name
M``, bpftool's ``map_parse_fd``): the inner map must fit the outer map's template
(``bpf_map_fd_get_ptr``: EINVAL), and here it must be a map of the outer map's own object.
"""

from __future__ import annotations

from xdptui.bpf.maps import BpfMap
from xdptui.model import commands as cmd
from xdptui.model.errors import Errno, KernelError
from xdptui.sim import show
from xdptui.sim.world import World


class MapToolError(KernelError):
    """A failure bpftool prints in its own words (an ``Error: ...`` line)."""


def _find(world: World, name: str | None, map_id: int | None) -> show.ObjMap:
    found = show.find_maps(world, name or None, map_id)
    objs = [m for m in found if isinstance(m, show.ObjMap)]
    if not objs:
        what = f"id {map_id}" if map_id is not None else f"name {name}"
        if found:  # a host devmap: its value is a device (value DEV)
            raise MapToolError(
                Errno.EINVAL,
                f"Error: {what} is a devmap of the host: update it with 'key K value DEV'",
            )
        raise MapToolError(
            Errno.ENOENT, f"Error: get map by {what} failed: No such file or directory"
        )
    if len(objs) > 1 and map_id is None:
        raise MapToolError(
            Errno.EINVAL,
            f"Error: several maps named {name} (ids {', '.join(str(m.map_id) for m in objs)}): "
            "use id N",
        )
    return objs[0]


def _key(m: BpfMap, key: bytes) -> bytes:
    try:
        return m.tool_key(key)
    except KernelError as exc:
        raise MapToolError(exc.errno, exc.extack) from None


def _value(m: BpfMap, value: bytes) -> bytes:
    try:
        return m.tool_value(value)
    except KernelError as exc:
        raise MapToolError(exc.errno, exc.extack) from None


def _changed(world: World, m: BpfMap) -> None:
    for p in show.loaded_programs(world):
        obj = p.prog.obj
        if obj is not None and any(x is m for x in obj.maps):
            obj.user_gen += 1
    world.touch()


def _owner(world: World, m: BpfMap) -> list[BpfMap]:
    """The maps of the loaded object that holds ``m``."""
    for p in show.loaded_programs(world):
        obj = p.prog.obj
        if obj is not None and any(x is m for x in obj.maps):
            return obj.maps
    return []


def _inner(world: World, outer: BpfMap, handle: tuple[str, str]) -> BpfMap:
    """The map bpftool's ``MAP`` (``id N``, ``name M``, ``pinned FILE``) names, for a slot of
    ``outer`` (``map_parse_fd``, its words on failure)."""
    kind, arg = handle
    if kind == "pinned":
        raise MapToolError(Errno.ENOENT, f"Error: bpf obj get ({arg}): No such file or directory")
    if kind == "id":
        found = show.find_maps(world, None, int(arg, 0))
        if not found:
            raise MapToolError(
                Errno.ENOENT, f"Error: get map by id ({arg}): No such file or directory"
            )
    else:
        found = show.find_maps(world, arg, None)
        if not found:
            raise MapToolError(
                Errno.ENOENT, f"Error: get map by name {arg} failed: No such file or directory"
            )
        if len(found) > 1:
            raise MapToolError(Errno.EINVAL, "Error: several maps match this handle")
    (inner,) = found
    if not isinstance(inner, show.ObjMap) or not any(x is inner.map for x in _owner(world, outer)):
        raise MapToolError(
            Errno.EOPNOTSUPP,
            f"Error: map {inner.name} (id {inner.map_id}) is not a map of the object that "
            f"declares {outer.name}: xdptui models inner maps of the outer map's own object",
        )
    return inner.map


def update(world: World, c: cmd.MapUpdate) -> str:
    om = _find(world, c.map, c.map_id)
    assert c.key_bytes is not None
    m = om.map
    if m.is_of_maps:
        return _update_outer(world, m, c)
    if c.value_map is not None:  # parse_bytes on a map handle's first word
        raise MapToolError(Errno.EINVAL, f"Error: error parsing byte: {c.value_map[0]}")
    assert c.value_bytes is not None
    key, value = _key(m, c.key_bytes), _value(m, c.value_bytes)
    try:
        m.update(key, value, c.flags)
    except KernelError as exc:
        raise MapToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
    _changed(world, m)
    return ""


def _update_outer(world: World, m: BpfMap, c: cmd.MapUpdate) -> str:
    """``bpftool map update`` on an array or hash of maps: ``value`` names the inner map."""
    assert c.key_bytes is not None
    key = _key(m, c.key_bytes)
    if c.value_map is None:
        raise MapToolError(
            Errno.EINVAL, f"Error: expected 'id', 'name' or 'pinned', got: '{c.dev}'?"
        )
    inner = _inner(world, m, c.value_map)
    try:
        m.update_inner(key, inner, c.flags)
    except KernelError as exc:
        raise MapToolError(exc.errno, f"Error: update failed: {exc.errno.strerror}") from None
    _changed(world, m)
    return ""


def delete(world: World, c: cmd.MapDelete) -> str:
    om = _find(world, c.map, c.map_id)
    assert c.key_bytes is not None
    m = om.map
    try:
        m.delete(_key(m, c.key_bytes))
    except KernelError as exc:
        raise MapToolError(exc.errno, f"Error: delete failed: {exc.errno.strerror}") from None
    _changed(world, m)
    return ""


def lookup(world: World, c: cmd.MapLookup) -> str:
    """``bpftool map lookup``: the element as ``map dump`` prints it, or "Not found"."""
    m = _find(world, c.map, c.map_id).map
    key = _key(m, c.key_bytes)
    try:
        value = m.lookup(key)
    except KernelError as exc:
        if exc.errno != Errno.ENOENT:
            raise MapToolError(exc.errno, f"Error: lookup failed: {exc.errno.strerror}") from None
        if c.json:
            return "null"
        raise MapToolError(
            Errno.ENOENT, f"key:\n{' '.join(f'{b:02x}' for b in key)}\n\nNot found"
        ) from None
    return m.entry_text(key, value, c.json)
