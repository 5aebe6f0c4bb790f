"""The figures of `GET /stats` (spec 70 §1): tokens by status, live work by state.

Each statement runs through `Connection.execute`. A child token's state is named
`<workflow>/<state>` (`operator_queries.state_name`), as on the other operator routes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from stateous.control.store.dialect import dialect_of
from stateous.control.store.operator_queries import state_name
from stateous.control.store.tables import TASK_IS_OPEN, control_plane, tasks, tokens

_COUNTED = ("active", "paused", "queued", "claimed", "waiting")


@dataclass(frozen=True)
class Stats:
    """The figures of `GET /stats`."""

    tokens: dict[str, int]
    states: dict[str, dict[str, int]]
    oldest_queued_at: datetime | None
    serving: str | None


def stats(conn: Connection, states: Iterable[str], token_statuses: Iterable[str]) -> Stats:
    """Counts by token status, and by state (`states` first, in their order, all present)."""
    by_status = dict.fromkeys(token_statuses, 0)
    for status, count in conn.execute(
        select(tokens.c.status, func.count()).group_by(tokens.c.status)
    ):
        by_status[status] = int(count)
    per_state: dict[str, dict[str, int]] = {name: dict.fromkeys(_COUNTED, 0) for name in states}
    live = (
        select(tokens.c.workflow, tokens.c.state, tokens.c.status, func.count())
        # Few tokens are live, which SQLite's planner is told (it would scan every ended one).
        .where(dialect_of(conn).rare(tokens.c.status.in_(("active", "paused"))))
        .group_by(tokens.c.workflow, tokens.c.state, tokens.c.status)
    )
    held = (
        select(tokens.c.workflow, tasks.c.state, tasks.c.status, func.count())
        .join(tokens, tokens.c.token == tasks.c.token)
        .where(TASK_IS_OPEN)
        .group_by(tokens.c.workflow, tasks.c.state, tasks.c.status)
    )
    for query in (live, held):
        for workflow, state, status, count in conn.execute(query):
            entry = per_state.setdefault(state_name(workflow, state), dict.fromkeys(_COUNTED, 0))
            entry[status] = int(count)
    oldest = conn.execute(
        select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    ).scalar()
    serving = conn.execute(select(control_plane.c.serving).where(control_plane.c.id == 1)).scalar()
    return Stats(by_status, per_state, oldest, serving)
