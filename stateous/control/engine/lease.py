"""Lease expiry: a claimed task whose lease ended counts as a failed attempt."""

from __future__ import annotations

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.route import failed_attempt
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.tasks import end_lease, get_task, leases_ended_before


def expired_leases(conn: Connection, clock: Clock) -> list[int]:
    """The ids of claimed tasks whose lease ended before now, by id (one read)."""
    return leases_ended_before(conn, clock.now())


def expire_lease(conn: Connection, clock: Clock, config: EngineConfig, task_id: int) -> bool:
    """End one lease in its own transaction; False when it was renewed or moved meanwhile."""
    tx = Tx.open(conn, clock, config)
    task = get_task(conn, task_id)
    if task is None:
        return False
    token = tx.lock_token(task.token)
    ended = end_lease(conn, task_id, tx.now)
    task = get_task(conn, task_id)
    if not ended or token is None or task is None:
        return False
    error = f"{task.claimed_by} stopped answering: no heartbeat for 2 minutes"
    failed_attempt(tx, config.body_of(token), token, task, error)
    tx.flush()
    return True
