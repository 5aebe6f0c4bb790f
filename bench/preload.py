"""Fill a database with completed `orders` tokens and their ledgers, fast, through the store's
tables (SQLAlchemy Core bulk inserts in large transactions): the rows of spec 20 §3.8 per token.

The schema is made by the store's own migration first, so `stateous serve` accepts the
database afterwards as one of its own.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stateous.control.store import migrate  # noqa: E402
from stateous.control.store import tables as t  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402

BATCH = 5000


def ledger_rows(token: str, draft: int, review: int, at: datetime) -> list[dict[str, Any]]:
    """The 14 ledger rows of one completed token (spec 20 §3.8)."""
    a, b, c, d = (
        at,
        at + timedelta(milliseconds=5),
        at + timedelta(milliseconds=6),
        at + timedelta(milliseconds=8),
    )
    verdict = {"approved": True, "note": ""}
    kinds: list[tuple[datetime, str, dict[str, Any]]] = [
        (a, "started", {"context": {"title": "preloaded", "verdict": None}}),
        (a, "event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        (a, "entered", {"state": "draft", "visit": 1}),
        (a, "task_queued", {"task": draft, "state": "draft"}),
        (b, "task_claimed", {"task": draft, "supervisor": "preload", "attempt": 1}),
        (c, "event_accepted", {"event": "submitted", "payload": None, "state": "draft"}),
        (c, "task_done", {"task": draft}),
        (c, "entered", {"state": "review", "visit": 1}),
        (c, "task_queued", {"task": review, "state": "review"}),
        (c, "task_claimed", {"task": review, "supervisor": "preload", "attempt": 1}),
        (d, "context_changed", {"keys": ["verdict"]}),
        (d, "event_accepted", {"event": "reviewed", "payload": verdict, "state": "review"}),
        (d, "task_done", {"task": review}),
        (d, "completed", {}),
    ]
    return [
        {"token": token, "seq": n, "at": when, "kind": kind, "key": None, "data": data}
        for n, (when, kind, data) in enumerate(kinds, start=1)
    ]


def preload(db_url: str, count: int, prefix: str = "OLD") -> float:
    """Insert `count` completed tokens (ids `<prefix>-<n>`); answers the seconds it took."""
    began = time.perf_counter()
    store = Store(make_engine(db_url))
    try:
        with store.begin() as conn:
            migrate.upgrade(conn)
        start = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=30)
        for first in range(0, count, BATCH):
            tokens, tasks, ledger = [], [], []
            for n in range(first, min(count, first + BATCH)):
                token = f"{prefix}-{n}"
                at = start + timedelta(seconds=n)
                draft, review = 2 * n + 1, 2 * n + 2
                context = {"title": "preloaded", "verdict": {"approved": True, "note": ""}}
                tokens.append(
                    {"token": token, "state": "review", "status": "completed", "visit": 1,
                     "context": context, "entered_at": at, "parent": None, "workflow": None}
                )  # fmt: skip
                for task, state in ((draft, "draft"), (review, "review")):
                    tasks.append(
                        {"id": task, "token": token, "state": state, "visit": 1, "status": "done",
                         "attempt": 1, "claimed_by": "preload", "lease_until": None, "queued_at": at}
                    )  # fmt: skip
                ledger.extend(ledger_rows(token, draft, review, at))
            with store.begin() as conn:
                conn.execute(t.tokens.insert(), tokens)
                conn.execute(t.tasks.insert(), tasks)
                conn.execute(t.ledger.insert(), ledger)
        if store.engine.dialect.name == "postgresql":
            with store.begin() as conn:
                # The ids were given explicitly: move the sequence past them, as inserts would.
                conn.exec_driver_sql(
                    "SELECT setval(pg_get_serial_sequence('tasks', 'id'), (SELECT max(id) FROM tasks))"
                )
                conn.exec_driver_sql("ANALYZE")
        # No ANALYZE on SQLite: the store never runs it, and its statistics (every task `done`)
        # would make the planner scan all tasks for a claim (see docs/performance.md).
    finally:
        store.engine.dispose()
    return time.perf_counter() - began
