"""The `schedules` table (tokens started on a calendar) and the audit rows of the acts on a
schedule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select, text, update

from stateous.control.store.db import lock_key
from stateous.control.store.dialect import dialect_of
from stateous.control.store.tables import audit, schedules

_LOCK = text("SELECT pg_advisory_xact_lock(:k)")


@dataclass(frozen=True)
class ScheduleRecord:
    """One row of `schedules`."""

    name: str
    cron: str
    tz: str
    context: dict[str, Any] | None
    id: str
    catch_up: str
    paused: bool
    next_at: datetime
    last_at: datetime | None
    last_token: str | None
    created_at: datetime
    #: The last slot whose token did not start: why (one sentence) and the slot's time.
    last_error: str | None = None
    last_error_at: datetime | None = None
    #: How many slots failed since the schedule was made.
    failures: int = 0

    @classmethod
    def from_row(cls, row: Row[Any]) -> ScheduleRecord:
        """The record of a selected row."""
        values = dict(row._mapping)
        values["paused"] = bool(values["paused"])
        return cls(**values)


def lock_name(conn: Connection, name: str) -> None:
    """Take the name's lock until the end of the transaction (Postgres; SQLite has one
    writer), so that two saves of one new name take turns and the second sees the first."""
    if dialect_of(conn).locks:
        conn.execute(_LOCK, {"k": lock_key(f"@stateous/schedule:{name}")})


def get_schedule(conn: Connection, name: str, *, lock: bool = False) -> ScheduleRecord | None:
    """The schedule of that name, or None; with `lock`, its row is locked until the end of
    the transaction (Postgres; SQLite has one writer)."""
    query = select(schedules).where(schedules.c.name == name)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).first()
    return None if row is None else ScheduleRecord.from_row(row)


def list_schedules(conn: Connection) -> list[ScheduleRecord]:
    """Every schedule, by name."""
    rows = conn.execute(select(schedules).order_by(schedules.c.name))
    return [ScheduleRecord.from_row(row) for row in rows]


def insert_schedule(conn: Connection, record: ScheduleRecord) -> None:
    """Insert a new schedule (the caller checked that the name is free)."""
    conn.execute(insert(schedules).values(**record.__dict__))


def update_schedule(conn: Connection, name: str, values: Mapping[str, Any]) -> bool:
    """Change columns of a schedule; False when there is no such schedule."""
    done = conn.execute(update(schedules).where(schedules.c.name == name).values(**values))
    return done.rowcount == 1


def count_failure(conn: Connection, name: str, error: str, at: datetime) -> None:
    """Record a slot whose token did not start: its sentence and time, and one more failure
    (counted by the database, so that two clocks never lose one)."""
    conn.execute(
        update(schedules)
        .where(schedules.c.name == name)
        .values(last_error=error, last_error_at=at, failures=schedules.c.failures + 1)
    )


def failures_by_name(conn: Connection) -> dict[str, int]:
    """The failed slots of each schedule (0 included), by name: one row a schedule."""
    query = select(schedules.c.name, schedules.c.failures).order_by(schedules.c.name)
    return {str(name): int(count) for name, count in conn.execute(query)}


def delete_schedule(conn: Connection, name: str) -> bool:
    """Delete a schedule; False when there is no such schedule."""
    return conn.execute(delete(schedules).where(schedules.c.name == name)).rowcount == 1


def due_names(conn: Connection, now: datetime) -> list[str]:
    """The schedules not paused whose next slot is due at `now`, by that slot then name."""
    query = (
        select(schedules.c.name)
        .where(schedules.c.next_at <= now, schedules.c.paused.is_(False))
        .order_by(schedules.c.next_at, schedules.c.name)
    )
    return list(conn.execute(query).scalars())


def audit_token(name: str) -> str:
    """The `token` of a schedule's acts in the audit index: `schedule:NAME` (no token id has
    a colon, so it names no token)."""
    return f"schedule:{name}"


def write_act(conn: Connection, name: str, kind: str, at: datetime, by: Mapping[str, Any]) -> None:
    """Index an operator's act on a schedule, numbered after the schedule's last
    act (a schedule removed and made again goes on counting)."""
    token = audit_token(name)
    last = conn.execute(select(func.max(audit.c.seq)).where(audit.c.token == token)).scalar()
    conn.execute(
        insert(audit).values(
            token=token,
            seq=(last or 0) + 1,
            at=at,
            kind=kind,
            actor=by.get("actor"),
            via=by.get("via"),
            reason=by.get("reason") or None,
            bulk=None,
        )
    )
