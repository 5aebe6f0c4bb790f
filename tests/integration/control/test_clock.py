"""The real clock of a real `stateous serve`: short timeouts, routine timers, leases and `since`.

The documented durations stay the defaults; these runs shorten the lease, the tick and the `since`
interval through serve's test knobs (stateous.control.knobs) and use `timeout="2s"` graphs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support import ServeProcess
from tests.support.graphs import SDLC, variant, write_graph

Serve = Callable[..., AbstractContextManager[ServeProcess]]
KNOBS = {
    "STATEOUS_TICK_SECONDS": "0.2",
    "STATEOUS_LEASE_SECONDS": "1",
    "STATEOUS_SINCE_SECONDS": "1",
}


@contextmanager
def running(
    serve: Serve, db_url: str, folder: Path, timeout: str
) -> Iterator[tuple[httpx.Client, ServeProcess]]:
    """A real serve of sdlc with `coding` given `timeout=`, and a client of it."""
    doc = variant(SDLC)
    doc["states"]["coding"]["timeout"] = timeout
    graph = write_graph(folder, doc)
    with serve(graph, db_url, env=KNOBS) as served, httpx.Client(base_url=served.url) as client:
        yield client, served


@pytest.fixture
def server(
    serve: Serve, db_url: str, tmp_path: Path
) -> Iterator[tuple[httpx.Client, ServeProcess]]:
    """`coding` times out after 2 seconds."""
    with running(serve, db_url, tmp_path, "2s") as both:
        yield both


@pytest.fixture
def slow_server(
    serve: Serve, db_url: str, tmp_path: Path
) -> Iterator[tuple[httpx.Client, ServeProcess]]:
    """`coding` times out after 60 seconds (out of the way of the other timers)."""
    with running(serve, db_url, tmp_path, "60s") as both:
        yield both


def history(client: httpx.Client, token: str) -> list[tuple[str, dict[str, Any]]]:
    answer = client.get(f"/tokens/{token}/history")
    answer.raise_for_status()
    return [(row["kind"], row["data"]) for row in answer.json()]


def wait_for(client: httpx.Client, token: str, kind: str, timeout: float = 8.0) -> list[Any]:
    """Poll the history until a row of `kind` appears (the clock works on its own)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = history(client, token)
        if any(k == kind for k, _ in rows):
            return rows
        time.sleep(0.1)
    raise AssertionError(f"no {kind} row on {token}: {history(client, token)}")


def test_a_2s_timeout_fails_the_token(server: tuple[httpx.Client, ServeProcess]) -> None:
    client, _ = server
    client.post("/tokens", json={"token": "T", "context": {"repo": "r"}}).raise_for_status()
    rows = wait_for(client, "T", "failed")
    assert rows[-3:] == [
        ("timer_fired", {"event": "timeout"}),
        ("task_cancelled", {"task": 1}),
        ("failed", {"reason": "'coding' timed out: no transition for 'timeout' from 'coding'"}),
    ]
    assert client.get("/tokens/T").json()["status"] == "failed"


def test_a_routine_timer_fires_and_a_lease_ends(
    slow_server: tuple[httpx.Client, ServeProcess],
) -> None:
    client, _ = slow_server
    client.post("/tokens", json={"token": "T", "context": {"repo": "r"}}).raise_for_status()
    claim = {"supervisor": "box", "states": ["coding"], "request": "a" * 32}
    grant = client.post("/tasks/claim", json=claim).json()
    assert (grant["task"], grant["attempt"]) == (1, 1)
    rows = wait_for(client, "T", "task_retrying")
    assert rows[-2:] == [
        ("task_failed", {"task": 1, "error": "box stopped answering: no heartbeat for 2 minutes"}),
        ("task_retrying", {"task": 1, "attempt": 2}),
    ]
    assert client.post("/tasks/heartbeat", json={"supervisor": "box", "tasks": [1]}).json() == {
        "lost": [1]
    }
    late = client.post("/tasks/1/report", json={"kind": "event", "event": "done", "attempt": 1})
    assert (late.status_code, late.json()["code"]) == (409, "task_not_held")
    claim["request"] = "b" * 32
    assert client.post("/tasks/claim", json=claim).json()["attempt"] == 2
    report = {
        "kind": "waiting", "supervisor": "box", "attempt": 2,
        "schedules": [{"event": "stuck", "payload": None, "after": "1s"}],
    }  # fmt: skip
    client.post("/tasks/1/report", json=report).raise_for_status()
    rows = wait_for(client, "T", "completed")
    assert rows[-4:] == [
        ("timer_fired", {"event": "stuck"}),
        ("event_accepted", {"event": "stuck", "payload": None, "state": "coding"}),
        ("task_done", {"task": 1}),
        ("completed", {}),
    ]


def test_a_paused_token_keeps_its_timeout_until_the_resume(
    server: tuple[httpx.Client, ServeProcess],
) -> None:
    client, _ = server
    client.post("/tokens", json={"token": "T", "context": {"repo": "r"}}).raise_for_status()
    assert client.post("/tokens/T/pause").json()["status"] == "paused"
    time.sleep(2.5)
    assert [k for k, _ in history(client, "T")][-1] == "paused"
    client.post("/tokens/T/resume").raise_for_status()
    resumed = time.monotonic()
    wait_for(client, "T", "failed")
    assert time.monotonic() - resumed > 1.0  # the paused time was given back


def test_since_moves_while_serving(server: tuple[httpx.Client, ServeProcess], db_url: str) -> None:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))

    def since() -> datetime:
        with engine.connect() as conn:
            value = conn.execute(text("SELECT since FROM control_plane")).scalar()
        return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))

    first = since()
    deadline = time.monotonic() + 10  # it moves every second (STATEOUS_SINCE_SECONDS)
    while since() <= first and time.monotonic() < deadline:
        time.sleep(0.1)
    assert since() > first
    engine.dispose()
