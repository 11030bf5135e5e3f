"""The simulated host built from a topology: devices with their rings, traffic sources and the
one global flow-table index every per-entry array is laid over.

Entries of all sources are concatenated: source ``s`` owns entries ``offset[s] ..
offset[s] + len(table_s)``, so a ring, a verdict or a cost is one array over all entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from xdptui.model.topology import (
    BondSpec,
    DeviceSpec,
    NicSpec,
    Topology,
    TrafficSpec,
    TunSpec,
    VethSpec,
)
from xdptui.model.units import Rate
from xdptui.model.views import TUN_COUNTERS
from xdptui.sim.bond import Bond
from xdptui.sim.devmap import DevMap
from xdptui.sim.drivers import DRIVERS
from xdptui.sim.hashing import FlowHeaders, default_reta, rss_queue
from xdptui.sim.netdev import NetDev, Nic, RxQueues, TxRings, Veth
from xdptui.sim.traffic import FlowTable, build_flow_table
from xdptui.sim.tun import Tun

IntArray = npt.NDArray[np.int64]

VETH_RING_SIZE = 256  # drivers/net/veth.c
WIRE_OVERHEAD = 20  # preamble/SFD 8 + inter-frame gap 12 (docs/design.md, "Simulation model")


@dataclass
class Source:
    """A running traffic source: its spec, flow table and how many frames it has emitted."""

    spec: TrafficSpec
    table: FlowTable
    offset: int
    rate: Rate
    emitted: int = 0
    lost: int = 0  # offered while the target was down
    stopped: bool = False
    start_ns: int = 0
    rate_origin_ns: int = 0  # emitted counts from here at the current rate
    emitted_at_origin: int = 0

    @property
    def device(self) -> str:
        return self.spec.to or self.spec.from_ or ""

    @property
    def local(self) -> bool:
        return self.spec.from_ is not None

    def mean_wire_bytes(self) -> float:
        return float(self.table.size.mean()) + WIRE_OVERHEAD


@dataclass
class Entries:
    """Per-entry header arrays over all sources, as programs and hashes see them."""

    size: IntArray
    wire_bytes: IntArray
    gso: npt.NDArray[np.bool_]
    rss_hash: npt.NDArray[np.uint32]
    src_mac: npt.NDArray[np.uint64]
    dst_mac: npt.NDArray[np.uint64]
    ethertype: npt.NDArray[np.uint16]
    src_ip: npt.NDArray[np.uint32]
    dst_ip: npt.NDArray[np.uint32]
    proto: npt.NDArray[np.uint8]
    src_port: npt.NDArray[np.uint16]
    dst_port: npt.NDArray[np.uint16]
    headers: FlowHeaders

    def __len__(self) -> int:
        return len(self.size)


@dataclass
class World:
    topology: Topology
    nr_cpus: int
    devices: dict[str, NetDev]
    sources: list[Source]
    entries: Entries
    base_dir: Path
    maps: dict[str, DevMap] = field(default_factory=dict)
    devmap_egress: str = "flush"  # flush (since the seed's patch) | enqueue (before it)
    epoch: int = 0  # bumped on every state change that can alter a verdict or a path
    next_prog_id: int = 1
    prog_loaded_ns: dict[int, int] = field(default_factory=dict)  # prog id -> load time
    by_ifindex: dict[int, NetDev] = field(default_factory=dict)

    def touch(self) -> None:
        self.epoch += 1

    def nic(self, name: str) -> Nic | None:
        dev = self.devices.get(name)
        return dev if isinstance(dev, Nic) else None


def _concat_entries(tables: list[FlowTable]) -> Entries:
    def cat(get: str) -> npt.NDArray[np.generic]:
        parts = [np.asarray(getattr(t.headers, get)) for t in tables]
        return np.concatenate(parts) if parts else np.zeros(0)

    sizes = (
        np.concatenate([t.size for t in tables]).astype(np.int64)
        if tables
        else np.zeros(0, dtype=np.int64)
    )
    headers = FlowHeaders.make(
        src_mac=cat("src_mac").astype(np.uint64),
        dst_mac=cat("dst_mac").astype(np.uint64),
        src_ip=cat("src_ip").astype(np.uint32),
        dst_ip=cat("dst_ip").astype(np.uint32),
        ethertype=cat("ethertype").astype(np.uint16),
        vlan=cat("vlan").astype(np.uint16),
        proto=cat("proto").astype(np.uint8),
        src_port=cat("src_port").astype(np.uint16),
        dst_port=cat("dst_port").astype(np.uint16),
        frag=np.zeros(len(sizes), dtype=bool),
    )
    return Entries(  # the header fields are the same (read-only) arrays as ``headers``'
        size=sizes,
        wire_bytes=sizes + WIRE_OVERHEAD,
        gso=np.concatenate([t.gso for t in tables]) if tables else np.zeros(0, dtype=bool),
        rss_hash=(
            np.concatenate([t.rss_hash for t in tables]).astype(np.uint32)
            if tables
            else np.zeros(0, dtype=np.uint32)
        ),
        src_mac=headers.src_mac,
        dst_mac=headers.dst_mac,
        ethertype=headers.ethertype,
        src_ip=headers.src_ip,
        dst_ip=headers.dst_ip,
        proto=headers.proto,
        src_port=headers.src_port,
        dst_port=headers.dst_port,
        headers=headers,
    )


def configure_nic_queues(
    nic: Nic, queues: int, nr_cpus: int, entries: Entries, irq_cpus: tuple[int, ...] | None = None
) -> None:
    """(Re)build RSS and the RX rings for ``queues`` channels (``ethtool -L``): the RETA is
    refilled with the default round-robin (``ethtool_rxfh_indir_default``) over at most the
    driver's RSS queue limit; queue i's interrupt goes to CPU i % nr_cpus unless given."""
    assert nic.driver is not None
    nic.queues = queues
    rss_queues = min(queues, nic.driver.rss_queues_max)
    nic.reta = default_reta(nic.driver.reta_size, rss_queues)
    nic.queue_of_entry = rss_queue(entries.rss_hash, nic.reta).astype(np.int64)
    if irq_cpus is None or len(irq_cpus) != queues:
        irq = np.arange(queues, dtype=np.int64) % nr_cpus
    else:
        irq = np.asarray(irq_cpus, dtype=np.int64)
    size = nic.rx.size if nic.rx is not None else nic.driver.rx_ring_default
    nic.rx = RxQueues.make(queues, size, irq, len(entries))


def configure_xdp_rings(nic: Nic, nr_cpus: int) -> None:
    """XDP TX rings exist only while a native program is attached (``ixgbe_xdp_queues``); the
    last TxRings slot is always the stack's TX queue."""
    assert nic.driver is not None
    native = nic.xdp.get("native") is not None
    rings, locking = nic.driver.xdp_tx_layout(nr_cpus, nic.queues) if native else (0, False)
    nic.xdp_rings = rings
    nic.xdp_locking = locking
    ring_of_cpu = np.full(nr_cpus, -1, dtype=np.int64)
    for cpu in range(nr_cpus):
        ring = nic.driver.ring_for_cpu(cpu, rings, locking)
        if ring is not None:
            ring_of_cpu[cpu] = ring
    nic.ring_of_cpu = ring_of_cpu
    tx = TxRings.make([nic.tx_ring_size] * rings + [nic.tx_ring_size])
    cpus: list[tuple[int, ...]] = [
        tuple(int(c) for c in np.flatnonzero(ring_of_cpu == r)) for r in range(rings)
    ]
    tx.cpus = (*cpus, ())
    tx.locked = locking
    if nic.tx is not None:  # the stack queue survives a reconfiguration
        tx.occ[-1] = nic.tx.occ[-1]
        tx.occ_bytes[-1] = nic.tx.occ_bytes[-1]
        tx.sent[-1] = nic.tx.sent[-1]
        tx.dropped[-1] = nic.tx.dropped[-1]
    nic.tx = tx


