"""A copy of the state (a checkpoint, a refused command's rollback) with a real program
attached: the per-entry columns compiled from the program are shared, the program's maps are
the copy's own."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT, topo

from xdptui.sim.engine import Simulator
from xdptui.sim.state import copy_state

COUNT = """
name: a per-CPU counter
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2, xdp: count_proto.o}
traffic:
  - {name: g, to: eth0, rate: 1Mpps, flows: 64, src_port: 1000-1063}
"""


def test_a_copy_shares_the_compiled_columns_and_owns_the_programs_maps():
    sim = Simulator(topo(COUNT, str(ROOT / "examples" / "bpf" / "inline.yaml")))
    sim.run_until(200_000)
    st = sim.state
    c = st.dp.compiled["eth0"]
    copy = copy_state(st)
    cc = copy.dp.compiled["eth0"]
    assert cc is not c and c.obj is not None and cc.obj is not None
    assert np.shares_memory(cc.act, c.act) and np.shares_memory(cc.obj.raw, c.obj.raw)
    # the copy's compiled program is the copy's attached program, maps and all
    prog = copy.world.devices["eth0"].prog
    assert prog is not None and cc.obj.prog is prog.prog
    maps, copied = c.obj.obj.maps, cc.obj.obj.maps
    assert all(a is not b for a, b in zip(maps, copied, strict=True))
    before = bytes(copied[0].arena)
    sim.run_until(400_000)  # the original counts on; the copy's map stays as it was
    assert bytes(copied[0].arena) == before != bytes(maps[0].arena)


def test_a_copy_keeps_its_rings_queues_and_cpus_as_they_were():
    """Queues, rings and CPUs are rows of tables whose columns a copy copies (``Table``),
    rings share their records until one side writes (``Fifo.cow``), and flow rows are shared
    values: a checkpoint taken mid-traffic in exact mode still holds every ring's
    descriptors, every queue's counters and every CPU's poll list as they were, however far
    the state it was taken from runs on."""
    from conftest import TOPOLOGIES

    from xdptui.topology_io import load_topology

    def fields(st):  # type: ignore[no-untyped-def]
        w, ex = st.world, st.exact
        rx = [
            (q.rx_packets, q.polls, q.state, len(q.fifo), q.fifo.column("entry").tolist(),
             q.fifo.column("t").tolist())
            for d in w.devices.values() for q in d.rxq
        ]  # fmt: skip
        tx = [
            (r.sent, r.dropped, len(r.fifo), r.fifo.column("entry").tolist())
            for d in w.devices.values() for r in getattr(d, "tx", [])
        ]  # fmt: skip
        cpus = [(c.busy_until, list(c.poll_list), c.run_at) for c in ex.cpus]
        return rx, tx, cpus

    sim = Simulator(load_topology(TOPOLOGIES / "dual_port.yaml"), exact=True)
    sim.run_until(300_000)
    at_copy = fields(sim.state)
    assert any(r[3] for r in at_copy[0]) or any(t[2] for t in at_copy[1])  # mid-traffic
    copied = copy_state(sim.state)
    sim.run_until(600_000)
    assert fields(copied) == at_copy
    assert fields(sim.state) != at_copy


def _report_at(sim: Simulator, t: int) -> str:
    import json

    sim.run_until(t)
    return json.dumps(sim.report(), sort_keys=True)


@pytest.mark.parametrize("exact", [False, True], ids=["fast", "exact"])
def test_a_copy_runs_on_as_the_state_it_was_taken_from(exact: bool) -> None:
    """A copy taken mid-traffic (rings and NAPI's runs holding frames) and the state it was
    taken from, each run on to the same time, in either order, report the same: nothing the
    copy shares until written (FIFOs, NAPI's ring of runs) leaks from one to the other."""
    from conftest import TOPOLOGIES

    from xdptui.topology_io import load_topology

    sim = Simulator(load_topology(TOPOLOGIES / "line_rate.yaml"), exact=exact)
    sim.run_until(400_000)
    held = sum(len(q.fifo) if exact else q.held.total for d in sim.world.devices.values()
               for q in d.rxq)  # fmt: skip
    assert held > 0  # frames waiting in rings when the copy is taken
    first = sim.fork()
    second = sim.fork()
    a = _report_at(first, 900_000)  # a copy runs first, then the original, then a copy
    b = _report_at(sim, 900_000)
    c = _report_at(second, 900_000)
    assert a == b == c
