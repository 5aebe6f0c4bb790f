"""The operators' reads of one token or of the tasks: tasks, timers, memory, history.

A child token's state is named `<workflow>/<state>` here, as in a grant and in `/stats`, so
that one name means one state across the operator routes. Each statement is built per call
from its filters and run through `Connection.execute`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, select

from stateous.control.store.direct import AnyRow
from stateous.control.store.records import TaskRecord
from stateous.control.store.tables import (
    OPEN_TASK_STATUSES,
    TASK_IS_OPEN,
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
    after: int | None = None,
) -> list[OperatorTask]:
    """Tasks newest first (highest id first); the filters combine; `after`: only the tasks
    with a lower id (the page after the one that ended with that task).

    `state` is `<state>` (main workflow) or `<workflow>/<state>` (a child workflow).
    """
    query = _tasks_query()
    if after is not None:
        query = query.where(tasks.c.id < after)
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
