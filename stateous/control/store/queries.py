"""Query functions: each takes a Connection and answers typed records, never raw rows."""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Connection,
    Integer,
    Select,
    String,
    Table,
    and_,
    any_,
    bindparam,
    case,
    cast,
    column,
    delete,
    func,
    insert,
    null,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert

from stateous.control.store.direct import AnyRow, insert_values
from stateous.control.store.direct import execute as run
from stateous.control.store.tables import (
    OPEN_TASK_STATUSES,
    TASK_IS_OPEN,
    claim_grants,
    claims,
    control_plane,
    ledger,
    memory,
    tasks,
    timers,
    tokens,
)


@dataclass(frozen=True)
class TokenRecord:
    """A row of `tokens`."""

    token: str
    state: str
    status: str
    visit: int
    context: dict[str, Any]
    entered_at: datetime
    parent: str | None
    workflow: str | None

    @classmethod
    def from_row(cls, row: AnyRow, prefix: str = "") -> TokenRecord:
        """Build from a `tokens` row (its columns named `<prefix><column>` in a join)."""
        m = row._mapping
        p = prefix
        return cls(
            m[p + "token"], m[p + "state"], m[p + "status"], m[p + "visit"],
            dict(m[p + "context"]), m[p + "entered_at"], m[p + "parent"], m[p + "workflow"],
        )  # fmt: skip


@dataclass(frozen=True)
class TaskRecord:
    """A row of `tasks`."""

    id: int
    token: str
    state: str
    visit: int
    status: str
    attempt: int
    claimed_by: str | None
    lease_until: datetime | None
    queued_at: datetime

    @classmethod
    def from_row(cls, row: AnyRow) -> TaskRecord:
        """Build from a `tasks` row."""
        m = row._mapping
        return cls(
            m["id"], m["token"], m["state"], m["visit"], m["status"], m["attempt"],
            m["claimed_by"], m["lease_until"], m["queued_at"],
        )  # fmt: skip


@dataclass(frozen=True)
class LedgerRecord:
    """A row of `ledger`."""

    token: str
    seq: int
    at: datetime
    kind: str
    key: str | None
    data: dict[str, Any]

    @classmethod
    def from_row(cls, row: AnyRow) -> LedgerRecord:
        """Build from a `ledger` row."""
        m = row._mapping
        return cls(m["token"], m["seq"], m["at"], m["kind"], m["key"], dict(m["data"]))


@dataclass(frozen=True)
class ClaimRecord:
    """A row of `claims`: a supervisor's last claim that carried a request id."""

    supervisor: str
    request: str
    task_id: int | None
    attempt: int | None
    #: The grants after the first of a claim with `max` (`claim_grants`), as (task, attempt).
    more: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ControlPlaneRecord:
    """The one row of `control_plane`."""

    structure: str | None
    checksum: str | None
    serving: str | None
    since: datetime | None


# --- tokens ---------------------------------------------------------------------------------


