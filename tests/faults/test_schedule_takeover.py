"""Schedules across takeovers on Postgres: a holder `serve` and two
`serve --replica` on one database; the holder is SIGKILLed while the slots of a `catch_up: all`
schedule are being started, a replica takes the hold and goes on, then that one is SIGKILLed
and the last replica finishes. Every slot's token is started exactly once (one `started` row
naming the schedule), none is skipped, and the schedule's `next_at` is the slot after its last.
In a file of its own so that pytest-xdist runs it beside test_schedule_faults.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, update

from stateous.control.store.db import make_engine
from stateous.control.store.tables import schedules
from tests.faults.harness import Plane
from tests.faults.test_replica_faults import TOOK, Replica, wait_holder
from tests.faults.test_schedule_faults import at_least, started, utc_now, wait_for
from tests.support import backends, free_port, postgres_database

pytestmark = pytest.mark.skipif("postgres" not in backends(), reason="replicas need Postgres")

MISSED = 600  # minutes of slots due when the clock finds the schedule (at most 1,000)
KILLS = 2  # the holder, then the replica that took its hold
#: A tick a second: 200 slots a tick (4 steps of 50), so each holder has slots left to start
#: when it is killed, and a replica takes the hold within a second.
TICK = {"STATEOUS_TICK_SECONDS": "1.0"}


def test_a_replica_taking_over_starts_each_due_slot_once(tmp_path: Path) -> None:
    with postgres_database("stateous_sched") as db_url:
        engine = make_engine(db_url)
        everyone: list[Plane] = [Plane(db_url, free_port(), tmp_path, dict(TICK))]
        everyone += [Replica(db_url, free_port(), tmp_path, dict(TICK)) for _ in range(KILLS)]
        try:
            for cp in everyone:
                cp.start()
            schedule, at_kill, first = _catch_up_across_kills(everyone, engine)
        finally:
            for cp in everyone:
                if cp.served is not None and cp.served.process.poll() is None:
                    cp.stop()
                cp.close_pipes()
        found = started(engine)
        engine.dispose()
    last = datetime.fromisoformat(str(schedule["last_at"]).removesuffix("Z"))
    slots = int((last - first).total_seconds() // 60) + 1
    expected = {f"minutely-{(first + timedelta(minutes=n)):%Y%m%dT%H%M}": 1 for n in range(slots)}
    assert slots >= MISSED
    # Each kill came while slots were due, and each holder started some of them.
    assert 0 < at_kill[0] < at_kill[1] < MISSED, at_kill
    assert found == expected
    assert schedule["last_token"] == f"minutely-{last:%Y%m%dT%H%M}"
    assert schedule["next_at"] == f"{(last + timedelta(minutes=1)):%Y-%m-%dT%H:%M:%S}Z"


def _catch_up_across_kills(
    everyone: list[Plane], engine: Engine
) -> tuple[dict[str, object], list[int], datetime]:
    """Make the schedule due `MISSED` minutes ago, SIGKILL each holder in turn once some of the
    slots have started, and wait for the last one to catch up: the schedule as it answers
    then, the started tokens at each kill, and the first slot."""
    holder = wait_holder(everyone)
    assert holder is everyone[0]
    made = httpx.post(f"{holder.url}/schedules", timeout=30, json={
        "name": "minutely", "cron": "* * * * *", "context": {"repo": "acme/api"},
        "catch_up": "all",
    })  # fmt: skip
    assert made.status_code == 201, made.text
    first = (utc_now() - timedelta(minutes=MISSED)).replace(second=0, microsecond=0)
    with engine.begin() as conn:
        conn.execute(update(schedules).values(next_at=first))
    at_kill: list[int] = []
    for kill in range(KILLS):
        wait_for(partial(at_least, engine, (kill + 1) * MISSED // (KILLS + 2)), 60)
        holder.kill()
        at_kill.append(len(started(engine)))
        new = wait_holder([cp for cp in everyone if cp is not holder], timeout=10)
        assert new.served is not None
        new.served.read_lines(timeout=0.5)
        assert any(line.endswith(TOOK) for line in new.served.lines)
        holder = new
    schedule: dict[str, object] = {}

    def caught_up() -> bool:
        schedule.update(httpx.get(f"{holder.url}/schedules/minutely", timeout=30).json())
        next_at = datetime.fromisoformat(str(schedule["next_at"]).removesuffix("Z"))
        return next_at > utc_now()

    wait_for(caught_up, 60)
    return schedule, at_kill, first
