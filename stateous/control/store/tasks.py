"""The statements of `tasks`: queued, read with their token, closed as a token leaves a state,
changed, and their leases renewed and ended.

The statements of an operation's path are built once and run through `direct` (the driver's
cursor); the lease statements (renewed, scanned, ended) and the count of `why`, built at each
call, through `Connection.execute`. Where Postgres runs a leave in one statement
(`Dialect.fuses_writes`), SQLite runs its parts one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    Integer,
    ScalarSelect,
    and_,
    bindparam,
    case,
    cast,
    func,
    insert,
    null,
    or_,
    select,
    union_all,
    update,
)

from stateous.control.store.dialect import dialect_of, per_dialect
from stateous.control.store.direct import execute as run
from stateous.control.store.direct import insert_values
from stateous.control.store.records import TOKEN_PREFIX, TaskRecord, TokenRecord
from stateous.control.store.rows import ROWS_MOST
from stateous.control.store.tables import (
    OPEN_TASK_STATUSES,
    TASK_IS_OPEN,
    ledger,
    tasks,
    timers,
    tokens,
)
from stateous.control.store.timers import cancel_timers

_INSERT_TASK = insert(tasks).returning(tasks.c.id)
# A task of the token's next visit of a state, in one statement: the visit is the highest of
# its tasks of that state plus 1 (an aggregate answers one row, NULL when there is none).
_QUEUE_TASK = insert(tasks).from_select(
    ["token", "state", "visit", "status", "attempt", "queued_at", "structure"],
    select(
        bindparam("t", type_=tasks.c.token.type),
        bindparam("s", type_=tasks.c.state.type),
        func.coalesce(func.max(tasks.c.visit), 0) + 1,
        bindparam("queued", type_=tasks.c.status.type),
        bindparam("zero", type_=tasks.c.attempt.type),
        bindparam("now", type_=tasks.c.queued_at.type),
        bindparam("structure", type_=tasks.c.structure.type),
    ).where(tasks.c.token == bindparam("t"), tasks.c.state == bindparam("s")),
)
_QUEUE_NEXT_VISIT = _QUEUE_TASK.returning(tasks.c.id, tasks.c.visit)
_GET_TASK = select(tasks).where(tasks.c.id == bindparam("id"))
#: A task joined with its token, whose columns are labelled `TOKEN_PREFIX + <name>`.
TASK_JOIN_TOKEN = select(tasks, *(c.label(TOKEN_PREFIX + c.name) for c in tokens.columns)).join(
    tokens, tokens.c.token == tasks.c.token
)
_TASK_AND_TOKEN = TASK_JOIN_TOKEN.where(tasks.c.id == bindparam("id"))
#: The highest seq of the task's token's ledger, which its next row follows.
LAST_SEQ_COLUMN = (
    select(func.max(ledger.c.seq))
    .where(ledger.c.token == tasks.c.token)
    .scalar_subquery()
    .label("ledger_last_seq")
)
_TASK_TOKEN_SEQ_OF = TASK_JOIN_TOKEN.add_columns(LAST_SEQ_COLUMN)
_TASK_TOKEN_SEQ = _TASK_TOKEN_SEQ_OF.where(tasks.c.id == bindparam("id"))
_UPDATE_TASK = update(tasks).where(tasks.c.id == bindparam("task_id"))
_OPEN_TASKS = (
    select(tasks)
    .where(tasks.c.token == bindparam("t"), tasks.c.status.in_(OPEN_TASK_STATUSES))
    .order_by(tasks.c.id)
)
# Closing a token's open tasks as it leaves a state: each worked-on task (claimed or waiting)
# is `done` when the event was one its state emits, every other open task `cancelled`.
_CLOSE_OPEN_TASKS = (
    update(tasks)
    .where(tasks.c.token == bindparam("t"), tasks.c.status.in_(OPEN_TASK_STATUSES))
    .values(
        status=case(
            (
                and_(
                    bindparam("done", type_=Boolean()), tasks.c.status.in_(("claimed", "waiting"))
                ),
                "done",
            ),
            else_="cancelled",
        ),
        lease_until=None,
    )
    .returning(tasks.c.id, tasks.c.status)
)
# Leaving a state on Postgres: the same close of the tasks, with the token's pending timers
# cancelled by a data-modifying WITH of the same statement (one round trip instead of two; a
# WITH that changes rows runs to its end whether or not the statement reads it).
_TIMERS_CANCELLED = (
    update(timers)
    .where(timers.c.token == bindparam("t"), timers.c.status == "pending")
    .values(status=bindparam("timer_status"))
    .cte("timers_cancelled")
)
_LEAVE_TASKS_AND_TIMERS = _CLOSE_OPEN_TASKS.add_cte(_TIMERS_CANCELLED)
# Leaving for a state that queues a task, on Postgres: that leave and the task of the next
# visit (`_QUEUE_NEXT_VISIT`) in one statement. Each part reads the tasks as they were before
# the statement, so the new task is not closed and its visit counts the same tasks; a closed
# task answers no visit, the new one its visit.
_TASKS_CLOSED = _CLOSE_OPEN_TASKS.cte("tasks_closed")
_TASK_QUEUED = _QUEUE_TASK.returning(tasks.c.id, tasks.c.status, tasks.c.visit).cte("task_queued")
_LEAVE_AND_QUEUE = union_all(
    select(_TASKS_CLOSED.c.id, _TASKS_CLOSED.c.status, cast(null(), Integer).label("visit")),
    select(_TASK_QUEUED.c.id, _TASK_QUEUED.c.status, _TASK_QUEUED.c.visit),
).add_cte(_TIMERS_CANCELLED)
_FIRST_TASK_COLUMNS = ("token", "state", "visit", "status", "attempt", "queued_at", "structure")


def insert_task(
    conn: Connection, token: str, state: str, visit: int, now: datetime, structure: str
) -> int:
    """Queue a task (attempt 0) of a token of `structure` and answer its id."""
    values = {"token": token, "state": state, "visit": visit, "status": "queued", "attempt": 0}
    return int(
        run(conn, _INSERT_TASK, {**values, "queued_at": now, "structure": structure}).scalar_one()
    )


def insert_first_tasks(
    conn: Connection, firsts: Sequence[tuple[str, str]], now: datetime, structure: str
) -> dict[str, int]:
    """Queue the first task (visit 1, attempt 0) of each new token of (token, state), all of
    `structure`, in one statement; answer the task's id by token."""
    if not firsts:
        return {}
    rows = [
        {"token": token, "state": state, "visit": 1, "status": "queued", "attempt": 0,
         "queued_at": now, "structure": structure}
        for token, state in firsts
    ]  # fmt: skip
    ids: dict[str, int] = {}
    for first in range(0, len(rows), ROWS_MOST):
        part = rows[first : first + ROWS_MOST]
        answered = insert_values(conn, tasks, _FIRST_TASK_COLUMNS, part, ("token", "id"))
        ids.update((token, task) for token, task in answered)
    return ids


