"""What a host (or the network namespace xdptui runs in) shows of its XDP data path, read-only:
links over netlink (pyroute2), what only ethtool and bpftool tell (driver, channels, rings,
speed; programs, maps, devmap entries), IRQ affinity and the CPU count -- or the same from a
directory of saved command outputs a colleague sent.

The saved files (``xdptui import --save DIR`` writes them; README, "Import a host", has the one
shell command that does it without xdptui)::

    nproc                      the CPU count
    ip-link.json               ip -j -d link show
    ethtool.DEV                ethtool DEV          (speed)
    ethtool-i.DEV              ethtool -i DEV       (driver, bus)
    ethtool-l.DEV              ethtool -l DEV       (channels)
    ethtool-g.DEV              ethtool -g DEV       (rings)
    bpftool-net.json           bpftool -j net
    bpftool-prog.json          bpftool -j prog show
    bpftool-map.json           bpftool -j map show
    bpftool-map-dump.ID.json   bpftool -j map dump id ID   (each devmap)
    interrupts                 cat /proc/interrupts
    smp_affinity_list          grep . /proc/irq/*/smp_affinity_list
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdptui.model.topology import BOND_MODES, XMIT_HASH_POLICIES

ETHTOOL_OPTS = ("", "-i", "-l", "-g")
XDP_MODES = {1: "native", 2: "generic", 3: "offload"}  # XDP_ATTACHED_DRV / SKB / HW
_ATTACHED = {"drv": 1, "skb": 2, "hw": 3}


class HostError(Exception):
    """The host or the directory can't be read; the message says what is missing."""


@dataclass
class Link:
    """One network device as ``ip -d link`` shows it."""

    name: str
    ifindex: int
    kind: str  # linkinfo's info_kind ("" for a physical port), "loopback" for lo
    up: bool
    mtu: int
    master: str | None = None
    peer: str | None = None  # a veth's other end, when it is in this namespace
    peer_elsewhere: bool = False  # a veth whose other end is in another namespace
    info: dict[str, Any] = field(default_factory=dict)  # bond / tun details
    txqlen: int = 1000
    xdp: list[tuple[int, int]] = field(default_factory=list)  # (mode 1 drv/2 skb/3 hw, prog id)


@dataclass
class HostFacts:
    cpus: int
    links: list[Link]
    ethtool: dict[str, dict[str, str]]  # device -> option ("", -i, -l, -g) -> output
    progs: list[dict[str, Any]]
    maps: list[dict[str, Any]]
    dumps: dict[int, list[dict[str, Any]]]
    interrupts: str
    affinity: dict[int, str]  # IRQ -> smp_affinity_list
    where: str  # "this host" or the directory


# ------------------------------------------------------------------ ip -j -d link show


def links_from_ip_json(data: list[dict[str, Any]]) -> list[Link]:
    names = {d["ifindex"]: d["ifname"] for d in data}
    out = []
    for d in data:
        info = d.get("linkinfo", {})
        kind = info.get("info_kind", "")
        if d.get("link_type") == "loopback":
            kind = "loopback"
        link = d.get("link")
        peer = link.split("@")[0] if isinstance(link, str) and link else None
        if peer is None and d.get("link_index") in names and "link_netnsid" not in d:
            peer = names[d["link_index"]]
        xdp: list[tuple[int, int]] = []
        x = d.get("xdp")
        if x:
            for att in x.get("attached") or [x]:
                if "prog" in att:
                    xdp.append((int(att["mode"]), int(att["prog"]["id"])))
        out.append(
            Link(
                name=d["ifname"],
                ifindex=d["ifindex"],
                kind=kind,
                up="UP" in d.get("flags", []),
                mtu=int(d.get("mtu", 1500)),
                master=d.get("master"),
                peer=peer if kind == "veth" else None,
                peer_elsewhere=kind == "veth" and ("link_netnsid" in d or peer is None),
                info=dict(info.get("info_data", {})),
                txqlen=int(d.get("txqlen", 1000)),
                xdp=xdp,
            )
        )
    return out


