"""What the inspection tools print: ``ip [-j] [-s] link show``, ``bpftool [-j] prog|net|map``,
``ethtool -S``. Pure functions of the world: each device's facts are gathered once
(:func:`link_facts`) and rendered as iproute2's text or its JSON.

Shapes as the tools print them (iproute2 ``ip/ipaddress.c: print_linkinfo`` and
``ip/iplink_xdp.c: xdp_dump``; bpftool ``prog.c: print_prog_plain/print_prog_json`` and
``net.c: do_show``; ethtool ``-S`` = the driver's ``get_strings`` + ``get_ethtool_stats``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from xdptui.bpf.maps import BpfMap, MapType
from xdptui.model.catalog import program_info
from xdptui.model.errors import Errno
from xdptui.sim.bond.bond_main import Bond, bond_get_stats
from xdptui.sim.core.bpf_obj import ObjProgram
from xdptui.sim.cpumap import CpuMap
from xdptui.sim.dev.netdev import MODE_DRV, MODE_HW, MODE_SKB, NetDev
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import DevMap
from xdptui.sim.programs import Program
from xdptui.sim.world import World
from xdptui.sim.xsk import XskMap

# ------------------------------------------------------------------ programs

XDP_ATTACHED = {MODE_DRV: 1, MODE_SKB: 2, MODE_HW: 3}  # XDP_ATTACHED_DRV / _SKB / _HW
XDP_ATTACHED_MULTI = 4
NET_MODE = {MODE_DRV: "driver", MODE_SKB: "generic", MODE_HW: "offload"}  # bpftool net
BPF_OBJ_NAME_LEN = 16  # the kernel keeps 15 characters and a NUL
BPF_F_MMAPABLE = 1 << 10
BOOT_EPOCH = 1_700_000_000  # wall clock at simulated time 0 (for loaded_at)


def kernel_name(prog: Program) -> str:
    """``bpf_prog_info.name``: the ELF function's name cut to 15 characters (a user program's
    ``file.py:function`` becomes ``function``)."""
    if prog.obj is not None:
        return prog.obj.name[: BPF_OBJ_NAME_LEN - 1]
    return prog.name.rpartition(":")[2][: BPF_OBJ_NAME_LEN - 1]


@dataclass(frozen=True)
class LoadedProg:
    """One loaded program as ``BPF_OBJ_GET_INFO_BY_FD`` reports it.

    A real object's ``tag`` is the kernel's (``bpf_prog_calc_tag``) and ``xlated`` its
    instructions before the verifier's rewrites; for a built-in or Python program the tag is a
    deterministic 16-hex digest of its name and parameters and the sizes are derived from it.
    """

    prog: Program
    loaded_ns: int
    map_ids: tuple[int, ...]

    @property
    def id(self) -> int:
        return self.prog.prog_id

    @property
    def name(self) -> str:
        return kernel_name(self.prog)

    @property
    def tag(self) -> str:
        if self.prog.obj is not None:
            return self.prog.obj.code.tag
        text = self.prog.name + "\0" + "\0".join(f"{k}={v}" for k, v in self.prog.params)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def bytes_xlated(self) -> int:
        if self.prog.obj is not None:
            return 8 * self.prog.obj.code.insns
        insns = 2 + int(self.tag[:2], 16) % 48 + 4 * len(self.map_ids)
        return 8 * insns

    @property
    def bytes_jited(self) -> int:
        return self.bytes_xlated + self.bytes_xlated // 4 + 3

    @property
    def loaded_at(self) -> int:
        return BOOT_EPOCH + self.loaded_ns // 1_000_000_000


def _map_ids(world: World, prog: Program) -> tuple[int, ...]:
    if prog.obj is not None:
        return tuple(sorted(prog.obj.map_ids))
    info = program_info(prog.name)
    if info is None:
        return ()
    kinds = {p.name: p.kind for p in info.params}
    ids = {
        world.maps[v].map_id for k, v in prog.params if kinds.get(k) == "map" and v in world.maps
    }
    return tuple(sorted(ids))


def loaded_programs(world: World) -> list[LoadedProg]:
    """Every program a device or a devmap entry holds (a detached program is freed), by id."""
    found: dict[int, Program] = {}
    for dev in world.devices.values():
        for att in dev.xdp.values():
            found.setdefault(att.prog.prog_id, att.prog)
    for m in world.maps.values():
        for _, entry in m.walk():
            if entry.egress is not None:
                found.setdefault(entry.egress.prog_id, entry.egress)
    return [
        LoadedProg(p, world.prog_loaded_ns.get(i, 0), _map_ids(world, p))
        for i, p in sorted(found.items())
    ]


def prog_show(world: World, as_json: bool) -> str:
    """``bpftool prog show``; built-ins and user programs alike are BPF_PROG_TYPE_XDP (a
    devmap egress program too: expected_attach_type BPF_XDP_DEVMAP is not printed)."""
    progs = loaded_programs(world)
    if as_json:
        rows: list[dict[str, Any]] = []
        for p in progs:
            row: dict[str, Any] = {
                "id": p.id,
                "type": "xdp",
                "name": p.name,
                "tag": p.tag,
                "gpl_compatible": True,
                "loaded_at": p.loaded_at,
                "uid": 0,
                "orphaned": False,
                "bytes_xlated": p.bytes_xlated,
                "jited": True,
                "bytes_jited": p.bytes_jited,
                "bytes_memlock": 4096,
            }
            if p.map_ids:
                row["map_ids"] = list(p.map_ids)
            obj = p.prog.obj
            if obj is not None and obj.depends is not None:
                row["xdptui"] = {"per_frame": obj.depends, "approximated": obj.approximated}
            rows.append(row)
        return _json(rows)
    lines: list[str] = []
    for p in progs:
        stamp = datetime.fromtimestamp(p.loaded_at, UTC).strftime("%Y-%m-%dT%H:%M:%S%z")
        maps = f"  map_ids {','.join(map(str, p.map_ids))}" if p.map_ids else ""
        lines.append(f"{p.id}: xdp  name {p.name}  tag {p.tag}  gpl")
        lines.append(f"\tloaded_at {stamp}  uid 0")
        lines.append(f"\txlated {p.bytes_xlated}B  jited {p.bytes_jited}B  memlock 4096B{maps}")
        obj = p.prog.obj
        if obj is not None and obj.depends is not None:
            lines.append(f"\txdptui: {per_frame_note(obj)}")
        if obj is not None and obj.fault is not None:
            lines.append(f"\txdptui: faults on some frames, which are XDP_ABORTED: {obj.fault}")
    return "\n".join(lines)


def per_frame_note(obj: ObjProgram) -> str:
    """What the simulator does with a program whose verdict can vary frame to frame."""
    note = f"run frame by frame in exact mode ({obj.depends})"
    if obj.approximated:
        note += f"; fast mode approximated {obj.approximated:,} frames by sampling"
    return note


def net_show(world: World, as_json: bool) -> str:
    """``bpftool net``: the XDP programs netlink reports per device (IFLA_XDP), then the tc,
    flow_dissector and netfilter sections (nothing of those is modelled: empty)."""
    attached = [
        (dev, mode, att.prog.prog_id)
        for dev in sorted(world.devices.values(), key=lambda d: d.ifindex)
        for mode, att in own_xdp(dev).items()
    ]
    if as_json:
        xdp = [
            {"devname": d.name, "ifindex": d.ifindex, "mode": NET_MODE[m], "id": i}
            for d, m, i in attached
        ]
        return _json([{"xdp": xdp, "tc": [], "flow_dissector": [], "netfilter": []}])
    lines = ["xdp:"]
    lines += [f"{d.name}({d.ifindex}) {NET_MODE[m]} id {i}" for d, m, i in attached]
    lines += ["", "tc:", "", "flow_dissector:", "", "netfilter:", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ links


def own_xdp(dev: NetDev) -> dict[str, Any]:
    """The device's own ``xdp_state``: a bond pushes its program through the slaves' ndo_bpf,
    so netlink does not report it on the slaves."""
    return {m: a for m, a in dev.xdp.items() if a.inherited_from is None}


@dataclass(frozen=True)
class XdpFact:
    mode: str
    prog: LoadedProg
    inherited_from: str | None = None


@dataclass(frozen=True)
class LinkFacts:
    """One device as ``RTM_GETLINK`` describes it."""

    ifindex: int
    ifname: str
    link: str | None  # IFLA_LINK: a veth's peer
    flags: tuple[str, ...]
    mtu: int
    qdisc: str
    master: str | None
    operstate: str
    txqlen: int
    address: str
    kind: str | None  # IFLA_INFO_KIND
    queues: int
    xdp: tuple[XdpFact, ...]  # own attachments
    inherited: tuple[XdpFact, ...]  # pushed by a bond (shown by xdptui's -d only)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)


def mac_address(world: World, dev: NetDev) -> str:
    """A locally administered MAC per ifindex; a bond takes its first slave's (as bonding)."""
    if isinstance(dev, Bond) and dev.slaves and dev.slaves[0] in world.devices:
        dev = world.devices[dev.slaves[0]]
    return f"02:00:00:00:{dev.ifindex >> 8 & 0xFF:02x}:{dev.ifindex & 0xFF:02x}"


