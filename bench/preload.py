"""Fill a database with `orders` tokens and their ledgers, fast, through the store's tables.

`preload`: completed tokens (SQLAlchemy Core bulk inserts in large transactions), each with the
14 rows a completed token has (docs/data.md). `write_shape`: the million tokens of
docs/performance.md (`million.Shape`), its rows inserted through the driver (SQLite:
`executemany` in transactions of 20,000 tokens; Postgres: `COPY`), with the database's own triggers in place, so what the triggers keep (the
counts of `GET /stats`) stays true.

The schema is made by the store's own migration first, and the graphs are recorded as serve
records them, so `stateous serve` accepts the database afterwards as one of its own.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import million
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stateous.control.engine.search import settle_keys  # noqa: E402
from stateous.control.served import record_served  # noqa: E402
from stateous.control.store import migrate  # noqa: E402
from stateous.control.store import tables as t  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.control.store.stats import fold_deltas  # noqa: E402
from stateous.model.graph import Graph  # noqa: E402

BATCH = 5000


def ledger_rows(token: str, draft: int, review: int, at: datetime) -> list[dict[str, Any]]:
    """The 14 ledger rows of one completed token."""
    a, b, c, d = (
        at,
        at + timedelta(milliseconds=5),
        at + timedelta(milliseconds=6),
        at + timedelta(milliseconds=8),
    )
    verdict = {"approved": True, "note": ""}
    kinds: list[tuple[datetime, str, dict[str, Any]]] = [
        (a, "started", {"context": {"title": "preloaded", "verdict": None}}),
        (a, "event_accepted", {"event": "__started__", "payload": None, "state": "__start__"}),
        (a, "entered", {"state": "draft", "visit": 1}),
        (a, "task_queued", {"task": draft, "state": "draft"}),
        (b, "task_claimed", {"task": draft, "supervisor": "preload", "attempt": 1}),
        (c, "event_accepted", {"event": "submitted", "payload": None, "state": "draft"}),
        (c, "task_done", {"task": draft}),
        (c, "entered", {"state": "review", "visit": 1}),
        (c, "task_queued", {"task": review, "state": "review"}),
        (c, "task_claimed", {"task": review, "supervisor": "preload", "attempt": 1}),
        (d, "context_changed", {"keys": ["verdict"]}),
        (d, "event_accepted", {"event": "reviewed", "payload": verdict, "state": "review"}),
        (d, "task_done", {"task": review}),
        (d, "completed", {}),
    ]
    return [
        {"token": token, "seq": n, "at": when, "kind": kind, "key": None, "data": data}
        for n, (when, kind, data) in enumerate(kinds, start=1)
    ]


def preload(db_url: str, count: int, prefix: str = "OLD") -> float:
    """Insert `count` completed tokens (ids `<prefix>-<n>`); answers the seconds it took."""
    began = time.perf_counter()
    store = Store(make_engine(db_url))
    try:
        with store.begin() as conn:
            migrate.upgrade(conn)
        start = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=30)
        for first in range(0, count, BATCH):
            tokens, tasks, ledger = [], [], []
            for n in range(first, min(count, first + BATCH)):
                token = f"{prefix}-{n}"
                at = start + timedelta(seconds=n)
                draft, review = 2 * n + 1, 2 * n + 2
                context = {"title": "preloaded", "verdict": {"approved": True, "note": ""}}
                tokens.append(
                    {"token": token, "state": "review", "status": "completed", "visit": 1,
                     "context": context, "entered_at": at, "parent": None, "workflow": None}
                )  # fmt: skip
                for task, state in ((draft, "draft"), (review, "review")):
                    tasks.append(
                        {"id": task, "token": token, "state": state, "visit": 1, "status": "done",
                         "attempt": 1, "claimed_by": "preload", "lease_until": None, "queued_at": at}
                    )  # fmt: skip
                ledger.extend(ledger_rows(token, draft, review, at))
            with store.begin() as conn:
                conn.execute(t.tokens.insert(), tokens)
                conn.execute(t.tasks.insert(), tasks)
                conn.execute(t.ledger.insert(), ledger)
        if store.engine.dialect.name == "postgresql":
            with store.begin() as conn:
                # The ids were given explicitly: move the sequence past them, as inserts would.
                conn.exec_driver_sql(
                    "SELECT setval(pg_get_serial_sequence('tasks', 'id'), (SELECT max(id) FROM tasks))"
                )
                conn.exec_driver_sql("ANALYZE")
        # No ANALYZE on SQLite: the store never runs it, and its statistics (every task `done`)
        # would make the planner scan all tasks for a claim (see docs/performance.md).
    finally:
        store.engine.dispose()
    return time.perf_counter() - began


#: Tokens a transaction of `write_shape`.
SHAPE_BATCH = 20_000


def sqlite_stamp(at: datetime) -> str:
    """A time as SQLAlchemy writes a `DateTime` column on SQLite."""
    return at.strftime("%Y-%m-%d %H:%M:%S.%f")


def write_shape(db_url: str, shape: million.Shape, current: Graph, other: Graph) -> float:
    """Write `shape`'s tokens into a new database at `db_url`; answers the seconds it took.

    First the schema (the store's migration) and the two versions, as `serve` records them
    (`other` a year earlier, then `current`, the one served), their search keys marked filled
    while no token is live; then the rows, batch by batch.
    """
    began = time.perf_counter()
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    store = Store(make_engine(db_url))
    try:
        with store.begin() as conn:
            migrate.upgrade(conn)
        for graph, at in ((other, now - timedelta(days=400)), (current, now - timedelta(days=399))):
            with store.begin() as conn:
                record_served(conn, graph, at)
                settle_keys(conn, graph, at)
    finally:
        store.engine.dispose()
    if db_url.startswith("sqlite"):
        builder = million.Builder(shape, current.structure, other.structure, now, sqlite_stamp)
        _write_sqlite(db_url.removeprefix("sqlite:///"), builder)
    else:
        builder = million.Builder(shape, current.structure, other.structure, now, lambda at: at)
        _write_postgres(db_url, builder)
    return time.perf_counter() - began


def columns_of(table: str) -> tuple[str, ...]:
    """The columns of `million.COLUMNS[table]` that the store's table has: a task's
    `waiting_since` (the last) only from migration 0014 on."""
    return tuple(c for c in million.COLUMNS[table] if c in getattr(t, table).c)


def fitted(table: str, rows: list[million.Row]) -> list[million.Row]:
    """The rows cut to `columns_of(table)` (only the last column can be missing)."""
    width = len(columns_of(table))
    return rows if width == len(million.COLUMNS[table]) else [row[:width] for row in rows]


def _insert_sql(table: str) -> str:
    columns = columns_of(table)
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {getattr(t, table).name} ({', '.join(columns)}) VALUES ({marks})"


def _write_sqlite(path: str, builder: million.Builder) -> None:
    """The rows through sqlite3's executemany, a transaction a batch. While loading, no
    journal and `synchronous = OFF` (each page written once, not to the WAL then the file): a
    crash only loses a preload half made, which is never used (see million_db.py); WAL again
    at the end, as the store leaves a database."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # 256 MiB: the indexes stay in memory
        statements = {table: _insert_sql(table) for table in million.COLUMNS}
        for batch in builder.batches(SHAPE_BATCH):
            conn.execute("BEGIN IMMEDIATE")
            for table, rows in batch.tables():
                if rows:
                    conn.executemany(statements[table], fitted(table, rows))
            conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()


def _write_postgres(db_url: str, builder: million.Builder) -> None:
    """The rows through `COPY`, a transaction a batch; then the id sequences moved past the
    ids given, and ANALYZE (as a database that has run for a while has statistics)."""
    conninfo = db_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo) as conn:
        for batch in builder.batches(SHAPE_BATCH):
            with conn.transaction(), conn.cursor() as cur:
                for table, rows in batch.tables():
                    if not rows:
                        continue
                    columns = ", ".join(columns_of(table))
                    with cur.copy(f"COPY {getattr(t, table).name} ({columns}) FROM STDIN") as copy:
                        for row in fitted(table, rows):
                            copy.write_row(row)
        with conn.transaction():
            for table in ("tasks", "timers"):
                conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
                )
    fold_all(db_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def fold_all(db_url: str) -> None:
    """Fold the triggers' deltas into the counts, as a holder does in the background
    (stateous/control/stats_folder.py): a database that has been served for a while holds
    few; a copy of the preload with its 1,200,000 deltas unfolded answered `/stats` in
    hundreds of ms until its `serve` had folded them."""
    store = Store(make_engine(db_url))
    try:
        while True:
            with store.begin() as conn:
                if fold_deltas(conn) == 0:
                    return
    finally:
        store.engine.dispose()
