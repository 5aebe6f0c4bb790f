"""The hot statements run on the driver's cursor answer exactly what SQLAlchemy answers."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, DateTime, insert, select, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from stateous.control.errors import DatabaseBusy
from stateous.control.store import direct
from stateous.control.store import ledger as ledger_q
from stateous.control.store import memory as memory_q
from stateous.control.store import tasks as tasks_q
from stateous.control.store import tokens as tokens_q
from stateous.control.store.db import Store, make_engine
from stateous.control.store.ledger import insert_ledger, last_seq
from stateous.control.store.memory import set_memory
from stateous.control.store.records import TokenRecord
from stateous.control.store.tables import ledger, tasks
from stateous.control.store.tasks import close_open_tasks, get_task, insert_task, update_task
from stateous.control.store.tokens import get_token, insert_token

AT = datetime(2026, 10, 16, 20, 48, 44, 845389)


def _seed(conn: Connection) -> int:
    record = TokenRecord("T-1", "draft", "active", 1, {"title": "x", "n": [1, 2]}, AT, None, None)
    insert_token(conn, record)
    rows = [
        {"token": "T-1", "seq": 1, "at": AT, "kind": "event_accepted", "key": None, "data": {}},
        {"token": "T-1", "seq": 2, "at": AT, "kind": "entered", "key": "k", "data": {"a": [1]}},
    ]
    insert_ledger(conn, rows)
    set_memory(conn, "T-1", "draft", "plan", {"steps": [1, 2]})
    return insert_task(conn, "T-1", "draft", 1, AT, "sha256:s")


def _both(conn: Connection, statement: Any, params: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    theirs = [(tuple(r), dict(r._mapping)) for r in conn.execute(statement, params)]
    ours = [(tuple(r), dict(r._mapping)) for r in direct.execute(conn, statement, params)]
    return theirs, ours


@pytest.mark.parametrize(
    ("module", "name", "params"),
    [
        (tokens_q, "_GET_TOKEN", {"t": "T-1"}),
        (tokens_q, "_ANY_CASE", {"t": "t-1"}),
        (ledger_q, "_LAST_OF_KIND", {"t": "T-1", "kind": "entered"}),
        (ledger_q, "_LEDGER_IN_ORDER", {"t": "T-1"}),
        # an expanding IN: SQLAlchemy's
        (ledger_q, "_LEDGER_OF_KINDS", {"t": "T-1", "kinds": ["entered"]}),
        (tasks_q, "_OPEN_TASKS", {"t": "T-1"}),  # a literal IN list
        (memory_q, "_MEMORY_OF", {"t": "T-1", "s": "draft"}),
    ],
)
def test_a_read_answers_the_same_rows(
    store: Store, module: Any, name: str, params: dict[str, Any]
) -> None:
    with store.begin() as conn:
        _seed(conn)
        theirs, ours = _both(conn, getattr(module, name), params)
    assert ours == theirs
    assert ours  # every case reads at least one row


def test_a_join_with_labels_and_a_subquery_answers_the_same_row(store: Store) -> None:
    with store.begin() as conn:
        task = _seed(conn)
        theirs, ours = _both(conn, tasks_q._TASK_TOKEN_SEQ, {"id": task})
    assert ours == theirs
    assert ours[0][1]["ledger_last_seq"] == 2
    assert ours[0][1]["token_context"] == {"title": "x", "n": [1, 2]}
    assert ours[0][1]["queued_at"] == AT


def test_an_update_with_returning_and_literal_lists_changes_what_sqlalchemy_would(
    store: Store,
) -> None:
    with store.begin() as conn:
        task = _seed(conn)
        update_task(conn, task, status="claimed", attempt=1, claimed_by="box", lease_until=AT)
        assert close_open_tasks(conn, "T-1", done=True) == [(task, "done")]
        row = get_task(conn, task)
    assert row is not None
    assert (row.status, row.attempt, row.claimed_by, row.lease_until) == ("done", 1, "box", None)


def test_an_update_answers_its_rowcount(store: Store) -> None:
    with store.begin() as conn:
        _seed(conn)
        changed = direct.execute(conn, tokens_q._UPDATE_TOKEN, {"token_id": "T-1", "visit": 2})
        missing = direct.execute(conn, tokens_q._UPDATE_TOKEN, {"token_id": "T-9", "visit": 2})
        token = get_token(conn, "T-1")
    assert (changed.rowcount, missing.rowcount) == (1, 0)
    assert token is not None and token.visit == 2


def test_plain_sql_answers_rows_keyed_by_the_drivers_names(store: Store) -> None:
    with store.begin() as conn:
        _seed(conn)
        rows = direct.execute(conn, text("SELECT token AS name, visit FROM tokens")).all()
    assert [(tuple(r), dict(r._mapping)) for r in rows] == [
        (("T-1", 1), {"name": "T-1", "visit": 1})
    ]


def test_a_drivers_error_is_sqlalchemys_error_and_loses_the_statement_alone(store: Store) -> None:
    with store.begin() as conn:
        _seed(conn)
        direct.execute_sql(conn, "SAVEPOINT one")
        with pytest.raises(IntegrityError):
            insert_ledger(
                conn,
                [{"token": "T-1", "seq": 1, "at": AT, "kind": "x", "key": None, "data": {}}],
            )
        direct.execute_sql(conn, "ROLLBACK TO SAVEPOINT one")
        assert last_seq(conn, "T-1") == 2


def test_a_statement_on_a_connection_without_a_transaction_begins_one(store: Store) -> None:
    """As `conn.execute` does: the write is undone with the connection's rollback."""
    with store.engine.connect() as conn:
        direct.execute(conn, tokens_q._INSERT_TOKEN, _token_row("T-9"))
        assert conn.in_transaction()
        conn.rollback()
    with store.begin() as conn:
        assert get_token(conn, "T-9") is None


