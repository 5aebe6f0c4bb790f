"""`POST /tokens/{id}/migrate` over the socket of a real `stateous serve`, on
SQLite and Postgres: the answer and the rows, each refusal code, a bulk dry run, and a request
sent again with its `Idempotency-Key` (its answer lost) that writes nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.model.canonical import checksum, structure
from tests.support.graphs import ORDERS, variant, write_graph
from tests.support.processes import serve_process

BY = {"actor": "alice", "reason": "review is gone", "via": "api"}


def _newer() -> dict[str, Any]:
    """orders with `review` replaced by `checking`, and an integer `priority` in the context."""
    doc = variant(ORDERS)
    doc["states"] = {"draft": {"emits": ["submitted"]}, "checking": {"emits": ["checked"]}}
    doc["events"] = {"submitted": {}, "checked": {}}
    doc["transitions"] = [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "checking", "on": "submitted"},
        {"from": "checking", "to": "__end__", "on": "checked"},
    ]
    doc["schemas"]["Item"]["properties"]["priority"] = {"type": "integer"}
    return doc


NEWER = _newer()
OLD_SUM, OLD = checksum(ORDERS), structure(ORDERS)
NEW_SUM, NEW = checksum(NEWER), structure(NEWER)
NEVER = "sha256:" + "0" * 64


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def to_review(http: httpx.Client, token: str) -> None:
    """Start `token` and take it to `review` as a supervisor would."""
    ok(http.post("/tokens", json={"token": token, "context": {"title": "t"}}), 201)
    grant = ok(http.post("/tasks/claim", json={"supervisor": "box", "states": ["draft"]}))
    report = {"kind": "event", "event": "submitted", "supervisor": "box"}
    ok(http.post(f"/tasks/{grant['task']}/report", json=report))


@pytest.fixture
def served(tmp_path: Path, db_url: str) -> Iterator[httpx.Client]:
    """On ORDERS: A and F in review (F then failed), D in draft, C cancelled; then NEWER
    served on the same database (current), with N started on it."""
    graph = write_graph(tmp_path, ORDERS, "flow.json")
    with serve_process(graph, db_url, cwd=tmp_path) as old, httpx.Client(base_url=old.url) as http:
        for token in ("A", "F"):
            to_review(http, token)
        grant = ok(http.post("/tasks/claim", json={"supervisor": "box", "states": ["review"]}))
        assert grant["token"] == "A"
        report = {"kind": "failed", "error": "boom", "supervisor": "box"}
        ok(http.post(f"/tasks/{grant['task']}/report", json=report))  # A: failed
        ok(http.post("/tokens", json={"token": "D", "context": {"title": "t"}}), 201)
        ok(http.post("/tokens", json={"token": "C", "context": {"title": "t"}}), 201)
        ok(http.post("/tokens/C/cancel"))
    write_graph(tmp_path, NEWER, "flow.json")
    with serve_process(graph, db_url, cwd=tmp_path) as new, httpx.Client(base_url=new.url) as http:
        ok(http.post("/tokens", json={"token": "N", "context": {"title": "t"}}), 201)
        yield http


def kinds_since(http: httpx.Client, token: str, seq: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (e["kind"], e["data"]) for e in ok(http.get(f"/tokens/{token}/history")) if e["seq"] > seq
    ]


def last_seq(http: httpx.Client, token: str) -> int:
    return int(ok(http.get(f"/tokens/{token}/history"))[-1]["seq"])


def test_the_route_migrates_and_answers_the_token(served: httpx.Client) -> None:
    http = served
    seq = last_seq(http, "F")
    body = {"states": {"review": "checking"}, "context": {"priority": 2}, "by": BY}
    token = ok(http.post("/tokens/F/migrate", json=body))
    assert {k: token[k] for k in ("token", "state", "status", "visit", "structure")} == {
        "token": "F", "state": "checking", "status": "active", "visit": 1, "structure": NEW,
    }  # fmt: skip
    assert token["context"] == {"title": "t", "verdict": None, "priority": 2}
    assert kinds_since(http, "F", seq) == [
        ("task_cancelled", {"task": 4}),
        ("migrated", {"from": OLD_SUM, "to": NEW_SUM, "state": "review", "into": "checking",
                      "keys": ["priority"], "by": BY}),
        ("entered", {"state": "checking", "visit": 1}),
        ("task_queued", {"task": 8, "state": "checking"}),
    ]  # fmt: skip
    audit = ok(http.get("/audit", params={"token": "F"}))
    assert [(a["kind"], a["actor"], a["via"]) for a in audit] == [("migrated", "alice", "api")]
    # The new task is the current version's: a claim without a checksum gets it.
    grant = ok(http.post("/tasks/claim", json={"supervisor": "box", "states": ["checking"]}))
    assert (grant["task"], grant["token"]) == (8, "F")
    # A failed token keeps failing until a retry enters the mapped state on the new version.
    failed = ok(
        http.post("/tokens/A/migrate", json={"to": NEW_SUM, "states": {"review": "checking"}})
    )
    assert (failed["state"], failed["status"], failed["structure"]) == ("checking", "failed", NEW)
    retried = ok(http.post("/tokens/A/retry"))
    assert (retried["state"], retried["status"]) == ("checking", "active")


def test_each_refusal_code_and_nothing_written(served: httpx.Client) -> None:
    http = served
    seqs = {t: last_seq(http, t) for t in ("F", "D", "C", "N")}
    cases: list[tuple[str, Any, int, str]] = [
        ("X", {}, 404, "token_not_found"),
        ("C", {}, 409, "token_not_active"),
        ("C", {"to": NEVER}, 409, "token_not_active"),
        ("F", {"to": NEVER}, 422, "version_not_found"),
        ("N", {}, 409, "same_version"),
        ("D", {"to": OLD_SUM}, 409, "same_version"),
        ("F", {}, 422, "unknown_state"),
        ("F", {"states": {"review": "__start__"}}, 422, "unknown_state"),
        ("F", {"states": {"checking": "draft"}}, 422, "unknown_state"),
        ("D", {"context": {"priority": "high"}}, 422, "invalid_context"),
        ("D", {"to": 7}, 422, "invalid_body"),
        ("D", {"states": []}, 422, "invalid_body"),
        ("D", {"context": 1}, 422, "invalid_body"),
        ("D", {"into": "draft"}, 422, "invalid_body"),
        ("D", {"by": {"actor": ""}}, 422, "invalid_body"),
    ]
    for token, body, status, code in cases:
        answer = http.post(f"/tokens/{token}/migrate", json=body)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (token, body)
    assert http.post("/tokens/F.x/migrate").json()["code"] == "token_not_found"
    assert {t: last_seq(http, t) for t in seqs} == seqs
    # The bulk dry run checks the same tokens against the same checks, writing nothing.
    dry = {"action": "migrate", "states": {"review": "checking"}, "dry_run": True}
    assert ok(http.post("/bulk", json=dry)) == {
        "matched": 5, "tokens": ["A", "F", "D", "C", "N"],
        "refused": {"same_version": 1, "token_not_active": 1},
        "examples": {"same_version": ["N"], "token_not_active": ["C"]}, "reasons": {},
    }  # fmt: skip
    assert {t: last_seq(http, t) for t in seqs} == seqs


def test_a_request_sent_again_with_its_key_writes_nothing_twice(served: httpx.Client) -> None:
    """The answer of a migration can be lost (a timeout, a broken connection): the caller
    sends it again with the same key, even several times at once, and it applies once."""
    http = served
    seq = last_seq(http, "D")
    body = {"context": {"priority": 1}}
    headers = {"Idempotency-Key": "migrate-D-1"}

    def send(_: int) -> httpx.Response:
        with httpx.Client(base_url=str(http.base_url)) as own:
            return own.post("/tokens/D/migrate", json=body, headers=headers)

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(send, range(4)))
    assert [a.status_code for a in answers] == [200] * 4
    assert {(a.json()["structure"], a.json()["state"]) for a in answers} == {(NEW, "draft")}
    again = ok(http.post("/tokens/D/migrate", json=body, headers=headers))
    assert (again["structure"], again["state"], again["visit"]) == (NEW, "draft", 2)
    rows = kinds_since(http, "D", seq)
    assert [kind for kind, _ in rows] == ["task_cancelled", "migrated", "entered", "task_queued"]
    tasks = ok(http.get("/tokens/D/tasks"))
    assert sorted((t["state"], t["visit"], t["status"]) for t in tasks) == [
        ("draft", 1, "cancelled"), ("draft", 2, "queued"),
    ]  # fmt: skip
    # Without the key, the same body is a new request: the token is on NEW already.
    refused = http.post("/tokens/D/migrate", json=body)
    assert (refused.status_code, refused.json()["code"]) == (409, "same_version")
