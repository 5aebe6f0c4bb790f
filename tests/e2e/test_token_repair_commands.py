"""`stateous token retry|move|why` as real processes against a real `stateous serve`.

The workflow is `sdlc`; no supervisor runs: the test claims and reports over HTTP as the
supervisor `box` would (it never beats, so the control plane does not see it live).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_token_commands import history, ok, serving, stateous
from tests.support import ServeProcess


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[ServeProcess]:
    with serving(tmp_path) as served:
        yield served


def fail_coding(url: str, token: str) -> None:
    """Three failed attempts of 'coding' (retries=2): the token fails."""
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(3):
            grant = http.post("/tasks/claim", json={"supervisor": "box", "states": ["coding"]})
            body = {"kind": "failed", "error": "the vendor is down", "supervisor": "box"}
            assert http.post(f"/tasks/{grant.json()['task']}/report", json=body).status_code == 200


def test_retry_after_a_vendor_outage(fresh: ServeProcess) -> None:
    url = fresh.url
    assert ok("token", "start", "T-1", '{"repo": "acme/api"}', url=url) == ["T-1: coding, active"]
    fail_coding(url, "T-1")
    assert ok("token", "retry", "T-1", url=url) == ["T-1: coding (visit 2), active"]
    lines = history(ok("token", "show", "T-1", url=url)[1:])
    assert lines[-5:-1] == [
        "#14  failed: 'coding' failed, and has no transition on 'error': the vendor is down",
        "#15  retried in coding",
        "#16  entered coding (visit 2)",
        "#17  task 2 queued for coding",
    ]
    assert lines[-1].startswith("#18  timer set: timeout at ")
    assert stateous("token", "retry", "T-1", url=url) == (
        1, "", f"error: the control plane at {url} refused (409): token 'T-1' is active; only a "
        "failed token can be retried\n",
    )  # fmt: skip


def test_move_and_its_refusals(fresh: ServeProcess) -> None:
    url = fresh.url
    ok("token", "start", "T-2", '{"repo": "acme/api"}', url=url)
    assert ok("token", "move", "T-2", "testing", "--context", '{"repo": "acme/web"}', url=url) == [
        "T-2: testing, active"
    ]
    lines = history(ok("token", "show", "T-2", url=url)[1:])
    assert lines[5:8] == [
        "#6  task 1 cancelled",
        "#7  moved from coding to testing",
        "#8  entered testing",
    ]
    assert stateous("token", "move", "T-2", "nowhere", url=url) == (
        1, "", f"error: the control plane at {url} refused (422): the workflow 'sdlc' has no state "
        "'nowhere'\n",
    )  # fmt: skip
    assert stateous("token", "move", "T-2", "coding", "--context", "[1]", url=url) == (
        1, "", "error: --context must be a JSON object, such as '{\"repo\": \"acme/api\"}'\n",
    )  # fmt: skip


def test_why(fresh: ServeProcess) -> None:
    url = fresh.url
    ok("token", "start", "T-3", '{"repo": "acme/api"}', url=url)
    lines = ok("token", "why", "T-3", url=url)
    assert lines[0] == "T-3: coding, active"
    version = httpx.get(url + "/health").json()["checksum"][7:15]
    assert lines[1].startswith(
        f"  no_supervisor: task 1 is queued for 'coding', and no live supervisor of version "
        f"{version} serves 'coding'; start one with 'coding' in its folder (since "
    )
    assert lines[2].startswith("  timer: a timeout fires 'timeout' at ")
    assert len(lines) == 3
    assert stateous("token", "why", "NOPE", url=url) == (
        1, "", f"error: the control plane at {url} refused (404): there is no token 'NOPE'\n",
    )  # fmt: skip


def test_retry_and_move_say_who_and_why(fresh: ServeProcess) -> None:
    url = fresh.url
    ok("token", "start", "T-4", '{"repo": "acme/api"}', url=url)
    fail_coding(url, "T-4")
    assert ok(
        "token", "retry", "T-4", "--as", "alice", "--reason", "the vendor is back", url=url
    ) == ["T-4: coding (visit 2), active"]
    ok("token", "move", "T-4", "testing", "--as", "bob", url=url)
    lines = history(ok("token", "show", "T-4", url=url)[1:])
    assert "#15  retried in coding [alice, cli: the vendor is back]" in lines
    assert "#20  moved from coding to testing [bob, cli]" in lines


def test_retry_where_retries_every_failed_token_as_one_job(fresh: ServeProcess) -> None:
    url = fresh.url
    for token in ("T-5", "T-6"):
        ok("token", "start", token, '{"repo": "acme/api"}', url=url)
        fail_coding(url, token)
    ok("token", "start", "T-7", '{"repo": "acme/api"}', url=url)
    lines = ok("token", "retry", "--where", "--status", "failed", "--yes", url=url)
    assert lines[0] == "2 tokens match: T-5, T-6"
    assert lines[1] == "job 1: retry 2 tokens"
    for token in ("T-5", "T-6"):
        assert ok("token", "show", token, url=url)[0] == f"{token}: coding (visit 2), active"
        assert history(ok("token", "show", token, url=url)[1:])[14].startswith(
            "#15  retried in coding"
        )
    assert ok("token", "show", "T-7", url=url)[0] == "T-7: coding, active"