def task_and_token(conn: Connection, task_id: int) -> tuple[TaskRecord, TokenRecord] | None:
    """The task with this id and its token, in one read (None: no such task or token)."""
    row = run(conn, _TASK_AND_TOKEN, {"id": task_id}).first()
    if row is None:
        return None
    return TaskRecord.from_row(row), TokenRecord.from_row(row, prefix=TOKEN_PREFIX)


# The same read for several tasks at once (a shared transaction's reports, read ahead).
_TASKS_TOKENS_SEQS = per_dialect(
    lambda dialect: _TASK_TOKEN_SEQ_OF.where(dialect.in_one_value(tasks.c.id, "ids", BigInteger))
)


def tasks_tokens_seqs(
    conn: Connection, task_ids: Sequence[int]
) -> dict[int, tuple[TaskRecord, TokenRecord, int]]:
    """`task_token_seq` of each of `task_ids` in one read, by task id (an unknown id is left
    out)."""
    found: dict[int, tuple[TaskRecord, TokenRecord, int]] = {}
    for row in run(conn, _TASKS_TOKENS_SEQS[dialect_of(conn)], {"ids": list(task_ids)}):
        task, token = TaskRecord.from_row(row), TokenRecord.from_row(row, prefix=TOKEN_PREFIX)
        found[task.id] = (task, token, int(row._mapping["ledger_last_seq"] or 0))
    return found


