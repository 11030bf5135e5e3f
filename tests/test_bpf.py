"""xdptui.bpf without a kernel: the interpreter's semantics (the kernel's rules, written out
as values), batches against one-by-one runs, the static and run-time refusals, maps and
their dumps, the ELF loader, frame bytes and the ``prog run`` command."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from bpf_asm import alu, call, exit_, insn, jmp, ldx, mov, stx, with_packet

from xdptui.bpf import MapType, Redirect, build_frame_bytes, isa, load_object
from xdptui.bpf.frames import checksum
from xdptui.bpf.isa import decode
from xdptui.bpf.maps import BPF_EXIST, BPF_NOEXIST, BpfMap, MapDef
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.vm import run_batch
from xdptui.model.errors import Errno, KernelError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "bpf"
U64 = (1 << 64) - 1


def raw(code: bytes, section: str = "xdp") -> BpfProgram:
    attach = "xdp/devmap" if section == "xdp/devmap" else "xdp"
    return BpfProgram("t", section, decode(code), [], "GPL", attach)


def result_of(body: bytes, a: int, b: int) -> int:
    """Run ``body`` (r7 = a, r8 = b from the packet; result in r7) and read r7 back."""
    prog = raw(with_packet(24, body + stx(isa.BPF_DW, 2, 7, 16)))
    res = run_batch(prog, [struct.pack("<QQ", a, b) + bytes(16)])
    return int(struct.unpack_from("<Q", res.data[0], 16)[0])


@pytest.mark.parametrize(
    ("body", "a", "b", "want"),
    [
        (alu(isa.BPF_DIV, 7, 8), 10, 0, 0),  # division by zero gives 0
        (alu(isa.BPF_MOD, 7, 8), 10, 0, 10),  # modulo by zero leaves the dividend
        (alu(isa.BPF_MOD, 7, 8, is64=False), (1 << 40) + 10, 0, 10),  # ... zero-extended
        (alu(isa.BPF_DIV, 7, 8, is64=False), (1 << 40) + 10, 0, 0),
        (alu(isa.BPF_LSH, 7, 8), 1, 65, 2),  # shift amounts masked to 63
        (alu(isa.BPF_LSH, 7, 8, is64=False), 1, 33, 2),  # ... and to 31
        (alu(isa.BPF_ARSH, 7, 8), 1 << 63, 63, U64),
        (alu(isa.BPF_ARSH, 7, 8, is64=False), 0x80000000, 31, 0xFFFFFFFF),
        (alu(isa.BPF_ADD, 7, 8, is64=False), 0xFFFFFFFF, 1, 0),  # 32-bit results zero-extend
        (alu(isa.BPF_MOV, 7, 8, is64=False), 0, U64, 0xFFFFFFFF),
        (alu(isa.BPF_DIV, 7, 8, off=1), 1 << 63, U64, 1 << 63),  # INT_MIN / -1 wraps
        (alu(isa.BPF_MOD, 7, 8, off=1), 12345, U64, 0),  # x % -1 is 0
        (alu(isa.BPF_DIV, 7, 8, off=1), (-7) & U64, 2, (-3) & U64),  # truncates toward 0
        (alu(isa.BPF_MOD, 7, 8, off=1), (-7) & U64, 2, (-1) & U64),  # sign of the dividend
        (alu(isa.BPF_MOV, 7, 8, off=8), 0, 0x80, (-128) & U64),  # movsx
        (insn(isa.BPF_ALU | isa.BPF_END | isa.BPF_X, 7, imm=16), 0x1234, 0, 0x3412),  # be16
        (insn(isa.BPF_ALU | isa.BPF_END | isa.BPF_K, 7, imm=32), 0x1_2345_6789, 0, 0x2345_6789),
        (insn(isa.BPF_ALU64 | isa.BPF_END, 7, imm=64), 0x0102030405060708, 0, 0x0807060504030201),
        (alu(isa.BPF_NEG, 7, imm=0, is64=False), 1, 0, 0xFFFFFFFF),
    ],
)
def test_alu_follows_the_kernel_rules(body: bytes, a: int, b: int, want: int) -> None:
    assert result_of(body, a, b) == want


def test_jmp32_compares_the_low_halves_only() -> None:
    # a = 0x1_0000_0001, b = 1: equal as 32-bit values, different as 64-bit ones.
    body = mov(9, imm=0)
    body += jmp(isa.BPF_JEQ, 7, 1, src=8, is32=True) + alu(isa.BPF_OR, 9, imm=1)
    body += jmp(isa.BPF_JEQ, 7, 1, src=8) + alu(isa.BPF_OR, 9, imm=2)
    body += mov(7, 9)
    assert result_of(body, (1 << 32) + 1, 1) == 2


def test_sign_extending_load() -> None:
    body = ldx(isa.BPF_B, 7, 2, 0, signed=True)
    assert result_of(body, 0xFE, 0) == (-2) & U64


def test_unchecked_packet_read_is_refused_at_load() -> None:
    code = mov(6, 1) + ldx(isa.BPF_W, 2, 6, 0) + ldx(isa.BPF_B, 0, 2, 20) + exit_()
    with pytest.raises(KernelError) as exc:
        run_batch(raw(code), [bytes(64)])
    assert exc.value.errno == Errno.EACCES
    assert exc.value.extack == (
        "invalid access to packet, off=20 size=1, R2(id=0,off=20,r=0); "
        "R2 offset is outside of the packet (insn 2)"
    )


def test_a_check_one_byte_short_is_refused_too() -> None:
    # if (data + 20 > data_end) exit; then read the byte at offset 20: one past the range.
    code = (
        mov(6, 1)
        + ldx(isa.BPF_W, 2, 6, 0)
        + ldx(isa.BPF_W, 3, 6, 4)
        + mov(4, 2)
        + alu(isa.BPF_ADD, 4, imm=20)
        + mov(0, imm=1)
        + jmp(isa.BPF_JGT, 4, 1, src=3)
        + ldx(isa.BPF_B, 0, 2, 20)
        + exit_()
    )
    with pytest.raises(KernelError, match=r"off=20 size=1, R2\(id=0,off=20,r=20\)"):
        run_batch(raw(code), [bytes(64)])


def test_context_rules() -> None:
    write = mov(0, imm=2) + stx(isa.BPF_W, 1, 0, 12) + exit_()
    with pytest.raises(KernelError, match="invalid bpf_context access off=12 size=4"):
        run_batch(raw(write), [bytes(64)])
    egress = ldx(isa.BPF_W, 0, 1, 20) + exit_()
    with pytest.raises(KernelError, match="invalid bpf_context access off=20"):
        run_batch(raw(egress), [bytes(64)])
    res = run_batch(raw(egress, "xdp/devmap"), [bytes(64)] * 2, egress_ifindex=[7, 9])
    assert res.retval.tolist() == [7, 9]
    fields = ldx(isa.BPF_W, 0, 1, 12) + ldx(isa.BPF_W, 2, 1, 16) + alu(isa.BPF_LSH, 2, imm=8)
    fields += alu(isa.BPF_OR, 0, 2) + exit_()
    res = run_batch(raw(fields), [bytes(64)] * 2, ingress_ifindex=5, rx_queue_index=[1, 2])
    assert res.retval.tolist() == [5 | 1 << 8, 5 | 2 << 8]


def test_out_of_bounds_at_run_time_is_refused_and_rolls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from xdptui.bpf import verifier

    obj = load_object(EXAMPLES / "count_proto.o")
    prog = obj.program()
    monkeypatch.setattr(verifier, "check", lambda prog: None)
    bad = raw(mov(6, 1) + ldx(isa.BPF_W, 2, 6, 0) + ldx(isa.BPF_B, 0, 2, 100) + exit_())
    with pytest.raises(KernelError) as exc:
        run_batch(bad, [bytes(200), bytes(64)])
    assert (
        exc.value.errno == Errno.EACCES and "packet 1: invalid access to packet" in exc.value.extack
    )
    before = obj.maps["proto_stats"].items()
    run_batch(prog, [build_frame_bytes(proto=17)])
    assert obj.maps["proto_stats"].items() != before


def frames(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        out.append(
            build_frame_bytes(
                vlans=(100,) * (i % 4 == 0),
                src_ip=f"10.0.{i % 7}.{i % 250 + 1}",
                dst_ip=f"10.1.0.{i % 10}",
                proto=(17, 6, 1)[i % 3],
                dst_port=(53, 80)[i % 2],
                size=60 + (i * 13) % 900,
                ttl=(1, 64)[i % 2],
            )
        )
    return out


@pytest.mark.parametrize(
    "stem", ["count_proto", "drop_port", "fwd_devmap", "encap_ipip", "vlan_loop"]
)
def test_a_batch_equals_running_the_packets_one_by_one(stem: str) -> None:
    packets = frames(300)
    batch_obj = load_object(EXAMPLES / f"{stem}.o", ncpus=2)
    single_obj = load_object(EXAMPLES / f"{stem}.o", ncpus=2)
    for o in (batch_obj, single_obj):
        if "tx_port" in o.maps:
            o.maps["tx_port"].update(1, 3)
    batch = run_batch(batch_obj.program(), packets, cpu=1)
    singles = [run_batch(single_obj.program(), [p], cpu=1) for p in packets]
    assert batch.retval.tolist() == [int(s.retval[0]) for s in singles]
    assert batch.data == [s.data[0] for s in singles]
    assert batch.redirects == [s.redirects[0] for s in singles]
    for name, m in batch_obj.maps.items():
        assert m.items() == single_obj.maps[name].items(), name


def test_counters_stay_vectorised_and_exact() -> None:
    obj = load_object(EXAMPLES / "count_proto.o", ncpus=2)
    packets = frames(3000)
    res = run_batch(obj.program(), packets, cpu=1)
    assert res.passes == 1
    udp = [f for f in packets if f[12:14] == b"\x08\x00" and f[23] == 17]
    count, nbytes = struct.unpack_from("<QQ", obj.maps["proto_stats"].lookup(17), 16)  # CPU 1
    assert (count, nbytes) == (len(udp), sum(len(f) for f in udp)) and count > 500


def test_redirects_are_recorded() -> None:
    obj = load_object(EXAMPLES / "fwd_devmap.o")
    obj.maps["tx_port"].update(1, 7)
    pk = [build_frame_bytes(dst_ip="10.1.0.1"), build_frame_bytes(dst_ip="10.1.0.2")]
    res = run_batch(obj.program(), pk)
    assert res.retval.tolist() == [4, 2]
    assert res.redirects == [Redirect(map="tx_port", key=1, flags=0), None]
    out = res.data[0]
    assert out[:6] == pk[0][6:12] and out[6:12] == bytes([2, 0, 0, 0, 0, 0xFE])
    assert out[22] == 63 and checksum(out[14:34]) == 0  # TTL and a still valid checksum


def test_helpers_time_cpu_random_and_printk() -> None:
    code = call(5) + mov(6, 0) + call(8) + alu(isa.BPF_ADD, 0, 6) + exit_()
    assert run_batch(raw(code), [bytes(20)], time_ns=1000, cpu=3).retval.tolist() == [1003]
    rnd = raw(call(7) + mov(6, 0) + call(7) + alu(isa.BPF_XOR, 0, 6) + exit_())
    a = run_batch(rnd, [bytes(20)] * 4, seed=1).retval.tolist()
    assert a == run_batch(rnd, [bytes(20)] * 4, seed=1).retval.tolist()
    assert a != run_batch(rnd, [bytes(20)] * 4, seed=2).retval.tolist() and len(set(a)) == 4
    fmt = b"n=%d\0"
    code = insn(isa.BPF_ST | isa.BPF_MEM | isa.BPF_W, 10, 0, -8, struct.unpack("<i", fmt[:4])[0])
    code += insn(isa.BPF_ST | isa.BPF_MEM | isa.BPF_W, 10, 0, -4, fmt[4])
    code += mov(1, 10) + alu(isa.BPF_ADD, 1, imm=-8) + mov(2, imm=5) + mov(3, imm=-42)
    code += call(6) + mov(0, imm=2) + exit_()
    res = run_batch(raw(code), [bytes(20)] * 2)
    assert [(r.packet, r.kind, r.text) for r in res.records] == [
        (0, "trace_printk", "n=-42"),
        (1, "trace_printk", "n=-42"),
    ]


# -- maps -------------------------------------------------------------------------------------
def test_map_update_flags_and_errors() -> None:
    arr = BpfMap(MapDef("a", MapType.ARRAY, 4, 8, 2))
    arr.update(1, 5)
    assert arr.lookup(1) == (5).to_bytes(8, "little")
    for args, errno in (
        ((2, 1), Errno.E2BIG),
        ((0, 1, BPF_NOEXIST), Errno.EEXIST),
        ((0, 1, 3), Errno.EINVAL),
    ):
        with pytest.raises(KernelError) as exc:
            arr.update(*args)
        assert exc.value.errno == errno
    with pytest.raises(KernelError) as exc:
        arr.delete(0)
    assert exc.value.errno == Errno.EINVAL
    h = BpfMap(MapDef("h", MapType.HASH, 2, 4, 2))
    with pytest.raises(KernelError) as exc:
        h.update(1, 1, BPF_EXIST)
    assert exc.value.errno == Errno.ENOENT
    h.update(1, 1, BPF_NOEXIST)
    h.update(2, 2)
    with pytest.raises(KernelError) as exc:
        h.update(3, 3)
    assert exc.value.errno == Errno.E2BIG
    with pytest.raises(KernelError) as exc:
        h.update(1, 9, BPF_NOEXIST)
    assert exc.value.errno == Errno.EEXIST
    h.delete(1)
    with pytest.raises(KernelError) as exc:
        h.lookup(1)
    assert exc.value.errno == Errno.ENOENT
    lru = BpfMap(MapDef("l", MapType.LRU_HASH, 4, 4, 2))
    lru.update(1, 1)
    lru.update(2, 2)
    lru.lookup(1)
    lru.update(3, 3)  # full: evicts something instead of E2BIG
    assert len(lru.items()) == 2
    dev = BpfMap(MapDef("d", MapType.DEVMAP, 4, 4, 4))
    dev.update(2, 7)
    assert [k for k, _ in dev.items()] == [(2).to_bytes(4, "little")]


def test_dump_prints_what_bpftool_prints() -> None:
    """The forms were taken from bpftool 7.1 on maps created without BTF."""
    arr = BpfMap(MapDef("ta", MapType.ARRAY, 4, 8, 3))
    arr.update(1, bytes([5, 0, 0, 0, 0, 0, 0, 1]))
    assert arr.dump() == (
        "key: 00 00 00 00  value: 00 00 00 00 00 00 00 00\n"
        "key: 01 00 00 00  value: 05 00 00 00 00 00 00 01\n"
        "key: 02 00 00 00  value: 00 00 00 00 00 00 00 00\n"
        "Found 3 elements\n"
    )
    assert json.loads(arr.dump(as_json=True))[1] == {
        "key": ["0x01", "0x00", "0x00", "0x00"],
        "value": ["0x05", "0x00", "0x00", "0x00", "0x00", "0x00", "0x00", "0x01"],
    }
    pc = BpfMap(MapDef("tp", MapType.PERCPU_HASH, 20, 4, 3), ncpus=2)
    pc.update(bytes([1, 0, 0, 0] * 5), bytes([5, 0, 0, 0, 0, 0, 0, 0] * 2))
    assert pc.dump() == (
        "key:\n01 00 00 00 01 00 00 00  01 00 00 00 01 00 00 00\n01 00 00 00\n"
        "value (CPU 00): 05 00 00 00\nvalue (CPU 01): 05 00 00 00\nFound 1 element\n"
    )
    h = BpfMap(MapDef("th", MapType.HASH, 2, 24, 3))
    assert h.dump() == "Found 0 elements\n"
    h.update(1, bytes(range(1, 25)))
    assert h.dump() == (
        "key:\n01 00\nvalue:\n01 02 03 04 05 06 07 08  09 0a 0b 0c 0d 0e 0f 10\n"
        "11 12 13 14 15 16 17 18\nFound 1 element\n"
    )


# -- the loader ---------------------------------------------------------------------------------
def test_examples_load_with_their_maps_and_sections() -> None:
    obj = load_object(EXAMPLES / "drop_port.o")
    assert obj.license == "GPL"
    prog = obj.program("xdp")
    assert prog.name == "xdp_drop_port" and prog.section == "xdp"
    rodata = obj.maps[".rodata"]
    assert rodata.lookup(0) == struct.pack("<H", 53)
    egress = load_object(EXAMPLES / "egress_vlan_tag.o").program()
    assert egress.expected_attach_type == "xdp/devmap"
    tx = load_object(EXAMPLES / "fwd_devmap.o").maps["tx_port"]
    assert (tx.map_type, tx.key_size, tx.value_size, tx.max_entries) == (MapType.DEVMAP, 4, 4, 4)


def test_rodata_can_be_changed_before_the_load_and_is_frozen_after() -> None:
    """libbpf freezes .rodata when it loads the object (a skeleton sets it between open and
    load); the verifier reads its constants, so a change after the load would run paths it
    never checked: BPF_MAP_UPDATE_ELEM on a frozen map is EPERM."""
    pk = [build_frame_bytes(dst_port=53), build_frame_bytes(dst_port=80)]
    assert run_batch(load_object(EXAMPLES / "drop_port.o").program(), pk).retval.tolist() == [1, 2]
    obj = load_object(EXAMPLES / "drop_port.o")
    obj.maps[".rodata"].update(0, struct.pack("<H", 80))
    assert run_batch(obj.program(), pk).retval.tolist() == [2, 1]
    with pytest.raises(KernelError) as exc:
        obj.maps[".rodata"].update(0, struct.pack("<H", 53))
    assert exc.value.errno == Errno.EPERM


def test_not_an_elf_object_is_einval(tmp_path: Path) -> None:
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"hello")
    with pytest.raises(KernelError) as exc:
        load_object(junk)
    assert exc.value.errno == Errno.EINVAL
    with pytest.raises(KernelError) as exc:
        load_object(tmp_path / "missing.o")
    assert exc.value.errno == Errno.ENOENT


def test_unsupported_constructs_are_named() -> None:
    tail = call(12) + exit_()
    with pytest.raises(KernelError, match="tail calls"):
        run_batch(raw(tail), [bytes(20)])
    fib = call(69) + exit_()
    with pytest.raises(KernelError, match="fib_lookup"):
        run_batch(raw(fib), [bytes(20)])


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_a_prog_array_loads_and_a_tail_call_is_refused_naming_tail_calls(tmp_path: Path) -> None:
    """An object may declare a map type xdptui does not run: it loads, and only a program
    that uses it is refused, naming what is not modelled."""
    src = tmp_path / "tail.c"
    src.write_text(
        "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n"
        "struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 2);\n"
        '  __type(key, __u32); __type(value, __u32); } jt SEC(".maps");\n'
        'SEC("xdp") int t(struct xdp_md *ctx) { bpf_tail_call(ctx, &jt, 0); return 2; }\n'
        'SEC("xdp") int plain(struct xdp_md *ctx) { return 1; }\n'
        'char _l[] SEC("license") = "GPL";\n'
    )
    import os

    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    out = tmp_path / "tail.o"
    subprocess.run(
        ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-c", str(src), "-o", str(out)],
        check=True,
    )
    obj = load_object(out)
    assert run_batch(obj.program("plain"), [bytes(20)]).retval.tolist() == [1]
    with pytest.raises(KernelError) as exc:
        run_batch(obj.program("t"), [bytes(20)])
    assert exc.value.errno == Errno.EOPNOTSUPP and "tail calls" in exc.value.extack


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_a_callback_is_a_feature_not_modelled_not_a_malformed_object(tmp_path: Path) -> None:
    """libbpf loads the address of a function (bpf_loop's callback) as BPF_PSEUDO_FUNC and
    the kernel accepts it: xdptui refuses that one program with EOPNOTSUPP, naming
    callbacks, where it answered EINVAL as if the object were broken."""
    out = _clang(
        tmp_path,
        "loop",
        "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n"
        "static long cb(__u64 i, void *ctx) { *(__u64 *)ctx += i; return 0; }\n"
        'SEC("xdp") int looped(struct xdp_md *ctx) {\n'
        "  __u64 sum = 0; bpf_loop(4, cb, &sum, 0); return sum == 6 ? 2 : 1; }\n"
        'SEC("xdp") int plain(struct xdp_md *ctx) { return 1; }\n'
        'char _l[] SEC("license") = "GPL";\n',
    )
    obj = load_object(out)
    assert run_batch(obj.program("plain"), [bytes(20)]).retval.tolist() == [1]
    with pytest.raises(KernelError) as exc:
        run_batch(obj.program("looped"), [bytes(20)])
    assert exc.value.errno == Errno.EOPNOTSUPP and "callbacks" in exc.value.extack


MAP_IN_MAP = """#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct inner { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);
  __type(key, __u32); __type(value, __u64); };
