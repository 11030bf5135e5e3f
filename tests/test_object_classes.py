"""A real object's flow classes follow what it does, not which flow a frame is: entries it
leaves unchanged, with the same verdict, target and map adds, are one class, as they are for a
built-in program; entries whose adds differ stay apart, so a class's frames can all apply its
representative's adds (``bpf_run.apply_effects``) and the maps stay exact."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from conftest import ROOT, topo
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.sim.classes import unique_first
from xdptui.sim.engine import Simulator

EXAMPLES = ROOT / "examples" / "bpf"

FLOWS = """
name: one port, a thousand flows
cpus: 2
devices:
  eth0: {{type: nic, driver: ice, queues: 2, xdp: {xdp}}}
traffic:
  - {{name: g, to: eth0, rate: 2Mpps, proto: udp, flows: 1024,
      src_ip: 198.18.0.1-198.18.3.255, dst_ip: 10.0.0.1-10.0.0.8, dst_port: 50-57}}
"""


def classes(xdp: str) -> tuple[Simulator, int]:
    sim = Simulator(topo(FLOWS.format(xdp=xdp), str(EXAMPLES / "inline.yaml")))
    sim.run_until(10_000)
    return sim, len(sim.state.dp.classes)


def test_an_object_that_rewrites_nothing_has_the_classes_of_the_same_built_in_program():
    """drop_port.o drops UDP to port 53 and passes the rest, as the built-in ``drop_port``
    with port 53 does: 1,024 flows over 8 ports are two classes either way (drop, pass),
    not 1,024."""
    _, builtin = classes("{program: drop_port, params: {port: 53}}")
    _, obj = classes("drop_port.o")
    assert builtin == 2
    assert obj == builtin


def test_a_router_that_rewrites_each_frame_has_a_class_per_slot_not_per_flow():
    """router_stats.o decrements the TTL, rewrites the MACs, counts into slot daddr & 3 and
    calls ``bpf_redirect_map(&tx_port, slot, XDP_PASS)`` (an empty devmap here: XDP_PASS): the
    1,024 flows (8 destinations) are 4 classes, one per slot -- their map adds and keys differ
    by slot -- plus one for the frames it leaves, which eth0 never receives (a port receives
    only its sources' frames): 5, not 2,048."""
    sim, obj = classes("router_stats.o")
    assert len(sim.world.entries) == 2 * 1024
    assert obj == 4 + 1


def test_an_object_that_rewrites_every_frame_alike_has_a_class_for_its_output_not_per_flow():
    """mac_swap.o XDP_TXes every frame with its MACs swapped: 1,024 flows are one class, as
    the built-in ``xdp_tx`` makes them, plus one for the frames it leaves (the table holds
    them; each is the swap of one flow), not 1,024 + 1,024."""
    _, builtin = classes("xdp_tx")
    sim, obj = classes("mac_swap.o")
    assert builtin == 1
    assert len(sim.world.entries) == 2 * 1024
    assert obj == builtin + 1


@pytest.mark.parametrize("obj", ["drop_port.o", "count_proto.o", "router_stats.o", "mac_swap.o"])
def test_the_entries_of_a_class_have_one_verdict_one_output_and_the_same_map_adds(obj: str):
    sim, _ = classes(obj)
    dp = sim.state.dp
    ev = dp.compiled["eth0"].obj
    assert ev is not None
    of = dp.classes.of_entry
    n = len(ev.raw)
    own = np.arange(n)
    adds: list[list[tuple[int, int]]] = [
        sorted(
            zip(
                ev.effects.word[ev.effects.first[e] : ev.effects.first[e] + ev.effects.length[e]],
                ev.effects.value[ev.effects.first[e] : ev.effects.first[e] + ev.effects.length[e]],
                strict=True,
            )
        )
        for e in range(n)
    ]
    members: dict[int, list[int]] = defaultdict(list)
    for e in range(sim.world.entries.sources_end):  # the frames eth0 receives: its source's
        members[int(of[e])].append(e)
    for entries in members.values():
        rep = entries[0]
        for e in entries[1:]:
            assert ev.raw[e] == ev.raw[rep] and ev.target[e] == ev.target[rep]
            assert ev.key[e] == ev.key[rep]
            # unchanged together, or output frames that are alike (in one class)
            assert (ev.out[e] == own[e]) == (ev.out[rep] == own[rep])
            if ev.out[e] != own[e]:
                assert ev.out[e] >= 0 and ev.out[rep] >= 0
                assert of[ev.out[e]] == of[ev.out[rep]]
            assert adds[e] == adds[rep]


@pytest.mark.parametrize("xdp", ["router_stats.o", "{program: drop_port, params: {port: 53}}"])
def test_a_hash_that_merges_every_entry_still_sets_apart_what_the_columns_do(
    monkeypatch: pytest.MonkeyPatch, xdp: str
) -> None:
    """Classes are found by hashing each entry's columns; when the hash merges entries whose
    columns differ (``classes._exact`` sees it), they are found again from the columns
    themselves, read a second time (a million entries' columns are never all held at once):
    the same classes where no program rewrites frames, and where one does, classes that keep
    each rewrite's output apart -- never two entries of different classes together."""
    from xdptui.sim import classes as classes_mod

    want, n_want = classes(xdp)
    assert n_want > 1
    monkeypatch.setattr(classes_mod, "_hash", lambda h, cols: np.zeros_like(h))
    got, n_got = classes(xdp)
    a, b = want.state.dp.classes, got.state.dp.classes
    if xdp.endswith(".o"):  # finer: each class of the fallback lies within one class
        assert n_got >= n_want
        assert all(len(np.unique(a.of_entry[b.of_entry == k])) == 1 for k in range(n_got))
    else:
        assert np.array_equal(a.of_entry, b.of_entry) and np.array_equal(a.rep, b.rep)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 6), max_size=40),
    chunk=st.integers(1, 9),
)
def test_classes_numbered_a_chunk_at_a_time_are_numpys_unique(
    values: list[int], chunk: int
) -> None:
    """The flow classes' sort, done a chunk of entries at a time to bound its temporaries,
    gives every entry the distinct value and first index ``np.unique`` gives it."""
    h = np.array(values, np.uint64)
    first, inverse = unique_first(h, chunk)
    if not values:
        assert len(first) == 0 and len(inverse) == 0
        return
    _, want_first, want_inverse = np.unique(h, return_index=True, return_inverse=True)
    assert first.tolist() == want_first.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()
