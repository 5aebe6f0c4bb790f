"""`POST /tokens` that arrive together run as one operation of `start_many`,
over a real socket on SQLite and Postgres: each start keeps the answer, rows and refusal it
has alone; a part the database refuses runs again one start at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import Connection, text

from stateous.control.store.group import POSTGRES_LANES, Op
from tests.support.app import RunningApi
from tests.support.rows import leave_stray_ledger_row


@contextmanager
def lanes_busy(api: RunningApi) -> Iterator[None]:
    """Every lane of the plane holds an operation that waits until the block ends."""
    store, lanes = api.plane.store, api.plane.lanes
    release = threading.Event()
    blockers: list[Op] = []
    for _ in range(1 if store.sqlite else POSTGRES_LANES):
        running = threading.Event()

        def wait(_conn: Connection, running: threading.Event = running) -> None:
            running.set()
            release.wait(30)

        blockers.append(Op("test", wait))
        lanes.submit([blockers[-1]])
        assert running.wait(10)  # taken by a lane of its own before the next is queued
    try:
        yield
    finally:
        release.set()
        for op in blockers:
            op.future.result(30)


def start_all(api: RunningApi, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """POST each body to /tokens at once while the lanes are busy; their answers in order."""
    starts = api.plane.starts
    assert starts is not None
    with ThreadPoolExecutor(len(bodies)) as pool, httpx.Client(base_url=api.url) as http:
        with lanes_busy(api):
            futures = [pool.submit(http.post, "/tokens", json=body) for body in bodies]
            deadline = time.monotonic() + 10
            while starts.waiting() < len(bodies):  # each joined the one operation queued
                assert time.monotonic() < deadline, f"{starts.waiting()} of {len(bodies)} joined"
                time.sleep(0.01)
        return [future.result(30) for future in futures]


def started_ats(api: RunningApi) -> dict[str, Any]:
    """The `at` of each token's `started` row."""
    with api.plane.store.engine.connect() as conn:
        rows = conn.execute(text("SELECT token, at FROM ledger WHERE kind = 'started'")).all()
    return {token: at for token, at in rows}


def test_starts_that_arrive_together_share_one_operation_each_with_its_own_answer(
    api: RunningApi, http: httpx.Client
) -> None:
    existing = http.post("/tokens", json={"token": "S-0", "context": {"title": "old"}}).json()
    bodies: list[dict[str, Any]] = [
        {"token": "S-1", "context": {"title": "one"}},
        {"token": "S-0", "context": {"title": "ignored"}},
        {"token": "S-2", "context": {"title": 5}},
        {"token": "-bad", "context": {"title": "x"}},
        {"token": "S-3", "context": {"title": "three"}},
    ]
    answers = start_all(api, bodies)
    # The order the starts joined in is the threads' order: S-1 and S-3 are new either way.
    by_token = {b["token"]: a for b, a in zip(bodies, answers, strict=True)}
    assert by_token["S-1"].status_code == by_token["S-3"].status_code == 201
    assert by_token["S-0"].status_code == 200
    assert by_token["S-0"].json() == existing
    for token, code in (("S-2", "invalid_context"), ("-bad", "invalid_token_id")):
        assert by_token[token].status_code == 422
        alone = http.post("/tokens", json=next(b for b in bodies if b["token"] == token))
        assert (by_token[token].json(), alone.json()["code"]) == (alone.json(), code)
    assert by_token["S-1"].json() == http.get("/tokens/S-1").json()
    # One operation: the new tokens' rows share one `at`, another than S-0's.
    ats = started_ats(api)
    assert sorted(ats) == ["S-0", "S-1", "S-3"]
    assert ats["S-1"] == ats["S-3"] != ats["S-0"]
    with api.plane.store.engine.connect() as conn:
        task = conn.execute(text("SELECT id FROM tasks WHERE token = 'S-3'")).scalar_one()
    ledger = [(e["kind"], e["data"]) for e in http.get("/tokens/S-3/history").json()]
    assert ledger == [
        ("started", {"context": {"title": "three", "verdict": None}}),
        ("event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        ("entered", {"state": "draft", "visit": 1}),
        ("task_queued", {"task": task, "state": "draft"}),
    ]


def test_two_starts_of_one_id_together_make_one_token(api: RunningApi) -> None:
    bodies = [{"token": "D-1", "context": {"title": "same"}} for _ in range(4)]
    answers = start_all(api, bodies)
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 201]
    assert len({a.content for a in answers}) == 1
    assert list(started_ats(api)) == ["D-1"]


def test_an_operation_the_database_refuses_runs_its_starts_one_at_a_time(
    api: RunningApi, http: httpx.Client
) -> None:
    # A ledger row without its token: the shared insert of R-2's first row fails (`Raced`),
    # nothing of the operation is kept, and each start runs again alone, as before.
    with api.plane.store.engine.begin() as conn:
        leave_stray_ledger_row(conn, "R-2")
    bodies = [{"token": f"R-{n}", "context": {"title": str(n)}} for n in range(1, 4)]
    answers = start_all(api, bodies)
    assert [a.status_code for a in answers] == [201, 422, 201]
    assert answers[1].json()["code"] == "invalid_token_id"
    assert sorted(started_ats(api)) == ["R-1", "R-3"]
    kinds = [e["kind"] for e in http.get("/tokens/R-3/history").json()]
    assert kinds == ["started", "event_accepted", "entered", "task_queued"]
