"""Migration 0014 on a database that holds data, on both databases: a task waiting at the upgrade
gets its `waiting_since` from its token's last `task_waiting` row (its queue time without one),
other tasks none, and the inbox then answers them in that order through `tasks_waiting`."""

from __future__ import annotations

from datetime import datetime

from alembic import command
from sqlalchemy import text

from stateous.control.store import inbox, migrate
from stateous.control.store.db import Store, make_engine

TOKEN = (
    "INSERT INTO tokens (token, state, status, visit, context, entered_at, structure) "
    "VALUES (:t, 'draft', :s, 1, '{}', '2026-10-16 20:48:44', 'sha256:x')"
)
TASK = (
    "INSERT INTO tasks (token, state, visit, status, attempt, queued_at, structure) "
    "VALUES (:t, 'draft', 1, :s, 1, :q, 'sha256:x')"
)
ROW = "INSERT INTO ledger (token, seq, at, kind, data) VALUES (:t, :n, :at, 'task_waiting', '{}')"


def test_the_waiting_tasks_get_the_time_they_began_to_wait(db_url: str) -> None:
    store = Store(make_engine(db_url))
    with store.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "0013")
        for token, status, task in (
            ("T-1", "active", "waiting"),
            ("T-2", "active", "waiting"),
            ("T-3", "active", "queued"),
            ("T-4", "paused", "waiting"),  # no task_waiting row: its queue time
        ):
            conn.execute(text(TOKEN), {"t": token, "s": status})
            conn.execute(text(TASK), {"t": token, "s": task, "q": "2026-10-16 20:00:00"})
        for token, n, at in (
            ("T-1", 5, "2026-10-16 21:00:03"),
            ("T-1", 9, "2026-10-16 21:00:07"),  # waited again later: the last row counts
            ("T-2", 5, "2026-10-16 21:00:05"),
            ("T-3", 5, "2026-10-16 21:00:01"),  # no longer waiting
        ):
            conn.execute(text(ROW), {"t": token, "n": n, "at": at})
    with store.begin() as conn:
        migrate.upgrade(conn)
    with store.begin() as conn:
        rows = conn.execute(text("SELECT token, waiting_since FROM tasks ORDER BY token")).all()
        waiting = inbox.waiting_tasks(conn, None, 10)
    since = [value if value is None else str(value)[:19] for _, value in rows]
    assert since == ["2026-10-16 21:00:07", "2026-10-16 21:00:05", None, "2026-10-16 20:00:00"]
    assert [(w.token, w.since) for w in waiting] == [
        ("T-4", datetime(2026, 10, 16, 20)),
        ("T-2", datetime(2026, 10, 16, 21, 0, 5)),
        ("T-1", datetime(2026, 10, 16, 21, 0, 7)),
    ]
    store.engine.dispose()