def link_facts(world: World, dev: NetDev) -> LinkFacts:
    progs = {p.id: p for p in loaded_programs(world)}
    peer = world.devices.get(dev.peer) if isinstance(dev, Veth) else None
    flags: list[str] = []
    if dev.admin_up and not dev.running:
        flags.append("NO-CARRIER")
    flags += ["BROADCAST", "MULTICAST"]
    if isinstance(dev, Bond):
        flags.append("MASTER")
    if dev.master is not None:
        flags.append("SLAVE")
    if dev.admin_up:
        flags.append("UP")
        if dev.running:
            flags.append("LOWER_UP")
    if peer is not None and not peer.admin_up:
        flags.append("M-DOWN")
    if dev.running:
        operstate = "UP"
    elif dev.admin_up and isinstance(dev, Veth):
        operstate = "LOWERLAYERDOWN"  # rfc2863_policy: iflink != ifindex
    else:
        operstate = "DOWN"
    queues = 1
    if isinstance(dev, Nic | Veth | Tun):
        queues = dev.queues
    own = own_xdp(dev)
    k = bond_get_stats(dev, world.devices) if isinstance(dev, Bond) else dev.get_stats64()
    stats = {
        "rx": {
            "bytes": k["rx_bytes"],
            "packets": k["rx_packets"],
            "errors": 0,
            "dropped": k["rx_dropped"],
            "over_errors": 0,
            "multicast": 0,
            "missed_errors": k["rx_missed_errors"],
        },
        "tx": {
            "bytes": k["tx_bytes"],
            "packets": k["tx_packets"],
            "errors": 0,
            "dropped": k["tx_dropped"],
            "carrier_errors": 0,
            "collisions": 0,
        },
    }
    kind = {Veth: "veth", Bond: "bond", Tun: "tun"}.get(type(dev))
    return LinkFacts(
        ifindex=dev.ifindex,
        ifname=dev.name,
        link=dev.peer if isinstance(dev, Veth) else None,
        flags=tuple(flags),
        mtu=dev.mtu,
        qdisc="noqueue" if isinstance(dev, Veth | Bond) else "mq",
        master=dev.master,
        operstate=operstate,
        txqlen=dev.tx_queue_len if isinstance(dev, Tun) else 1000,
        address=mac_address(world, dev),
        kind=kind,
        queues=queues,
        xdp=tuple(XdpFact(m, progs[a.prog.prog_id]) for m, a in own.items()),
        inherited=tuple(
            XdpFact(m, progs[a.prog.prog_id], a.inherited_from)
            for m, a in dev.xdp.items()
            if a.inherited_from is not None
        ),
        stats=stats,
    )


