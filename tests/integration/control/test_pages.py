"""Keyset pages of the listings (issue 32) over a real socket, on both databases: `GET /tokens`,
`/tasks`, `/inbox`, `/audit` and `/bulk` answer a page and, when more rows follow, a `Link`
header whose `after=CURSOR` asks the next page with the same filters; the last page has none;
a cursor that does not parse is `422 invalid_argument`. The Client walks every page."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from stateous.client import AsyncClient, Client
from stateous.control.clock import FakeClock
from tests.support.app import running_api
from tests.support.graphs import SDLC

pytestmark = pytest.mark.fake_clock

BOX = "build-box-1"
BAD = "'after' is a cursor from the Link header of this route's last page; pass it as is"


@pytest.fixture
def sdlc(migrated_db_url: str, clock: FakeClock) -> Iterator[httpx.Client]:
    """A client of the sdlc app (its `coding` state waits for people) on a fake clock."""
    with (
        running_api(migrated_db_url, SDLC, clock, migrate_first=False) as running,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        yield client


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def pages(http: httpx.Client, path: str, key: str) -> list[tuple[list[Any], str | None]]:
    """Each page's `key` values and its Link header, following `rel="next"` to the last."""
    found: list[tuple[list[Any], str | None]] = []
    url: str | None = path
    while url is not None:
        answer = http.get(url)
        link = answer.headers.get("link")
        found.append(([row[key] for row in ok(answer)], link))
        url = answer.links["next"]["url"] if link else None
        assert len(found) < 20
    return found


def link_query(link: str | None) -> dict[str, list[str]]:
    """The arguments of a `Link` header's URL but its cursor (`after`, which it must have)."""
    assert link is not None and link.endswith('>; rel="next"'), link
    query = parse_qs(urlsplit(link[1:].split(">")[0]).query)
    assert len(query.pop("after")) == 1
    return query


def rows(found: list[tuple[list[Any], str | None]]) -> list[list[Any]]:
    return [page for page, _ in found]


def start(http: httpx.Client, *tokens: str) -> None:
    for token in tokens:
        ok(http.post("/tokens", json={"token": token, "context": {"title": "x"}}), 201)


def test_tokens_page_by_page_with_their_filters(http: httpx.Client, clock: FakeClock) -> None:
    start(http, "T-1", "T-2")
    clock.advance(1)
    start(http, "T-3", "T-4", "T-5")  # three at one time: their ids order them
    clock.advance(1)
    ok(http.post("/tokens/T-1/events/submitted", json={}))  # moved: listed first
    ok(http.post("/tokens/T-2/cancel", json={}))  # not moved
    found = pages(http, "/tokens?limit=2", "token")
    assert rows(found) == [["T-1", "T-3"], ["T-4", "T-5"], ["T-2"]]
    first_link = found[0][1]
    assert first_link is not None and first_link.startswith("</tokens?limit=2&after=")
    assert first_link.endswith('>; rel="next"') and found[-1][1] is None
    active = pages(http, "/tokens?status=active&limit=2&prefix=T-", "token")
    assert rows(active) == [["T-1", "T-3"], ["T-4", "T-5"]]  # a full last page: no header
    assert link_query(active[0][1]) == {"status": ["active"], "limit": ["2"], "prefix": ["T-"]}
    assert rows(pages(http, "/tokens?limit=5", "token")) == [["T-1", "T-3", "T-4", "T-5", "T-2"]]
    assert rows(pages(http, "/tokens?state=draft&limit=4", "token")) == [
        ["T-3", "T-4", "T-5", "T-2"]
    ]


@pytest.mark.parametrize("route", ["/tokens", "/tasks", "/inbox", "/audit", "/bulk"])
@pytest.mark.parametrize(
    "cursor",
    ["x", "%%%", "W10", base64.urlsafe_b64encode(b'["a", 1, 2, 3]').decode(), "e30", "A" * 2049],
    ids=["short", "not-base64", "empty-list", "too-long-list", "an-object", "too-long"],
)
def test_a_cursor_that_does_not_parse_is_refused(
    http: httpx.Client, route: str, cursor: str
) -> None:
    answer = http.get(route, params={"after": cursor})
    assert answer.status_code == 422, answer.text
    assert answer.json() == {"code": "invalid_argument", "error": BAD}


