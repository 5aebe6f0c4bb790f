"""`stateous prune` and `stateous import` as real processes against a real `stateous serve`,
on SQLite and Postgres: export, prune, import (into the database, or over HTTP) gives back the
same bytes and the same rows."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select

from stateous.cli.prune import human_bytes
from stateous.control.store import tables
from stateous.control.store.db import mask_url, normalize_url
from tests.e2e.test_bulk_commands import in_terminal
from tests.support import ServeProcess, serve_process
from tests.support.graphs import DEV, variant, write_graph

REPO = {"repo": "acme/api"}
#: The end of import's summary for tokens of a graph the database has never served.
PENDING = (
    "are of a graph this database has not served: their search keys are indexed at its first serve"
)


@pytest.fixture
def served(db_url: str, tmp_path: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of the `dev` workflow (a state with two children) on `db_url`."""
    graph = write_graph(tmp_path, DEV)
    with serve_process(graph, db_url, cwd=tmp_path) as running:
        try:
            yield running
        finally:
            running.stop()
            for pipe in (running.process.stdout, running.process.stderr):
                if pipe is not None:
                    pipe.close()


def run(*args: str, token: str | None = None) -> tuple[int, list[str], str]:
    """`python -m stateous ARGS` with no terminal on stdin: (code, stdout lines, stderr);
    `token`: the bearer token (`STATEOUS_AUTH_TOKEN`)."""
    left_out = ("STATEOUS_URL", "STATEOUS_ACTOR", "STATEOUS_AUTH_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in left_out}
    if token is not None:
        env["STATEOUS_AUTH_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout.splitlines(), done.stderr


def post(url: str, path: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = httpx.post(url + path, json=body, timeout=30)
    assert answer.status_code == status, answer.text
    return answer.json()


def make_tokens(url: str) -> None:
    """A (cancelled in `reviews`, with two children), B and C (cancelled), LIVE (active)."""
    post(url, "/tokens", {"token": "A", "context": REPO}, 201)
    grant = post(url, "/tasks/claim", {"supervisor": "box", "states": ["coding"]})
    post(url, f"/tasks/{grant['task']}/report", {"kind": "event", "event": "done"})
    for token in ("B", "C", "LIVE"):
        post(url, "/tokens", {"token": token, "context": REPO}, 201)
    for token in ("A", "B", "C"):
        post(url, f"/tokens/{token}/cancel", {"by": {"actor": "alice", "reason": "old"}})


def read_back(url: str, token: str) -> list[bytes]:
    """The bytes the read routes answer for a token, its history and its children's."""
    got = [
        httpx.get(f"{url}/tokens/{token}", timeout=30),
        httpx.get(f"{url}/tokens/{token}/history", timeout=30),
    ]
    assert [answer.status_code for answer in got] == [200, 200], token
    children = httpx.get(f"{url}/tokens", params={"parent": token}, timeout=30).json()
    found = [answer.content for answer in got]
    for child in sorted(c["token"] for c in children):
        found.extend(read_back(url, child))
    return found


def soon() -> str:
    return (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def gone(url: str, token: str) -> bool:
    return httpx.get(f"{url}/tokens/{token}", timeout=30).status_code == 404


def test_prune_with_export_then_import_gives_back_the_same_bytes(
    served: ServeProcess, db_url: str, tmp_path: Path
) -> None:
    url = served.url
    make_tokens(url)
    before = {token: read_back(url, token) for token in ("A", "B", "C")}
    audit = httpx.get(f"{url}/audit", timeout=30).content
    assert len(httpx.get(f"{url}/audit", timeout=30).json()) == 3
    cutoff = soon()
    code, out, err = run("prune", "--ended-before", cutoff, "--dry-run", "--url", url)
    file = tmp_path / "archive.jsonl.gz"
    assert (code, err) == (0, "")
    assert not file.exists() and not gone(url, "A")
    code, out2, err = run("prune", "--ended-before", cutoff, "--export", str(file), "--url", url)
    assert (code, err) == (0, ""), err
    lines = gzip.decompress(file.read_bytes()).splitlines(keepends=True)
    size = human_bytes(sum(len(line) for line in lines))
    assert out == [f"would prune 3 tokens ({size} of history) ended before {cutoff}"]
    assert out2 == [f"pruned 3 tokens ({size} of history) into {file}"]
    entries = [json.loads(line) for line in lines]
    assert [e["token"]["token"] for e in entries] == ["A", "B", "C"]
    assert [c["token"]["token"] for c in entries[0]["children"]] == [
        "A.reviews.1.design-review",
        "A.reviews.1.security-review",
    ]
    assert all(gone(url, token) for token in ("A", "B", "C", "A.reviews.1.design-review"))
    assert not gone(url, "LIVE")
    assert run("import", str(file), "--db", db_url) == (
        0, [f"imported 3 tokens into {mask_url(db_url)}, skipped 0 (already there)"], "",
    )  # fmt: skip
    assert {token: read_back(url, token) for token in ("A", "B", "C")} == before
    assert httpx.get(f"{url}/audit", timeout=30).content == audit
    assert run("import", str(file), "--db", db_url) == (
        0, [f"imported 0 tokens into {mask_url(db_url)}, skipped 3 (already there)"], "",
    )  # fmt: skip


def test_no_prune_without_the_file_or_an_answer(served: ServeProcess, tmp_path: Path) -> None:
    url = served.url
    make_tokens(url)
    cutoff = soon()
    missing = tmp_path / "no-such-folder" / "archive.jsonl"
    code, out, err = run("prune", "--ended-before", cutoff, "--export", str(missing), "--url", url)
    assert (code, out) == (1, [])
    assert err == (
        f"error: cannot write {missing}: No such file or directory; the tokens not written stay\n"
    )
    assert run("prune", "--ended-before", cutoff, "--url", url) == (
        1, [], "error: pruning 3 tokens without --export needs a yes, and there is no terminal "
        "to ask in; add --yes\n",
    )  # fmt: skip
    assert in_terminal("n", "prune", "--ended-before", cutoff, url=url) == (
        0, "prune 3 tokens and their history for good? [y/N] nothing pruned\n",
    )  # fmt: skip
    assert not gone(url, "A")
    code, out, err = run("prune", "--ended-before", cutoff, "--yes", "--url", url)
    assert (code, err) == (0, "")
    assert len(out) == 1 and out[0].startswith("pruned 3 tokens (") and "into" not in out[0]
    assert gone(url, "A") and not gone(url, "LIVE")
    assert run("prune", "--ended-before", "90d", "--yes", "--url", url) == (
        0, ["pruned 0 tokens (0 B of history)"], "",
    )  # fmt: skip


def test_import_refusals(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"token": {}}\n')
    db = f"sqlite:///{tmp_path / 'archive.db'}"
    code, out, err = run("import", str(bad), "--db", db, "--url", "http://127.0.0.1:1")
    assert (code, out) == (2, [])
    assert err.endswith("Error: give --db URL or --url URL, not both\n")
    assert run("import", str(tmp_path / "none.jsonl"), "--db", db) == (
        1, [], f"error: there is no file {tmp_path / 'none.jsonl'}\n",
    )  # fmt: skip
    assert run("import", str(bad), "--url", "http://127.0.0.1:1") == (
        1, [], f"error: line 1 of {bad} is not an export entry: an export entry is an object "
        "with 'token', 'history' and 'children'\n",
    )  # fmt: skip
    assert list(tmp_path.iterdir()) == [bad]


def test_a_failed_import_removes_the_database_it_made_and_no_other(
    served: ServeProcess, tmp_path: Path
) -> None:
    make_tokens(served.url)
    file = tmp_path / "archive.jsonl"
    code, _, err = run(
        "prune", "--ended-before", soon(), "--export", str(file), "--url", served.url
    )
    assert (code, err) == (0, "")
    good = file.read_bytes()
    file.write_bytes(good + b"[1]\n")  # three tokens, then a line that is no entry
    sentence = (
        f"error: line 4 of {file} is not an export entry: an export entry is an object with "
        "'token', 'history' and 'children'\n"
    )
    folder = tmp_path / "new"
    folder.mkdir()
    archive = f"sqlite:///{folder / 'archive.db'}"
    assert run("import", str(file), "--db", archive) == (1, [], sentence)
    assert list(folder.iterdir()) == []
    # Neither flag: ./stateous.db, made in the working folder, and removed as well.
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "import", str(file)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=folder,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (1, "", sentence)
    assert list(folder.iterdir()) == []
    # A database that was there stays, with what the lines before the bad one put in it.
    file.write_bytes(good)
    assert run("import", str(file), "--db", archive)[:2] == (
        0, [f"imported 3 tokens into {archive}, skipped 0 (already there); 3 {PENDING}"],
    )  # fmt: skip
    file.write_bytes(good + b"[1]\n")
    assert run("import", str(file), "--db", archive) == (1, [], sentence)
    assert sorted(path.name for path in folder.iterdir())[:1] == ["archive.db"]
    with closing(sqlite3.connect(folder / "archive.db")) as db:
        assert db.execute("SELECT count(*) FROM tokens WHERE parent IS NULL").fetchone() == (3,)
    # A family whose child has the id of a token there (A's): named by its line.
    first = json.loads(good.splitlines()[0])
    clash = {**first, "token": {**first["token"], "token": "X"}, "children": [first]}
    file.write_text(json.dumps(clash) + "\n")
    assert run("import", str(file), "--db", archive) == (
        1, [], f"error: line 1 of {file}: it cannot be stored: its token 'A' is there already, "
        "in another family\n",
    )  # fmt: skip
    assert (folder / "archive.db").exists()


def test_import_into_a_new_database_leaves_out_a_line_cut_short(
    served: ServeProcess, tmp_path: Path
) -> None:
    url = served.url
    make_tokens(url)
    file = tmp_path / "archive.jsonl"
    code, out, err = run("prune", "--ended-before", soon(), "--export", str(file), "--url", url)
    assert (code, err) == (0, "")
    text = file.read_bytes()
    assert out == [f"pruned 3 tokens ({human_bytes(len(text))} of history) into {file}"]
    assert text.count(b"\n") == 3
    file.write_bytes(text[:-10])  # C's line, cut short as by a crash while it was written
    archive = f"sqlite:///{tmp_path / 'archive.db'}"
    assert run("import", str(file), "--db", archive) == (
        0, [f"imported 2 tokens into {archive}, skipped 0 (already there); 2 {PENDING}"],
        f"warning: line 3 of {file} is cut short; left out\n",
    )  # fmt: skip
    with serve_process(write_graph(tmp_path, DEV), archive, cwd=tmp_path) as opened:
        try:
            found = httpx.get(f"{opened.url}/tokens", params={"limit": 10}, timeout=30).json()
            assert sorted(t["token"] for t in found) == [
                "A", "A.reviews.1.design-review", "A.reviews.1.security-review", "B",
            ]  # fmt: skip
        finally:
            opened.stop()
            for pipe in (opened.process.stdout, opened.process.stderr):
                if pipe is not None:
                    pipe.close()


def table_rows(db_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables an import writes, sorted, read straight from the database."""
    engine = create_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            return {
                table.name: sorted((tuple(row) for row in conn.execute(select(table))), key=repr)
                for table in (tables.tokens, tables.ledger, tables.audit, tables.token_keys,
                              tables.token_traces)
            }  # fmt: skip
    finally:
        engine.dispose()


def test_import_over_http_writes_the_rows_import_into_the_database_writes(
    db_url: str, tmp_path: Path
) -> None:
    searching = variant(DEV)
    searching["search"] = ["repo"]
    with serve_process(write_graph(tmp_path, searching), db_url, cwd=tmp_path) as running:
        url = running.url
        make_tokens(url)
        before = {token: read_back(url, token) for token in ("A", "B", "C")}
        rows = table_rows(db_url)
        assert len(rows["token_keys"]) == 4  # A, B, C and LIVE by `repo`
        file = tmp_path / "archive.jsonl"
        code, _, err = run("prune", "--ended-before", soon(), "--export", str(file), "--url", url)
        assert (code, err) == (0, "")
        assert all(gone(url, token) for token in ("A", "B", "C"))
        assert run("import", str(file), "--url", url) == (
            0, [f"imported 3 tokens into {url}, skipped 0 (already there)"], "",
        )  # fmt: skip
        assert {token: read_back(url, token) for token in ("A", "B", "C")} == before
        assert table_rows(db_url) == rows
        assert run("import", str(file), "--url", url) == (
            0, [f"imported 0 tokens into {url}, skipped 3 (already there)"], "",
        )  # fmt: skip
        assert table_rows(db_url) == rows
        # The same file into the database itself: the same rows again.
        code, _, err = run("prune", "--ended-before", soon(), "--yes", "--url", url)
        assert (code, err) == (0, "")
        assert all(gone(url, token) for token in ("A", "B", "C"))
        assert run("import", str(file), "--db", db_url) == (
            0, [f"imported 3 tokens into {mask_url(db_url)}, skipped 0 (already there)"], "",
        )  # fmt: skip
        assert table_rows(db_url) == rows
        assert {token: read_back(url, token) for token in ("A", "B", "C")} == before


def test_import_over_http_needs_an_admin_token(db_url: str, tmp_path: Path) -> None:
    auth = tmp_path / "tokens"
    auth.write_text("viewer: t-viewer read\nops: t-ops operate\nboss: t-boss admin\n")
    auth.chmod(0o600)
    extra = ["--auth-token-file", str(auth)]
    graph = write_graph(tmp_path, DEV)
    with serve_process(graph, db_url, cwd=tmp_path, extra=extra) as running:
        url, bearer = running.url, {"Authorization": "Bearer t-ops"}
        for token in ("A", "B"):
            start = {"token": token, "context": REPO}
            started = httpx.post(f"{url}/tokens", json=start, headers=bearer)
            assert started.status_code == 201, started.text
            ended = httpx.post(f"{url}/tokens/{token}/cancel", json={}, headers=bearer)
            assert ended.status_code == 200, ended.text
        file = tmp_path / "archive.jsonl"
        code, _, err = run(
            "prune", "--ended-before", soon(), "--export", str(file), "--url", url, token="t-ops"
        )
        assert (code, err) == (0, "")
        rows = table_rows(db_url)
        assert run("import", str(file), "--url", url, token="t-viewer") == (
            1, [], f"error: the control plane at {url} refused (403): the token 'viewer' may only "
            "read\n",
        )  # fmt: skip
        assert run("import", str(file), "--url", url, token="t-ops") == (
            1, [], f"error: the control plane at {url} refused (403): the token 'ops' may only "
            "read and operate, not supervise\n",
        )  # fmt: skip
        assert table_rows(db_url) == rows
        assert run("import", str(file), "--url", url, token="t-boss") == (
            0, [f"imported 2 tokens into {url}, skipped 0 (already there)"], "",
        )  # fmt: skip
