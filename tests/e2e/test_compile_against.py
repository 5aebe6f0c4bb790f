"""`stateous compile FLOW --against OLD [--strict]` as a real process: against a graph
file and against a real `stateous serve`, with the exit codes of `--strict`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import serve_process, sqlite_url
from tests.support.graphs import SDLC, variant, write_graph

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "s3cret-token-of-the-test"

#: The lines of a migration from OLD (below) to the sdlc example.
OLD_LINES = [
    "state 'coding': changed (transitions of 'stuck' changed)",
    "state 'triage': removed (tokens there need --map triage=<state>)",
    "context: field 'repo' changed type (int → str)",
]


#: The sdlc example's schemas with a constraint on `repo` and two optional fields more.
WIDER_TICKET = """
from pydantic import BaseModel, Field


class Ticket(BaseModel):
    repo: str = Field(max_length=200)
    owner: str | None = None
    labels: list[str] = []


class Tests(BaseModel):
    passed: int
    failed: int
"""


def new_structure(url: str = "URL") -> str:
    """The last line of a graph of another structure than OLD's (`URL` when OLD is a file)."""
    return (
        "new structure: its tokens need a supervisor folder of this version; once it is "
        f"served, write one with `stateous init supervisor {url} NEW-FOLDER`"
    )


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STATEOUS_")}
    result = subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )
    return result.returncode, result.stdout, result.stderr


def sdlc(tmp_path: Path) -> Path:
    """The sdlc example without its build folder, in `tmp_path`."""
    shutil.copytree(EXAMPLES / "sdlc", tmp_path / "sdlc", ignore=shutil.ignore_patterns("build"))
    return tmp_path / "sdlc" / "build" / "sdlc.json"


def old_sdlc() -> dict[str, Any]:
    """An older sdlc: a `triage` state after `stuck`, and an integer `repo`."""
    old = variant(SDLC)
    old["states"]["triage"] = {"emits": ["done"]}
    old["transitions"][2]["to"] = "triage"
    old["transitions"].append({"from": "triage", "to": "__end__", "on": "done"})
    old["schemas"]["Ticket"]["properties"]["repo"] = {"type": "integer"}
    return old


