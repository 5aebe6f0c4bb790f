"""`POST /tasks/messages` keeps each task's messages in order: once a
message of a task fails for the moment (`503 database_busy`), the later messages of that task in
the batch are not applied and answered the same `503`, while the other tasks' messages are.

Over a real socket, on SQLite and Postgres. The failure is a real database error of one message:
on Postgres another connection holds the lock of the memory row the message replaces (the
control plane's `lock_timeout` ends its wait); on SQLite a trigger makes every memory insert fail
(`no such function`), which the store answers as any database error, `database_busy`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from stateous.control.clock import FakeClock
from stateous.control.store.db import normalize_url
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS

BOX = "box-1"
BUSY = {
    "status": 503,
    "body": {
        "error": "the database cannot take this request now; try again",
        "code": "database_busy",
    },
}
DONE = {"status": 204, "body": None}


@pytest.fixture
def served(migrated_db_url: str) -> Iterator[RunningApi]:
    """The orders starter, O-1 and O-2 claimed by BOX (tasks 1 and 2); O-1 has memory `k`.
    A lock is waited for 1 second at most."""
    with (
        running_api(migrated_db_url, ORDERS, FakeClock(), busy=1.0, migrate_first=False) as running,
        httpx.Client(base_url=running.url, timeout=30) as http,
    ):
        for number in (1, 2):
            http.post("/tokens", json={"token": f"O-{number}", "context": {"title": "t"}})
        claimed = http.post("/tasks/claim", json={"supervisor": BOX, "states": ["draft"], "max": 2})
        assert [g["task"] for g in claimed.json()["grants"]] == [1, 2]
        assert http.put("/tasks/1/memory", json={"key": "k", "value": 1}).status_code == 204
        yield running


@contextmanager
def memory_fails(db_url: str) -> Iterator[None]:
    """While inside, replacing O-1's memory `k` fails with a database error."""
    engine = create_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "postgresql":
                with conn.begin():  # the row stays locked until this transaction ends
                    conn.execute(
                        text("SELECT 1 FROM memory WHERE token = 'O-1' AND key = 'k' FOR UPDATE")
                    )
                    yield
                return
            with conn.begin():
                conn.execute(
                    text(
                        "CREATE TRIGGER memory_fails BEFORE INSERT ON memory "
                        "BEGIN SELECT stateous_no_such_function(); END"
                    )
                )
            try:
                yield
            finally:
                with conn.begin():
                    conn.execute(text("DROP TRIGGER memory_fails"))
    finally:
        engine.dispose()


def note(task: int, words: str) -> dict[str, Any]:
    """A note message of attempt 1."""
    return {"type": "note", "task": task, "body": {"text": words, "attempt": 1}}


def memory(task: int, key: str, value: Any) -> dict[str, Any]:
    """A memory message of attempt 1."""
    return {"type": "memory", "task": task, "body": {"key": key, "value": value, "attempt": 1}}


def report(task: int) -> dict[str, Any]:
    """A report of `submitted`, attempt 1."""
    body = {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": BOX}
    return {"type": "report", "task": task, "body": body}


def send(http: httpx.Client, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`POST /tasks/messages` from BOX: the answers."""
    answer = http.post("/tasks/messages", json={"supervisor": BOX, "messages": messages})
    assert answer.status_code == 200
    answers: list[dict[str, Any]] = answer.json()["answers"]
    return answers


def after_claim(http: httpx.Client, token: str) -> list[tuple[str, dict[str, Any]]]:
    """(kind, data) of a token's ledger after its claim (and O-1's memory write of the fixture)."""
    skip = 6 if token == "O-1" else 5
    return [(e["kind"], e["data"]) for e in http.get(f"/tokens/{token}/history").json()[skip:]]


def memory_of(served: RunningApi) -> list[tuple[str, str, Any]]:
    """The memory rows: (token, key, value)."""
    with served.plane.store.engine.connect() as conn:
        rows = conn.execute(text("SELECT token, key, value FROM memory ORDER BY token, key"))
        return [(row.token, row.key, row.value) for row in rows]


def test_a_task_stops_at_its_message_that_failed_for_the_moment(
    served: RunningApi, db_url: str
) -> None:
    batch = [
        note(1, "before"),
        memory(1, "k", 2),  # fails: the database is busy for it
        note(2, "other"),
        note(1, "after"),  # would apply, but must come after the memory write
        report(1),
        note(2, "other too"),
    ]
    with httpx.Client(base_url=served.url, timeout=30) as http:
        with memory_fails(db_url):
            answers = send(http, batch)
        assert answers == [DONE, BUSY, DONE, BUSY, BUSY, DONE]
        assert after_claim(http, "O-1") == [("note", {"task": 1, "text": "before"})]
        assert memory_of(served) == [("O-1", "k", 1)]
        assert after_claim(http, "O-2") == [
            ("note", {"task": 2, "text": "other"}),
            ("note", {"task": 2, "text": "other too"}),
        ]
        # The supervisor sends them again, in order: now each is applied, in that order.
        assert send(http, batch[1:2] + batch[3:5])[:2] == [DONE, DONE]
        assert [kind for kind, _ in after_claim(http, "O-1")] == [
            "note",
            "memory_set",
            "note",
            "event_accepted",
            "task_done",
            "entered",
            "task_queued",
        ]
        assert after_claim(http, "O-1")[2] == ("note", {"task": 1, "text": "after"})


def test_a_refusal_for_good_does_not_stop_the_tasks_later_messages(served: RunningApi) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        answers = send(http, [memory(1, "", 1), note(1, "still")])
        assert answers[0]["status"] == 422
        assert answers[1] == DONE
        assert after_claim(http, "O-1") == [("note", {"task": 1, "text": "still"})]
