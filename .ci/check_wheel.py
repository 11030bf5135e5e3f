"""Fail when a wheel ships a top-level package other than ``xdptui``, lacks a package of the
checkout (a directory of ``xdptui/`` with an ``__init__.py``), lacks a module where the build's
``package-dir`` puts it (``widgets/x.py`` as ``xdptui/widgets/x.py``) or lacks its data files."""

from __future__ import annotations

import sys
import zipfile

from tree import ROOT, layout

REQUIRED = (
    "xdptui/py.typed",
    "xdptui/app.tcss",
    "xdptui/topologies/dual_port.yaml",
    "xdptui/examples/bpf/mac_swap.c",
    "xdptui/examples/bpf/Makefile",
)


def main(path: str) -> int:
    names = zipfile.ZipFile(path).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    problems = [f"top-level entry {t!r} besides xdptui" for t in sorted(tops - {"xdptui"})]
    problems += [f"missing {r}" for r in REQUIRED if r not in names]
    for init in sorted((ROOT / "xdptui").rglob("__init__.py")):
        rel = init.relative_to(ROOT)
        if rel.as_posix() not in names:
            problems.append(f"missing package {rel.parent.as_posix()} (add it to pyproject.toml)")
    if not any(n.startswith("xdptui/widgets/") for n in names):
        problems.append("missing xdptui/widgets/")
    for installed, source in sorted(layout().items()):
        if installed.as_posix() not in names:
            problems.append(f"missing {installed.as_posix()} (from {source.relative_to(ROOT)})")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append("missing the LICENSE file in .dist-info/licenses/")
    for p in problems:
        print(f"{path}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
