"""What exists by name: built-in XDP programs with their parameters, drivers, bond modes.

Used by the topology loader and the command parser for validation and "did you mean", and by
the UI's program picker. The programs' behaviour lives in ``xdptui.sim.programs``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

ParamKind = Literal["int", "dev", "map", "ip", "bool", "cpus"]


@dataclass(frozen=True)
class ParamInfo:
    name: str
    kind: ParamKind
    default: str | None  # None = required
    help: str


def bool_param(text: str) -> str | None:
    """A flag param's value as the built-ins read it ("1" or "0"): 0, 1, true or false in any
    case; None for anything else."""
    low = text.strip().lower()
    return {"1": "1", "true": "1", "0": "0", "false": "0"}.get(low)


@dataclass(frozen=True)
class ProgramInfo:
    name: str
    summary: str
    params: tuple[ParamInfo, ...] = ()
    origin: str = ""  # where the real program lives

    def param(self, name: str) -> ParamInfo | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


PROGRAMS: tuple[ProgramInfo, ...] = (
    ProgramInfo("xdp_pass", "return XDP_PASS: every frame goes up to the stack"),
    ProgramInfo("xdp_drop", "return XDP_DROP: drop every frame in the driver"),
    ProgramInfo("xdp_tx", "return XDP_TX: bounce every frame back out of the port it came in"),
    ProgramInfo("xdp_aborted", "return XDP_ABORTED: drop and fire xdp:xdp_exception"),
    ProgramInfo(
        "xdp1",
        "parse Ethernet/IP, count per IP protocol, XDP_DROP",
        origin="samples/bpf/xdp1_kern.c",
    ),
    ProgramInfo(
        "xdp2",
        "parse, count per IP protocol, swap MACs, XDP_TX",
        origin="samples/bpf/xdp2_kern.c",
    ),
    ProgramInfo(
        "redirect",
        "swap MACs and bpf_redirect() every frame to one device by ifindex",
        (
            ParamInfo("dev", "dev", None, "target device"),
            ParamInfo("flags", "int", "0", "bpf_redirect flags (must be 0 in XDP)"),
        ),
        origin="samples/bpf/xdp_redirect_kern.c",
    ),
    ProgramInfo(
        "redirect_map",
        "bpf_redirect_map(map, key, flags) into a devmap; low flag bits = verdict on a miss",
        (
            ParamInfo("map", "map", None, "devmap name"),
            ParamInfo("key", "int", "0", "devmap key"),
            ParamInfo("flags", "int", "0", "fallback verdict on lookup miss (0-3)"),
        ),
        origin="samples/bpf/xdp_redirect_map_kern.c",
    ),
    ProgramInfo(
        "redirect_map_multi",
        "bpf_redirect_map with BPF_F_BROADCAST: clone to every devmap entry",
        (
            ParamInfo("map", "map", None, "devmap name"),
            ParamInfo("exclude_ingress", "bool", "1", "BPF_F_EXCLUDE_INGRESS"),
        ),
        origin="samples/bpf/xdp_redirect_map_multi.bpf.c",
    ),
    ProgramInfo(
        "redirect_cpu",
        "bpf_redirect_map(cpumap, cpu, 0): hand every frame to another CPU's kthread -- one "
        "CPU, or spread over several by a hash of the 5-tuple",
        (
            ParamInfo("map", "map", None, "cpumap name"),
            ParamInfo("cpu", "int", "0", "the CPU (cpumap key) every frame goes to"),
            ParamInfo("cpus", "cpus", "", "CPUs to spread over by flow hash, e.g. 2,3,4,5"),
        ),
        origin="samples/bpf/xdp_redirect_cpu.bpf.c",
    ),
    ProgramInfo(
        "xsk_redirect",
        "bpf_redirect_map(xskmap, rx_queue_index, XDP_PASS): each frame to the AF_XDP socket "
        "of its queue; a queue without a socket goes up the stack",
        (ParamInfo("map", "map", None, "xskmap name"),),
        origin="xdp-tools lib/libxdp/xsk_def_xdp_prog.c",
    ),
    ProgramInfo(
        "l4lb",
        "hairpin L4 load balancer: hash the 5-tuple to a backend, rewrite, XDP_TX; "
        "non-TCP/UDP goes XDP_PASS",
        (ParamInfo("backends", "int", "8", "number of backends"),),
        origin="a Katran/Cilium-style standalone L4 LB",
    ),
    ProgramInfo(
        "drop_port",
        "XDP_DROP frames to one UDP/TCP destination port, XDP_PASS the rest",
        (ParamInfo("port", "int", "9", "destination port to drop"),),
    ),
)

DEVMAP_EGRESS_OK: frozenset[str] = frozenset({"xdp_pass", "xdp_drop", "xdp_aborted", "xdp2"})
# Built-ins a cpumap entry may run (BPF_XDP_CPUMAP programs here: none of them redirects).
CPUMAP_PROGRAMS_OK: frozenset[str] = frozenset({"xdp_pass", "xdp_drop", "xdp_aborted", "drop_port"})


def program_info(name: str) -> ProgramInfo | None:
    for prog in PROGRAMS:
        if prog.name == name:
            return prog
    return None


def is_user_program(name: str) -> bool:
    """``path/to/file.py:function``."""
    path, sep, func = name.rpartition(":")
    return bool(sep) and path.endswith(".py") and func.isidentifier()


def is_object_program(name: str) -> bool:
    """``path/to/file.o`` or ``path/to/file.o:SECTION``: a clang-compiled XDP object."""
    if name.endswith(".o") and len(name) > 2:
        return True
    path, sep, section = name.rpartition(":")
    return bool(sep) and path.endswith(".o") and len(path) > 2 and bool(section)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'eth1'?)`` or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
