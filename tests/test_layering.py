"""The headless core never imports the UI (harlequin's rule, checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "xdptui.model",
    "xdptui.sim",
    "xdptui.sim.engine",
    "xdptui.commands",
    "xdptui.topology_io",
    "xdptui.report",
    "xdptui.reproduce",
    "xdptui.cli",
]


def test_headless_core_imports_no_textual_or_rich():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "ui = ('textual', 'rich', 'widgets', 'xdptui.widgets', 'xdptui.app')\n"
        + "bad = sorted(m for m in sys.modules if m.startswith(ui))\n"
        + "print(','.join(bad))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""


def test_widgets_never_import_the_engine():
    code = (
        "import sys, importlib, pkgutil, xdptui.widgets as widgets\n"
        "for m in pkgutil.iter_modules(widgets.__path__):\n"
        "    importlib.import_module('xdptui.widgets.' + m.name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('xdptui.sim'))))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""
