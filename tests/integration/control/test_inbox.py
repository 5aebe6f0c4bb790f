"""The inbox over a real socket, on both backends: the waiting tasks of live
tokens, the longest waiting first, with the last note and the events with their payload
schemas; a fire takes a task out, a paused token's task stays, an ended token's goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock, iso
from stateous.model.canonical import structure
from tests.support.app import running_api
from tests.support.graphs import SDLC

BOX = "build-box-1"
TESTS_SCHEMA = SDLC["schemas"]["Tests"]
#: The structure every token here runs on.
SDLC_STRUCTURE = structure(SDLC)
CODING_EVENTS = [
    {"event": "done", "payload_schema": None},
    {"event": "stuck", "payload_schema": None},
]
TESTING_EVENTS = [
    {"event": "passed", "payload_schema": TESTS_SCHEMA},
    {"event": "failed", "payload_schema": TESTS_SCHEMA},
]


@pytest.fixture
def http(migrated_db_url: str, clock: FakeClock) -> Iterator[httpx.Client]:
    """A client of the sdlc app on a fake clock."""
    with (
        running_api(migrated_db_url, SDLC, clock, migrate_first=False) as running,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        yield client


def ok(answer: httpx.Response) -> Any:
    """The JSON of a 200/201 answer."""
    assert answer.status_code in (200, 201), answer.text
    return answer.json() if answer.content else None


def claim(http: httpx.Client, state: str) -> dict[str, Any]:
    """Claim the oldest queued task of `state` as the supervisor build-box-1."""
    grant: dict[str, Any] = ok(
        http.post("/tasks/claim", json={"supervisor": BOX, "states": [state]})
    )
    return grant


def wait(http: httpx.Client, grant: dict[str, Any], *notes: str) -> None:
    """Write `notes` on the task, then report it waiting."""
    for text in notes:
        answer = http.post(f"/tasks/{grant['task']}/note", json={"text": text, "attempt": 1})
        assert answer.status_code == 204, answer.text
    body = {"kind": "waiting", "attempt": grant["attempt"], "supervisor": BOX}
    ok(http.post(f"/tasks/{grant['task']}/report", json=body))


def start(http: httpx.Client, *tokens: str) -> None:
    for token in tokens:
        ok(http.post("/tokens", json={"token": token, "context": {"repo": "acme/api"}}))


def inbox(http: httpx.Client, query: str = "") -> list[dict[str, Any]]:
    answer = http.get(f"/inbox{query}")
    assert answer.status_code == 200, answer.text
    entries: list[dict[str, Any]] = answer.json()
    return entries


def test_the_longest_waiting_first_with_the_last_note_and_the_events(
    http: httpx.Client, clock: FakeClock
) -> None:
    start(http, "T-1", "T-2", "T-3", "T-4")
    one, two, three, four = (claim(http, "coding") for _ in range(4))
    ok(http.post(f"/tasks/{four['task']}/report", json={
        "kind": "event", "event": "done", "attempt": 1, "supervisor": BOX,
    }))  # fmt: skip
    testing = claim(http, "testing")
    clock.advance(1)
    wait(http, two, "which branch?")
    two_since = iso(clock.now())
    clock.advance(1)
    wait(http, testing, "the tests need a database; run them by hand?")
    testing_since = iso(clock.now())
    clock.advance(1)
    wait(http, three)
    three_since = iso(clock.now())
    clock.advance(1)
    wait(http, one, "a first question", "  the second question  ")
    one_since = iso(clock.now())
    assert inbox(http) == [
        {"task": two["task"], "token": "T-2", "state": "coding", "visit": 1, "status": "active",
         "since": two_since, "note": "which branch?", "events": CODING_EVENTS, "structure": SDLC_STRUCTURE},
        {"task": testing["task"], "token": "T-4", "state": "testing", "visit": 1,
         "status": "active", "since": testing_since,
         "note": "the tests need a database; run them by hand?", "events": TESTING_EVENTS, "structure": SDLC_STRUCTURE},
        {"task": three["task"], "token": "T-3", "state": "coding", "visit": 1, "status": "active",
         "since": three_since, "note": None, "events": CODING_EVENTS, "structure": SDLC_STRUCTURE},
        {"task": one["task"], "token": "T-1", "state": "coding", "visit": 1, "status": "active",
         "since": one_since, "note": "the second question", "events": CODING_EVENTS, "structure": SDLC_STRUCTURE},
    ]  # fmt: skip
    assert [e["token"] for e in inbox(http, "?limit=2")] == ["T-2", "T-4"]
    assert [e["token"] for e in inbox(http, "?state=testing")] == ["T-4"]
    assert [e["token"] for e in inbox(http, "?state=coding&limit=1")] == ["T-2"]
    assert inbox(http, "?state=nowhere") == []


def test_a_fire_takes_the_task_out_a_pause_keeps_it_a_cancel_ends_it(
    http: httpx.Client, clock: FakeClock
) -> None:
    start(http, "T-1", "T-2", "T-3")
    grants = [claim(http, "coding") for _ in range(3)]
    for grant in grants:
        clock.advance(1)
        wait(http, grant, f"task {grant['task']}?")
    ok(http.post("/tokens/T-1/events/done", json={}))
    assert [(e["token"], e["status"]) for e in inbox(http)] == [
        ("T-2", "active"),
        ("T-3", "active"),
    ]
    ok(http.post("/tokens/T-2/pause", json={}))
    assert [(e["token"], e["status"]) for e in inbox(http)] == [
        ("T-2", "paused"),
        ("T-3", "active"),
    ]
    ok(http.post("/tokens/T-3/cancel", json={}))
    assert [(e["token"], e["status"]) for e in inbox(http)] == [("T-2", "paused")]
    ok(http.post("/tokens/T-2/resume", json={}))
    assert [(e["token"], e["status"]) for e in inbox(http)] == [("T-2", "active")]


def test_an_outside_report_on_the_waiting_task_takes_it_out(http: httpx.Client) -> None:
    start(http, "T-1")
    grant = claim(http, "coding")
    wait(http, grant, "ready?")
    body = {"kind": "event", "event": "done", "attempt": grant["attempt"]}
    ok(http.post(f"/tasks/{grant['task']}/report", json=body))
    assert inbox(http) == []


def test_an_empty_inbox_and_queued_or_claimed_tasks_are_not_in_it(http: httpx.Client) -> None:
    assert inbox(http) == []
    start(http, "T-1", "T-2")
    claim(http, "coding")
    assert inbox(http) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?limit=0", "'limit' is a whole number from 1 to 1000"),
        ("?limit=1001", "'limit' is a whole number from 1 to 1000"),
        ("?limit=x", "'limit' is a whole number from 1 to 1000"),
        ("?state=", "'state' is a text of 1 to 129 characters"),
        ("?state=" + "s" * 130, "'state' is a text of 1 to 129 characters"),
    ],
)
def test_bad_arguments_are_refused(http: httpx.Client, query: str, message: str) -> None:
    answer = http.get(f"/inbox{query}")
    assert (answer.status_code, answer.json()) == (
        422,
        {"error": message, "code": "invalid_argument"},
    )
