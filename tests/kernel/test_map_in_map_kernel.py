"""Map-in-map against the machine's kernel: tests/bpf_progs/mim_proto.c (an array of maps of
two slots whose inner arrays count packets per IP protocol, the slot chosen by a bit of the
source MAC; and a hash of maps whose inner hash the program fills) loaded by bpftool
(libbpf: the inner template, the outer maps, ``init_map_in_map_slots``) with every map pinned,
then ``BPF_PROG_TEST_RUN`` over crafted frames; xdptui's program is the one a topology
attached. Before and after ``bpftool map update ... value`` puts an inner map in an empty
slot -- the kernel's bpftool and xdptui's, each on its own side -- return values, output
bytes, the inner maps' contents and what ``bpftool map dump`` shows of the outer maps (inner
map ids, read back as the maps they name) must be equal; an incompatible inner map is
refused by both in the same words.

Skips with the reason where the machine cannot load programs (not root, no BPF, no bpftool,
no clang).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import bpf_kernel_oracle as kern
import pytest
from bpf_corpus import corpus
from conftest import ROOT

from xdptui.bpf import vm
from xdptui.bpf.frames import build_frame_bytes
from xdptui.commands import validate
from xdptui.sim import show
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

WHY_NOT = kern.available()
if WHY_NOT is None and shutil.which("clang") is None:
    WHY_NOT = "clang is not installed"
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
SRC = ROOT / "tests" / "bpf_progs" / "mim_proto.c"
INNER = ("inner_a", "inner_b", "inner_h", "inner_small")
OUTER = ("mim_slots", "mim_by_key")
# The maps each program uses (the kernel's two programs share one load's maps; each xdptui
# load has its own copies).
USES = {"mim_proto": (("inner_a", "inner_b", "inner_small"), ("mim_slots",))}
USES["mim_hash"] = (("inner_h",), ("mim_by_key",))


def frames() -> list[bytes]:
    """The crafted corpus, and frames of several protocols from both slots' MACs."""
    out = corpus(600)
    for i in range(16):
        for proto in (1, 6, 17, 47):
            out.append(build_frame_bytes(proto=proto, src_mac=f"00:11:22:33:44:{i:02x}"))
    return out


@pytest.fixture
def obj(tmp_path: Path) -> Path:
    out = tmp_path / "mim_proto.o"
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", f"-I{arch}", "-c", str(SRC)]
    subprocess.run([*cmd, "-o", str(out)], check=True)
    return out


