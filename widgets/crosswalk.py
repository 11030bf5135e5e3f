"""The counters crosswalk: each simulator counter beside the real counter or tracepoint it is.

``ethtool -S``-like: per device, every counter of the report as a rate and a total, and where an
operator would read the same number on a real host (``ip -s link``'s ``rtnl_link_stats64``, a
driver's ``ethtool -S`` name, or an ``xdp:*`` tracepoint). A counter the engine does not model for
this device (absent from its ``DeviceView.counters``) is shown as *not modelled*, never as 0;
a counter that has no meaning for the device type (a bond runs no XDP of its own) as *n/a*.

Driver names below are the upstream ones where the driver has such a counter at all: ice, i40e
and ixgbe keep no per-verdict XDP counters, mlx5 and veth do; ``ethtool -S`` in the engine
(``xdptui.sim.show``) prints the same names. Pure data and a pure projection.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import COUNTERS, TUN_COUNTERS, DeviceView, Frame
from xdptui.widgets.rates import RatesView

COUNTER_ORDER: tuple[str, ...] = COUNTERS + TUN_COUNTERS
"""The report's counters, in report order; the last two exist only on tun/tap devices."""

_NO_DRIVER_COUNTER = "no driver counter: count it in the program (a per-CPU map)"

CROSSWALK: dict[str, dict[str, str]] = {
    "rx_packets": {"*": "ip -s link: RX packets (rtnl_link_stats64.rx_packets)"},
    "rx_bytes": {"*": "ip -s link: RX bytes (rtnl_link_stats64.rx_bytes)"},
    "rx_dropped": {
        "*": "ip -s link: RX dropped: no free RX descriptor (ice: the VSI's rx_dropped)",
        "mlx5": "ethtool -S: rx_out_of_buffer (RX ring full)",
        "veth": "ethtool -S: rx_queue_N_drops (peer's ptr_ring full)",
        "tun": "ip -s link: RX dropped (tun_get_user)",
        "bond": "ip -s link: RX dropped of the bond",
    },
    "rx_missed_errors": {
        "*": "ip -s link: RX missed (rtnl_link_stats64.rx_missed_errors): the NIC's own limit",
        "ice": "ip -s link: RX missed; ethtool -S: rx_discards.nic (port-level discards)",
        "veth": "not counted: a veth has no NIC of its own",
        "tun": "not counted: a tap has no NIC of its own",
        "bond": "ip -s link: RX missed of the bond (its slaves' summed)",
    },
    "xdp_drop": {
        "*": "XDP_DROP: " + _NO_DRIVER_COUNTER,
        "mlx5": "ethtool -S: rx_xdp_drop (with XDP_ABORTED and failed XDP_TX and redirects)",
        "veth": "ethtool -S: rx_queue_N_xdp_drops (XDP_DROP and XDP_ABORTED)",
    },
    "xdp_pass": {
        "*": "XDP_PASS: no counter; the frames show up in the stack",
        "veth": "ethtool -S: rx_queue_N_xdp_packets minus the other verdicts",
    },
    "xdp_tx": {
        "*": "XDP_TX: " + _NO_DRIVER_COUNTER,
        "mlx5": "ethtool -S: rx_xdp_tx_xmit",
        "veth": "ethtool -S: rx_queue_N_xdp_tx",
    },
    "xdp_redirect": {
        "*": "tracepoint xdp:xdp_redirect (xdp:xdp_redirect_err on failure)",
        "mlx5": "ethtool -S: rx_xdp_redirect (those xdp_do_redirect took); xdp:xdp_redirect",
        "veth": "ethtool -S: rx_queue_N_xdp_redirect",
    },
    "xdp_aborted": {
        "*": "tracepoint xdp:xdp_exception act=XDP_ABORTED (trace_xdp_exception)",
        "mlx5": "tracepoint xdp:xdp_exception act=XDP_ABORTED; ethtool -S: in rx_xdp_drop",
    },
    "xdp_tx_errors": {
        "*": "tracepoint xdp:xdp_exception act=XDP_TX (XDP TX ring full)",
        "mlx5": "ethtool -S: rx_xdp_tx_full (XDP TX ring full; also in rx_xdp_drop)",
        "veth": "ethtool -S: rx_queue_N_xdp_tx_errors",
    },
    "xdp_xmit": {
        "*": "tracepoint xdp:xdp_devmap_xmit sent (to this device, from bq_xmit_all)",
        "mlx5": "ethtool -S: tx_xdp_xmit (those the channel's XDPSQ queued)",
        "veth": "ethtool -S: tx_queue_N_xdp_xmit (veth_ndo_xdp_xmit)",
    },
    "xdp_xmit_errors": {
        "*": "tracepoint xdp:xdp_devmap_xmit drops (ndo_xdp_xmit refused)",
        "mlx5": "ethtool -S: tx_xdp_full (one per mlx5e_xdp_xmit that met a full XDPSQ)",
        "veth": "ethtool -S: tx_queue_N_xdp_xmit_errors",
    },
    "tx_packets": {"*": "ip -s link: TX packets (rtnl_link_stats64.tx_packets)"},
    "tx_bytes": {"*": "ip -s link: TX bytes (rtnl_link_stats64.tx_bytes)"},
    "tx_dropped": {
        "*": "ip -s link: TX dropped",
        "tun": "ip -s link: TX dropped (one per ndo_xdp_xmit call that met a full ring)",
    },
    "xdp_fast_path": {"tun": "program run before the skb is built (tun_build_skb, tun_xdp_act)"},
    "xdp_generic_path": {"tun": "program run as generic XDP on an skb (do_xdp_generic)"},
}
"""Counter -> {driver or device type or ``*``: where the real number lives}."""

