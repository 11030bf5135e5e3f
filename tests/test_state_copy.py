"""A copy of the state (a checkpoint, a refused command's rollback) with a real program
attached: the per-entry columns compiled from the program are shared, the program's maps are
the copy's own."""

from __future__ import annotations

import numpy as np
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