class Kernel:
    """The object loaded by ``bpftool prog loadall ... pinmaps``: programs and maps pinned."""

    def __init__(self, obj: Path) -> None:
        self.dir = kern.BPFFS / f"xdptui_mim_{uuid.uuid4().hex[:12]}"
        self.dir.mkdir()
        load = ["bpftool", "prog", "loadall", str(obj), str(self.dir / "progs"), "type", "xdp"]
        res = subprocess.run(
            [*load, "pinmaps", str(self.dir / "maps")],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            self.close()
            raise OSError(f"bpftool prog loadall: {res.stderr.strip()[-800:]}")
        self.fds: list[int] = []

    def fd(self, kind: str, name: str) -> int:
        fd = kern.obj_get(self.dir / kind / name)
        self.fds.append(fd)
        return fd

    def bpftool(self, *words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bpftool", *words], capture_output=True, text=True)

    def pinned(self, name: str) -> str:
        return str(self.dir / "maps" / name)

    def items(self, name: str) -> dict[bytes, bytes]:
        fd = self.fd("maps", name)
        info = kern.map_info(fd)
        return kern.map_items(fd, info, info.value_size)

    def names_by_id(self) -> dict[int, str]:
        out = {}
        for name in (*INNER, *OUTER):
            js = self.bpftool("-j", "map", "show", "pinned", self.pinned(name)).stdout
            out[int(re.search(r'"id":(\d+)', js).group(1))] = name  # type: ignore[union-attr]
        return out

    def close(self) -> None:
        for fd in getattr(self, "fds", []):
            os.close(fd)
        subprocess.run(["rm", "-rf", str(self.dir)], capture_output=True)


@pytest.fixture
def kernel(obj: Path) -> Iterator[Kernel]:
    k = Kernel(obj)
    try:
        yield k
    finally:
        k.close()


def xdptui(obj: Path, tmp_path: Path) -> Simulator:
    """The object as a topology attaches it (two devices, one per program), at t = 0."""
    (tmp_path / "t.yaml").write_text(
        f"devices:\n  eth0: {{type: nic, driver: ice, xdp: {obj.name}:mim_proto}}\n"
        f"  eth1: {{type: nic, driver: ice, xdp: {obj.name}:mim_hash}}\n"
    )
    return Simulator(load_topology(tmp_path / "t.yaml", validate_command=validate))


def our_maps(sim: Simulator, prog: str) -> dict[str, show.ObjMap]:
    (loaded,) = [p for p in show.loaded_programs(sim.world) if p.name == prog]
    assert loaded.prog.obj is not None
    ids = set(loaded.prog.obj.map_ids)
    return {m.name: m for m in show.object_maps(sim.world) if m.map_id in ids}


def run_both(kernel: Kernel, sim: Simulator, prog: str, packets: list[bytes]) -> None:
    fd = kernel.fd("progs", prog)
    (loaded,) = [p for p in show.loaded_programs(sim.world) if p.name == prog]
    assert loaded.prog.obj is not None
    ours = [vm.test_run(loaded.prog.obj.prog, p) for p in packets]
    theirs = [kern.test_run(fd, p) for p in packets]
    for i, (k, r) in enumerate(zip(theirs, ours, strict=True)):
        assert (int(r.retval[-1]), r.data[-1]) == (k.retval, k.data), f"{prog} frame {i}"


def same_maps(kernel: Kernel, sim: Simulator, prog: str) -> None:
    """Inner maps equal element by element; the outer maps' slots name the same maps."""
    ours = our_maps(sim, prog)
    inner, outer = USES[prog]
    for name in inner:
        theirs = kernel.items(name)
        mine = dict(ours[name].map.items())
        if ours[name].map.map_type == 2:  # an array: the kernel lists every index
            theirs = {k: v for k, v in theirs.items() if any(v)}
            mine = {k: v for k, v in mine.items() if any(v)}
        assert mine == theirs, f"map {name}"
    k_names = kernel.names_by_id()
    x_names = {m.map_id: n for n, m in ours.items()}
    for name in outer:
        k_dump = kernel.bpftool("map", "dump", "pinned", kernel.pinned(name)).stdout
        x_dump = sim.submit(f"bpftool map dump id {ours[name].map_id}").reply
        assert named(k_dump, k_names) == named(x_dump, x_names), name


def named(dump: str, names: dict[int, str]) -> list[str]:
    """A plain dump with each value (an inner map id) replaced by that map's name."""

    def one(m: re.Match[str]) -> str:
        return (
            f"value: {names[int.from_bytes(bytes.fromhex(m.group(1).replace(' ', '')), 'little')]}"
        )

    return sorted(re.sub(r"value: ((?:[0-9a-f]{2} ?){4})", one, dump).strip().splitlines())


def test_map_in_map_runs_as_in_the_kernel_before_and_after_bpftool_fills_a_slot(
    obj: Path, kernel: Kernel, tmp_path: Path
) -> None:
    shutil.copy(obj, tmp_path / "sim.o")
    sim = xdptui(tmp_path / "sim.o", tmp_path)
    packets = frames()
    for prog in ("mim_proto", "mim_hash"):
        run_both(kernel, sim, prog, packets)
        same_maps(kernel, sim, prog)
    # bpftool puts inner_b in slot 1 of the array of maps and inner_h under key 0 of the hash
    fills = (("mim_slots", "1", "inner_b", "mim_proto"), ("mim_by_key", "0", "inner_h", "mim_hash"))
    for outer, key, inner, prog in fills:
        slot = ["key", key, "0", "0", "0", "value", "pinned", kernel.pinned(inner)]
        res = kernel.bpftool("map", "update", "pinned", kernel.pinned(outer), *slot)
        assert res.returncode == 0, res.stderr
        ours = our_maps(sim, prog)  # each xdptui load has its own maps: this program's
        line = f"bpftool map update id {ours[outer].map_id} key {key} 0 0 0 value id "
        done = sim.submit(line + str(ours[inner].map_id))
        assert done.ok, done.reply
    for prog in ("mim_proto", "mim_hash"):
        run_both(kernel, sim, prog, packets)
        same_maps(kernel, sim, prog)
    assert any(kernel.items("inner_b").values())  # the slot was used


def test_an_incompatible_inner_map_is_refused_in_bpftools_words(
    obj: Path, kernel: Kernel, tmp_path: Path
) -> None:
    shutil.copy(obj, tmp_path / "sim.o")
    sim = xdptui(tmp_path / "sim.o", tmp_path)
    small = our_maps(sim, "mim_proto")["inner_small"].map_id
    for words, ours in (
        (("value", "pinned", kernel.pinned("inner_small")), f"value id {small}"),
        (("value", "1", "0", "0", "0"), "value 1 0 0 0"),
    ):
        res = kernel.bpftool(
            "map",
            "update",
            "pinned",
            kernel.pinned("mim_slots"),
            "key",
            "1",
            "0",
            "0",
            "0",
            *words,
        )
        outer = our_maps(sim, "mim_proto")["mim_slots"].map_id
        mine = sim.submit(f"bpftool map update id {outer} key 1 0 0 0 {ours}")
        assert res.returncode != 0 and not mine.ok
        assert res.stderr.strip() == mine.reply


REFUSED = {
    "no-null-check": "void *m = bpf_map_lookup_elem(&outer, &k);\n"
    "__u64 *v = bpf_map_lookup_elem(m, &k); if (v) *v += 1; return XDP_DROP;",
    "write-through-map-ptr": "__u32 *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
    "*(volatile __u32 *)m = 5; return XDP_DROP;",
    "read-before-null-check": "__u32 *m = bpf_map_lookup_elem(&outer, &k);\n"
    "return *(volatile __u32 *)m;",
    "arithmetic": "char *m = bpf_map_lookup_elem(&outer, &k); if (!m) return 1;\n"
    "return bpf_map_lookup_elem(m + 8, &k) ? 2 : 3;",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_verifiers_refusals_are_the_kernels(case: str, tmp_path: Path) -> None:
    """Both refuse with the same errno, and xdptui's message is the last line of the
    kernel's verifier log before its statistics."""
    from test_bpf_map_in_map import HEAD, clang

    from xdptui.bpf import load_object
    from xdptui.bpf.verifier import check
    from xdptui.model.errors import KernelError

    path = clang(tmp_path, "t", HEAD + REFUSED[case] + "}\n")
    with pytest.raises(KernelError) as exc:
        check(load_object(path).program("t"))
    pin = kern.BPFFS / f"xdptui_mimref_{uuid.uuid4().hex[:12]}"
    res = subprocess.run(
        ["bpftool", "prog", "load", str(path), str(pin), "type", "xdp"],
        capture_output=True,
        text=True,
    )
    pin.unlink(missing_ok=True)
    assert res.returncode != 0
    log = res.stderr.splitlines()
    last = log[next(i for i, ln in enumerate(log) if ln.startswith("processed ")) - 1]
    assert f"failed to load: -{exc.value.errno.value}" in res.stderr
    assert exc.value.extack.startswith(last), (last, exc.value.extack)
