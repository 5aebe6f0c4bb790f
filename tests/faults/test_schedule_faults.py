"""Schedules under a crash, on SQLite and Postgres: `serve` SIGKILLed while the
slots of a `catch_up: all` schedule are being started, then restarted: every slot's token is
started exactly once (one `started` row naming the schedule), none is skipped, and the
schedule's `next_at` is the slot after its last."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import httpx
from sqlalchemy import Engine, text, update

from stateous.control.store.db import make_engine
from stateous.control.store.tables import schedules
from tests.faults.harness import plane, scaled
from tests.support import free_port

MISSED = 400  # minutes of slots due when the clock finds the schedule (at most 1,000)


def started(engine: Engine) -> dict[str, int]:
    """The `started` rows of each scheduled token."""
    with engine.begin() as conn:
        rows = conn.execute(
            text(
                "SELECT token, count(*) FROM ledger WHERE kind = 'started' "
                "AND token LIKE 'minutely-%' GROUP BY token"
            )
        )
        return {str(token): int(n) for token, n in rows}


def at_least(engine: Engine, count: int) -> bool:
    """Whether `count` slots' tokens have started."""
    with engine.begin() as conn:
        found = conn.execute(text("SELECT count(*) FROM tokens WHERE token LIKE 'minutely-%'"))
        return int(found.scalar_one()) >= count


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def wait_for(check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.02)


def test_a_killed_serve_starts_each_due_slot_once(tmp_path: Path, db_url: str) -> None:
    kills = scaled(2, 4)
    engine = make_engine(db_url)
    at_kill: list[int] = []
    # A tick a second (200 slots a tick): a restarted serve has slots left to start when the
    # test kills it again.
    with plane(db_url, free_port(), tmp_path, STATEOUS_TICK_SECONDS="1.0") as cp:
        made = httpx.post(f"{cp.url}/schedules", timeout=30, json={
            "name": "minutely", "cron": "* * * * *", "context": {"repo": "acme/api"},
            "catch_up": "all",
        })  # fmt: skip
        assert made.status_code == 201, made.text
        first = (utc_now() - timedelta(minutes=MISSED)).replace(second=0, microsecond=0)
        with engine.begin() as conn:
            conn.execute(update(schedules).values(next_at=first))
        for kill in range(kills):
            # Killed once some slots of this round started, before they all did.
            floor = (kill + 1) * MISSED // (kills + 2)
            wait_for(partial(at_least, engine, floor), 120)
            cp.kill()
            at_kill.append(len(started(engine)))
            cp.start_retrying()
        schedule: dict[str, object] = {}

        def caught_up() -> bool:
            schedule.update(httpx.get(f"{cp.url}/schedules/minutely", timeout=30).json())
            next_at = datetime.fromisoformat(str(schedule["next_at"]).removesuffix("Z"))
            return next_at > utc_now()

        wait_for(caught_up, 180)
    last = datetime.fromisoformat(str(schedule["last_at"]).removesuffix("Z"))
    slots = int((last - first).total_seconds() // 60) + 1
    expected = {f"minutely-{(first + timedelta(minutes=n)):%Y%m%dT%H%M}": 1 for n in range(slots)}
    assert slots >= MISSED
    assert all(n < MISSED for n in at_kill), at_kill  # each kill came while slots were due
    assert started(engine) == expected
    engine.dispose()
    assert schedule["last_token"] == f"minutely-{last:%Y%m%dT%H%M}"
    assert schedule["next_at"] == f"{(last + timedelta(minutes=1)):%Y-%m-%dT%H:%M:%S}Z"
