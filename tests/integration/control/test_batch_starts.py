"""`POST /tokens/batch` over a real socket, on SQLite and Postgres: each start with
the checks, rows and refusals of `POST /tokens`, in order; a malformed body starts nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.support.app import RunningApi
from tests.support.rows import leave_stray_ledger_row


def starts(http: httpx.Client, items: list[Any]) -> httpx.Response:
    """`POST /tokens/batch`."""
    return http.post("/tokens/batch", json={"tokens": items})


def token_count(api: RunningApi) -> int:
    """How many tokens the database holds."""
    with api.plane.store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM tokens")).scalar_one())


def test_starts_new_existing_and_refused_tokens_in_order(
    api: RunningApi, http: httpx.Client
) -> None:
    existing = http.post("/tokens", json={"token": "O-0", "context": {"title": "old"}}).json()
    answer = starts(
        http,
        [
            {"token": "O-1", "context": {"title": "one"}},
            {"token": "O-0", "context": {"title": "ignored"}},
            {"token": "-bad", "context": {"title": "x"}},
            {"token": "O-2", "context": {"title": 5}},
            {"token": "o-1", "context": {"title": "x"}},
            {"token": 7},
            {"token": "O-3", "context": [1]},
            {"token": "O-1", "context": {"title": "again"}},
            {"token": "O-4", "context": {"title": "four"}, "key": "k-4"},
        ],
    )
    assert answer.status_code == 200
    answers = answer.json()["answers"]
    assert [(a["status"], a["body"].get("code")) for a in answers] == [
        (201, None),
        (200, None),
        (422, "invalid_token_id"),
        (422, "invalid_context"),
        (422, "invalid_token_id"),
        (422, "invalid_token_id"),
        (422, "invalid_context"),
        (200, None),
        (201, None),
    ]
    assert answers[1]["body"] == existing
    assert answers[4]["body"]["error"] == (
        "a token 'O-1' already exists; token ids are compared without regard to case"
    )
    assert answers[0]["body"] == answers[7]["body"] == http.get("/tokens/O-1").json()
    # The same rows as POST /tokens: started, __started__, entered, task_queued. (The task's
    # id is the one the table holds: on Postgres a batch with a refusal runs again after a
    # rollback, and a sequence does not give back the ids the first run took.)
    with api.plane.store.engine.connect() as conn:
        task = conn.execute(text("SELECT id FROM tasks WHERE token = 'O-1'")).scalar_one()
    ledger = [(e["kind"], e["data"]) for e in http.get("/tokens/O-1/history").json()]
    assert ledger == [
        ("started", {"context": {"title": "one", "verdict": None}}),
        ("event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        ("entered", {"state": "draft", "visit": 1}),
        ("task_queued", {"task": task, "state": "draft"}),
    ]
    assert token_count(api) == 3
    # Each refusal is the one POST /tokens answers for the same body.
    for item, got in zip(
        [{"token": "-bad", "context": {"title": "x"}}, {"token": "O-2", "context": {"title": 5}}],
        [answers[2], answers[3]],
        strict=True,
    ):
        single = http.post("/tokens", json=item)
        assert got == {"status": single.status_code, "body": single.json()}


def test_a_batch_retried_whole_starts_nothing_twice(api: RunningApi, http: httpx.Client) -> None:
    items = [{"token": f"B-{n}", "context": {"title": str(n)}} for n in range(1, 51)]
    first = starts(http, items)
    assert {a["status"] for a in first.json()["answers"]} == {201}
    again = starts(http, items)
    assert [a["status"] for a in again.json()["answers"]] == [200] * 50
    assert [a["body"] for a in again.json()["answers"]] == [
        a["body"] for a in first.json()["answers"]
    ]
    assert token_count(api) == 50
    kinds = [e["kind"] for e in http.get("/tokens/B-50/history").json()]
    assert kinds == ["started", "event_accepted", "entered", "task_queued"]


def test_a_thousand_starts_in_one_request(api: RunningApi, http: httpx.Client) -> None:
    items = [{"token": f"M-{n}", "context": {"title": "t"}} for n in range(1000)]
    answer = starts(http, items)
    assert [a["status"] for a in answer.json()["answers"]] == [201] * 1000
    assert token_count(api) == 1000


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "'tokens' is a list of 1 to 1000 starts"),
        ({"tokens": []}, "'tokens' is a list of 1 to 1000 starts"),
        ({"tokens": {"token": "A"}}, "'tokens' is a list of 1 to 1000 starts"),
        (
            {"tokens": [{"token": f"X-{n}"} for n in range(1001)]},
            "'tokens' is a list of 1 to 1000 starts",
        ),
        (
            {"tokens": [{"token": "X-1"}, "X-2"]},
            "start 2 is not an object with a 'token' and a 'context'",
        ),
    ],
)
def test_a_malformed_body_is_invalid_body_and_starts_nothing(
    api: RunningApi, http: httpx.Client, body: dict[str, Any], error: str
) -> None:
    answer = http.post("/tokens/batch", json=body)
    assert answer.status_code == 422
    assert answer.json() == {"error": error, "code": "invalid_body"}
    assert token_count(api) == 0


def test_a_bad_by_refuses_that_start_alone(api: RunningApi, http: httpx.Client) -> None:
    answer = starts(
        http, [{"token": "A-1", "by": {"actor": ""}}, {"token": "A-2", "context": {"title": "t"}}]
    )
    answers = answer.json()["answers"]
    assert (answers[0]["status"], answers[0]["body"]["code"]) == (422, "invalid_body")
    assert answers[1]["status"] == 201
    assert token_count(api) == 1


def test_a_token_named_batch_is_still_read_at_its_path(http: httpx.Client) -> None:
    missing = http.get("/tokens/batch")
    assert (missing.status_code, missing.json()["code"]) == (404, "token_not_found")
    started = starts(http, [{"token": "batch", "context": {"title": "t"}}]).json()["answers"][0]
    assert started["status"] == 201
    assert http.get("/tokens/batch").json() == started["body"]
    assert http.put("/tokens/batch").status_code == 405


def test_a_part_the_database_refuses_is_started_again_one_by_one(
    api: RunningApi, http: httpx.Client
) -> None:
    # A ledger row without its token: the first seq of `R-2` is taken, so the part's shared
    # insert fails (`Raced`) and its starts run again one by one, as `POST /tokens` would.
    with api.plane.store.engine.begin() as conn:
        leave_stray_ledger_row(conn, "R-2")
    items = [{"token": f"R-{n}", "context": {"title": str(n)}} for n in range(1, 4)]
    answers = starts(http, items).json()["answers"]
    assert [(a["status"], a["body"].get("code")) for a in answers] == [
        (201, None),
        (422, "invalid_token_id"),
        (201, None),
    ]
    assert answers[1]["body"]["error"] == (
        "a token id differs only in case from one that another call made at the same time; "
        "token ids are compared without regard to case"
    )
    assert token_count(api) == 2
    kinds = [e["kind"] for e in http.get("/tokens/R-3/history").json()]
    assert kinds == ["started", "event_accepted", "entered", "task_queued"]
