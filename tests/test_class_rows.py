"""``napi_tables.class_rows_many``: each instance's frames per flow class as rows of the
classes' representative entries, its total known without a sum."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from xdptui.sim.napi_tables import class_rows_many

counts = st.integers(1, 6).flatmap(
    lambda c: arrays(np.int64, st.tuples(st.integers(0, 5), st.just(c)), elements=st.integers(0, 3))
)


@given(counts)
def test_each_instance_s_rows_are_its_nonzero_classes_and_their_total(m: np.ndarray) -> None:
    rep = np.arange(100, 100 + m.shape[1], dtype=np.int64)  # class c's entry: 100 + c
    rows = class_rows_many(m, rep)
    assert len(rows) == len(m)
    for r, row in zip(rows, m, strict=True):
        classes = [c for c in range(len(row)) if row[c]]
        assert r.entry.tolist() == [100 + c for c in classes]
        assert r.count.tolist() == [int(row[c]) for c in classes]
        assert r.total == sum(int(x) for x in row) and not r.ordered
