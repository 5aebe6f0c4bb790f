"""The figures about rows of `GET /metrics`: tokens and tasks by status, the queue
and the supervisors, read when scraped.

Read from the counts the database keeps (`store.stats`), never a scan of the tokens
or tasks: at a million tokens, the tasks by status were a walk of two million index entries (a
second warm, sixteen cold, on SQLite) at each scrape. One read transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection

from stateous.control.store import registry
from stateous.control.store.operator_queries import state_name
from stateous.control.store.schedules import failures_by_name
from stateous.control.store.stats import counts, live_tops_by_structure, oldest_queued_at
from stateous.model.wire import TASK_STATUSES, TOKEN_STATUSES


@dataclass(frozen=True)
class Figures:
    """What the database holds now: counts by status, the queue and the supervisors."""

    tokens: dict[str, int]
    tasks: dict[str, int]
    queued: dict[str, int]
    oldest_queued_at: datetime | None
    supervisors: dict[str, int] = field(default_factory=dict)
    #: Active and paused top tokens by structure.
    live: dict[str, int] = field(default_factory=dict)
    #: The slots of each schedule whose token did not start, as the schedule's row counts them.
    schedule_failures: dict[str, int] = field(default_factory=dict)


def read_figures(conn: Connection, now: datetime | None = None) -> Figures:
    """Count tokens and tasks by status, the queued tasks per served state name, and (given
    `now`) the supervisors by status."""
    read = counts(conn)
    tokens = dict.fromkeys(TOKEN_STATUSES, 0)
    tasks = dict.fromkeys(TASK_STATUSES, 0)
    queued: dict[str, int] = {}
    pairs: set[tuple[str, str]] = set()
    for count in read:
        if count.kind == "token":
            tokens[count.status] = tokens.get(count.status, 0) + count.n
            continue
        tasks[count.status] = tasks.get(count.status, 0) + count.n
        if count.kind == "task" and count.status == "queued":
            name = state_name(count.workflow or None, count.state)
            queued[name] = queued.get(name, 0) + count.n
            pairs.add((count.structure, count.state))
    oldest = oldest_queued_at(conn, pairs)
    supervisors = registry.counts_by_status(conn, now) if now is not None else {}
    live = live_tops_by_structure(conn, read)
    return Figures(tokens, tasks, queued, oldest, supervisors, live, failures_by_name(conn))
