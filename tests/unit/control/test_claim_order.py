"""The claim's choice: the oldest queued task of an active token among the served
states, read one bounded part per state; on both backends."""

from __future__ import annotations

import sqlite3
from functools import partial

import psycopg
import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim, claim_many
from stateous.control.engine.pause import pause
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store, family_key

BOX = "box"


def _start(store: Store, clock: FakeClock, orders: EngineConfig, token: str) -> None:
    store.run_alone("start", lambda conn: start(conn, clock, orders, token, {"title": token}))


def _claim(store: Store, clock: FakeClock, orders: EngineConfig, states: list[str]) -> str | None:
    grant = store.run_alone("claim", lambda conn: claim(conn, clock, orders, BOX, states, None))
    return None if grant is None else f"{grant['token']}:{grant['state']}"


def test_the_oldest_task_across_the_served_states_is_claimed_first(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    for token in ("A", "B", "C"):
        _start(store, clock, orders, token)
    # A moves on to review: its review task (id 4) is newer than B's and C's draft tasks.
    first = _claim(store, clock, orders, ["draft"])
    assert first == "A:draft"
    submitted = Outcome("event", "submitted", attempt=1, supervisor=BOX)
    store.run_alone("report", lambda conn: report(conn, clock, orders, 1, submitted))
    order = [_claim(store, clock, orders, ["review", "draft"]) for _ in range(4)]
    assert order == ["B:draft", "C:draft", "A:review", None]


def test_more_than_twenty_paused_tokens_do_not_hide_an_active_one(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    for n in range(25):
        _start(store, clock, orders, f"P{n:02}")
        paused = partial(pause, clock=clock, config=orders, token_id=f"P{n:02}")
        store.run_alone("pause", paused)
    _start(store, clock, orders, "ACTIVE")
    assert _claim(store, clock, orders, ["draft", "review"]) == "ACTIVE:draft"
    assert _claim(store, clock, orders, ["draft", "review"]) is None


def _claim_many(
    store: Store, clock: FakeClock, orders: EngineConfig, most: int, request: str | None = None
) -> list[str]:
    grants = store.run_alone(
        "claim",
        lambda conn: claim_many(conn, clock, orders, BOX, ["draft", "review"], request, most),
    )
    return [f"{g['token']}:{g['task']}:{g['attempt']}" for g in grants]


def test_a_claim_of_several_tasks_skips_a_busy_family_and_takes_the_next(
    store: Store, clock: FakeClock, orders: EngineConfig, db_url: str
) -> None:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: no family is ever busy for a claim")
    for token in ("A", "B", "C", "D"):
        _start(store, clock, orders, token)
    with psycopg.connect(db_url) as other:  # another transaction holds B's family
        other.execute("SELECT pg_advisory_xact_lock(%s)", (family_key("B"),))
        assert _claim_many(store, clock, orders, 2) == ["A:1:1", "C:3:1"]
    assert _claim_many(store, clock, orders, 5) == ["B:2:1", "D:4:1"]
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, status, claimed_by, attempt FROM tasks ORDER BY id")
        ).all()
    assert [tuple(r) for r in rows] == [(n, "claimed", BOX, 1) for n in (1, 2, 3, 4)]


def test_a_claim_of_several_tasks_runs_the_same_statements_for_one_or_eight(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    """The tasks of a claim are read and claimed a few statements at a time, whatever their
    number (the `claim_grants` rows in one statement too). Counted by SQLite's own trace of
    every statement it runs; Postgres runs the same statements and one lock statement more."""
    if store.engine.dialect.name != "sqlite":
        pytest.skip("the statements are counted by SQLite's trace callback")
    for n in range(13):
        _start(store, clock, orders, f"T{n}")
    counts: list[int] = []
    # The first claim of a supervisor creates its `claims` row, and a claim after one of more
    # than one grant deletes that one's `claim_grants` rows: the last two are compared.
    for most, request in ((1, "r1"), (2, "r2"), (8, "r3"), (2, "r4")):
        seen: list[str] = []
        with store.engine.begin() as conn:
            driver = conn.connection.dbapi_connection
            assert isinstance(driver, sqlite3.Connection)
            driver.set_trace_callback(
                # a trigger's statements are traced with the text of the one that fired them
                lambda sql, seen=seen: None if seen and seen[-1] == sql else seen.append(sql)
            )
            try:
                grants = claim_many(conn, clock, orders, BOX, ["draft"], request, most)
            finally:
                driver.set_trace_callback(None)
        assert len(grants) == most
        counts.append(len(seen))
    assert counts[2] == counts[3]
