"""The supervisors' beat and registry over a real socket, on both backends: the statuses on a fake
clock at the default thresholds (stale after 30 s, gone after 2 minutes), per-state live counts in
`/stats`, supervisors by status in `/metrics`, and the refusals of a bad beat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock, iso
from tests.integration.control.test_metrics import scrape
from tests.support.app import running_api
from tests.support.graphs import ORDERS

STARTED = "2026-10-16T20:40:00Z"
CHECKSUM_SHAPE = "a beat's 'checksum' is 'sha256:' and 64 lowercase hex digits"


def beat(name: str, states: list[str], **changes: Any) -> dict[str, Any]:
    """A beat's body as `supervise` sends it."""
    body: dict[str, Any] = {
        "supervisor": name,
        "host": "build-box-1",
        "pid": 4242,
        "version": "0.1.0",
        "states": states,
        "slots": 4,
        "running": [],
        "started_at": STARTED,
    }
    body.update(changes)
    return body


@pytest.fixture
def http(migrated_db_url: str, clock: FakeClock) -> Iterator[httpx.Client]:
    """A client of the orders app on a fake clock."""
    with (
        running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as running,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        yield client


@pytest.fixture(autouse=True)
def spec_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default thresholds, whatever the environment running the tests sets."""
    monkeypatch.delenv("STATEOUS_SUPERVISOR_STALE_SECONDS", raising=False)
    monkeypatch.delenv("STATEOUS_SUPERVISOR_GONE_SECONDS", raising=False)


def statuses(http: httpx.Client) -> dict[str, str]:
    """Each listed supervisor's status."""
    answer = http.get("/supervisors")
    assert answer.status_code == 200
    return {entry["supervisor"]: entry["status"] for entry in answer.json()}


def test_a_beat_answers_the_entry_and_the_list_has_it(http: httpx.Client, clock: FakeClock) -> None:
    answer = http.post("/supervisors/beat", json=beat("box-1", ["draft"], running=[7, 9]))
    assert answer.status_code == 200
    entry = {
        "supervisor": "box-1",
        "host": "build-box-1",
        "pid": 4242,
        "version": "0.1.0",
        "states": ["draft"],
        "slots": 4,
        "running": [7, 9],
        "started_at": STARTED,
        "stopping": False,
        "seen_at": iso(clock.now()),
        "status": "live",
        "checksum": None,
    }
    assert answer.json() == entry
    assert http.get("/supervisors").json() == [entry]


def test_a_beat_names_the_version_its_supervisor_serves(http: httpx.Client) -> None:
    checksum = http.get("/health").json()["checksum"]
    answer = http.post("/supervisors/beat", json=beat("box-1", ["draft"], checksum=checksum))
    assert (answer.status_code, answer.json()["checksum"]) == (200, checksum)
    assert [e["checksum"] for e in http.get("/supervisors").json()] == [checksum]
    # Shape only: a checksum never served is stored as named (it serves no token's version).
    stray = "sha256:" + "0" * 64
    http.post("/supervisors/beat", json=beat("box-2", ["draft"], checksum=stray))
    # A beat that names none (a supervisor of before versions) serves the current version.
    http.post("/supervisors/beat", json=beat("box-1", ["draft"], checksum=None))
    listed = http.get("/supervisors").json()
    assert [(e["supervisor"], e["checksum"]) for e in listed] == [("box-1", None), ("box-2", stray)]


def test_live_then_stale_then_gone_at_the_default_thresholds(
    http: httpx.Client, clock: FakeClock
) -> None:
    assert http.post("/supervisors/beat", json=beat("box-1", ["draft"])).status_code == 200
    clock.advance(30)
    assert statuses(http) == {"box-1": "live"}
    clock.advance(0.001)
    assert statuses(http) == {"box-1": "stale"}
    clock.advance(89.998)
    assert statuses(http) == {"box-1": "stale"}
    clock.advance(0.001)
    assert statuses(http) == {"box-1": "gone"}
    clock.advance(24 * 3600 - 0.001)
    assert statuses(http) == {"box-1": "gone"}
    clock.advance(0.002)
    assert statuses(http) == {}


def test_a_beat_keeps_a_supervisor_live_and_a_graceful_stop_is_gone_at_once(
    http: httpx.Client, clock: FakeClock
) -> None:
    for _ in range(10):
        assert http.post("/supervisors/beat", json=beat("box-1", ["draft"])).status_code == 200
        clock.advance(10)
        assert statuses(http) == {"box-1": "live"}
    stop = http.post("/supervisors/beat", json=beat("box-1", ["draft"], stopping=True))
    assert stop.status_code == 200
    assert (stop.json()["status"], stop.json()["stopping"]) == ("gone", True)
    assert statuses(http) == {"box-1": "gone"}
    clock.advance(24 * 3600)
    assert statuses(http) == {"box-1": "gone"}
    clock.advance(0.001)
    assert statuses(http) == {}
    # The same name started again is live again.
    assert http.post("/supervisors/beat", json=beat("box-1", ["draft"])).json()["status"] == "live"


def test_stats_counts_the_live_supervisors_of_each_state(
    http: httpx.Client, clock: FakeClock
) -> None:
    http.post("/supervisors/beat", json=beat("box-1", ["draft"]))
    http.post("/supervisors/beat", json=beat("box-2", ["draft", "review"]))
    http.post("/supervisors/beat", json=beat("box-3", ["review"], stopping=True))
    clock.advance(20)
    http.post("/supervisors/beat", json=beat("box-4", ["review"]))
    clock.advance(15)  # box-1 and box-2 are stale now; box-4 is live
    states = http.get("/stats").json()["states"]
    assert {name: entry["supervisors"] for name, entry in states.items()} == {
        "draft": 0,
        "review": 1,
    }
    http.post("/supervisors/beat", json=beat("box-1", ["draft"]))
    states = http.get("/stats").json()["states"]
    assert {name: entry["supervisors"] for name, entry in states.items()} == {
        "draft": 1,
        "review": 1,
    }
    assert states["draft"] == {
        "active": 0, "paused": 0, "queued": 0, "claimed": 0, "waiting": 0, "supervisors": 1,
    }  # fmt: skip


def test_metrics_counts_the_supervisors_by_status(http: httpx.Client, clock: FakeClock) -> None:
    key = "stateous_supervisors"
    samples = scrape(http)
    assert [samples[(key, (("status", s),))] for s in ("live", "stale", "gone")] == [0, 0, 0]
    http.post("/supervisors/beat", json=beat("box-1", ["draft"]))
    clock.advance(40)
    http.post("/supervisors/beat", json=beat("box-2", ["draft"]))
    http.post("/supervisors/beat", json=beat("box-3", ["draft"]))
    http.post("/supervisors/beat", json=beat("box-4", ["draft"], stopping=True))
    samples = scrape(http)
    assert [samples[(key, (("status", s),))] for s in ("live", "stale", "gone")] == [2, 1, 1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"supervisor": ""}, "a beat's 'supervisor' is a string of 1 to 256 characters"),
        ({"supervisor": "x" * 257}, "a beat's 'supervisor' is a string of 1 to 256 characters"),
        ({"host": 5}, "a beat's 'host' is a string of 1 to 256 characters"),
        ({"pid": -1}, "a beat's 'pid' is a whole number of 0 or more"),
        ({"pid": True}, "a beat's 'pid' is a whole number of 0 or more"),
        ({"version": None}, "a beat's 'version' is a string of 1 to 64 characters"),
        ({"states": "draft"}, "a beat's 'states' is a list of state names"),
        ({"states": [""]}, "a beat's 'states' is a list of state names"),
        ({"slots": 1.5}, "a beat's 'slots' is a whole number from 0 to 100000"),
        ({"running": [0]}, "a beat's 'running' is a list of task ids"),
        ({"running": None}, "a beat's 'running' is a list of task ids"),
        (
            {"started_at": "yesterday"},
            "a beat's 'started_at' is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z",
        ),
        ({"stopping": "yes"}, "a beat's 'stopping' is true or false"),
        ({"checksum": "sha256:abc"}, CHECKSUM_SHAPE),
        ({"checksum": "sha256:" + "A" * 64}, CHECKSUM_SHAPE),
        ({"checksum": 7}, CHECKSUM_SHAPE),
    ],
)
def test_a_bad_beat_is_refused_and_records_nothing(
    http: httpx.Client, change: dict[str, Any], message: str
) -> None:
    answer = http.post("/supervisors/beat", json={**beat("box-1", ["draft"]), **change})
    assert (answer.status_code, answer.json()) == (422, {"error": message, "code": "invalid_body"})
    assert http.get("/supervisors").json() == []


