"""`stateous init supervisor` as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "unit" / "supervisor" / "data"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "stateous", "init", "supervisor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def graph(tmp_path: Path, name: str, doc: dict[str, Any] | None = None) -> Path:
    path = tmp_path / name
    text = (DATA / name).read_text() if doc is None else json.dumps(doc)
    path.write_text(text, encoding="utf-8")
    return path


def test_first_run_with_testing_implemented(tmp_path: Path) -> None:
    graph(tmp_path, "sdlc.json")
    folder = tmp_path / "sdlc-supervisor"
    folder.mkdir()
    (folder / "testing.py").write_text(
        (ROOT / "examples" / "sdlc-supervisor" / "testing.py").read_text(), encoding="utf-8"
    )
    done = run("sdlc.json", "sdlc-supervisor", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "wrote    sdlc-supervisor/contract.py\n"
        "wrote    sdlc-supervisor/coding.py\n"
        "kept     the routine of 'testing'\n"
        "wrote    sdlc-supervisor/stateous.yaml\n"
        "wrote    sdlc-supervisor/pyproject.toml\n"
        "\n"
        "Write the routines, then run: stateous supervise sdlc-supervisor\n"
    )
    assert (folder / "contract.py").read_text() == (DATA / "sdlc_contract.py.txt").read_text()
    assert (folder / "stateous.yaml").read_text() == (
        "# A Stateous supervisor. Run it with: stateous supervise <this folder>\n"
        'url: "http://127.0.0.1:8080"    # the control plane\n'
        "tasks: 4    # how many routines run at once\n"
        "# name: build-box-1    # optional; default: the host name\n"
    )
    assert 'name = "sdlc-supervisor"\n' in (folder / "pyproject.toml").read_text()


def test_the_many_states_example_and_a_second_run(tmp_path: Path) -> None:
    doc = json.loads((DATA / "changes.json").read_text())
    doc["states"] = {
        "coding": {"emits": ["done"]},
        "queue": {"emits": []},
        "merging": {"emits": ["merged"]},
        "security_review_triage": {"emits": []},
        "reviews": doc["states"]["reviews"],
    }
    graph(tmp_path, "many.json", doc)
    first = run("many.json", "out", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == (
        "wrote    out/contract.py\n"
        "wrote    out/coding.py\n"
        "wrote    out/queue_routine.py (queue.py would hide a Python module)\n"
        "wrote    out/merging.py\n"
        "wrote    out/security_review_triage.py\n"
        "wrote    out/security_review_triage_2.py (security_review_triage.py is the stub of "
        "'security_review_triage')\n"
        "wrote    out/design_review_triage.py\n"
        "wrote    out/stateous.yaml\n"
        "wrote    out/pyproject.toml\n"
        "\n"
        "Write the routines, then run: stateous supervise out\n"
    )
    second = run("many.json", "out", cwd=tmp_path)
    kept = [
        "coding",
        "queue",
        "merging",
        "security_review_triage",
        "security-review/triage",
        "design-review/triage",
    ]
    assert second.stdout == (
        "wrote    out/contract.py\n"
        + "".join(f"kept     the routine of '{s}'\n" for s in kept)
        + "kept     out/stateous.yaml\nkept     out/pyproject.toml\n\n"
        "Write the routines, then run: stateous supervise out\n"
    )


def test_a_flow_py_source_and_the_stateous_path(tmp_path: Path) -> None:
    done = run(
        str(ROOT / "examples" / "sdlc" / "flow.py"), "s", "--stateous-path", str(ROOT), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "s" / "contract.py").read_text() == (
        DATA / "sdlc_contract.py.txt"
    ).read_text()
    assert (
        (tmp_path / "s" / "pyproject.toml")
        .read_text()
        .endswith(
            "\n# A local checkout of Stateous: delete this table to use Stateous from PyPI.\n"
            "[tool.uv.sources]\n"
            f'stateous = {{ path = "{ROOT.resolve().as_posix()}", editable = true }}\n'
        )
    )


def test_errors(tmp_path: Path) -> None:
    def error(*args: str) -> str:
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        return done.stderr

    graph(tmp_path, "sdlc.json")
    assert error("sdlc.json", "x", "--stateous-path", str(tmp_path)) == (
        f"error: --stateous-path {tmp_path} is not a Stateous checkout: give the folder that "
        "holds its pyproject.toml\n"
    )
    assert error("nope.json", "x") == (
        "error: nope.json does not exist: give a control plane's URL (http:// or https://), "
        "a graph file or a flow.py\n"
    )
    (tmp_path / "graph.txt").write_text("{}")
    assert error("graph.txt", "x") == "error: graph.txt is not a graph file (.json) or a flow.py\n"
    (tmp_path / "bad.json").write_text("{")
    assert error("bad.json", "x").startswith(
        "error: cannot read bad.json: the graph file is not valid JSON"
    )
    (tmp_path / "old.json").write_text('{"stateous": 2}')
    assert error("old.json", "x") == (
        "error: cannot use old.json: the graph file has no 'workflow'; run `stateous compile` again\n"
    )
    doc = json.loads((DATA / "sdlc.json").read_text())
    doc["schemas"]["Ticket"]["properties"]["not ok"] = {"type": "string"}
    graph(tmp_path, "field.json", doc)
    assert error("field.json", "x") == (
        "error: cannot write a contract for the workflow of field.json: the field 'not ok' of "
        "Ticket cannot be used as a Python name\n"
    )
    assert error("http://127.0.0.1:9", "x").startswith(
        "error: cannot fetch the workflow from http://127.0.0.1:9: "
    )
    assert not (tmp_path / "x").exists()


def _two_versions_sharing_a_digit() -> tuple[dict[str, Any], dict[str, Any], str]:
    """Two graphs of the orders workflow that differ only in a timeout, whose checksums start
    with the same hex digit (one of 17 timeouts always does), and that digit."""
    from stateous.model.graph import load_graph
    from tests.support.graphs import ORDERS, graph_text, variant

    seen: dict[str, dict[str, Any]] = {}
    for minutes in range(1, 18):
        doc = variant(ORDERS)
        doc["states"]["draft"]["timeout"] = f"{minutes}m"
        digit = load_graph(graph_text(doc)).checksum[7]
        if digit in seen:
            return seen[digit], doc, digit
        seen[digit] = doc
    raise AssertionError("17 checksums with 16 first digits: two share one")


def test_checksum_by_a_prefix_as_versions_shows_it(tmp_path: Path) -> None:
    """`--checksum` takes the 12 hex digits `stateous versions` prints (with or without
    `sha256:`); an ambiguous prefix names its candidates, an unknown one says so."""
    from stateous.model.graph import load_graph
    from tests.support import serve_process, sqlite_url
    from tests.support.graphs import graph_text, write_graph

    first, second, digit = _two_versions_sharing_a_digit()
    old = load_graph(graph_text(first)).checksum
    new = load_graph(graph_text(second)).checksum
    db = sqlite_url(tmp_path)
    with serve_process(write_graph(tmp_path, first, "first.json"), db, cwd=tmp_path):
        pass
    with serve_process(write_graph(tmp_path, second, "second.json"), db, cwd=tmp_path) as plane:
        url = plane.url
        for given, folder in ((old[7:19], "by-digits"), ("sha256:" + old[7:19], "by-name")):
            done = run(url, folder, "--checksum", given, cwd=tmp_path)
            assert (done.returncode, done.stderr) == (0, ""), done.stderr
            contract = (tmp_path / folder / "contract.py").read_text()
            assert f'__checksum__ = "{old}"' in contract
        ambiguous = run(url, "both", "--checksum", digit, cwd=tmp_path)
        assert (ambiguous.returncode, ambiguous.stdout, ambiguous.stderr) == (
            1,
            "",
            f"error: {digit} names 2 versions (sha256:{new[7:19]}…, sha256:{old[7:19]}…); "
            "give more digits\n",
        )
        other = "0" if digit != "0" else "1"
        unknown = run(url, "none", "--checksum", other * 12, cwd=tmp_path)
        assert (unknown.returncode, unknown.stdout, unknown.stderr) == (
            1,
            "",
            f"error: {url} never served a version that starts with {other * 12}: "
            f"`stateous versions --url {url}` lists the versions on record\n",
        )
    assert not (tmp_path / "both").exists() and not (tmp_path / "none").exists()
