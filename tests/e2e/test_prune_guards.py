"""`stateous prune` as a real process against a real `stateous serve`: a duration's cut keeps
sub-second precision, an export with nothing to prune still writes its (empty) file, and a prune
the token's role would refuse is refused before anything is read or written; the CLI's 401."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_prune_import import REPO, gone, post, run, served, soon
from tests.support import ServeProcess, serve_process
from tests.support.graphs import DEV, write_graph

__all__ = ["served"]  # the fixture, shared with test_prune_import

#: The auth file: a name per role.
AUTH_FILE = "viewer: t-viewer read\nops: t-ops operate\nworker: t-worker supervise\n"


def test_one_second_prunes_a_token_that_ended_one_and_a_half_seconds_ago(
    served: ServeProcess,
) -> None:
    url = served.url
    post(url, "/tokens", {"token": "OLD", "context": REPO}, 201)
    post(url, "/tokens/OLD/cancel", {})
    time.sleep(1.5)  # the cut of `1s` is now after the end (cut to the second, it may not be)
    code, out, err = run("prune", "--ended-before", "1s", "--yes", "--url", url)
    assert (code, err) == (0, "")
    assert len(out) == 1 and out[0].startswith("pruned 1 token ("), out
    assert gone(url, "OLD")
    # The control plane's line: one prefix (the logger's name), and the singular for one token.
    served.read_lines(timeout=0.5)
    logged = [line for line in served.lines if "stateous.retention:" in line]
    assert len(logged) == 1, served.lines
    assert re.search(r" stateous\.retention: pruned 1 token ended before \S+\.\d{6}Z$", logged[0])


def test_an_export_with_nothing_to_prune_writes_its_empty_file(
    served: ServeProcess, db_url: str, tmp_path: Path
) -> None:
    url = served.url
    plain, packed = tmp_path / "none.jsonl", tmp_path / "none.jsonl.gz"
    for file in (plain, packed):
        code, out, err = run("prune", "--ended-before", "90d", "--export", str(file), "--url", url)
        assert (code, out, err) == (0, [f"pruned 0 tokens (0 B of history) into {file}"], "")
    assert plain.read_bytes() == b""
    assert gzip.decompress(packed.read_bytes()) == b""
    for file in (plain, packed):  # `import` reads them: an empty archive
        code, out, err = run("import", str(file), "--db", db_url)
        assert (code, err, len(out)) == (0, "", 1) and out[0].startswith("imported 0 tokens")
    # An archive that exists is appended to as it is: nothing is added when nothing is pruned.
    before = packed.read_bytes()
    assert run("prune", "--ended-before", "90d", "--export", str(packed), "--url", url)[0] == 0
    assert packed.read_bytes() == before


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of the `dev` workflow with an auth file of three roles (SQLite)."""
    (tmp_path / "tokens").write_text(AUTH_FILE, encoding="utf-8")
    (tmp_path / "tokens").chmod(0o600)
    extra = ["--auth-token-file", str(tmp_path / "tokens")]
    graph = write_graph(tmp_path, DEV)
    with serve_process(graph, f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path, extra=extra) as up:
        try:
            yield up
        finally:
            up.stop()
            up.close_pipes()


def run_as(token: str | None, *args: str) -> tuple[int, list[str], str]:
    """`python -m stateous ARGS` with `STATEOUS_AUTH_TOKEN` set to `token` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("STATEOUS_URL", "STATEOUS_AUTH_TOKEN")}
    if token is not None:
        env["STATEOUS_AUTH_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_a_prune_the_role_refuses_writes_nothing(guarded: ServeProcess, tmp_path: Path) -> None:
    url = guarded.url
    ops = {"Authorization": "Bearer t-ops"}
    with httpx.Client(base_url=url, headers=ops, timeout=30) as http:
        assert http.post("/tokens", json={"token": "A", "context": REPO}).status_code == 201
        assert http.post("/tokens/A/cancel", json={}).status_code == 200
    file, cut = tmp_path / "archive.jsonl", soon()
    for name, role in (("t-viewer", "read"), ("t-worker", "supervise")):
        assert run_as(name, "prune", "--ended-before", cut, "--export", str(file), "--url", url) == (
            1, [], f"error: the token in STATEOUS_AUTH_TOKEN has the role {role!r}, and pruning "
            "needs 'operate' or 'admin'; nothing was pruned or written\n",
        )  # fmt: skip
        assert not file.exists()
    # The dry run only reads: a `read` token may make it.
    code, out, err = run_as("t-viewer", "prune", "--ended-before", cut, "--dry-run", "--url", url)
    assert (code, err) == (0, "") and out[0].startswith("would prune 1 token ("), out
    assert run_as(None, "prune", "--ended-before", cut, "--export", str(file), "--url", url) == (
        1, [], f"error: the control plane at {url} refused (401): it needs a valid token; set "
        "STATEOUS_AUTH_TOKEN to a token of the file its serve was given with --auth-token-file\n",
    )  # fmt: skip
    assert not file.exists()
    code, out, err = run_as(
        "t-ops", "prune", "--ended-before", cut, "--export", str(file), "--url", url
    )
    assert (code, err) == (0, "")
    assert out == [f"pruned 1 token ({file.stat().st_size} B of history) into {file}"]
    assert httpx.get(f"{url}/tokens/A", headers=ops, timeout=30).status_code == 404
