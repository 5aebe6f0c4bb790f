"""Export and prune over a real socket, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from stateous.client import AsyncClient, Client, Refused
from stateous.control.clock import FakeClock, iso
from stateous.control.engine import retention
from stateous.control.store import tables
from tests.support import postgres_database, sqlite_url
from tests.support.app import RunningApi, running_api
from tests.support.graphs import DEV, variant
from tests.support.migrated import migrated

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


# --- POST /import -------------------------------------------------------------------------------

FAR = "2999-01-01T00:00:00Z"


def family_rows(api: RunningApi, like: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables an import writes, of the tokens whose id is `like`, sorted."""
    found = {}
    with api.plane.store.engine.connect() as conn:
        for table in (tables.tokens, tables.ledger, tables.audit, tables.token_keys):
            rows = conn.execute(select(table).where(table.c.token.like(like)))
            found[table.name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def test_import_puts_a_page_back_as_exported_and_skips_what_is_there(
    api: RunningApi, http: httpx.Client
) -> None:
    cancelled(http, "A", children=True)
    ok(http.post("/tokens", json={"token": "B", "context": REPO}), 201)
    ok(http.post("/tokens/B/cancel", json={"by": {"actor": "alice", "reason": "old"}}))
    before = {token: as_read(http, token) for token in ("A", "B")}
    rows = family_rows(api, "%")
    page = export(http, FAR)
    assert [e["token"]["token"] for e in page["tokens"]] == ["A", "B"]
    assert ok(http.post("/prune", json={"tokens": ["A", "B"], "ended_before": FAR}))["pruned"] == 2
    assert family_rows(api, "%") == {"tokens": [], "ledger": [], "audit": [], "token_keys": []}
    body = {"tokens": page["tokens"], "by": {"actor": "alice", "reason": "back"}}
    answer = ok(http.post("/import", json=body))
    assert answer == {"imported": 2, "skipped": 0, "keys_pending": 0}
    assert {token: as_read(http, token) for token in ("A", "B")} == before
    assert family_rows(api, "%") == rows
    assert ok(http.post("/import", json=body)) == {"imported": 0, "skipped": 2, "keys_pending": 0}
    assert family_rows(api, "%") == rows
    # A page with one token there and one gone: only the gone one comes back.
    assert ok(http.post("/prune", json={"tokens": ["B"], "ended_before": FAR}))["pruned"] == 1
    assert ok(http.post("/import", json=body)) == {"imported": 1, "skipped": 1, "keys_pending": 0}
    assert family_rows(api, "%") == rows


def entry(token: str, status: str = "cancelled", **more: Any) -> dict[str, Any]:
    """A made-up export entry of one token without history or children."""
    wire = {"token": token, "state": "coding", "status": status, "visit": 1,
            "context": REPO, "entered_at": "2026-01-01T00:00:00Z", **more}  # fmt: skip
    return {"token": wire, "history": [], "children": []}


def test_import_refusals_write_nothing(api: RunningApi, http: httpx.Client) -> None:
    cancelled(http, "A")
    rows = family_rows(api, "%")
    lists = "'tokens' is a list of 1 to 1000 export entries"
    shape = "an export entry is an object with 'token', 'history' and 'children'"
    child = entry("C", parent="A")
    clash = {**entry("X"), "children": [entry("A")]}  # its child's id is A's, a token there
    cases = [
        ({}, lists),
        ({"tokens": []}, lists),
        ({"tokens": [entry("N")] * 1001}, lists),
        ({"tokens": {"A": 1}}, lists),
        ({"tokens": [entry("N"), 1]}, f"entry 2 of 'tokens' is not an export entry: {shape}"),
        ({"tokens": [{"token": {}, "history": [], "children": []}]},
         "entry 1 of 'tokens' is not an export entry: an export entry's token or history is "
         "malformed ('token')"),
        ({"tokens": [entry("L", "active")]},
         "entry 1 of 'tokens' is not an export entry: token 'L' is active, not ended"),
        ({"tokens": [child]},
         "entry 1 of 'tokens' is not an export entry: token 'C' has a parent: an entry is a top "
         "token's"),
        ({"tokens": [entry("N")], "when": 1},
         "an import has no part 'when'; its parts are tokens, by"),
        ({"tokens": [entry("N")], "by": {"actor": ""}},
         "'by.actor' is a text of 1 to 64 printable characters"),
    ]  # fmt: skip
    for body, sentence in cases:
        assert refused(http.post("/import", json=body)) == (422, "invalid_body", sentence), body
    # X's child has A's id: the page, N with it, writes nothing.
    assert refused(http.post("/import", json={"tokens": [entry("N"), clash]})) == (
        422, "invalid_body", "entry 2 of 'tokens': it cannot be stored: its token 'A' is there "
        "already, in another family",
    )  # fmt: skip
    big = {"tokens": [entry("N", context={"text": "x" * 1_048_576})]}
    assert refused(http.post("/import", json=big)) == (
        413, "bad_request", "the body is larger than 1 MiB, the most this API reads",
    )  # fmt: skip
    assert family_rows(api, "%") == rows


@pytest.fixture
def other_db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A second new database on the same backend, at the newest revision."""
    if backend == "sqlite":
        url = sqlite_url(tmp_path, "other.db")
        migrated(url)
        yield url
        return
    with postgres_database() as url:
        migrated(url)
        yield url


@contextmanager
def serving(db_url: str, doc: dict[str, Any]) -> Iterator[tuple[RunningApi, httpx.Client]]:
    """The API serving `doc` on the database (migrated already), and a client of it."""
    with (
        running_api(db_url, doc, migrate_first=False) as api,
        httpx.Client(base_url=api.url, timeout=30) as http,
    ):
        yield api, http


def searched(http: httpx.Client) -> list[str]:
    """The tokens `GET /tokens?context.repo="acme/api"` finds."""
    found = ok(http.get("/tokens", params={"context.repo": '"acme/api"'}))
    return [t["token"] for t in found]


def test_an_import_of_a_version_never_served_is_indexed_at_its_first_serve(
    migrated_db_url: str, other_db_url: str
) -> None:
    searching = variant(DEV)
    searching["search"] = ["repo"]
    other = variant(searching)
    other["schemas"]["Ticket"]["description"] = "another structure"
    with serving(migrated_db_url, searching) as (api, http):
        cancelled(http, "T", children=True)
        assert searched(http) == ["T"]
        page = export(http, FAR)
    with serving(other_db_url, other) as (api, http):
        answer = ok(http.post("/import", json={"tokens": page["tokens"]}))
        assert answer == {"imported": 1, "skipped": 0, "keys_pending": 1}
        assert searched(http) == []  # no graph of T's version here: no key is known
        assert count(api, tables.token_keys, tables.token_keys.c.token, "T%") == 0
    with serving(other_db_url, searching) as (api, http):  # its first serve there
        assert searched(http) == ["T"]
        assert count(api, tables.token_keys, tables.token_keys.c.token, "T%") == 1
        assert as_read(http, "T") == page["tokens"][0]


async def test_the_clients_export_prune_and_import(http: httpx.Client, api: RunningApi) -> None:
    cancelled(http, "A", children=True)
    before = as_read(http, "A")
    with Client(api.url) as client:
        page = client.export(FAR)
        assert [e["token"]["token"] for e in page["tokens"]] == ["A"]
        assert client.prune(["A"], FAR) == {"pruned": 1, "skipped": {}}
        answer = client.import_tokens(page["tokens"], reason="back")
        assert answer == {"imported": 1, "skipped": 0, "keys_pending": 0}
        with pytest.raises(Refused) as caught:
            client.import_tokens([entry("L", "active")])
        assert (caught.value.status, caught.value.code) == (422, "invalid_body")
    assert as_read(http, "A") == before
    async with AsyncClient(api.url) as remote:
        again = await remote.import_tokens(page["tokens"])
        assert again == {"imported": 0, "skipped": 1, "keys_pending": 0}
