"""The differential corpus: public XDP programs (tests/corpus/, SOURCES.md names each
repository and commit) built with clang, loaded by the machine's kernel (libbpf, one program
at a time: ``kernel_libbpf``) and by xdptui (``load_object`` + the verifier, what ``xdptui
check`` runs), and where both load, the same frames run through ``BPF_PROG_TEST_RUN`` and
xdptui's interpreter (``run_batch``, what ``xdptui prog run`` runs), comparing return codes,
output bytes and every map afterwards.

    sudo .venv/bin/python tests/corpus_oracle.py [--frames N] [-v]

prints the figures: programs in the corpus, kernel loads, xdptui loads (% of the kernel's),
packet runs agreeing, maps differing, false accepts (xdptui loads what the kernel refuses),
and the first refusal of each program the kernel loads and xdptui refuses, grouped.

A program is in the corpus when libbpf would load it as XDP: its section is ``xdp`` or
``xdp.frags`` or ``xdp/...``, or a name libbpf has no program type for (``xdp_stats1``,
``tx``), which a loader that picks it by name (``ip link ... sec S``) loads as XDP. Programs
in the same files for other hooks (``tp_btf/``, ``tc``, ...) are not counted.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bpf_kernel_oracle as kern  # noqa: E402
import kernel_libbpf  # noqa: E402
from bpf_corpus import corpus as crafted_frames  # noqa: E402

from xdptui.bpf import load_object  # noqa: E402
from xdptui.bpf.maps import EVENT_TYPES, MapType, kernel_map_name  # noqa: E402
from xdptui.bpf.objfile import BpfProgram  # noqa: E402
from xdptui.bpf.vm import compile_program, run_batch  # noqa: E402
from xdptui.model.errors import KernelError  # noqa: E402

CORPUS = HERE / "corpus"
# Each source's include directories (relative to tests/corpus) and forced includes, as its
# own Makefiles give them; include/ holds gnu/stubs-32.h, empty (glibc's headers ask for it
# when the target is not x86_64, and BPF is not).
FLAGS: dict[str, list[str]] = {
    "xdp-tutorial": ["-Ixdp-tutorial/common"],
    "bpf-examples": [
        "-include",
        "stddef.h",
        "-Ibpf-examples/headers",
        "-Ibpf-examples/include",
        "-Ibpf-examples/lib",
        "-Ixdp-tools/headers",
    ],
    "xdp-tools": [
        "-include",
        "stdbool.h",
        "-Ixdp-tools/headers",
        "-Ixdp-tools/lib/util",
        "-Ixdp-tools/lib/libxdp",
    ],
    "linux": [],
}
OTHER_HOOKS = re.compile(
    r"^(tp_btf|tp|tracepoint|raw_tp|raw_tracepoint|kprobe|kretprobe|uprobe|fentry|fexit|"
    r"fmod_ret|lsm|iter|struct_ops|tc|tcx|classifier|action|socket|sk_|cgroup|sockops|"
    r"flow_dissector|perf_event|syscall|netfilter|lwt_)"
)
# Helpers whose result the two sides cannot share (clock, random, CPU): runs of programs
# that call them are not compared.
CLOCK_HELPERS = {5, 7, 8, 125, 160}


def is_xdp_section(section: str) -> bool:
    return section.startswith("xdp") or not OTHER_HOOKS.match(section)


def sources() -> list[Path]:
    return sorted(CORPUS.rglob("*.c"))


def build(src: Path, out_dir: Path) -> Path | str:
    """``clang -O2 -g -target bpf`` of one source; the object, or clang's first error."""
    rel = src.relative_to(CORPUS)
    out = out_dir / (str(rel).replace("/", "__") + ".o")
    if out.exists():
        return out
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    cmd = ["clang", "-O2", "-g", "-target", "bpf", f"-I{arch}", "-Iinclude"]
    cmd += [*FLAGS[rel.parts[0]], f"-I{rel.parent}", "-c", str(rel), "-o", str(out)]
    res = subprocess.run(cmd, cwd=CORPUS, capture_output=True, text=True)
    if res.returncode != 0:
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr[:200])
        return first
    return out


