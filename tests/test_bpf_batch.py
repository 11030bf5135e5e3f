"""A batch is its packets run one by one: packed packets, the stack's memory and the order
of map accesses, held against the one-by-one rule (no kernel needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bpf_asm import alu, call, exit_, insn, jmp, ldx, mov, stx, with_packet
from bpf_elf import MapSpec, Obj, elf_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from xdptui.bpf import build_frame_bytes, isa, load_object
from xdptui.bpf import memory as mem
from xdptui.bpf.access import read_bytes, write_bytes
from xdptui.bpf.batch import Batch
from xdptui.bpf.isa import decode
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.packets import Packets
from xdptui.bpf.vm import MAX_INSNS, run_batch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "bpf"


def frame(i: int) -> bytes:
    return build_frame_bytes(
        vlans=(100,) * (i % 5 == 0),
        src_ip=f"10.0.{i % 7}.{i % 250 + 1}",
        dst_ip=f"10.1.0.{i % 10}",
        proto=(17, 6, 1)[i % 3],
        dst_port=(53, 80, 9)[i % 3],
        size=60 + (i * 13) % 900,
        ttl=(1, 64)[i % 2],
    )


def loaded(stem: str) -> BpfProgram:
    obj = load_object(EXAMPLES / f"{stem}.o", ncpus=2)
    for name in ("tx_port", "rr_ports"):
        if name in obj.maps:
            obj.maps[name].update(0, 3)
            obj.maps[name].update(1, 4)
    return obj.program()


def outcome(prog: BpfProgram, packets: list[bytes] | Packets) -> tuple[object, ...]:
    res = run_batch(prog, packets, cpu=1)
    maps = [m.items() for m in prog.maps]
    return res.retval.tolist(), res.data, res.redirects, maps


def test_packed_packets_run_as_their_bytes_and_are_left_as_they_were() -> None:
    """Programs that rewrite, grow and shrink frames (mac_swap, encap_ipip, vlan_loop) give
    the same results on packed packets as on bytes, and the caller's rows stay unchanged:
    the batch copies them on its first write."""
    frames = [frame(i) for i in range(120)]
    for stem in ("mac_swap", "encap_ipip", "vlan_loop", "drop_port"):
        packed = Packets.from_bytes(frames)
        want = outcome(loaded(stem), frames)
        assert outcome(loaded(stem), packed) == want, stem
        assert packed.to_bytes() == frames, stem
        assert outcome(loaded(stem), packed) == want, stem


@settings(max_examples=30, deadline=None)
@given(
    order=st.lists(st.integers(0, 59), min_size=1, max_size=40),
    stem=st.sampled_from(["rr_devmap", "router_stats", "count_proto", "fwd_devmap"]),
)
def test_a_stateful_batch_equals_its_packets_one_by_one(order: list[int], stem: str) -> None:
    """Each packet sees the maps as the packets before it left them (rr_devmap's next slot,
    router_stats' and count_proto's counters), however the batch's map accesses coincide."""
    frames = [frame(i) for i in order]
    batch_prog, single_prog = loaded(stem), loaded(stem)
    batch = run_batch(batch_prog, frames, cpu=1)
    singles = [run_batch(single_prog, [f], cpu=1) for f in frames]
    assert batch.retval.tolist() == [int(s.retval[0]) for s in singles]
    assert batch.redirects == [s.redirects[0] for s in singles]
    assert batch.data == [s.data[0] for s in singles]
    assert batch.counts.tolist() == [int(s.counts[0]) for s in singles]
    for mine, theirs in zip(batch_prog.maps, single_prog.maps, strict=True):
        assert mine.items() == theirs.items(), mine.name


ACCESS = st.tuples(
    st.booleans(),  # write (else read)
    st.integers(0, 2 * isa.MAX_BPF_STACK - 16),  # offset of row 0
    st.integers(1, 16),  # size
    st.booleans(),  # every row at the same offset (else row r at offset + r)
)


