"""Per-entry storage: a column holding one value takes no memory, a source's table is its slice
of the global flow-table index, and state copies share what never changes. Memory follows what
differs between entries, not the number of entries."""

from __future__ import annotations

import numpy as np
from conftest import topo
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.sim.columns import compact, each, filled, holds, narrow, values
from xdptui.sim.engine import Simulator
from xdptui.sim.hashing import rss_queue
from xdptui.sim.state import copy_state

TWO_PORTS = """
name: a dropping port and a passing one
cpus: 4
devices:
  eth0: {type: nic, driver: ice, queues: 4, xdp: {program: drop_port, params: {port: 80}}}
  eth1: {type: nic, driver: ice, queues: 4}
traffic:
  - {name: mixed, to: eth0, rate: 1Mpps, flows: 4096, dst_port: 79-80, src_port: 1024-5119}
  - {name: web, to: eth1, rate: 1Mpps, flows: 4096, dst_port: 80, src_port: 1024-5119}
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
    # eth0's program drops port 80 and passes 79: its verdict differs between entries, a
    # byte each (and the raw verdict is the same column: every verdict is valid)
    assert _stored(eth0.act) and set(np.unique(eth0.act)) == {1, 2}  # XDP_DROP, XDP_PASS
    assert eth0.act.itemsize == 1 and eth0.raw is eth0.act
    mixed = sim.world.sources[0]
    mine = slice(mixed.offset, mixed.offset + len(mixed.table))
    assert np.array_equal(eth0.act[mine] == 1, e.dst_port[mine] == 80)
    assert not _stored(eth0.target)  # nothing redirects
    # one size, no GSO: stored once; the addresses differ per entry
    assert not _stored(e.size) and not _stored(e.gso) and _stored(e.src_port)


def test_a_port_keeps_its_path_only_for_the_frames_its_wire_brings():
    """A port receives its own sources' frames and nothing else (no path ends in a NIC's RX
    queues): what its program would do with another source's entries is never read, so a
    verdict that is one value on its own entries is stored once. eth1 drops port 80 and
    passes 79; it receives only ``web`` (port 80)."""
    drop_80 = "xdp: {program: drop_port, params: {port: 80}}"
    sim = Simulator(topo(TWO_PORTS.replace("queues: 4}", f"queues: 4, {drop_80}}}")))
    dp, w = sim.state.dp, sim.world
    dp.compile()
    e, eth1 = w.entries, dp.compiled["eth1"]
    web = w.sources[1]
    assert web.spec.to == "eth1" and w.sources[0].spec.to == "eth0"
    assert not _stored(eth1.act) and not _stored(eth1.cost)
    mine = slice(web.offset, web.offset + len(web.table))
    assert np.array_equal(eth1.act[mine], np.where(e.dst_port[mine] == 80, 1, 2))
    sim.run_until(2_000_000)
    c = dict(sim.frame().device("eth1").counters)
    assert c["xdp_drop"] == c["rx_packets"] > 0 and c.get("xdp_pass", 0) == 0


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


@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=60),
    st.integers(0, 2),
    st.lists(st.integers(0, 200), min_size=1, max_size=8),
)
def test_one_label_counts_and_finds_what_the_full_grouping_does(queues, label, ns):
    """A source whose entries share one class is grouped by queue without per-entry arrays;
    every count and every next element equal the full (queue, label) grouping's."""
    from xdptui.sim.layout import Grouped, OneLabel, _layout

    n_labels = 3
    entry = np.arange(len(queues), dtype=np.int64)
    lay = _layout(0, entry, np.array(queues, np.int16), 4, np.zeros(len(entry), np.int64))
    labels = np.full(len(entry), label, np.int64)
    fast = lay.by_queue(labels, n_labels)
    assert isinstance(fast, OneLabel)
    span = max(int(lay.per_queue.max(initial=1)), 1)
    group = lay.queue.astype(np.int64) * n_labels + labels
    full = Grouped(group, lay.rank().astype(np.int64), lay.nq * n_labels, span)
    g = np.arange(lay.nq * n_labels, dtype=np.int64)
    assert np.array_equal(fast.size, full.size)
    for n in ns:
        period = np.maximum(lay.per_queue[g // n_labels], 1)
        m = np.full(len(g), n)
        assert np.array_equal(fast.count(g, m, period), full.count(g, m, period))
        nonempty = g[full.size[g] > 0]
        p = np.full(len(nonempty), n % span)
        assert np.array_equal(fast.next_at(nonempty, p), full.next_at(nonempty, p))


@given(st.lists(st.integers(-300, 300), min_size=0, max_size=40))
def test_narrow_keeps_every_value_in_a_byte_when_they_fit(values):
    col = np.array(values, dtype=np.int64)
    out = narrow(col.copy())
    assert np.array_equal(out, col)
    fits = all(-128 <= v <= 127 for v in values)
    assert (out.itemsize == 1) == (fits and len(values) > 0)


def test_a_sources_layout_reads_the_devices_rss_column():
    """No per-entry copy of a source's entries or queues: the layout's queues are a view of
    the device's RSS column, and queue q's sequence is the source's entries RSS sends to q,
    in table order."""
    sim = Simulator(topo(TWO_PORTS))
    dp, w = sim.state.dp, sim.world
    dp.compile()
    for src in w.sources:
        dev = w.devices[src.spec.to]
        lay = dp.layouts.get(w, src, dev, dp.classes.of_entry)
        assert lay.listed is None and np.shares_memory(lay.queue, dev.queue_of_entry)
        # the port keeps RSS's queue for its own source's entries only (filter.reached)
        assert len(dev.queue_of_entry) == len(src.table) and dev.queue_lo == src.offset
        entries = np.arange(src.offset, src.offset + len(src.table))
        for q in range(len(dev.rxq)):
            want = entries[rss_queue(w.entries.rss_hash[entries], dev.reta) == q]
            assert np.array_equal(lay.sequence(q), want)


@given(st.lists(st.integers(-3, 3), min_size=2, max_size=40), st.integers(-3, 3))
def test_values_holds_and_each_read_a_column_as_numpy_does(entries, v):
    """Read a stored column or a column of one value (stored once) and get what NumPy gets
    from the full column; a column of one value gives one value, stored once."""
    stored = np.array(entries, dtype=np.int64)
    one = filled(len(entries), entries[0], np.int64)
    for col in (stored, one):
        full = np.array(col)  # every entry written out
        assert np.array_equal(values(col), np.unique(full))
        assert holds(col, v) == bool((full == v).any())
        both = each(lambda a, b: (a == v) & (b >= 0), col, col)
        assert np.array_equal(both, (full == v) & (full >= 0))
    assert not _stored(each(lambda a: a * 2, one)) and not _stored(values(one))


REDIRECTS = """
name: one redirect target, and a program that picks per entry
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2,
         xdp: {program: redirect_map, params: {map: fwd, key: 0}}}
  eth1: {type: nic, driver: ice, queues: 2, xdp: weird.py:redirect_odd_ports}
  eth2: {type: nic, driver: ice, queues: 2, xdp: xdp_pass}
maps:
  fwd: {type: devmap, max_entries: 4, entries: {0: eth2}}
traffic:
  - {name: a, to: eth0, rate: 1Mpps, flows: 64, src_port: 1024-1087}
  - {name: b, to: eth1, rate: 1Mpps, flows: 64, src_port: 1024-1087}
"""


def test_what_a_redirect_records_is_stored_once_when_every_entry_has_it():
    """``bpf_redirect_map`` to one key from every entry: the target, key and errno are one
    value each, stored once. A program that redirects some entries and drops the others (by
    changing the array ``ctx.redirect`` gave it) keeps a verdict and a target per entry."""
    sim = Simulator(topo(REDIRECTS), trust=True)
    dp, w = sim.state.dp, sim.world
    dp.compile()
    eth0, eth1 = dp.compiled["eth0"], dp.compiled["eth1"]
    eth2 = w.devices["eth2"].ifindex
    assert int(eth0.target[0]) == eth2 and int(eth0.key[0]) == 0 and int(eth0.err[0]) == 0
    assert not any(_stored(getattr(eth0, f)) for f in ("act", "target", "key", "err", "cost"))
    b = w.sources[1]
    mine = slice(b.offset, b.offset + len(b.table))  # the frames eth1's wire brings
    odd = w.entries.src_port[mine] % 2 == 1
    assert np.array_equal(eth1.act[mine], np.where(odd, 4, 1))  # XDP_REDIRECT, XDP_DROP
    assert np.array_equal(eth1.target[mine], np.where(odd, eth2, -1)) and _stored(eth1.target)
    sim.run_until(1_000_000)
    c = {d.name: dict(d.counters) for d in sim.frame().devices}
    assert c["eth1"]["xdp_drop"] > 0 and c["eth1"]["xdp_redirect"] > 0
    assert abs(c["eth1"]["xdp_drop"] - c["eth1"]["xdp_redirect"]) <= 2  # flows alternate


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=40), st.integers(1, 6))
def test_a_grouping_by_table_position_counts_and_finds_without_its_keys(groups, n_groups):
    """A table's grouping searches each group's slice of its order in place; it counts and
    finds what a direct count over the positions gives (the element of a group first at or
    after a position, wrapping to the group's first)."""
    from xdptui.sim.layout import Grouped

    group = np.array(groups, np.int64) % n_groups
    L = len(group)
    lean = Grouped(group, None, n_groups, L)
    g, p = np.meshgrid(np.arange(n_groups), np.arange(L + 1), indexing="ij")
    want = np.array(
        [[int(np.sum((group == gi) & (np.arange(L) < pi))) for pi in range(L + 1)]
         for gi in range(n_groups)]
    ).reshape(n_groups, L + 1)  # fmt: skip
    assert lean.key is None
    assert lean.below(g, p).tolist() == want.tolist()
    for gi in range(n_groups):
        mine = np.flatnonzero(group == gi)
        assert lean.positions(gi).tolist() == mine.tolist()
        if len(mine):
            ps = np.arange(L + 1)
            found = lean.next_at(np.full(len(ps), gi), ps)
            after = [next((e for e in mine if e >= x), mine[0]) for x in ps]
            assert found.tolist() == after
