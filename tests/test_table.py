"""State as columns (``xdptui.sim.table``): a copy of a table is a state of its own, and a
FIFO's copy on write keeps each side's records whichever side writes first."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from xdptui.sim.dev.rings import RX_COLUMNS, Fifo, RxQueue, rx_queue_table, tx_ring_table


def test_a_copied_table_has_its_own_rows_and_maps_every_reference_to_them():
    rxq = rx_queue_table(512, [0, 1, 0], 0, 64, 10)
    holder = {"queue": rxq[1], "table": rxq}  # something else that refers to a row
    rxq[1].polls = 7
    got = copy.deepcopy(holder)
    new = got["table"]
    assert got["queue"] is new[1] and new[1] is not rxq[1]
    assert [q.index for q in new] == [0, 1, 2] and [q.irq_cpu for q in new] == [0, 1, 0]
    new[1].polls += 1
    rxq[2].rx_packets = 5
    assert (rxq[1].polls, new[1].polls) == (7, 8)
    assert (rxq[2].rx_packets, new[2].rx_packets) == (5, 0)
    assert new.column(RxQueue.polls) == [0, 8, 0]


def test_a_ring_that_outlives_a_reshape_keeps_its_identity_and_counts():
    """``configure_xdp_rings``' stack queue: adopted by the new table as its last row."""
    from xdptui.sim.dev.rings import TxRing
    from xdptui.sim.table import Table

    old = tx_ring_table(256, 2)
    stack = old[1]
    stack.sent = 42
    new = Table.of(TxRing, [{"index": r, "size": 256} for r in range(4)])
    new.adopt(3, stack)
    assert new[3] is stack and stack.sent == 42 and new.column(TxRing.sent) == [0, 0, 0, 42]


records = st.lists(st.integers(0, 40), min_size=1, max_size=8)  # sizes of pushes, pops


@given(records, records, st.booleans(), st.integers(0, 30))
def test_a_fifo_and_its_copy_keep_their_own_records_whoever_writes(
    pushes_a: list[int], pushes_b: list[int], copy_first: bool, popped: int
) -> None:
    """Against two lists of records played the same way."""
    fifo = Fifo(RX_COLUMNS)
    model: list[int] = []
    n = 0
    for k in pushes_a[:2]:
        vals = np.arange(n, n + k, dtype=np.int64)
        n += k
        fifo.push({c: vals for c in RX_COLUMNS})
        model += vals.tolist()
    fifo.pop(popped)
    model = model[popped:]
    other = fifo.cow()
    other_model = list(model)
    sides = [(fifo, model, pushes_a), (other, other_model, pushes_b)]
    if not copy_first:
        sides.reverse()
    for f, m, pushes in sides:
        for k in pushes:
            vals = np.arange(n, n + k, dtype=np.int64)
            n += k
            f.push({c: vals for c in RX_COLUMNS})
            m += vals.tolist()
            got = f.pop(k // 2)["entry"].tolist()
            assert got == m[: k // 2]
            del m[: k // 2]
    for f, m, _ in sides:
        assert f.column("entry").tolist() == m == f.column("t").tolist()


def test_a_bulk_queue_first_used_after_a_copy_is_the_copy_s_alone():
    """Bulk queues (per CPU, from, to) are rows added at their first use
    (``Tracepoints.bq``): a copy and its original each add and count their own."""
    from xdptui.sim.tally import Tracepoints

    tp = Tracepoints()
    tp.bq(0, "eth0", "eth1").frames = 3
    other = copy.deepcopy(tp)
    other.bq(1, "eth0", "eth1").frames = 5
    other.bq(0, "eth0", "eth1").frames += 1
    tp.bq(2, "eth1", "eth0").flushes = 7
    assert [(k, q.frames, q.flushes) for k, q in tp.bulk_queues()] == [
        ((0, "eth0", "eth1"), 3, 0),
        ((2, "eth1", "eth0"), 0, 7),
    ]
    assert [(k, q.frames) for k, q in other.bulk_queues()] == [
        ((0, "eth0", "eth1"), 4),
        ((1, "eth0", "eth1"), 5),
    ]
    assert other.bulk_queue(2, "eth1", "eth0") is None