struct { __uint(type, OUTER_TYPE); __uint(max_entries, 8); __type(key, __u32);
  __array(values, struct inner); } outer SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 2); __type(key, __u32);
  __array(values, int (void *)); } jumps SEC(".maps");
SEC("xdp") int plain(struct xdp_md *ctx) { return XDP_PASS; }
SEC("xdp") int nested(struct xdp_md *ctx) {
  __u32 k = 0; void *m = bpf_map_lookup_elem(&outer, &k); if (!m) return XDP_PASS;
  __u64 *v = bpf_map_lookup_elem(m, &k); if (v) *v += 1; return XDP_DROP; }
char _l[] SEC("license") = "GPL";
"""


def _clang(tmp_path: Path, name: str, text: str) -> Path:
    import os

    src = tmp_path / f"{name}.c"
    src.write_text(text)
    out = tmp_path / f"{name}.o"
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    subprocess.run(
        ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-c", str(src), "-o", str(out)],
        check=True,
    )
    return out


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
@pytest.mark.parametrize("outer", ["BPF_MAP_TYPE_ARRAY_OF_MAPS", "BPF_MAP_TYPE_HASH_OF_MAPS"])
def test_a_map_in_map_declared_with_btf_loads_and_a_nested_lookup_runs(
    tmp_path: Path, outer: str
) -> None:
    """``__array(values, struct inner)`` declares a map-in-map, ``__array(values, int (void
    *))`` a prog array (libbpf's ``parse_btf_map_def``): their values are 4-byte ids. The
    object loads as it does in the kernel, the outer map keeps the inner template, and a
    program looking into the outer map finds what user space put in its slot."""
    text = MAP_IN_MAP.replace("OUTER_TYPE", outer).replace(
        "char _l[]",
        'struct inner in0 SEC(".maps"); struct { __uint(type, BPF_MAP_TYPE_ARRAY); '
        "__uint(max_entries, 5); __type(key, __u32); __type(value, __u64); } bigger "
        'SEC(".maps");\nchar _l[]',
    )
    obj = load_object(_clang(tmp_path, "mim", text))
    m = obj.maps["outer"]
    assert (m.map_type, m.key_size, m.value_size, m.max_entries) == (
        getattr(MapType, outer.removeprefix("BPF_MAP_TYPE_")),
        4,
        4,
        8,
    )
    assert m.inner_meta is not None and m.inner_meta.max_entries == 4
    assert obj.maps["jumps"].value_size == 4
    assert run_batch(obj.program("plain"), [bytes(20)]).retval.tolist() == [2]
    nested = obj.program("nested")
    assert run_batch(nested, [bytes(20)]).retval.tolist() == [2]  # an empty slot: NULL
    m.update_inner(0, obj.maps["in0"])
    assert m.lookup(0) == obj.maps["in0"].map_id.to_bytes(4, "little")
    assert run_batch(nested, [bytes(20)] * 3).retval.tolist() == [1, 1, 1]
    assert obj.maps["in0"].lookup(0) == (3).to_bytes(8, "little")
    with pytest.raises(KernelError) as exc:  # bpf_map_fd_get_ptr: array_map_meta_equal
        m.update_inner(1, obj.maps["bigger"])
    assert exc.value.errno == Errno.EINVAL


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_values_on_a_plain_array_is_refused_as_libbpf_refuses_it(tmp_path: Path) -> None:
    text = MAP_IN_MAP.replace("OUTER_TYPE", "BPF_MAP_TYPE_ARRAY")
    with pytest.raises(KernelError) as exc:
        load_object(_clang(tmp_path, "bad", text))
    assert exc.value.errno == Errno.EINVAL
    assert "map 'outer': should be map-in-map or prog-array" in exc.value.extack


# -- frames -------------------------------------------------------------------------------------
def test_frames_have_valid_checksums_and_sizes() -> None:
    f = build_frame_bytes(proto=17, size=100, vlans=(5, 6), qinq=True)
    assert len(f) == 100
    assert f[12:14] == b"\x88\xa8" and f[16:18] == b"\x81\x00" and f[20:22] == b"\x08\x00"
    ip = f[22:42]
    assert checksum(ip) == 0  # RFC 1071: the sum over a header with its checksum is all ones
    udp = f[42:]
    pseudo = ip[12:20] + struct.pack("!xBH", 17, len(udp))
    assert checksum(pseudo + udp) == 0
    tcp6 = build_frame_bytes(src_ip="2001:db8::1", dst_ip="2001:db8::2", proto=6, size=90)
    l4 = tcp6[54:]
    pseudo6 = tcp6[22:54] + struct.pack("!IxxxB", len(l4), 6)
    assert len(tcp6) == 90 and tcp6[12:14] == b"\x86\xdd" and checksum(pseudo6 + l4) == 0
    icmp = build_frame_bytes(proto=1, size=64)
    assert checksum(icmp[34:]) == 0


# -- the command line ---------------------------------------------------------------------------
def xdptui(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "xdptui", *args], capture_output=True, input=stdin)


def test_prog_run_prints_like_bpftool(tmp_path: Path) -> None:
    pkt = tmp_path / "pkt"
    pkt.write_bytes(build_frame_bytes(proto=17, dst_port=53))
    res = xdptui("prog", "run", str(EXAMPLES / "drop_port.o"), "--data-in", str(pkt))
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode().startswith("Return value: XDP_DROP (1), ")
    assert "instructions; xdptui's interpreter took " in res.stdout.decode()
    out = tmp_path / "out"
    res = xdptui(
        "prog",
        "run",
        str(EXAMPLES / "mac_swap.o"),
        "--data-in",
        str(pkt),
        "--data-out",
        str(out),
        "--repeat",
        "3",
        "--json",
    )
    doc = json.loads(res.stdout)
    assert (doc["retval"], doc["action"], doc["data_size_out"]) == (3, "XDP_TX", 64)
    data = out.read_bytes()
    assert data[:6] == pkt.read_bytes()[6:12] and data[6:12] == pkt.read_bytes()[:6]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["prog", "run", "nope.o", "--data-in", "x"], "ENOENT"),
        (["prog", "run", str(EXAMPLES / "Makefile"), "--data-in", "x"], "EINVAL: "),
        (
            ["prog", "run", str(EXAMPLES / "drop_port.o"), "--data-in", "/nonexistent"],
            "failed to open input file",
        ),
        (
            ["prog", "run", str(EXAMPLES / "drop_port.o"), "--sec", "tc", "--data-in", "-"],
            "no program or section 'tc'",
        ),
    ],
)
def test_prog_run_errors_are_one_line(args: list[str], message: str) -> None:
    res = xdptui(*args, stdin=bytes(64))
    assert res.returncode == 2
    err = res.stderr.decode()
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bench_prog_reports_rates() -> None:
    res = xdptui("bench", "prog", str(EXAMPLES / "drop_port.o"), "--packets", "500", "--json")
    doc = json.loads(res.stdout)
    assert doc["packets"] == 500 and doc["insns_executed"] > 500 and doc["passes"] == 1


def test_any_section_name_is_an_xdp_program_but_another_types_is_skipped(tmp_path: Path) -> None:
    """iproute2 loads any section as XDP (``sec xdp_pass``, as xdp-tutorial names them);
    a section libbpf gives another program type (``kprobe/...``, ``tc``) is not XDP."""
    from bpf_elf import Obj, elf_bytes

    path = tmp_path / "s.o"
    code = {"xdp_pass": mov(0, imm=2) + exit_(), "tc": mov(0, imm=0) + exit_()}
    code["kprobe/x"] = mov(0, imm=0) + exit_()
    code["xdp_drop"] = mov(0, imm=1) + exit_()
    path.write_bytes(elf_bytes(Obj(code)))
    obj = load_object(path)
    assert sorted(obj.programs) == ["xdp_drop", "xdp_pass"]
    assert obj.program().section == "xdp_pass"  # the first, as iproute2 attaches it
    assert run_batch(obj.program("xdp_drop"), [bytes(20)]).retval.tolist() == [1]
    assert "tc program, not XDP" in obj.skipped["tc"]
    assert "kprobe program, not XDP" in obj.skipped["kprobe_x"]


def test_prog_run_refuses_a_devmap_program_as_the_kernel_does(tmp_path: Path) -> None:
    """bpf_prog_test_run_xdp: a BPF_XDP_DEVMAP (or CPUMAP) program is EINVAL."""
    pkt = tmp_path / "pkt"
    pkt.write_bytes(build_frame_bytes())
    res = xdptui("prog", "run", str(EXAMPLES / "egress_vlan_tag.o"), "--data-in", str(pkt))
    assert res.returncode == 2 and b"EINVAL" in res.stderr and b"BPF_XDP_DEVMAP" in res.stderr
