"""`GET /metrics`: names and values after a known run, on both backends."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stateous.control.clock import FakeClock
from stateous.control.ticker import Ticker
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(http: httpx.Client) -> Samples:
    """Every sample of `GET /metrics`, keyed by name and sorted labels."""
    answer = http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


@pytest.fixture
def clock() -> FakeClock:
    """The control plane's clock, moved by the test."""
    return FakeClock()


@pytest.fixture
def fake_api(migrated_db_url: str, clock: FakeClock) -> Iterator[RunningApi]:
    """The orders app on a fake clock."""
    with running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as running:
        yield running


def test_the_figures_after_a_known_run(fake_api: RunningApi, clock: FakeClock) -> None:
    with httpx.Client(base_url=fake_api.url, timeout=30) as http:
        for token in ("O-1", "O-2", "O-3"):
            assert (
                http.post("/tokens", json={"token": token, "context": {"title": "t"}}).status_code
                == 201
            )
        claim = {"supervisor": "box-1", "states": ["draft"]}
        first = http.post("/tasks/claim", json=claim).json()
        assert first["task"] == 1
        report = {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": "box-1"}
        assert http.post("/tasks/1/report", json=report).status_code == 200
        assert (
            http.post(
                "/tasks/claim", json={"supervisor": "box-1", "states": ["review"]}
            ).status_code
            == 200
        )
        assert (
            http.post(
                "/tasks/claim", json={"supervisor": "box-1", "states": ["nothing"]}
            ).status_code
            == 204
        )
        assert http.post("/tasks/99/report", json=report).json()["code"] == "task_not_found"
        assert http.post("/tasks/claim", json={"supervisor": "", "states": []}).status_code == 422
        assert http.post("/tokens/O-1/pause").status_code == 200
        assert http.post("/tokens/O-1/pause").json()["code"] == "token_not_active"
        # O-2's draft task is claimed; its lease ends two minutes later and the clock retries it.
        assert http.post("/tasks/claim", json=claim).json()["token"] == "O-2"
        clock.advance(60)
        ticker = Ticker(fake_api.plane)
        clock.advance(121)
        result = ticker.tick()
        assert result.leases == 2  # O-1's review task and O-2's draft task
        samples = scrape(http)

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    # O-2's lease ended with no retries left: the token failed. O-1 is paused; its review
    # task's lease ended too. O-3's draft task waits in the queue.
    assert value("stateous_tokens", status="active") == 1
    assert value("stateous_tokens", status="paused") == 1
    assert value("stateous_tokens", status="failed") == 1
    assert value("stateous_tokens", status="completed") == 0
    assert value("stateous_tasks", status="queued") == 1
    assert value("stateous_tasks", status="done") == 1
    assert value("stateous_tasks", status="failed") == 2
    assert value("stateous_tasks", status="claimed") == 0
    assert value("stateous_queued_tasks", state="draft") == 1
    assert ("stateous_queued_tasks", (("state", "review"),)) not in samples
    # O-3's draft task has been queued since the start: 60 + 121 seconds on the fake clock.
    assert value("stateous_oldest_queued_age_seconds") == 181
    assert value("stateous_claims_total", result="granted") == 3
    assert value("stateous_claims_total", result="empty") == 1
    assert value("stateous_reports_total") == 1
    assert value("stateous_refusals_total", code="task_not_found") == 1
    assert value("stateous_refusals_total", code="invalid_argument") == 1
    assert value("stateous_refusals_total", code="token_not_active") == 1
    assert value("stateous_lease_expiries_total") == 2
    assert value("stateous_timers_fired_total") == 0
    assert value("stateous_clock_last_tick_timestamp_seconds") > 0
    assert value("stateous_waiting_claims") == 0
    claims = value("stateous_request_duration_seconds_count", method="POST", route="/tasks/claim")
    assert claims == 5
    reports = (
        "stateous_request_duration_seconds_count",
        (("method", "POST"), ("route", "/tasks/{task}/report")),
    )
    assert samples[reports] == 2
    starts = value("stateous_request_duration_seconds_count", method="POST", route="/tokens")
    assert starts == 3


def test_an_empty_control_plane_shows_zeros(db_url: str) -> None:
    with running_api(db_url, ORDERS) as running, httpx.Client(base_url=running.url) as http:
        samples = scrape(http)
    assert samples[("stateous_tokens", (("status", "active"),))] == 0
    assert samples[("stateous_tasks", (("status", "queued"),))] == 0
    assert samples[("stateous_oldest_queued_age_seconds", ())] == 0
    assert samples[("stateous_clock_last_tick_timestamp_seconds", ())] == 0
    assert not any(name == "stateous_queued_tasks" for name, _ in samples)
    assert not any(name.startswith("python_") or name.startswith("process_") for name, _ in samples)


def test_each_app_has_its_own_registry(
    db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with running_api(db_url, ORDERS) as one, httpx.Client(base_url=one.url) as http:
        http.post("/tokens", json={"token": "O-1", "context": {"title": "t"}})
        http.post("/tasks/claim", json={"supervisor": "a", "states": ["draft"]})
        assert scrape(http)[("stateous_claims_total", (("result", "granted"),))] == 1
    other = f"sqlite:///{tmp_path_factory.mktemp('other') / 'other.db'}"
    with running_api(other, ORDERS) as two, httpx.Client(base_url=two.url) as http:
        assert ("stateous_claims_total", (("result", "granted"),)) not in scrape(http)
