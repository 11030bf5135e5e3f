"""The differential corpus against the machine's kernel (``tests/corpus_oracle.py``): public
XDP programs loaded by the kernel and by xdptui, the same frames run through
``BPF_PROG_TEST_RUN`` and xdptui's interpreter.

Held: xdptui never loads a program the kernel refuses; where both load, every run gives the
same return code and bytes and every map ends equal; and a program the kernel loads is
refused by xdptui only for a feature xdptui says it does not model (EOPNOTSUPP: AF_XDP, cpumap
redirects, the FIB, kfuncs). The objects are built once per content and
cached in the temporary directory, so a second session starts at once.

Skips with the reason where the machine cannot (not root, no BPF, no clang, no libbpf).
"""

from __future__ import annotations

import bpf_kernel_oracle as kern
import corpus_oracle
import pytest

WHY_NOT = corpus_oracle.why_not()
pytestmark = [
    pytest.mark.skipif(WHY_NOT is not None, reason=f"corpus oracle: {WHY_NOT}"),
    pytest.mark.xdist_group("corpus"),  # one worker builds the corpus (module fixture), once
]


@pytest.fixture(scope="module")
def outcomes() -> list[corpus_oracle.Outcome]:
    return corpus_oracle.run_corpus(frames=100)


def test_every_source_builds(outcomes: list[corpus_oracle.Outcome]) -> None:
    assert [o.obj for o in outcomes if o.section == "?"] == []


def test_no_false_accepts(outcomes: list[corpus_oracle.Outcome]) -> None:
    accepted = [o for o in outcomes if o.xdptui_ok and not o.kernel_ok]
    if kern.helper_refused(kern.BPF_FUNC_XDP_ADJUST_META):  # (a kernel without the helper)
        accepted = [o for o in accepted if "bpf_xdp_adjust_meta" not in o.kernel_why]
    false = [f"{o.obj}:{o.name}: {o.kernel_why}" for o in accepted]
    assert false == []
    # The corpus holds programs the kernel refuses (the tutorial's xdp_prog_fail*.c): the
    # check above has something to hold.
    assert any(not o.kernel_ok and o.section != "?" for o in outcomes)


def test_every_packet_run_agrees_and_maps_end_equal(
    outcomes: list[corpus_oracle.Outcome],
) -> None:
    both = [o for o in outcomes if o.kernel_ok and o.xdptui_ok]
    assert len(both) >= 50
    assert sum(o.runs for o in both) >= 40 * 100  # most programs' frames were compared
    differ = [f"{o.obj}:{o.name}: {o.first_difference}" for o in both if o.agree != o.runs]
    assert differ == []
    assert [f"{o.obj}:{o.name}: {o.maps_differ}" for o in both if o.maps_differ] == []


def test_what_xdptui_refuses_is_what_it_does_not_model(
    outcomes: list[corpus_oracle.Outcome],
) -> None:
    refused = [o for o in outcomes if o.kernel_ok and not o.xdptui_ok]
    unexplained = [
        f"{o.obj}:{o.name}: {o.xdptui_why}"
        for o in refused
        if not o.xdptui_why.endswith("(EOPNOTSUPP)")
    ]
    assert unexplained == []