# ------------------------------------------------------------------ netlink (pyroute2)


def _links_from_netlink() -> list[Link]:
    """``RTM_GETLINK`` dump through pyroute2, read into the same shape as the ip JSON."""
    try:
        from pyroute2 import IPRoute
    except ImportError:
        raise HostError(
            "importing a live host needs pyroute2: pip install 'xdptui[host]'"
        ) from None
    with IPRoute() as ipr:
        msgs = list(ipr.get_links())
    names = {m["index"]: m.get("IFLA_IFNAME") for m in msgs}
    out = []
    for m in msgs:
        kind = m.get(("IFLA_LINKINFO", "IFLA_INFO_KIND")) or ""
        if m["flags"] & 0x8:  # IFF_LOOPBACK
            kind = "loopback"
        data = m.get(("IFLA_LINKINFO", "IFLA_INFO_DATA"))
        info: dict[str, Any] = {}
        if data is not None and kind == "bond":
            mode = data.get("IFLA_BOND_MODE")
            policy = data.get("IFLA_BOND_XMIT_HASH_POLICY")
            primary = data.get("IFLA_BOND_PRIMARY")
            info = {
                "mode": BOND_MODES[mode] if mode is not None else "balance-rr",
                "miimon": data.get("IFLA_BOND_MIIMON") or 0,
                "xmit_hash_policy": XMIT_HASH_POLICIES[policy] if policy is not None else "layer2",
            }
            if primary:
                info["primary"] = names.get(primary)
        elif data is not None and kind == "tun":
            info = {
                "type": "tap" if data.get("IFLA_TUN_TYPE") == 2 else "tun",
                "vnet_hdr": bool(data.get("IFLA_TUN_VNET_HDR")),
                "multi_queue": bool(data.get("IFLA_TUN_MULTI_QUEUE")),
                "numqueues": data.get("IFLA_TUN_NUM_QUEUES") or 0,
            }
        peer_index = m.get("IFLA_LINK")
        elsewhere = m.get("IFLA_LINK_NETNSID") is not None
        xdp: list[tuple[int, int]] = []
        x = m.get("IFLA_XDP")
        if x is not None:
            for attr, mode in (
                ("IFLA_XDP_DRV_PROG_ID", 1),
                ("IFLA_XDP_SKB_PROG_ID", 2),
                ("IFLA_XDP_HW_PROG_ID", 3),
            ):
                if x.get(attr):
                    xdp.append((mode, int(x.get(attr))))
            attached = x.get("IFLA_XDP_ATTACHED")
            if not xdp and x.get("IFLA_XDP_PROG_ID") and attached in _ATTACHED:
                xdp.append((_ATTACHED[attached], int(x.get("IFLA_XDP_PROG_ID"))))
        master = m.get("IFLA_MASTER")
        out.append(
            Link(
                name=str(m.get("IFLA_IFNAME")),
                ifindex=int(m["index"]),
                kind=kind,
                up=bool(m["flags"] & 0x1),  # IFF_UP
                mtu=int(m.get("IFLA_MTU") or 1500),
                master=names.get(master) if master else None,
                peer=names.get(peer_index) if kind == "veth" and not elsewhere else None,
                peer_elsewhere=kind == "veth" and (elsewhere or peer_index not in names),
                info=info,
                txqlen=int(m.get("IFLA_TXQLEN") or 1000),
                xdp=xdp,
            )
        )
    return out


# ------------------------------------------------------------------ commands and files


def _run(*cmd: str) -> str:
    if shutil.which(cmd[0]) is None:
        return ""
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return res.stdout if res.returncode == 0 else res.stdout + res.stderr


def _ethtool(opt: str, dev: str) -> str:
    return _run("ethtool", *([opt] if opt else []), dev)


def _interrupts() -> str:
    p = Path("/proc/interrupts")
    return p.read_text() if p.exists() else ""


def _dump(map_id: int) -> str:
    return _run("bpftool", "-j", "map", "dump", "id", str(map_id))


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return []


