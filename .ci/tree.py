"""Run mypy or import-linter on the package as the wheel lays it out.

The checkout keeps ``widgets/`` and ``topologies/`` at the top, and the build installs them as
``xdptui.widgets`` and ``xdptui.topologies`` (``[tool.setuptools] package-dir``). Tools that
find modules by name on disk (mypy, import-linter's grimp) cannot see that mapping, so this
script builds the installed layout under ``build/tree/`` from ``pyproject.toml`` -- hard links
to the checkout's files, refreshed on every run -- runs the tool there with the checkout's
configuration, and prints its output with the checkout's paths.

    .venv/bin/python .ci/tree.py mypy
    .venv/bin/python .ci/tree.py lint-imports
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "tree"
CONFIG_FLAG = {"mypy": ["--config-file"], "lint-imports": []}  # lint-imports: positional
SUFFIXES = (".py", ".pyi")
MARKERS = ("py.typed",)


def layout(root: Path = ROOT) -> dict[Path, Path]:
    """Installed path (relative to site-packages) -> checkout file, for every module and
    ``py.typed`` of every package ``pyproject.toml`` lists, through its ``package-dir``."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = config.get("package-dir", {})
    out: dict[Path, Path] = {}
    for package in config["packages"]:
        source = _source_dir(package, package_dir)
        for file in sorted((root / source).iterdir()):
            if file.is_file() and (file.suffix in SUFFIXES or file.name in MARKERS):
                out[Path(*package.split("."), file.name)] = file
    return out


def _source_dir(package: str, package_dir: dict[str, str]) -> str:
    """Where setuptools takes ``package`` from: its own ``package-dir`` entry, else its
    parent's directory plus its last name, else its dotted path."""
    if package in package_dir:
        return package_dir[package]
    parent, _, name = package.rpartition(".")
    if parent:
        return f"{_source_dir(parent, package_dir)}/{name}"
    return package_dir.get("", ".") + "/" + package if "" in package_dir else package


def build(tree: Path = TREE, root: Path = ROOT) -> Path:
    """Make ``tree`` hold exactly the installed layout (links where the file system allows,
    copies elsewhere); files already linked to the right file stay."""
    wanted = layout(root)
    for rel, source in wanted.items():
        target = tree / rel
        if target.exists() and os.path.samefile(target, source):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
    for path in sorted(tree.rglob("*"), reverse=True):
        rel = path.relative_to(tree)
        if path.is_file() and rel not in wanted and rel.parts[0] in {r.parts[0] for r in wanted}:
            path.unlink()
        elif path.is_dir() and path.name != "__pycache__" and not any(path.iterdir()):
            path.rmdir()
    return tree


def checkout_paths(text: str, root: Path = ROOT) -> str:
    """``text`` with installed paths (``xdptui/widgets/x.py``) as checkout paths
    (``widgets/x.py``)."""
    moved = sorted(
        (
            (rel.as_posix(), source.relative_to(root).as_posix())
            for rel, source in layout(root).items()
            if rel.as_posix() != source.relative_to(root).as_posix()
        ),
        key=lambda pair: -len(pair[0]),
    )
    for installed, checkout in moved:
        text = text.replace(installed, checkout)
    return text


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CONFIG_FLAG:
        print(f"usage: tree.py {{{'|'.join(CONFIG_FLAG)}}} [ARGS...]", file=sys.stderr)
        return 2
    tool, *args = argv
    exe = Path(sys.executable).parent / tool
    command = [str(exe) if exe.exists() else tool, *CONFIG_FLAG[tool], str(ROOT / "pyproject.toml")]
    if tool == "mypy":
        command += ["--cache-dir", str(ROOT / ".mypy_cache" / "tree")]
    res = subprocess.run(
        [*command, *args], cwd=build(), capture_output=True, text=True, check=False
    )
    sys.stdout.write(checkout_paths(res.stdout))
    sys.stderr.write(checkout_paths(res.stderr))
    return res.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
