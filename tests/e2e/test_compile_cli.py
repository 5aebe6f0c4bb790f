"""`stateous compile` as a real process: outputs, files and exit codes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.unit.model import reference as ref

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compile_writes_the_default_path(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "sdlc", tmp_path / "sdlc", ignore=shutil.ignore_patterns("build"))
    result = run("compile", "sdlc/flow.py", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "wrote sdlc/build/sdlc.json\n",
        "",
    )
    assert (tmp_path / "sdlc" / "build" / "sdlc.json").read_bytes() == ref.SDLC_GRAPH.encode()


def test_compile_out(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "parallel", tmp_path / "p", ignore=shutil.ignore_patterns("build"))
    result = run("compile", "p/flow.py", "--out", "graphs/dev.json", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "wrote graphs/dev.json\n")
    assert (tmp_path / "graphs" / "dev.json").read_text() == (
        EXAMPLES / "parallel" / "build" / "dev.json"
    ).read_text()


def test_invalid_workflow_listing_and_no_file(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(
        "from stateous import END, START, Workflow\n"
        "flow = Workflow('orders')\n"
        "a = flow.state('a')\n"
        "b = flow.state('shipping')\n"
        "flow.transition(START, a)\n"
        "flow.transition(a, END, on='timeout')\n"
    )
    result = run("compile", "flow.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: workflow 'orders' is not valid:\n  - state 'shipping' cannot be reached from START\n"
    )
    assert not (tmp_path / "build").exists()


def test_load_errors_are_one_line(tmp_path: Path) -> None:
    result = run("compile", "missing.py", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, "error: missing.py: no such file\n")
    (tmp_path / "flow.py").write_text("import nonexistent_mod\n")
    result = run("compile", "flow.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {tmp_path / 'flow.py'} does not import: ModuleNotFoundError: No module named 'nonexistent_mod'\n"
    )
    (tmp_path / "flow.py").write_text(
        "from stateous import Workflow\nWorkflow('x').state('r', timeout='2 hours')\n"
    )
    result = run("compile", "flow.py", cwd=tmp_path)
    assert (
        result.stderr
        == "error: state 'r': '2 hours' is not a duration; write e.g. '30s', '10m', '2h', '1d'\n"
    )
    assert "Traceback" not in result.stderr


def test_cannot_write(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "sdlc", tmp_path / "sdlc", ignore=shutil.ignore_patterns("build"))
    (tmp_path / "blocker").write_text("")
    result = run("compile", "sdlc/flow.py", "--out", "blocker/x.json", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot write blocker/x.json: ")


def test_usage_error(tmp_path: Path) -> None:
    assert run("compile", cwd=tmp_path).returncode == 2
    assert run("compile", "a.py", "--bogus", cwd=tmp_path).returncode == 2
