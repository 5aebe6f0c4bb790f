"""The schedule routes over a real socket on SQLite and Postgres: each route's
answer, `by` in `GET /audit`, each refusal (a context the current version refuses among them),
the clock starting a slot's token, and a slot that fails kept in the schedule and in
`/metrics`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stateous.client import AsyncClient, Client, NotFound
from stateous.control.clock import FakeClock
from stateous.control.runtime import serve_version
from stateous.control.ticker import Ticker
from stateous.model.graph import Graph, load_graph
from tests.integration.control.test_metrics import scrape
from tests.support.app import RunningApi
from tests.support.graphs import ORDERS, graph_text, variant

#: The app runs on the `clock` fixture of conftest.py (a FakeClock at 2026-10-16T20:48:44Z).
pytestmark = pytest.mark.fake_clock

TITLED = {"title": "report"}
NIGHTLY = {"name": "nightly", "cron": "0 21 * * *", "context": {"title": "report"}}
SHOWN = {
    "name": "nightly", "cron": "0 21 * * *", "tz": "UTC", "context": {"title": "report"},
    "id": "{name}-{at}", "catch_up": "last", "paused": False,
    "next_at": "2026-10-16T21:00:00Z", "last_at": None, "last_token": None,
    "last_error": None, "last_error_at": None, "failures": 0,
}  # fmt: skip
#: The refusal of a context without the `title` that ORDERS' model requires.
NO_TITLE = (
    "'context' cannot start a token of the version served now (orders: Item: 'title' is a "
    "required property)"
)


def refused(answer: httpx.Response, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["code"] == code
    return str(body["error"])


def test_each_route_answers_the_schedule(
    http: httpx.Client, api: RunningApi, clock: FakeClock
) -> None:
    by = {"actor": "alice", "via": "cli", "reason": "month end"}
    made = http.post("/schedules", json={**NIGHTLY, "by": by})
    assert (made.status_code, made.json()) == (201, SHOWN)
    assert http.get("/schedules").json() == [SHOWN]
    assert http.get("/schedules/nightly").json() == SHOWN
    paused = http.post("/schedules/nightly/pause", json={"by": {"actor": "bob"}})
    assert paused.json() == {**SHOWN, "paused": True, "next_at": None}
    assert http.post("/schedules/nightly/resume").json() == SHOWN
    clock.advance(12 * 60)  # 21:00:44
    assert Ticker(api.plane).tick().schedules == 1
    after = http.get("/schedules/nightly").json()
    assert (after["next_at"], after["last_at"], after["last_token"]) == (
        "2026-10-17T21:00:00Z", "2026-10-16T21:00:00Z", "nightly-20261016T2100",
    )  # fmt: skip
    history = http.get("/tokens/nightly-20261016T2100/history").json()
    assert history[0]["data"] == {
        "context": {"title": "report", "verdict": None},
        "schedule": "nightly",
    }
    replaced = http.put(
        "/schedules/nightly", json={"cron": "0 6 * * *", "tz": "Europe/Paris", "context": TITLED}
    )
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["next_at"], replaced.json()["context"]) == (
        "2026-10-17T04:00:00Z",
        TITLED,
    )
    removed = http.request("DELETE", "/schedules/nightly", json={"by": {"actor": "carol"}})
    assert (removed.status_code, removed.json()["cron"]) == (200, "0 6 * * *")
    assert http.get("/schedules").json() == []
    acts = [(a["token"], a["seq"], a["kind"], a["actor"]) for a in http.get("/audit").json()]
    assert acts == [
        ("schedule:nightly", 3, "schedule_removed", "carol"),
        ("schedule:nightly", 2, "schedule_paused", "bob"),
        ("schedule:nightly", 1, "schedule_added", "alice"),
    ]


BAD_BODIES: list[tuple[dict[str, Any], str]] = [
    ({**NIGHTLY, "cron": "0 0 21 * * *"}, "'cron' has 6 fields; a schedule's cron"),
    ({**NIGHTLY, "cron": "0 25 * * *"}, "'cron' cannot be read: Bad hour"),
    ({**NIGHTLY, "tz": "Europe/Atlantis"}, "'tz' 'Europe/Atlantis' is no IANA time zone"),
    ({**NIGHTLY, "id": "{name}"}, "'id' has no {at}"),
    ({**NIGHTLY, "id": "{name}/{at}"}, "'id' makes the token id 'nightly/20261016T2048'"),
    ({**NIGHTLY, "name": "Nightly"}, "'name' is 1 to 64 lower-case letters"),
    ({**NIGHTLY, "catch_up": "every"}, "'catch_up' is one of none, last, all"),
    ({**NIGHTLY, "by": {"actor": ""}}, "'by.actor' is a text of 1 to 64"),
    ({"name": "nightly", "cron": "0 21 * * *"}, NO_TITLE),
    (
        {**NIGHTLY, "context": {"title": 5}},
        "'context' cannot start a token of the version "
        "served now (orders: title: 5 is not of type 'string')",
    ),
]


def test_a_bad_body_is_invalid_body_naming_it(http: httpx.Client) -> None:
    for body, said in BAD_BODIES:
        assert refused(http.post("/schedules", json=body), 422, "invalid_body").startswith(said)
    assert http.get("/schedules").json() == []


def test_the_refusals_of_the_named_routes(http: httpx.Client) -> None:
    assert http.post("/schedules", json=NIGHTLY).status_code == 201
    assert refused(http.post("/schedules", json=NIGHTLY), 409, "schedule_exists") == (
        "a schedule 'nightly' exists already; PUT /schedules/nightly replaces it"
    )
    missing = "there is no schedule 'weekly'"
    assert refused(http.get("/schedules/weekly"), 404, "schedule_not_found") == missing
    assert refused(http.put("/schedules/weekly", json=NIGHTLY | {"name": "weekly"}), 404,
                   "schedule_not_found") == missing  # fmt: skip
    for act in ("pause", "resume"):
        assert refused(http.post(f"/schedules/weekly/{act}"), 404, "schedule_not_found")
    assert refused(http.delete("/schedules/weekly"), 404, "schedule_not_found") == missing
    assert refused(http.put("/schedules/nightly", json={**NIGHTLY, "name": "weekly"}), 422,
                   "invalid_body") == "'name' is 'weekly', but the path names the schedule 'nightly'"  # fmt: skip
    assert refused(http.put("/schedules/nightly", json={"cron": "* * * * * *"}), 422,
                   "invalid_body").startswith("'cron' has 6 fields")  # fmt: skip
    assert refused(http.put("/schedules/nightly", json={"cron": "0 6 * * *"}), 422,
                   "invalid_body") == NO_TITLE  # fmt: skip
    assert refused(http.put("/schedules/nightly", json={**NIGHTLY, "context": {}}), 422,
                   "invalid_body") == NO_TITLE  # fmt: skip
    assert refused(http.post("/schedules/nightly/pause", json={"why": 1}), 422,
                   "invalid_body") == "this act has no part 'why'; its part is by"  # fmt: skip
    assert refused(http.post("/schedules", content=b"[]"), 422, "invalid_body")
    assert http.get("/schedules/nightly").json() == SHOWN


def test_the_client_s_methods(api: RunningApi) -> None:
    with Client(api.url, actor="alice") as client:
        made = client.add_schedule("nightly", "0 21 * * *", context={"title": "report"})
        assert made == SHOWN
        assert client.schedules() == [SHOWN]
        assert client.pause_schedule("nightly", reason="month end")["paused"] is True
        assert client.resume_schedule("nightly")["next_at"] == SHOWN["next_at"]
        replaced = client.replace_schedule(
            "nightly", "0 6 * * *", tz="Europe/Paris", context=TITLED, id="r.{at}",
            catch_up="all", paused=True,
        )  # fmt: skip
        assert {k: replaced[k] for k in ("tz", "id", "catch_up", "paused", "context")} == {
            "tz": "Europe/Paris", "id": "r.{at}", "catch_up": "all", "paused": True,
            "context": TITLED,
        }  # fmt: skip
        assert client.schedule("nightly") == replaced
        assert client.remove_schedule("nightly") == replaced
        with pytest.raises(NotFound) as caught:
            client.schedule("nightly")
        assert caught.value.code == "schedule_not_found"
        kinds = [(act["kind"], act["actor"], act["reason"]) for act in client.audit()]
    assert kinds == [
        ("schedule_removed", "alice", None), ("schedule_replaced", "alice", None),
        ("schedule_resumed", "alice", None), ("schedule_paused", "alice", "month end"),
        ("schedule_added", "alice", None),
    ]  # fmt: skip


async def test_the_async_client_s_methods(api: RunningApi) -> None:
    async with AsyncClient(api.url) as client:
        assert await client.add_schedule("nightly", "0 21 * * *", context={"title": "report"}) == (
            SHOWN
        )
        assert await client.schedules() == [SHOWN]
        assert (await client.pause_schedule("nightly"))["paused"] is True
        assert (await client.resume_schedule("nightly"))["paused"] is False
        replaced = await client.replace_schedule("nightly", "0 22 * * *", context=TITLED)
        assert replaced["cron"] == "0 22 * * *"
        assert (await client.schedule("nightly"))["next_at"] == "2026-10-16T22:00:00Z"
        assert (await client.remove_schedule("nightly"))["name"] == "nightly"
        assert await client.schedules() == []


def needing_an_owner() -> Graph:
    """ORDERS whose model needs an `owner` as well: a version that refuses `NIGHTLY`."""
    newer = variant(ORDERS)
    newer["schemas"]["Item"]["properties"]["owner"] = {"type": "string"}
    newer["schemas"]["Item"]["required"].append("owner")
    return load_graph(graph_text(newer))


def serve_newer(api: RunningApi, clock: FakeClock) -> None:
    """Serve `needing_an_owner()` as `serve` does when started with it: recorded, current."""
    graph = needing_an_owner()
    serve_version(api.plane.store, graph, clock)
    api.plane.config.versions.make_current(graph)


OWNER = "orders: Item: 'owner' is a required property"


def test_a_slot_that_fails_is_kept_in_the_schedule_and_counted(
    http: httpx.Client, api: RunningApi, clock: FakeClock
) -> None:
    assert http.post("/schedules", json={**NIGHTLY, "cron": "0 * * * *"}).status_code == 201
    assert http.post("/schedules", json={**NIGHTLY, "name": "spare"}).status_code == 201
    serve_newer(api, clock)
    ticker = Ticker(api.plane)
    for _ in range(2):  # the slots of 21:00 and 22:00
        clock.advance(3600)
        assert ticker.tick().failures == 0
    failed = http.get("/schedules/nightly").json()
    assert {k: failed[k] for k in ("last_at", "last_token", "last_error", "last_error_at")} == {
        "last_at": None, "last_token": None,
        "last_error": f"the token 'nightly-20261016T2200' did not start: {OWNER}",
        "last_error_at": "2026-10-16T22:00:00Z",
    }  # fmt: skip
    assert failed["failures"] == 2
    samples = scrape(http)
    assert samples[("stateous_schedule_failures_total", (("schedule", "nightly"),))] == 2
    # `spare`'s 21:00 slot failed too (its cron is daily); its count is its own.
    assert samples[("stateous_schedule_failures_total", (("schedule", "spare"),))] == 1
    # Fixed with a context the new version takes: the next slot starts; the error stays on
    # record with its time, before the slot that started, and the count stays.
    fixed = {**NIGHTLY, "cron": "0 * * * *", "context": {**TITLED, "owner": "ops"}}
    assert http.put("/schedules/nightly", json=fixed).status_code == 200
    clock.advance(3600)
    ticker.tick()
    after = http.get("/schedules/nightly").json()
    assert {k: after[k] for k in ("last_at", "last_token", "last_error_at", "failures")} == {
        "last_at": "2026-10-16T23:00:00Z", "last_token": "nightly-20261016T2300",
        "last_error_at": "2026-10-16T22:00:00Z", "failures": 2,
    }  # fmt: skip
    assert scrape(http)[("stateous_schedule_failures_total", (("schedule", "nightly"),))] == 2