def _token_row(token: str) -> dict[str, Any]:
    record = TokenRecord(token, "draft", "active", 1, {}, AT, None, None)
    return dict(record.__dict__)


def test_insert_values_writes_what_sqlalchemys_insert_writes(store: Store) -> None:
    """The same stored values (SQLite: the same text), in one statement, keyed row by row."""
    rows = [
        {"token": token, "seq": 1, "at": at, "kind": "started", "key": key, "data": data}
        for token, at, key, data in [
            ("A-1", AT, None, {"a": [1, "é"]}),
            ("A-2", AT.replace(microsecond=0), "k", "text"),
            ("A-3", AT.replace(tzinfo=UTC), None, {}),
        ]
    ]
    ours = [dict(row, token=str(row["token"]).replace("A", "O")) for row in rows]
    stored = text("SELECT token, seq, CAST(at AS TEXT), kind, key, data FROM ledger ORDER BY token")
    with store.begin() as conn:
        conn.execute(insert(ledger), rows)
        direct.insert_values(conn, ledger, ledger_q.LEDGER_COLUMNS, ours)
        found = [tuple(r) for r in conn.execute(stored)]
    theirs = [r for r in found if r[0].startswith("A")]
    assert [r[1:] for r in found if r[0].startswith("O")] == [r[1:] for r in theirs]
    assert len(theirs) == 3


def test_insert_values_answers_the_columns_returned(store: Store) -> None:
    rows = [
        {"token": token, "state": "draft", "visit": 1, "status": "queued", "attempt": 0,
         "queued_at": AT}
        for token in ("R-1", "R-2", "R-3")
    ]  # fmt: skip
    with store.begin() as conn:
        answered = direct.insert_values(conn, tasks, tuple(rows[0]), rows, ("token", "id"))
        ids = {r.token: r.id for r in conn.execute(select(tasks.c.token, tasks.c.id))}
    assert {tuple(r) for r in answered} == set(ids.items())
    assert all(r._mapping.keys() == {"token", "id"} for r in answered)


@pytest.mark.parametrize(
    "value",
    [
        AT,
        AT.replace(microsecond=0),
        datetime(9, 1, 2, 3, 4, 5, 6),
        AT.replace(tzinfo=UTC),  # aware: SQLAlchemy's own processor (the zone is ignored)
        AT.date(),
        None,
    ],
)
def test_sqlite_datetimes_are_written_as_sqlalchemy_writes_them(value: Any) -> None:
    dialect = sqlite.dialect()
    theirs = DateTime().dialect_impl(dialect).bind_processor(dialect)
    ours = direct._bind_processor(dialect, DateTime())
    assert theirs is not None and ours is not None
    assert ours(value) == theirs(value)


def test_begin_against_another_writer_is_database_busy(migrated_db_url: str) -> None:
    """`BEGIN IMMEDIATE` (run on the driver's cursor) waits the busy timeout, then is refused as
    SQLAlchemy's error, which the store answers as `database_busy`; nothing is written."""
    if not migrated_db_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock; Postgres has no BEGIN IMMEDIATE")
    store = Store(make_engine(migrated_db_url, busy_timeout=0.2))
    other = sqlite3.connect(make_url(migrated_db_url).database or "", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(DatabaseBusy), store.begin() as conn:
            insert_token(conn, TokenRecord("B-1", "draft", "active", 1, {}, AT, None, None))
        other.execute("ROLLBACK")
        with store.begin() as conn:
            assert get_token(conn, "B-1") is None
    finally:
        other.close()
        store.engine.dispose()