@settings(max_examples=60, deadline=None)
@given(accesses=st.lists(ACCESS, min_size=1, max_size=30), rows=st.integers(1, 5))
def test_the_stack_reads_back_what_was_written_at_any_offset_and_size(
    accesses: list[tuple[bool, int, int, bool]], rows: int
) -> None:
    """Each row's stack is its own bytes: a read returns what the last writes put there,
    whatever the offsets, sizes and alignment (across 8-byte words too), and a second
    frame's bytes appear after the first frame's when the call depth grows."""
    prog = BpfProgram("t", "xdp", decode(bytes(8)), [], "GPL")
    one = np.ones(rows, dtype=np.uint64)
    packets = Packets.from_bytes([bytes(64)] * rows)
    b = Batch(prog, packets, 0, one, one * 0, one * 0, 0, 0, 0, MAX_INSNS)
    b.ensure_stack(2)
    model = np.zeros((rows, 2 * isa.MAX_BPF_STACK), dtype=np.uint8)
    rng = np.random.default_rng(len(accesses))
    idx = np.arange(rows, dtype=np.int64)
    for write, start, size, same in accesses:
        off = np.full(rows, start, dtype=np.int64)
        if not same:
            off = np.minimum(off + idx, 2 * isa.MAX_BPF_STACK - size)
        if write:
            data = rng.integers(0, 256, (rows, size), dtype=np.uint8)
            write_bytes(b, mem.STACK_REGION, idx, off, data)
            for r in range(rows):
                model[r, off[r] : off[r] + size] = data[r]
        else:
            got = read_bytes(b, mem.STACK_REGION, idx, off, size)
            want = np.stack([model[r, off[r] : off[r] + size] for r in range(rows)])
            assert (got == want).all()


B = isa
LD_MAP = insn(0x18, 1, 1, 0, 0) + insn(0)  # r1 = the map its relocation names
# Per packet: the per-CPU scratch value (16 bytes) filled with the packet's first 8 bytes twice
# and read back into the packet at 0 (plus one); a packet whose first byte is odd first reads the
# scratch value's second word -- what the packet before it left -- into the packet at 8.
SCRATCH_BODY = (
    mov(9, 2)  # the packet (with_packet: r2 = data, r7 = its first 8 bytes)
    + mov(3, imm=0)
    + stx(B.BPF_W, 10, 3, -4)
    + mov(2, 10)
    + alu(B.BPF_ADD, 2, imm=-4)
    + LD_MAP  # body instruction 5
    + call(1)
    + jmp(B.BPF_JEQ, 0, 12, imm=0)
    + mov(8, 7)
    + alu(B.BPF_AND, 8, imm=1)
    + jmp(B.BPF_JEQ, 8, 2, imm=0)
    + ldx(B.BPF_DW, 5, 0, 8)
    + stx(B.BPF_DW, 9, 5, 8)
    + stx(B.BPF_DW, 0, 7, 0)
    + stx(B.BPF_DW, 0, 7, 8)
    + ldx(B.BPF_DW, 5, 0, 0)
    + alu(B.BPF_ADD, 5, imm=1)
    + stx(B.BPF_DW, 9, 5, 0)
    + mov(0, imm=2)
    + exit_()
    + mov(0, imm=1)
    + exit_()
)
SCRATCH = with_packet(16, SCRATCH_BODY)
LD_MAP_AT = (len(with_packet(16, b"")) - 16) // 8 + 5  # the head, then body instruction 5


def scratch_program(tmp: Path) -> BpfProgram:
    spec = MapSpec("scratch", 6, 4, 16, 1)  # BPF_MAP_TYPE_PERCPU_ARRAY
    path = tmp / "scratch.o"
    path.write_bytes(elf_bytes(Obj({"xdp": SCRATCH}, [spec], [("xdp", LD_MAP_AT, "scratch")])))
    return load_object(path, ncpus=2).program()


@settings(max_examples=40, deadline=None)
@given(firsts=st.lists(st.integers(0, 255), min_size=1, max_size=60))
def test_a_scratch_map_each_packet_fills_gives_each_its_own_bytes(
    firsts: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A per-CPU scratch value every packet writes before it reads it back: a batch gives each
    packet its own bytes (a copy per packet), unless a packet reads before writing -- an odd
    first byte -- what the packet before it left: then that packet sees the earlier one's bytes,
    as one by one. The map keeps what the last packet wrote."""
    tmp = tmp_path_factory.mktemp("scratch")
    frames = [bytes([b, i % 256]) + bytes(range(2, 62)) for i, b in enumerate(firsts)]
    batch_prog, single_prog = scratch_program(tmp), scratch_program(tmp)
    batch = run_batch(batch_prog, frames, cpu=1)
    singles = [run_batch(single_prog, [f], cpu=1) for f in frames]
    assert batch.retval.tolist() == [2] * len(frames)
    assert batch.data == [s.data[0] for s in singles]
    for i, out in enumerate(batch.data):  # the rule itself: its own bytes, plus one
        assert int.from_bytes(out[:8], "little") == int.from_bytes(frames[i][:8], "little") + 1
        if firsts[i] & 1 and i:
            assert out[8:16] == frames[i - 1][:8]
    (mine,), (theirs,) = batch_prog.maps, single_prog.maps
    assert mine.items() == theirs.items()
    assert mine.lookup(0)[16:32] == frames[-1][:8] * 2  # CPU 1's value: the last packet's
    if not any(b & 1 for b in firsts[1:]):
        assert batch.passes <= 2  # one pass to find the scratch map, one with its copies
