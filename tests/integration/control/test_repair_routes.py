"""Retry, move and why over a real socket, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock
from tests.support.app import RunningApi, running_api
from tests.support.graphs import SDLC

BY = {"actor": "alice", "reason": "the vendor is back", "via": "api"}


@pytest.fixture
def api(migrated_db_url: str) -> Iterator[RunningApi]:
    with running_api(migrated_db_url, SDLC, FakeClock(), migrate_first=False) as running:
        yield running


@pytest.fixture
def http(api: RunningApi) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, timeout=30) as client:
        yield client


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def refused(answer: httpx.Response) -> tuple[int, str, str]:
    body = answer.json()
    return answer.status_code, body["code"], body["error"]


def history(http: httpx.Client, token: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e["kind"], e["data"]) for e in ok(http.get(f"/tokens/{token}/history"))]


def fail(http: httpx.Client, token: str) -> None:
    """Start `token` and fail its first state ('coding' retries twice: three failed attempts)."""
    ok(http.post("/tokens", json={"token": token, "context": {"repo": "acme/api"}}), 201)
    for _ in range(3):
        grant = ok(http.post("/tasks/claim", json={"supervisor": "box", "states": ["coding"]}))
        body = {"kind": "failed", "error": "the vendor is down", "supervisor": "box"}
        ok(http.post(f"/tasks/{grant['task']}/report", json=body))


def test_retry_over_http(http: httpx.Client) -> None:
    fail(http, "T")
    token = ok(http.post("/tokens/T/retry", json={"by": BY}))
    assert (token["state"], token["status"], token["visit"]) == ("coding", "active", 2)
    assert history(http, "T")[-4:-2] == [
        ("retried", {"state": "coding", "by": BY}),
        ("entered", {"state": "coding", "visit": 2}),
    ]
    assert refused(http.post("/tokens/T/retry")) == (
        409, "token_not_failed", "token 'T' is active; only a failed token can be retried",
    )  # fmt: skip
    assert refused(http.post("/tokens/NOPE/retry")) == (
        404, "token_not_found", "there is no token 'NOPE'",
    )  # fmt: skip
    assert refused(http.post("/tokens/T/retry", json={"by": {"actor": ""}})) == (
        422, "invalid_body", "'by.actor' is a text of 1 to 64 printable characters",
    )  # fmt: skip


def test_retry_without_a_body(http: httpx.Client) -> None:
    fail(http, "T")
    assert ok(http.post("/tokens/T/retry"))["status"] == "active"
    assert history(http, "T")[-4] == ("retried", {"state": "coding"})


def test_move_over_http(http: httpx.Client) -> None:
    ok(http.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}}), 201)
    body = {"to": "testing", "context": {"repo": "acme/web"}, "by": BY}
    token = ok(http.post("/tokens/T/move", json=body))
    assert (token["state"], token["context"]) == ("testing", {"repo": "acme/web"})
    assert history(http, "T")[-5:-2] == [
        ("task_cancelled", {"task": 1}),
        ("moved", {"from": "coding", "to": "testing", "keys": ["repo"], "by": BY}),
        ("entered", {"state": "testing", "visit": 1}),
    ]
    before = history(http, "T")
    assert refused(http.post("/tokens/T/move", json={"to": "nowhere"})) == (
        422, "unknown_state", "the workflow 'sdlc' has no state 'nowhere'",
    )  # fmt: skip
    assert refused(http.post("/tokens/T/move", json={"to": "coding", "context": {"repo": 5}})) == (
        422, "invalid_context", "the context changes break the schema: repo: 5 is not of type 'string'",
    )  # fmt: skip
    assert refused(http.post("/tokens/T/move", json={})) == (
        422, "invalid_body", "'to' is the name of a state of the token's workflow",
    )  # fmt: skip
    assert refused(http.post("/tokens/T/move", json={"to": "coding", "state": "x"})) == (
        422, "invalid_body", "a move has no part 'state'; its parts are to, context, by",
    )  # fmt: skip
    assert history(http, "T") == before


def test_why_over_http(http: httpx.Client) -> None:
    ok(http.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}}), 201)
    answer = ok(http.get("/tokens/T/why"))
    assert answer["token"]["token"] == "T"
    assert [f["code"] for f in answer["findings"]] == ["no_supervisor", "timer"]
    assert refused(http.get("/tokens/NOPE/why")) == (
        404, "token_not_found", "there is no token 'NOPE'",
    )  # fmt: skip
