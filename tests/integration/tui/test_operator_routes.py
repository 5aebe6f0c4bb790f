"""The operators' read routes (tasks, a token's tasks, timers, memory and history, `/stats`)
over a real socket, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock
from tests.support.app import RunningApi, running_api
from tests.unit.control.harness import DEV

T0 = "2026-10-16T20:48:44.845389Z"


@pytest.fixture
def clock() -> FakeClock:
    """FakeClock's start, the time ORDER-1 is started in the reference rows."""
    return FakeClock()


@pytest.fixture
def dev(migrated_db_url: str, clock: FakeClock) -> Iterator[RunningApi]:
    """The parallel example `dev` served with a fake clock."""
    with running_api(migrated_db_url, DEV, clock, migrate_first=False) as running:
        yield running


@pytest.fixture
def http(dev: RunningApi) -> Iterator[httpx.Client]:
    """A client of the served app."""
    with httpx.Client(base_url=dev.url, timeout=30) as client:
        yield client


def claim(http: httpx.Client, supervisor: str, *states: str) -> dict[str, Any]:
    answer = http.post("/tasks/claim", json={"supervisor": supervisor, "states": list(states)})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def task(
    ident: int, token: str, state: str, status: str, attempt: int, **rest: Any
) -> dict[str, Any]:
    """A task object of the operator routes, times at T0 unless given."""
    return {
        "task": ident,
        "token": token,
        "state": state,
        "visit": rest.get("visit", 1),
        "status": status,
        "attempt": attempt,
        "claimed_by": rest.get("claimed_by"),
        "lease_until": rest.get("lease_until"),
        "queued_at": rest.get("queued_at", T0),
    }


def test_tasks_newest_first_with_filters_and_child_states(
    http: httpx.Client, clock: FakeClock
) -> None:
    assert http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}}).status_code == 201
    assert http.post("/tokens", json={"token": "T-2", "context": {"repo": "r"}}).status_code == 201
    grant = claim(http, "box-1", "coding")
    assert grant["task"] == 1
    report = http.post(
        "/tasks/1/report", json={"kind": "event", "event": "done", "supervisor": "box-1"}
    )
    assert report.status_code == 200, report.text
    answer = http.get("/tasks")
    assert answer.status_code == 200
    found = answer.json()
    assert [(t["task"], t["token"], t["state"], t["status"]) for t in found] == [
        (4, "T-1.reviews.1.design-review", "design-review/look", "queued"),
        (3, "T-1.reviews.1.security-review", "security-review/triage", "queued"),
        (2, "T-2", "coding", "queued"),
        (1, "T-1", "coding", "done"),
    ]
    assert found[3] == task(1, "T-1", "coding", "done", 1, claimed_by="box-1")
    assert [
        t["task"] for t in http.get("/tasks", params={"status": "queued", "limit": "2"}).json()
    ] == [4, 3]
    assert [
        t["task"] for t in http.get("/tasks", params={"state": "security-review/triage"}).json()
    ] == [3]
    assert [
        t["task"] for t in http.get("/tasks", params={"state": "coding", "token": "T-2"}).json()
    ] == [2]
    assert [t["task"] for t in http.get("/tasks", params={"supervisor": "box-1"}).json()] == [1]
    claim(http, "box-2", "security-review/triage")
    claimed = http.get("/tasks", params={"status": "claimed"}).json()
    assert claimed == [
        task(
            3,
            "T-1.reviews.1.security-review",
            "security-review/triage",
            "claimed",
            1,
            claimed_by="box-2",
            lease_until="2026-10-16T20:50:44.845389Z",
        )
    ]


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        (
            {"status": "running"},
            "'status' is one of queued, claimed, waiting, done, failed, cancelled",
        ),
        ({"limit": "0"}, "'limit' is a whole number from 1 to 1000"),
        ({"limit": "1001"}, "'limit' is a whole number from 1 to 1000"),
        ({"limit": "ten"}, "'limit' is a whole number from 1 to 1000"),
        ({"limit": "1" * 19}, "'limit' is a whole number from 1 to 1000"),
        ({"state": ""}, "'state' is a text of 1 to 129 characters"),
        ({"supervisor": ""}, "'supervisor' is a text of 1 to 256 characters"),
    ],
)
def test_tasks_refuses_a_bad_query(
    http: httpx.Client, query: dict[str, str], sentence: str
) -> None:
    answer = http.get("/tasks", params=query)
    assert (answer.status_code, answer.json()) == (
        422,
        {"error": sentence, "code": "invalid_argument"},
    )


