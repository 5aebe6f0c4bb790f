"""Lease expiry (spec 30 §3.9): a claimed task whose lease ended counts as a failed attempt."""

from __future__ import annotations

from sqlalchemy import Connection, and_, select, update

from stateous.control.clock import Clock
from stateous.control.engine.route import failed_attempt
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store import queries as q
from stateous.control.store.tables import tasks


def expired_leases(conn: Connection, clock: Clock) -> list[int]:
    """The ids of claimed tasks whose lease ended before now, by id (one read)."""
    now = clock.now()
    query = select(tasks.c.id).where(
        tasks.c.status == "claimed", tasks.c.lease_until.is_not(None), tasks.c.lease_until < now
    )
    return [int(i) for i in conn.execute(query.order_by(tasks.c.id)).scalars()]


def expire_lease(conn: Connection, clock: Clock, config: EngineConfig, task_id: int) -> bool:
    """End one lease in its own transaction; False when it was renewed or moved meanwhile."""
    tx = Tx.open(conn, clock, config)
    task = q.get_task(conn, task_id)
    if task is None:
        return False
    token = tx.lock_token(task.token)
    ended = conn.execute(
        update(tasks)
        .where(
            and_(
                tasks.c.id == task_id,
                tasks.c.status == "claimed",
                tasks.c.lease_until.is_not(None),
                tasks.c.lease_until < tx.now,
            )
        )
        .values(lease_until=None)
    )
    task = q.get_task(conn, task_id)
    if ended.rowcount != 1 or token is None or task is None:
        return False
    error = f"{task.claimed_by} stopped answering: no heartbeat for 2 minutes"
    failed_attempt(tx, config.body(token.workflow), token, task, error)
    tx.flush()
    return True
