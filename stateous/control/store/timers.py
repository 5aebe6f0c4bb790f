"""The statements of `timers`: set, cancelled, shifted after a pause, found due and fired.

A timer's insert and the cancel of all of a token's pending timers (on every move) are built
once and run through `direct` (the driver's cursor); the rest (a cancel of one kind, the shift
after a pause, the clock's reads and fire) through `Connection.execute`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from stateous.control.store.direct import execute as run
from stateous.control.store.records import TimerRecord
from stateous.control.store.tables import timers, tokens

_INSERT_TIMER = insert(timers).returning(timers.c.id)
_PENDING_TIMERS = update(timers).where(
    timers.c.token == bindparam("t"), timers.c.status == "pending"
)
_PENDING_TIMERS_OF_KIND = _PENDING_TIMERS.where(timers.c.kind == bindparam("timer_kind"))


def insert_timer(conn: Connection, **values: Any) -> int:
    """Insert a pending timer and answer its id."""
    return int(run(conn, _INSERT_TIMER, {**values, "status": "pending"}).scalar_one())


def cancel_timers(conn: Connection, token: str, kind: str | None = None) -> None:
    """Set the token's pending timers (of one kind, or all) to cancelled."""
    if kind is None:
        run(conn, _PENDING_TIMERS, {"t": token, "status": "cancelled"})
    else:
        conn.execute(
            _PENDING_TIMERS_OF_KIND, {"t": token, "timer_kind": kind, "status": "cancelled"}
        )


def shift_pending_timers(conn: Connection, token: str, paused_at: datetime, now: datetime) -> None:
    """Give each pending timer back the part of the pause after it was set."""
    query = select(timers.c.id, timers.c.set_at, timers.c.due_at).where(
        timers.c.token == token, timers.c.status == "pending"
    )
    for timer_id, set_at, due_at in conn.execute(query).all():
        shift = now - max(paused_at, set_at)
        if shift.total_seconds() > 0:
            conn.execute(
                update(timers).where(timers.c.id == timer_id).values(due_at=due_at + shift)
            )


def due_at(conn: Connection, now: datetime) -> list[int]:
    """Pending timers due at `now` whose token is active, by due time then id (one read)."""
    # The token's status through its primary key (a correlated subquery), as claims read it:
    # a join let Postgres without fresh statistics scan every active token per timer.
    active = select(tokens.c.status).where(tokens.c.token == timers.c.token).scalar_subquery()
    query = (
        select(timers.c.id)
        .where(timers.c.status == "pending", timers.c.due_at <= now, active == "active")
        .order_by(timers.c.due_at, timers.c.id)
    )
    return [int(i) for i in conn.execute(query).scalars()]


def get_timer(conn: Connection, timer_id: int) -> TimerRecord | None:
    """The timer with this id, or None."""
    row = conn.execute(select(timers).where(timers.c.id == timer_id)).first()
    return TimerRecord.from_row(row) if row else None


def mark_fired(conn: Connection, timer_id: int) -> None:
    """Set the timer's status to `fired`."""
    conn.execute(update(timers).where(timers.c.id == timer_id).values(status="fired"))
