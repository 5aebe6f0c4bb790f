"""`stateous token start --file FILE` as a real process against a real `serve`:
JSON Lines, CSV, bad lines, the summary and each refusal, and the exit code."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_token_commands import serving, stateous
from tests.support import ServeProcess

BAD_ID = "a token id is a letter or digit, then up to 127 letters, digits, '.', '_' or '-'"


@pytest.fixture
def cp(tmp_path: Path) -> Iterator[ServeProcess]:
    """`serve` of sdlc (context `Ticket`: `repo`, a string) on an empty SQLite file."""
    with serving(tmp_path) as served:
        yield served


def refusal_of(url: str, body: dict[str, object]) -> str:
    """The sentence `POST /tokens` answers for `body` (the same the batch gives)."""
    answer = httpx.post(f"{url}/tokens", json=body, timeout=10)
    assert answer.status_code == 422
    return str(answer.json()["error"])


def test_a_json_lines_file(cp: ServeProcess, tmp_path: Path) -> None:
    assert httpx.post(f"{cp.url}/tokens", json={"token": "T-0", "context": {"repo": "r"}})
    bad_context = refusal_of(cp.url, {"token": "X-9", "context": {"repo": 5}})
    lines = [
        json.dumps({"token": "T-1", "context": {"repo": "a"}}),
        json.dumps({"token": "T-0", "context": {"repo": "ignored"}}),
        "",
        "{not json",
        "[1, 2]",
        json.dumps({"token": "-bad", "context": {"repo": "a"}}),
        json.dumps({"token": "T-2", "context": {"repo": 5}}),
        json.dumps({"token": 7, "context": {"repo": "a"}}),
        json.dumps({"token": "T-1", "context": {"repo": "again"}}),
        json.dumps({"token": "T-3", "context": {"repo": "c"}}),
    ]
    path = tmp_path / "starts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = stateous("token", "start", "--file", str(path), url=cp.url)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "started 2, already there 2, refused 5",
        "4: -: the line is not JSON: Expecting property name enclosed in double quotes",
        '5: -: the line is not a JSON object such as {"token": "T-1", "context": {...}}',
        f"6: -bad: {BAD_ID}",
        f"7: T-2: {bad_context}",
        "8: 7: 'token' is the token's id: a string",
    ]
    tokens = httpx.get(f"{cp.url}/tokens").json()
    assert sorted((t["token"], t["context"]["repo"]) for t in tokens) == [
        ("T-0", "r"),
        ("T-1", "a"),
        ("T-3", "c"),
    ]
    # The same file again: every good line is there already, nothing starts twice.
    code, out, _ = stateous("token", "start", "--file", str(path), url=cp.url)
    assert out.splitlines()[0] == "started 0, already there 4, refused 5"
    history = httpx.get(f"{cp.url}/tokens/T-1/history").json()
    kinds = ["started", "event_accepted", "entered", "task_queued", "timer_set"]
    assert [e["kind"] for e in history] == kinds


def test_a_csv_file(cp: ServeProcess, tmp_path: Path) -> None:
    path = tmp_path / "starts.csv"
    path.write_text(
        "token,repo,note\n"
        'C-1,acme/api,"a, quoted ""note"""\n'
        "C-2,42,\n"
        "\n"
        "C-3,acme/web,x,extra\n"
        "C-4\n"
        '"C-5","""42""",\n'
    )
    bad_context = refusal_of(cp.url, {"token": "X-9", "context": {"repo": 42}})
    code, out, err = stateous("token", "start", "--file", str(path), url=cp.url)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "started 2, already there 0, refused 3",
        f"3: C-2: {bad_context}",
        "5: C-3: the line has 4 fields; the first line names 3",
        "6: C-4: the line has 1 fields; the first line names 3",
    ]
    c1 = httpx.get(f"{cp.url}/tokens/C-1").json()
    assert c1["context"] == {"repo": "acme/api", "note": 'a, quoted "note"'}
    assert httpx.get(f"{cp.url}/tokens/C-5").json()["context"] == {"repo": "42"}


def test_a_clean_file_exits_0(cp: ServeProcess, tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text(
        "".join(
            json.dumps({"token": f"M-{n}", "context": {"repo": "r"}}) + "\n" for n in range(1200)
        )
    )
    code, out, err = stateous("token", "start", "--file", str(path), url=cp.url)
    assert (code, out, err) == (0, "started 1200, already there 0, refused 0\n", "")
    assert len(httpx.get(f"{cp.url}/tokens", params={"limit": 1000}).json()) == 1000


def test_a_file_without_a_token_column_or_not_there(cp: ServeProcess, tmp_path: Path) -> None:
    path = tmp_path / "starts.csv"
    path.write_text("id,repo\nA,b\n")
    assert stateous("token", "start", "--file", str(path), url=cp.url) == (
        1,
        "",
        f"error: {path} has no 'token' column in its first line\n",
    )
    missing = tmp_path / "nope.jsonl"
    assert stateous("token", "start", "--file", str(missing), url=cp.url) == (
        1,
        "",
        f"error: cannot read {missing}: No such file or directory\n",
    )


def test_an_id_and_a_file_or_neither(cp: ServeProcess, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("")
    code, out, err = stateous("token", "start", "T-1", "--file", str(path), url=cp.url)
    assert (code, out) == (2, "")
    assert err.startswith("Usage: stateous token start ")
    assert err.endswith("\nError: give a token ID or --file, not both\n")
    code, out, err = stateous("token", "start", url=cp.url)
    assert (code, out) == (2, "")
    assert "Missing argument 'ID'" in err
    assert stateous("token", "start", "--file", str(path), url=cp.url) == (
        0,
        "started 0, already there 0, refused 0\n",
        "",
    )


def test_a_progress_bar_on_a_terminal(cp: ServeProcess, tmp_path: Path) -> None:
    path = tmp_path / "bar.jsonl"
    path.write_text(
        "".join(
            json.dumps({"token": f"P-{n}", "context": {"repo": "r"}}) + "\n" for n in range(600)
        )
    )
    main, other = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "STATEOUS_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "token", "start", "--file", str(path), "--url", cp.url],
        stdout=subprocess.PIPE,
        stderr=other,
        env={**env, "COLUMNS": "80", "TERM": "xterm"},
        timeout=60,
        check=False,
    )
    os.close(other)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert done.returncode == 0
    assert done.stdout == b"started 600, already there 0, refused 0\n"
    assert b"starting" in seen and b"600/600" in seen
