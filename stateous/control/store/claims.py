"""The statements of a claim: its candidates read, claimed, and the supervisor's last claim
kept (`claims`, `claim_grants`) for a repeat of its request id.

The candidates' read is built once per set of served states and run through `direct` (the
driver's cursor), as are the claim's and the last claim's statements (on SQLite the claimed
ids are an expanding IN list, which `direct` hands to `Connection.execute`); a new
supervisor's claims row on SQLite is inserted through `Connection.execute`. Where writers run side by side
(`Dialect.locks`, Postgres), the claims row is created by an upsert and read `FOR UPDATE`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Select,
    and_,
    bindparam,
    delete,
    insert,
    select,
    union_all,
    update,
)

from stateous.control.store.dialect import dialect_of, per_dialect
from stateous.control.store.direct import execute as run
from stateous.control.store.records import TOKEN_PREFIX, ClaimRecord, TaskRecord, TokenRecord
from stateous.control.store.rows import insert_rows
from stateous.control.store.tables import (
    TASK_IS_OPEN,
    claim_grants,
    claims,
    ledger,
    memory,
    tasks,
    tokens,
)
from stateous.control.store.tasks import LAST_SEQ_COLUMN, TASK_JOIN_TOKEN

# A claim's read of its candidates: each with its token, the token's last seq and what its
# grant needs of the ledger and memory (the event that entered the state, whether the state
# has memory), so neither the `task_claimed` row nor the grant reads anything more.
_TO_CLAIM = TASK_JOIN_TOKEN.add_columns(
    LAST_SEQ_COLUMN,
    select(ledger.c.data)
    .where(ledger.c.token == tasks.c.token, ledger.c.kind == "event_accepted")
    .order_by(ledger.c.seq.desc())
    .limit(1)
    .scalar_subquery()
    .label("entered_data"),
    select(memory.c.key)
    .where(memory.c.token == tasks.c.token, memory.c.state == tasks.c.state)
    .exists()
    .label("has_memory"),
)
# Claiming read candidates, all in one statement: each attempt one more than the one read
# under the family lock (SQLite: by the one writer), the same lease and supervisor for all.
_CLAIM = update(tasks).values(
    status="claimed",
    claimed_by=bindparam("sup", type_=tasks.c.claimed_by.type),
    attempt=tasks.c.attempt + 1,
    lease_until=bindparam("until", type_=tasks.c.lease_until.type),
)
# The ids in one parameter (`Dialect.in_list`).
_TASKS_TO_CLAIM = per_dialect(lambda d: _TO_CLAIM.where(d.in_list(tasks.c.id, "ids", BigInteger)))
_CLAIM_TASKS = per_dialect(lambda d: _CLAIM.where(d.in_list(tasks.c.id, "ids", BigInteger)))
_CLAIM_ROW = select(claims).where(claims.c.supervisor == bindparam("sup"))
_CLAIM_ROW_LOCKED = per_dialect(lambda d: d.for_update(_CLAIM_ROW))
# Where writers run side by side: the claims row of a new supervisor, inserted unless it
# exists (then locked).
_CLAIM_ROW_NEW = per_dialect(
    lambda d: (
        d.insert(claims).values(supervisor=bindparam("sup"), request="").on_conflict_do_nothing()
    )
)
_SAVE_CLAIM = update(claims).where(claims.c.supervisor == bindparam("sup"))
_MORE_GRANTS = (
    select(claim_grants.c.task_id, claim_grants.c.attempt)
    .where(claim_grants.c.supervisor == bindparam("sup"))
    .order_by(claim_grants.c.position)
)
_DELETE_MORE_GRANTS = delete(claim_grants).where(claim_grants.c.supervisor == bindparam("sup"))
_GRANT_COLUMNS = ("supervisor", "position", "task_id", "attempt")


def queued_candidates(
    conn: Connection, structure: str, served: Sequence[tuple[str | None, str]], limit: int = 20
) -> list[tuple[TaskRecord, str | None]]:
    """The oldest queued tasks of active tokens on `structure` in the served (workflow, state)
    pairs.

    A pair's workflow None means the main workflow (`tokens.workflow` null). Each task comes
    with its token's parent, to find the family lock.
    """
    query = candidates_query(tuple(served), limit)
    rows = run(conn, query, {"structure": structure})
    return [(TaskRecord.from_row(row), row._mapping["parent"]) for row in rows]


@functools.lru_cache(maxsize=256)
def candidates_query(served: tuple[tuple[str | None, str], ...], limit: int) -> Select[Any]:
    """One oldest-first part per served pair, merged: each part walks `tasks_queue`
    (status, structure, state, then id: migrations 0009, 0011) in order and stops at `limit`,
    so a long queue, or the queue of another version, costs nothing."""
    parts = [_pair_candidates(workflow, state, limit).subquery() for workflow, state in served]
    merged = union_all(*(select(part) for part in parts)).subquery()
    return select(merged).order_by(merged.c.id).limit(limit)


def _pair_candidates(workflow: str | None, state: str, limit: int) -> Select[Any]:
    # The token is read by correlated subqueries, which every planner answers through the
    # token's primary key. As a join, Postgres without fresh statistics (a new or fast-growing
    # database) chose a nested loop over all active tokens for each queued task: 10 ms a claim.
    own = tokens.c.token == tasks.c.token
    belongs = tokens.c.workflow.is_(None) if workflow is None else tokens.c.workflow == workflow
    claimable = select(and_(tokens.c.status == "active", belongs)).where(own).scalar_subquery()
    parent = select(tokens.c.parent).where(own).scalar_subquery().label("parent")
    return (
        select(tasks, parent)
        .where(
            TASK_IS_OPEN,
            tasks.c.status == "queued",
            tasks.c.structure == bindparam("structure"),
            tasks.c.state == state,
            claimable,
        )
        .order_by(tasks.c.id)
        .limit(limit)
    )


@dataclass(frozen=True)
class ToClaim:
    """A queued task as a claim reads it: the task, its token, the token's last seq, and
    what its grant needs (the event that entered the state, whether the state has memory)."""

    task: TaskRecord
    token: TokenRecord
    seq: int
    entered_by: str
    has_memory: bool


def tasks_to_claim(conn: Connection, task_ids: Sequence[int]) -> dict[int, ToClaim]:
    """The tasks of `task_ids` that exist, each with its token and its grant's facts, in one
    read; keyed by task id."""
    found: dict[int, ToClaim] = {}
    for row in run(conn, _TASKS_TO_CLAIM[dialect_of(conn)], {"ids": list(task_ids)}):
        m = row._mapping
        entered = m["entered_data"]
        found[int(m["id"])] = ToClaim(
            TaskRecord.from_row(row),
            TokenRecord.from_row(row, prefix=TOKEN_PREFIX),
            int(m["ledger_last_seq"] or 0),
            str(entered["event"]) if entered else "__started__",
            bool(m["has_memory"]),
        )
    return found


def claim_tasks(
    conn: Connection, task_ids: Sequence[int], supervisor: str, until: datetime
) -> None:
    """Claim read queued tasks for `supervisor` until `until`, each on its next attempt."""
    values = {"ids": list(task_ids), "sup": supervisor, "until": until}
    run(conn, _CLAIM_TASKS[dialect_of(conn)], values)


def claim_row_for_update(conn: Connection, supervisor: str) -> ClaimRecord:
    """The supervisor's claims row, locked where writers run side by side; created with
    request `""` if missing."""
    params = {"sup": supervisor}
    dialect = dialect_of(conn)
    if dialect.locks:
        run(conn, _CLAIM_ROW_NEW[dialect], params)
        row = run(conn, _CLAIM_ROW_LOCKED[dialect], params).first()
    else:  # the one writer: nothing can insert it between the read and the insert
        row = run(conn, _CLAIM_ROW, params).first()
        if row is None:
            conn.execute(insert(claims).values(supervisor=supervisor, request=""))
            row = run(conn, _CLAIM_ROW, params).first()
    assert row is not None
    m = row._mapping
    more = tuple((int(t), int(a)) for t, a in run(conn, _MORE_GRANTS, params))
    return ClaimRecord(m["supervisor"], m["request"], m["task_id"], m["attempt"], more)


def save_claim(
    conn: Connection,
    supervisor: str,
    request: str,
    grants: Sequence[tuple[int, int]],
    had_more: bool,
) -> None:
    """Replace the supervisor's last claim by `grants` (task, attempt), in the order answered:
    the first in `claims` (empty when none), the others in `claim_grants`. `had_more`: the
    replaced claim left rows in `claim_grants` (they are deleted)."""
    task_id, attempt = grants[0] if grants else (None, None)
    values = {"request": request, "task_id": task_id, "attempt": attempt}
    run(conn, _SAVE_CLAIM, {"sup": supervisor, **values})
    if had_more:
        run(conn, _DELETE_MORE_GRANTS, {"sup": supervisor})
    rows = [
        {"supervisor": supervisor, "position": position, "task_id": t, "attempt": a}
        for position, (t, a) in enumerate(grants[1:], start=2)
    ]
    insert_rows(conn, claim_grants, _GRANT_COLUMNS, rows)
