"""``xdptui export --netns``: carry a lesson to a real kernel. A bash script that builds, in a
new network (and mount) namespace, what a laptop's kernel can build of a topology -- veth
pairs, tun/tap devices, the devmaps, the same ELF objects attached in the same modes -- sends
the frames the simulator's sources send, and prints what the kernel counted, as JSON.

What a laptop can't build is said in the script's comments: a NIC becomes a veth pair (the
device under its own name, and ``w<name>`` as the wire its frames come from, with a program
that passes them so the device can be a redirect target); bonds are left out (their slaves
stay); built-in programs that are a verdict or ``bpf_redirect_map`` are compiled from C by
the script; the others and Python programs have no ELF and are left out. The frames are the
sources' own bytes (built by the simulator, or a capture's), sent in order as fast as the
sender goes, 32 at a time, not at the sources' rates.
"""

from __future__ import annotations

import base64
import io
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from xdptui.bpf import load_object
from xdptui.bpf.maps import MapType, kernel_map_name
from xdptui.model.catalog import is_object_program
from xdptui.model.errors import KernelError
from xdptui.model.topology import (
    BondSpec,
    MapSpec,
    NicSpec,
    Topology,
    TunSpec,
    VethSpec,
    XdpSpec,
)
from xdptui.pcap import PcapngWriter

MAX_FRAMES = 200_000
"""Frames a script carries per source (base64 in the script)."""
_MODES = {"native": "xdpdrv", "generic": "xdpgeneric", None: "xdp"}
_VERDICTS = {"xdp_pass": 2, "xdp_drop": 1, "xdp_tx": 3, "xdp_aborted": 0}


class ExportError(Exception):
    """A topology the exporter can't carry at all; the message says why."""


def wire_name(dev: str) -> str:
    """The veth end a NIC's frames come from (``IFNAMSIZ``: 15 characters)."""
    return f"w{dev}"[:15]


@dataclass
class _Script:
    lines: list[str] = field(default_factory=list)
    c_funcs: dict[str, str] = field(default_factory=dict)  # builtin section -> C body
    built: list[str] = field(default_factory=list)  # devices whose counters are printed
    objects: dict[str, tuple[Path, int]] = field(default_factory=dict)  # path -> (file, n)

    def say(self, text: str) -> None:
        self.lines.append(f"# {text}")

    def run(self, *words: str) -> None:
        self.lines.append(" ".join(w if w.startswith("$") else shlex.quote(w) for w in words))


def lab_script(topo: Topology, duration_ns: int) -> str:
    """The script for ``topo``, its traffic being what the simulator sends in ``duration_ns``
    (a source's ``count`` caps it, as in a run)."""
    s = _Script()
    _devices(topo, s)
    _maps(topo, s)
    for spec in topo.devices:
        if spec.xdp is not None and spec.name in s.built:
            _attach(spec.name, spec.xdp, topo, s)
    for spec in topo.devices:
        if isinstance(spec, NicSpec):
            s.run("bpftool", "net", "attach", "xdpdrv", "pinned", "$LAB/progs/builtins/xdp_pass",
                  "dev", wire_name(spec.name))  # fmt: skip
            _need_builtin(s, "xdp_pass", "return XDP_PASS;")
    _entries(topo, s)
    _object_entries(topo, s)
    traffic = _traffic(topo, duration_ns, s)
    return _assemble(topo, s, traffic)


def _devices(topo: Topology, s: _Script) -> None:
    done: set[str] = set()
    for spec in topo.devices:
        name = spec.name
        if name in done:
            continue
        if isinstance(spec, VethSpec):
            peer = topo.device(spec.peer)
            q = max(spec.queues, getattr(peer, "queues", 1))
            s.run("ip", "link", "add", name, "numrxqueues", str(q), "numtxqueues", str(q),
                  "type", "veth", "peer", "name", spec.peer,
                  "numrxqueues", str(q), "numtxqueues", str(q))  # fmt: skip
            done |= {name, spec.peer}
            s.built += [name, spec.peer]
        elif isinstance(spec, NicSpec):
            s.say(f"{name}: a NIC ({spec.driver}) here; on a laptop a veth pair: {name} and "
                  f"the wire {wire_name(name)} its frames come from")  # fmt: skip
            s.run("ip", "link", "add", name, "numrxqueues", "1", "numtxqueues", "1",
                  "type", "veth", "peer", "name", wire_name(name),
                  "numrxqueues", "1", "numtxqueues", "1")  # fmt: skip
            s.run("ip", "link", "set", wire_name(name), "up")
            done.add(name)
            s.built.append(name)
        elif isinstance(spec, TunSpec):
            words = ["ip", "tuntap", "add", "dev", name, "mode", spec.mode]
            if spec.queues > 1:
                words.append("multi_queue")
            if spec.vnet_hdr:
                words.append("vnet_hdr")
            s.run(*words)
            s.run("ip", "link", "set", name, "txqueuelen", str(spec.tx_queue_len))
            done.add(name)
            s.built.append(name)
        elif isinstance(spec, BondSpec):
            s.say(f"{name}: a bond is not built (the bonding module is rarely there on a "
                  f"laptop); its slaves {', '.join(spec.slaves)} stand alone")  # fmt: skip
    for spec in topo.devices:
        if spec.name in s.built:
            if spec.mtu != 1500:
                s.run("ip", "link", "set", spec.name, "mtu", str(spec.mtu))
            if spec.up:
                s.run("ip", "link", "set", spec.name, "up")


