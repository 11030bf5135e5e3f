"""The layer order (model < sim < the app; widgets never import the engine), checked twice:
statically by import-linter's contracts in pyproject.toml (lazy imports inside functions
included) and at run time in a fresh interpreter (harlequin's rule: the headless core loads
no Textual or Rich)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from test_hygiene import ROOT, in_installed_tree

# Everything but these is the headless core: importing it must not load the UI.
UI = ("xdptui.__main__", "xdptui.app", "xdptui.app_commands", "xdptui.screens", "xdptui.widgets")

CORE_MODULES = (
    "import pkgutil, xdptui, xdptui.model, xdptui.sim\n"
    f"UI = {UI!r}\n"
    "core = [\n"
    "    f'{pkg.__name__}.{m.name}'\n"
    "    for pkg in (xdptui, xdptui.model, xdptui.sim)\n"
    "    for m in pkgutil.iter_modules(pkg.__path__)\n"
    "]\n"
    "core = sorted(m for m in core if not m.startswith(UI))\n"
)


def test_import_contracts_are_kept():
    res = in_installed_tree("lint-imports")
    assert res.returncode == 0, res.stdout + res.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"Contracts: {len(contracts['contracts'])} kept, 0 broken." in res.stdout


def test_headless_core_imports_no_textual_or_rich():
    code = (
        "import importlib, sys\n"
        + CORE_MODULES
        + "for m in core:\n"
        + "    importlib.import_module(m)\n"
        + "ui = ('textual', 'rich', 'widgets') + UI\n"
        + "bad = sorted(m for m in sys.modules if m.startswith(ui))\n"
        + "print(len(core), ','.join(bad))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    count, bad = res.stdout.split(" ", 1)
    assert int(count) >= 30  # model, sim and the headless top-level modules were all found
    assert bad.strip() == ""


def test_widgets_never_import_the_engine():
    code = (
        "import sys, importlib, pkgutil, xdptui.widgets as widgets\n"
        "for m in pkgutil.iter_modules(widgets.__path__):\n"
        "    importlib.import_module('xdptui.widgets.' + m.name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('xdptui.sim'))))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""
