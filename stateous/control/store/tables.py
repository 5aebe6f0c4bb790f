"""The tables of the control plane's database, on one MetaData."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    func,
    literal_column,
    text,
)
from sqlalchemy.sql.elements import ColumnElement

# Explicit names make migrations and compare_metadata stable across SQLite and Postgres.
NAMING_CONVENTION = {
    "ix": "%(table_name)s_%(column_0_N_name)s",
    "uq": "%(table_name)s_%(column_0_N_name)s_key",
    "ck": "%(table_name)s_%(constraint_name)s_check",
    "fk": "%(table_name)s_%(column_0_N_name)s_fkey",
    "pk": "%(table_name)s_pkey",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _partial_index(
    name: str, *columns: Any, where: Any, pg_where: Any = None, unique: bool = False
) -> Index:
    """An index of the rows meeting `where` only (Postgres: `pg_where`, if given, else the
    same), migration 0010."""
    return Index(
        name,
        *columns,
        unique=unique,
        sqlite_where=where,
        postgresql_where=where if pg_where is None else pg_where,
    )


# The database's own JSON type (text on SQLite, `json` on Postgres). Postgres
# `jsonb` would reorder object keys, and the order of context keys is part of the data.
JsonType = JSON(none_as_null=True)

# Task and timer ids are 64-bit everywhere; SQLite's INTEGER PRIMARY KEY is its rowid.
IdType = BigInteger().with_variant(Integer(), "sqlite")

tokens = Table(
    "tokens",
    metadata,
    Column("token", String(256), primary_key=True),
    Column("state", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("visit", Integer, nullable=False),
    Column("context", JsonType, nullable=False),
    Column("entered_at", DateTime(), nullable=False),
    Column("parent", String(256), nullable=True),
    Column("workflow", String(64), nullable=True),
    # The structure the token runs on (a child: its parent's). Null only in a
    # database that had no graph on record when migration 0011 ran, so no token then.
    Column("structure", String(80), nullable=True),
)
Index("tokens_folded", func.lower(tokens.c.token), unique=True)
# Most tokens have no parent: the index holds only children (migration 0010), so a token's
# start or move writes no entry of it. `parent = ?` implies the condition on both databases.
_HAS_PARENT = tokens.c.parent.is_not(None)
_partial_index("tokens_parent", tokens.c.parent, where=_HAS_PARENT)
# The listing orders by entered_at descending, then the id, optionally filtered by status: the
# indexes hold that order, so a listing walks them and never sorts (migration 0008).
Index("tokens_moved", tokens.c.entered_at.desc(), tokens.c.token)
Index("tokens_status", tokens.c.status, tokens.c.entered_at.desc(), tokens.c.token)
#: The condition of `tokens_structure`: live top tokens (`active` or `paused`).
TOKEN_IS_LIVE_TOP = and_(
    tokens.c.status.in_([literal_column("'active'"), literal_column("'paused'")]),
    tokens.c.parent.is_(None),
)
_LIVE_TOP_PG = text(
    "(((status)::text = ANY (ARRAY['active'::text, 'paused'::text])) AND (parent IS NULL))"
)
# The live top tokens by structure (migration 0011): `GET /workflow/versions` counts each
# structure's live tokens from it, at a million tokens as at ten.
_partial_index(
    "tokens_structure", tokens.c.structure, where=TOKEN_IS_LIVE_TOP, pg_where=_LIVE_TOP_PG
)

ledger = Table(
    "ledger",
    metadata,
    Column("token", String(256), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("at", DateTime(), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("key", String(256), nullable=True),
    Column("data", JsonType, nullable=False),
)
# Only rows with a key (null keys never collide, and no query looks one up): the ledger's other
# rows write no entry of it (migration 0010). `key = ?` implies the condition.
_HAS_KEY = ledger.c.key.is_not(None)
_partial_index("ledger_key", ledger.c.token, ledger.c.key, where=_HAS_KEY, unique=True)

tasks = Table(
    "tasks",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("token", String(256), nullable=False),
    Column("state", String(64), nullable=False),
    Column("visit", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("claimed_by", String(256), nullable=True),
    Column("lease_until", DateTime(), nullable=True),
    Column("queued_at", DateTime(), nullable=False),
    # The token's structure when the task was queued (beyond the original columns):
    # the queue index holds it before the state, so a claim of one version never walks the
    # queued tasks of another. Null in tasks that had ended before migration 0011.
    Column("structure", String(80), nullable=True),
)
#: The statuses of a task not yet ended.
OPEN_TASK_STATUSES = ("queued", "claimed", "waiting")


def _task_is_open() -> ColumnElement[bool]:
    # The statuses as literals, not bound values: a planner uses a partial index only for a
    # query whose condition implies the index's, and SQLite proves that only from the same
    # term written the same way (a bound value is unknown when it plans).
    return tasks.c.status.in_([literal_column(f"'{status}'") for status in OPEN_TASK_STATUSES])


#: The condition of `tasks_queue`: a query of open tasks by status adds it (`TASK_IS_OPEN`
#: AND `status = ...`) so that both databases walk the index.
TASK_IS_OPEN = _task_is_open()
# Postgres keeps an index's condition as it deparses it; written in that form, the condition
# stays the same through a dump and a restore (the IN list's form does not: its casts move).
_OPEN_AS_TEXT = ", ".join(f"'{status}'::text" for status in OPEN_TASK_STATUSES)
_TASK_IS_OPEN_PG = text(f"(status)::text = ANY (ARRAY[{_OPEN_AS_TEXT}])")
# Open tasks only (migration 0010), by structure (migration 0011): an ended task leaves the index instead of moving into a
# part that grows with every task ever run, so the claim's index stays as small as the queue.
_partial_index(
    "tasks_queue",
    tasks.c.status,
    tasks.c.structure,
    tasks.c.state,
    tasks.c.id,
    where=TASK_IS_OPEN,
    pg_where=_TASK_IS_OPEN_PG,
)
# Leaving a state closes the token's open tasks; the clock sweeps ended leases.
Index("tasks_token", tasks.c.token, tasks.c.status)
# Only leased tasks (an ended task's lease is null): `lease_until < ?` implies the condition.
_LEASED = tasks.c.lease_until.is_not(None)
_partial_index("tasks_lease", tasks.c.status, tasks.c.lease_until, where=_LEASED)

timers = Table(
    "timers",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("token", String(256), nullable=False),
    Column("state", String(64), nullable=False),
    Column("visit", Integer, nullable=False),
    Column("event", String(64), nullable=False),
    Column("payload", JsonType, nullable=True),
    Column("set_at", DateTime(), nullable=False),
    Column("due_at", DateTime(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("kind", String(16), nullable=False),
)
Index("timers_due", timers.c.status, timers.c.due_at)
Index("timers_token", timers.c.token, timers.c.status)

memory = Table(
    "memory",
    metadata,
    Column("token", String(256), primary_key=True),
    Column("state", String(64), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("value", JsonType, nullable=False),
)

claims = Table(
    "claims",
    metadata,
    Column("supervisor", String(256), primary_key=True),
    Column("request", String(64), nullable=False),
    Column("task_id", BigInteger, nullable=True),
    Column("attempt", Integer, nullable=True),
)

# The grants of a supervisor's last claim with `max` after the first (which the
# `claims` row holds), `position` 2, 3, ... in the order answered. A claim without `max`, or
# one that got at most one task, leaves none.
claim_grants = Table(
    "claim_grants",
    metadata,
    Column("supervisor", String(256), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("task_id", BigInteger, nullable=False),
    Column("attempt", Integer, nullable=False),
)

control_plane = Table(
    "control_plane",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("structure", String(80), nullable=True),
    Column("checksum", String(80), nullable=True),
    Column("serving", String(256), nullable=True),
    Column("since", DateTime(), nullable=True),
)

# The last beat of each supervisor; `stopped_at` is set by a graceful stop's beat.
supervisors = Table(
    "supervisors",
    metadata,
    Column("supervisor", String(256), primary_key=True),
    Column("host", String(256), nullable=False),
    Column("pid", BigInteger, nullable=False),
    Column("version", String(64), nullable=False),
    Column("states", JsonType, nullable=False),
    Column("slots", Integer, nullable=False),
    Column("running", JsonType, nullable=False),
    Column("started_at", DateTime(), nullable=False),
    Column("seen_at", DateTime(), nullable=False),
    Column("stopped_at", DateTime(), nullable=True),
    # The checksum a beat names; null for a supervisor that names none.
    Column("checksum", String(80), nullable=True),
)
Index("supervisors_seen", supervisors.c.seen_at)

# Every graph the database has served, by checksum.
workflow_versions = Table(
    "workflow_versions",
    metadata,
    Column("checksum", String(80), primary_key=True),
    Column("structure", String(80), nullable=False),
    Column("graph", Text, nullable=False),
    Column("first_served_at", DateTime(), nullable=False),
)
Index("workflow_versions_structure", workflow_versions.c.structure)

# One row per operator act (a ledger row with `by`), written in the same
# transaction as the ledger row, so `GET /audit` never scans the ledger.
audit = Table(
    "audit",
    metadata,
    Column("token", String(256), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("at", DateTime(), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("actor", String(64), nullable=True),
    Column("via", String(16), nullable=True),
    Column("reason", String(500), nullable=True),
    Column("bulk", BigInteger, nullable=True),
)
Index("audit_at", audit.c.at, audit.c.token, audit.c.seq)
# An actor's acts in `GET /audit`'s order (token and seq since migration 0014): a page of
# one actor's acts is a walk of its part, however few of the acts are theirs.
Index("audit_actor", audit.c.actor, audit.c.at, audit.c.token, audit.c.seq)

# A bulk job, and its matches frozen when it was made (`pending`, then `done` or
# `skipped` with the refusal's code, each in the transaction that acted on the token).
bulk_jobs = Table(
    "bulk_jobs",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("action", String(16), nullable=False),
    Column("filter", JsonType, nullable=False),
    Column("event", String(64), nullable=True),
    Column("payload", JsonType, nullable=True),
    Column("matched", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", DateTime(), nullable=False),
    Column("finished_at", DateTime(), nullable=True),
    Column("by", JsonType, nullable=True),
)
Index("bulk_jobs_status", bulk_jobs.c.status, bulk_jobs.c.id)

bulk_matches = Table(
    "bulk_matches",
    metadata,
    Column("job", BigInteger, primary_key=True, autoincrement=False),
    Column("token", String(256), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("code", String(64), nullable=True),
)
Index("bulk_matches_status", bulk_matches.c.job, bulk_matches.c.status, bulk_matches.c.token)

# Each control plane (holder or replica) writes its `host:pid:id`, its role and
# `seen_at` every 10 s; `GET /control-planes` lists the rows seen lately.
control_planes = Table(
    "control_planes",
    metadata,
    Column("name", String(256), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("started_at", DateTime(), nullable=False),
    Column("seen_at", DateTime(), nullable=False),
)
Index("control_planes_seen", control_planes.c.seen_at)

# The searchable context keys of top tokens, the JSON text of each value, written
# in the transaction of every context change, so `GET /tokens?context.KEY=` joins them.
token_keys = Table(
    "token_keys",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(256), primary_key=True),
    Column("token", String(128), primary_key=True),
)
Index("token_keys_token", token_keys.c.token)

# Which search keys are filled for the tokens of a structure: a key
# without its row is being backfilled (`409 search_not_ready`) and the bulk filter scans.
search_keys = Table(
    "search_keys",
    metadata,
    Column("structure", String(80), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("filled_at", DateTime(), nullable=False),
)

# A schedule (tokens started on a calendar) and where its clock is: `next_at` the first slot not yet started or
# skipped (naive UTC), `last_at`/`last_token` the slot last started and its token. `id` is the
# token id pattern. The clock's step changes `next_at` in the transaction of the slot's start.
schedules = Table(
    "schedules",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("cron", String(256), nullable=False),
    Column("tz", String(64), nullable=False),
    Column("context", JsonType, nullable=True),
    Column("id", String(128), nullable=False),
    Column("catch_up", String(8), nullable=False),
    Column("paused", Boolean(), nullable=False),
    Column("next_at", DateTime(), nullable=False),
    Column("last_at", DateTime(), nullable=True),
    Column("last_token", String(128), nullable=True),
    Column("created_at", DateTime(), nullable=False),
    # The last slot whose token did not start (its time and why), and how many slots failed
    # since the schedule was made: kept, so `GET /metrics` reads a count, not the log.
    Column("last_error", Text, nullable=True),
    Column("last_error_at", DateTime(), nullable=True),
    Column("failures", BigInteger, nullable=False, server_default=text("0")),
)
Index("schedules_next_at", schedules.c.next_at)

# The counts of `GET /stats`, kept by the database's own triggers (migration 0013)
# in the transaction of every write, so /stats never scans the tokens. `kind` is `token` (every
# token by structure, workflow, state and status) or `task` (open tasks by the task's
# structure, the token's workflow, the task's state and status); a null structure or workflow
# (a top token's) is ''. A row may hold 0 once its last counted row moved on.
stats_counts = Table(
    "stats_counts",
    metadata,
    Column("kind", String(8), primary_key=True),
    Column("structure", String(80), primary_key=True),
    Column("workflow", String(64), primary_key=True),
    Column("state", String(64), primary_key=True),
    Column("status", String(16), primary_key=True),
    Column("n", BigInteger, nullable=False),
)

# Postgres only (SQLite's triggers add to `stats_counts` itself, its one writer never waits):
# the triggers append +1/-1 rows here instead of updating shared count rows, which would make
# concurrent writers wait for each other and deadlock. /stats reads the counts plus these rows;
# the holder folds them into `stats_counts` in the background (stateous.control.stats_folder).
stats_deltas = Table(
    "stats_deltas",
    metadata,
    Column("kind", String(8), nullable=False),
    Column("structure", String(80), nullable=False),
    Column("workflow", String(64), nullable=False),
    Column("state", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("n", Integer, nullable=False),
)

# A token's W3C `traceparent` (its trace, and the span its later spans are children
# of), written with its start only when `serve` traces or the start came with the header: the
# tokens table and the hot path stay as they were. Pruned with the token.
token_traces = Table(
    "token_traces",
    metadata,
    Column("token", String(256), primary_key=True),
    Column("traceparent", String(64), nullable=False),
)

# The listing's pages (migration 0014). `GET /tokens?state=` walks its state's part
# in the listing's order, as `tokens_status` does for a status: a state few tokens are in is
# found without a scan of the others.
Index("tokens_state", tokens.c.state, tokens.c.entered_at.desc(), tokens.c.token)
# When a waiting task began to wait (migration 0014; null for a task never waiting): set by the
# report that makes it wait, in the transaction of its `task_waiting` row and with its time, so
# `GET /inbox` walks `tasks_waiting` in its order instead of reading the ledger of every
# waiting task and sorting them.
tasks.append_column(Column("waiting_since", DateTime(), nullable=True))
_IS_WAITING = tasks.c.status == literal_column("'waiting'")  # a literal: see `_task_is_open`
_partial_index(
    "tasks_waiting",
    tasks.c.waiting_since,
    tasks.c.id,
    where=_IS_WAITING,
    pg_where=text("(status)::text = 'waiting'::text"),
)
#: The condition of `tasks_waiting`, which a query of waiting tasks states to walk it.
TASK_IS_WAITING = _IS_WAITING
# The ids in code point order whatever the collation, for the probe of an id prefix
# (`few.py`): Postgres compares with the pattern operators, which its primary key (in the
# database's collation) does not serve. SQLite's primary key already orders as bytes, so there
# the index holds no row (its condition is false) and costs no write.
Index(
    "tokens_id_order",
    tokens.c.token,
    postgresql_ops={"token": "text_pattern_ops"},
    sqlite_where=text("0"),
)

#: Every table name Stateous uses, for the start-up checks of the schema.
TABLE_NAMES: tuple[str, ...] = (
    "audit",
    "bulk_jobs",
    "bulk_matches",
    "claim_grants",
    "claims",
    "control_plane",
    "control_planes",
    "ledger",
    "memory",
    "schedules",
    "search_keys",
    "stats_counts",
    "stats_deltas",
    "supervisors",
    "tasks",
    "timers",
    "token_keys",
    "token_traces",
    "tokens",
    "workflow_versions",
)
