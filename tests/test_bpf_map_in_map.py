"""Map-in-map (``BPF_MAP_TYPE_ARRAY_OF_MAPS`` / ``HASH_OF_MAPS``) as the kernel runs it: the
verifier's rules for a lookup in an outer map (``check_helper_call``,
``mark_ptr_not_null_reg``, ``check_map_func_compatibility``, ``check_ptr_to_map_access``),
the inner template (``bpf_map_meta_alloc``, ``bpf_map_meta_equal``), libbpf's initial slots
(``init_map_in_map_slots``), and the interpreter following the inner map. The refusals'
messages are Linux 6.18's (see ``tests/kernel/test_map_in_map_kernel.py`` for the run
against the machine's kernel)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from xdptui.bpf import load_object, run_batch
from xdptui.bpf.frames import build_frame_bytes
from xdptui.bpf.maps import BPF_F_INNER_MAP, BpfMap, MapDef, MapType, meta_equal
from xdptui.bpf.verifier import check
from xdptui.model.errors import Errno, KernelError

PROGS = Path(__file__).resolve().parent / "bpf_progs"
needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")

HEAD = """#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct inner { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);
  __type(key, __u32); __type(value, __u64); };
struct { __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS); __uint(max_entries, 8); __type(key, __u32);
  __array(values, struct inner); } outer SEC(".maps");
char _l[] SEC("license") = "GPL";
SEC("xdp") int t(struct xdp_md *ctx) {
  __u32 k = 0; __u64 one = 1;
"""


def clang(tmp_path: Path, name: str, text: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    out = tmp_path / f"{name}.o"
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", f"-I{PROGS}", "-c"]
    subprocess.run([*cmd, str(src), "-o", str(out)], check=True)
    return out


def refusal(tmp_path: Path, body: str) -> KernelError:
    obj = load_object(clang(tmp_path, "t", HEAD + body + "}\n"))
    with pytest.raises(KernelError) as exc:
        check(obj.program("t"))
    return exc.value


@needs_clang
def test_an_inner_map_used_without_a_null_check_is_refused(tmp_path: Path) -> None:
    """The lookup's result may be NULL: as a map argument it is not a map pointer yet."""
    err = refusal(
        tmp_path,
        "void *m = bpf_map_lookup_elem(&outer, &k);\n"
        "__u64 *v = bpf_map_lookup_elem(m, &k); if (v) *v += 1; return XDP_DROP;",
    )
    assert err.errno == Errno.EACCES
    assert "R1 type=map_ptr_or_null expected=map_ptr" in err.extack


@needs_clang
def test_reading_an_outer_lookup_before_the_null_check_is_refused(tmp_path: Path) -> None:
    err = refusal(
        tmp_path,
        "__u32 *m = bpf_map_lookup_elem(&outer, &k); return *(volatile __u32 *)m;",
    )
    assert err.errno == Errno.EACCES
    assert "R0 invalid mem access 'map_ptr_or_null'" in err.extack


@needs_clang
def test_writing_through_an_inner_map_pointer_is_refused(tmp_path: Path) -> None:
    """``check_ptr_to_map_access``: the pointer is the kernel's ``struct bpf_array``."""
    err = refusal(
        tmp_path,
        "__u32 *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
        "*(volatile __u32 *)m = 5; return XDP_DROP;",
    )
    assert err.errno == Errno.EACCES
    assert "only read from bpf_array is supported" in err.extack


@needs_clang
def test_reading_the_kernels_map_struct_is_not_modelled(tmp_path: Path) -> None:
    """The kernel lets a privileged program read ``struct bpf_array`` through BTF; xdptui
    has no vmlinux BTF and says so."""
    err = refusal(
        tmp_path,
        "__u32 *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
        "return *(volatile __u32 *)m;",
    )
    assert err.errno == Errno.EOPNOTSUPP and "struct bpf_array" in err.extack


@needs_clang
def test_arithmetic_on_an_inner_map_pointer_is_refused(tmp_path: Path) -> None:
    err = refusal(
        tmp_path,
        "char *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
        "return bpf_map_lookup_elem(m + 8, &k) ? 2 : 3;",
    )
    assert err.errno == Errno.EACCES
    assert "R1 pointer arithmetic on map_ptr prohibited" in err.extack


@needs_clang
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "__u32 v = 0; bpf_map_update_elem(&outer, &k, &v, 0); return 2;",
            "cannot pass map_type 12 into func bpf_map_update_elem#2",
        ),
        (
            "void *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
            "return bpf_redirect_map(m, 0, 0);",
            "cannot pass map_type 2 into func bpf_redirect_map#51",
        ),
    ],
    ids=["update-outer", "redirect-into-inner-array"],
)
def test_map_func_compatibility_holds_for_outer_and_inner_maps(
    tmp_path: Path, body: str, message: str
) -> None:
    err = refusal(tmp_path, body)
    assert err.errno == Errno.EINVAL and message in err.extack


@needs_clang
def test_the_inner_map_takes_update_and_delete(tmp_path: Path) -> None:
    obj = load_object(
        clang(
            tmp_path,
            "t",
            HEAD.replace("char _l[]", 'struct inner a SEC(".maps");\nchar _l[]')
            + "void *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
            "long u = bpf_map_update_elem(m, &k, &one, 0);\n"
            "long d = bpf_map_delete_elem(m, &k);\n"
            "return u == 0 && d == -22 ? 2 : 0; }\n",
        )
    )
    prog = obj.program("t")
    check(prog)
    assert run_batch(prog, [bytes(20)]).retval.tolist() == [1]
    obj.maps["outer"].update_inner(0, obj.maps["a"])
    assert run_batch(prog, [bytes(20)]).retval.tolist() == [2]  # array: delete is EINVAL
    assert obj.maps["a"].lookup(0) == (1).to_bytes(8, "little")