def test_a_cursor_of_another_route_is_refused(http: httpx.Client) -> None:
    start(http, "T-1", "T-2")
    tokens_cursor = http.get("/tokens?limit=1").links["next"]["url"].split("after=")[1]
    for route in ("/tasks", "/inbox", "/audit", "/bulk"):
        assert http.get(route, params={"after": tokens_cursor}).status_code == 422


def test_tasks_page_by_page(http: httpx.Client) -> None:
    start(http, "T-1", "T-2", "T-3")
    found = pages(http, "/tasks?status=queued&limit=2", "token")
    assert rows(found) == [["T-3", "T-2"], ["T-1"]]
    assert link_query(found[0][1]) == {"status": ["queued"], "limit": ["2"]}


def test_the_inbox_page_by_page(sdlc: httpx.Client, clock: FakeClock) -> None:
    for token in ("T-1", "T-2", "T-3"):
        ok(sdlc.post("/tokens", json={"token": token, "context": {"repo": "a/b"}}), 201)
    grants = [ok(sdlc.post("/tasks/claim", json={"supervisor": BOX, "states": ["coding"]}))]
    grants += [ok(sdlc.post("/tasks/claim", json={"supervisor": BOX, "states": ["coding"]}))]
    grants += [ok(sdlc.post("/tasks/claim", json={"supervisor": BOX, "states": ["coding"]}))]
    for grant in (grants[2], grants[0], grants[1]):
        clock.advance(1)
        body = {"kind": "waiting", "attempt": grant["attempt"], "supervisor": BOX}
        ok(sdlc.post(f"/tasks/{grant['task']}/report", json=body))
    assert rows(pages(sdlc, "/inbox?limit=2", "token")) == [["T-3", "T-1"], ["T-2"]]
    assert rows(pages(sdlc, "/inbox?state=coding&limit=1", "token")) == [["T-3"], ["T-1"], ["T-2"]]


def test_the_audit_page_by_page(http: httpx.Client, clock: FakeClock) -> None:
    for token in ("T-1", "T-2"):
        body = {"token": token, "context": {"title": "x"}, "by": {"actor": "alice"}}
        ok(http.post("/tokens", json=body), 201)
    ok(http.post("/tokens/T-1/pause", json={"by": {"actor": "alice"}}))
    clock.advance(1)
    ok(http.post("/tokens/T-1/resume", json={"by": {"actor": "bob"}}))
    found = pages(http, "/audit?limit=2", "kind")
    # newest first, then by token and seq, both descending
    assert rows(found) == [["resumed", "started"], ["paused", "started"]]
    assert rows(pages(http, "/audit?limit=3", "token")) == [["T-1", "T-2", "T-1"], ["T-1"]]
    assert rows(pages(http, "/audit?actor=alice&limit=1", "kind")) == [
        ["started"],
        ["paused"],
        ["started"],
    ]


def test_bulk_jobs_page_by_page(http: httpx.Client) -> None:
    for _ in range(3):
        ok(http.post("/bulk", json={"action": "pause", "filter": {"prefix": "none-"}}), 202)
    assert rows(pages(http, "/bulk?limit=2", "job")) == [[3, 2], [1]]


def test_the_client_walks_every_page(api: Any, http: httpx.Client) -> None:
    start(http, *(f"T-{n}" for n in range(1, 8)))
    with Client(api.url) as client:
        page = client.tokens(limit=3)
        assert page.next is not None and len(page) == 3
        assert client.tokens(limit=3, after=page.next)[0]["token"] == "T-4"
        walked = [token["token"] for token in client.every(client.tokens, limit=3)]
        assert walked == [f"T-{n}" for n in range(1, 8)]
        last = client.tokens(limit=7)
        assert last.next is None
        assert [act for act in client.every(client.audit, limit=2)] == []


async def test_the_async_client_walks_every_page(api: Any, http: httpx.Client) -> None:
    start(http, *(f"T-{n}" for n in range(1, 6)))
    async with AsyncClient(api.url) as client:
        walked = [token["token"] async for token in client.every(client.tokens, limit=2)]
        assert walked == [f"T-{n}" for n in range(1, 6)]
        page = await client.tokens(limit=4)
        assert page.next is not None
        assert [t["token"] for t in await client.tokens(limit=4, after=page.next)] == ["T-5"]
