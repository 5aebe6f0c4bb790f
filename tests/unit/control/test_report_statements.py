"""The statements of a report, as the driver receives them: one change of the
token's row per report, and on Postgres four statements in all, for a move to the next state
as for an end (the family lock, the task, the leave with the next task, then the token's
change, its memory and the ledger rows)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store import libpq
from stateous.control.store.db import Store
from tests.support.rows import token_row

BOX = "box"


@contextmanager
def sent(conn: Connection) -> Iterator[list[str]]:
    """The SQL of each statement the driver runs meanwhile (SQLite: as SQLite traces them,
    without the statements of its triggers;
    Postgres: as psycopg's cursor and `store.libpq` receive them)."""
    dbapi: Any = conn.connection.dbapi_connection
    statements: list[str] = []
    if conn.dialect.name == "sqlite":

        def traced(sql: str) -> None:
            # Each statement a trigger runs (the counts of `stats_counts`) is traced with the
            # text of the statement that fired it, right after it.
            if not statements or statements[-1] != sql:
                statements.append(sql)

        dbapi.set_trace_callback(traced)
        try:
            yield statements
        finally:
            dbapi.set_trace_callback(None)
        return
    base = type(dbapi.cursor())

    class Recording(base):  # type: ignore[valid-type,misc]  # psycopg's cursor class, read above
        def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.append(str(query))
            return super().execute(query, *args, **kwargs)

        def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.append(str(query))
            return super().executemany(query, *args, **kwargs)

    run = libpq.run

    def recorded(connection: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        statements.append(sql)
        return run(connection, sql, *args, **kwargs)

    before, dbapi.cursor_factory = dbapi.cursor_factory, Recording
    libpq.run = recorded  # observed, not replaced
    try:
        yield statements
    finally:
        dbapi.cursor_factory = before
        libpq.run = run


def _report(store: Store, clock: FakeClock, config: EngineConfig, outcome: Outcome) -> list[str]:
    """Claim the next task, then report `outcome` on it; answer the report's statements."""
    with store.begin() as conn:
        grant = claim(conn, clock, config, BOX, ["draft", "review"], None)
    assert grant is not None
    with store.begin() as conn, sent(conn) as statements:
        report(conn, clock, config, grant["task"], outcome)
    return [s for s in statements if s not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT")]


def _with(text: str, statements: list[str]) -> list[str]:
    return [s for s in statements if text in " ".join(s.split())]


def test_each_report_changes_the_token_once(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, orders, "ORDER-1", {"title": "first order"})
    moved = _report(store, clock, orders, Outcome("event", "submitted", attempt=1, supervisor=BOX))
    review = Outcome("event", "reviewed", {"approved": True}, attempt=1, supervisor=BOX)
    ended = _report(store, clock, orders, review)
    with store.begin() as conn:
        row = token_row(conn, "ORDER-1")
    context = {"title": "first order", "verdict": {"approved": True}}
    assert row[1:5] == ("review", "completed", 1, context)
    assert len(_with("UPDATE tokens SET", moved)) == 1
    assert len(_with("UPDATE tokens SET", ended)) == 1  # context and status together
    assert len(_with("DELETE FROM memory", ended)) == 1
    if store.engine.dialect.name != "postgresql":
        return
    # Postgres: the lock, the task and its token, then one statement of each kind.
    assert len(moved) == len(ended) == 4
    leave, write = moved[2:]
    assert "UPDATE tasks" in leave and "INSERT INTO tasks" in leave and "UPDATE timers" in leave
    assert "UPDATE tokens" in write and "INSERT INTO ledger" in write
    write = ended[3]
    assert "UPDATE tokens" in write and "DELETE FROM memory" in write
    assert "INSERT INTO ledger" in write
