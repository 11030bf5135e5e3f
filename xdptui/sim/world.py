"""The simulated host built from a topology: devices with their rings, traffic sources, the
cards' DMA budgets and the one global flow-table index every per-entry array is laid over.

Entries of all sources are concatenated: source ``s`` owns entries ``offset[s] ..
offset[s] + len(table_s)``, so a verdict or a cost is one array over all entries.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import BondSpec, DeviceSpec, NicSpec, Topology, TunSpec, VethSpec
from xdptui.model.views import TUN_COUNTERS
from xdptui.sim.bond.bond_main import Bond
from xdptui.sim.columns import filled, joined
from xdptui.sim.cpumap import CpuMap
from xdptui.sim.dev.netdev import NetDev
from xdptui.sim.dev.nic import Card, Nic, configure_queues, configure_xdp_rings
from xdptui.sim.dev.rings import rx_queue_table, tx_ring_table
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth
from xdptui.sim.devmap import DevMap
from xdptui.sim.drivers import DRIVERS
from xdptui.sim.entries import Entries
from xdptui.sim.hashing import FlowHeaders
from xdptui.sim.kconst import NAPI_POLL_WEIGHT, VHOST_NET_BATCH
from xdptui.sim.replay import capture_flow_table
from xdptui.sim.traffic import FlowTable, Source, build_flow_table, entry_span
from xdptui.sim.xsk import XskMap, XskSocket, XskWriter

IntArray = npt.NDArray[np.int64]

EPOCHS = itertools.count(1)

TAP_WRITE_BACKLOG = 256  # frames a writer holds back while busy (a virtqueue; UNVERIFIED)
VHOST_WAKE_NS = 20_000  # vhost-net's worker runs at most this often (UNVERIFIED)


@dataclass(eq=False)
class World:
    topology: Topology
    nr_cpus: int
    devices: dict[str, NetDev]
    sources: list[Source]
    entries: Entries
    base_dir: Path
    maps: dict[str, DevMap] = field(default_factory=dict)
    cpumaps: dict[str, CpuMap] = field(default_factory=dict)
    xsks: dict[str, XskSocket] = field(default_factory=dict)  # AF_XDP sockets
    xskmaps: dict[str, XskMap] = field(default_factory=dict)
    cards: dict[str, Card] = field(default_factory=dict)
    devmap_egress: str = "flush"  # flush (since the seed's patch) | enqueue (before it)
    epoch: int = field(default_factory=lambda: next(EPOCHS))  # see ``touch``
    next_prog_id: int = 1
    next_map_id: int = 1  # the topology's devmaps take 1..; real objects' maps follow
    prog_loaded_ns: dict[int, int] = field(default_factory=dict)  # prog id -> load time
    by_ifindex: dict[int, NetDev] = field(default_factory=dict)

    @property
    def xsk_by_index(self) -> dict[int, XskSocket]:
        return {xs.index: xs for xs in self.xsks.values()}

    def touch(self) -> None:
        """A state change that can alter a verdict or a path: a new epoch, unique across every
        copy of every world in this process, so what is derived from one configuration can be
        cached by its epoch and shared by checkpoints and forks (``SharedCache``)."""
        self.epoch = next(EPOCHS)

    def nic(self, name: str) -> Nic | None:
        dev = self.devices.get(name)
        return dev if isinstance(dev, Nic) else None

    def detach_program(self, prog_id: int) -> list[str]:
        """A failed Python program comes off everywhere it runs: each device's attachment and
        each devmap entry's egress program (the entry stays, without one). Returns where."""
        where: list[str] = []
        for dev in self.devices.values():
            for mode, att in list(dev.xdp.items()):
                if att.prog.prog_id == prog_id:
                    del dev.xdp[mode]
                    where.append(f"{dev.name} ({mode})")
                    if isinstance(dev, Veth):
                        dev.resize_queues()
        for dmap in self.maps.values():
            for key, entry in list(dmap.entries.items()):
                if entry.egress is not None and entry.egress.prog_id == prog_id:
                    dmap.entries[key] = replace(entry, egress=None)
                    where.append(f"map {dmap.name} key {key} (egress)")
        self.touch()
        return where

    def card_ports(self, card: str | None) -> list[Nic]:
        """The ports of card ``card``, in the order of the devices."""
        return [d for d in self.devices.values() if isinstance(d, Nic) and d.card == card]

    def lands_on(self, src: Source) -> NetDev | None:
        """The device whose receive queues a source's frames reach: its own for frames from
        the wire, a veth sender's peer (``veth_xmit``), none for the local stack's."""
        dev = self.devices.get(src.device)
        if dev is None:
            return None
        if not src.local:
            return dev
        if isinstance(dev, Veth):
            return self.devices.get(dev.peer)
        return None

    def source_pps(self, src: Source) -> float:
        """Frames per second; frames arriving from the wire can't beat the port's line rate
        (an offered rate above it is capped, as the sender's own port would cap it)."""
        dev = self.devices.get(src.device)
        wire = src.mean_wire_bytes()
        line = dev.speed_bps / (8.0 * wire) if isinstance(dev, Nic) and dev.speed_bps else None
        if src.writer is not None:
            return src.writer.mean_pps  # an AF_XDP writer: what its kicks send
        if src.rate.kind == "captured" and src.pacing is not None:
            return src.pacing.mean_pps  # the capture's own pace: not capped
        if src.rate.kind == "pps":
            pps = src.rate.value
        elif src.rate.kind == "bps":
            pps = src.rate.value / (8.0 * wire)
        else:
            pps = line if line is not None else 10e9 / (8.0 * wire)
        return min(pps, line) if line is not None else pps


