"""Long-poll claims over a real socket, on SQLite and Postgres, and on shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import ServeProcess, sqlite_url
from tests.support.app import RunningApi
from tests.support.graphs import ORDERS, write_graph

CLAIM_DRAFT = {"supervisor": "box-1", "states": ["draft"], "request": "r1"}


class Claim:
    """A `POST /tasks/claim` sent in a thread: its answer, and when it came."""

    def __init__(self, url: str, body: dict[str, Any]) -> None:
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None
        self.sent = time.monotonic()
        self.answered = 0.0
        self._thread = threading.Thread(target=self._send, args=(url, body), daemon=True)
        self._thread.start()

    def _send(self, url: str, body: dict[str, Any]) -> None:
        try:
            self.response = httpx.post(f"{url}/tasks/claim", json=body, timeout=60)
        except BaseException as exc:
            self.error = exc
        self.answered = time.monotonic()

    def result(self, timeout: float = 30.0) -> httpx.Response:
        """The answer (fails when none came within `timeout`)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the claim got no answer"
        assert self.error is None, self.error
        assert self.response is not None
        return self.response

    @property
    def seconds(self) -> float:
        """Time from sending to the answer."""
        return self.answered - self.sent

    def done(self) -> bool:
        """Whether the answer arrived."""
        return not self._thread.is_alive()


def waiting_claims(url: str) -> float:
    """`stateous_waiting_claims` of `GET /metrics`: the claims the server holds now."""
    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("stateous_waiting_claims "):
            return float(line.split()[1])
    raise AssertionError("no stateous_waiting_claims in /metrics")


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll `check` until it holds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_task_queued_during_the_wait_is_granted_at_once(
    api: RunningApi, http: httpx.Client
) -> None:
    claim = Claim(api.url, {**CLAIM_DRAFT, "wait": 20})
    wait_until(lambda: api.plane.wakeups.waiting == 1)
    assert not claim.done()
    started = time.monotonic()
    assert http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}}).status_code == 201
    answer = claim.result()
    assert answer.status_code == 200
    grant = answer.json()
    assert (grant["task"], grant["token"], grant["state"], grant["attempt"]) == (
        1,
        "O-1",
        "draft",
        1,
    )
    # Woken by the start's commit, long before the 20 s wait ends.
    assert claim.answered - started < 5
    kinds = [entry["kind"] for entry in http.get("/tokens/O-1/history").json()]
    assert kinds == ["started", "event_accepted", "entered", "task_queued", "task_claimed"]


def test_a_queued_task_is_granted_without_waiting(api: RunningApi, http: httpx.Client) -> None:
    http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}})
    claim = Claim(api.url, {**CLAIM_DRAFT, "wait": 30})
    answer = claim.result()
    assert answer.status_code == 200
    assert answer.json()["token"] == "O-1"
    assert claim.seconds < 5


def test_the_wait_ends_with_204(api: RunningApi) -> None:
    claim = Claim(api.url, {**CLAIM_DRAFT, "wait": 0.5})
    answer = claim.result()
    assert answer.status_code == 204
    assert answer.content == b""
    assert claim.seconds >= 0.5
    assert api.plane.wakeups.waiting == 0


def test_a_task_of_another_state_does_not_end_the_wait(api: RunningApi, http: httpx.Client) -> None:
    claim = Claim(api.url, {"supervisor": "box-2", "states": ["review"], "wait": 1.5})
    wait_until(lambda: api.plane.wakeups.waiting == 1)
    assert http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}}).status_code == 201
    answer = claim.result()
    assert answer.status_code == 204
    assert claim.seconds >= 1.5
    assert http.get("/tokens/O-1").json()["status"] == "active"


def test_a_waiting_claim_holds_no_transaction(api: RunningApi, http: httpx.Client) -> None:
    """Starts, reads and other claims go on while claims wait (SQLite has one writer)."""
    waiting = [
        Claim(api.url, {"supervisor": f"idle-{n}", "states": ["review"], "wait": 5})
        for n in range(3)
    ]
    wait_until(lambda: api.plane.wakeups.waiting == 3)
    began = time.monotonic()
    for n in range(5):
        answer = http.post("/tokens", json={"token": f"O-{n}", "context": {"title": "a"}})
        assert answer.status_code == 201
    granted = http.post("/tasks/claim", json={"supervisor": "box-1", "states": ["draft"]})
    assert granted.status_code == 200
    assert time.monotonic() - began < 4
    assert not any(claim.done() for claim in waiting)


def test_several_waiting_claims_share_the_queued_tasks(api: RunningApi, http: httpx.Client) -> None:
    claims = [
        Claim(api.url, {"supervisor": f"box-{n}", "states": ["draft"], "wait": 20})
        for n in range(2)
    ]
    wait_until(lambda: api.plane.wakeups.waiting == 2)
    http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}})
    http.post("/tokens", json={"token": "O-2", "context": {"title": "b"}})
    answers = [claim.result() for claim in claims]
    assert sorted(a.json()["token"] for a in answers) == ["O-1", "O-2"]


def test_a_repeated_request_id_gets_the_same_grant_after_a_wait(
    api: RunningApi, http: httpx.Client
) -> None:
    claim = Claim(api.url, {**CLAIM_DRAFT, "wait": 20})
    wait_until(lambda: api.plane.wakeups.waiting == 1)
    http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}})
    first = claim.result().json()
    again = http.post("/tasks/claim", json={**CLAIM_DRAFT, "wait": 20})
    assert again.status_code == 200
    assert again.json() == first


@pytest.mark.parametrize("wait", ["10", -1, 60.5, True, [], {}])
def test_a_bad_wait_is_invalid_body(http: httpx.Client, wait: Any) -> None:
    answer = http.post("/tasks/claim", json={**CLAIM_DRAFT, "wait": wait})
    assert answer.status_code == 422
    assert answer.json() == {
        "error": "'wait' is a number of seconds from 0 to 60",
        "code": "invalid_body",
    }


@pytest.mark.parametrize("wait", [0, 0.0, None, 60])
def test_a_good_wait_with_a_queued_task_answers_the_grant(http: httpx.Client, wait: Any) -> None:
    http.post("/tokens", json={"token": "O-1", "context": {"title": "a"}})
    answer = http.post("/tasks/claim", json={**CLAIM_DRAFT, "wait": wait})
    assert answer.status_code == 200


def test_no_states_and_no_request_answers_at_once(http: httpx.Client) -> None:
    began = time.monotonic()
    answer = http.post("/tasks/claim", json={"supervisor": "box-1", "states": [], "wait": 30})
    assert answer.status_code == 204
    assert time.monotonic() - began < 5


@pytest.mark.parametrize("backend", ["sqlite"])
def test_shutdown_releases_waiting_claims(
    backend: str,
    tmp_path: Path,
    serve: Callable[..., Any],
) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve(graph, sqlite_url(tmp_path)) as served:
        assert isinstance(served, ServeProcess)
        claims = [
            Claim(served.url, {**CLAIM_DRAFT, "supervisor": f"box-{n}", "wait": 60})
            for n in range(2)
        ]
        wait_until(lambda: waiting_claims(served.url) == 2, timeout=20)
        assert not any(claim.done() for claim in claims)
        stopped = time.monotonic()
        code = served.stop(timeout=20)
        assert code == 0
        for claim in claims:
            assert claim.result(timeout=10).status_code == 204
            assert claim.answered - stopped < 5
        assert time.monotonic() - stopped < 10
        for pipe in (served.process.stdout, served.process.stderr):
            if pipe is not None:
                pipe.close()
