"""Bulk jobs over a real socket on SQLite and Postgres: dry runs, frozen matches,
each token its own operation with `by.bulk`, skipped codes, stop, and every refusal."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.control.engine.bulk import apply_one
from stateous.control.store import bulk as bulk_store
from tests.support.app import RunningApi

T0 = "2026-10-16T20:48:44.845389Z"
BY = {"actor": "alice", "reason": "the vendor is down", "via": "cli"}


#: The app runs on the `clock` fixture of conftest.py (a FakeClock).
pytestmark = pytest.mark.fake_clock


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def start(http: httpx.Client, token: str, **context: Any) -> None:
    ok(http.post("/tokens", json={"token": token, "context": {"title": "t", **context}}), 201)


def statuses(http: httpx.Client) -> dict[str, str]:
    return {t["token"]: t["status"] for t in ok(http.get("/tokens", params={"limit": "1000"}))}


def test_a_dry_run_counts_and_shows_the_oldest_and_writes_nothing(
    http: httpx.Client, clock: FakeClock
) -> None:
    for number in range(60, 0, -1):  # T-60 is the oldest
        start(http, f"T-{number:02}", customer="acme" if number % 2 else "other")
        clock.advance(1)
    body = {"action": "cancel", "filter": {"context": {"customer": "acme"}}, "dry_run": True}
    answer = ok(http.post("/bulk", json=body))
    assert answer == {"matched": 30, "tokens": [f"T-{n:02}" for n in range(59, 0, -2)]}
    body = {"action": "pause", "filter": {}, "dry_run": True}
    answer = ok(http.post("/bulk", json=body))
    assert answer == {"matched": 60, "tokens": [f"T-{n:02}" for n in range(60, 10, -1)]}
    assert ok(http.get("/bulk")) == []
    assert set(statuses(http).values()) == {"active"}


def test_a_job_cancels_each_match_with_by_bulk(
    http: httpx.Client, api: RunningApi, clock: FakeClock
) -> None:
    for number in range(1, 6):
        start(http, f"T-{number}", customer="acme" if number != 3 else "other")
    body = {"action": "cancel", "filter": {"context": {"customer": "acme"}}, "by": BY}
    assert ok(http.post("/bulk", json=body), 202) == {"job": 1, "matched": 4}
    start(http, "T-6", customer="acme")  # matches later: not added
    running = ok(http.get("/bulk/1"))
    assert running == {
        "job": 1, "action": "cancel", "filter": {"context": {"customer": "acme"}}, "event": None,
        "matched": 4, "done": 0, "skipped": {}, "status": "running", "created_at": T0,
        "finished_at": None, "by": BY,
    }  # fmt: skip
    assert BulkRunner(api.plane).drain() == 4
    assert statuses(http) == {
        "T-1": "cancelled", "T-2": "cancelled", "T-3": "active", "T-4": "cancelled",
        "T-5": "cancelled", "T-6": "active",
    }  # fmt: skip
    finished = ok(http.get("/bulk/1"))
    assert (finished["done"], finished["status"], finished["finished_at"]) == (4, "finished", T0)
    history = ok(http.get("/tokens/T-2/history"))
    assert history[-1]["kind"] == "cancelled"
    assert history[-1]["data"] == {"by": {**BY, "bulk": 1}}
    audit = ok(http.get("/audit"))
    assert sorted((a["token"], a["kind"], a["actor"], a["bulk"]) for a in audit) == [
        (f"T-{n}", "cancelled", "alice", 1) for n in (1, 2, 4, 5)
    ]
    assert ok(http.get("/bulk")) == [finished]


def test_tokens_the_action_no_longer_fits_are_skipped_with_their_code(
    http: httpx.Client, api: RunningApi
) -> None:
    for number in range(1, 5):
        start(http, f"T-{number}")
    ok(http.post("/tokens/T-1/pause"))
    ok(http.post("/tokens/T-2/pause"))
    body = {"action": "resume", "filter": {"prefix": "T-"}}
    assert ok(http.post("/bulk", json=body), 202) == {"job": 1, "matched": 4}
    ok(http.post("/tokens/T-2/cancel"))  # meanwhile
    BulkRunner(api.plane).drain()
    job = ok(http.get("/bulk/1"))
    assert (job["done"], job["skipped"], job["status"]) == (1, {"token_not_active": 3}, "finished")
    assert statuses(http) == {"T-1": "active", "T-2": "cancelled", "T-3": "active", "T-4": "active"}
    resumed = [row for row in ok(http.get("/tokens/T-1/history")) if row["kind"] == "resumed"]
    assert [row["data"] for row in resumed] == [{"by": {"bulk": 1}}]


def test_a_bulk_fire_takes_the_event_and_skips_a_refusal(
    http: httpx.Client, api: RunningApi
) -> None:
    for number in (1, 2, 3):
        start(http, f"T-{number}")
    ok(http.post("/tokens/T-3/events/submitted"))  # now in review: takes no `submitted`
    body = {"action": "fire", "event": "submitted", "filter": {"tokens": ["T-1", "T-3", "T-9"]}}
    assert ok(http.post("/bulk", json=body), 202) == {"job": 1, "matched": 2}
    BulkRunner(api.plane).drain()
    job = ok(http.get("/bulk/1"))
    assert (job["done"], job["skipped"]) == (1, {"event_not_allowed": 1})
    states = {t["token"]: t["state"] for t in ok(http.get("/tokens"))}
    assert states == {"T-1": "review", "T-2": "draft", "T-3": "review"}
    last = ok(http.get("/tokens/T-3/history"))[-1]
    assert (last["kind"], last["data"]["event"]) == ("event_rejected", "submitted")


def test_the_filter_parts(http: httpx.Client, clock: FakeClock) -> None:
    start(http, "A_1", n=1)
    clock.advance(10)
    start(http, "AB1", n=1.0, flag=True, deep={"x": [1, "y"]})
    clock.advance(10)
    start(http, "B-1", n=True)
    ok(http.post("/tokens/B-1/pause"))
    ok(http.post("/tokens/AB1/events/submitted"))

    def match(found: dict[str, Any]) -> list[str]:
        body = {"action": "cancel", "filter": found, "dry_run": True}
        return sorted(ok(http.post("/bulk", json=body))["tokens"])

    assert match({"prefix": "A_"}) == ["A_1"]  # `_` is no wildcard
    assert match({"status": ["paused"]}) == ["B-1"]
    assert match({"status": ["active", "paused"], "state": ["draft"]}) == ["A_1", "B-1"]
    assert match({"state": ["review"]}) == ["AB1"]
    assert match({"context": {"n": 1}}) == ["AB1", "A_1"]  # 1 equals 1.0, never true
    assert match({"context": {"n": True}}) == ["B-1"]
    assert match({"context": {"deep": {"x": [1, "y"]}, "flag": True}}) == ["AB1"]
    assert match({"context": {"missing": None}}) == []
    assert match({"entered_before": "2026-10-16T20:48:54.845389Z"}) == ["A_1"]
    assert match({"entered_after": "2026-10-16T22:48:50+02:00"}) == ["AB1", "B-1"]
    assert match({"tokens": ["b-1", "AB1", "AB1"]}) == ["AB1"]


REFUSED = [
    ({"action": "stop"}, "'action' is one of pause, resume, cancel, fire, retry, migrate"),
    ({"action": "fire"}, "'fire' needs the event's name in 'event'"),
    ({"action": "fire", "event": "nope"}, "the workflow 'orders' has no event 'nope'"),
    ({"action": "fire", "event": "__started__"}, "the workflow 'orders' has no event '__started__'"),
    ({"action": "fire", "event": "submitted", "payload": 1}, "'payload' is a JSON object, or null"),
    ({"action": "pause", "event": "submitted"}, "'pause' takes no 'event' or 'payload'; only fire does"),
    ({"action": "pause", "dry_run": "yes"}, "'dry_run' is true or false"),
    ({"action": "pause", "when": 1}, "a bulk job has no part 'when'"),
    ({"action": "pause", "filter": []}, "'filter' is an object of status, state, prefix, entered_before, ..."),
    ({"action": "pause", "filter": {"colour": "red"}},
     "the filter has no part 'colour'; its parts are status, state, prefix, entered_before, "
     "entered_after, context, tokens, structure"),
    ({"action": "pause", "filter": {"state": ["nowhere"]}},
     "the filter's 'state' names 'nowhere', which is not a state of the workflow"),
    ({"action": "pause", "filter": {"state": "draft"}}, "the filter's 'state' is a list of names"),
    ({"action": "pause", "filter": {"status": ["sleeping"]}},
     "the filter's 'status' names 'sleeping', which is not a token status"),
    ({"action": "pause", "filter": {"entered_before": "monday"}},
     "the filter's 'entered_before' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"),
    ({"action": "pause", "filter": {"entered_after": 5}},
     "the filter's 'entered_after' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z"),
    ({"action": "pause", "filter": {"prefix": ""}}, "the filter's 'prefix' is a text of 1 to 128 characters"),
    ({"action": "pause", "filter": {"context": [1]}},
     "the filter's 'context' is an object of keys and the values they must equal"),
    ({"action": "pause", "filter": {"tokens": "T-1"}}, "the filter's 'tokens' is a list of token ids"),
    ({"action": "pause", "filter": {"tokens": [f"T-{n}" for n in range(10_001)]}},
     "the filter's 'tokens' has at most 10,000 ids"),
    ({"action": "pause", "by": {"actor": ""}}, "'by.actor' is a text of 1 to 64 printable characters"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "sentence"), REFUSED)
def test_bulk_refusals_write_nothing(http: httpx.Client, body: Any, sentence: str) -> None:
    start(http, "T-1")
    answer = http.post("/bulk", json=body)
    assert (answer.status_code, answer.json()) == (
        422, {"error": sentence, "code": "invalid_body"},
    )  # fmt: skip
    assert ok(http.get("/bulk")) == []


def test_stop_and_its_refusals(http: httpx.Client, api: RunningApi) -> None:
    for number in range(1, 46):
        start(http, f"T-{number:02}")
    ok(http.post("/bulk", json={"action": "pause", "filter": {}}), 202)
    runner = BulkRunner(api.plane, batch=20)
    assert runner.step() == 20
    stopped = ok(http.post("/bulk/1/stop"))
    assert (stopped["status"], stopped["done"], stopped["finished_at"]) == ("stopped", 20, T0)
    assert runner.drain() == 0
    assert list(statuses(http).values()).count("paused") == 20
    again = http.post("/bulk/1/stop")
    assert (again.status_code, again.json()) == (409, {
        "error": "bulk job 1 is stopped; only a running job can be stopped",
        "code": "bulk_not_running",
    })  # fmt: skip
    for path in ("/bulk/7", "/bulk/7/stop", "/bulk/x", "/bulk/99999999999999999999"):
        answer = http.get(path) if path.count("/") == 2 else http.post(path)
        assert answer.status_code == 404, path
        assert answer.json()["code"] in ("bulk_not_found", "not_found"), path
    assert http.get("/bulk/7").json() == {
        "error": "there is no bulk job 7",
        "code": "bulk_not_found",
    }
    listing = http.get("/bulk", params={"status": "nope"})
    assert (listing.status_code, listing.json()["code"]) == (422, "invalid_argument")
    assert [j["job"] for j in ok(http.get("/bulk", params={"status": "stopped"}))] == [1]


def test_an_empty_match_finishes_at_once(http: httpx.Client) -> None:
    answer = ok(http.post("/bulk", json={"action": "cancel", "filter": {"prefix": "none"}}), 202)
    assert answer == {"job": 1, "matched": 0}
    job = ok(http.get("/bulk/1"))
    assert (job["status"], job["finished_at"]) == ("finished", T0)


def test_a_match_is_never_applied_twice(http: httpx.Client, api: RunningApi) -> None:
    start(http, "T-1")
    ok(http.post("/bulk", json={"action": "pause", "filter": {}}), 202)
    plane = api.plane

    job = plane.run("read", lambda conn: bulk_store.get_job(conn, 1))
    assert job is not None

    def once() -> str | None:
        return plane.run(
            "pause", lambda conn: apply_one(conn, plane.clock, plane.config, job, "T-1")
        )

    assert (once(), once()) == ("done", None)
    paused = [row for row in ok(http.get("/tokens/T-1/history")) if row["kind"] == "paused"]
    assert len(paused) == 1


def test_a_job_read_before_its_stop_acts_on_no_token_after_it(
    http: httpx.Client, api: RunningApi
) -> None:
    # The runner reads a job once per batch; a stop that lands within the batch ends it there.
    for number in (1, 2):
        start(http, f"T-{number}")
    ok(http.post("/bulk", json={"action": "pause", "filter": {}}), 202)
    plane = api.plane
    job = plane.run("read", lambda conn: bulk_store.get_job(conn, 1))
    assert job is not None
    act = plane.run("pause", lambda conn: apply_one(conn, plane.clock, plane.config, job, "T-1"))
    assert act == "done"
    assert ok(http.post("/bulk/1/stop"))["status"] == "stopped"
    act = plane.run("pause", lambda conn: apply_one(conn, plane.clock, plane.config, job, "T-2"))
    assert act is None
    assert statuses(http) == {"T-1": "paused", "T-2": "active"}
    assert (ok(http.get("/bulk/1"))["done"], ok(http.get("/bulk/1"))["skipped"]) == (1, {})
