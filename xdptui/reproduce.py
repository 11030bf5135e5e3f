"""``xdptui reproduce``: the seeds' benchmark tables beside the simulator's figures.

Each row builds the seed's set-up as a topology, runs it headless, measures the same quantity
the seed's authors measured (``sar -n dev`` rxpck/s and txpck/s over a steady window) and
prints both with their ratio, and whether the row calibrated the cost model (``fitted``) or is a
prediction. ``--json`` rows: seed, table, row, column, seed_value, sim_value, fitted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from xdptui.model.topology import (
    BondSpec,
    MapEntrySpec,
    MapSpec,
    NicSpec,
    Range,
    Topology,
    TrafficSpec,
    TunSpec,
    VethSpec,
    XdpMode,
    XdpSpec,
    default_miimon,
)
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
    devmap_egress: str = "flush"  # "enqueue": the devmap program model before the seed's patch
    fitted: bool = False  # the cost model was solved from this row (calibration, not prediction)


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


def _bond(program: str, rss: bool, devs: int) -> Topology:
    """The seed's "with patch, bond" rows: ice ports of one dual-port E810 card in a balance-rr
    bond with the program on the bond, 64-byte frames at line rate into each port. The mode is
    the seed's: its text says the round-robin algorithm was changed to per-CPU tx counters for
    these runs (the shared ``rr_tx_counter`` cost 50 % CPU), and only balance-rr has that
    counter; so XDP_TX alternates, frame by frame on each CPU, between the receiving port and
    the other one (``bond_xdp_xmit_roundrobin_slave_get``)."""
    flows = 256 if rss else 1
    names = [f"eth{i}" for i in range(devs)]
    nics = tuple(
        NicSpec(
            name=n,
            driver="ice",
            speed_bps=100_000_000_000,
            queues=16 if rss else 1,
            ring=512,
            card="e810",
            irq_cpus=None if rss else (i,),
            up=True,
        )
        for i, n in enumerate(names)
    )
    bond = BondSpec(
        name="bond0",
        mode="balance-rr",
        slaves=tuple(names),
        miimon_ms=default_miimon("balance-rr"),
        xdp=XdpSpec(program, "native"),
    )
    traffic = tuple(
        TrafficSpec(
            name=f"pktgen{i}",
            to=n,
            rate=parse_rate("148.8Mpps"),
            src_ip=Range(0xC6120001 + i, 0xC6120001 + i),
            src_port=Range(1024, 1024 + 255) if rss else Range(1024, 1024),
            dst_ip=Range(0x0A000001, 0x0A000001 + flows - 1),
            flows=flows,
        )
        for i, n in enumerate(names)
    )
    return Topology(
        name=f"bond seed: bond {program} {devs} dev{' RSS' if rss else ''}",
        seed=1,
        cpus=16,
        devices=(*nics, bond),
        traffic=traffic,
    )


BOND_TABLE = "XDP_DROP / XDP_TX on E810 (sar rxpck/s, txpck/s)"


def _bond_rows() -> tuple[Row, ...]:
    """The bond seed's table: (label, set-up, XDP_DROP, XDP_TX rx/tx, RSS DROP, RSS TX rx/tx)."""
    # "without patch" calibrates: ice's rx_frame and tx (costs.py) and the E810 DMA budget
    # (drivers.py) were solved from it; the bond rows are predictions.
    table = (
        (
            "without patch (1 dev)",
            lambda p, rss: _ice_port(p, rss),
            (48.6, 18.3, 18.3, 116.5, 25.3, 24.2),
            True,
        ),
        (
            "with patch, bond (1 dev)",
            lambda p, rss: _bond(p, rss, 1),
            (46.7, 13.9, 13.9, 117.2, 25.1, 24.0),
            False,
        ),
        (
            "with patch, bond (2 devs)",
            lambda p, rss: _bond(p, rss, 2),
            (92.7, 17.6, 17.5, 117.2, 28.7, 27.4),
            False,
        ),
    )
    rows: list[Row] = []
    for label, make, values, fitted in table:
        cells = (
            ("XDP_DROP", "xdp_drop", False, "rxpck/s", "rx_packets"),
            ("XDP_TX", "xdp_tx", False, "rxpck/s", "rx_packets"),
            ("XDP_TX", "xdp_tx", False, "txpck/s", "tx_packets"),
            ("XDP_DROP (RSS)", "xdp_drop", True, "rxpck/s", "rx_packets"),
            ("XDP_TX (RSS)", "xdp_tx", True, "rxpck/s", "rx_packets"),
            ("XDP_TX (RSS)", "xdp_tx", True, "txpck/s", "tx_packets"),
        )
        for (name, prog, rss, column, counter), value in zip(cells, values, strict=True):
            rows.append(
                Row(
                    "bond-xdp",
                    BOND_TABLE,
                    f"{label}: {name}",
                    column,
                    value,
                    partial(make, prog, rss),
                    counter,
                    fitted=fitted,
                )
            )
    return tuple(rows)


