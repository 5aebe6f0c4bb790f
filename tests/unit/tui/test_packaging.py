"""The console installs inside the package: `stateous.tui` in the wheel and in the editable install."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Run in a fresh interpreter with the repository taken off the path (the editable install puts
# it there), so that only the installed wheel in `target` can answer the imports.
WHEEL_ONLY = """
import importlib.util, sys
target, root = sys.argv[1], sys.argv[2]
sys.path[:] = [target] + [p for p in sys.path if p not in ("", root)]
import stateous.tui.app
print(stateous.tui.app.__file__)
print(importlib.util.find_spec("tui") is None)
"""


def _build_wheel(into: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(into), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = into.glob("stateous-*.whl")
    return wheel


def test_the_wheel_holds_the_console_under_stateous_only(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "wheel")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"stateous", "stateous-0.3.0.dist-info"}
    console = sorted(n for n in names if n.startswith("stateous/tui/"))
    expected = sorted(
        "stateous/" + str(path.relative_to(ROOT)).replace("\\", "/")
        for path in (ROOT / "tui").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    assert console == expected
    assert "stateous/tui/app.tcss" in console

    target = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert installed.returncode == 0, installed.stderr
    imported = subprocess.run(
        [sys.executable, "-c", WHEEL_ONLY, str(target), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.splitlines() == [str(target / "stateous" / "tui" / "app.py"), "True"]


def test_the_editable_install_imports_the_console_from_the_tui_folder(tmp_path: Path) -> None:
    imported = subprocess.run(
        [sys.executable, "-c", "import stateous.tui.app as a; print(a.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,  # not the repository: the install, not the working directory, finds it
    )
    assert imported.returncode == 0, imported.stderr
    found = Path(imported.stdout.strip())
    assert found == ROOT / "stateous" / "tui" / "app.py"
    assert found.resolve() == ROOT / "tui" / "app.py"
