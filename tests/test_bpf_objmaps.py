"""An object's own maps are real maps: ``bpftool map update|delete|lookup`` by name or id, in
bpftool's byte syntax and words, and what a program reads from them changes its verdicts --
typed, or from a topology's timeline before traffic starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from bpf_asm import alu, call, exit_, insn, jmp, mov, stx
from bpf_elf import MapSpec, Obj, elf_bytes
from conftest import sim_of

from xdptui.bpf import isa

B = isa
# r0 = lookup(cfg, key 0); NULL: XDP_PASS, else the value's low byte as the verdict
PROGRAM = (
    mov(2, 10)
    + alu(B.BPF_ADD, 2, imm=-4)
    + mov(3, imm=0)
    + stx(B.BPF_W, 10, 3, -4)
    + insn(0x18, 1, 1, 0, 0)
    + insn(0)
    + call(1)
    + jmp(B.BPF_JEQ, 0, 2, imm=0)
    + insn(B.BPF_LDX | B.BPF_MEM | B.BPF_B, 0, 0, 0)
    + exit_()
    + mov(0, imm=2)
    + exit_()
)


@pytest.fixture
def obj(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.o"
    path.write_bytes(
        elf_bytes(Obj({"xdp": PROGRAM}, [MapSpec("cfg", 1, 4, 8, 4)], [("xdp", 4, "cfg")]))
    )
    return path


def topology(obj: Path, timeline: str = "") -> str:
    return f"""
cpus: 1
devices:
  eth0: {{type: nic, driver: ice, queues: 1, xdp: {obj}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps}}
{timeline}
"""


def test_bpftool_fills_an_objects_map_and_the_program_reads_it(obj: Path) -> None:
    sim = sim_of(topology(obj))
    sim.run_until(100_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert c["xdp_pass"] == c["rx_packets"] > 0 and c["xdp_drop"] == 0
    res = sim.submit("bpftool map update name cfg key 0 0 0 0 value hex 01 00 00 00 00 00 00 00")
    assert res.ok, res.reply
    assert sim.submit("bpftool map lookup name cfg key 0x00 0 0 0").reply == (
        "key: 00 00 00 00  value: 01 00 00 00 00 00 00 00"
    )
    before = sim.report()["devices"]["eth0"]["counters"]["xdp_drop"]
    sim.run_until(200_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert c["xdp_drop"] > before == 0
    assert sim.submit("bpftool map delete name cfg key 0 0 0 0").ok
    drops = c["xdp_drop"]
    sim.run_until(300_000)
    assert sim.report()["devices"]["eth0"]["counters"]["xdp_drop"] == drops


@pytest.mark.parametrize(
    ("command", "errno", "words"),
    [
        (
            "bpftool map update name cfg key 0 value 1 0 0 0 0 0 0 0",
            "EINVAL",
            "key expected 4 bytes got 1",
        ),
        (
            "bpftool map update name cfg key 0 0 0 0 value 1 0",
            "EINVAL",
            "value expected 8 bytes got 2",
        ),
        (
            "bpftool map update name nope key 0 0 0 0 value 1 0 0 0 0 0 0 0",
            "ENOENT",
            "get map by name nope failed",
        ),
        (
            "bpftool map update name cfg key 0 0 0 0 value 1 0 0 0 0 0 0 0 exist",
            "ENOENT",
            "update failed: No such file or directory",
        ),
        (
            "bpftool map delete name cfg key 9 0 0 0",
            "ENOENT",
            "delete failed: No such file or directory",
        ),
        ("bpftool map lookup name cfg key 9 0 0 0", "ENOENT", "Not found"),
        (
            "bpftool map update name cfg key 0 0 0 0x100 value 1 0 0 0 0 0 0 0",
            "EINVAL",
            "error parsing byte: 0x100",
        ),
    ],
)
def test_map_commands_answer_as_bpftool_does(
    obj: Path, command: str, errno: str, words: str
) -> None:
    sim = sim_of(topology(obj))
    res = sim.submit(command)
    assert not res.ok and res.errno == errno and words in res.reply, res


def test_a_full_hash_refuses_a_new_key_with_e2big(obj: Path) -> None:
    sim = sim_of(topology(obj))
    for k in range(4):
        assert sim.submit(f"bpftool map update name cfg key {k} 0 0 0 value 2 0 0 0 0 0 0 0").ok
    res = sim.submit("bpftool map update name cfg key 4 0 0 0 value 2 0 0 0 0 0 0 0")
    assert res.errno == "E2BIG" and "update failed: Argument list too long" in res.reply


def test_a_topology_timeline_fills_the_map_before_traffic_starts(obj: Path) -> None:
    timeline = (
        "timeline:\n"
        '  - {at: 0ms, do: "bpftool map update name cfg key 0 0 0 0 value 1 0 0 0 0 0 0 0"}\n'
    )
    sim = sim_of(topology(obj, timeline))
    sim.run_until(100_000)
    c = sim.report()["devices"]["eth0"]["counters"]
    assert c["xdp_drop"] == c["rx_packets"] > 0