def task_token_seq(conn: Connection, task_id: int) -> tuple[TaskRecord, TokenRecord, int] | None:
    """`task_and_token` and the highest seq of the token's ledger (0 when empty), in one read."""
    row = run(conn, _TASK_TOKEN_SEQ, {"id": task_id}).first()
    if row is None:
        return None
    task, token = TaskRecord.from_row(row), TokenRecord.from_row(row, prefix=TOKEN_PREFIX)
    return task, token, int(row._mapping["ledger_last_seq"] or 0)


def queue_next_visit(
    conn: Connection, token: str, state: str, now: datetime, structure: str
) -> tuple[int, int]:
    """Queue the task of the token's next visit of `state` (attempt 0), of a token of
    `structure`; answer its id and visit.

    The visit is the number of the token's tasks of `state` plus 1: each entry of a state that
    queues tasks queues exactly one, so this is its `entered` rows plus 1.
    """
    values = {
        "t": token, "s": state, "queued": "queued", "zero": 0, "now": now, "structure": structure
    }  # fmt: skip
    row = run(conn, _QUEUE_NEXT_VISIT, values).first()
    assert row is not None  # INSERT ... SELECT of an aggregate inserts one row
    return int(row[0]), int(row[1])


def get_task(conn: Connection, task_id: int) -> TaskRecord | None:
    """The task with this id, or None."""
    row = run(conn, _GET_TASK, {"id": task_id}).first()
    return TaskRecord.from_row(row) if row else None


def open_tasks(conn: Connection, token: str) -> list[TaskRecord]:
    """The token's queued, claimed or waiting tasks, by id."""
    return [TaskRecord.from_row(row) for row in run(conn, _OPEN_TASKS, {"t": token})]


def close_open_tasks(conn: Connection, token: str, done: bool) -> list[tuple[int, str]]:
    """Close the token's open tasks in one statement: (id, new status) of each, by id.

    `done`: the token leaves on an event its state emits, so a claimed or waiting task is
    `done`; every other open task is `cancelled`.
    """
    return _closed(run(conn, _CLOSE_OPEN_TASKS, {"t": token, "done": done}))


def leave_tasks_and_timers(conn: Connection, token: str, done: bool) -> list[tuple[int, str]]:
    """`close_open_tasks`, then the token's pending timers cancelled: one statement where
    writes are fused (Postgres), two elsewhere."""
    if not dialect_of(conn).fuses_writes:
        closed = close_open_tasks(conn, token, done)
        cancel_timers(conn, token)
        return closed
    values = {"t": token, "done": done, "timer_status": "cancelled"}
    return _closed(run(conn, _LEAVE_TASKS_AND_TIMERS, values))


def leave_and_queue(
    conn: Connection, token: str, done: bool, state: str, now: datetime, structure: str
) -> tuple[list[tuple[int, str]], tuple[int, int]]:
    """`leave_tasks_and_timers`, then `queue_next_visit` of `state`: one statement where
    writes are fused (Postgres), one each elsewhere. Answers the closed tasks, and the new
    task's id and visit."""
    if not dialect_of(conn).fuses_writes:
        closed = leave_tasks_and_timers(conn, token, done)
        return closed, queue_next_visit(conn, token, state, now, structure)
    values = {
        "t": token, "done": done, "timer_status": "cancelled", "s": state, "queued": "queued",
        "zero": 0, "now": now, "structure": structure,
    }  # fmt: skip
    closed, queued = [], None
    for task_id, status, visit in run(conn, _LEAVE_AND_QUEUE, values):
        if visit is None:
            closed.append((task_id, status))
        else:
            queued = (int(task_id), int(visit))
    assert queued is not None  # INSERT ... SELECT of an aggregate inserts one row
    return _closed(closed), queued