def _common(spec: DeviceSpec, ifindex: int) -> dict[str, Any]:
    """The ``struct net_device`` fields every device type takes from its spec."""
    return {
        "name": spec.name,
        "ifindex": ifindex,
        "kind": spec.type,
        "admin_up": spec.up,
        "mtu": spec.mtu,
    }


def build_world(topology: Topology) -> World:
    """Create devices, sources and entry arrays. Only nic and veth are built here; other
    device types are modelled in their own modules as they arrive."""
    seeds = np.random.SeedSequence(topology.seed)
    source_seeds = seeds.spawn(max(1, len(topology.traffic)))
    tables: list[FlowTable] = []
    sources: list[Source] = []
    offset = 0
    for spec, seq in zip(topology.traffic, source_seeds, strict=False):
        table = build_flow_table(spec, np.random.default_rng(seq))
        sources.append(
            Source(
                spec, table, offset, spec.rate, start_ns=spec.start_ns, rate_origin_ns=spec.start_ns
            )
        )
        tables.append(table)
        offset += len(table)
    entries = _concat_entries(tables)
    n_entries = len(entries)
    devices: dict[str, NetDev] = {}
    for index, dspec in enumerate(topology.devices):
        ifindex = index + 2
        if isinstance(dspec, NicSpec):
            driver = DRIVERS[dspec.driver]
            nic = Nic(
                **_common(dspec, ifindex),
                speed_bps=dspec.speed_bps,
                driver=driver,
                tx_ring_size=dspec.tx_ring or driver.tx_ring_default,
                card=dspec.card or dspec.name,
            )
            queues = dspec.queues or min(topology.cpus, driver.max_queues)
            nic.rx = RxQueues.make(
                1, dspec.ring or driver.rx_ring_default, np.zeros(1, dtype=np.int64), n_entries
            )
            configure_nic_queues(nic, queues, topology.cpus, entries, dspec.irq_cpus)
            configure_xdp_rings(nic, topology.cpus)
            devices[dspec.name] = nic
        elif isinstance(dspec, VethSpec):
            veth = Veth(
                **_common(dspec, ifindex),
                speed_bps=0,
                peer=dspec.peer,
                queues=dspec.queues,
            )
            irq = np.arange(dspec.queues, dtype=np.int64) % topology.cpus
            veth.rx = RxQueues.make(dspec.queues, VETH_RING_SIZE, irq, n_entries)
            devices[dspec.name] = veth
        elif isinstance(dspec, TunSpec):
            tun = Tun(
                **_common(dspec, ifindex),
                speed_bps=0,
                mode=dspec.mode,
                queues=dspec.queues,
                tx_queue_len=dspec.tx_queue_len,
                vnet_hdr=dspec.vnet_hdr,
                reader_pps=dspec.reader.value if dspec.reader is not None else None,
                writer=dspec.writer,
                blocking=dspec.blocking,
                zerocopy=dspec.zerocopy,
                sndbuf_default=dspec.sndbuf is None,
                napi_frags=dspec.napi_frags,
                tx=TxRings.make([dspec.tx_queue_len] * dspec.queues),
            )
            tun.counters.update(dict.fromkeys(TUN_COUNTERS, 0))
            # A writer thread per queue; the one-slot "ring" stands for the write in progress.
            irq = np.arange(dspec.queues, dtype=np.int64) % topology.cpus
            batch = 64 if dspec.writer == "vhost" else 1
            tun.rx = RxQueues.make(dspec.queues, batch, irq, n_entries)
            tun.carrier = dspec.reader is not None  # tun_attach: carrier on with a queue
            devices[dspec.name] = tun
        elif isinstance(dspec, BondSpec):
            devices[dspec.name] = Bond(
                **_common(dspec, ifindex),
                speed_bps=0,
                mode=dspec.mode,
                xmit_hash_policy=dspec.xmit_hash_policy,
                miimon_ms=dspec.miimon_ms,
                primary=dspec.primary,
                packets_per_slave=dspec.packets_per_slave,
                rr_counter=np.zeros(topology.cpus, dtype=np.int64),
            )
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
    # veth carrier follows the peer being up (veth_open / netif_carrier_on of both ends).
    for dev in devices.values():
        if isinstance(dev, Veth):
            peer = devices.get(dev.peer)
            dev.carrier = peer is not None and peer.admin_up
    return world
