"""Real XDP programs: clang-compiled BPF ELF objects, loaded and run with the kernel's rules.

The interface for the engine (stable):

``load_object(path, ncpus=1) -> BpfObject``
    Parse and relocate an object (``elf``). ``obj.programs`` by function name,
    ``obj.program(name_or_section)``, ``obj.maps`` by name, ``obj.license``,
    ``obj.skipped`` (programs present but not runnable here, with the reason).
``run_batch(prog, packets, *, ingress_ifindex=1, rx_queue_index=0, egress_ifindex=0,
cpu=0, time_ns=0, seed=0) -> BatchResult``
    Run over frames (a list of ``bytes``, or ``Packets``) as if one by one in order (``vm``):
    ``retval`` per packet, ``data`` (bytes from data_meta to data_end, as BPF_PROG_TEST_RUN
    returns; ``out``, the same packed), ``meta_len``, ``counts`` (instructions run),
    ``redirects`` (``Redirect(ifindex=...)`` or ``Redirect(map=..., key=..., flags=...)``),
    ``records`` (trace_printk / perf / ring buffer output). Map changes stay in the maps.
``Packets.from_bytes(frames) -> Packets``
    Frames packed once as BPF_PROG_TEST_RUN lays each out (``packets``); a batch runs on the
    rows in place and copies them on its first write into a packet.
``BpfMap.lookup / update / delete / items / dump``
    The bpf(2) map commands with the kernel's flags and errno; ``dump()`` prints what
    ``bpftool map dump`` prints (``as_json=True`` for ``-j``).
``build_frame_bytes(**fields) -> bytes``
    A frame's bytes from header fields (``frames``).

Refusals raise ``xdptui.model.errors.KernelError`` with the kernel's errno and wording.
This package imports only NumPy, pyelftools, the standard library and ``xdptui.model``.
"""

from xdptui.bpf.elf import load_object
from xdptui.bpf.frames import build_frame_bytes
from xdptui.bpf.maps import BpfMap, MapType
from xdptui.bpf.objfile import BpfObject, BpfProgram
from xdptui.bpf.packets import Packets
from xdptui.bpf.vm import BatchResult, Redirect, action_name, run_batch

__all__ = [
    "BatchResult",
    "BpfMap",
    "BpfObject",
    "BpfProgram",
    "MapType",
    "Packets",
    "Redirect",
    "action_name",
    "build_frame_bytes",
    "load_object",
    "run_batch",
]
