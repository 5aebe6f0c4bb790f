"""The SQL of the operators' read routes (spec 70 §1): tasks, timers, memory, history, stats.

A child token's state is named `<workflow>/<state>` here, as in a grant and in `/stats`, so
that one name means one state across the operator routes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, func, literal_column, select

from stateous.control.store.direct import AnyRow
from stateous.control.store.queries import TaskRecord
from stateous.control.store.tables import (
    OPEN_TASK_STATUSES,
    TASK_IS_OPEN,
    control_plane,
    ledger,
    memory,
    tasks,
    timers,
    tokens,
)


def state_name(workflow: str | None, state: str) -> str:
    """`<state>` for the main workflow, `<workflow>/<state>` for a child workflow."""
    return state if workflow is None else f"{workflow}/{state}"


@dataclass(frozen=True)
class OperatorTask(TaskRecord):
    """A `TaskRecord` whose `state` is named as on the operator routes (see `state_name`).

    For `GET /tasks` and a token's tasks; the fields are those of `TaskRecord`.
    """

    @classmethod
    def from_row(cls, row: AnyRow) -> OperatorTask:
        """Build from a `tasks` row joined with `tokens.workflow`."""
        task = TaskRecord.from_row(row)
        values = {field.name: getattr(task, field.name) for field in fields(TaskRecord)}
        values["state"] = state_name(row._mapping["workflow"], task.state)
        return cls(**values)


@dataclass(frozen=True)
class OperatorTimer:
    """A row of `timers` (without its payload)."""

    id: int
    state: str
    visit: int
    event: str
    kind: str
    status: str
    set_at: datetime
    due_at: datetime

    @classmethod
    def from_row(cls, row: Row[Any]) -> OperatorTimer:
        """Build from a `timers` row joined with `tokens.workflow`."""
        m = row._mapping
        return cls(
            m["id"], state_name(m["workflow"], m["state"]), m["visit"], m["event"], m["kind"],
            m["status"], m["set_at"], m["due_at"],
        )  # fmt: skip


@dataclass(frozen=True)
class MemoryRow:
    """A row of `memory`."""

    state: str
    key: str
    value: Any


@dataclass(frozen=True)
class Stats:
    """The figures of `GET /stats`."""

    tokens: dict[str, int]
    states: dict[str, dict[str, int]]
    oldest_queued_at: datetime | None
    serving: str | None


def _tasks_query() -> Select[Any]:
    return select(*tasks.c, tokens.c.workflow).join(tokens, tokens.c.token == tasks.c.token)


def list_tasks(
    conn: Connection,
    *,
    status: str | None,
    token: str | None,
    state: str | None,
    supervisor: str | None,
    limit: int,
) -> list[OperatorTask]:
    """Tasks newest first (highest id first); the filters combine.

    `state` is `<state>` (main workflow) or `<workflow>/<state>` (a child workflow).
    """
    query = _tasks_query()
    if status is not None:
        query = query.where(tasks.c.status == status)
        if status in OPEN_TASK_STATUSES:
            query = query.where(TASK_IS_OPEN)
    if token is not None:
        query = query.where(tasks.c.token == token)
    if supervisor is not None:
        query = query.where(tasks.c.claimed_by == supervisor)
    if state is not None:
        workflow, _, name = state.rpartition("/")
        query = query.where(tasks.c.state == name)
        query = query.where(
            tokens.c.workflow == workflow if workflow else tokens.c.workflow.is_(None)
        )
    query = query.order_by(tasks.c.id.desc()).limit(limit)
    return [OperatorTask.from_row(row) for row in conn.execute(query)]


def tasks_of(conn: Connection, token: str) -> list[OperatorTask]:
    """A token's tasks in id order."""
    query = _tasks_query().where(tasks.c.token == token).order_by(tasks.c.id)
    return [OperatorTask.from_row(row) for row in conn.execute(query)]


def timers_of(conn: Connection, token: str) -> list[OperatorTimer]:
    """A token's timers in id order, whatever their status."""
    query: Select[Any] = (
        select(*timers.c, tokens.c.workflow)
        .join(tokens, tokens.c.token == timers.c.token)
        .where(timers.c.token == token)
        .order_by(timers.c.id)
    )
    return [OperatorTimer.from_row(row) for row in conn.execute(query)]


def memory_rows(conn: Connection, token: str) -> list[MemoryRow]:
    """A token's memory rows, by state then key (with the state named as in its tasks)."""
    query = (
        select(memory.c.state, memory.c.key, memory.c.value, tokens.c.workflow)
        .join(tokens, tokens.c.token == memory.c.token)
        .where(memory.c.token == token)
        .order_by(memory.c.state, memory.c.key)
    )
    return [
        MemoryRow(state_name(row.workflow, row.state), row.key, row.value)
        for row in conn.execute(query)
    ]


def ledger_after(conn: Connection, token: str, after: int) -> list[Row[Any]]:
    """A token's ledger rows with `seq > after`, in seq order."""
    query = (
        select(ledger.c.seq, ledger.c.at, ledger.c.kind, ledger.c.data)
        .where(ledger.c.token == token, ledger.c.seq > after)
        .order_by(ledger.c.seq)
    )
    return list(conn.execute(query))


def _rare(conn: Connection, condition: ColumnElement[bool]) -> ColumnElement[bool]:
    """`condition`, marked as true of few rows for SQLite's planner (its statistics know how
    many statuses there are, not that few tokens are live: it would scan every ended token)."""
    if conn.dialect.name == "sqlite":
        return func.likelihood(condition, literal_column("0.01"))
    return condition


def stats(conn: Connection, states: Iterable[str], token_statuses: Iterable[str]) -> Stats:
    """Counts by token status, and by state (`states` first, in their order, all present)."""
    by_status = dict.fromkeys(token_statuses, 0)
    for status, count in conn.execute(
        select(tokens.c.status, func.count()).group_by(tokens.c.status)
    ):
        by_status[status] = int(count)
    per_state: dict[str, dict[str, int]] = {
        name: dict.fromkeys(("active", "paused", "queued", "claimed", "waiting"), 0)
        for name in states
    }
    live = (
        select(tokens.c.workflow, tokens.c.state, tokens.c.status, func.count())
        .where(_rare(conn, tokens.c.status.in_(("active", "paused"))))
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
            entry = per_state.setdefault(
                state_name(workflow, state),
                dict.fromkeys(("active", "paused", "queued", "claimed", "waiting"), 0),
            )
            entry[status] = int(count)
    oldest = conn.execute(
        select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    ).scalar()
    serving = conn.execute(select(control_plane.c.serving).where(control_plane.c.id == 1)).scalar()
    return Stats(by_status, per_state, oldest, serving)