DEVMAP_TABLE = "xdp_redirect_map, pktgen single flow 64B (Mpps forwarded)"


def _devmap(target: str, mode: XdpMode, egress: bool) -> Topology:
    """The devmap seed's set-up: an i40e port receiving one flow on one CPU, xdp_redirect_map
    to key 0 -> another i40e port (with a dummy program so it takes redirects) or a veth whose
    peer drops in XDP; "2nd xdp_prog" = an egress program on the devmap entry."""
    devices: list[NicSpec | VethSpec] = [
        NicSpec(
            name="eth0",
            driver="i40e",
            speed_bps=40_000_000_000,
            queues=1,
            xdp=XdpSpec("redirect_map", mode, (("map", "tx_ports"),)),
        ),
    ]
    if target == "i40e":
        devices.append(
            NicSpec(
                name="eth1",
                driver="i40e",
                speed_bps=40_000_000_000,
                queues=1,
                xdp=XdpSpec("xdp_pass", "native"),
            )
        )
        dev = "eth1"
    else:
        devices.append(VethSpec(name="veth0", peer="veth1"))
        devices.append(VethSpec(name="veth1", peer="veth0", xdp=XdpSpec("xdp_drop", "native")))
        dev = "veth0"
    return Topology(
        name=f"devmap seed: i40e->{target} {mode}{' + egress' if egress else ''}",
        seed=1,
        cpus=4,
        devices=tuple(devices),
        maps=(
            MapSpec(
                "tx_ports", "devmap", 64, (MapEntrySpec(0, dev, "xdp_pass" if egress else None),)
            ),
        ),
        traffic=(TrafficSpec(name="pktgen", to="eth0", rate=parse_rate("line")),),
    )


def _devmap_rows() -> tuple[Row, ...]:
    values = {
        ("5.10 rc6", "i40e"): (2.0, 9.1, 8.0),
        ("5.10 rc6", "veth"): (1.7, 11.0, 9.7),
        ("5.10 rc6 + patch", "i40e"): (2.0, 9.5, 7.5),
        ("5.10 rc6 + patch", "veth"): (1.7, 11.6, 9.1),
    }
    rows: list[Row] = []
    for (version, target), (gen, nat, second) in values.items():
        egress_mode = "flush" if "patch" in version else "enqueue"
        cells: tuple[tuple[str, float, XdpMode, bool], ...] = (
            ("Generic", gen, "generic", False),
            ("Native", nat, "native", False),
            ("Native + 2nd xdp_prog", second, "native", True),
        )
        for column, value, mode, egress in cells:
            # costs.py solved skb_xmit, xmit_frame and EGRESS_FLUSH from the "+ patch" rows and
            # PRE_PATCH_DEVMAP / EGRESS_ENQUEUE from the native "5.10 rc6" ones; the generic
            # "5.10 rc6" figures are predictions.
            fitted = "patch" in version or mode == "native"
            rows.append(
                Row(
                    "devmap-prog-on-flush",
                    DEVMAP_TABLE,
                    f"{version} | i40e->{target}",
                    column,
                    value,
                    partial(_devmap, target, mode, egress),
                    "xdp_redirect",
                    egress_mode,
                    fitted,
                )
            )
    return tuple(rows)


TUN_TABLE = "tap XDP, small packets written by one writer (Mpps)"