def test_a_tokens_tasks_timers_memory_and_history_after(
    http: httpx.Client, clock: FakeClock
) -> None:
    http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}})
    claim(http, "box-1", "coding")
    assert (
        http.put("/tasks/1/memory", json={"key": "plan", "value": {"steps": [1, 2]}}).status_code
        == 204
    )
    report = {"kind": "event", "event": "done", "supervisor": "box-1"}
    assert http.post("/tasks/1/report", json=report).status_code == 200
    assert http.get("/tokens/T-1/tasks").json() == [
        task(1, "T-1", "coding", "done", 1, claimed_by="box-1")
    ]
    child = "T-1.reviews.1.security-review"
    assert http.get(f"/tokens/{child}/tasks").json() == [
        task(2, child, "security-review/triage", "queued", 0)
    ]
    assert http.get("/tokens/T-1/timers").json() == [
        {
            "id": 1,
            "state": "reviews",
            "visit": 1,
            "event": "timeout",
            "kind": "timeout",
            "status": "pending",
            "set_at": T0,
            "due_at": "2026-10-18T20:48:44.845389Z",
        }
    ]
    assert http.get("/tokens/T-1/memory").json() == [
        {"state": "coding", "key": "plan", "value": {"steps": [1, 2]}}
    ]
    whole = http.get("/tokens/T-1/history").json()
    after = http.get("/tokens/T-1/history", params={"after": "5"}).json()
    assert after == [e for e in whole if e["seq"] > 5]
    assert after[0]["seq"] == 6
    assert http.get("/tokens/T-1/history", params={"after": str(len(whole))}).json() == []


@pytest.mark.parametrize("route", ["tasks", "timers", "memory", "history?after=0"])
def test_an_unknown_token_is_token_not_found(http: httpx.Client, route: str) -> None:
    answer = http.get(f"/tokens/NOPE/{route}")
    assert (answer.status_code, answer.json()) == (
        404,
        {"error": "there is no token 'NOPE'", "code": "token_not_found"},
    )


@pytest.mark.parametrize("after", ["-1", "x", "1" * 19])
def test_history_after_must_be_a_whole_number(http: httpx.Client, after: str) -> None:
    http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}})
    answer = http.get("/tokens/T-1/history", params={"after": after})
    assert answer.status_code == 422
    assert answer.json()["code"] == "invalid_argument"


def test_stats_counts_tokens_states_and_the_oldest_queued(
    http: httpx.Client, clock: FakeClock
) -> None:
    empty = http.get("/stats").json()
    zero = {"active": 0, "paused": 0, "queued": 0, "claimed": 0, "waiting": 0, "supervisors": 0}
    assert empty["tokens"] == {
        "active": 0,
        "paused": 0,
        "completed": 0,
        "failed": 0,
        "cancelled": 0,
    }
    assert list(empty["states"]) == [
        "coding",
        "reviews",
        "merging",
        "security-review/triage",
        "security-review/approved",
        "design-review/look",
    ]
    assert all(v == zero for v in empty["states"].values())
    assert empty["oldest_queued_at"] is None
    http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}})
    clock.advance(5)
    http.post("/tokens", json={"token": "T-2", "context": {"repo": "r"}})
    http.post("/tokens", json={"token": "T-3", "context": {"repo": "r"}})
    http.post("/tokens/T-3/pause")
    claim(http, "box-1", "coding")  # T-1's task
    http.post("/tasks/1/report", json={"kind": "event", "event": "done", "supervisor": "box-1"})
    http.post("/tokens/T-2/cancel")
    stats = http.get("/stats").json()
    assert stats["tokens"] == {
        "active": 3,
        "paused": 1,
        "completed": 0,
        "failed": 0,
        "cancelled": 1,
    }
    assert stats["states"]["coding"] == {**zero, "paused": 1, "queued": 1}
    assert stats["states"]["reviews"] == {**zero, "active": 1}
    assert stats["states"]["security-review/triage"] == {**zero, "active": 1, "queued": 1}
    assert stats["states"]["design-review/look"] == {**zero, "active": 1, "queued": 1}
    assert stats["oldest_queued_at"] == "2026-10-16T20:48:49.845389Z"
    # The test app takes no hold of the database: `serving` is the row's empty column.
    assert stats["serving"] is None