def _map(t: MapType, ks: int = 4, vs: int = 8, n: int = 4, flags: int = 0) -> BpfMap:
    return BpfMap(MapDef("m", t, ks, vs, n, flags))


def test_bpf_map_meta_equal_compares_type_sizes_flags_and_an_arrays_size() -> None:
    meta = _map(MapType.ARRAY)
    assert meta_equal(meta, _map(MapType.ARRAY))
    assert not meta_equal(meta, _map(MapType.ARRAY, n=5))  # array_map_meta_equal
    assert not meta_equal(meta, _map(MapType.ARRAY, vs=4))
    assert not meta_equal(meta, _map(MapType.PERCPU_ARRAY))
    assert not meta_equal(meta, _map(MapType.ARRAY, flags=1 << 10))
    inner = _map(MapType.ARRAY, flags=BPF_F_INNER_MAP)
    assert meta_equal(inner, _map(MapType.ARRAY, n=99, flags=BPF_F_INNER_MAP))
    hashed = _map(MapType.HASH, n=16)
    assert meta_equal(hashed, _map(MapType.HASH, n=1024))  # a hash's size is free


def test_an_incompatible_inner_map_or_flag_is_einval_and_out_of_range_e2big() -> None:
    outer = BpfMap(MapDef("o", MapType.ARRAY_OF_MAPS, 4, 4, 2))
    outer.inner_meta = _map(MapType.ARRAY)
    good, other = _map(MapType.ARRAY), _map(MapType.ARRAY, n=8)
    good.map_id, other.map_id = 7, 8
    for inner, key, flags, errno in (
        (other, 0, 0, Errno.EINVAL),  # bpf_map_fd_get_ptr
        (good, 0, 1, Errno.EINVAL),  # bpf_fd_array_map_update_elem: BPF_ANY only
        (good, 2, 0, Errno.E2BIG),
    ):
        with pytest.raises(KernelError) as exc:
            outer.update_inner(key, inner, flags)
        assert exc.value.errno == errno
    outer.update_inner(1, good)
    assert outer.lookup(1) == (7).to_bytes(4, "little")
    with pytest.raises(KernelError) as exc:
        outer.lookup(0)
    assert exc.value.errno == Errno.ENOENT
    assert outer.dump() == "key: 01 00 00 00  value: 07 00 00 00\nFound 1 element\n"
    outer.delete(1)
    with pytest.raises(KernelError) as exc:  # fd_array_map_delete_elem: nothing there
        outer.delete(1)
    assert exc.value.errno == Errno.ENOENT


@needs_clang
def test_initial_values_fill_the_slots_at_load_and_both_outer_types_run(tmp_path: Path) -> None:
    """libbpf's ``init_map_in_map_slots``: ``.values = { [0] = &inner_a }`` puts inner_a's
    id in slot 0; the programs find the inner maps and count in them."""
    obj = load_object(clang(tmp_path, "mim_proto", (PROGS / "mim_proto.c").read_text()))
    ids = {name: m.map_id for name, m in obj.maps.items()}
    assert obj.maps["mim_slots"].items() == [(bytes(4), ids["inner_a"].to_bytes(4, "little"))]
    assert obj.maps["mim_by_key"].items() == [
        ((1).to_bytes(4, "little"), ids["inner_h"].to_bytes(4, "little"))
    ]
    frames = [
        build_frame_bytes(proto=proto, src_mac=f"00:11:22:33:44:{i:02x}")
        for i, proto in enumerate((6, 17, 1, 17, 6, 6))
    ]
    first = run_batch(obj.program("mim_proto"), frames)
    assert first.retval.tolist() == [2, 1, 2, 1, 2, 1]  # slot 1 empty: XDP_DROP
    obj.maps["mim_slots"].update_inner(1, obj.maps["inner_b"])
    second = run_batch(obj.program("mim_proto"), frames)
    assert second.retval.tolist() == [2, 3, 2, 3, 2, 3]
    assert dict(obj.maps["inner_a"].nonzero_items()) == {
        (1).to_bytes(4, "little"): (2).to_bytes(8, "little"),
        (6).to_bytes(4, "little"): (4).to_bytes(8, "little"),
    }
    assert dict(obj.maps["inner_b"].nonzero_items()) == {
        (6).to_bytes(4, "little"): (1).to_bytes(8, "little"),
        (17).to_bytes(4, "little"): (2).to_bytes(8, "little"),
    }
    hashed = run_batch(obj.program("mim_hash"), frames)
    assert hashed.retval.tolist() == [1, 3, 1, 2, 1, 3]
    assert obj.maps["inner_h"].items() == [
        ((1).to_bytes(4, "little"), (2).to_bytes(8, "little")),
        ((6).to_bytes(4, "little"), (1).to_bytes(8, "little")),
    ]


@needs_clang
def test_an_inner_template_of_a_type_without_map_meta_equal_fails_the_load(
    tmp_path: Path,
) -> None:
    """``bpf_map_meta_alloc``: ENOTSUPP for a type the kernel cannot compare (a prog array)."""
    text = HEAD.replace("BPF_MAP_TYPE_ARRAY);", "BPF_MAP_TYPE_PROG_ARRAY);", 1).replace(
        "__type(value, __u64); };", "__type(value, __u32); };", 1
    )
    with pytest.raises(KernelError) as exc:
        load_object(clang(tmp_path, "t", text + "return 2; }\n"))
    assert exc.value.errno == Errno.ENOTSUPP
