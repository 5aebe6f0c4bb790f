"""`stateous versions`, `stateous token migrate` (one token and `--where`) and `token show`'s
version as real processes against a real `stateous serve`.

Version A is `sdlc`; version B renames `testing` to `checking` and allows a `repo` of at most
10 characters. The tokens start on A; then B is served, and they stay on A until moved. No
supervisor runs: the tasks wait in the queue, which is all a migration needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.client import AsyncClient, Client, NotFound
from stateous.model.canonical import checksum, structure
from stateous.model.history import local_datetime
from tests.e2e.test_bulk_commands import in_terminal, run
from tests.e2e.test_token_commands import history
from tests.support import ServeProcess, serve_process, sqlite_url
from tests.support.graphs import SDLC, variant, write_graph


def _version_b() -> dict[str, Any]:
    doc = variant(SDLC)
    doc["states"] = {"coding": doc["states"]["coding"], "checking": doc["states"]["testing"]}
    for move in doc["transitions"]:
        for end in ("from", "to"):
            if move[end] == "testing":
                move[end] = "checking"
    doc["schemas"]["Ticket"]["properties"]["repo"]["maxLength"] = 10
    return doc


A, B = SDLC, _version_b()
SHORT_A, SHORT_B = checksum(A)[7:15], checksum(B)[7:15]
NOTE_A = f" (version {SHORT_A}; new tokens start on {SHORT_B})"

# (token, repo, whether `done` moves it on to `testing`)
TOKENS = [
    ("T-1", "acme/api", False),
    ("T-2", "acme/api", True),
    ("W-1", "acme/api", False),
    ("W-2", "acme/api", True),
    ("W-3", "acme/a-very-long-repo", False),
]


def _start_on_a(url: str) -> None:
    """The tokens, started over HTTP on version A (this file tests the migration commands)."""
    with httpx.Client(base_url=url, timeout=30) as http:
        for token, repo, done in TOKENS:
            body = {"token": token, "context": {"repo": repo}}
            assert http.post("/tokens", json=body).status_code == 201
            if done:
                assert http.post(f"/tokens/{token}/events/done", json={}).status_code == 200


@contextmanager
def two_versions(folder: Path, db_url: str) -> Iterator[ServeProcess]:
    """Serve A and start the tokens; stop; serve B on the same database, for the block."""
    with serve_process(write_graph(folder, A, "a.json"), db_url, cwd=folder) as served:
        _start_on_a(served.url)
    with serve_process(write_graph(folder, B, "b.json"), db_url, cwd=folder) as served:
        yield served


@pytest.fixture
def cp(tmp_path: Path) -> Iterator[ServeProcess]:
    """Both versions on a SQLite file of the test's own (bulk job ids start at 1)."""
    with two_versions(tmp_path, sqlite_url(tmp_path)) as served:
        yield served


def ok(*args: str, url: str) -> list[str]:
    """The stdout lines of a command that must succeed with nothing on stderr."""
    code, lines, err = run(*args, url=url)
    assert (code, err) == (0, ""), (args, code, err)
    return lines


def _versions_table(url: str, live_a: int, live_b: int) -> list[str]:
    """What `stateous versions` must print: B (current) then A, the times in this zone."""
    served = {
        row["checksum"]: row["first_served_at"]
        for row in httpx.get(url + "/workflow/versions").json()
    }
    rows = [
        (B, "yes", live_b),
        (A, "no", live_a),
    ]
    lines = ["checksum      structure     current  first served         live tokens"]
    for doc, current, live in rows:
        when = local_datetime(served[checksum(doc)])
        lines.append(
            f"{checksum(doc)[7:19]}  {structure(doc)[7:19]}  {current:<7}  {when}  {live:>11}"
        )
    return lines


def test_versions_after_serving_a_second_version(tmp_path: Path, db_url: str) -> None:
    with two_versions(tmp_path, db_url) as served:
        assert ok("versions", url=served.url) == _versions_table(served.url, 5, 0)
        assert httpx.get(served.url + "/tokens/T-1").json()["structure"] == structure(A)
        # A new token starts on B; one of A ends: the table follows.
        assert (
            httpx.post(
                served.url + "/tokens", json={"token": "N-1", "context": {"repo": "x"}}
            ).status_code
            == 201
        )
        assert httpx.post(served.url + "/tokens/T-1/cancel", json={}).status_code == 200
        assert ok("versions", url=served.url) == _versions_table(served.url, 4, 1)


def test_token_show_names_an_older_version(cp: ServeProcess) -> None:
    lines = ok("token", "show", "T-2", url=cp.url)
    assert lines[0] == "T-2: testing, active" + NOTE_A
    ok("token", "start", "N-1", '{"repo": "x"}', url=cp.url)
    assert ok("token", "show", "N-1", url=cp.url)[0] == "N-1: coding, active"


def test_migrate_one_token_without_and_with_a_map(tmp_path: Path, db_url: str) -> None:
    with two_versions(tmp_path, db_url) as served:
        _migrate_one_token(served.url)


def _migrate_one_token(url: str) -> None:
    assert ok("token", "migrate", "T-1", url=url) == ["T-1: coding (visit 2), active"]
    lines = ok("token", "show", "T-1", url=url)
    assert lines[0] == "T-1: coding (visit 2), active"  # on the current version: no note
    assert history(lines[1:])[5:9] == [
        "#6  task 1 cancelled",
        f"#7  migrated to sha256:{SHORT_B}… (coding → coding)",
        "#8  entered coding (visit 2)",
        "#9  task 8 queued for coding",
    ]
    args = ("token", "migrate", "T-2", "--to", SHORT_B, "--map", "testing=checking")
    assert ok(*args, "--as", "alice", url=url) == ["T-2: checking, active"]
    body = history(ok("token", "show", "T-2", url=url)[1:])
    assert body[10:14] == [
        "#11  task 3 cancelled",
        f"#12  migrated to sha256:{SHORT_B}… (testing → checking) [alice, cli]",
        "#13  entered checking",
        "#14  task 9 queued for checking",
    ]
    assert body[14].startswith("#15  timer set: timeout at ") and len(body) == 15
    assert httpx.get(url + "/tokens/T-2").json()["structure"] == structure(B)