SHOW_MODE = {MODE_DRV: "xdp", MODE_SKB: "xdpgeneric", MODE_HW: "xdpoffload"}


def link_text(f: LinkFacts, stats: bool, details: bool) -> list[str]:
    """``ip [-s] [-d] link show``: ``xdp``/``xdpgeneric``/``xdpmulti`` after the MTU, then
    ``/id:N`` (``xdp_dump`` without details)."""
    name = f"{f.ifname}@{f.link}" if f.link else f.ifname
    xdp = ""
    if len(f.xdp) > 1:
        xdp = " xdpmulti"
    elif f.xdp:
        xdp = f" {SHOW_MODE[f.xdp[0].mode]}/id:{f.xdp[0].prog.id}"
    master = f" master {f.master}" if f.master else ""
    lines = [
        f"{f.ifindex}: {name}: <{','.join(f.flags)}> mtu {f.mtu}{xdp} qdisc {f.qdisc}"
        f"{master} state {f.operstate} mode DEFAULT group default qlen {f.txqlen}"
    ]
    if details:
        for x in (*f.xdp, *f.inherited):
            src = f" (from {x.inherited_from})" if x.inherited_from else ""
            lines.append(
                f"    prog/{SHOW_MODE[x.mode]} id {x.prog.id} name {x.prog.name} "
                f"tag {x.prog.tag} jited{src}"
            )
    if stats:
        rx, tx = f.stats["rx"], f.stats["tx"]
        lines.append("    RX:  bytes packets errors dropped  missed   mcast")
        lines.append(
            f"    {rx['bytes']:>10} {rx['packets']:>7} {rx['errors']:>6} {rx['dropped']:>7}"
            f" {rx['missed_errors']:>7} {rx['multicast']:>7}"
        )
        lines.append("    TX:  bytes packets errors dropped carrier collsns")
        lines.append(
            f"    {tx['bytes']:>10} {tx['packets']:>7} {tx['errors']:>6} {tx['dropped']:>7}"
            f" {tx['carrier_errors']:>7} {tx['collisions']:>7}"
        )
    return lines


