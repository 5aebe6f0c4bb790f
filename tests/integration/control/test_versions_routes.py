"""Two versions of a workflow on one database: tokens of each run on their own
graph, and the read routes say which version each token is on: `GET /workflow?checksum=`,
`GET /workflow/versions`, `structure` on tokens, the listing's filter, the inbox, `/stats`,
`/metrics`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from stateous.control.clock import FakeClock, iso
from stateous.control.store.tables import tasks, workflow_versions
from stateous.model.canonical import checksum, structure
from tests.support.app import running_api
from tests.support.graphs import ORDERS, variant

BOX = "box-1"


def _newer() -> dict[str, Any]:
    """ORDERS with an event `withdrawn` from draft to the end: another structure."""
    doc = variant(ORDERS)
    doc["states"]["draft"]["emits"].append("withdrawn")
    doc["events"]["withdrawn"] = {}
    doc["transitions"].append({"from": "draft", "to": "__end__", "on": "withdrawn"})
    return doc


NEWER = _newer()
OLD_SUM, OLD = checksum(ORDERS), structure(ORDERS)
NEW_SUM, NEW = checksum(NEWER), structure(NEWER)


@pytest.fixture
def served(db_url: str) -> Iterator[tuple[httpx.Client, FakeClock]]:
    """O-1 and O-2 started on ORDERS; then NEWER served on the same database, with N-1."""
    clock = FakeClock()
    with running_api(db_url, ORDERS, clock) as api, httpx.Client(base_url=api.url) as http:
        for token in ("O-1", "O-2"):
            http.post("/tokens", json={"token": token, "context": {"title": "t"}})
    clock.advance(5)
    with running_api(db_url, NEWER, clock) as api, httpx.Client(base_url=api.url) as http:
        http.post("/tokens", json={"token": "N-1", "context": {"title": "t"}})
        yield http, clock


def test_each_token_carries_its_structure_and_the_listing_filters_by_it(
    served: tuple[httpx.Client, FakeClock],
) -> None:
    http, _clock = served
    assert http.get("/tokens/O-1").json()["structure"] == OLD
    assert http.get("/tokens/N-1").json()["structure"] == NEW
    listed = http.get("/tokens", params={"structure": OLD}).json()
    assert sorted(t["token"] for t in listed) == ["O-1", "O-2"]
    assert [t["token"] for t in http.get("/tokens", params={"structure": NEW}).json()] == ["N-1"]
    refused = http.get("/tokens", params={"structure": "99ab12cd"})
    assert refused.status_code == 422
    assert refused.json()["code"] == "invalid_argument"


def test_the_versions_newest_first_with_their_live_top_tokens(
    served: tuple[httpx.Client, FakeClock],
) -> None:
    http, clock = served
    assert http.get("/workflow/versions").json() == [
        {"checksum": NEW_SUM, "structure": NEW, "current": True,
         "first_served_at": iso(clock.now()), "live": 1},
        {"checksum": OLD_SUM, "structure": OLD, "current": False,
         "first_served_at": iso(clock.now() - timedelta(seconds=5)), "live": 2},
    ]  # fmt: skip
    assert http.get("/workflow").json() == NEWER
    assert http.get("/workflow", params={"checksum": OLD_SUM}).json() == ORDERS
    never = http.get("/workflow", params={"checksum": "sha256:" + "0" * 64})
    assert never.status_code == 404
    assert never.json()["code"] == "version_not_found"
    stats = http.get("/stats").json()
    assert stats["versions"] == http.get("/workflow/versions").json()
    metrics = http.get("/metrics").text
    assert f'stateous_tokens_live{{structure="{OLD[:19]}"}} 2.0' in metrics
    assert f'stateous_tokens_live{{structure="{NEW[:19]}"}} 1.0' in metrics


def test_an_event_of_the_older_version_only_is_taken_by_its_tokens_alone(
    served: tuple[httpx.Client, FakeClock],
) -> None:
    http, _clock = served
    # `withdrawn` exists in NEWER only: refused on O-1, taken by N-1.
    refused = http.post("/tokens/O-1/events/withdrawn", json={})
    assert refused.status_code == 409
    assert refused.json()["code"] == "event_not_allowed"
    kinds = [row["kind"] for row in http.get("/tokens/O-1/history").json()]
    assert kinds[-1] == "event_rejected"
    taken = http.post("/tokens/N-1/events/withdrawn", json={})
    assert taken.status_code == 200
    assert taken.json()["status"] == "completed"


def test_a_claim_is_granted_its_own_versions_tasks(
    served: tuple[httpx.Client, FakeClock], db_url: str
) -> None:
    http, _clock = served
    body = {"supervisor": BOX, "states": ["draft"]}
    current = http.post("/tasks/claim", json=body)
    assert current.json()["token"] == "N-1"
    assert http.post("/tasks/claim", json=body).status_code == 204  # no checksum: current only
    older = [http.post("/tasks/claim", json={**body, "checksum": OLD_SUM}) for _ in range(3)]
    assert [a.json()["token"] for a in older[:2]] == ["O-1", "O-2"]
    assert older[2].status_code == 204
    unknown = http.post("/tasks/claim", json={**body, "checksum": "sha256:" + "0" * 64})
    assert unknown.status_code == 422
    assert unknown.json()["code"] == "invalid_argument"


def test_the_rows_of_each_version(served: tuple[httpx.Client, FakeClock], db_url: str) -> None:
    from stateous.control.store.db import Store, make_engine

    store = Store(make_engine(db_url))
    try:
        with store.begin() as conn:
            rows = conn.execute(select(workflow_versions.c.checksum, workflow_versions.c.structure))
            assert sorted(rows) == sorted([(OLD_SUM, OLD), (NEW_SUM, NEW)])
            found = conn.execute(select(tasks.c.token, tasks.c.structure).order_by(tasks.c.id))
            assert list(found) == [("O-1", OLD), ("O-2", OLD), ("N-1", NEW)]
    finally:
        store.engine.dispose()


def test_the_inbox_offers_the_events_of_the_tokens_own_version(
    served: tuple[httpx.Client, FakeClock],
) -> None:
    http, _clock = served
    for checksum_of in (OLD_SUM, NEW_SUM):
        grant = http.post(
            "/tasks/claim", json={"supervisor": BOX, "states": ["draft"], "checksum": checksum_of}
        ).json()
        report = {"kind": "waiting", "attempt": grant["attempt"], "supervisor": BOX}
        assert http.post(f"/tasks/{grant['task']}/report", json=report).status_code == 200
    entries = {e["token"]: e for e in http.get("/inbox").json()}
    assert [e["event"] for e in entries["O-1"]["events"]] == ["submitted"]
    assert entries["O-1"]["structure"] == OLD
    assert [e["event"] for e in entries["N-1"]["events"]] == ["submitted", "withdrawn"]
    assert entries["N-1"]["structure"] == NEW


def test_a_roll_back_counts_the_live_tokens_on_the_checksum_served_again(db_url: str) -> None:
    """Two checksums of one structure (only a timeout differs): the live tokens are counted
    once, on the one their structure runs on: the current one, served again."""
    tuned = variant(ORDERS)
    tuned["states"]["review"]["timeout"] = "7h"
    clock = FakeClock()
    for doc in (ORDERS, tuned, ORDERS):
        with running_api(db_url, doc, clock) as api, httpx.Client(base_url=api.url) as http:
            http.post(
                "/tokens", json={"token": f"T-{clock.now().second}", "context": {"title": "t"}}
            )
            versions = http.get("/workflow/versions").json()
        clock.advance(1)
    assert [(v["checksum"], v["current"], v["live"]) for v in versions] == [
        (checksum(tuned), False, 0),
        (OLD_SUM, True, 3),
    ]
