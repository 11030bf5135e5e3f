"""The package as a user installs it: version, bundled topologies, no stray top-level names."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import tomllib
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path

import pytest

from xdptui.topology_io import load_topology

ROOT = Path(__file__).resolve().parent.parent


def xdptui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xdptui", *args], cwd=cwd, capture_output=True, text=True
    )


def test_version_flag_prints_the_package_metadata_version(tmp_path: Path) -> None:
    res = xdptui("--version", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert res.stdout.strip() == f"xdptui {declared}" == f"xdptui {version('xdptui')}"


def test_every_shipped_topology_is_package_data() -> None:
    shipped = {p.name for p in (ROOT / "topologies").glob("*.yaml")}
    bundled = {r.name for r in files("xdptui.topologies").iterdir() if r.name.endswith(".yaml")}
    assert shipped == bundled
    assert "dual_port.yaml" in bundled


def test_run_and_check_without_a_file_use_the_bundled_dual_port(tmp_path: Path) -> None:
    res = xdptui("check", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "dual-port bond hairpin" in res.stdout
    res = xdptui("run", "--duration", "1ms", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("dual-port bond hairpin: 1ms simulated")


def test_the_bundled_default_loads_from_the_package() -> None:
    topo = load_topology(Path(str(files("xdptui.topologies") / "dual_port.yaml")))
    assert topo.name == "dual-port bond hairpin"


def test_widgets_are_only_importable_inside_the_package(tmp_path: Path) -> None:
    code = (
        "import importlib.util as u; print(u.find_spec('widgets'), u.find_spec('xdptui.widgets'))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    top, inside = res.stdout.split(" ", 1)
    assert top == "None"
    assert inside.startswith("ModuleSpec(name='xdptui.widgets'")


def test_the_package_is_marked_typed() -> None:
    assert (files("xdptui") / "py.typed").is_file()


def test_widgets_stay_at_the_top_of_the_checkout_with_no_link_inside_the_package() -> None:
    assert (ROOT / "widgets" / "__init__.py").is_file()
    assert not os.path.lexists(ROOT / "xdptui" / "widgets")


def test_an_editable_install_imports_widgets_as_xdptui_widgets(tmp_path: Path) -> None:
    """The README's set-up (``pip install -e .``): the editable finder maps ``xdptui.widgets``
    to the checkout's ``widgets/``, from any directory."""
    import xdptui

    if Path(xdptui.__file__).parent != ROOT / "xdptui":
        pytest.skip("xdptui is not installed editable from this checkout")
    code = "import xdptui.widgets.rates as m; print(m.__file__)"
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert Path(res.stdout.strip()) == ROOT / "widgets" / "rates.py"


def test_the_wheel_imports_widgets_as_xdptui_widgets(tmp_path: Path) -> None:
    """The wheel as built from this checkout holds every module where the build puts it
    (``.ci/check_wheel.py``), and ``xdptui.widgets`` imports from the wheel itself: an
    interpreter without the editable finder (``-S``: no ``.pth`` files), the wheel first on
    its path, the dependencies after it."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the build package is not installed (pip install -e '.[dev]')")
    dist = tmp_path / "dist"
    res = subprocess.run(
        [sys.executable, "-m", "build", "-q", "--wheel", "--outdir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = dist.glob("xdptui-*.whl")
    check = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "check_wheel.py"), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(wheel)!r}]\n"
        f"sys.path.append({sysconfig.get_paths()['purelib']!r})\n"
        f"sys.path.append({sysconfig.get_paths()['platlib']!r})\n"
        "import xdptui.widgets.rates as m, xdptui.app\n"
        "print(m.__file__)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    res = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=empty, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(wheel / "xdptui" / "widgets" / "rates.py")
