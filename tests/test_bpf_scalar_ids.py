"""Linked scalars as the kernel's verifier keeps them (programs in ``tests/bpf_linked.py``):
a copy of a scalar made by ``mov``, by a spill to the stack or by a fill from it shares the
source's id, and what a branch later proves of one copy holds for every other
(``sync_linked_regs``), also across a constant added to one copy. The kernel loads every
program of ``LINKED_PROGRAMS``, ``RANGE_AFTER_SPILL`` and ``DELTA_LINKED`` and refuses the
others with the messages asserted here (``tests/kernel/test_verifier_kernel.py`` runs them
all through ``BPF_PROG_LOAD``)."""

from __future__ import annotations

import pytest
from bpf_linked import (
    DELTA_LINKED,
    DELTA_UNLINKED,
    LINKED_PROGRAMS,
    NARROWING_FILL,
    RANGE_AFTER_SPILL,
    WIDE_32_BIT_MOVE,
)

from xdptui.bpf.isa import decode
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.verifier import check
from xdptui.model.errors import Errno, KernelError


def verify(code: bytes) -> None:
    check(BpfProgram("t", "xdp", decode(code), [], "GPL"))


@pytest.mark.parametrize("name", sorted(LINKED_PROGRAMS))
def test_a_copy_of_a_scalar_stays_linked_to_it(name: str) -> None:
    """check_stack_write_fixed_off / check_stack_read_fixed_off / check_alu_op (BPF_MOV):
    ``assign_scalar_id_before_mov`` gives the source an id the copy shares."""
    verify(LINKED_PROGRAMS[name])


def test_what_a_branch_proves_after_a_spill_reaches_the_stack_copy() -> None:
    """sync_linked_regs covers spilled registers, not only registers."""
    verify(RANGE_AFTER_SPILL)


def test_a_narrowing_fill_is_not_linked() -> None:
    """check_stack_read_fixed_off breaks the link when the fill drops bits of the value
    (``get_reg_width(reg) > size * 8``)."""
    with pytest.raises(KernelError) as exc:
        verify(NARROWING_FILL)
    assert exc.value.errno == Errno.EACCES
    assert exc.value.extack.startswith("dereference of modified ctx ptr R6 off=1 disallowed")


def test_a_32_bit_move_of_a_wider_value_is_not_linked() -> None:
    """check_alu_op: ``w1 = w0`` of a value wider than 32 bits clears the copy's id."""
    with pytest.raises(KernelError) as exc:
        verify(WIDE_32_BIT_MOVE)
    assert exc.value.errno == Errno.EACCES
    assert exc.value.extack.startswith("R9 !read_ok (insn ")


@pytest.mark.parametrize("name", sorted(DELTA_LINKED))
def test_a_constant_added_to_a_copy_keeps_the_link_with_that_delta(name: str) -> None:
    """adjust_reg_min_max_vals: ``rX += K`` / ``rX -= K`` (64- or 32-bit) on a linked scalar
    records K (``BPF_ADD_CONST64``/``32``); sync_linked_regs moves the proven range by the
    difference of the deltas."""
    verify(DELTA_LINKED[name])


@pytest.mark.parametrize("name", sorted(DELTA_UNLINKED))
def test_where_the_kernel_keeps_no_delta_nothing_is_carried_over(name: str) -> None:
    """adjust_reg_min_max_vals clears the id for a second delta or a constant outside s32;
    sync_linked_regs skips a 32-bit delta against a 64-bit one; a spill gives a register
    with a delta a new id (assign_scalar_id_before_mov); regsafe does not prune a state
    whose delta differs from the one explored."""
    with pytest.raises(KernelError) as exc:
        verify(DELTA_UNLINKED[name])
    assert exc.value.errno == Errno.EACCES
    assert exc.value.extack.startswith("R9 !read_ok (insn ")
