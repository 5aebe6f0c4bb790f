"""The SQL of the inbox: the waiting tasks of live tokens, the longest waiting
first, through `tasks_waiting` (migration 0014)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, func, select, tuple_

from stateous.control.store.dialect import dialect_of
from stateous.control.store.operator_queries import state_name
from stateous.control.store.tables import TASK_IS_WAITING, ledger, tasks, tokens

__all__ = ["Waiting", "waiting_query", "waiting_tasks"]

LIVE = ("active", "paused")


@dataclass(frozen=True)
class Waiting:
    """A waiting task of a live token, with when it began to wait and its last note."""

    task: int
    token: str
    workflow: str | None
    state: str
    visit: int
    status: str
    since: datetime
    note: str | None
    #: The structure the token runs on.
    structure: str | None = None

    @property
    def state_name(self) -> str:
        """The state as the operator routes name it (`<workflow>/<state>` in a child)."""
        return state_name(self.workflow, self.state)


def waiting_tasks(
    conn: Connection, state: str | None, limit: int, after: tuple[datetime, int] | None = None
) -> list[Waiting]:
    """Up to `limit` waiting tasks of active or paused tokens, the longest waiting first (then
    by task id); `after`: only those after (since, task id), the last of the page before.

    `state` is `<state>` (main workflow) or `<workflow>/<state>` (a child workflow).
    """
    dialect_of(conn).serial(conn)
    rows = conn.execute(waiting_query(state, limit, after)).all()
    notes = last_notes(conn, [(row.token, row.id) for row in rows])
    return [
        Waiting(
            row.id,
            row.token,
            row.workflow,
            row.state,
            row.visit,
            row.status,
            row.since,
            notes.get(row.id),
            row.structure,
        )
        for row in rows
    ]


def waiting_query(
    state: str | None, limit: int, after: tuple[datetime, int] | None = None
) -> Select[Any]:
    """The query of `waiting_tasks`: a walk of `tasks_waiting` in its order, each task's token
    read by its key, until `limit` of live tokens."""
    since = tasks.c.waiting_since
    query = (
        select(
            tasks.c.id,
            tasks.c.token,
            tokens.c.workflow,
            tasks.c.state,
            tasks.c.visit,
            tokens.c.status,
            # never null after migration 0014 and the report; a row written by hand answers
            # its queue time rather than nothing
            func.coalesce(since, tasks.c.queued_at).label("since"),
            tokens.c.structure,
        )
        .join(tokens, tokens.c.token == tasks.c.token)
        # `status || ''`: no index serves the token's status here, so the planner walks
        # `tasks_waiting` in the page's order; SQLite walked `tokens_status` over every live
        # token and sorted the waiting ones (1.5 s at 100,000 live tokens).
        .where(TASK_IS_WAITING, tokens.c.status.concat("").in_(LIVE))
    )
    if state is not None:
        workflow, _, name = state.rpartition("/")
        query = query.where(
            tasks.c.state == name,
            tokens.c.workflow == workflow if workflow else tokens.c.workflow.is_(None),
        )
    if after is not None:
        query = query.where(tuple_(since, tasks.c.id) > tuple_(*after))
    return query.order_by(since, tasks.c.id).limit(limit)


def last_notes(conn: Connection, held: Sequence[tuple[str, int]]) -> dict[int, str]:
    """The last note of each task (by task id) among `(token, task)` pairs; tasks without a
    note are absent."""
    if not held:
        return {}
    wanted = {task for _, task in held}
    query = (
        select(ledger.c.data)
        .where(ledger.c.token.in_(sorted({token for token, _ in held})), ledger.c.kind == "note")
        .order_by(ledger.c.token, ledger.c.seq)
    )
    found: dict[int, str] = {}
    for (data,) in conn.execute(query):
        if data.get("task") in wanted:
            found[data["task"]] = data["text"]  # a later note replaces an earlier one
    return found
