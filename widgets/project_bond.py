"""The bond view: per bond its mode, policy and active slave, per slave its TX and how it splits.

For each slave: link state, whether it is the active slave and in ``usable_slaves``, its
``tx_packets`` rate, and the verdicts of the program the bond pushed to it: ``xdp_tx`` (frames
bounced out of the slave they came in on) against ``xdp_redirect`` (XDP_TX that
``xdp_master_redirect`` turned into a redirect to another slave, chosen by
``bond_xdp_get_xmit_slave``: the per-CPU round-robin counter, the active slave, or
``bond_xmit_hash_xdp`` over ``usable_slaves``). A running legal-sequence plan is listed with
each command's status. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdptui.model.views import DeviceView, Frame
from xdptui.widgets.format import program_name
from xdptui.widgets.rates import RatesView


@dataclass(frozen=True)
class SlaveRow:
    name: str
    state: str  # up | down | no-carrier
    active: bool
    usable: bool
    tx_rate: float | None
    xdp_tx_rate: float | None
    redirect_rate: float | None
    xmit_rate: float | None  # frames other devices handed to this slave's ndo_xdp_xmit
    totals: tuple[int, int, int, int] = (0, 0, 0, 0)  # TX, XDP_TX, redirect, XMIT in so far
    steps: tuple[int, int, int, int] | None = None  # ... what the last step added


@dataclass(frozen=True)
class BondInfo:
    name: str
    state: str
    mode: str
    policy: str
    miimon: str
    program: str  # "l4lb native" or ""
    active: str
    slaves: tuple[SlaveRow, ...]


@dataclass(frozen=True)
class PlanRow:
    """A command of the running plan: ``status`` done | failed | next | pending."""

    command: str
    status: str
    reply: str = ""


@dataclass(frozen=True)
class BondView:
    bonds: tuple[BondInfo, ...]
    focus: str | None = None
    plan_title: str = ""
    plan: tuple[PlanRow, ...] = ()
    counting: bool = False  # stepping: the frames so far and this step's under each slave


SLAVE_COUNTERS = ("tx_packets", "xdp_tx", "xdp_redirect", "xdp_xmit")


def _state(dev: DeviceView) -> str:
    return "down" if not dev.up else "up" if dev.carrier else "no-carrier"


def project_bond(
    prev: Frame | None,
    frame: Frame,
    *,
    focus: str | None = None,
    plan_title: str = "",
    plan: tuple[PlanRow, ...] = (),
    rates: RatesView | None = None,
) -> BondView:
    """Every bond of ``frame`` (the focused one, if a bond or a slave of one, first); rates
    from ``rates`` (default: against ``prev``)."""
    deltas = rates if rates is not None else RatesView(prev, frame)
    rate = deltas.counter
    devices = {dev.name: dev for dev in frame.devices}

    bonds: list[BondInfo] = []
    for dev in frame.devices:
        info = dev.bond
        if info is None:
            continue
        usable = set(info.usable_slaves)
        active = info.active_slave or ""
        rows: list[SlaveRow] = []
        for name in info.slaves:
            slave = devices.get(name)
            if slave is None:
                continue
            c = dict(slave.counters)
            totals = tuple(c.get(k, 0) for k in SLAVE_COUNTERS)
            steps = tuple(deltas.step(name, k, c.get(k, 0)) or 0 for k in SLAVE_COUNTERS)
            rows.append(
                SlaveRow(
                    name=name,
                    state=_state(slave),
                    active=name == active,
                    usable=name in usable,
                    tx_rate=rate(name, "tx_packets", c.get("tx_packets", 0)),
                    xdp_tx_rate=rate(name, "xdp_tx", c.get("xdp_tx", 0)),
                    redirect_rate=rate(name, "xdp_redirect", c.get("xdp_redirect", 0)),
                    xmit_rate=rate(name, "xdp_xmit", c.get("xdp_xmit", 0)),
                    totals=(totals[0], totals[1], totals[2], totals[3]),
                    steps=None if deltas.last is None else (steps[0], steps[1], steps[2], steps[3]),
                )
            )
        bonds.append(
            BondInfo(
                name=dev.name,
                state=_state(dev),
                mode=info.mode,
                policy=info.xmit_hash_policy,
                miimon=str(info.miimon),
                program=f"{program_name(dev.xdp.program)} {dev.xdp.mode}"
                if dev.xdp is not None
                else "",
                active=active,
                slaves=tuple(rows),
            )
        )
    target = focus
    if target is not None and target in devices and devices[target].type != "bond":
        target = devices[target].master
    bonds.sort(key=lambda b: b.name != target)
    return BondView(
        bonds=tuple(bonds),
        focus=target if any(b.name == target for b in bonds) else None,
        plan_title=plan_title,
        plan=plan,
        counting=deltas.counting,
    )


def split_share(xdp_tx: float | None, redirect: float | None) -> float | None:
    """The XDP_TX share of a slave's bounced frames (the rest was redirected), 0..1."""
    a, b = xdp_tx or 0.0, redirect or 0.0
    if a + b <= 0:
        return None
    return a / (a + b)