def concat_entries(tables: list[FlowTable]) -> Entries:
    def cat(get: str, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        return joined([np.asarray(getattr(t.headers, get)) for t in tables], dtype)

    sizes = joined([t.size for t in tables], np.int64)
    headers = FlowHeaders.make(
        src_mac=cat("src_mac", np.uint64),
        dst_mac=cat("dst_mac", np.uint64),
        src_ip=cat("src_ip", np.uint32),
        dst_ip=cat("dst_ip", np.uint32),
        ethertype=cat("ethertype", np.uint16),
        vlan=cat("vlan", np.uint16),
        proto=cat("proto", np.uint8),
        src_port=cat("src_port", np.uint16),
        dst_port=cat("dst_port", np.uint16),
        frag=filled(len(sizes), False, bool),
    )
    offsets = np.cumsum([0] + [len(t) for t in tables])
    return Entries.over(
        headers,
        sizes,
        joined([t.gso for t in tables], bool),
        joined([t.rss_hash for t in tables], np.uint32),
        captured=tuple(
            (int(offsets[i]), t.frames) for i, t in enumerate(tables) if t.frames is not None
        ),
    )


def share_tables(sources: list[Source], entries: Entries) -> None:
    """Each source's table becomes its slice of ``entries`` (views: a million-entry table is
    stored once, in the global index)."""
    for src in sources:
        lo, hi = src.offset, src.offset + len(src.table)
        src.table = FlowTable(
            headers=entries.headers.take(slice(lo, hi)),
            size=entries.size[lo:hi],
            gso=entries.gso[lo:hi],
            rss_hash=entries.rss_hash[lo:hi],
            frames=src.table.frames,
        )


def _common(spec: DeviceSpec, ifindex: int) -> dict[str, Any]:
    """The ``struct net_device`` fields every device type takes from its spec."""
    return {
        "name": spec.name,
        "ifindex": ifindex,
        "kind": spec.type,
        "admin_up": spec.up,
        "mtu": spec.mtu,
    }


def build_device(
    spec: DeviceSpec, ifindex: int, nr_cpus: int, entries: Entries, sources: list[Source]
) -> NetDev:
    """One device as ``register_netdevice`` leaves it (no program yet, links as specified)."""
    n = len(entries)
    if isinstance(spec, NicSpec):
        driver = DRIVERS[spec.driver]
        nic = Nic(
            **_common(spec, ifindex),
            speed_bps=spec.speed_bps,
            driver=driver,
            tx_ring_size=spec.tx_ring or driver.tx_ring_default,
            card=spec.card or spec.name,
        )
        queues = spec.queues or min(nr_cpus, driver.max_queues)
        nic.rxq = rx_queue_table(spec.ring or driver.rx_ring_default, [0], 0, 0, n)
        irq = np.asarray(spec.irq_cpus, dtype=np.int64) if spec.irq_cpus else None
        span = entry_span(sources, spec.name)
        configure_queues(nic, queues, nr_cpus, entries.rss_hash, span, irq)
        configure_xdp_rings(nic, nr_cpus)
        return nic
    if isinstance(spec, VethSpec):
        veth = Veth(**_common(spec, ifindex), speed_bps=0, peer=spec.peer, queues=spec.queues)
        cpus = [q % nr_cpus for q in range(spec.queues)]
        veth.rxq = rx_queue_table(veth.queue_size(), cpus, 0, NAPI_POLL_WEIGHT, n)
        return veth
    if isinstance(spec, TunSpec):
        tun = Tun(
            **_common(spec, ifindex),
            speed_bps=0,
            mode=spec.mode,
            queues=spec.queues,
            tx_queue_len=spec.tx_queue_len,
            vnet_hdr=spec.vnet_hdr,
            reader_pps=spec.reader.value if spec.reader is not None else None,
            writer=spec.writer,
            blocking=spec.blocking,
            zerocopy=spec.zerocopy,
            sndbuf_default=spec.sndbuf is None,
            napi_frags=spec.napi_frags,
            tx=tx_ring_table(spec.tx_queue_len, spec.queues),
            reader_free_ps=[0] * spec.queues,
        )
        tun.counters.update(dict.fromkeys(TUN_COUNTERS, 0))
        # A writer thread per queue on its own CPU: one write at a time, or a vhost batch;
        # what it has not written yet waits on its side (a virtqueue of TAP_WRITE_BACKLOG).
        batch = VHOST_NET_BATCH if spec.writer == "vhost" else 1
        wait = VHOST_WAKE_NS if spec.writer == "vhost" else 0
        cpus = [q % nr_cpus for q in range(spec.queues)]
        tun.rxq = rx_queue_table(TAP_WRITE_BACKLOG, cpus, wait, batch, n)
        tun.carrier = spec.reader is not None  # tun_attach: carrier on with a queue
        return tun
    assert isinstance(spec, BondSpec)
    return Bond(
        **_common(spec, ifindex),
        speed_bps=0,
        mode=spec.mode,
        xmit_hash_policy=spec.xmit_hash_policy,
        miimon_ms=spec.miimon_ms,
        primary=spec.primary,
        packets_per_slave=spec.packets_per_slave,
        rr_counter=np.zeros(nr_cpus, dtype=np.int64),
    )


def build_world(topology: Topology) -> World:
    """Create devices, sources, cards, maps and entry arrays."""
    seeds = np.random.SeedSequence(topology.seed)
    source_seeds = seeds.spawn(max(1, len(topology.traffic)))
    tables: list[FlowTable] = []
    sources: list[Source] = []
    offset = 0
    for index, (spec, seq) in enumerate(zip(topology.traffic, source_seeds, strict=False)):
        pacing = None
        if spec.pcap is not None:
            table, pacing = capture_flow_table(spec)
        else:
            table = build_flow_table(spec, np.random.default_rng(seq))
        sources.append(Source(index, spec, table, offset, spec.rate, spec.start_ns, pacing=pacing))
        tables.append(table)
        offset += len(table)
    entries = concat_entries(tables)
    share_tables(sources, entries)
    devices: dict[str, NetDev] = {}
    for index, dspec in enumerate(topology.devices):
        devices[dspec.name] = build_device(dspec, index + 2, topology.cpus, entries, sources)
    world = World(
        topology=topology,
        nr_cpus=topology.cpus,
        devices=devices,
        sources=sources,
        entries=entries,
        base_dir=Path(topology.source).parent if topology.source != "<input>" else Path.cwd(),
    )
    world.by_ifindex = {d.ifindex: d for d in devices.values()}
    for map_id, mspec in enumerate(topology.maps, start=1):
        world.maps[mspec.name] = DevMap(mspec.name, mspec.type, mspec.max_entries, map_id)
    map_id = len(topology.maps)
    for map_id, cspec in enumerate(topology.cpumaps, start=len(topology.maps) + 1):
        world.cpumaps[cspec.name] = CpuMap(cspec.name, cspec.max_entries, map_id, topology.cpus)
    first = map_id + 1
    for map_id, xspec in enumerate(topology.xskmaps, start=first):
        world.xskmaps[xspec.name] = XskMap(
            xspec.name, xspec.max_entries, map_id, dict(xspec.entries)
        )
    for index, sspec in enumerate(topology.xsks):
        world.xsks[sspec.name] = XskSocket(
            sspec.name,
            sspec.dev,
            sspec.queue,
            index,
            mode=sspec.mode,
            frames=sspec.frames,
            frame_size=sspec.frame_size,
            fill_size=sspec.fill,
            rx_size=sspec.rx,
            tx_size=sspec.tx,
            comp_size=sspec.comp,
            reader_pps=sspec.reader_pps,
            need_wakeup=sspec.need_wakeup,
        )
    for src in sources:
        xs = world.xsks.get(src.spec.from_ or "")
        if xs is not None:  # the socket's writer: what it sends leaves through its device
            sspec = next(x for x in topology.xsks if x.name == xs.name)
            xs.tx_chunks, xs.user = xs.user, 0
            pps = world.source_pps(src)
            xs.writer = XskWriter.of(xs, sspec.batch, pps, src.spec.count)
            xs.source = src.index
            src.via = xs.dev
            src.writer = xs.writer
    world.next_map_id = map_id + 1
    for dev in devices.values():
        if isinstance(dev, Nic) and dev.drv.rx_pps_max is not None and dev.card not in world.cards:
            world.cards[dev.card] = Card(dev.card, dev.drv.rx_pps_max, dev.drv.tx_dma_weight)
        if isinstance(dev, Veth):  # veth_open / netif_carrier_on of both ends
            peer = devices.get(dev.peer)
            dev.peer_queues = peer.queues if isinstance(peer, Veth) else 1
            dev.carrier = peer is not None and peer.admin_up
    return world
