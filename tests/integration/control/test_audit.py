"""Who did it, and why, over a real socket on SQLite and Postgres: `by` on every
operator route as the last key of the act's row, named tokens, refusals, and `GET /audit`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock
from tests.support.app import running_api
from tests.support.graphs import ORDERS

T0 = "2026-10-16T20:48:44.845389Z"
T1 = "2026-10-16T20:48:45.845389Z"
T2 = "2026-10-16T20:48:46.845389Z"
ALICE = {"actor": "alice", "reason": "the vendor is down", "via": "console"}
BOB = {"actor": "bob", "via": "cli"}


#: The app runs on the `clock` fixture of conftest.py (a FakeClock).
pytestmark = pytest.mark.fake_clock


def rows(http: httpx.Client, token: str) -> list[tuple[int, str, dict[str, Any]]]:
    answer = http.get(f"/tokens/{token}/history")
    assert answer.status_code == 200, answer.text
    return [(row["seq"], row["kind"], row["data"]) for row in answer.json()]


def ok(answer: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    return dict(answer.json())


def test_without_by_the_rows_are_those_of_spec_30(http: httpx.Client) -> None:
    ok(http.post("/tokens", json={"token": "ORDER-1", "context": {"title": "x"}}), 201)
    ok(http.post("/tokens/ORDER-1/pause"))
    ok(http.post("/tokens/ORDER-1/resume", json={}))
    assert rows(http, "ORDER-1") == [
        (1, "started", {"context": {"title": "x", "verdict": None}}),
        (2, "event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        (3, "entered", {"state": "draft", "visit": 1}),
        (4, "task_queued", {"task": 1, "state": "draft"}),
        (5, "paused", {}),
        (6, "resumed", {}),
    ]
    assert http.get("/audit").json() == []


def test_by_is_the_last_key_of_each_act(http: httpx.Client, clock: FakeClock) -> None:
    body = {"token": "ORDER-1", "context": {"title": "x"}, "by": BOB}
    ok(http.post("/tokens", json=body), 201)
    clock.advance(1)
    ok(http.post("/tokens/ORDER-1/pause", json={"by": ALICE}))
    ok(http.post("/tokens/ORDER-1/events/submitted", json={"by": {"actor": "carol"}}))
    clock.advance(1)
    ok(http.post("/tokens/ORDER-1/resume", json={"by": {"actor": "bob", "reason": ""}}))
    ok(http.post("/tokens/ORDER-1/cancel", json={"by": {**BOB, "reason": "duplicate"}}))
    history = rows(http, "ORDER-1")
    assert history[0] == (1, "started", {"context": {"title": "x", "verdict": None}, "by": BOB})
    assert [list(data)[-1] for _, _, data in history if "by" in data] == ["by"] * 5
    acted = [(seq, kind, data["by"]) for seq, kind, data in history if "by" in data]
    assert acted == [
        (1, "started", BOB),
        (5, "paused", ALICE),
        (6, "event_deferred", {"actor": "carol"}),
        (7, "resumed", {"actor": "bob"}),
        (14, "cancelled", {"actor": "bob", "reason": "duplicate", "via": "cli"}),
    ]
    assert history[5] == (
        6, "event_deferred",
        {"event": "submitted", "payload": None, "arrival": 1, "by": {"actor": "carol"}},
    )  # fmt: skip
    audit = http.get("/audit").json()
    assert audit == [
        {"token": "ORDER-1", "seq": 14, "at": T2, "kind": "cancelled", "actor": "bob",
         "via": "cli", "reason": "duplicate", "bulk": None},
        {"token": "ORDER-1", "seq": 7, "at": T2, "kind": "resumed", "actor": "bob",
         "via": None, "reason": None, "bulk": None},
        {"token": "ORDER-1", "seq": 6, "at": T1, "kind": "event_deferred", "actor": "carol",
         "via": None, "reason": None, "bulk": None},
        {"token": "ORDER-1", "seq": 5, "at": T1, "kind": "paused", "actor": "alice",
         "via": "console", "reason": "the vendor is down", "bulk": None},
        {"token": "ORDER-1", "seq": 1, "at": T0, "kind": "started", "actor": "bob",
         "via": "cli", "reason": None, "bulk": None},
    ]  # fmt: skip


def test_a_fire_that_moves_the_token_marks_event_accepted(http: httpx.Client) -> None:
    ok(http.post("/tokens", json={"token": "ORDER-2", "context": {"title": "x"}}), 201)
    ok(http.post("/tokens/ORDER-2/events/submitted", json={"by": BOB}))
    assert rows(http, "ORDER-2")[4:] == [
        (5, "event_accepted", {"event": "submitted", "payload": None, "state": "draft", "by": BOB}),
        (6, "task_cancelled", {"task": 1}),
        (7, "entered", {"state": "review", "visit": 1}),
        (8, "task_queued", {"task": 2, "state": "review"}),
    ]


def test_an_outside_report_carries_by(http: httpx.Client) -> None:
    ok(http.post("/tokens", json={"token": "ORDER-3", "context": {"title": "x"}}), 201)
    claim = ok(http.post("/tasks/claim", json={"supervisor": "s1", "states": ["draft"]}))
    body = {"kind": "event", "event": "submitted", "by": ALICE}
    ok(http.post(f"/tasks/{claim['task']}/report", json=body))
    assert rows(http, "ORDER-3")[5] == (
        6, "event_accepted",
        {"event": "submitted", "payload": None, "state": "draft", "by": ALICE},
    )  # fmt: skip
    # A supervisor's own report is not an operator's act, even with a `by`.
    claim = ok(http.post("/tasks/claim", json={"supervisor": "s1", "states": ["review"]}))
    body = {"kind": "event", "event": "reviewed", "payload": {"approved": True},
            "supervisor": "s1", "by": ALICE}  # fmt: skip
    ok(http.post(f"/tasks/{claim['task']}/report", json=body))
    assert [kind for _, kind, data in rows(http, "ORDER-3") if "by" in data] == ["event_accepted"]


BAD_BY = [
    ("x", "'by' is an object with 'actor', 'reason' and 'via'"),
    ({"actor": "a", "who": 1}, "'by' has no part 'who'; its parts are actor, reason, via"),
    ({}, "'by.actor' is a text of 1 to 64 printable characters"),
    ({"actor": ""}, "'by.actor' is a text of 1 to 64 printable characters"),
    ({"actor": "a" * 65}, "'by.actor' is a text of 1 to 64 printable characters"),
    ({"actor": "a\nb"}, "'by.actor' is a text of 1 to 64 printable characters"),
    ({"actor": "a", "reason": "r" * 501}, "'by.reason' is a text of at most 500 characters"),
    ({"actor": "a", "reason": 5}, "'by.reason' is a text of at most 500 characters"),
    ({"actor": "a", "via": "web"}, "'by.via' is one of cli, console, client, api"),
]


@pytest.mark.parametrize(("by", "sentence"), BAD_BY)
def test_a_malformed_by_is_invalid_body_and_writes_nothing(
    http: httpx.Client, by: Any, sentence: str
) -> None:
    refused = {"error": sentence, "code": "invalid_body"}
    answer = http.post("/tokens", json={"token": "BAD-1", "context": {"title": "x"}, "by": by})
    assert (answer.status_code, answer.json()) == (422, refused)
    assert http.get("/tokens/BAD-1").status_code == 404
    ok(http.post("/tokens", json={"token": "ORDER-4", "context": {"title": "x"}}), 201)
    for path in ("pause", "resume", "cancel", "events/submitted"):
        answer = http.post(f"/tokens/ORDER-4/{path}", json={"by": by})
        assert (answer.status_code, answer.json()) == (422, refused), path
    answer = http.post("/tasks/1/report", json={"kind": "event", "event": "submitted", "by": by})
    assert (answer.status_code, answer.json()) == (422, refused)
    assert len(rows(http, "ORDER-4")) == 4
    assert http.get("/audit").json() == []


def test_audit_filters(http: httpx.Client, clock: FakeClock) -> None:
    for number in (1, 2, 3):
        by = ALICE if number != 2 else BOB
        body = {"token": f"T-{number}", "context": {"title": "x"}, "by": by}
        ok(http.post("/tokens", json=body), 201)
        clock.advance(1)
    seqs = [(a["token"], a["actor"]) for a in http.get("/audit").json()]
    assert seqs == [("T-3", "alice"), ("T-2", "bob"), ("T-1", "alice")]
    by_actor = http.get("/audit", params={"actor": "alice"}).json()
    assert [a["token"] for a in by_actor] == ["T-3", "T-1"]
    assert [a["token"] for a in http.get("/audit", params={"token": "T-2"}).json()] == ["T-2"]
    assert [a["token"] for a in http.get("/audit", params={"since": T1}).json()] == ["T-3", "T-2"]
    since = http.get("/audit", params={"since": "2026-10-16T22:48:46.845389+02:00"}).json()
    assert [a["token"] for a in since] == ["T-3"]
    assert [a["token"] for a in http.get("/audit", params={"limit": "1"}).json()] == ["T-3"]


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ({"limit": "0"}, "'limit' is a whole number from 1 to 1000"),
        ({"limit": "x"}, "'limit' is a whole number from 1 to 1000"),
        ({"since": "yesterday"}, "'since' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"),
        ({"actor": "a" * 65}, "'actor' is a text of 1 to 64 characters"),
    ],
)
def test_audit_refusals(http: httpx.Client, query: dict[str, str], sentence: str) -> None:
    answer = http.get("/audit", params=query)
    assert (answer.status_code, answer.json()) == (
        422, {"error": sentence, "code": "invalid_argument"},
    )  # fmt: skip


def test_a_named_token_is_the_actor(db_url: str, clock: FakeClock) -> None:
    names = {"tok-alice": "alice", "tok-plain": None}
    with running_api(db_url, ORDERS, clock, auth_names=names) as api:
        alice = httpx.Client(base_url=api.url, headers={"Authorization": "Bearer tok-alice"})
        plain = httpx.Client(base_url=api.url, headers={"Authorization": "Bearer tok-plain"})
        with alice, plain:
            body = {"token": "N-1", "context": {"title": "x"}}
            ok(alice.post("/tokens", json=body), 201)
            ok(alice.post("/tokens/N-1/pause", json={"by": {**BOB, "reason": "r"}}))
            ok(plain.post("/tokens/N-1/resume", json={"by": BOB}))
            ok(plain.post("/tokens/N-1/cancel"))
            acted = [(k, d["by"]) for _, k, d in rows(alice, "N-1") if "by" in d]
            assert acted == [
                ("started", {"actor": "alice", "via": "api"}),
                ("paused", {"actor": "alice", "reason": "r", "via": "cli"}),
                ("resumed", BOB),
            ]
            wrong = httpx.post(
                api.url + "/tokens/N-1/cancel", headers={"Authorization": "Bearer x"}
            )
            assert wrong.json()["code"] == "unauthorized"


def test_a_batch_start_takes_one_by_and_each_start_its_own(http: httpx.Client) -> None:
    starts = [
        {"token": "B-1", "context": {"title": "x"}},
        {"token": "B-2", "context": {"title": "x"}, "by": ALICE},
    ]
    ok(http.post("/tokens/batch", json={"tokens": starts, "by": BOB}))
    assert rows(http, "B-1")[0] == (
        1,
        "started",
        {"context": {"title": "x", "verdict": None}, "by": BOB},
    )
    assert rows(http, "B-2")[0][2]["by"] == ALICE
    bad = http.post("/tokens/batch", json={"tokens": [{"token": "B-3"}], "by": {"via": "cli"}})
    assert (bad.status_code, bad.json()) == (422, {
        "error": "'by.actor' is a text of 1 to 64 printable characters", "code": "invalid_body",
    })  # fmt: skip
    assert http.get("/tokens/B-3").status_code == 404
