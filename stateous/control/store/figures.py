"""The figures about rows of `GET /metrics` (spec 70 §3): tokens and tasks by status, the queue
and the supervisors, read when scraped.

Each statement runs through `Connection.execute`, in the scrape's one read transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, func, select

from stateous.control.store import registry
from stateous.control.store import tables as t
from stateous.control.store.versions import live_by_structure
from stateous.model.wire import TASK_STATUSES, TOKEN_STATUSES


@dataclass(frozen=True)
class Figures:
    """What the database holds now: counts by status, the queue and the supervisors."""

    tokens: dict[str, int]
    tasks: dict[str, int]
    queued: dict[str, int]
    oldest_queued_at: datetime | None
    supervisors: dict[str, int] = field(default_factory=dict)
    #: Active and paused top tokens by structure (spec 90 §3).
    live: dict[str, int] = field(default_factory=dict)


def read_figures(conn: Connection, now: datetime | None = None) -> Figures:
    """Count tokens and tasks by status, the queued tasks per served state name, and (given
    `now`) the supervisors by status (spec 80 §5)."""
    tokens = dict.fromkeys(TOKEN_STATUSES, 0)
    for status, count in conn.execute(
        select(t.tokens.c.status, func.count()).group_by(t.tokens.c.status)
    ):
        tokens[status] = count
    tasks = dict.fromkeys(TASK_STATUSES, 0)
    for status, count in conn.execute(
        select(t.tasks.c.status, func.count()).group_by(t.tasks.c.status)
    ):
        tasks[status] = count
    queued: dict[str, int] = {}
    joined = t.tasks.join(t.tokens, t.tokens.c.token == t.tasks.c.token)
    rows = conn.execute(
        select(t.tokens.c.workflow, t.tasks.c.state, func.count())
        .select_from(joined)
        .where(t.TASK_IS_OPEN, t.tasks.c.status == "queued")
        .group_by(t.tokens.c.workflow, t.tasks.c.state)
    )
    for workflow, state, count in rows:
        queued[state if workflow is None else f"{workflow}/{state}"] = count
    oldest = conn.execute(
        select(func.min(t.tasks.c.queued_at)).where(t.TASK_IS_OPEN, t.tasks.c.status == "queued")
    ).scalar()
    supervisors = registry.counts_by_status(conn, now) if now is not None else {}
    return Figures(tokens, tasks, queued, oldest, supervisors, live_by_structure(conn))