def _xdp_json(f: LinkFacts, details: bool) -> dict[str, Any]:
    def prog(x: XdpFact) -> dict[str, Any]:
        p: dict[str, Any] = {"id": x.prog.id, "name": x.prog.name, "tag": x.prog.tag, "jited": 1}
        if details:
            p.update(load_time=x.prog.loaded_ns, created_by_uid=0)
        return p

    attached = [{"mode": XDP_ATTACHED[x.mode], "prog": prog(x)} for x in f.xdp]
    if len(f.xdp) == 1:
        return {"mode": attached[0]["mode"], "prog": attached[0]["prog"], "attached": attached}
    return {"mode": XDP_ATTACHED_MULTI, "attached": attached}


def link_json(f: LinkFacts, stats: bool, details: bool) -> dict[str, Any]:
    """``ip -j link show``: iproute2's keys in its order."""
    row: dict[str, Any] = {"ifindex": f.ifindex}
    if f.link:
        row["link"] = f.link
    row.update(ifname=f.ifname, flags=list(f.flags), mtu=f.mtu)
    if f.xdp:
        row["xdp"] = _xdp_json(f, details)
    row["qdisc"] = f.qdisc
    if f.master:
        row["master"] = f.master
    row.update(
        operstate=f.operstate,
        linkmode="DEFAULT",
        group="default",
        txqlen=f.txqlen,
        link_type="ether",
        address=f.address,
        broadcast="ff:ff:ff:ff:ff:ff",
    )
    if details:
        row.update(promiscuity=0, allmulti=0, min_mtu=68, max_mtu=65535)
        if f.kind:
            row["linkinfo"] = {"info_kind": f.kind}
        row.update(num_tx_queues=f.queues, num_rx_queues=f.queues)
    if stats:
        # ip -j -s: rx_missed_errors only joins the JSON with -s -s (the RX error details)
        rx = {k: v for k, v in f.stats["rx"].items() if k != "missed_errors"}
        row["stats64"] = {"rx": rx, "tx": dict(f.stats["tx"])}
    return row


def link_show(world: World, devs: list[NetDev], stats: bool, details: bool, as_json: bool) -> str:
    facts = [link_facts(world, dev) for dev in devs]
    if as_json:
        return _json([link_json(f, stats, details) for f in facts])
    return "\n".join(line for f in facts for line in link_text(f, stats, details))


# ------------------------------------------------------------------ maps