# Hot statements are built once: SQLAlchemy then only binds parameters.
_GET_TOKEN = select(tokens).where(tokens.c.token == bindparam("t"))
_ANY_CASE = select(tokens).where(func.lower(tokens.c.token) == func.lower(bindparam("t"))).limit(2)
_INSERT_TOKEN = insert(tokens)
_LAST_SEQ = select(func.max(ledger.c.seq)).where(ledger.c.token == bindparam("t"))
_INSERT_TASK = insert(tasks).returning(tasks.c.id)
# A task of the token's next visit of a state, in one statement: the visit is the highest of
# its tasks of that state plus 1 (an aggregate answers one row, NULL when there is none).
_QUEUE_TASK = insert(tasks).from_select(
    ["token", "state", "visit", "status", "attempt", "queued_at"],
    select(
        bindparam("t", type_=tasks.c.token.type),
        bindparam("s", type_=tasks.c.state.type),
        func.coalesce(func.max(tasks.c.visit), 0) + 1,
        bindparam("queued", type_=tasks.c.status.type),
        bindparam("zero", type_=tasks.c.attempt.type),
        bindparam("now", type_=tasks.c.queued_at.type),
    ).where(tasks.c.token == bindparam("t"), tasks.c.state == bindparam("s")),
)
_QUEUE_NEXT_VISIT = _QUEUE_TASK.returning(tasks.c.id, tasks.c.visit)
# An UPDATE without values sets the columns named by the parameters, besides the key's own.
_UPDATE_TOKEN = update(tokens).where(tokens.c.token == bindparam("token_id"))
_LEDGER = select(ledger).where(ledger.c.token == bindparam("t"))
_LEDGER_IN_ORDER = _LEDGER.order_by(ledger.c.seq)
_LEDGER_OF_KINDS = _LEDGER_IN_ORDER.where(ledger.c.kind.in_(bindparam("kinds", expanding=True)))
_LAST_OF_KIND = (
    _LEDGER.where(ledger.c.kind == bindparam("kind")).order_by(ledger.c.seq.desc()).limit(1)
)
_KEY_USED = select(ledger.c.seq).where(
    ledger.c.token == bindparam("t"), ledger.c.key == bindparam("key")
)
_GET_TASK = select(tasks).where(tasks.c.id == bindparam("id"))
# The token's columns are labelled `token_<name>`: a task has columns of the same names.
_TOKEN_PREFIX = "token_"
_TASK_JOIN_TOKEN = select(tasks, *(c.label(_TOKEN_PREFIX + c.name) for c in tokens.columns)).join(
    tokens, tokens.c.token == tasks.c.token
)
_TASK_AND_TOKEN = _TASK_JOIN_TOKEN.where(tasks.c.id == bindparam("id"))
# The highest seq of the task's token's ledger, which its next row follows.
_LAST_SEQ_COLUMN = (
    select(func.max(ledger.c.seq))
    .where(ledger.c.token == tasks.c.token)
    .scalar_subquery()
    .label("ledger_last_seq")
)
_TASK_TOKEN_SEQ = _TASK_AND_TOKEN.add_columns(_LAST_SEQ_COLUMN)
# A claim's read of its candidates: each with its token, the token's last seq and what its
# grant needs of the ledger and memory (the event that entered the state, whether the state
# has memory), so neither the `task_claimed` row nor the grant reads anything more.
_TO_CLAIM = _TASK_JOIN_TOKEN.add_columns(
    _LAST_SEQ_COLUMN,
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
# Ids in one parameter: an `IN` list on SQLite; on Postgres an array (`= ANY`), so that the
# statement's text is the same for any number of ids and Postgres plans it once per
# connection (psycopg prepares a statement after a few runs of the same text).
_IDS_IN = tasks.c.id.in_(bindparam("ids", expanding=True))
_IDS_ANY = tasks.c.id == any_(bindparam("ids", type_=ARRAY(BigInteger)))
_TASKS_TO_CLAIM = {"sqlite": _TO_CLAIM.where(_IDS_IN), "postgresql": _TO_CLAIM.where(_IDS_ANY)}
_CLAIM_TASKS = {"sqlite": _CLAIM.where(_IDS_IN), "postgresql": _CLAIM.where(_IDS_ANY)}
# Postgres: try the family locks of `keys` in their order until `most` are taken (the LIMIT
# stops the scan there, so no lock is tried beyond it); answers the 1-based positions taken.
_TRY_LOCK_KEYS = text(
    "SELECT n FROM unnest(CAST(:keys AS bigint[])) WITH ORDINALITY AS u(k, n) "
    "WHERE pg_try_advisory_xact_lock(k) LIMIT :most"
)
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
_INSERT_TIMER = insert(timers).returning(timers.c.id)
_PENDING_TIMERS = update(timers).where(
    timers.c.token == bindparam("t"), timers.c.status == "pending"
)
_PENDING_TIMERS_OF_KIND = _PENDING_TIMERS.where(timers.c.kind == bindparam("timer_kind"))
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
_MEMORY_OF = (
    select(memory.c.key, memory.c.value)
    .where(memory.c.token == bindparam("t"), memory.c.state == bindparam("s"))
    .order_by(memory.c.key)
)
_ONE_MEMORY = (memory.c.token == bindparam("t"), memory.c.state == bindparam("s"),
               memory.c.key == bindparam("k"))  # fmt: skip
_MEMORY_EXISTS = select(memory.c.key).where(*_ONE_MEMORY)
_DELETE_MEMORY = delete(memory).where(*_ONE_MEMORY)
_INSERT_MEMORY = insert(memory)
_DELETE_ALL_MEMORY = delete(memory).where(memory.c.token == bindparam("t"))
_CLAIM_ROW = select(claims).where(claims.c.supervisor == bindparam("sup"))
_CLAIM_ROW_LOCKED = _CLAIM_ROW.with_for_update()
# Postgres: the claims row of a new supervisor, inserted unless it exists (then locked).
_PG_CLAIM_ROW_NEW = (
    pg_insert(claims).values(supervisor=bindparam("sup"), request="").on_conflict_do_nothing()
)
_SAVE_CLAIM = update(claims).where(claims.c.supervisor == bindparam("sup"))
_MORE_GRANTS = (
    select(claim_grants.c.task_id, claim_grants.c.attempt)
    .where(claim_grants.c.supervisor == bindparam("sup"))
    .order_by(claim_grants.c.position)
)
_DELETE_MORE_GRANTS = delete(claim_grants).where(claim_grants.c.supervisor == bindparam("sup"))


def get_token(conn: Connection, token: str) -> TokenRecord | None:
    """The token with exactly this id, or None."""
    row = run(conn, _GET_TOKEN, {"t": token}).first()
    return TokenRecord.from_row(row) if row else None


def token_any_case(conn: Connection, token: str) -> tuple[TokenRecord | None, str | None]:
    """(the token with exactly this id, the id of another equal to it ignoring case) in one read."""
    exact, other = None, None
    for row in run(conn, _ANY_CASE, {"t": token}):
        record = TokenRecord.from_row(row)
        if record.token == token:
            exact = record
        else:
            other = record.token
    return exact, other


def token_folded(conn: Connection, token: str) -> str | None:
    """The id of a token equal to `token` ignoring case, or None."""
    query = select(tokens.c.token).where(func.lower(tokens.c.token) == token.lower())
    return conn.execute(query.limit(1)).scalar()


def insert_token(conn: Connection, record: TokenRecord) -> None:
    """Insert a new token row."""
    run(conn, _INSERT_TOKEN, record.__dict__)


def tokens_folded_in(conn: Connection, lowered: Sequence[str]) -> dict[str, TokenRecord]:
    """The tokens whose ids, in lower case, are among `lowered` (ASCII ids in lower case),
    keyed by that: one read for a batch of starts."""
    found: dict[str, TokenRecord] = {}
    for first in range(0, len(lowered), _IN_MOST):
        chunk = list(lowered[first : first + _IN_MOST])
        for row in run(conn, _FOLDED_IN[conn.dialect.name], {"lowered": chunk}):
            record = TokenRecord.from_row(row)
            found[record.token.lower()] = record
    return found


#: Ids looked up in one statement.
_IN_MOST = 500
_FOLDED = select(tokens)
# The ids are one bound value (a JSON array on SQLite, an array on Postgres), so the statement
# is the same for any number of them and runs on the driver's cursor (`direct`); both walk the
# unique index `tokens_folded`.
_FOLDED_IN = {
    "sqlite": _FOLDED.where(
        func.lower(tokens.c.token).in_(
            select(column("value")).select_from(
                func.json_each(bindparam("lowered", type_=JSON)).table_valued("value")
            )
        )
    ),
    "postgresql": _FOLDED.where(
        func.lower(tokens.c.token) == any_(bindparam("lowered", type_=ARRAY(String)))
    ),
}


def insert_tokens(conn: Connection, records: Sequence[TokenRecord]) -> None:
    """Insert new token rows, `_ROWS_MOST` a statement."""
    insert_rows(conn, tokens, _TOKEN_COLUMNS, [record.__dict__ for record in records])


_TOKEN_COLUMNS = tuple(c.name for c in tokens.c)


def insert_first_tasks(
    conn: Connection, firsts: Sequence[tuple[str, str]], now: datetime
) -> dict[str, int]:
    """Queue the first task (visit 1, attempt 0) of each new token of (token, state) in one
    statement; answer the task's id by token."""
    if not firsts:
        return {}
    rows = [
        {"token": token, "state": state, "visit": 1, "status": "queued", "attempt": 0,
         "queued_at": now}
        for token, state in firsts
    ]  # fmt: skip
    ids: dict[str, int] = {}
    for first in range(0, len(rows), _ROWS_MOST):
        part = rows[first : first + _ROWS_MOST]
        answered = insert_values(conn, tasks, _FIRST_TASK_COLUMNS, part, ("token", "id"))
        ids.update((token, task) for token, task in answered)
    return ids


_FIRST_TASK_COLUMNS = ("token", "state", "visit", "status", "attempt", "queued_at")


def update_token(conn: Connection, token: str, **values: Any) -> None:
    """Change columns of one token."""
    run(conn, _UPDATE_TOKEN, {"token_id": token, **values})


#: The columns of a token's wire shape, in `views.wire_of`'s order.
WIRE_COLUMNS = (
    tokens.c.token, tokens.c.state, tokens.c.status, tokens.c.visit, tokens.c.context,
    tokens.c.entered_at, tokens.c.parent,
)  # fmt: skip


def listing_columns(
    conn: Connection, status: str | None, parent: str | None, limit: int
) -> Sequence[Sequence[Any]]:
    """The listing's tokens as rows of WIRE_COLUMNS: no record is built for each of the
    thousand rows a listing may answer."""
    return conn.execute(listing_query(status, parent, limit)).all()


def listing_query(status: str | None, parent: str | None, limit: int) -> Select[Any]:
    """The listing's query: a walk of `tokens_moved` (or `tokens_status`), in their order."""
    query = select(*WIRE_COLUMNS)
    if status is not None:
        query = query.where(tokens.c.status == status)
    if parent is not None:
        query = query.where(tokens.c.parent == parent)
    return query.order_by(tokens.c.entered_at.desc(), tokens.c.token.asc()).limit(limit)


def children_of(conn: Connection, parent: str) -> list[TokenRecord]:
    """Every child token of `parent` (all visits), by id."""
    query = select(tokens).where(tokens.c.parent == parent).order_by(tokens.c.token)
    return [TokenRecord.from_row(row) for row in conn.execute(query)]


def count_live(conn: Connection) -> int:
    """How many tokens are active or paused."""
    query = select(func.count()).select_from(tokens)
    return int(conn.execute(query.where(tokens.c.status.in_(("active", "paused")))).scalar() or 0)


# --- ledger ---------------------------------------------------------------------------------


def last_seq(conn: Connection, token: str) -> int:
    """The highest seq of a token's ledger (0 when empty)."""
    return int(run(conn, _LAST_SEQ, {"t": token}).scalar() or 0)


def insert_ledger(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Append ledger rows (already numbered), all in one statement (spec 75 §5)."""
    insert_rows(conn, ledger, _LEDGER_COLUMNS, rows)


def insert_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]]
) -> None:
    """Insert `rows` (each with a value for every column of `columns`), `_ROWS_MOST` rows a
    statement, on the driver's cursor (`direct`)."""
    names = tuple(columns)
    for first in range(0, len(rows), _ROWS_MOST):
        insert_values(conn, table, names, rows[first : first + _ROWS_MOST])


_LEDGER_COLUMNS = ("token", "seq", "at", "kind", "key", "data")
# Beyond this many rows, one statement would pass SQLite's limit of bound parameters.
_ROWS_MOST = 100


def _rows_sql(table: Table, columns: Sequence[str], count: int) -> tuple[str, list[Any]]:
    """`INSERT INTO <table> (...) VALUES (...), (...)` for `count` rows, and its typed binds
    (`<column>_<row>`): the ledger's part of `_fused_writes`."""
    groups = ", ".join(
        "(" + ", ".join(f":{name}_{i}" for name in columns) + ")" for i in range(count)
    )
    binds = [
        bindparam(f"{name}_{i}", type_=table.c[name].type) for i in range(count) for name in columns
    ]
    names = ", ".join(f'"{name}"' for name in columns)
    return f"INSERT INTO {table.name} ({names}) VALUES {groups}", binds


def _row_params(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The values of `rows` bound as `_rows_sql` names them."""
    return {f"{name}_{i}": row[name] for i, row in enumerate(rows) for name in columns}


def write_changes(
    conn: Connection,
    changes: Mapping[str, Mapping[str, Any]],
    forget: Collection[str],
    rows: Sequence[dict[str, Any]],
) -> None:
    """An engine transaction's buffered writes: the columns to set of each token in `changes`,
    every memory row of each token in `forget` deleted, then the ledger rows appended.

    On Postgres one statement: each change and deletion a data-modifying WITH of the ledger's
    INSERT (or of the last of them, with no ledger row); they touch different rows, and each
    runs to its end whether or not the statement reads it. On SQLite, and beyond a few tokens
    or `_ROWS_MOST` rows, one statement each, in that order.
    """
    ids = [token for token, values in changes.items() if values or token in forget]
    ids.extend(token for token in forget if token not in changes)
    if not ids:
        insert_ledger(conn, rows)
        return
    fused = len(ids) <= _FUSED_TOKENS_MOST and len(rows) <= _ROWS_MOST
    if conn.dialect.name != "postgresql" or not fused:
        for token in ids:
            if changes.get(token):
                update_token(conn, token, **changes[token])
            if token in forget:
                delete_all_memory(conn, token)
        insert_ledger(conn, rows)
        return
    shape = tuple((tuple(sorted(changes.get(token, ()))), token in forget) for token in ids)
    params = _row_params(_LEDGER_COLUMNS, rows)
    for i, token in enumerate(ids):
        params[f"t{i}_token"] = token
        params.update({f"t{i}_{name}": value for name, value in changes.get(token, {}).items()})
    run(conn, _fused_writes(shape, len(rows)), params)


#: Tokens whose writes go into one statement (a cascade that ends many children runs more).
_FUSED_TOKENS_MOST = 4


@functools.lru_cache(maxsize=256)
def _fused_writes(shape: tuple[tuple[tuple[str, ...], bool], ...], count: int) -> Any:
    """The statement of `write_changes` on Postgres for tokens of `shape` (the columns set and
    whether their memory is deleted, per token) and `count` ledger rows, built once for each."""
    parts: list[tuple[str, str]] = []
    binds: list[Any] = []
    for i, (columns, forget) in enumerate(shape):
        binds.append(bindparam(f"t{i}_token", type_=tokens.c.token.type))  # each has a part
        if columns:
            # The columns of `tokens` are lower-case names that no keyword of Postgres takes.
            sets = ", ".join(f"{name} = :t{i}_{name}" for name in columns)
            sql = f"UPDATE tokens SET {sets} WHERE token = :t{i}_token"
            parts.append((f"token_changed_{i}", sql))
            binds.extend(bindparam(f"t{i}_{name}", type_=tokens.c[name].type) for name in columns)
        if forget:
            parts.append((f"memory_deleted_{i}", f"DELETE FROM memory WHERE token = :t{i}_token"))
    if count:
        main, ledger_binds = _rows_sql(ledger, _LEDGER_COLUMNS, count)
        binds.extend(ledger_binds)
    else:
        main = parts.pop()[1]
    with_ = ", ".join(f"{name} AS ({sql})" for name, sql in parts)
    return text(f"WITH {with_} {main}" if with_ else main).bindparams(*binds)


def key_used(conn: Connection, token: str, key: str) -> bool:
    """Whether a ledger row of this token carries this idempotency key."""
    return run(conn, _KEY_USED, {"t": token, "key": key}).first() is not None


def ledger_of(
    conn: Connection, token: str, kinds: Iterable[str] | None = None
) -> list[LedgerRecord]:
    """A token's ledger rows in seq order, optionally only some kinds."""
    if kinds is None:
        rows = run(conn, _LEDGER_IN_ORDER, {"t": token})
    else:
        rows = run(conn, _LEDGER_OF_KINDS, {"t": token, "kinds": list(kinds)})
    return [LedgerRecord.from_row(row) for row in rows]


def last_of_kind(conn: Connection, token: str, kind: str) -> LedgerRecord | None:
    """The token's latest ledger row of one kind."""
    row = run(conn, _LAST_OF_KIND, {"t": token, "kind": kind}).first()
    return LedgerRecord.from_row(row) if row else None


# --- tasks ----------------------------------------------------------------------------------


def insert_task(conn: Connection, token: str, state: str, visit: int, now: datetime) -> int:
    """Queue a task (attempt 0) and answer its id."""
    values = {"token": token, "state": state, "visit": visit, "status": "queued", "attempt": 0}
    return int(run(conn, _INSERT_TASK, {**values, "queued_at": now}).scalar_one())


def task_and_token(conn: Connection, task_id: int) -> tuple[TaskRecord, TokenRecord] | None:
    """The task with this id and its token, in one read (None: no such task or token)."""
    row = run(conn, _TASK_AND_TOKEN, {"id": task_id}).first()
    if row is None:
        return None
    return TaskRecord.from_row(row), TokenRecord.from_row(row, prefix=_TOKEN_PREFIX)


def task_token_seq(conn: Connection, task_id: int) -> tuple[TaskRecord, TokenRecord, int] | None:
    """`task_and_token` and the highest seq of the token's ledger (0 when empty), in one read."""
    row = run(conn, _TASK_TOKEN_SEQ, {"id": task_id}).first()
    if row is None:
        return None
    task, token = TaskRecord.from_row(row), TokenRecord.from_row(row, prefix=_TOKEN_PREFIX)
    return task, token, int(row._mapping["ledger_last_seq"] or 0)


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
    for row in run(conn, _TASKS_TO_CLAIM[conn.dialect.name], {"ids": list(task_ids)}):
        m = row._mapping
        entered = m["entered_data"]
        found[int(m["id"])] = ToClaim(
            TaskRecord.from_row(row),
            TokenRecord.from_row(row, prefix=_TOKEN_PREFIX),
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
    run(conn, _CLAIM_TASKS[conn.dialect.name], values)


def try_lock_keys(conn: Connection, keys: Sequence[int], most: int) -> list[int]:
    """Postgres: try the family locks of `keys` in order, without waiting, until `most` are
    taken; answers the 0-based positions of those taken, in order."""
    taken = conn.execute(_TRY_LOCK_KEYS, {"keys": list(keys), "most": most})
    return sorted(int(n) - 1 for (n,) in taken)


def queue_next_visit(conn: Connection, token: str, state: str, now: datetime) -> tuple[int, int]:
    """Queue the task of the token's next visit of `state` (attempt 0); answer its id and visit.

    The visit is the number of the token's tasks of `state` plus 1: each entry of a state that
    queues tasks queues exactly one (spec 30 §2.7), so this is its `entered` rows plus 1.
    """
    values = {"t": token, "s": state, "queued": "queued", "zero": 0, "now": now}
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
    `done`; every other open task is `cancelled` (spec 30 §2.6).
    """
    return _closed(run(conn, _CLOSE_OPEN_TASKS, {"t": token, "done": done}))


def leave_tasks_and_timers(conn: Connection, token: str, done: bool) -> list[tuple[int, str]]:
    """`close_open_tasks`, then the token's pending timers cancelled: one statement on Postgres.

    (SQLite's statements cost no round trip, and it has no data-modifying WITH: two there.)
    """
    if conn.dialect.name != "postgresql":
        closed = close_open_tasks(conn, token, done)
        cancel_timers(conn, token)
        return closed
    values = {"t": token, "done": done, "timer_status": "cancelled"}
    return _closed(run(conn, _LEAVE_TASKS_AND_TIMERS, values))


def leave_and_queue(
    conn: Connection, token: str, done: bool, state: str, now: datetime
) -> tuple[list[tuple[int, str]], tuple[int, int]]:
    """`leave_tasks_and_timers`, then `queue_next_visit` of `state`: one statement on Postgres
    (two on SQLite, as there). Answers the closed tasks, and the new task's id and visit."""
    if conn.dialect.name != "postgresql":
        return leave_tasks_and_timers(conn, token, done), queue_next_visit(conn, token, state, now)
    values = {
        "t": token, "done": done, "timer_status": "cancelled", "s": state, "queued": "queued",
        "zero": 0, "now": now,
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


def queued_candidates(
    conn: Connection, served: Sequence[tuple[str | None, str]], limit: int = 20
) -> list[tuple[TaskRecord, str | None]]:
    """The oldest queued tasks of active tokens in the served (workflow, state) pairs.

    A pair's workflow None means the main workflow (`tokens.workflow` null). Each task comes
    with its token's parent, to find the family lock.
    """
    query = _candidates_query(tuple(served), limit)
    return [(TaskRecord.from_row(row), row._mapping["parent"]) for row in run(conn, query)]


@functools.lru_cache(maxsize=256)
def _candidates_query(served: tuple[tuple[str | None, str], ...], limit: int) -> Select[Any]:
    """One oldest-first part per served pair, merged: each part walks `tasks_queue`
    (status, state, then id: migration 0009) in order and stops at `limit`, so a long queue
    costs nothing."""
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
        .where(TASK_IS_OPEN, tasks.c.status == "queued", tasks.c.state == state, claimable)
        .order_by(tasks.c.id)
        .limit(limit)
    )


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


# --- timers ---------------------------------------------------------------------------------


def insert_timer(conn: Connection, **values: Any) -> int:
    """Insert a pending timer and answer its id."""
    return int(run(conn, _INSERT_TIMER, {**values, "status": "pending"}).scalar_one())


def cancel_timers(conn: Connection, token: str, kind: str | None = None) -> None:
    """Set the token's pending timers (of one kind, or all) to cancelled."""
    if kind is None:
        run(conn, _PENDING_TIMERS, {"t": token, "status": "cancelled"})
    else:
        conn.execute(
            _PENDING_TIMERS_OF_KIND, {"t": token, "timer_kind": kind, "status": "cancelled"}
        )


# --- memory ---------------------------------------------------------------------------------


def memory_of(conn: Connection, token: str, state: str) -> dict[str, Any]:
    """Every memory key of (token, state), as an object (keys sorted)."""
    return {key: value for key, value in run(conn, _MEMORY_OF, {"t": token, "s": state})}


def memory_exists(conn: Connection, token: str, state: str, key: str) -> bool:
    """Whether the memory key exists."""
    found = run(conn, _MEMORY_EXISTS, {"t": token, "s": state, "k": key})
    return found.first() is not None


def set_memory(conn: Connection, token: str, state: str, key: str, value: Any) -> None:
    """Insert or replace one memory value."""
    delete_memory(conn, token, state, key)
    run(conn, _INSERT_MEMORY, {"token": token, "state": state, "key": key, "value": value})


def delete_memory(conn: Connection, token: str, state: str, key: str) -> None:
    """Delete one memory key."""
    run(conn, _DELETE_MEMORY, {"t": token, "s": state, "k": key})


def delete_all_memory(conn: Connection, token: str) -> None:
    """Delete every memory row of a token (it ended)."""
    run(conn, _DELETE_ALL_MEMORY, {"t": token})


# --- claims ---------------------------------------------------------------------------------


def claim_row_for_update(conn: Connection, supervisor: str) -> ClaimRecord:
    """The supervisor's claims row, locked; created with request `""` if missing."""
    params = {"sup": supervisor}
    if conn.dialect.name == "postgresql":
        run(conn, _PG_CLAIM_ROW_NEW, params)
        row = run(conn, _CLAIM_ROW_LOCKED, params).first()
    else:
        row = run(conn, _CLAIM_ROW, params).first()
        if row is None:
            conn.execute(insert(claims).values(supervisor=supervisor, request=""))
            row = run(conn, _CLAIM_ROW, params).first()
    assert row is not None
    m = row._mapping
    more = tuple((int(t), int(a)) for t, a in run(conn, _MORE_GRANTS, params))
    return ClaimRecord(m["supervisor"], m["request"], m["task_id"], m["attempt"], more)


_GRANT_COLUMNS = ("supervisor", "position", "task_id", "attempt")


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


# --- control_plane --------------------------------------------------------------------------


def read_control_plane(conn: Connection, *, for_update: bool = False) -> ControlPlaneRecord:
    """The control_plane row (FOR UPDATE on Postgres when asked)."""
    query = select(control_plane).where(control_plane.c.id == 1)
    if for_update and conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = conn.execute(query).first()
    if row is None:
        return ControlPlaneRecord(None, None, None, None)
    m = row._mapping
    return ControlPlaneRecord(m["structure"], m["checksum"], m["serving"], m["since"])


def write_control_plane(conn: Connection, **values: Any) -> None:
    """Change columns of the control_plane row."""
    conn.execute(update(control_plane).where(control_plane.c.id == 1).values(**values))


def shift_pending_timers(conn: Connection, token: str, paused_at: datetime, now: datetime) -> None:
    """Give each pending timer back the part of the pause after it was set (spec 30 §3.12)."""
    query = select(timers.c.id, timers.c.set_at, timers.c.due_at).where(
        timers.c.token == token, timers.c.status == "pending"
    )
    for timer_id, set_at, due_at in conn.execute(query).all():
        shift = now - max(paused_at, set_at)
        if shift.total_seconds() > 0:
            conn.execute(
                update(timers).where(timers.c.id == timer_id).values(due_at=due_at + shift)
            )
