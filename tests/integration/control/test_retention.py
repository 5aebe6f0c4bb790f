"""Export and prune over a real socket, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from stateous.control.clock import FakeClock, iso
from stateous.control.engine import retention
from stateous.control.store import tables
from tests.support.app import RunningApi, running_api
from tests.support.graphs import DEV, variant

REPO = {"repo": "acme/api"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(migrated_db_url: str, clock: FakeClock) -> Iterator[RunningApi]:
    with running_api(migrated_db_url, DEV, clock, migrate_first=False) as running:
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


def in_reviews(http: httpx.Client, token: str) -> None:
    """Start `token` and take it into `reviews`, where it has two children."""
    ok(http.post("/tokens", json={"token": token, "context": REPO}), 201)
    grant = ok(http.post("/tasks/claim", json={"supervisor": "box", "states": ["coding"]}))
    assert grant["token"] == token
    ok(http.post(f"/tasks/{grant['task']}/report", json={"kind": "event", "event": "done"}))


def cancelled(http: httpx.Client, token: str, children: bool = False) -> None:
    """A cancelled top token (with two cancelled children when `children`)."""
    if children:
        in_reviews(http, token)
    else:
        ok(http.post("/tokens", json={"token": token, "context": REPO}), 201)
    assert ok(http.post(f"/tokens/{token}/cancel"))["status"] == "cancelled"


def export(http: httpx.Client, before: str, **query: Any) -> dict[str, Any]:
    found: dict[str, Any] = ok(http.get("/export", params={"ended_before": before, **query}))
    return found


def as_read(http: httpx.Client, token: str) -> dict[str, Any]:
    """A token and its history as the read routes answer them, with its children's."""
    wire = ok(http.get(f"/tokens/{token}"))
    children = ok(http.get("/tokens", params={"parent": token}))
    return {
        "token": wire,
        "history": ok(http.get(f"/tokens/{token}/history")),
        "children": [as_read(http, c["token"]) for c in sorted(children, key=lambda c: c["token"])],
    }


def count(api: RunningApi, table: Any, token_column: Any, like: str) -> int:
    with api.plane.store.engine.connect() as conn:
        query = select(func.count()).select_from(table).where(token_column.like(like))
        return int(conn.execute(query).scalar_one())


def claimers(api: RunningApi) -> list[str]:
    with api.plane.store.engine.connect() as conn:
        return list(conn.execute(select(tables.claims.c.supervisor)).scalars())


def test_export_pages_in_id_order_with_children(http: httpx.Client, clock: FakeClock) -> None:
    cancelled(http, "B", children=True)
    after_b = iso(clock.advance(1))
    clock.advance(1)
    for token in ("C", "A", "D"):
        cancelled(http, token)
    ok(http.post("/tokens", json={"token": "AA", "context": REPO}), 201)  # live: never exported
    clock.advance(1)
    before = iso(clock.now())
    first = export(http, before, limit=2)
    assert [e["token"]["token"] for e in first["tokens"]] == ["A", "B"]
    assert first["next"] == "B"
    assert first["tokens"][1] == as_read(http, "B")
    assert [c["token"]["token"] for c in first["tokens"][1]["children"]] == [
        "B.reviews.1.design-review",
        "B.reviews.1.security-review",
    ]
    assert first["tokens"][0]["children"] == []
    second = export(http, before, limit=2, after="B")
    assert [e["token"]["token"] for e in second["tokens"]] == ["C", "D"]
    assert second["next"] is None
    assert export(http, before, after="D") == {"tokens": [], "next": None}
    # B ended two seconds before the others.
    assert [e["token"]["token"] for e in export(http, after_b)["tokens"]] == ["B"]


def test_export_refusals(http: httpx.Client) -> None:
    assert refused(http.get("/export")) == (
        422, "invalid_argument", "'ended_before' is required: an ISO 8601 time, e.g. "
        "2026-10-16T20:48:44Z",
    )  # fmt: skip
    assert refused(http.get("/export", params={"ended_before": "soon"})) == (
        422, "invalid_argument", "'ended_before' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z",
    )  # fmt: skip
    for limit in ("0", "1001", "x"):
        answer = http.get(
            "/export", params={"ended_before": "2026-01-01T00:00:00Z", "limit": limit}
        )
        assert refused(answer) == (
            422, "invalid_argument", "'limit' is a whole number from 1 to 1000",
        )  # fmt: skip


