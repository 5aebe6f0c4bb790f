"""Every refusal code of the HTTP API (docs/reference/http-api.md), triggered over a real socket, with its
status and code."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from stateous.control.store.db import family_key
from tests.support.app import RunningApi, running_api
from tests.support.graphs import DEV, ORDERS


def refused(answer: httpx.Response, status: int, code: str, error: str | None = None) -> None:
    """The answer is the refusal envelope with this status, code (and sentence)."""
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error", "code"}
    assert body["code"] == code
    if error is not None:
        assert body["error"] == error


def start(http: httpx.Client, token: str = "ORDER-1", title: str = "first order") -> Any:
    answer = http.post("/tokens", json={"token": token, "context": {"title": title}})
    assert answer.status_code == 201, answer.text
    return answer.json()


def claimed(http: httpx.Client, supervisor: str = "box") -> Any:
    answer = http.post(
        "/tasks/claim", json={"supervisor": supervisor, "states": ["draft", "review"]}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_not_found_and_method_not_allowed(http: httpx.Client) -> None:
    refused(http.get("/x"), 404, "not_found", "this API has no /x")
    refused(http.post("/tasks/abc/report", json={}), 404, "not_found")
    refused(http.post("/tasks/-1/note", json={"text": "x"}), 404, "not_found")
    refused(http.put("/tokens"), 405, "method_not_allowed", "/tokens does not take PUT")
    refused(http.delete("/health"), 405, "method_not_allowed", "/health does not take DELETE")


def test_token_not_found(http: httpx.Client) -> None:
    message = "there is no token 'NOPE'"
    refused(http.get("/tokens/NOPE"), 404, "token_not_found", message)
    refused(http.get("/tokens/NOPE/history"), 404, "token_not_found", message)
    refused(http.post("/tokens/NOPE/events/submitted"), 404, "token_not_found", message)
    for verb in ("pause", "resume", "cancel"):
        refused(http.post(f"/tokens/NOPE/{verb}"), 404, "token_not_found", message)
    start(http)
    refused(http.get("/tokens/order-1"), 404, "token_not_found")


def test_task_not_found(http: httpx.Client) -> None:
    refused(
        http.post("/tasks/7/report", json={"kind": "failed", "error": ""}),
        404,
        "task_not_found",
        "there is no task 7",
    )
    refused(http.post("/tasks/7/note", json={"text": "hi"}), 404, "task_not_found")
    refused(http.put("/tasks/7/memory", json={"key": "k", "value": 1}), 404, "task_not_found")
    huge = str(2**63)
    refused(
        http.post(f"/tasks/{huge}/note", json={"text": "hi"}),
        404,
        "task_not_found",
        f"there is no task {huge}",
    )


def test_bad_request(http: httpx.Client) -> None:
    refused(http.post("/tokens", content=b'{"token": '), 400, "bad_request")
    refused(
        http.post("/tokens", content=b'{"token": "T", "context": {"x": NaN}}'), 400, "bad_request"
    )
    refused(http.post("/tokens", content=b'{"a": Infinity}'), 400, "bad_request")
    deep = b'{"a": ' + b"[" * 64 + b"]" * 64 + b"}"
    refused(
        http.post("/tokens", content=deep),
        400,
        "bad_request",
        "the body is not JSON: it is nested more than 64 levels deep",
    )
    refused(http.post("/tokens", content=b"[" * 100000 + b"]" * 100000), 400, "bad_request")
    big = b'{"token": "' + b"x" * (1_048_576) + b'"}'
    refused(
        http.post("/tokens", content=big),
        413,
        "bad_request",
        "the body is larger than 1 MiB, the most this API reads",
    )
    ok_depth = b'{"token": "T-1", "context": {"title": "t", "x": ' + b"[" * 62 + b"]" * 62 + b"}}"
    assert http.post("/tokens", content=ok_depth).status_code == 201


def test_chunked_body_over_the_limit(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"token": "'
        for _ in range(17):
            yield b"x" * 65536
        yield b'"}'

    refused(http.post("/tokens", content=chunks()), 413, "bad_request")


def test_invalid_body(http: httpx.Client) -> None:
    refused(http.post("/tokens", json=[1]), 422, "invalid_body", "the body must be a JSON object")
    refused(
        http.post("/tasks/claim", json={"supervisor": "b", "states": "draft"}), 422, "invalid_body"
    )
    refused(
        http.post("/tasks/claim", json={"supervisor": "b", "states": [""]}), 422, "invalid_body"
    )
    refused(
        http.post("/tasks/heartbeat", json={"supervisor": "b", "tasks": [True]}),
        422,
        "invalid_body",
    )
    refused(
        http.post("/tasks/heartbeat", json={"supervisor": "b", "tasks": [0]}), 422, "invalid_body"
    )
    for body in (
        {"kind": "done"},
        {"kind": "event"},
        {"kind": "failed"},
        {"kind": "event", "event": "submitted", "payload": [1]},
        {"kind": "event", "event": "submitted", "context": "x"},
        {"kind": "event", "event": "submitted", "schedules": [{"event": "x", "after": "0s"}]},
        {"kind": "event", "event": "submitted", "schedules": [{"event": "x", "after": "3651d"}]},
        {"kind": "event", "event": "submitted", "attempt": True},
        {"kind": "event", "event": "submitted", "attempt": 0},
    ):
        refused(http.post("/tasks/1/report", json=body), 422, "invalid_body")
    refused(
        http.put("/tasks/1/memory", json={"key": "k"}),
        422,
        "invalid_body",
        "memory needs a 'value'; null deletes the key",
    )


def test_invalid_argument(http: httpx.Client) -> None:
    for query in (
        "status=",
        "status=done",
        "limit=0",
        "limit=1001",
        "limit=x",
        "limit=" + "1" * 19,
        "parent=",
        "parent=" + "p" * 129,
    ):
        refused(http.get(f"/tokens?{query}"), 422, "invalid_argument")
    refused(
        http.post("/tasks/claim", json={"supervisor": "", "states": []}), 422, "invalid_argument"
    )
    refused(http.post("/tasks/claim", json={"states": []}), 422, "invalid_argument")
    refused(
        http.post("/tasks/claim", json={"supervisor": "b", "states": ["s"] * 1001}),
        422,
        "invalid_argument",
    )
    refused(
        http.post("/tasks/claim", json={"supervisor": "b", "states": [], "request": "a b"}),
        422,
        "invalid_argument",
    )
    refused(
        http.post("/tasks/heartbeat", json={"supervisor": "x" * 257, "tasks": []}),
        422,
        "invalid_argument",
    )
    refused(
        http.post("/tasks/heartbeat", json={"supervisor": "b", "tasks": [1] * 1001}),
        422,
        "invalid_argument",
    )
    refused(
        http.post("/tasks/1/report", json={"kind": "failed", "error": "", "supervisor": ""}),
        422,
        "invalid_argument",
    )
    message = "'attempt' is a whole number of 1 or more"
    refused(
        http.post("/tasks/1/note", json={"text": "x", "attempt": 0}),
        422,
        "invalid_argument",
        message,
    )
    refused(
        http.put("/tasks/1/memory", json={"key": "k", "value": 1, "attempt": "1"}),
        422,
        "invalid_argument",
        message,
    )


def test_invalid_token_id(http: httpx.Client) -> None:
    refused(
        http.post("/tokens", json={}),
        422,
        "invalid_token_id",
        "'token' is the token's id: a string",
    )
    refused(http.post("/tokens", json={"token": 5}), 422, "invalid_token_id")
    for bad in ("", "-x", "a b", "x" * 129, "é"):
        refused(
            http.post("/tokens", json={"token": bad, "context": {"title": "t"}}),
            422,
            "invalid_token_id",
        )
    start(http, "TICKET-1")
    refused(
        http.post("/tokens", json={"token": "ticket-1", "context": {"title": "t"}}),
        422,
        "invalid_token_id",
        "a token 'TICKET-1' already exists; token ids are compared without regard to case",
    )
    again = http.post("/tokens", json={"token": "TICKET-1", "context": 5})
    assert again.status_code == 422  # the context's shape is checked before the existing token


def test_existing_token_is_answered_unchanged(http: httpx.Client) -> None:
    first = start(http)
    again = http.post("/tokens", json={"token": "ORDER-1", "context": {"title": "other"}})
    assert again.status_code == 200 and again.json() == first


def test_invalid_context(http: httpx.Client) -> None:
    refused(
        http.post("/tokens", json={"token": "T", "context": [1]}),
        422,
        "invalid_context",
        "'context' must be a JSON object, or null",
    )
    refused(
        http.post("/tokens", json={"token": "T"}),
        422,
        "invalid_context",
        "orders: Item: 'title' is a required property",
    )
    refused(
        http.post("/tokens", json={"token": "T", "context": {"title": 5}}),
        422,
        "invalid_context",
        "orders: title: 5 is not of type 'string'",
    )
    start(http)
    task = claimed(http)
    refused(
        http.post(
            f"/tasks/{task['task']}/report",
            json={"kind": "event", "event": "submitted", "context": {"title": 1}},
        ),
        422,
        "invalid_context",
        "the context changes break the schema: title: 1 is not of type 'string'",
    )


def test_invalid_payload(http: httpx.Client) -> None:
    start(http)
    refused(
        http.post("/tokens/ORDER-1/events/submitted", json={"payload": [1]}),
        422,
        "invalid_payload",
        "'payload' must be a JSON object, or null",
    )
    refused(
        http.post("/tokens/ORDER-1/events/submitted", headers={"Idempotency-Key": ""}),
        422,
        "invalid_payload",
        "an idempotency key has 1 to 256 characters",
    )
    refused(
        http.post("/tokens/ORDER-1/events/submitted", headers={"Idempotency-Key": "k" * 257}),
        422,
        "invalid_payload",
    )
    refused(
        http.post("/tokens/ORDER-1/events/submitted", headers={"Idempotency-Key": "a\tb"}),
        422,
        "invalid_payload",
        "an idempotency key has no control characters",
    )
    refused(
        http.post("/tokens/ORDER-1/events/reviewed", json={"payload": {"approved": "yes"}}),
        422,
        "invalid_payload",
        "reviewed: approved: 'yes' is not of type 'boolean'",
    )
    refused(
        http.post("/tokens/ORDER-1/events/submitted", json={"payload": {"a": 1}}),
        422,
        "invalid_payload",
    )
    task = claimed(http)["task"]
    refused(
        http.post(f"/tasks/{task}/note", json={"text": "   "}),
        422,
        "invalid_payload",
        "a note needs a 'text' of 1 to 500 characters",
    )
    refused(http.post(f"/tasks/{task}/note", json={"text": "x" * 501}), 422, "invalid_payload")
    refused(
        http.put(f"/tasks/{task}/memory", json={"key": "", "value": 1}),
        422,
        "invalid_payload",
        "'key' is a string of 1 to 128 characters",
    )
    schedule = {
        "kind": "waiting",
        "supervisor": "box",
        "schedules": [{"event": "timeout", "after": "1h"}],
    }
    refused(
        http.post(f"/tasks/{task}/report", json=schedule),
        422,
        "invalid_payload",
        "a timer names 'timeout', which is not an event of 'orders'",
    )
    schedule["schedules"] = [{"event": "reviewed", "payload": {"approved": 1}, "after": "1h"}]
    refused(http.post(f"/tasks/{task}/report", json=schedule), 422, "invalid_payload")
    history = http.get("/tokens/ORDER-1/history").json()
    assert [entry["kind"] for entry in history][-1] == "task_claimed"  # nothing was written


def test_event_not_allowed_is_recorded(http: httpx.Client) -> None:
    start(http)
    cases = [
        ("joined", "'joined' is Stateous's own event; only Stateous fires it"),
        ("nothing", "the workflow 'orders' has no event 'nothing'"),
        ("reviewed", "no transition for 'reviewed' from 'draft'"),
    ]
    for event, reason in cases:
        payload = {"payload": {"approved": True}} if event == "reviewed" else {}
        refused(
            http.post(f"/tokens/ORDER-1/events/{event}", json=payload),
            409,
            "event_not_allowed",
            reason,
        )
    task = claimed(http)["task"]
    reason = "'draft' may not emit 'reviewed'; it may emit: submitted"
    body = {
        "kind": "event",
        "event": "reviewed",
        "payload": {"approved": True},
        "supervisor": "box",
    }
    refused(http.post(f"/tasks/{task}/report", json=body), 409, "event_not_allowed", reason)
    rejected = [
        e["data"]
        for e in http.get("/tokens/ORDER-1/history").json()
        if e["kind"] == "event_rejected"
    ]
    assert rejected == [{"event": e, "reason": r} for e, r in [*cases, ("reviewed", reason)]]


def test_token_not_active(http: httpx.Client) -> None:
    start(http)
    assert http.post("/tokens/ORDER-1/cancel").status_code == 200
    reason = "token 'ORDER-1' is cancelled; it takes no events"
    refused(http.post("/tokens/ORDER-1/events/submitted"), 409, "token_not_active", reason)
    refused(
        http.post("/tokens/ORDER-1/pause"),
        409,
        "token_not_active",
        "token 'ORDER-1' is cancelled; only an active token can be paused",
    )
    refused(
        http.post("/tokens/ORDER-1/resume"),
        409,
        "token_not_active",
        "token 'ORDER-1' is cancelled; only a paused token can be resumed",
    )
    refused(
        http.post("/tokens/ORDER-1/cancel"),
        409,
        "token_not_active",
        "token 'ORDER-1' is cancelled; only an active or paused token can be cancelled",
    )
    assert http.get("/tokens/ORDER-1/history").json()[-1]["data"] == {
        "event": "submitted",
        "reason": reason,
    }


def test_task_not_held_and_attempt_over(http: httpx.Client) -> None:
    start(http)
    task = claimed(http)["task"]
    refused(
        http.post(
            f"/tasks/{task}/report", json={"kind": "event", "event": "submitted", "attempt": 2}
        ),
        409,
        "task_not_held",
        f"task {task} is at attempt 1, not attempt 2",
    )
    refused(
        http.post(
            f"/tasks/{task}/report",
            json={"kind": "event", "event": "submitted", "supervisor": "other"},
        ),
        409,
        "task_not_held",
        f"task {task} is not held by 'other'",
    )
    refused(
        http.post(f"/tasks/{task}/report", json={"kind": "waiting"}),
        409,
        "task_not_held",
        "only the supervisor that holds a task reports it waiting",
    )
    failed = http.post(
        f"/tasks/{task}/report", json={"kind": "failed", "error": "boom", "attempt": 1}
    )
    assert failed.status_code == 200 and failed.json()["status"] == "failed"
    refused(
        http.post(f"/tasks/{task}/note", json={"text": "late"}),
        409,
        "task_not_held",
        f"task {task} is failed; no one works on it now",
    )
    refused(
        http.post(
            f"/tasks/{task}/report", json={"kind": "event", "event": "submitted", "attempt": 0 + 1}
        ),
        409,
        "task_not_held",
    )


def test_attempt_over(sdlc_http: httpx.Client) -> None:
    http = sdlc_http
    assert http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}}).status_code == 201
    grant = http.post("/tasks/claim", json={"supervisor": "a", "states": ["coding"]}).json()
    retried = http.post(
        f"/tasks/{grant['task']}/report",
        json={"kind": "failed", "error": "x", "supervisor": "a", "attempt": 1},
    )
    assert retried.status_code == 200
    refused(
        http.post(f"/tasks/{grant['task']}/note", json={"text": "late", "attempt": 1}),
        409,
        "task_not_held",
    )
    http.post("/tasks/claim", json={"supervisor": "b", "states": ["coding"]})
    refused(
        http.post(
            f"/tasks/{grant['task']}/report", json={"kind": "event", "event": "done", "attempt": 1}
        ),
        409,
        "attempt_over",
        f"task {grant['task']} is at attempt 2, not attempt 1",
    )


def test_child_token(db_url: str) -> None:
    with running_api(db_url, DEV) as api, httpx.Client(base_url=api.url) as http:
        http.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}})
        grant = http.post("/tasks/claim", json={"supervisor": "box", "states": ["coding"]}).json()
        assert (
            http.post(
                f"/tasks/{grant['task']}/report", json={"kind": "event", "event": "done"}
            ).json()["state"]
            == "reviews"
        )
        child = "T.reviews.1.design-review"
        assert http.get(f"/tokens/{child}").json()["parent"] == "T"
        refused(
            http.post(f"/tokens/{child}/pause"),
            409,
            "child_token",
            f"token {child!r} is a child of 'T': it is part of its parent's work, and cannot be paused on its own; pause 'T' instead",
        )
        refused(http.post(f"/tokens/{child}/resume"), 409, "child_token")
        refused(http.post(f"/tokens/{child}/cancel"), 409, "child_token")


def test_not_serving(api: RunningApi, http: httpx.Client) -> None:
    api.plane.serving = False
    message = (
        "another control plane took this database; this control plane does no more work; "
        "trying again does not help: stop this server"
    )
    refused(http.get("/health"), 503, "not_serving", message)
    refused(http.post("/tokens", json={"token": "T"}), 503, "not_serving", message)


def test_database_busy(backend: str, db_url: str) -> None:
    with running_api(db_url, ORDERS, busy=0.3) as api, httpx.Client(base_url=api.url) as http:
        message = "the database cannot take this request now; try again"
        if backend == "sqlite":
            path = db_url.removeprefix("sqlite:///")
            locker = sqlite3.connect(path, isolation_level=None)
            locker.execute("BEGIN EXCLUSIVE")
            try:
                refused(
                    http.post("/tokens", json={"token": "T-1", "context": {"title": "t"}}),
                    503,
                    "database_busy",
                    message,
                )
            finally:
                locker.execute("ROLLBACK")
                locker.close()
        else:
            dsn = db_url.replace("postgresql://", "postgresql://", 1)
            with psycopg.connect(dsn) as pg_locker:
                pg_locker.execute("SELECT pg_advisory_xact_lock(%s)", (family_key("T-1"),))
                refused(
                    http.post("/tokens", json={"token": "T-1", "context": {"title": "t"}}),
                    503,
                    "database_busy",
                    message,
                )
        assert (
            http.post("/tokens", json={"token": "T-1", "context": {"title": "t"}}).status_code
            == 201
        )


def test_unexpected_has_no_traceback(backend: str, db_url: str) -> None:
    if backend != "postgres":
        pytest.skip("a missing table is an operational error on SQLite (database_busy)")
    with running_api(db_url, ORDERS) as api, httpx.Client(base_url=api.url) as http:
        with psycopg.connect(db_url) as conn:
            conn.execute("DROP TABLE ledger")
        answer = http.get("/tokens/T/history")
        assert answer.status_code == 404
        http.post("/tokens", json={"token": "T-2", "context": {"title": "t"}})
        answer = http.post("/tokens", json={"token": "T-3", "context": {"title": "t"}})
        refused(answer, 500, "unexpected", "the request failed unexpectedly")
        assert "Traceback" not in answer.text


def test_options_and_head_are_not_methods_of_this_api(http: httpx.Client) -> None:
    refused(http.options("/tokens"), 405, "method_not_allowed", "/tokens does not take OPTIONS")
    assert http.head("/health").status_code == 405