def _closed(found: Iterable[Any]) -> list[tuple[int, str]]:
    """(id, new status) of each closed task, by id."""
    return sorted((int(task_id), str(status)) for task_id, status in found)


def update_task(conn: Connection, task_id: int, **values: Any) -> None:
    """Change columns of one task."""
    run(conn, _UPDATE_TASK, {"task_id": task_id, **values})


def renew_leases(
    conn: Connection, supervisor: str, ids: Sequence[int], now: datetime, until: datetime
) -> set[int]:
    """One statement: renew each listed task claimed by `supervisor` whose lease has not ended."""
    query = (
        update(tasks)
        .where(
            tasks.c.id.in_(list(ids)),
            tasks.c.status == "claimed",
            tasks.c.claimed_by == supervisor,
            or_(tasks.c.lease_until.is_(None), tasks.c.lease_until >= now),
        )
        .values(lease_until=until)
        .returning(tasks.c.id)
    )
    return {int(i) for i in conn.execute(query).scalars()}


def leases_ended_before(conn: Connection, now: datetime) -> list[int]:
    """The ids of claimed tasks whose lease ended before `now`, by id (one read)."""
    query = select(tasks.c.id).where(
        tasks.c.status == "claimed", tasks.c.lease_until.is_not(None), tasks.c.lease_until < now
    )
    return [int(i) for i in conn.execute(query.order_by(tasks.c.id)).scalars()]


def end_lease(conn: Connection, task_id: int, now: datetime) -> bool:
    """Clear the lease of the task if it is claimed and its lease ended before `now`; False
    when no row changed (the lease was renewed, or the task moved, meanwhile)."""
    ended = conn.execute(
        update(tasks)
        .where(
            and_(
                tasks.c.id == task_id,
                tasks.c.status == "claimed",
                tasks.c.lease_until.is_not(None),
                tasks.c.lease_until < now,
            )
        )
        .values(lease_until=None)
    )
    return ended.rowcount == 1


#: The most queued tasks ahead that `queued_ahead` counts: past it, "more than" this many (a
#: count of 80,000 tasks ahead took 1.5 s at a million tokens).
AHEAD_MOST = 1000


def queued_ahead(conn: Connection, task: TaskRecord, workflow: str | None) -> int:
    """How many queued tasks of active tokens of `workflow` (None: the main one) wait for the
    task's state with a lower id than the task's: those a claim takes before it; counted up to
    `AHEAD_MOST` + 1 (more than `AHEAD_MOST`)."""
    same_workflow = (
        tokens.c.workflow.is_(None) if workflow is None else tokens.c.workflow == workflow
    )
    ahead = (
        select(tasks.c.id)
        .select_from(tasks.join(tokens, tokens.c.token == tasks.c.token))
        .where(
            TASK_IS_OPEN,
            tasks.c.status == "queued",
            tasks.c.state == task.state,
            tasks.c.id < task.id,
            tokens.c.status == "active",
            same_workflow,
            # Only tasks of the task's own version: a claim of one version takes no other's.
            tasks.c.structure.is_not_distinct_from(_structure_of_task(task.id)),
        )
        .limit(AHEAD_MOST + 1)
        .subquery()
    )
    return int(conn.execute(select(func.count()).select_from(ahead)).scalar() or 0)


def _structure_of_task(task: int) -> ScalarSelect[Any]:
    own = tasks.alias("own")
    return select(own.c.structure).where(own.c.id == task).scalar_subquery()