def test_prune_skips_and_deletes_every_row(
    api: RunningApi, http: httpx.Client, clock: FakeClock
) -> None:
    in_reviews(http, "OLD")
    # The last claim of `box` (with a request id) names a task of OLD's child: it goes too.
    claim = {"supervisor": "box", "states": ["security-review/triage"], "request": "r-1"}
    assert ok(http.post("/tasks/claim", json=claim))["token"] == "OLD.reviews.1.security-review"
    assert ok(http.post("/tokens/OLD/cancel"))["status"] == "cancelled"
    assert claimers(api) == ["box"]
    clock.advance(10)
    middle = iso(clock.now())
    cancelled(http, "NEW")
    in_reviews(http, "LIVE")
    clock.advance(10)
    body = {
        "tokens": ["OLD", "NEW", "LIVE", "NOPE", "LIVE.reviews.1.design-review"],
        "ended_before": middle,
        "by": {"actor": "alice", "reason": "a year old"},
    }
    assert ok(http.post("/prune", json=body)) == {
        "pruned": 1,
        "skipped": {"ended_after": 1, "token_not_ended": 1, "token_not_found": 2},
    }
    for table in (tables.tokens, tables.ledger, tables.tasks, tables.timers, tables.audit):
        assert count(api, table, table.c.token, "OLD%") == 0, table.name
    assert claimers(api) == []
    assert count(api, tables.tokens, tables.tokens.c.token, "LIVE%") == 3
    assert ok(http.get("/tokens/NEW"))["status"] == "cancelled"
    assert refused(http.get("/tokens/OLD")) == (404, "token_not_found", "there is no token 'OLD'")
    again = ok(http.post("/prune", json={"tokens": ["OLD"], "ended_before": middle}))
    assert again == {"pruned": 0, "skipped": {"token_not_found": 1}}


def test_prune_refusals(http: httpx.Client) -> None:
    time = "2026-01-01T00:00:00Z"
    cases = [
        ({"ended_before": time}, "'tokens' is a list of 1 to 1000 token ids"),
        ({"tokens": [], "ended_before": time}, "'tokens' is a list of 1 to 1000 token ids"),
        ({"tokens": ["A"] * 1001, "ended_before": time}, "'tokens' is a list of 1 to 1000 token ids"),
        ({"tokens": [1], "ended_before": time}, "'tokens' is a list of 1 to 1000 token ids"),
        ({"tokens": ["A"]}, "'ended_before' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"),
        ({"tokens": ["A"], "ended_before": time, "by": {"actor": ""}},
         "'by.actor' is a text of 1 to 64 printable characters"),
        ({"tokens": ["A"], "ended_before": time, "when": 1},
         "a prune has no part 'when'; its parts are tokens, ended_before, by"),
    ]  # fmt: skip
    for body, sentence in cases:
        assert refused(http.post("/prune", json=body)) == (422, "invalid_body", sentence), body


def test_search_keys_go_with_a_prune_and_come_back_with_an_import(migrated_db_url: str) -> None:
    doc = variant(DEV)
    doc["search"] = ["repo"]
    served = running_api(migrated_db_url, doc, migrate_first=False)
    with served as api, httpx.Client(base_url=api.url, timeout=30) as http:
        cancelled(http, "T", children=True)
        keys = count(api, tables.token_keys, tables.token_keys.c.token, "T%")
        assert keys == 1  # the top token's `repo`; children are not searched
        page = export(http, "2999-01-01T00:00:00Z")
        body = {"tokens": ["T"], "ended_before": "2999-01-01T00:00:00Z"}
        assert ok(http.post("/prune", json=body)) == {"pruned": 1, "skipped": {}}
        assert count(api, tables.token_keys, tables.token_keys.c.token, "T%") == 0
        family = retention.family_of_entry(page["tokens"][0])
        with api.plane.store.begin() as conn:
            assert retention.import_family(conn, family)
            assert not retention.import_family(conn, family)
        assert count(api, tables.token_keys, tables.token_keys.c.token, "T%") == 1
        assert as_read(http, "T") == page["tokens"][0]
