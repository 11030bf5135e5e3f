"""What a hostile BPF object costs: each object of ``tests/test_bpf_hostile.py``, plus a
straight-line program of 999,998 instructions, written to a file that a one-port topology
attaches, and given to ``xdptui check``: wall time, peak RSS and the answer's first line.

    python benchmarks/hostile_objects.py            # a Markdown table

The kernel refuses each at ``BPF_PROG_LOAD`` or ``BPF_MAP_CREATE`` in milliseconds; xdptui
must refuse it too, with the kernel's errno and words, in bounded time and memory.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bpf_asm import exit_, mov  # noqa: E402
from bpf_elf import Obj, elf_bytes  # noqa: E402
from test_bpf_hostile import HOSTILE  # noqa: E402

TOPOLOGY = """\
devices:
  eth0: {type: nic, driver: ice, queues: 1, xdp: h.o}
traffic:
  - {name: g, to: eth0, rate: 1Mpps}
"""


def main() -> None:
    cases = {name: case[0] for name, case in HOSTILE.items()}
    cases["a straight-line program of 999,998 instructions"] = Obj(
        {"xdp": mov(0, imm=2) * 999_997 + exit_()}
    )
    xdptui = Path(sys.executable).with_name("xdptui")
    work = Path(tempfile.mkdtemp())
    (work / "t.yaml").write_text(TOPOLOGY)
    print("| object | wall s | peak RSS MB | `xdptui check` answers |")
    print("| --- | ---: | ---: | --- |")
    for name, obj in cases.items():
        (work / "h.o").write_bytes(elf_bytes(obj))
        res = subprocess.run(
            ["/usr/bin/time", "-f", "TIME %e %M", str(xdptui), "check", "t.yaml"],
            cwd=work,
            capture_output=True,
            text=True,
        )
        lines = [line for line in (res.stderr + res.stdout).splitlines() if line.strip()]
        _, wall, rss_kb = next(line for line in lines if line.startswith("TIME")).split()
        answer = next((line for line in lines if not line.startswith("TIME")), "")
        print(f"| {name} | {float(wall):.1f} | {int(rss_kb) // 1024} | {answer[:140]} |")


if __name__ == "__main__":
    main()
