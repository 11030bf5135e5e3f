"""The bounds a topology file, the commands and the command line share: one place, pure values.

What a topology may ask for is exactly what the commands accept at run time (``ethtool -L``,
``ethtool -G``, ``ip link set ... mtu``) and what the engine can hold (the flow table's size),
so a file ``xdptui check`` accepts never makes ``xdptui run`` fail. The loader
(``xdptui.topology_io``) reads these values and says the valid range at the offending line; the
engine's commands are meant to read the same ones. The driver rows repeat the profiles'
numbers in ``xdptui.sim.drivers`` (a test keeps the two equal) so that this module needs no
engine import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "CPUS_MAX",
    "DRIVER_LIMITS",
    "DURATION_MAX_NS",
    "GSO_GRAIN",
    "INT_MAX",
    "MAX_TABLE_ENTRIES",
    "MTU_MAX",
    "MTU_MIN",
    "PORT_MAX",
    "PORT_MIN",
    "RATE_MAX_BPS",
    "RATE_MAX_PPS",
    "RING_MIN",
    "SEED_MAX",
    "SPEED_MAX_BPS",
    "SPEED_MIN_BPS",
    "TOPOLOGY_MAX_BYTES",
    "U32_MAX",
    "U63_MAX",
    "XDP_MAX_MTU",
    "DriverLimits",
    "flow_table_entries",
    "max_channels",
    "ring_sizes",
]

U32_MAX = (1 << 32) - 1
INT_MAX = (1 << 31) - 1
U63_MAX = (1 << 63) - 1
"""The largest count the engine's int64 counters hold."""

# --- the flow table (xdptui.sim.traffic.build_flow_table) ------------------------------------

MAX_TABLE_ENTRIES = 1 << 20
"""The largest flow table a traffic source may need: ``lcm(flows, len(sizes))`` entries,
stretched to a multiple of :data:`GSO_GRAIN` when the GSO share is strictly between 0 and 1.
Fast mode's cost follows flow classes, not entries; what an entry costs is memory (about
32 bytes over a run: its header fields, RSS queues, class and queue position), so 2^20 flows
take a few tens of MB."""

GSO_GRAIN = 20
"""With a GSO share strictly between 0 and 1 the table length is a multiple of this (5 %)."""


def flow_table_entries(flows: int, n_sizes: int, gso: float) -> int:
    """How many entries the flow table of a source with these settings has."""
    entries = math.lcm(flows, n_sizes)
    if 0.0 < gso < 1.0:
        entries = math.lcm(entries, GSO_GRAIN)
    return entries


# --- devices ------------------------------------------------------------------------------

CPUS_MAX = 4096
NR_CPUS = 8192  # CONFIG_NR_CPUS of distribution x86_64 kernels: cpu_map_alloc's max_entries limit
"""nr_cpu_ids the topology may give (``cpus:``)."""

MTU_MIN = 68
"""``dev_set_mtu``: ETH_MIN_MTU."""
MTU_MAX = 9702
"""The largest MTU ``ip link set dev DEV mtu N`` takes on any modelled device."""
XDP_MAX_MTU = 3046
"""With a native XDP program a NIC's frames must fit one buffer: a 4 KiB page less the headroom
and ``skb_shared_info`` (``ixgbe_xdp_setup``, ``ice_xdp_setup_prog``: "MTU too large for XDP")."""

RING_MIN = 64
"""The smallest ring ``ethtool -G`` takes (IXGBE_MIN_RXD, ICE_MIN_NUM_DESC)."""

SPEED_MIN_BPS = 1_000_000
"""1 Mb/s: ethtool counts link speed in Mb/s."""
SPEED_MAX_BPS = 800_000_000_000
"""800G (``SPEED_800000``, the fastest link ethtool names)."""


@dataclass(frozen=True)
class DriverLimits:
    """What one NIC driver takes from ``ethtool -L`` / ``ethtool -G`` and whether it has
    ``ndo_bpf`` (a native program there brings the :data:`XDP_MAX_MTU` rule)."""

    name: str
    max_queues: int
    rx_ring_max: int
    native_xdp: bool


DRIVER_LIMITS: dict[str, DriverLimits] = {
    d.name: d
    for d in (
        DriverLimits("ixgbe", max_queues=64, rx_ring_max=4096, native_xdp=True),
        DriverLimits("i40e", max_queues=64, rx_ring_max=8160, native_xdp=True),
        DriverLimits("ice", max_queues=256, rx_ring_max=8160, native_xdp=True),
        DriverLimits("mlx5", max_queues=64, rx_ring_max=8192, native_xdp=True),
        DriverLimits("generic", max_queues=64, rx_ring_max=4096, native_xdp=False),
    )
}
"""Per driver, as in ``xdptui.sim.drivers.DRIVERS``."""


def max_channels(driver: str, nr_cpus: int) -> int:
    """``ethtool -L DEV combined N`` takes 1..this: the driver's queues, at most one per CPU."""
    return min(DRIVER_LIMITS[driver].max_queues, nr_cpus)


def ring_sizes(driver: str) -> tuple[int, ...]:
    """The ring sizes a topology may give a NIC of ``driver``: powers of two from
    :data:`RING_MIN` up to what ``ethtool -G`` takes on it."""
    top = DRIVER_LIMITS[driver].rx_ring_max
    return tuple(1 << n for n in range(RING_MIN.bit_length() - 1, 14) if 1 << n <= top)


# --- traffic and time ---------------------------------------------------------------------

RATE_MAX_PPS = 10e9
"""10 Gpps: eight times an 800G port's 64-byte line rate; beyond it the engine's integer frame
counts lose meaning."""
RATE_MAX_BPS = 10e12
"""10 Tb/s, the same bound in bits."""

DURATION_MAX_NS = 86_400 * 1_000_000_000
"""One day of simulated time: the longest ``--duration``, ``start:`` or ``at:``."""

SEED_MAX = U32_MAX
"""Seeds are 0..2**32-1, in the file (``seed:``) and on the command line (``--seed``)."""

# --- the command line ---------------------------------------------------------------------

PORT_MIN = 1
PORT_MAX = 65535
"""TCP ports ``xdptui serve --port`` may listen on."""

TOPOLOGY_MAX_BYTES = 1 << 20
"""The largest topology file read (1 MiB; the shipped ones are a few KiB)."""

# A Python program's run (or its file's import) may take this long before it is stopped and
# reported (an SIGALRM timer on the main thread; elsewhere it is not bounded).
PROGRAM_TIME_LIMIT_S = 2.0