def _object_maps(path: Path) -> dict[str, int]:
    """The devmaps an object declares, with their value size."""
    try:
        obj = load_object(path)
    except (KernelError, OSError) as exc:
        raise ExportError(f"{path}: {exc}") from None
    devmaps = (MapType.DEVMAP, MapType.DEVMAP_HASH)
    return {name: m.value_size for name, m in obj.maps.items() if m.map_type in devmaps}


def _maps(topo: Topology, s: _Script) -> None:
    sizes: dict[str, int] = {}
    for spec in topo.devices:
        if spec.xdp is not None and is_object_program(spec.xdp.program):
            sizes.update(_object_maps(Path(_object_path(spec.xdp.program))))
    for m in topo.maps:
        kind = "devmap" if m.type == "devmap" else "devmap_hash"
        s.run("bpftool", "map", "create", f"$LAB/maps/{m.name}", "type", kind, "key", "4",
              "value", str(sizes.get(m.name, 8)), "entries", str(m.max_entries),
              "name", m.name)  # fmt: skip


def _object_path(program: str) -> str:
    return program if program.endswith(".o") else program.rsplit(":", 1)[0]


def _attach(dev: str, xdp: XdpSpec, topo: Topology, s: _Script) -> None:
    mode = _MODES.get(xdp.mode, "xdp")
    if mode == "xdp":
        mode = "xdpdrv"  # veth and tap take native XDP (dev_xdp_mode's choice there)
    program = xdp.program
    if is_object_program(program):
        path = Path(_object_path(program))
        section = None if program.endswith(".o") else program.rsplit(":", 1)[1]
        try:
            name = load_object(path).program(section).name
        except (KernelError, OSError) as exc:
            raise ExportError(f"{dev}: {program}: {exc}") from None
        key = str(path)
        if key not in s.objects:
            s.objects[key] = (path, len(s.objects))
        n = s.objects[key][1]
        s.run("bpftool", "net", "attach", mode, "pinned", f"$LAB/progs/obj{n}/{name}", "dev", dev)
        return
    if program in _VERDICTS:
        _need_builtin(s, program, f"return {_VERDICTS[program]};")
        s.run("bpftool", "net", "attach", mode, "pinned", f"$LAB/progs/builtins/{program}",
              "dev", dev)  # fmt: skip
        return
    params = dict(xdp.params)
    names = {m.name for m in topo.maps}
    if program == "redirect_map" and params.get("map") in names:
        slot, flags = int(params.get("key", "0")), int(params.get("flags", "0"))
        fn = f"redirect_map_{params['map']}_{slot}_{flags}"
        _need_builtin(s, fn, f"return bpf_redirect_map(&{params['map']}, {slot}, {flags});")
        s.run("bpftool", "net", "attach", mode, "pinned", f"$LAB/progs/builtins/{fn}",
              "dev", dev)  # fmt: skip
        return
    s.say(f"{dev}: {program} is not carried (no ELF object for it): no program attached")


def _need_builtin(s: _Script, name: str, body: str) -> None:
    s.c_funcs.setdefault(name, body)


def _entries(topo: Topology, s: _Script) -> None:
    for x in topo.xsks:  # a socket lives in a process: the lab has none
        s.say(
            f"{x.name}: an AF_XDP socket on {x.dev} q{x.queue} is not built (it needs a "
            "userspace program); its frames take the program's fallback"
        )
    for c in topo.cpumaps:
        s.say(f"map {c.name}: a cpumap is not built here")
    for m in topo.maps:
        for e in m.entries:
            if e.dev not in s.built:
                s.say(f"map {m.name} key {e.key}: {e.dev} is not built here: left empty")
                continue
            if e.egress is not None:
                s.say(f"map {m.name} key {e.key}: its egress program {e.egress} is not carried")
            s.lines.append(
                f"bpftool map update pinned $LAB/maps/{m.name} key $(le32 {e.key}) "
                f"value $(le32 $(ifindex {e.dev})) $(pad {m.name})"
            )


