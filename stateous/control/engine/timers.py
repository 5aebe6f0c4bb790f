"""Timer fires: due timers of active tokens, each in its own transaction."""

from __future__ import annotations

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.moves import fail_token
from stateous.control.engine.route import route
from stateous.control.engine.routing import Refused
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.timers import due_at, get_timer, mark_fired


def due_timers(conn: Connection, clock: Clock) -> list[int]:
    """Pending timers due now whose token is active, by due time then id (one read)."""
    return due_at(conn, clock.now())


def fire_timer(conn: Connection, clock: Clock, config: EngineConfig, timer_id: int) -> bool:
    """Fire one timer; False when it is skipped (gone, not due, token moved or not active)."""
    tx = Tx.open(conn, clock, config)
    row = get_timer(conn, timer_id)
    if row is None:
        return False
    token = tx.lock_token(row.token)
    row = get_timer(conn, timer_id)
    if row is None or row.status != "pending" or row.due_at > tx.now or token is None:
        return False
    if token.status != "active" or (token.state, token.visit) != (row.state, row.visit):
        return False
    mark_fired(conn, timer_id)
    tx.write(token.token, "timer_fired", {"event": row.event})
    body = config.body_of(token)
    result = route(tx, body, token, row.event, row.payload)
    if isinstance(result, Refused):
        if row.kind == "timeout":
            fail_token(tx, body, token, f"{token.state!r} timed out: {result.reason}")
        else:
            tx.write(token.token, "event_rejected", {"event": row.event, "reason": result.reason})
    tx.flush()
    return True
