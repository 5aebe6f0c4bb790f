"""The clock's tick: the hold and `since`, and failing ticks."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.hold import Hold, HoldRefused
from stateous.control.plane import Plane
from stateous.control.settings import Settings
from stateous.control.store.control_plane import read_control_plane, write_control_plane
from stateous.control.store.db import Store, make_engine
from stateous.control.ticker import Ticker, one_line
from tests.support.databases import sqlite_url
from tests.unit.control.harness import Engine

T0 = datetime(2026, 10, 16, 20, 49, 8, 725674)
TICK_FAILED = "the clock's tick failed ({}); it tries again in 1.0 seconds"


def test_the_settings_keep_the_spec_defaults() -> None:
    settings = Settings(graph_path=Path("x.json"))
    assert settings.lease == timedelta(minutes=2)
    assert settings.tick == 1.0
    assert settings.since_every == timedelta(seconds=10)
    assert settings.sqlite_hold_lapse == timedelta(seconds=30)
    assert settings.stop_wait == 5.0
    assert inspect.signature(EngineConfig).parameters["lease"].default == timedelta(minutes=2)


@pytest.fixture
def held(db_url: str, clock: FakeClock, sdlc: EngineConfig) -> tuple[Ticker, Hold]:
    clock.set(T0)
    store = Store(make_engine(db_url))
    hold = Hold(store, clock)
    hold.take_and_migrate()
    return Ticker(Plane(store, sdlc, clock), hold), hold


def since(store: Store) -> datetime | None:
    with store.begin() as conn:
        return read_control_plane(conn).since


def test_since_is_rewritten_about_every_10_seconds(
    held: tuple[Ticker, Hold], clock: FakeClock
) -> None:
    ticker, hold = held
    store = ticker.plane.store
    assert since(store) == T0
    for _ in range(9):
        clock.advance(1)
        assert not ticker.tick().lost
    assert since(store) == T0
    clock.advance(1)
    ticker.tick()
    assert since(store) == T0 + timedelta(seconds=10)
    hold.give_up()
    store.engine.dispose()


def test_a_taken_database_stops_the_clock(
    held: tuple[Ticker, Hold], clock: FakeClock, caplog: pytest.LogCaptureFixture, backend: str
) -> None:
    ticker, hold = held
    store = ticker.plane.store
    if backend == "postgres":
        # The advisory lock is the hold on Postgres: losing its connection and finding the lock
        # taken by another session is a loss.
        other = Hold(store, clock, name="other:1:00000000")
        hold._lock_conn.invalidate()  # ends the session, and its lock
        # The session's backend exits a moment later, and its lock is free only then (a ping
        # of each pooled connection at checkout used to take about that long).
        deadline = time.monotonic() + 5
        while True:
            try:
                other._take_pg_lock()
                break
            except HoldRefused:
                assert time.monotonic() < deadline, "the ended session kept the hold"
                time.sleep(0.02)
    else:
        with store.begin() as conn:
            write_control_plane(conn, serving="other:1:00000000", since=clock.now())
    clock.advance(1)
    with caplog.at_level(logging.ERROR, logger="stateous.serve"):
        result = ticker.tick()
    assert result.lost and not ticker.plane.serving
    assert caplog.messages == [
        "another control plane took this database; this control plane does no more work; "
        "trying again does not help: stop this server"
    ]
    if backend == "postgres":
        other.give_up()
    store.engine.dispose()


def test_a_hold_that_cannot_be_renewed_skips_the_tick(
    tmp_path: Path, clock: FakeClock, sdlc: EngineConfig, caplog: pytest.LogCaptureFixture
) -> None:
    clock.set(T0)
    store = Store(make_engine(sqlite_url(tmp_path)))
    hold = Hold(store, clock)
    hold.take_and_migrate()
    ticker = Ticker(Plane(store, sdlc, clock), hold)
    with store.begin() as conn:
        conn.execute(text("DROP TABLE control_plane"))
    with caplog.at_level(logging.WARNING, logger="stateous.serve"):
        result = ticker.tick()
    assert result.skipped and not result.lost
    assert caplog.messages == [
        "cannot renew this control plane's hold on the database (the database cannot take "
        "this request now; try again); trying again in 1.0 seconds"
    ]
    store.engine.dispose()


def test_a_failing_item_is_logged_and_the_others_still_run(
    store: Store, clock: FakeClock, sdlc: EngineConfig, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(store, clock, sdlc)
    with store.begin() as conn:
        # A token of a workflow the served graph does not have: its timer cannot be routed.
        conn.execute(
            text(
                "INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, "
                "workflow) VALUES ('ghost', 'x', 'active', 1, '{}', :t, 'nobody', 'gone')"
            ),
            {"t": clock.now().isoformat(sep=" ")},
        )
        conn.execute(
            text(
                "INSERT INTO timers (token, state, visit, event, payload, set_at, due_at, "
                "status, kind) VALUES ('ghost', 'x', 1, 'timeout', NULL, :t, :t, 'pending', "
                "'timeout')"
            ),
            {"t": clock.now().isoformat(sep=" ")},
        )
    engine.start("T", {"repo": "r"})
    with caplog.at_level(logging.ERROR, logger="stateous.serve"):
        result = engine.tick(6 * 3600)
    assert (result.timers, result.failures) == (1, 1)
    assert caplog.messages == [TICK_FAILED.format("'gone'")]
    assert engine.token("T")["status"] == "failed"
    with caplog.at_level(logging.ERROR, logger="stateous.serve"):
        assert engine.tick(1).failures == 1  # retried at the next tick


def test_one_line_keeps_the_first_line_of_a_driver_error() -> None:
    assert one_line(ValueError("first\nsecond")) == "first"
    assert one_line(ValueError("")) == "ValueError"


def test_run_ticks_until_stopped(store: Store, sdlc: EngineConfig) -> None:
    from stateous.control.clock import SystemClock

    plane = Plane(store, sdlc, SystemClock())
    ticker = Ticker(plane, interval=0.05)
    engine = Engine(store, FakeClock(SystemClock().now() - timedelta(hours=7)), sdlc)
    engine.start("T", {"repo": "r"})

    async def scenario() -> bool:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker.run(stop))
        for _ in range(100):
            await asyncio.sleep(0.02)
            if engine.token("T")["status"] == "failed":
                break
        stop.set()
        return await task

    assert asyncio.run(scenario()) is True
    assert engine.rows("T")[-1][0] == "failed"
