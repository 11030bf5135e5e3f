"""The interpreter against the machine's kernel: each program runs over the same crafted
packets here and under BPF_PROG_TEST_RUN (loaded by bpftool, i.e. libbpf); return values,
output bytes and every map's contents afterwards must be equal.

Programs: the examples (committed .o files), the targeted programs in tests/bpf_progs (built
with clang at test time) and every XDP program xdp-tools installs under /usr/lib/*/bpf.
Skips, with the reason, when the kernel cannot be used (not root, no BPF, no bpftool) or a
program needs what is not modelled.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import bpf_kernel_oracle as kern
import pytest
from bpf_corpus import corpus

from xdptui.bpf import load_object
from xdptui.bpf.maps import BpfMap, MapDef, MapType
from xdptui.bpf.verifier import check
from xdptui.bpf.vm import run_batch
from xdptui.model.errors import KernelError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "bpf"
PROGS = Path(__file__).resolve().parent / "bpf_progs"
WHY_NOT = kern.available()
pytestmark = [
    pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}"),
    # maps pinned by name live in the one /sys/fs/bpf: these tests share one worker
    pytest.mark.xdist_group("bpffs-by-name"),
]
PACKETS = corpus(1100)
UNCOMPARED = (
    MapType.PERF_EVENT_ARRAY,
    MapType.RINGBUF,
    MapType.PROG_ARRAY,
    MapType.ARRAY_OF_MAPS,
    MapType.HASH_OF_MAPS,
)
Setter = Callable[[str, bytes, bytes], None]


def possible_cpus() -> int:
    text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    return max(int(part.split("-")[-1]) for part in text.split(",")) + 1


NCPUS = possible_cpus()


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def setup_fwd(put: Setter) -> None:
    put("tx_port", u32(0), u32(1))
    put("tx_port", u32(1), u32(1))


def setup_rr(put: Setter) -> None:
    put("rr_ports", u32(0), u32(1))
    put("rr_ports", u32(1), u32(1))


def setup_redirects(put: Setter) -> None:
    for k in (1, 3, 7):
        put("dm", u32(k), u32(1))
    for k in (2, 5):
        put("dmh", u32(k), u32(1))


def setup_xdpfilt(put: Setter, names: set[str]) -> None:
    """A few entries in xdp-filter's maps (ports, addresses, MACs), whatever their modes."""
    if "filter_ports" in names:
        for port, mode in ((53, 0b1001), (80, 0b0101), (443, 0b0111), (1024, 0b1110)):
            put("filter_ports", u32(port), struct.pack("<Q", mode) * (NCPUS if True else 1))
    if "filter_ipv4" in names:
        for last, mode in ((5, 1), (7, 2), (1, 3)):
            put("filter_ipv4", bytes([10, 1, 0, last]), struct.pack("<Q", mode) * NCPUS)
    if "filter_ipv6" in names:
        key = bytes.fromhex("20010db8000200000000000000000003")
        put("filter_ipv6", key, struct.pack("<Q", 3) * NCPUS)
    if "filter_ethernet" in names:
        put("filter_ethernet", bytes([2, 0, 0, 0, 0, 7]), struct.pack("<Q", 3) * NCPUS)


