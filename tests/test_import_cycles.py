"""No import cycles anywhere in the package, counting every import a reader follows: those
at the top, those under ``if TYPE_CHECKING:`` and those inside functions.

A cycle is a set of modules each of which needs another to be read; the engine's rooms call
back into the core through the Protocols ``xdptui.sim.dev.netdev`` writes down, not by naming
the core's classes. Implicit imports of a parent package (``import a.b`` runs ``a``'s
``__init__``) are not edges: a package re-exporting its modules is not a cycle."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (("xdptui", ROOT / "xdptui"), ("xdptui.widgets", ROOT / "widgets"))


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``widgets/`` is ``xdptui.widgets``)."""
    out: dict[str, Path] = {}
    for name, base in PACKAGES:
        for file in sorted(base.rglob("*.py")):
            parts = [p for p in file.relative_to(base).with_suffix("").parts if p != "__init__"]
            out[".".join([name, *parts])] = file
    return out


def imported(file: Path, name: str, mods: Collection[str]) -> Iterator[str]:
    """The modules ``file`` imports, anywhere in it (relative imports resolved): ``from a
    import b`` names module ``a.b`` if there is one, else (for a name defined in ``a``) ``a``."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            subs = [f"{base}.{alias.name}" for alias in node.names]
            yield from (sub for sub in subs if sub in mods)
            if any(sub not in mods for sub in subs):
                yield base


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {
        name: {t for t in imported(file, name, mods) if t in mods and t != name}
        for name, file in mods.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_finder_sees_a_cycle_through_a_type_only_import(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.b import B\n")
    b = tmp_path / "b.py"
    b.write_text("def f():\n    from p.a import A\n")
    mods = ("p.a", "p.b")
    graph = {
        "p.a": {t for t in imported(a, "p.a", mods) if t in mods and t != "p.a"},
        "p.b": {t for t in imported(b, "p.b", mods) if t in mods and t != "p.b"},
    }
    assert cycles(graph) == [["p.a", "p.b"]]


def test_the_package_has_no_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the whole package was read, widgets included
    assert any(name.startswith("xdptui.widgets.") for name in graph)
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)