def _affinity_lines(text: str) -> dict[int, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^/proc/irq/(\d+)/smp_affinity_list:(.*)$", line.strip())
        if m:
            out[int(m.group(1))] = m.group(2).strip()
    return out


def _live_affinity() -> dict[int, str]:
    out = {}
    for p in Path("/proc/irq").glob("*/smp_affinity_list"):
        try:
            out[int(p.parent.name)] = p.read_text().strip()
        except (OSError, ValueError):
            continue
    return out


def devmap_ids(maps: list[dict[str, Any]]) -> list[int]:
    return [int(m["id"]) for m in maps if m.get("type") in ("devmap", "devmap_hash")]


def live_facts() -> HostFacts:
    """The host (network namespace) this process runs in."""
    links = _links_from_netlink()
    ethtool = {
        link.name: {opt: _ethtool(opt, link.name) for opt in ETHTOOL_OPTS}
        for link in links
        if link.kind != "loopback"
    }
    maps = _json(_run("bpftool", "-j", "map", "show"))
    return HostFacts(
        cpus=os.cpu_count() or 1,
        links=links,
        ethtool=ethtool,
        progs=_json(_run("bpftool", "-j", "prog", "show")),
        maps=maps,
        dumps={i: _json(_dump(i)) for i in devmap_ids(maps)},
        interrupts=_interrupts(),
        affinity=_live_affinity(),
        where="this host",
    )


def save_outputs(directory: Path) -> list[str]:
    """Run the commands and keep their outputs in ``directory`` (the files above)."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {
        "nproc": f"{os.cpu_count() or 1}\n",
        "ip-link.json": _run("ip", "-j", "-d", "link", "show"),
        "bpftool-net.json": _run("bpftool", "-j", "net"),
        "bpftool-prog.json": _run("bpftool", "-j", "prog", "show"),
        "bpftool-map.json": _run("bpftool", "-j", "map", "show"),
        "interrupts": _interrupts(),
        "smp_affinity_list": "".join(
            f"/proc/irq/{irq}/smp_affinity_list:{cpus}\n"
            for irq, cpus in sorted(_live_affinity().items())
        ),
    }
    for d in _json(files["ip-link.json"]):
        if d.get("link_type") == "loopback":
            continue
        for opt in ETHTOOL_OPTS:
            files[f"ethtool{opt}.{d['ifname']}"] = _ethtool(opt, d["ifname"])
    for i in devmap_ids(_json(files["bpftool-map.json"])):
        files[f"bpftool-map-dump.{i}.json"] = _dump(i)
    for name, text in files.items():
        (directory / name).write_text(text)
    return sorted(files)


def facts_from_dir(directory: Path) -> HostFacts:
    """The saved outputs in ``directory``."""

    def read(name: str) -> str:
        p = directory / name
        try:
            return p.read_text()
        except OSError:
            return ""

    if not directory.is_dir():
        raise HostError(f"{directory}: not a directory of saved outputs")
    ip_text = read("ip-link.json")
    if not ip_text.strip():
        raise HostError(
            f"{directory}: no ip-link.json (the output of ip -j -d link show); "
            "see xdptui import --help for the files"
        )
    data = _json(ip_text)
    if not isinstance(data, list) or not data:
        raise HostError(f"{directory}/ip-link.json: not the JSON list ip -j -d link show prints")
    try:
        links = links_from_ip_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise HostError(f"{directory}/ip-link.json: a link without {exc}") from None
    ethtool = {
        link.name: {opt: read(f"ethtool{opt}.{link.name}") for opt in ETHTOOL_OPTS}
        for link in links
    }
    maps = _json(read("bpftool-map.json"))
    nproc = read("nproc").strip()
    return HostFacts(
        cpus=int(nproc) if nproc.isdigit() and int(nproc) > 0 else 0,
        links=links,
        ethtool=ethtool,
        progs=_json(read("bpftool-prog.json")),
        maps=maps,
        dumps={i: _json(read(f"bpftool-map-dump.{i}.json")) for i in devmap_ids(maps)},
        interrupts=read("interrupts"),
        affinity=_affinity_lines(read("smp_affinity_list")),
        where=str(directory),
    )