def _object_entries(topo: Topology, s: _Script) -> None:
    """A topology's ``type: object`` elements, into the maps ``prog loadall ... pinmaps``
    pinned for each object that declares the map (by the kernel's name for it)."""
    for spec in topo.object_maps:
        for path, n in s.objects.values():
            stem = path.name.removesuffix(".o")
            try:
                names = {kernel_map_name(stem, m) for m in load_object(path).maps}
            except (KernelError, OSError) as exc:
                raise ExportError(f"{path}: {exc}") from None
            if spec.name not in names:
                continue
            for e in spec.entries:
                # an inner map (value: {map: NAME}) is the same load's, pinned beside it
                value = e.value
                if e.value_map is not None:
                    value = f"pinned $LAB/objmaps/obj{n}/{e.value_map}"
                s.lines.append(
                    f"bpftool map update pinned $LAB/objmaps/obj{n}/{spec.name} "
                    f"key {e.key} value {value}"
                )


@dataclass(frozen=True)
class _Send:
    source: str
    how: str  # "packet" (AF_PACKET out of dev) or "tap" (written into the tap)
    dev: str
    vnet: bool
    pcapng: bytes
    frames: int


def _traffic(topo: Topology, duration_ns: int, s: _Script) -> list[_Send]:
    """Each source's frames of a ``duration_ns`` run, as the simulator builds them."""
    from xdptui.sim.core.derived import frame_bytes
    from xdptui.sim.engine import Simulator

    sim = Simulator(topo, trust=_has_python(topo))  # only to build the sources' frames
    world = sim.state.world
    data = frame_bytes(world.entries)
    out: list[_Send] = []
    for src in world.sources:
        n = src.emitted_until(duration_ns)
        if n > MAX_FRAMES:
            s.say(f"{src.spec.name}: {n} frames in the run; the script carries the first "
                  f"{MAX_FRAMES}")  # fmt: skip
            n = MAX_FRAMES
        spec = topo.device(src.device)
        if spec.name not in s.built:
            s.say(f"{src.spec.name}: {src.device} is not built here: its frames are not sent")
            continue
        how, dev, vnet = "packet", src.device, False
        if isinstance(spec, TunSpec) and not src.local:
            how, vnet = "tap", spec.vnet_hdr
        elif isinstance(spec, VethSpec) and not src.local:
            dev = spec.peer  # it arrives on the device: its peer sends it
        elif isinstance(spec, NicSpec) and not src.local:
            dev = wire_name(spec.name)
        buf = io.BytesIO()
        w = PcapngWriter(buf)
        sizes = world.entries.size
        for k, e in enumerate(src.entries(0, n).tolist()):
            frame = data[e]
            frame += bytes(max(0, int(sizes[e]) - len(frame)))
            w.packet(dev, k, frame)
        out.append(_Send(src.spec.name, how, dev, vnet, buf.getvalue(), n))
    return out


def _has_python(topo: Topology) -> bool:
    from xdptui.trust import user_programs

    return bool(user_programs(topo))


_BUILTINS_C = """#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
{maps}
{funcs}
char _license[] SEC("license") = "GPL";
"""

_SENDER = r'''
import base64, fcntl, json, os, socket, struct, subprocess, sys, time
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000


def frames(blob):
    """The Enhanced Packet Blocks of a pcapng written by xdptui (little-endian)."""
    data, i = base64.b64decode(blob), 0
    while i < len(data):
        kind, length = struct.unpack_from("<II", data, i)
        if kind == 6:
            caplen = struct.unpack_from("<I", data, i + 20)[0]
            yield data[i + 28 : i + 28 + caplen]
        i += length


def send(how, dev, vnet, blob):
    if how == "tap":
        fd = os.open("/dev/net/tun", os.O_RDWR)
        flags = IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if vnet else 0)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), flags))
        put = lambda f: os.write(fd, (bytes(10) if vnet else b"") + f)
    else:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((dev, 0))
        put = s.send
    for i, f in enumerate(frames(blob)):
        put(f)
        if i % 32 == 31:
            time.sleep(0.001)  # let the receiving NAPI drain its ring
    time.sleep(0.05)


def stats(dev):
    link = json.loads(subprocess.run(["ip", "-j", "-s", "link", "show", "dev", dev],
                      capture_output=True, text=True).stdout)[0]["stats64"]
    out = {f"rx_{k}": v for k, v in link["rx"].items()}
    out.update({f"tx_{k}": v for k, v in link["tx"].items()})
    text = subprocess.run(["ethtool", "-S", dev], capture_output=True, text=True).stdout
    for line in text.splitlines()[1:]:
        key, _, val = line.strip().rpartition(":")
        if key and val.strip().lstrip("-").isdigit():
            out[f"ethtool:{key.strip()}"] = int(val)
    return out


for how, dev, vnet, blob in SENDS:
    send(how, dev, vnet, blob)
time.sleep(0.3)
print(json.dumps({d: stats(d) for d in DEVICES}, indent=1, sort_keys=True))
'''


