"""The command strings the app's keys and dialogs issue: the same language a user types.

Pure functions (no Textual, no engine), each tested: what ``a``, ``s``, ``d``, ``l`` and the
traffic editor send to the simulator, and which devices each action can apply to in a frame.
"""

from __future__ import annotations

from xdptui.model.views import DeviceView, Frame

MODE_KEYWORDS: dict[str, str] = {"native": "xdp", "generic": "xdpgeneric", "offload": "xdpoffload"}
"""The ``ip link`` keyword that addresses a program attached in each mode (``xdp`` picks native
where the driver has ``ndo_bpf``, so a native program is reachable with plain ``xdp``)."""


def _params(params: str) -> str:
    words = params.split()
    return "".join(f" param {word}" for word in words)


def attach_command(dev: str, program: str, params: str = "") -> str:
    """``ip link set dev DEV xdp obj PROG [param K=V ...]`` (refused with EBUSY over a program)."""
    return f"ip link set dev {dev} xdp obj {program}{_params(params)}"


def swap_command(dev: DeviceView, program: str, params: str = "") -> str:
    """``ip -force link set dev DEV <mode keyword> obj PROG``: replace in place, same mode."""
    keyword = MODE_KEYWORDS.get(dev.xdp.mode, "xdp") if dev.xdp is not None else "xdp"
    return f"ip -force link set dev {dev.name} {keyword} obj {program}{_params(params)}"


def detach_command(dev: DeviceView) -> str:
    """``ip link set dev DEV xdp off`` with the keyword of the mode the program runs in
    (``xdp off`` would not remove a generic program from a native-capable NIC)."""
    keyword = MODE_KEYWORDS.get(dev.xdp.mode, "xdp") if dev.xdp is not None else "xdp"
    return f"ip link set dev {dev.name} {keyword} off"


def link_command(dev: DeviceView) -> str:
    """Toggle the administrative state: ``ip link set dev DEV down`` if up, else ``up``."""
    return f"ip link set dev {dev.name} {'down' if dev.up else 'up'}"


def pktgen_command(
    dev: str,
    rate: str = "",
    size: str = "",
    flows: str = "",
    gso: str = "",
) -> str:
    """``pktgen DEV rate R [size S] [flows F] [gso G]``; empty fields are left out."""
    words = ["pktgen", dev]
    for key, value in (("rate", rate), ("size", size), ("flows", flows), ("gso", gso)):
        if value.strip():
            words += [key, value.strip()]
    return " ".join(words)


def reader_command(tap: str, rate: str) -> str:
    """``reader TAP rate R`` (how fast userspace reads the tap), or ``reader TAP stop``."""
    rate = rate.strip()
    return f"reader {tap} stop" if rate in ("stop", "none", "") else f"reader {tap} rate {rate}"


def own_program(dev: DeviceView) -> bool:
    """A program attached to the device itself (not one its bond pushed down)."""
    return dev.xdp is not None and dev.xdp.inherited_from is None


def attachable(frame: Frame) -> tuple[DeviceView, ...]:
    """Devices without any program (their own or one pushed down by their bond)."""
    return tuple(dev for dev in frame.devices if dev.xdp is None)


def with_program(frame: Frame) -> tuple[DeviceView, ...]:
    """Devices with a program of their own (what swap and detach act on)."""
    return tuple(dev for dev in frame.devices if own_program(dev))