def test_against_a_graph_file(tmp_path: Path) -> None:
    built = sdlc(tmp_path)
    old = write_graph(tmp_path, old_sdlc(), "old.json")
    code, out, err = run("compile", "sdlc/flow.py", "--against", str(old), cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["wrote sdlc/build/sdlc.json", *OLD_LINES, new_structure()]
    assert built.read_text() == (EXAMPLES / "sdlc" / "build" / "sdlc.json").read_text()
    code, out, err = run(
        "compile", "sdlc/flow.py", "--against", "old.json", "--strict", cwd=tmp_path
    )
    wrote = ["wrote sdlc/build/sdlc.json", *OLD_LINES, new_structure()]
    assert (code, out.splitlines(), err) == (1, wrote, "")


def test_strict_passes_a_change_without_removed_state_or_context(tmp_path: Path) -> None:
    sdlc(tmp_path)
    old = variant(SDLC)
    old["transitions"][4]["when"] = "count('failed') < 5"
    write_graph(tmp_path, old, "old.json")
    code, out, err = run(
        "compile", "sdlc/flow.py", "--against", "old.json", "--strict", cwd=tmp_path
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "wrote sdlc/build/sdlc.json",
        "state 'testing': changed (transitions of 'failed' changed)",
        new_structure(),
    ]


def test_optional_context_fields_alone_say_what_changed_and_what_to_run(tmp_path: Path) -> None:
    """A change that leaves every state as it was but changes the context model (an optional
    field and one with a default added, one removed, a constraint changed) makes another
    structure: `--strict` passes it, and the lines say so and what serving it needs."""
    sdlc(tmp_path)
    (tmp_path / "sdlc" / "schemas.py").write_text(WIDER_TICKET, encoding="utf-8")
    old = variant(SDLC)
    old["schemas"]["Ticket"]["properties"]["legacy"] = {"type": "string"}
    write_graph(tmp_path, old, "old.json")
    code, out, err = run(
        "compile", "sdlc/flow.py", "--against", "old.json", "--strict", cwd=tmp_path
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "wrote sdlc/build/sdlc.json",
        "context: field 'repo' changed (its default or constraints)",
        "context: field 'owner' added (default None)",
        "context: field 'labels' added (default [])",
        "context: field 'legacy' removed",
        new_structure(),
    ]


def test_the_same_graph_and_the_same_structure(tmp_path: Path) -> None:
    sdlc(tmp_path)
    write_graph(tmp_path, SDLC, "same.json")
    code, out, err = run(
        "compile", "sdlc/flow.py", "--against", "same.json", "--strict", cwd=tmp_path
    )
    assert (code, out, err) == (0, "wrote sdlc/build/sdlc.json\n", "")
    tuned = variant(SDLC)
    tuned["states"]["coding"]["retries"] = 5
    write_graph(tmp_path, tuned, "tuned.json")
    code, out, err = run(
        "compile", "sdlc/flow.py", "--against", "tuned.json", "--strict", cwd=tmp_path
    )
    assert (code, err) == (0, "")
    assert out == (
        "wrote sdlc/build/sdlc.json\n"
        "same structure: only timeout/retries changed (no migration needed)\n"
    )


def test_an_unreadable_old_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    built = sdlc(tmp_path)
    code, out, err = run("compile", "sdlc/flow.py", "--against", "missing.json", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == "error: cannot read the graph file missing.json: No such file or directory\n"
    (tmp_path / "bad.json").write_text("[1, 2]\n", encoding="utf-8")
    code, out, err = run("compile", "sdlc/flow.py", "--against", "bad.json", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == "error: bad.json is not a graph file: the graph file is not a JSON object\n"
    assert not built.exists()


def test_strict_without_against_is_a_usage_error(tmp_path: Path) -> None:
    built = sdlc(tmp_path)
    code, out, err = run("compile", "sdlc/flow.py", "--strict", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == "Error: --strict goes with --against"
    assert err.splitlines()[0].startswith("Usage: ")
    assert not built.exists()


def test_against_a_control_plane_with_an_auth_token(tmp_path: Path) -> None:
    sdlc(tmp_path)
    old = write_graph(tmp_path, old_sdlc(), "old.json")
    (tmp_path / "token.txt").write_text(TOKEN + "\n", encoding="utf-8")
    (tmp_path / "token.txt").chmod(0o600)  # serve refuses a token file others can read
    extra = ["--auth-token-file", str(tmp_path / "token.txt")]
    with serve_process(old, sqlite_url(tmp_path), cwd=tmp_path, extra=extra) as served:
        code, out, err = run("compile", "sdlc/flow.py", "--against", served.url, cwd=tmp_path)
        assert (code, out) == (1, "")
        assert err.startswith(
            f"error: cannot read the graph of {served.url}: "
            f"the control plane at {served.url} refused (401): "
        )
        assert err.count("\n") == 1
        env = {"STATEOUS_AUTH_TOKEN": TOKEN}
        args = ("compile", "sdlc/flow.py", "--against", served.url + "/", "--strict")
        code, out, err = run(*args, cwd=tmp_path, env=env)
        wrote = ["wrote sdlc/build/sdlc.json", *OLD_LINES, new_structure(served.url)]
        assert (code, out.splitlines(), err) == (1, wrote, "")
        code, out, err = run(
            "compile", "sdlc/flow.py", "--against", served.url, cwd=tmp_path, env=env
        )
        assert (code, out.splitlines(), err) == (0, wrote, "")
    for pipe in (served.process.stdout, served.process.stderr):
        if pipe is not None:
            pipe.close()


def test_against_a_control_plane_that_does_not_answer(tmp_path: Path) -> None:
    from tests.support import free_port

    built = sdlc(tmp_path)
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = run("compile", "sdlc/flow.py", "--against", url, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"error: cannot read the graph of {url}: cannot reach the control plane at {url}: "
    )
    assert err.count("\n") == 1
    assert not built.exists()
