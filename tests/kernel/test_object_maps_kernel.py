"""A topology's ``type: object`` map against the machine's kernel: drop_ports_map.o loaded by
bpftool (libbpf) with its map filled by ``bpftool map update`` itself, then
``BPF_PROG_TEST_RUN`` over crafted frames; xdptui's program is the one a topology attached
and filled with the same elements. Return values, output bytes and the map afterwards must
be equal.

Skips with the reason where the machine cannot load programs (not root, no BPF, no bpftool).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import bpf_kernel_oracle as kern
import pytest
from bpf_corpus import corpus
from conftest import ROOT

from xdptui.bpf import vm
from xdptui.bpf.frames import IPPROTO_TCP, IPPROTO_UDP, build_frame_bytes
from xdptui.bpf.objfile import BpfProgram
from xdptui.commands import validate
from xdptui.sim import show
from xdptui.sim.engine import Simulator
from xdptui.topology_io import load_topology

WHY_NOT = kern.available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel oracle: {WHY_NOT}")
OBJ = ROOT / "examples" / "bpf" / "drop_ports_map.o"
ELEMENTS = (("hex 35 00", "hex 01 00 00 00"), ("0x50 0", "0 0 0 0"), ("hex bb 01", "hex 07 0 0 0"))


def frames() -> list[bytes]:
    """The crafted corpus, and frames to every listed port (and a neighbour) over v4 and v6."""
    out = corpus(400)
    for port in (53, 80, 443, 444):
        for proto in (IPPROTO_UDP, IPPROTO_TCP):
            for src, dst in (("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")):
                frame = build_frame_bytes(proto=proto, dst_port=port, src_ip=src, dst_ip=dst)
                out.append(frame)
    return out


def xdptui_program(tmp_path: Path) -> BpfProgram:
    """The program as a topology attaches and fills it (a Simulator at t = 0)."""
    shutil.copy(OBJ, tmp_path / OBJ.name)
    entries = "".join(f"      - {{key: {k}, value: {v}}}\n" for k, v in ELEMENTS)
    (tmp_path / "t.yaml").write_text(
        "devices:\n  eth0: {type: nic, driver: ice, xdp: drop_ports_map.o}\n"
        f"maps:\n  drop_ports:\n    type: object\n    entries:\n{entries}"
    )
    sim = Simulator(load_topology(tmp_path / "t.yaml", validate_command=validate))
    (loaded,) = show.loaded_programs(sim.world)
    assert loaded.prog.obj is not None
    return loaded.prog.obj.prog


def test_topology_fill_matches_bpftool_map_update_in_the_kernel(tmp_path: Path) -> None:
    prog = xdptui_program(tmp_path)
    packets = frames()
    with kern.LoadedObject(OBJ) as lo:
        fd = lo.prog_fd("xdp_drop_ports_map")
        (map_id,) = kern.prog_map_ids(fd)
        for key, value in ELEMENTS:
            cmd = f"bpftool map update id {map_id} key {key} value {value}".split()
            res = subprocess.run(cmd, capture_output=True, text=True)
            assert res.returncode == 0, res.stderr
        kernel = [kern.test_run(fd, p) for p in packets]
        mfd = kern.map_fd_by_id(map_id)
        try:
            info = kern.map_info(mfd)
            kernel_map = kern.map_items(mfd, info, info.value_size)
        finally:
            os.close(mfd)
    ours = [vm.test_run(prog, p) for p in packets]
    for i, (k, r) in enumerate(zip(kernel, ours, strict=True)):
        assert (int(r.retval[-1]), r.data[-1]) == (k.retval, k.data), f"frame {i}"
    (m,) = prog.maps
    assert dict(m.items()) == kernel_map
    dropped = sum(k.retval == 1 for k in kernel)
    assert dropped >= 4  # ports 53 and 443 over UDP/TCP, v4/v6, at least
