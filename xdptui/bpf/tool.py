"""``xdptui prog run`` (as ``bpftool prog run`` prints it) and ``xdptui bench prog``."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from xdptui.bpf.elf import load_object
from xdptui.bpf.frames import IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP, build_frame_bytes
from xdptui.bpf.maps import fprint_hex
from xdptui.bpf.objfile import BpfProgram
from xdptui.bpf.packets import Packets
from xdptui.bpf.verifier import check
from xdptui.bpf.vm import action_name, run_batch, test_run
from xdptui.model.errors import Errno, KernelError


def _read_input(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KernelError(
            Errno.ENOENT, f"failed to open input file {path}: {exc.strerror}"
        ) from None


def _program(path: str, sec: str | None) -> BpfProgram:
    return load_object(path).program(sec)


def prog_run(
    path: str, sec: str | None, data_in: str, data_out: str | None, repeat: int, as_json: bool
) -> int:
    """``bpftool prog run``: the program ``repeat`` times on one buffer (``bpf_test_run``:
    each run sees the bytes and the head, tail and metadata the previous one left; map
    effects accumulate). The return value and output are the last run's; the time printed is
    the interpreter's (per run), which says nothing of the program's speed in the kernel."""
    if repeat < 1:
        raise KernelError(Errno.EINVAL, "repeat must be at least 1")
    prog = _program(path, sec)
    frame = _read_input(data_in)
    start = time.perf_counter_ns()
    result = test_run(prog, frame, repeat)
    interp_ns = (time.perf_counter_ns() - start) // repeat
    retval = int(result.retval[-1])
    out = result.data[-1]
    redirect = result.redirects[-1]
    if data_out is not None and data_out != "-":
        try:
            Path(data_out).write_bytes(out)
        except OSError as exc:
            raise KernelError(
                Errno.ENOENT, f"failed to open output file {data_out}: {exc.strerror}"
            ) from None
    if as_json:
        doc: dict[str, object] = {
            "retval": retval,
            "action": action_name(retval),
            "interpreter_ns": interp_ns,
            "insns": result.insns // repeat,
            "data_size_out": len(out),
        }
        if redirect is not None:
            doc["redirect"] = {k: v for k, v in vars(redirect).items() if v is not None}
        if data_out == "-":
            doc["data_out"] = out.hex()
        print(json.dumps(doc))
        return 0
    if data_out == "-":
        print(fprint_hex(out))
    avg = ", average" if repeat > 1 else ""
    print(
        f"Return value: {action_name(retval)} ({retval}), "
        f"{result.insns // repeat} instructions{avg}; xdptui's interpreter took {interp_ns}ns"
    )
    if redirect is not None and retval == 4:
        if redirect.map is not None:
            print(f"Redirect: map {redirect.map} key {redirect.key} flags {redirect.flags:#x}")
        else:
            print(f"Redirect: ifindex {redirect.ifindex}")
    return 0


def bench_frames(count: int) -> list[bytes]:
    """``count`` distinct frames: IPv4/IPv6, UDP/TCP/ICMP, 64 to 1518 bytes, some tagged."""
    frames = []
    protos = (IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP)
    for i in range(count):
        v6 = i % 5 == 4
        proto = protos[i % 3]
        frames.append(
            build_frame_bytes(
                vlans=(100,) if i % 7 == 0 else (),
                src_ip=f"2001:db8::{i % 65536:x}"
                if v6
                else f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",
                dst_ip="2001:db8:1::1" if v6 else "10.255.0.1",
                proto=58 if (v6 and proto == IPPROTO_ICMP) else proto,
                src_port=1024 + i % 50000,
                dst_port=(53, 80, 443, 8080)[i % 4],
                size=64 + (i * 37) % 1455,
            )
        )
    return frames


def bench_prog(path: str, sec: str | None, count: int, as_json: bool, runs: int = 5) -> int:
    """Packets and instructions per CPU-second over ``count`` distinct frames, run as one
    batch ``runs`` times after a warm-up run (the median run's process CPU time)."""
    prog = _program(path, sec)
    frames = bench_frames(count)
    start = time.perf_counter()
    stats = check(prog)
    verify_s = time.perf_counter() - start
    start = time.perf_counter()
    packets = Packets.from_bytes(frames)  # the frames as test_run lays them out, once
    pack_s = time.perf_counter() - start
    result = run_batch(prog, packets)  # warm-up: compiled, memory the runs reuse
    times = []
    for _ in range(max(1, runs)):
        start = time.process_time()
        result = run_batch(prog, packets)
        times.append(time.process_time() - start)
    cpu = max(statistics.median(times), 1e-9)
    insns_static = len(prog.insns)
    doc = {
        "program": prog.name,
        "insns": insns_static,
        "packets": count,
        "insns_executed": result.insns,
        "passes": result.passes,
        "runs": len(times),
        "cpu_s": round(cpu, 4),
        "cpu_s_runs": [round(t, 4) for t in times],
        "packets_per_cpu_s": round(count / cpu, 1),
        "insns_per_cpu_s": round(result.insns / cpu, 1),
        "verifier_processed": stats.processed,
        "verifier_total_states": stats.total_states,
        "verifier_peak_states": stats.peak_states,
        "verifier_max_states_per_insn": stats.max_states_per_insn,
        "verifier_s": round(verify_s, 4),
        "pack_s": round(pack_s, 4),
    }
    if as_json:
        print(json.dumps(doc))
        return 0
    print(f"program             {prog.name} ({insns_static} insns)")
    print(f"packets             {count:,} distinct, packed in {pack_s:.3f} s (not timed)")
    print(f"instructions run    {result.insns:,} ({result.insns / count:.1f} per packet)")
    print(f"batch passes        {result.passes}")
    print(f"CPU time            {cpu:.3f} s (median of {len(times)} runs after a warm-up)")
    print(f"packets / CPU-s     {count / cpu:,.0f}")
    print(f"instructions / CPU-s {result.insns / cpu:,.0f}")
    print(
        f"verifier            processed {stats.processed} insns, total_states "
        f"{stats.total_states}, peak_states {stats.peak_states}, max_states_per_insn "
        f"{stats.max_states_per_insn}, in {verify_s:.3f} s"
    )
    return 0