@dataclass(frozen=True, eq=False)
class ObjMap:
    """A loaded object's own map (a devmap it declared is the host's, listed as such)."""

    map_id: int
    name: str  # the kernel's name
    map: BpfMap


def object_maps(world: World) -> list[ObjMap]:
    """The maps of every loaded object, by id."""
    out: dict[int, ObjMap] = {}
    for p in loaded_programs(world):
        obj = p.prog.obj
        if obj is None:
            continue
        for i, m in enumerate(obj.maps):
            if i not in obj.bound:
                out.setdefault(obj.map_ids[i], ObjMap(obj.map_ids[i], obj.map_name(i), m))
    return [out[k] for k in sorted(out)]


AnyMap = DevMap | CpuMap | XskMap | ObjMap


def _id(m: AnyMap) -> int:
    return m.map_id


def map_names(world: World) -> list[str]:
    return [*world.maps, *world.cpumaps, *world.xskmaps, *(m.name for m in object_maps(world))]


def find_maps(world: World, name: str | None, map_id: int | None) -> list[AnyMap]:
    """``name M`` (every map so named), ``id N``, or every map, by id."""
    every: list[AnyMap] = [
        *world.maps.values(),
        *world.cpumaps.values(),
        *world.xskmaps.values(),
        *object_maps(world),
    ]
    if map_id is not None:
        every = [m for m in every if m.map_id == map_id]
    elif name is not None:
        every = [m for m in every if m.name == name]
    return sorted(every, key=_id)


def _type_name(m: BpfMap) -> str:
    """bpftool's ``map_type_name``."""
    return MapType(m.map_type).name.lower()


def _flags(m: ObjMap) -> int:
    """``map_flags``; libbpf makes global data maps ``BPF_F_MMAPABLE``."""
    return m.map.map_flags | (BPF_F_MMAPABLE if m.map.name.startswith(".") else 0)