def _assemble(topo: Topology, s: _Script, traffic: list[_Send]) -> str:
    out = [
        "#!/usr/bin/env bash",
        f"# {topo.name}: built for a real kernel by xdptui export --netns {topo.source}",
        "# Run as root (clang, libbpf-dev, bpftool, ethtool, python3): bash lab.sh",
        "# It builds everything in new network and mount namespaces (nothing outlives it),",
        "# sends the sources' frames and prints what the kernel counted per device, as JSON.",
        "set -euo pipefail",
        'if [ "${1:-}" != "--inside" ]; then exec unshare -nm -- bash "$0" --inside; fi',
        "mount -t sysfs sysfs /sys",
        "# no IPv6 autoconfiguration: the stack's own frames (router solicitations, MLD)",
        "# would be counted beside the sources'",
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        "mount -t bpf bpf /sys/fs/bpf",
        "LAB=/sys/fs/bpf/lab; mkdir -p $LAB/maps $LAB/progs $LAB/objmaps",
        "WORK=$(mktemp -d); trap 'rm -rf \"$WORK\"' EXIT",
        "le32() { local v=$1; echo $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) "
        "$((v >> 24 & 255)); }",
        "ifindex() { cat /sys/class/net/$1/ifindex; }",
        "pad() { local n; n=$(bpftool -j map show pinned $LAB/maps/$1 | python3 -c "
        "'import json,sys; print(json.load(sys.stdin)[\"bytes_value\"])'); "
        '[ "$n" -gt 4 ] && printf \'0 %.0s\' $(seq 5 "$n") || true; }',
    ]
    for line in s.lines:
        if line.startswith("#"):
            out.append(line)
    out += [line for line in s.lines if line.startswith("ip ")]
    out += [line for line in s.lines if line.startswith("bpftool map create")]
    for path, n in s.objects.values():
        b64 = base64.b64encode(path.read_bytes()).decode()
        out.append(f"# {path.name}: the object the topology names, byte for byte")
        out.append(f"echo {b64} | base64 -d > $WORK/obj{n}.o")
        reuse = " ".join(
            f"map name {m} pinned $LAB/maps/{m}"
            for m in _object_maps(path)
            if m in {mm.name for mm in topo.maps}
        )
        pins = f" pinmaps $LAB/objmaps/obj{n}" if topo.object_maps else ""
        out.append(f"bpftool prog loadall $WORK/obj{n}.o $LAB/progs/obj{n} type xdp {reuse}{pins}")
    if s.c_funcs:
        maps = "\n".join(_c_map(m) for m in topo.maps)
        funcs = "\n".join(
            f'SEC("xdp") int {name}(struct xdp_md *ctx) {{ {body} }}'
            for name, body in s.c_funcs.items()
        )
        out.append("cat > $WORK/builtins.c <<'EOF'")
        out.append(_BUILTINS_C.format(maps=maps, funcs=funcs).rstrip())
        out.append("EOF")
        out.append('clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" '
                   "-c $WORK/builtins.c -o $WORK/builtins.o")  # fmt: skip
        reuse = " ".join(f"map name {m.name} pinned $LAB/maps/{m.name}" for m in topo.maps)
        out.append(f"bpftool prog loadall $WORK/builtins.o $LAB/progs/builtins type xdp {reuse}")
    out += [line for line in s.lines if line.startswith("bpftool net attach")]
    out += [line for line in s.lines if line.startswith("bpftool map update")]
    out.append("python3 - <<'EOF'")
    sends = ",\n".join(
        f"    ({t.how!r}, {t.dev!r}, {t.vnet!r}, {base64.b64encode(t.pcapng).decode()!r})"
        for t in traffic
    )
    out.append(f"SENDS = [\n{sends}\n]")
    out.append(f"DEVICES = {s.built!r}")
    out.append(_SENDER.strip())
    out.append("EOF")
    return "\n".join(out) + "\n"


def _c_map(m: MapSpec) -> str:
    kind = "BPF_MAP_TYPE_DEVMAP" if m.type == "devmap" else "BPF_MAP_TYPE_DEVMAP_HASH"
    return (
        f"struct {{ __uint(type, {kind}); __uint(max_entries, {m.max_entries}); "
        f'__type(key, __u32); __type(value, struct bpf_devmap_val); }} {m.name} SEC(".maps");'
    )
