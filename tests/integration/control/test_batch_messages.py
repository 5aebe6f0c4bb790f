"""`POST /tasks/messages` over a real socket, on SQLite and Postgres: messages in
order, each with its single route's checks, rows and refusals; a malformed body applies nothing;
a batch retried whole applies nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock, iso
from stateous.model.canonical import structure
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS

BOX = "box-1"


@pytest.fixture
def served(migrated_db_url: str, clock: FakeClock) -> Iterator[RunningApi]:
    """The orders starter on a fake clock, with O-1 … O-3 claimed by BOX (tasks 1 … 3)."""
    with (
        running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as running,
        httpx.Client(base_url=running.url) as http,
    ):
        for number in (1, 2, 3):
            http.post("/tokens", json={"token": f"O-{number}", "context": {"title": "t"}})
        claimed = http.post("/tasks/claim", json={"supervisor": BOX, "states": ["draft"], "max": 3})
        assert [g["task"] for g in claimed.json()["grants"]] == [1, 2, 3]
        yield running


@pytest.fixture
def client(served: RunningApi) -> Iterator[httpx.Client]:
    """A client of the served app."""
    with httpx.Client(base_url=served.url, timeout=30) as http:
        yield http


def send(http: httpx.Client, messages: list[Any], **extra: Any) -> httpx.Response:
    """`POST /tasks/messages` from BOX."""
    return http.post("/tasks/messages", json={"supervisor": BOX, "messages": messages, **extra})


def report(task: int, event: str = "submitted", attempt: int = 1, **body: Any) -> dict[str, Any]:
    """A report message of an event."""
    return {
        "type": "report",
        "task": task,
        "body": {"kind": "event", "event": event, "attempt": attempt, "supervisor": BOX, **body},
    }


def note(task: int, words: str, attempt: int = 1) -> dict[str, Any]:
    """A note message."""
    return {"type": "note", "task": task, "body": {"text": words, "attempt": attempt}}


def memory(task: int, key: str, value: Any, attempt: int = 1) -> dict[str, Any]:
    """A memory message."""
    return {
        "type": "memory",
        "task": task,
        "body": {"key": key, "value": value, "attempt": attempt},
    }


def history(http: httpx.Client, token: str) -> list[tuple[str, dict[str, Any]]]:
    """(kind, data) of a token's ledger after its claim (seq 6 on)."""
    return [(e["kind"], e["data"]) for e in http.get(f"/tokens/{token}/history").json()[5:]]


def ledger_size(served: RunningApi) -> int:
    """How many ledger rows the database holds."""
    with served.plane.store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM ledger")).scalar_one())


def refusal(status: int, code: str, error: str) -> dict[str, Any]:
    """An answer holding a refusal envelope."""
    return {"status": status, "body": {"error": error, "code": code}}


#: The structure of the orders graph these tokens run on.
ORDERS_STRUCTURE = structure(ORDERS)


def token_answer(token: str, state: str, clock: FakeClock) -> dict[str, Any]:
    """A `200` answer with an orders token, entered now."""
    return {
        "status": 200,
        "body": {
            "token": token,
            "state": state,
            "status": "active",
            "visit": 1,
            "context": {"title": "t", "verdict": None},
            "entered_at": iso(clock.now()),
            "structure": ORDERS_STRUCTURE,
        },
    }


def test_messages_apply_in_order_with_their_single_routes_rows(
    client: httpx.Client, clock: FakeClock
) -> None:
    clock.advance(1)
    answer = send(
        client,
        [note(1, "  looking  "), memory(1, "session", {"id": 7}), report(1), memory(2, "k", 1)],
    )
    assert answer.status_code == 200
    assert answer.json() == {
        "answers": [
            {"status": 204, "body": None},
            {"status": 204, "body": None},
            token_answer("O-1", "review", clock),
            {"status": 204, "body": None},
        ]
    }
    assert history(client, "O-1") == [
        ("note", {"task": 1, "text": "looking"}),
        ("memory_set", {"state": "draft", "memory_key": "session"}),
        ("event_accepted", {"event": "submitted", "payload": None, "state": "draft"}),
        ("task_done", {"task": 1}),
        ("entered", {"state": "review", "visit": 1}),
        ("task_queued", {"task": 4, "state": "review"}),
    ]
    assert history(client, "O-2") == [("memory_set", {"state": "draft", "memory_key": "k"})]
    metrics = client.get("/metrics").text.splitlines()
    assert "stateous_reports_total 1.0" in metrics
    # Each message was its own operation: its own `at` (the same here: the clock stood still).
    ats = {e["at"] for e in client.get("/tokens/O-1/history").json()[5:]}
    assert ats == {iso(clock.now())}


