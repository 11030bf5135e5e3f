"""Property tests: fuzzed command lines on every shipped topology never raise, and a refused
command changes nothing.

The lines are drawn from the command language's own words (``ip``, ``bpftool``, ``ethtool``,
``pktgen``, ``reader``, their keywords and options), the topology's device, map and source
names, and values a careless or hostile user might type (negative, huge, unit-less, wrong
unit). The fingerprint of the engine is everything a later step or a report reads: the
report without its event list, the host (devices, attachments, queues, maps, sources) and the
pending timers. The runs are deterministic; raise ``FUZZ_EXAMPLES`` to explore longer.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

TOPOLOGIES = sorted((Path(__file__).resolve().parent.parent / "topologies").glob("*.yaml"))
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

HEADS = [
    "ip link set dev", "ip -force link set dev", "ip link show", "ip -s link show",
    "ip link set", "bpftool map update name", "bpftool map delete name", "bpftool map dump name",
    "bpftool prog show", "bpftool net", "ethtool -L", "ethtool -G", "ethtool -S", "ethtool -l",
    "pktgen", "reader", "help", "ip link add", "ip link del",
]  # fmt: skip
WORDS = [
    "up", "down", "xdp", "xdpdrv", "xdpgeneric", "xdpoffload", "obj", "off", "sec", "param",
    "master", "nomaster", "type", "bond", "mode", "miimon", "xmit_hash_policy", "mtu", "carrier",
    "key", "value", "egress", "combined", "rx", "tx", "rate", "flows", "size", "gso", "stop",
    "start", "xdp_tx", "xdp_drop", "xdp_pass", "xdp_aborted", "redirect", "redirect_map",
    "l4lb", "drop_port", "dev=eth1", "map=tx_ports", "key=0", "port=80", "802.3ad",
    "active-backup", "balance-rr", "balance-xor", "layer2", "layer3+4", "encap3+4",
    "0", "1", "3", "16", "64", "65", "256", "1500", "3047", "9000", "65536", "1048577", "-1",
    "2147483648", "99999999999999999999", "1.5", "1Mpps", "10Gpps", "11Gpps", "0pps", "1Gbps",
    "5ms", "5", "nan", "inf", "x.o", "missing.py:f", "/etc/passwd", "..", "", "\"", "'",
]  # fmt: skip

ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def names(path: Path) -> list[str]:
    t = load_topology(path)
    out = [d.name for d in t.devices] + [m.name for m in t.maps]
    return out + [s.name for s in t.traffic] + ["nosuch0"]


def fingerprint(sim: Simulator) -> tuple[str, str, str]:
    report = sim.report()
    report.pop("events")
    st = sim.state
    host = ADDRESS.sub("", repr(st.world))  # objects without a repr print their address
    return json.dumps(report, sort_keys=True), host, repr(sorted(st.timers.heap))


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_refused_commands_change_nothing(path: Path) -> None:
    sim = Simulator(load_topology(path))
    sim.run_until(1_500_000)
    sim.submit("ip link show")  # the data path committed to now: only commands change it now
    pool = names(path)

    @FUZZ
    @given(
        head=st.sampled_from(HEADS),
        args=st.lists(st.sampled_from(WORDS + pool), max_size=8),
    )
    def fuzz(head: str, args: list[str]) -> None:
        line = " ".join([head, *args])
        before = fingerprint(sim)
        result = sim.submit(line)  # raising fails the test
        if not result.ok:
            assert fingerprint(sim) == before, line
            assert result.reply.strip(), line

    fuzz()
    sim.run_until(sim.now_ns + 1_000_000)  # and the engine runs on afterwards


def test_a_command_refused_halfway_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's guarantee, whatever a command's own checks: a refusal after part of the
    command was applied (here: the MTU set, then EINVAL) restores the state from before it."""
    from xdptui.model.errors import Errno, KernelError

    sim = Simulator(load_topology(TOPOLOGIES[0]))
    sim.run_until(1_000_000)
    sim.submit("ip link show")
    before = fingerprint(sim)
    dev = next(iter(sim.state.world.devices.values()))

    def halfway(command: object) -> str:
        sim.state.world.devices[dev.name].mtu = 1234
        sim.state.world.touch()
        raise KernelError(Errno.EINVAL, "refused after a change")

    monkeypatch.setattr(sim.control, "apply", halfway)
    result = sim.submit(f"ip link set dev {dev.name} mtu 1234")
    assert not result.ok and result.errno == "EINVAL"
    assert fingerprint(sim) == before
    assert sim.state.world.devices[dev.name].mtu != 1234