def build_all(out_dir: Path | None = None) -> dict[Path, Path | str]:
    """Every source built once per content: the objects live in a directory named by a digest
    of the sources and the clang version, so a second run (or a second test) reuses them."""
    if out_dir is None:
        digest = hashlib.sha256()
        for f in sorted(CORPUS.rglob("*")):
            if f.is_file() and f.suffix in (".c", ".h"):
                digest.update(str(f.relative_to(CORPUS)).encode() + f.read_bytes())
        ver = subprocess.run(["clang", "--version"], capture_output=True, text=True).stdout
        digest.update(ver.encode())
        out_dir = Path(tempfile.gettempdir()) / f"xdptui-corpus-{digest.hexdigest()[:16]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    srcs = sources()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        built = list(pool.map(lambda src: build(src, out_dir), srcs))
    return dict(zip(srcs, built, strict=True))


@dataclass
class Outcome:
    """One program's fate on both sides."""

    obj: str  # the source, relative to tests/corpus
    section: str
    name: str
    kernel_ok: bool = False
    kernel_why: str = ""
    xdptui_ok: bool = False
    xdptui_why: str = ""
    runs: int = 0
    agree: int = 0
    maps_differ: list[str] = field(default_factory=list)
    not_run: str = ""  # why its frames were not compared
    first_difference: str = ""


def possible_cpus() -> int:
    text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    return max(int(part.split("-")[-1]) for part in text.split(",")) + 1


def xdptui_load(path: Path, name: str, ncpus: int) -> tuple[BpfProgram | None, str]:
    """The program as xdptui loads it (the ELF loader, then the verifier, as
    ``compile_program`` runs it once for the interpreter too), or the refusal."""
    try:
        prog = load_object(path, ncpus).program(name)
        compile_program(prog)
    except KernelError as exc:
        return None, f"{exc.extack} ({exc.errno.name})"
    return prog, ""


def compare_runs(
    out: Outcome, kp: kernel_libbpf.KernelProgram, prog: BpfProgram, frames: list[bytes]
) -> None:
    """The same frames both ways, pinned to CPU 0 (per-CPU maps: CPU 0's copy); then the maps."""
    if prog.expected_attach_type in ("xdp/devmap", "xdp/cpumap"):
        out.not_run = "a devmap/cpumap program: BPF_PROG_TEST_RUN refuses it (EINVAL)"
        return
    if any(i.code == 0x85 and i.src == 0 and i.imm in CLOCK_HELPERS for i in prog.insns):
        out.not_run = "reads the clock, a random number or the CPU id"
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        kernel = [kern.test_run(kp.fd, f) for f in frames]
    finally:
        os.sched_setaffinity(0, old)
    ours = run_batch(prog, frames, cpu=0)
    out.runs = len(frames)
    for i, k in enumerate(kernel):
        if (int(ours.retval[i]), ours.data[i]) == (k.retval, k.data):
            out.agree += 1
        elif not out.first_difference:
            out.first_difference = (
                f"frame {i}: xdptui {int(ours.retval[i])}, kernel {k.retval}; "
                f"bytes equal: {ours.data[i] == k.data}"
            )
    stem = Path(kp.name).name
    for m in prog.maps:
        if m.map_type in EVENT_TYPES or m.map_type in (MapType.DEVMAP, MapType.DEVMAP_HASH):
            continue
        kname = next(
            (
                n
                for n in kp.maps
                if n == m.name[:15] or (m.name.startswith(".") and n.endswith(m.name[:15]))
            ),
            None,
        )
        if kname is None:
            kname = kernel_map_name(stem, m.name)
            if kname not in kp.maps:
                continue
        fd = kp.maps[kname]
        if m.map_type in (MapType.PROG_ARRAY,) or not m.modelled:
            continue
        info = kern.map_info(fd)
        if dict(m.items()) != kern.map_items(fd, info, m.user_value_size):
            out.maps_differ.append(m.name)


def run_corpus(frames: int = 200, verbose: bool = False) -> list[Outcome]:
    """Every program of the corpus on both sides."""
    built = build_all()
    packets = crafted_frames(frames)
    ncpus = possible_cpus()
    outcomes: list[Outcome] = []
    for src, obj in built.items():
        rel = str(src.relative_to(CORPUS))
        if isinstance(obj, str):
            outcomes.append(Outcome(rel, "?", "?", kernel_why=f"clang: {obj}"))
            continue
        for section, name in kernel_libbpf.program_names(str(obj)):
            if not is_xdp_section(section):
                continue
            out = Outcome(rel, section, name)
            outcomes.append(out)
            prog, out.xdptui_why = xdptui_load(obj, name, ncpus)
            out.xdptui_ok = prog is not None
            with kernel_libbpf.LoadedProgram(str(obj), name) as kp:
                out.kernel_ok = kp.fd >= 0
                if not out.kernel_ok:
                    last = " / ".join(kp.log.splitlines()[-2:]) or (
                        "no verifier log: libbpf stopped before BPF_PROG_LOAD (a map the "
                        "object declares could not be created, e.g. max_entries 0 that its "
                        "own loader sets; or a kfunc missing from the kernel's BTF)"
                    )
                    out.kernel_why = f"{kernel_libbpf.strerror(kp.errno)}: {last}"
                elif prog is not None:
                    compare_runs(out, kp, prog, packets)
            if verbose:
                print(
                    f"{rel}:{name}: kernel {'ok' if out.kernel_ok else out.kernel_why[:80]}; "
                    f"xdptui {'ok' if out.xdptui_ok else out.xdptui_why[:80]}",
                    file=sys.stderr,
                )
    return outcomes