def _tun(program: str, mode: XdpMode) -> Topology:
    """The tun seed's set-up: one writer thread writing small frames into a tap as fast as it
    can, the program on the tap; xdp_redirect sends to an ixgbe port (with a program, so it
    takes redirects). "Before" had no native XDP on tun: every write went through generic XDP,
    which is what attaching in generic mode gives today."""
    devices: list[NicSpec | TunSpec] = []
    params: tuple[tuple[str, str], ...] = ()
    if program == "redirect":
        devices.append(
            NicSpec(
                name="eth0",
                driver="ixgbe",
                speed_bps=10_000_000_000,
                queues=1,
                xdp=XdpSpec("xdp_pass", "native"),
            )
        )
        params = (("dev", "eth0"),)
    devices.append(
        TunSpec(
            name="tap0",
            mode="tap",
            queues=1,
            reader=parse_rate("10Mpps"),
            xdp=XdpSpec(program, mode, params),
        )
    )
    return Topology(
        name=f"tun seed: {program} {mode}",
        seed=1,
        cpus=2,
        devices=tuple(devices),
        traffic=(TrafficSpec(name="writer", to="tap0", rate=parse_rate("10Mpps")),),
    )


def _tun_rows() -> tuple[Row, ...]:
    cells = (
        ("xdp1", "xdp1", "xdp_drop", 1.7, 2.3),
        ("xdp_redirect to ixgbe", "redirect", "xdp_redirect", 0.8, 1.38),
    )
    rows: list[Row] = []
    for label, prog, counter, before, after in cells:
        rows.append(
            Row(
                "tun-xdp",
                TUN_TABLE,
                label,
                "Before",
                before,
                partial(_tun, prog, "generic"),
                counter,
                fitted=True,  # generic_rx, skb_xmit (costs.py)
            )
        )
        rows.append(
            Row(
                "tun-xdp",
                TUN_TABLE,
                label,
                "After",
                after,
                partial(_tun, prog, "native"),
                counter,
                fitted=True,  # TUN_FAST, TUN_WRITE_FLUSH (costs.py)
            )
        )
    return tuple(rows)


ROWS: tuple[Row, ...] = _bond_rows() + _devmap_rows() + _tun_rows()

GROUPS = {"bond": ("bond-xdp",), "devmap": ("devmap-prog-on-flush",), "tun": ("tun-xdp",)}


def run_row(row: Row) -> float:
    """Mpps of the row's counter over the steady window, summed over the topology's NICs."""
    counter = row.counter
    sim = Simulator(row.build(), devmap_egress=row.devmap_egress)
    kinds = ("nic", "tun")
    sim.run_until(WARMUP_NS)
    before = sum(d.counters[counter] for d in sim.world.devices.values() if d.kind in kinds)
    sim.run_until(WARMUP_NS + WINDOW_NS)
    after = sum(d.counters[counter] for d in sim.world.devices.values() if d.kind in kinds)
    return (after - before) / (WINDOW_NS / 1e9) / 1e6


def main(which: str, as_json: bool) -> int:
    if which == "ixgbe":
        return ixgbe_main(as_json)
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
                        "fitted": r.fitted,
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
            print(f"  {'row':<42} {'column':<22} {'seed':>8} {'sim':>8} {'sim/seed':>9}  kind")
        ratio = value / r.seed_value if r.seed_value else float("nan")
        flag = "" if abs(ratio - 1) <= 0.10 else "  (outside ±10 %)"
        kind = "fitted" if r.fitted else "predicted"
        print(
            f"  {r.row:<42} {r.column:<22} {r.seed_value:>7.2f}M {value:>7.2f}M {ratio:>9.3f}"
            f"  {kind}{flag}"
        )
    print("\nfitted: the cost model was solved from this row (calibration); predicted: not.")
    return 0


IXGBE_SEED = "ixgbe-xdp-many-cpus"
IXGBE_CPUS = (64, 65, 96, 128, 129, 256)