def test_a_beat_without_fields_or_not_an_object_is_refused(http: httpx.Client) -> None:
    missing = http.post("/supervisors/beat", json={})
    assert missing.status_code == 422
    assert missing.json() == {
        "error": "a beat's 'supervisor' is a string of 1 to 256 characters",
        "code": "invalid_body",
    }
    listed = http.post("/supervisors/beat", json=[1])
    assert (listed.status_code, listed.json()["code"]) == (422, "invalid_body")
    broken = http.post("/supervisors/beat", content=b"{")
    assert (broken.status_code, broken.json()["code"]) == (400, "bad_request")
    assert http.get("/supervisors").json() == []


def test_started_at_with_an_offset_is_stored_in_utc(http: httpx.Client) -> None:
    body = beat("box-1", ["draft"], started_at="2026-10-16T22:40:00.5+02:00")
    assert http.post("/supervisors/beat", json=body).json()["started_at"] == (
        "2026-10-16T20:40:00.500000Z"
    )


def test_the_thresholds_follow_the_environment_knobs(
    http: httpx.Client, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATEOUS_SUPERVISOR_STALE_SECONDS", "2")
    monkeypatch.setenv("STATEOUS_SUPERVISOR_GONE_SECONDS", "5")
    http.post("/supervisors/beat", json=beat("box-1", ["draft"]))
    clock.advance(3)
    assert statuses(http) == {"box-1": "stale"}
    clock.advance(2)
    assert statuses(http) == {"box-1": "gone"}


def test_a_beat_sent_again_keeps_one_entry_with_the_last_fields(
    http: httpx.Client, clock: FakeClock
) -> None:
    # A beat whose answer was lost is sent again: the same name stays one entry, as last sent.
    for _ in range(2):
        assert http.post("/supervisors/beat", json=beat("box-1", ["draft"])).status_code == 200
    clock.advance(1)
    later = beat("box-1", ["draft", "review"], running=[3], slots=8)
    assert http.post("/supervisors/beat", json=later).status_code == 200
    listed = http.get("/supervisors").json()
    assert [(e["supervisor"], e["states"], e["running"], e["slots"]) for e in listed] == [
        ("box-1", ["draft", "review"], [3], 8)
    ]
    assert listed[0]["seen_at"] == iso(clock.now())
