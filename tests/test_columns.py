"""Per-entry storage: a column holding one value takes no memory, a source's table is its slice
of the global flow-table index, and state copies share what never changes. Memory follows what
differs between entries, not the number of entries."""

from __future__ import annotations

import numpy as np
from conftest import topo
from hypothesis import given
from hypothesis import strategies as st

from xdptui.sim.columns import compact
from xdptui.sim.engine import Simulator
from xdptui.sim.state import copy_state

TWO_PORTS = """
name: a dropping port and a passing one
cpus: 4
devices:
  eth0: {type: nic, driver: ice, queues: 4, xdp: {program: drop_port, params: {port: 80}}}
  eth1: {type: nic, driver: ice, queues: 4}
traffic:
  - {name: web, to: eth0, rate: 1Mpps, flows: 4096, dst_port: 80, src_port: 1024-5119}
  - {name: mixed, to: eth1, rate: 1Mpps, flows: 4096, dst_port: 79-80, src_port: 1024-5119}
"""


def _stored(col: np.ndarray) -> bool:
    return bool(col.strides[0])


@given(st.lists(st.integers(-3, 3), min_size=0, max_size=40))
def test_compact_keeps_every_value_and_stores_one_value_once(values):
    col = np.array(values, dtype=np.int64)
    out = compact(col.copy())
    assert np.array_equal(out, col) and not out.flags.writeable
    if len(values) > 1:
        assert _stored(out) == (len(set(values)) > 1)


def test_a_column_of_one_value_takes_no_memory_and_the_others_keep_theirs():
    sim = Simulator(topo(TWO_PORTS))
    dp = sim.state.dp
    dp.compile()
    e = sim.world.entries
    eth0, eth1 = dp.compiled["eth0"], dp.compiled["eth1"]
    # eth1 has no program: every entry goes to the stack, at one cost
    assert not any(_stored(getattr(eth1, f)) for f in ("act", "target", "err", "cost"))
    # eth0's program drops port 80 and passes 79: its verdict differs between entries
    assert _stored(eth0.act) and set(np.unique(eth0.act)) == {1, 2}  # XDP_DROP, XDP_PASS
    assert np.array_equal(eth0.act == 1, e.dst_port == 80)
    assert not _stored(eth0.target)  # nothing redirects
    # one size, no GSO: stored once; the addresses differ per entry
    assert not _stored(e.size) and not _stored(e.gso) and _stored(e.src_port)


def test_a_sources_table_is_its_slice_of_the_entries_and_copies_share_rss():
    sim = Simulator(topo(TWO_PORTS))
    w = sim.world
    for src in w.sources:
        lo = src.offset
        assert np.shares_memory(src.table.headers.src_port, w.entries.src_port)
        assert np.array_equal(
            src.table.headers.dst_port, w.entries.dst_port[lo : lo + len(src.table)]
        )
    sim.run_until(100_000)
    copy = copy_state(sim.state)
    for name in ("eth0", "eth1"):
        q = sim.world.devices[name].queue_of_entry
        assert copy.world.devices[name].queue_of_entry is q and not q.flags.writeable
