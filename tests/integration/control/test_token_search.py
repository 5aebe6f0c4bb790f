"""Finding tokens by their context over a real socket, on both databases:
`GET /tokens?context.KEY=JSON` with its filters and refusals, the bulk filter through
`token_keys`, and the filling of a key added to a served graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock
from stateous.control.search_filler import SearchFiller
from stateous.control.store import bulk, token_keys
from stateous.model.selection import Filter
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS, variant


def searched(*keys: str) -> dict[str, Any]:
    """orders whose Item has `customer` (string, default acme) and `amount` (integer),
    searching `keys` (none: the same structure without search keys)."""
    doc = variant(ORDERS)
    item = doc["schemas"]["Item"]["properties"]
    item["customer"] = {"type": "string", "default": "acme"}
    item["amount"] = {"type": "integer", "default": 1}
    if keys:
        doc["search"] = sorted(keys)
    return doc


#: (token, customer, amount) of the tokens `served` starts, T-1 first.
STARTED = [
    ("T-1", "acme", 1), ("T-2", "globex", 1), ("T-3", "acme", 2),
    ("T-4", "acme", 1), ("U-5", "globex", 2),
]  # fmt: skip


@pytest.fixture
def served(db_url: str) -> Iterator[tuple[httpx.Client, RunningApi]]:
    """orders searching customer and amount, with the tokens of STARTED, one a second."""
    clock = FakeClock()
    doc = searched("amount", "customer")
    with running_api(db_url, doc, clock) as api, httpx.Client(base_url=api.url) as http:
        for token, customer, amount in STARTED:
            context = {"title": "t", "customer": customer, "amount": amount}
            assert http.post("/tokens", json={"token": token, "context": context}).is_success
            clock.advance(1)
        yield http, api


def found(http: httpx.Client, **params: Any) -> list[str]:
    answer = http.get("/tokens", params=params)
    assert answer.status_code == 200, answer.text
    return [token["token"] for token in answer.json()]


def test_one_key_two_keys_and_the_other_filters(
    served: tuple[httpx.Client, RunningApi],
) -> None:
    http, _api = served
    assert found(http, **{"context.customer": '"acme"'}) == ["T-4", "T-3", "T-1"]
    assert found(http, **{"context.customer": '"acme"', "context.amount": "1"}) == ["T-4", "T-1"]
    assert found(http, **{"context.amount": "2.0"}) == ["U-5", "T-3"]
    assert found(http, **{"context.customer": '"hooli"'}) == []
    assert found(http, **{"context.customer": '"globex"', "prefix": "T-"}) == ["T-2"]
    assert found(http, **{"context.customer": '"acme"', "limit": "2"}) == ["T-4", "T-3"]
    http.post("/tokens/T-3/cancel", json={})
    assert found(http, **{"context.customer": '"acme"', "status": "active"}) == ["T-4", "T-1"]
    assert found(http, **{"context.customer": '"acme"', "status": "cancelled"}) == ["T-3"]
    assert found(http, **{"context.customer": '"acme"', "state": "draft"}) == ["T-4", "T-3", "T-1"]
    assert found(http, **{"context.customer": '"acme"', "state": "review"}) == []


def test_a_key_that_is_not_searchable_and_a_value_that_is_not_json_are_422(
    served: tuple[httpx.Client, RunningApi],
) -> None:
    http, _api = served
    for params, sentence in [
        ({"context.title": '"t"'},
         "the context key 'title' is not a search key; the search keys are amount, customer"),
        ({"context.customer": "acme"},
         "'context.customer' is a JSON value, e.g. context.customer=\"acme\" or "
         "context.customer=4711"),
        ({"context.": "1"}, "'context.' names no context key"),
        ({"prefix": ""}, "'prefix' is a text of 1 to 128 characters"),
    ]:  # fmt: skip
        answer = http.get("/tokens", params=params)
        assert answer.status_code == 422
        assert answer.json()["code"] == "invalid_argument"
        assert answer.json()["error"] == sentence


def test_the_bulk_filter_through_the_index_equals_the_scan(
    served: tuple[httpx.Client, RunningApi],
) -> None:
    http, api = served
    http.post("/tokens/T-4/pause", json={})
    for context in ({"customer": "acme"}, {"customer": "acme", "amount": 1}, {"amount": 2.0}):
        for status in (("active",), ("active", "paused"), None):
            wanted = Filter(status=status, context=context)
            with api.plane.store.begin() as conn:
                index = token_keys.index_conditions(conn, wanted)
                assert (index is not None) == (status is not None)
                through = list(bulk.matching(conn, wanted))
                scanned = [match for match in bulk.matching(conn, wanted, indexed=False)]
            assert through == scanned
    dry = http.post(
        "/bulk", json={"action": "pause", "dry_run": True,
                       "filter": {"status": ["active"], "context": {"customer": "acme"}}},
    )  # fmt: skip
    assert dry.json()["matched"] == 2


def test_a_key_added_to_a_served_graph_is_filled_and_refused_until_then(db_url: str) -> None:
    clock = FakeClock()
    with running_api(db_url, searched(), clock) as api, httpx.Client(base_url=api.url) as http:
        for n in range(5):
            context = {"title": "t", "customer": "acme" if n % 2 else "globex"}
            http.post("/tokens", json={"token": f"F-{n}", "context": context})
            clock.advance(1)
        http.post("/tokens/F-4/cancel", json={})
    clock.advance(1)
    doc = searched("customer")
    with running_api(db_url, doc, clock) as api, httpx.Client(base_url=api.url) as http:
        acme = {"context.customer": '"acme"'}
        filler = SearchFiller(api.plane, batch=2, rest=0)
        refused = http.get("/tokens", params=acme)
        assert refused.status_code == 409
        assert refused.json() == {
            "code": "search_not_ready",
            "error": "the search key 'customer' is being filled; try again soon",
        }
        assert filler.step() == 2
        refused = http.get("/tokens", params=acme)
        assert refused.status_code == 409
        assert refused.json()["error"] == (
            "the search key 'customer' is being filled: 2 of 4 tokens; try again soon"
        )
        assert filler.drain() == 2
        assert found(http, **acme) == ["F-3", "F-1"]
        rows = api.plane.store.read(token_keys.filled)
        assert rows == {(api.plane.config.graph.structure, "customer")}
        # A started token is indexed at once; a cancelled one of before is not filled.
        http.post("/tokens", json={"token": "F-9", "context": {"title": "t", "customer": "globex"}})
        assert found(http, **{"context.customer": '"globex"'}) == ["F-9", "F-2", "F-0"]