# (object path or source, program name, map setup)
Case = tuple[str, str, Callable[[Setter], None] | None]
EXAMPLE_CASES: list[Case] = [
    ("drop_port", "xdp_drop_port", None),
    ("mac_swap", "xdp_mac_swap", None),
    ("fwd_devmap", "xdp_fwd_devmap", setup_fwd),
    ("count_proto", "xdp_count_proto", None),
    ("ipv6_filter", "xdp_ipv6_filter", None),
    ("encap_ipip", "xdp_encap_ipip", None),
    ("vlan_loop", "xdp_vlan_loop", None),
    ("router_stats", "xdp_router_stats", setup_fwd),
    ("rr_devmap", "xdp_rr_devmap", setup_rr),
]
TARGETED = sorted(p.stem for p in PROGS.glob("*.c"))
SETUPS: dict[str, Callable[[Setter], None]] = {"redirects": setup_redirects}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (apt-get install clang libbpf-dev)")
    out = tmp_path_factory.mktemp("bpf")
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    for src in PROGS.glob("*.c"):
        res = subprocess.run(
            [
                "clang",
                "-O2",
                "-g",
                "-target",
                "bpf",
                "-mcpu=v3",
                f"-I{arch}",
                "-c",
                str(src),
                "-o",
                str(out / f"{src.stem}.o"),
            ],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            pytest.fail(f"clang {src.name}: {res.stderr[-2000:]}")
    return out


def kernel_map_name(names: list[str], name: str) -> str | None:
    """The kernel's name for a map: the same (up to 15 characters), or for global data
    libbpf's ``<object prefix>.rodata`` and the like."""
    for kname in names:
        if kname == name[:15] or (name.startswith(".") and kname.endswith(name[:15])):
            return kname
    return None


def model_items(m: BpfMap) -> dict[bytes, bytes]:
    return dict(m.items())


def compare(obj_path: Path, prog_name: str, setup: Callable[[Setter], None] | None) -> int:
    """Run everything both ways; returns how many packets were compared."""
    try:
        obj = load_object(obj_path, ncpus=NCPUS)
        prog = obj.program(prog_name)
    except KernelError as exc:
        pytest.skip(f"{obj_path.name}:{prog_name}: {exc.extack}")
    pinned = tuple(m.name for m in obj.maps.values() if m.pinning)
    try:
        lo = kern.LoadedObject(obj_path, pinned)
    except FileExistsError as exc:
        pytest.skip(str(exc))
    with lo:
        fd = lo.prog_fd(prog_name)
        kmaps = lo.maps(fd)
        fds = {}
        for name in obj.maps:
            kname = kernel_map_name(list(kmaps), name)
            if kname is not None:
                fds[name] = kmaps[kname]

        def put(name: str, key: bytes, value: bytes) -> None:
            m = obj.maps[name]
            value = value[: m.user_value_size]
            obj.maps[name].update(key, value)
            kern.map_update(fds[name], key, value)

        if setup is not None:
            setup(put)
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {0})
        try:
            runs = [kern.test_run(fd, p) for p in PACKETS]
        finally:
            os.sched_setaffinity(0, old)
        result = run_batch(prog, PACKETS, cpu=0)
        for i, (k, p) in enumerate(zip(runs, PACKETS, strict=True)):
            assert (int(result.retval[i]), result.data[i]) == (k.retval, k.data), (
                f"packet {i} ({len(p)} bytes {p[:40].hex()}): model retval {result.retval[i]} "
                f"kernel {k.retval}; data equal: {result.data[i] == k.data}"
            )
        for name, m in obj.maps.items():
            # (a map-in-map's or prog array's values are the kernel's object ids)
            if m.map_type in UNCOMPARED or name not in fds:
                continue
            info = kern.map_info(fds[name])
            kernel_items = kern.map_items(fds[name], info, m.user_value_size)
            if m.map_type == MapType.DEVMAP:
                kernel_items = {k: v for k, v in kernel_items.items() if any(v[:4])}
            assert model_items(m) == kernel_items, f"map {name} differs"
    return len(PACKETS)


@pytest.mark.parametrize(
    ("stem", "prog", "setup"), EXAMPLE_CASES, ids=[c[0] for c in EXAMPLE_CASES]
)
def test_examples_match_the_kernel(
    stem: str, prog: str, setup: Callable[[Setter], None] | None
) -> None:
    assert compare(EXAMPLES / f"{stem}.o", prog, setup) >= 1000


@pytest.mark.parametrize("stem", TARGETED)
def test_targeted_programs_match_the_kernel(built: Path, stem: str) -> None:
    refused = kern.helper_refused(kern.BPF_FUNC_XDP_ADJUST_META)
    if refused and "bpf_xdp_adjust_meta" in (PROGS / f"{stem}.c").read_text():
        pytest.skip(refused)
    assert compare(built / f"{stem}.o", stem, SETUPS.get(stem)) >= 1000


XDP_TOOLS = sorted(glob.glob("/usr/lib/*/bpf/*.o"))


def xdp_tools_cases() -> list[tuple[str, str]]:
    cases = []
    for path in XDP_TOOLS:
        try:
            obj = load_object(path, ncpus=NCPUS)
        except KernelError as exc:
            cases.append((path, f"!{exc.extack}"))
            continue
        names = list(obj.programs) or [f"!{'; '.join(obj.skipped.values()) or 'no XDP program'}"]
        for n in names:
            try:
                if not n.startswith("!"):
                    check(obj.programs[n])
            except KernelError as exc:  # a feature not modelled yet (EOPNOTSUPP)
                n = f"!{n}: {exc.extack}"
            cases.append((path, n))
    return cases


@pytest.mark.skipif(not XDP_TOOLS, reason="xdp-tools is not installed (apt-get install xdp-tools)")
@pytest.mark.parametrize(
    ("path", "prog"), xdp_tools_cases() or [("", "")], ids=lambda v: Path(v).name if "/" in v else v
)
def test_xdp_tools_objects_match_the_kernel(path: str, prog: str) -> None:
    if prog.startswith("!"):
        pytest.skip(f"{Path(path).name}: {prog[1:]}")
    names = set(load_object(path, ncpus=NCPUS).maps)
    assert compare(Path(path), prog, lambda put: setup_xdpfilt(put, names)) >= 1000