def _ixgbe(cpus: int) -> Topology:
    """The ixgbe seed's subject: an ixgbe port with a native XDP_TX program on a host with
    ``cpus`` CPUs (``nr_cpu_ids``)."""
    return Topology(
        name=f"ixgbe seed: {cpus} CPUs",
        seed=1,
        cpus=cpus,
        devices=(
            NicSpec(
                name="eth0",
                driver="ixgbe",
                speed_bps=10_000_000_000,
                queues=4,
                xdp=XdpSpec("xdp_tx", "native"),
            ),
        ),
    )


@dataclass(frozen=True)
class IxgbeRow:
    cpus: int
    attach: str  # "ok" or the errno name
    rings: int
    locking: bool
    ring_cpus: tuple[tuple[int, ...], ...]
    lock_ns: float  # per XDP_TX / ndo_xdp_xmit frame: an estimate (costs.LOCK_*)


def ixgbe_row(cpus: int) -> IxgbeRow:
    """What the patch is about, for one CPU count: ``ixgbe_xdp_setup`` (ENOMEM above
    2 x IXGBE_MAX_XDP_QS = 128 CPUs), ``ixgbe_xdp_queues`` (64 rings at most),
    ``ixgbe_determine_xdp_q_idx`` (cpu % 64 under ``ixgbe_xdp_locking_key``)."""
    from xdptui.sim.dev.nic import Nic

    sim = Simulator(_ixgbe(cpus))
    failed = [e for e in sim.frame().events if not e.ok]
    nic = sim.world.devices["eth0"]
    assert isinstance(nic, Nic)
    view = sim.frame().device("eth0")
    return IxgbeRow(
        cpus=cpus,
        attach=failed[0].errno or "error" if failed else "ok",
        rings=len(view.xdp_tx_rings),
        locking=any(r.locked for r in view.xdp_tx_rings),
        ring_cpus=tuple(r.cpus for r in view.xdp_tx_rings),
        lock_ns=nic.lock_cost(cpus),
    )


def _sharing(ring_cpus: tuple[tuple[int, ...], ...]) -> str:
    if not ring_cpus:
        return "-"
    groups: dict[int, list[int]] = {}
    for ring, cpus in enumerate(ring_cpus):
        groups.setdefault(len(cpus), []).append(ring)
    parts = []
    for k, rings in sorted(groups.items(), reverse=True):
        lo, hi = rings[0], rings[-1]
        span = f"rings {lo}-{hi}" if hi > lo else f"ring {lo}"
        example = ", ".join(map(str, ring_cpus[lo]))
        parts.append(f"{span}: {k} CPU{'s' if k > 1 else ''} (ring {lo}: {example})")
    return "; ".join(parts)


def ixgbe_main(as_json: bool) -> int:
    rows = [ixgbe_row(n) for n in IXGBE_CPUS]
    if as_json:
        for r in rows:
            print(
                json.dumps(
                    {
                        "seed": IXGBE_SEED,
                        "cpus": r.cpus,
                        "attach": r.attach,
                        "xdp_tx_rings": r.rings,
                        "locking": r.locking,
                        "ring_cpus": [list(c) for c in r.ring_cpus],
                        "lock_ns_per_xdp_tx_frame": r.lock_ns,
                        "lock_ns_is_estimate": True,
                        "fitted": False,
                    }
                )
            )
        return 0
    print(f"\n{IXGBE_SEED}: ixgbe native XDP on hosts with more than 64 CPUs")
    head = f"  {'CPUs':>5}  {'attach':<7} {'rings':>5}  {'tx_lock':<7} {'lock/frame*':>11}"
    print(head + "  CPUs per ring")
    for r in rows:
        lock = "on" if r.locking else "off"
        print(
            f"  {r.cpus:>5}  {r.attach:<7} {r.rings:>5}  {lock:<7} {r.lock_ns:>9.1f}ns"
            f"  {_sharing(r.ring_cpus)}"
        )
    print(
        "\n* the tx_lock's cost per XDP_TX / ndo_xdp_xmit frame is an ESTIMATE, not fitted"
        " (costs.LOCK_UNCONTENDED + LOCK_PER_SHARER per extra CPU per ring, charged on every"
        " ring while ixgbe_xdp_locking_key is on): the seed measured no XDP_TX rate. Its netperf"
        " table (TCP through the stack with a pass-through program) is not reproduced: see the"
        ' README\'s "Seed tables".'
    )
    return 0