def test_a_refused_migration_is_one_sentence(cp: ServeProcess) -> None:
    url = cp.url
    code, lines, err = run("token", "migrate", "T-2", url=url)
    assert (code, lines) == (1, [])
    assert err == (
        f"error: the control plane at {url} refused (422): token 'T-2' would be in 'testing', "
        f"which is not a state of 'sdlc' on sha256:{SHORT_B}…; map it with --map testing=<state>\n"
    )
    code, lines, err = run("token", "migrate", "T-2", "--map", "nope=checking", url=url)
    assert (code, lines) == (1, [])
    assert err == (
        f"error: the control plane at {url} refused (422): --map maps 'nope', which is not a "
        f"state of 'sdlc' on sha256:{SHORT_A}… (the token's version)\n"
    )
    code, lines, err = run("token", "migrate", "T-1", "--to", "00000000", url=url)
    assert (code, lines, err) == (
        1, [], "error: no version on record starts with 00000000; see them with: stateous versions\n"
    )  # fmt: skip
    code, lines, err = run("token", "migrate", "T-1", "--to", "sha256:" + "0" * 64, url=url)
    assert (code, lines) == (1, [])
    assert err.startswith(f"error: the control plane at {url} refused (422): "), err
    ok("token", "migrate", "T-1", url=url)
    code, lines, err = run("token", "migrate", "T-1", url=url)
    assert (code, lines) == (1, [])
    assert err == (
        f"error: the control plane at {url} refused (409): token 'T-1' already runs on "
        f"{checksum(B)}\n"
    )
    code, lines, err = run("token", "migrate", "W-3", url=url)
    assert (code, lines, err) == (
        1, [], f"error: the control plane at {url} refused (422): the context of token 'W-3' "
        f"does not fit the context model of sha256:{SHORT_B}…: repo: 'acme/a-very-long-repo' is "
        "too long; set it with --context\n",
    )  # fmt: skip
    # Nothing of the refused ones moved.
    assert ok("token", "show", "T-2", url=url)[0] == "T-2: testing, active" + NOTE_A


def test_where_prints_the_refusals_then_asks(cp: ServeProcess) -> None:
    url = cp.url
    where = ("token", "migrate", "--where", "--prefix", "W-")
    matched = (
        "3 tokens match (active or paused or failed, the statuses migrate acts on): W-1, W-2, W-3"
    )
    refused = (
        "refused: 1 invalid_context: repo: 'acme/a-very-long-repo' is too long (W-3); set it "
        "with --context, 1 unknown_state (W-2)"
    )
    assert ok(*where, "--dry-run", url=url) == [matched, refused]
    code, out = in_terminal("n", *where, url=url)
    assert (code, out.splitlines()) == (
        0,
        [matched, refused, "migrate 3 tokens? [y/N] nothing done"],
    )
    assert httpx.get(url + "/bulk").json() == []
    assert ok("token", "show", "W-1", url=url)[0] == "W-1: coding, active" + NOTE_A
    code, out = in_terminal("y", *where, url=url)
    assert (code, out.splitlines()) == (0, [
        matched,
        refused,
        "migrate 3 tokens? [y/N] job 1: migrate 3 tokens",
        "job 1 finished: 1 done, 2 skipped (invalid_context 1, unknown_state 1)",
    ])  # fmt: skip
    assert ok("token", "show", "W-1", url=url)[0] == "W-1: coding (visit 2), active"
    assert ok("token", "show", "W-2", url=url)[0] == "W-2: testing, active" + NOTE_A
    # With the map and the context writes, every one left can move.
    mapped = (*where, "--map", "testing=checking", "--context", '{"repo": "acme/web"}', "--yes")
    assert ok(*mapped, url=url) == [
        "3 tokens match (active or paused or failed, the statuses migrate acts on): W-2, W-3, W-1",
        "refused: 1 same_version (W-1)",
        "job 2: migrate 3 tokens",
        "job 2 finished: 2 done, 1 skipped (same_version 1)",
    ]
    assert ok("token", "show", "W-2", url=url)[0] == "W-2: checking, active"
    assert httpx.get(url + "/tokens/W-3").json()["context"]["repo"] == "acme/web"
    # The history line of a migration that wrote context names the keys it wrote.
    written = [line for line in history(ok("token", "show", "W-3", url=url)[1:]) if "migr" in line]
    assert [line.split("  ", 1)[1] for line in written] == [
        f"migrated to sha256:{SHORT_B}… (coding → coding); context changed: repo [bulk 2]"
    ]


async def test_the_clients_read_the_versions(cp: ServeProcess) -> None:
    with Client(cp.url) as client:
        assert client.workflow(checksum(A))["states"].keys() == {"coding", "testing"}
        assert [row["checksum"] for row in client.versions()] == [checksum(B), checksum(A)]
        with pytest.raises(NotFound) as missing:
            client.workflow("sha256:" + "0" * 64)
        assert missing.value.code == "version_not_found"
    async with AsyncClient(cp.url) as aclient:
        moved = await aclient.migrate("T-2", checksum(B), {"testing": "checking"}, key="m-1")
        again = await aclient.migrate("T-2", checksum(B), {"testing": "checking"}, key="m-1")
    assert (moved["state"], moved["structure"]) == ("checking", structure(B))
    assert again == moved
