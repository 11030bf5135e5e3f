"""``xdptui reproduce``: the seeds' benchmark tables beside the simulator's figures.

Each row builds the seed's set-up as a topology, runs it headless, measures the same quantity
the seed's authors measured (``sar -n dev`` rxpck/s and txpck/s over a steady window) and
prints both with their ratio. ``--json`` rows: seed, table, row, column, seed_value, sim_value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from xdptui.model.topology import NicSpec, Range, Topology, TrafficSpec, XdpSpec
from xdptui.model.units import parse_rate
from xdptui.sim.engine import Simulator

WARMUP_NS = 1_000_000
WINDOW_NS = 4_000_000


@dataclass(frozen=True)
class Row:
    seed: str
    table: str
    row: str
    column: str
    seed_value: float  # Mpps
    build: Callable[[], Topology]
    counter: str  # summed over the topology's devices, as sar sums the ports


def _ice_port(program: str, rss: bool) -> Topology:
    """The bond seed's receiver: a 100G E810 (ice) port, 16-core 3950X, 64-byte frames at full
    rate from pktgen-dpdk; "RSS" = a range of destination IPs, otherwise one flow -> one queue."""
    flows = 256 if rss else 1
    return Topology(
        name=f"bond seed: ice {program}{' RSS' if rss else ''}",
        seed=1,
        cpus=16,
        devices=(
            NicSpec(
                name="eth0",
                driver="ice",
                speed_bps=100_000_000_000,
                queues=16,
                ring=512,
                xdp=XdpSpec(program, "native"),
            ),
        ),
        traffic=(
            TrafficSpec(
                name="pktgen",
                to="eth0",
                rate=parse_rate("148.8Mpps"),
                dst_ip=Range(0x0A000001, 0x0A000001 + flows - 1),
                flows=flows,
            ),
        ),
    )


BOND_TABLE = "XDP_DROP / XDP_TX on E810 (sar rxpck/s, txpck/s)"

ROWS: tuple[Row, ...] = (
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_DROP",
        "rxpck/s",
        48.6,
        lambda: _ice_port("xdp_drop", False),
        "rx_packets",
    ),
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_TX",
        "rxpck/s",
        18.3,
        lambda: _ice_port("xdp_tx", False),
        "rx_packets",
    ),
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_TX",
        "txpck/s",
        18.3,
        lambda: _ice_port("xdp_tx", False),
        "tx_packets",
    ),
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_DROP (RSS)",
        "rxpck/s",
        116.5,
        lambda: _ice_port("xdp_drop", True),
        "rx_packets",
    ),
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_TX (RSS)",
        "rxpck/s",
        25.3,
        lambda: _ice_port("xdp_tx", True),
        "rx_packets",
    ),
    Row(
        "bond-xdp",
        BOND_TABLE,
        "without patch (1 dev): XDP_TX (RSS)",
        "txpck/s",
        24.2,
        lambda: _ice_port("xdp_tx", True),
        "tx_packets",
    ),
)

GROUPS = {"bond": ("bond-xdp",), "devmap": ("devmap-prog-on-flush",), "tun": ("tun-xdp",)}


def run_row(row: Row) -> float:
    """Mpps of the row's counter over the steady window, summed over the topology's NICs."""
    counter = row.counter
    sim = Simulator(row.build())
    sim.run_until(WARMUP_NS)
    before = sum(d.counters[counter] for d in sim.world.devices.values())
    sim.run_until(WARMUP_NS + WINDOW_NS)
    after = sum(d.counters[counter] for d in sim.world.devices.values())
    return (after - before) / (WINDOW_NS / 1e9) / 1e6


def main(which: str, as_json: bool) -> int:
    seeds = sum((GROUPS[k] for k in GROUPS), ()) if which == "all" else GROUPS[which]
    rows = [r for r in ROWS if r.seed in seeds]
    results = [(r, run_row(r)) for r in rows]
    if as_json:
        for r, value in results:
            print(
                json.dumps(
                    {
                        "seed": r.seed,
                        "table": r.table,
                        "row": r.row,
                        "column": r.column,
                        "seed_value": r.seed_value,
                        "sim_value": round(value, 3),
                    }
                )
            )
        return 0
    if not results:
        print(f"no rows for {which} yet")
        return 0
    table = None
    for r, value in results:
        if r.table != table:
            table = r.table
            print(f"\n{r.seed}: {table}")
            print(f"  {'row':<42} {'column':<9} {'seed':>8} {'sim':>8} {'sim/seed':>9}")
        ratio = value / r.seed_value if r.seed_value else float("nan")
        flag = "" if abs(ratio - 1) <= 0.10 else "  (outside ±10 %)"
        print(
            f"  {r.row:<42} {r.column:<9} {r.seed_value:>7.1f}M {value:>7.1f}M {ratio:>9.3f}{flag}"
        )
    return 0
