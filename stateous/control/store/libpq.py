"""The hot statements on Postgres, run on libpq through psycopg's own parts, not its cursor.

psycopg's `Cursor.execute` costs about 80 µs of CPU per statement beyond libpq's own work, in
Python: a cursor and a transformer made per statement, the query parsed for its placeholders,
the prepared-statement bookkeeping, and a `Column` object per answered column. With a dozen
statements a token, that was most of the difference between `serve` on Postgres and on SQLite
(a third of `serve`'s CPU, measured with a CPU profiler under bench/e2e.py).

Here a statement's SQL is turned into `$1, $2, ...` once; its values are dumped by a
transformer kept per connection, which dumps and loads exactly as psycopg's cursor does (the
connection's own adapters, text in and text out); the statement is prepared on its second use
(its first runs unprepared, as psycopg's would), and its rows are loaded by the same
transformer. A transaction is begun as psycopg begins one (`BEGIN`, with the connection's
isolation level), and an error becomes psycopg's own exception class. The values are sent
without types, so the server types each from the statement: SQLAlchemy writes a cast on every
bound value (`%(t)s::VARCHAR`), and a multi-row INSERT takes its columns' types.

What this cannot do faithfully (a connection in pipeline mode) answers None, and the caller
runs the statement on the cursor. tests/unit/control/test_libpq.py checks that every kind of
value and statement answers here as on psycopg's cursor.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.generators import execute as communicate

__all__ = ["Answer", "run"]

#: (rows, column names, rows changed): what a statement answered.
Answer = tuple[list[tuple[Any, ...]], tuple[str, ...] | None, int]

#: The most statements one connection keeps prepared; past it, statements run unprepared.
PREPARED_MOST = 512

_PLACEHOLDER = re.compile(rb"%\((\w+)\)s|%s|%%")
_IDLE = pq.TransactionStatus.IDLE
_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_COMMAND_OK = pq.ExecStatus.COMMAND_OK


class _Session:
    """What one psycopg connection keeps: its transformer and its prepared statements."""

    __slots__ = ("prepared", "seen", "transformer")

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        # psycopg, once it has prepared a statement of its own, deallocates every prepared
        # statement of the session at a ROLLBACK (ours too): it prepares nothing on a
        # connection of ours (`postgres_connect_args` says so from the start).
        connection.prepare_threshold = None
        self.transformer = Transformer(connection)
        self.prepared: dict[bytes, bytes] = {}  # SQL -> the name it is prepared under
        self.seen: set[bytes] = set()  # SQL run once, unprepared


_sessions: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Session] = (
    weakref.WeakKeyDictionary()
)


@functools.lru_cache(maxsize=1024)
def _numbered(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """The SQL with `$n` placeholders, and the bound names in their order (none in the `%s`
    style, whose values come in order)."""
    names: list[str] = []
    count = 0

    def number(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match.group(0) == b"%%":
            return b"%"
        name = match.group(1)
        if name is None:
            count += 1
            return b"$%d" % count
        key = name.decode()
        if key not in names:
            names.append(key)
        return b"$%d" % (names.index(key) + 1)

    query = _PLACEHOLDER.sub(number, sql.encode())
    if names and count:
        raise ValueError("a statement mixes named and positional placeholders")
    return query, tuple(names)


def run(
    connection: psycopg.Connection[Any],
    sql: str,
    args: Sequence[Any] | Mapping[str, Any],
    named: bool = False,
) -> Answer | None:
    """Run one statement of psycopg's `pyformat` SQL with its values; None when it must run on
    the cursor instead. `named`: answer the names of the columns too. Raises psycopg's
    exception for an error the server answered."""
    if connection._pipeline is not None:
        return None
    query, order = _numbered(sql)
    if isinstance(args, Mapping):
        values: Sequence[Any] = [args[name] for name in order] if order else ()
    else:
        values = args
    session = _sessions.get(connection)
    if session is None:
        session = _sessions[connection] = _Session(connection)
    with connection.lock:
        return _send(connection, session, query, values, named)


def _send(
    connection: psycopg.Connection[Any],
    session: _Session,
    query: bytes,
    values: Sequence[Any],
    named: bool,
) -> Answer:
    pgconn = connection.pgconn
    if not connection.autocommit and pgconn.transaction_status == _IDLE:
        connection.wait(connection._start_query())  # BEGIN, as psycopg's cursor sends it
    transformer = session.transformer
    params = transformer.dump_sequence(values, [PyFormat.TEXT] * len(values))
    name = session.prepared.get(query)
    if name is None and query in session.seen and len(session.prepared) < PREPARED_MOST:
        name = b"_stateous_%d" % len(session.prepared)
        pgconn.send_prepare(name, query)
        _answer(connection, pgconn)
        session.prepared[query] = name
    if name is None:
        session.seen.add(query)
        pgconn.send_query_params(query, params)
    else:
        pgconn.send_query_prepared(name, params)
    result = _answer(connection, pgconn)
    if result.status != _TUPLES_OK:
        changed = result.command_tuples
        return [], None, -1 if changed is None else changed
    transformer.set_pgresult(result)
    rows: list[tuple[Any, ...]] = transformer.load_rows(0, result.ntuples, tuple)
    names = tuple((result.fname(i) or b"").decode() for i in range(result.nfields)) if named else ()
    return rows, names, result.ntuples


def _answer(connection: psycopg.Connection[Any], pgconn: pq.abc.PGconn) -> pq.abc.PGresult:
    """The statement's result, or psycopg's exception for the server's error."""
    result: pq.abc.PGresult = connection.wait(communicate(pgconn))[-1]
    if result.status not in (_TUPLES_OK, _COMMAND_OK):
        raise errors.error_from_result(result, encoding=connection.info.encoding)
    return result