def reason_key(why: str) -> str:
    """A refusal's kind: the message with numbers, names in quotes and paths folded."""
    why = re.sub(r"/\S+", "PATH", why)
    why = re.sub(r"'[^']*'", "'…'", why)
    return re.sub(r"\b\d+\b", "N", why)[:110]


def report(outcomes: list[Outcome]) -> str:
    progs = [o for o in outcomes if o.section != "?"]
    kernel = [o for o in progs if o.kernel_ok]
    both = [o for o in kernel if o.xdptui_ok]
    false_accepts = [o for o in progs if o.xdptui_ok and not o.kernel_ok]
    runs = sum(o.runs for o in both)
    agree = sum(o.agree for o in both)
    maps_differ = [o for o in both if o.maps_differ]
    not_built = [o for o in outcomes if o.section == "?"]
    pct = 100.0 * len(both) / len(kernel) if kernel else 0.0
    lines = [
        f"sources built                 {built_sources(outcomes)} ({len(not_built)} not built)",
        f"programs in corpus            {len(progs)}",
        f"kernel loads                  {len(kernel)}",
        f"xdptui loads (of the kernel)  {len(both)} ({pct:.0f} %)",
        f"packet runs agreeing          {agree} of {runs}",
        f"maps differing                {len(maps_differ)}",
        f"false accepts                 {len(false_accepts)}",
    ]
    for o in false_accepts:
        lines.append(f"  false accept: {o.obj}:{o.name}: kernel {o.kernel_why[:100]}")
    for o in both:
        if o.agree != o.runs:
            lines.append(f"  runs differ: {o.obj}:{o.name}: {o.first_difference}")
        if o.maps_differ:
            lines.append(f"  maps differ: {o.obj}:{o.name}: {', '.join(o.maps_differ)}")
    skipped = [o for o in both if o.not_run]
    for o in skipped:
        lines.append(f"  not run: {o.obj}:{o.name}: {o.not_run}")
    refused = [o for o in kernel if not o.xdptui_ok]
    if refused:
        lines += ["", "| first refusal (xdptui) of a program the kernel loads | programs |"]
        lines.append("| --- | --- |")
        for why, n in Counter(reason_key(o.xdptui_why) for o in refused).most_common():
            lines.append(f"| {why} | {n} |")
        lines += ["", "programs:"]
        lines += [f"  {o.obj}:{o.name}: {o.xdptui_why[:140]}" for o in refused]
    kernel_refused = [o for o in progs if not o.kernel_ok]
    if kernel_refused:
        lines += ["", "the kernel refuses (xdptui too, unless listed as a false accept above):"]
        lines += [f"  {o.obj}:{o.name}: {o.kernel_why[:140]}" for o in kernel_refused]
    for o in not_built:
        lines.append(f"  not built: {o.obj}: {o.kernel_why[:140]}")
    return "\n".join(lines)


def built_sources(outcomes: list[Outcome]) -> int:
    return len({o.obj for o in outcomes if o.section != "?"})


def why_not() -> str | None:
    """None when the comparison can run here, else why not."""
    if shutil.which("clang") is None:
        return "clang is not installed"
    reason = kern.available()
    if reason is not None:
        return reason
    try:
        kernel_libbpf.libbpf()
    except OSError:
        return "libbpf.so.1 is not installed (apt-get install libbpf1)"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=500, help="crafted frames per program")
    ap.add_argument("-v", "--verbose", action="store_true", help="each program as it goes")
    args = ap.parse_args()
    reason = why_not()
    if reason is not None:
        print(f"corpus_oracle: cannot run here: {reason}", file=sys.stderr)
        return 2
    print(report(run_corpus(args.frames, args.verbose)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
