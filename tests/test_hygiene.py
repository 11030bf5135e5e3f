"""ruff, mypy --strict and the dead-code check stay clean: part of the test command so CI
enforces them. Under CI (``CI`` set) a missing tool fails; elsewhere it skips."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """The path of a dev tool: next to this interpreter, else on PATH.

    Missing, it fails the test when ``CI`` is set (CI must not go green without the check) and
    skips it otherwise."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is not None:
        return found
    reason = f"{name} is not installed (pip install -e '.[dev]')"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, so the check cannot be skipped", pytrace=False)
    pytest.skip(reason)


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_and_format_are_clean():
    res = run(tool("ruff"), "check", "--no-cache", "xdptui", "widgets", "tests", ".ci")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run(tool("ruff"), "format", "--check", "xdptui", "widgets", "tests", ".ci")
    assert res.returncode == 0, res.stdout + res.stderr


def in_installed_tree(name: str) -> subprocess.CompletedProcess[str]:
    """Run mypy or lint-imports on the package as the wheel lays it out (``.ci/tree.py``):
    ``widgets/`` is ``xdptui.widgets`` only through the build's ``package-dir``."""
    tool(name)
    return run(sys.executable, str(ROOT / ".ci" / "tree.py"), name)


def test_mypy_strict_is_clean():
    res = in_installed_tree("mypy")
    assert res.returncode == 0, res.stdout + res.stderr
    checked = re.search(r"in (\d+) source files", res.stdout)
    widgets = len(list((ROOT / "widgets").glob("*.py")))
    assert checked is not None and int(checked[1]) > widgets  # the widgets were checked too


def test_no_dead_code():
    """vulture over xdptui and widgets (``[tool.vulture]``: min confidence 60, the names
    Textual calls by convention, and tests/vulture_allow.py for the rest) reports nothing."""
    res = run(tool("vulture"))
    assert res.returncode == 0 and res.stdout.strip() == "", res.stdout + res.stderr


def test_missing_tool_fails_under_ci(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys.modules[__name__], "BIN", Path("/nonexistent"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        tool("ruff")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        tool("ruff")