NOT_APPLICABLE: dict[str, frozenset[str]] = {
    "bond": frozenset(
        {
            "xdp_drop",
            "xdp_pass",
            "xdp_tx",
            "xdp_redirect",
            "xdp_aborted",
            "xdp_tx_errors",
            "xdp_xmit",
            "xdp_xmit_errors",
        }
    ),
}
"""Counters with no meaning for a device type: a bond's program runs on its slaves."""

TUN_ONLY = frozenset({"xdp_fast_path", "xdp_generic_path"})


def crosswalk_source(dev_type: str, driver: str | None, counter: str) -> str:
    """Where ``counter`` of such a device lives on a real host."""
    entry = CROSSWALK.get(counter, {})
    for key in (driver, dev_type, "*"):
        if key is not None and key in entry:
            return entry[key]
    return ""


@dataclass(frozen=True)
class CounterRow:
    """One counter: ``total`` None = not modelled; ``applicable`` False = n/a for this type."""

    name: str
    total: int | None
    rate: float | None
    source: str
    applicable: bool = True


@dataclass(frozen=True)
class DeviceCounters:
    name: str
    kind: str
    rows: tuple[CounterRow, ...]


@dataclass(frozen=True)
class CountersView:
    devices: tuple[DeviceCounters, ...]
    focus: str | None = None


def project_counters(
    prev: Frame | None,
    frame: Frame,
    *,
    focus: str | None = None,
    rates: RatesView | None = None,
) -> CountersView:
    """The crosswalk of the focused device (all devices without a focus); rates from
    ``rates`` (default: against ``prev``)."""
    rates = rates if rates is not None else RatesView(prev, frame)
    shown = [dev for dev in frame.devices if focus is None or dev.name == focus]
    return CountersView(devices=tuple(_device(dev, rates) for dev in shown), focus=focus)


def _device(dev: DeviceView, rates: RatesView) -> DeviceCounters:
    values = dict(dev.counters)
    rows: list[CounterRow] = []
    skip = NOT_APPLICABLE.get(dev.type, frozenset())
    for name in COUNTER_ORDER:
        if name in TUN_ONLY and dev.type != "tun":
            continue
        source = crosswalk_source(dev.type, dev.driver, name)
        if name in skip:
            rows.append(CounterRow(name, None, None, "n/a: " + _why_na(dev.type), False))
            continue
        total = values.get(name)
        rate = rates.counter(dev.name, name, total) if total is not None else None
        rows.append(CounterRow(name, total, rate, source))
    kind = f"{dev.type}/{dev.driver}" if dev.driver else dev.type
    return DeviceCounters(dev.name, kind, tuple(rows))


def _why_na(dev_type: str) -> str:
    if dev_type == "bond":
        return "the bond's program runs on its slaves (see their counters)"
    return "not kept for this device type"