def _memlock(m: BpfMap) -> int:
    return max(4096, (m.max_entries * (m.key_size + m.value_size * m.ncpus) + 4095) // 4096 * 4096)


def map_show(maps: list[AnyMap], as_json: bool) -> str:
    """``bpftool [-j] map show``."""
    if as_json:
        rows: list[dict[str, Any]] = []
        for m in maps:
            if isinstance(m, DevMap):
                rows.extend(json.loads(map_show_json([m])))
                continue
            if isinstance(m, CpuMap | XskMap):
                rows.append(
                    {
                        "id": m.map_id,
                        "type": m.type,
                        "name": m.name,
                        "flags": 0,
                        "bytes_key": 4,
                        "bytes_value": 8 if isinstance(m, CpuMap) else 4,
                        "max_entries": m.max_entries,
                        "bytes_memlock": 4096,
                        "frozen": 0,
                    }
                )
                continue
            b = m.map
            rows.append(
                {
                    "id": m.map_id,
                    "type": _type_name(b),
                    "name": m.name,
                    "flags": _flags(m),
                    "bytes_key": b.key_size,
                    "bytes_value": b.value_size,
                    "max_entries": b.max_entries,
                    "bytes_memlock": _memlock(b),
                    "frozen": int(b.frozen),
                }
            )
        return _json(rows)
    lines = []
    for m in maps:
        if isinstance(m, DevMap):
            kind = "devmap" if m.type == "devmap" else "devmap_hash"
            lines.append(f"{m.map_id}: {kind}  name {m.name}  flags 0x80")
            lines.append(f"\tkey 4B  value 8B  max_entries {m.max_entries}  memlock 4096B")
            continue
        if isinstance(m, CpuMap | XskMap):
            value = 8 if isinstance(m, CpuMap) else 4  # bpf_cpumap_val; a socket's fd
            lines.append(f"{m.map_id}: {m.type}  name {m.name}  flags 0x0")
            lines.append(f"\tkey 4B  value {value}B  max_entries {m.max_entries}  memlock 4096B")
            continue
        b = m.map
        lines.append(f"{m.map_id}: {_type_name(b)}  name {m.name}  flags {_flags(m):#x}")
        lines.append(
            f"\tkey {b.key_size}B  value {b.value_size}B  max_entries {b.max_entries}  "
            f"memlock {_memlock(b)}B" + ("\n\tfrozen" if b.frozen else "")
        )
    return "\n".join(lines)


def map_dump(world: World, maps: list[AnyMap], as_json: bool) -> str:
    """``bpftool [-j] map dump``: each map found, one after the other."""
    parts = []
    for m in maps:
        if isinstance(m, ObjMap):
            parts.append(m.map.dump(as_json).rstrip("\n"))
        elif isinstance(m, CpuMap):
            parts.append(_cpumap_dump(m, as_json))
        elif isinstance(m, XskMap):
            parts.append(_xskmap_dump(m, as_json))
        elif as_json:
            parts.append(map_dump_json(world, m))
        else:
            parts.append(_devmap_dump(world, m))
    return "\n".join(parts)


def _cpumap_dump(m: CpuMap, as_json: bool) -> str:
    """A cpumap's slots as ``struct bpf_cpumap_val`` (qsize, the program's id): an array, so
    every key, an empty one answering ENOENT (``cpu_map_lookup_elem``)."""
    rows: list[dict[str, Any]] = []
    lines = []
    for key in range(m.max_entries):
        e = m.entries.get(key)
        if e is None:
            rows.append({"key": _hex(key, 4), "value": {"error": "No such file or directory"}})
            continue
        prog_id = e.prog.prog_id if e.prog is not None else 0
        rows.append({"key": _hex(key, 4), "value": _hex(e.qsize, 4) + _hex(prog_id, 4)})
        kb = " ".join(f"{b:02x}" for b in key.to_bytes(4, "little"))
        vb = " ".join(
            f"{b:02x}" for b in e.qsize.to_bytes(4, "little") + prog_id.to_bytes(4, "little")
        )
        what = f"qsize {e.qsize}" + (f", prog {e.prog.name}" if e.prog is not None else "")
        lines.append(f"key: {kb}  value: {vb}  ({what})")
    if as_json:
        return _json(rows)
    lines.append(f"Found {len(lines)} element{'s' if len(lines) != 1 else ''}")
    return "\n".join(lines)


def _xskmap_dump(m: XskMap, as_json: bool) -> str:
    """An xskmap from userspace: every lookup answers EOPNOTSUPP
    (``xsk_map_lookup_elem_sys_only``), as bpftool prints it; xdptui adds, in parentheses,
    the socket each key holds."""
    error = Errno.EOPNOTSUPP.strerror
    rows: list[dict[str, Any]] = []
    lines = []
    for key in range(m.max_entries):
        rows.append({"key": _hex(key, 4), "value": {"error": error}})
        kb = " ".join(f"{b:02x}" for b in key.to_bytes(4, "little"))
        sock = m.entries.get(key)
        lines.append(f"key:\n{kb}\nvalue:\n{error}" + (f"  (xdptui: {sock})" if sock else ""))
    if as_json:
        return _json(rows)
    lines.append("Found 0 elements")
    return "\n".join(lines)


def _devmap_dump(world: World, m: DevMap) -> str:
    lines = []
    for key, entry in m.walk():
        dev = world.devices.get(entry.dev)
        ifindex = dev.ifindex if dev is not None else 0
        prog_id = entry.egress.prog_id if entry.egress is not None else 0
        kb = " ".join(f"{b:02x}" for b in key.to_bytes(4, "little"))
        vb = " ".join(
            f"{b:02x}" for b in ifindex.to_bytes(4, "little") + prog_id.to_bytes(4, "little")
        )
        egress = (
            f"  ({entry.dev}, egress {entry.egress.name})" if entry.egress else f"  ({entry.dev})"
        )
        lines.append(f"key: {kb}  value: {vb}{egress}")
    lines.append(f"Found {len(lines)} element{'s' if len(lines) != 1 else ''}")
    return "\n".join(lines)


def map_show_json(maps: list[DevMap]) -> str:
    """``bpftool -j map show``."""
    return _json(
        [
            {
                "id": m.map_id,
                "type": m.type,
                "name": m.name,
                "flags": 128,
                "bytes_key": 4,
                "bytes_value": 8,
                "max_entries": m.max_entries,
                "bytes_memlock": 4096,
                "frozen": 0,
            }
            for m in maps
        ]
    )


def _hex(value: int, n: int) -> list[str]:
    return [f"0x{b:02x}" for b in value.to_bytes(n, "little")]


def map_dump_json(world: World, m: DevMap) -> str:
    """``bpftool -j map dump`` without BTF: bytes as hex strings; an array devmap walks every
    key and answers the empty ones with ``{"error": ...}`` (``map_get_next_key`` on an array
    never skips a slot), a hash devmap lists its entries only."""
    present = dict(m.walk())
    keys: Iterator[int] = iter(range(m.max_entries)) if m.type == "devmap" else iter(present)
    rows: list[dict[str, Any]] = []
    for key in keys:
        entry = present.get(key)
        if entry is None:
            rows.append({"key": _hex(key, 4), "value": {"error": "No such file or directory"}})
            continue
        dev = world.devices.get(entry.dev)
        ifindex = dev.ifindex if dev is not None else 0
        prog_id = entry.egress.prog_id if entry.egress is not None else 0
        rows.append({"key": _hex(key, 4), "value": _hex(ifindex, 4) + _hex(prog_id, 4)})
    return _json(rows)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


# ------------------------------------------------------------------ ethtool -S
#
# Each driver's own names (its ``get_strings`` / ``get_ethtool_stats``), printed only where the
# engine keeps the number: per-device totals of the report's counters, and per RX queue the
# packets and the drops. Per-queue bytes, TX queue counters and per-channel XDP verdicts are
# not kept per queue and are left out rather than printed as 0.
#
# - ixgbe ``ixgbe_get_ethtool_stats``: ``ixgbe_gstrings_stats`` (the netdev stats
#   rx_packets, tx_packets, rx_bytes, tx_bytes, rx_dropped, tx_dropped, ...), then
#   ``tx_queue_%u_packets``/``_bytes`` and ``rx_queue_%u_packets``/``_bytes``. No XDP counters.
# - i40e ``i40e_get_ethtool_stats``: ``i40e_gstrings_net_stats`` (same netdev names), then per
#   queue pair ``tx-%u.packets``/``.bytes`` and ``rx-%u.packets``/``.bytes``
#   (``i40e_gstrings_queue_stats``). No XDP counters.
# - ice ``ice_get_ethtool_stats``: ``ice_gstrings_vsi_stats`` (rx_bytes, tx_bytes, rx_dropped,
#   ...), then ``tx_queue_%u_packets``/``_bytes`` and ``rx_queue_%u_packets``/``_bytes``.
# - mlx5 ``mlx5e_get_ethtool_stats`` (en_stats.c): ``sw_stats_desc`` rx_packets, rx_bytes,
#   tx_packets, tx_bytes, rx_xdp_drop, rx_xdp_redirect, rx_xdp_tx_xmit, rx_xdp_tx_full,
#   tx_xdp_xmit, tx_xdp_full; ``q_stats_desc`` rx_out_of_buffer; rx_xdp_drop and
#   rx_xdp_redirect are what ``mlx5e_xdp_handle`` counts (``Nic.xdp_handle``: failed XDP_TX and
#   redirects are drops); ``rx_xdp_tx_*`` are the RQ's own XDPSQ (XDP_TX), ``tx_xdp_*`` the
#   channel's XDPSQ ``mlx5e_xdp_xmit`` uses (``Nic.xdpsq``): ``xmit`` the frames
#   ``mlx5e_xmit_xdp_frame`` queued (not the verdicts), ``full`` its refusals; per
#   channel ``rx%d_packets`` (``rq_stats_desc``). The per-channel ``rx%d_xdp_drop`` etc. are
#   not kept per queue.
# - veth ``veth_get_ethtool_stats``: ``peer_ifindex``, then per RX queue
#   ``rx_queue_%u_xdp_packets``/``_xdp_bytes``/``_drops``/``_xdp_redirect``/``_xdp_drops``/
#   ``_xdp_tx``/``_xdp_tx_errors`` (``veth_rq_stats_desc``) and per TX queue
#   ``tx_queue_%u_xdp_xmit``/``_xdp_xmit_errors`` (``veth_tq_stats_desc``, read from the peer's
#   RX queue the frames land in). Only the native program counts there (generic XDP on a veth
#   leaves them at 0); ``_xdp_tx`` is what ``veth_xdp_flush_bq`` sent, ``_drops`` includes
#   failed redirects. The verdicts are kept per device: shown on a one-queue veth.
# - bond, tun/tap and the generic driver have no ``get_ethtool_stats``: ethtool prints
#   "no stats available".

_NETDEV_STATS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped")
_MLX5_SW = (
    ("rx_packets", "rx_packets"),
    ("rx_bytes", "rx_bytes"),
    ("tx_packets", "tx_packets"),
    ("tx_bytes", "tx_bytes"),
    ("rx_xdp_drop", ""),  # "": Nic.sw_stats (Nic.xdp_handle, Nic.xdpsq)
    ("rx_xdp_redirect", ""),
    ("rx_xdp_tx_xmit", ""),
    ("rx_xdp_tx_full", ""),
    ("tx_xdp_xmit", ""),
    ("tx_xdp_full", ""),
    ("rx_out_of_buffer", "rx_out_of_buffer"),
)
NO_STATS = "no stats available"


def ethtool_stats(world: World, dev: NetDev) -> tuple[tuple[str, int], ...] | None:
    """``ethtool -S`` as (name, value) rows in the driver's order; None: no stats op."""
    k = dev.counters
    per_q = [(rxq.index, rxq.rx_packets, rxq.rx_dropped) for rxq in dev.rxq]
    rows: list[tuple[str, int]] = []
    if isinstance(dev, Veth):
        peer = world.devices.get(dev.peer)
        rows.append(("peer_ifindex", peer.ifindex if peer is not None else 0))
        one = len(per_q) <= 1
        rq = dev.rq_stats
        for q, _, dropped in per_q or [(0, 0, 0)]:
            if one:
                rows.append((f"rx_queue_{q}_xdp_packets", rq["xdp_packets"]))
                rows.append((f"rx_queue_{q}_xdp_bytes", rq["xdp_bytes"]))
                dropped += rq["drops"]
            rows.append((f"rx_queue_{q}_drops", dropped))
            if one:
                rows += [
                    (f"rx_queue_{q}_xdp_redirect", rq["xdp_redirect"]),
                    (f"rx_queue_{q}_xdp_drops", rq["xdp_drops"]),
                    (f"rx_queue_{q}_xdp_tx", rq["xdp_tx"]),
                    (f"rx_queue_{q}_xdp_tx_errors", k["xdp_tx_errors"]),
                ]
        if len(per_q) <= 1:
            rows += [
                ("tx_queue_0_xdp_xmit", k["xdp_xmit"]),
                ("tx_queue_0_xdp_xmit_errors", k["xdp_xmit_errors"]),
            ]
        return tuple(rows)
    if not isinstance(dev, Nic) or dev.driver is None or dev.driver.name == "generic":
        return None
    driver = dev.driver.name
    if driver == "mlx5":
        sw = dev.get_stats64()
        sw["rx_out_of_buffer"] = k["rx_dropped"]
        rows += [(name, sw[c] if c else dev.sw_stats[name]) for name, c in _MLX5_SW]
        rows += [(f"rx{q}_packets", packets) for q, packets, _ in per_q]
        return tuple(rows)
    if driver == "ice":
        rows += [(n, k[n]) for n in ("rx_bytes", "tx_bytes", "rx_dropped")]
    else:
        rows += [(n, k[n]) for n in _NETDEV_STATS]
    queue = "rx-{q}.packets" if driver == "i40e" else "rx_queue_{q}_packets"
    rows += [(queue.format(q=q), packets) for q, packets, _ in per_q]
    return tuple(rows)


def ethtool_stats_text(world: World, dev: NetDev) -> str:
    rows = ethtool_stats(world, dev)
    if rows is None:
        return NO_STATS
    return "\n".join(["NIC statistics:", *(f"     {name}: {value}" for name, value in rows)])