def test_a_refused_message_does_not_stop_the_ones_after_it(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    answer = send(
        client,
        [
            report(1),
            report(2, "reviewed", payload={"approved": True}),  # recorded refusal
            note(99, "x"),
            {"type": "report", "task": 3, "body": {"kind": "bogus"}},
            {"type": "memory", "task": 3, "body": {"key": "k"}},
            note(3, "   "),
            note(2**63, "x"),
            report(3, attempt=2),
            {"type": "note", "task": 1, "body": {"text": "late", "attempt": 1}},
            report(3),
        ],
    )
    assert answer.status_code == 200
    answers = answer.json()["answers"]
    assert answers == [
        token_answer("O-1", "review", clock),
        refusal(
            409,
            "event_not_allowed",
            "'draft' may not emit 'reviewed'; it may emit: submitted",
        ),
        refusal(404, "task_not_found", "there is no task 99"),
        refusal(422, "invalid_body", "a report's 'kind' is 'event', 'waiting' or 'failed'"),
        refusal(422, "invalid_body", "memory needs a 'value'; null deletes the key"),
        refusal(422, "invalid_payload", "a note needs a 'text' of 1 to 500 characters"),
        refusal(404, "task_not_found", f"there is no task {2**63}"),
        refusal(409, "task_not_held", "task 3 is at attempt 1, not attempt 2"),
        refusal(409, "task_not_held", "task 1 is done; no one works on it now"),
        token_answer("O-3", "review", clock),
    ]
    # The recorded refusal committed its row; the others wrote nothing.
    assert history(client, "O-2") == [
        ("event_rejected", {"event": "reviewed", "reason": answers[1]["body"]["error"]}),
    ]
    assert [kind for kind, _ in history(client, "O-3")] == [
        "event_accepted",
        "task_done",
        "entered",
        "task_queued",
    ]


def test_the_answers_equal_the_single_routes_answers(client: httpx.Client) -> None:
    batch = send(client, [report(1, attempt=2), note(1, "x" * 501), memory(1, "", 1)])
    singles = [
        client.post("/tasks/1/report", json=report(1, attempt=2)["body"]),
        client.post("/tasks/1/note", json=note(1, "x" * 501)["body"]),
        client.put("/tasks/1/memory", json=memory(1, "", 1)["body"]),
    ]
    assert batch.json()["answers"] == [{"status": s.status_code, "body": s.json()} for s in singles]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"messages": [note(1, "x")]}, "'supervisor' is a string of 1 to 256 characters"),
        ({"supervisor": "", "messages": [note(1, "x")]}, None),
        ({"supervisor": BOX}, "'messages' is a list of 1 to 100 messages"),
        ({"supervisor": BOX, "messages": []}, "'messages' is a list of 1 to 100 messages"),
        ({"supervisor": BOX, "messages": [note(1, "x")] * 101}, None),
        ({"supervisor": BOX, "messages": {"0": note(1, "x")}}, None),
        ({"supervisor": BOX, "messages": [note(1, "x"), "note"]}, "message 2"),
        ({"supervisor": BOX, "messages": [{"type": "fire", "task": 1, "body": {}}]}, "message 1"),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": "1", "body": {}}]}, None),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": -1, "body": {}}]}, None),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": True, "body": {}}]}, None),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": 1.0, "body": {}}]}, None),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": 1, "body": None}]}, None),
        ({"supervisor": BOX, "messages": [{"type": "note", "task": 1}]}, None),
    ],
)
def test_a_malformed_body_is_invalid_body_and_applies_nothing(
    served: RunningApi, client: httpx.Client, body: dict[str, Any], error: str | None
) -> None:
    before = ledger_size(served)
    # A good message first: it must not be applied either.
    if isinstance(body.get("messages"), list) and body["messages"]:
        body = {**body, "messages": [note(1, "first"), *body["messages"]]}
    answer = client.post("/tasks/messages", json=body)
    assert answer.status_code == 422
    assert answer.json()["code"] == "invalid_body"
    if error is not None and error.startswith("message "):
        number = int(error.split()[1]) + 1  # the good message went first
        assert answer.json()["error"].startswith(f"message {number} is not an object")
    elif error is not None:
        assert answer.json()["error"] == error
    assert ledger_size(served) == before


def test_a_body_that_is_not_json_is_refused(client: httpx.Client) -> None:
    answer = client.post("/tasks/messages", content=b"{nope")
    assert (answer.status_code, answer.json()["code"]) == (400, "bad_request")
    assert client.get("/tasks/messages").status_code == 405


def test_a_batch_retried_whole_applies_nothing_twice(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    messages = [note(1, "working"), memory(1, "k", "v"), report(1), report(2)]
    first = send(client, messages)
    assert [a["status"] for a in first.json()["answers"]] == [204, 204, 200, 200]
    rows = ledger_size(served)
    clock.advance(5)
    # The answer was lost: the supervisor sends the same messages again.
    again = send(client, messages)
    assert again.json()["answers"] == [
        refusal(409, "task_not_held", "task 1 is done; no one works on it now"),
        refusal(409, "task_not_held", "task 1 is done; no one works on it now"),
        refusal(409, "task_not_held", "task 1 is done; no one works on it now"),
        refusal(409, "task_not_held", "task 2 is done; no one works on it now"),
    ]
    assert ledger_size(served) == rows
    assert [kind for kind, _ in history(client, "O-1")] == [
        "note",
        "memory_set",
        "event_accepted",
        "task_done",
        "entered",
        "task_queued",
    ]