def dump_entries(dump: str) -> list[str]:
    """A plain dump's entries, sorted, and its closing count line."""
    body, _, count = dump.rstrip("\n").rpartition("\n")
    return [*sorted(re.split(r"\n(?=key:)", body)), count]


DUMP_CASES = [
    ("array", "array", 4, 8, 3, [(1, bytes([5, 0, 0, 0, 0, 0, 0, 1]))]),
    ("hash", "hash", 2, 24, 4, [(1, bytes(range(1, 25))), (258, bytes(24))]),
    ("percpu_hash", "percpu_hash", 20, 4, 3, [(7, None)]),
    ("percpu_array", "percpu_array", 4, 12, 2, [(1, None)]),
]


@pytest.mark.parametrize(
    ("kind", "bpftool_type", "ks", "vs", "entries", "updates"),
    DUMP_CASES,
    ids=[c[0] for c in DUMP_CASES],
)
def test_map_dump_matches_bpftool(
    kind: str,
    bpftool_type: str,
    ks: int,
    vs: int,
    entries: int,
    updates: list[tuple[int, bytes | None]],
) -> None:
    pin = kern.BPFFS / f"xdptui_dump_{os.getpid()}_{kind}"
    subprocess.run(
        [
            "bpftool",
            "map",
            "create",
            str(pin),
            "type",
            bpftool_type,
            "key",
            str(ks),
            "value",
            str(vs),
            "entries",
            str(entries),
            "name",
            "t",
        ],
        check=True,
        capture_output=True,
    )
    try:
        m = BpfMap(MapDef("t", MapType[kind.upper()], ks, vs, entries), ncpus=NCPUS)
        for key, value in updates:
            kb = key.to_bytes(ks, "little")
            vb = value if value is not None else bytes(range(1, m.user_value_size + 1))
            m.update(kb, vb)
            fd = kern.obj_get(pin)
            try:
                kern.map_update(fd, kb, vb)
            finally:
                os.close(fd)
        plain = subprocess.run(
            ["bpftool", "map", "dump", "pinned", str(pin)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        js = subprocess.run(
            ["bpftool", "-j", "map", "dump", "pinned", str(pin)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if m.is_hash:  # the kernel's hash order is its own: compare as sets of entries
            assert dump_entries(plain) == dump_entries(m.dump())
            assert sorted(map(str, json.loads(js))) == sorted(
                map(str, json.loads(m.dump(as_json=True)))
            )
        else:
            assert m.dump() == plain
            assert json.loads(m.dump(as_json=True)) == json.loads(js)
    finally:
        pin.unlink(missing_ok=True)


def test_the_kernel_refuses_an_unchecked_read_as_we_do() -> None:
    from bpf_asm import exit_, ldx, mov

    from xdptui.bpf import isa
    from xdptui.bpf.isa import decode
    from xdptui.bpf.objfile import BpfProgram

    code = mov(6, 1) + ldx(isa.BPF_W, 2, 6, 0) + ldx(isa.BPF_B, 0, 2, 20) + exit_()
    with pytest.raises(OSError) as kernel:
        kern.load_raw(code)
    with pytest.raises(KernelError) as ours:
        run_batch(BpfProgram("t", "xdp", decode(code), [], "GPL"), [bytes(64)])
    assert kernel.value.errno == ours.value.errno.value
    for line in ours.value.extack.rsplit(" (insn", 1)[0].split("; "):
        assert line in str(kernel.value)


@pytest.mark.parametrize("name", ["encap_ipip", "fwd_devmap", "mac_swap"])
def test_prog_run_repeat_runs_on_one_buffer_as_the_kernel_does(name: str) -> None:
    """bpf_test_run loops over the same xdp_buff: three runs of an encapsulation stack three
    outer headers, a TTL goes down three times, MACs swap back."""
    from xdptui.bpf.frames import build_frame_bytes
    from xdptui.bpf.vm import test_run

    frame = build_frame_bytes(proto=17, dst_port=53, ttl=64)
    prog = load_object(EXAMPLES / f"{name}.o", ncpus=NCPUS).program()
    with kern.LoadedObject(EXAMPLES / f"{name}.o") as lo:
        k = kern.test_run(lo.prog_fd(prog.name), frame, repeat=3)
    res = test_run(prog, frame, 3)
    assert (int(res.retval[0]), res.data[0]) == (k.retval, k.data)
