"""The engine's hot statements, run on the driver's cursor.

SQLAlchemy's `Connection.execute` costs about 20 µs of CPU per statement beyond the driver's
own work (an execution context, parameter processing, events, a result object), which was
about 40% of `serve`'s Python time under load: a token runs some forty statements. Here a
statement is compiled once per dialect (and, for an INSERT or UPDATE, per set of parameter
names), exactly as SQLAlchemy compiles it, and then run on the DBAPI cursor with the column
types' own bind and result processors. What the database receives is the SQL and the values
SQLAlchemy would send; a driver's error is handed to SQLAlchemy, which wraps it (and
invalidates a lost connection) as if it had run the statement itself.

A statement this cannot run faithfully (an `expanding` IN parameter, which needs its values
at execution) goes through `Connection.execute`, and so does an `executemany`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, Table, insert
from sqlalchemy.dialects.sqlite import DATETIME as SQLITE_DATETIME
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import UpdateBase

if TYPE_CHECKING:
    from stateous.control.store.libpq import Answer

__all__ = ["AnyRow", "Rows", "execute", "execute_begin", "execute_sql", "insert_values"]

Processor = Callable[[Any], Any]


class AnyRow(Protocol):
    """A row of SQLAlchemy's or of this module: its values by column key."""

    @property
    def _mapping(self) -> Mapping[Any, Any]: ...


class Row(tuple[Any, ...]):
    """A result row: a tuple, with `_mapping` by column key as SQLAlchemy's rows have."""

    _keys: tuple[str, ...] = ()

    @property
    def _mapping(self) -> dict[str, Any]:
        return dict(zip(self._keys, self, strict=True))


class Rows:
    """The rows a statement answered (all fetched), and how many rows it changed."""

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)

    def all(self) -> list[Row]:
        """Every row."""
        return self._rows

    def first(self) -> Row | None:
        """The first row, or None."""
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        """The first column of the only row."""
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._rows[0][0]

    def scalars(self) -> list[Any]:
        """The first column of every row."""
        return [row[0] for row in self._rows]


@dataclass(frozen=True)
class _Plan:
    """A statement compiled for one dialect: its SQL, how to bind, how to read its rows."""

    sql: str
    names: tuple[str, ...] | None  # the bind names in order (positional drivers), else None
    binds: Callable[[Mapping[str, Any]], dict[str, Any]]  # every bind's value by name
    processors: tuple[tuple[str, Processor], ...]
    constants: dict[str, Any]  # the values of a literal IN list, one bind per value
    lists: tuple[str, ...]  # the names of those lists, which the SQL no longer holds
    row_type: type[Row]  # the rows' keys, when the statement answers rows
    results: tuple[Processor | None, ...]


# Plans by (statement id, dialect name, parameter names of a DML statement). The statement
# itself is kept beside its plan, so its id cannot be reused while the plan is cached.
_plans: dict[tuple[int, str, tuple[str, ...]], tuple[ClauseElement, _Plan | None]] = {}
_plans_lock = threading.Lock()
_PLANS_MOST = 2048


def execute(
    conn: Connection, statement: ClauseElement, params: Mapping[str, Any] | None = None
) -> Rows:
    """Run one statement with one set of parameters, as `conn.execute` would."""
    values = params or {}
    plan = _plan(conn.dialect, statement, values)
    if plan is None:
        result = conn.execute(statement, dict(values))  # type: ignore[call-overload]
        if not result.returns_rows:
            return Rows([], result.rowcount)
        make = _row_type(tuple(result.keys()))
        return Rows([make(r) for r in result], result.rowcount)
    bound = plan.binds(values)
    if plan.lists:
        for name in plan.lists:
            del bound[name]
        bound.update(plan.constants)
    for name, process in plan.processors:
        bound[name] = process(bound[name])
    args: Sequence[Any] | dict[str, Any] = (
        bound if plan.names is None else [bound[name] for name in plan.names]
    )
    return _run(conn, plan, args)


def execute_sql(conn: Connection, sql: str) -> None:
    """Run SQL without parameters or rows (a SAVEPOINT, say) on the driver's cursor."""
    _driver_sql(conn, sql, _cursor(conn))


def execute_begin(conn: Connection, sql: str) -> None:
    """Run the SQL that begins a transaction (`BEGIN IMMEDIATE`) on the driver's cursor, from
    SQLAlchemy's `begin` event, as `conn.exec_driver_sql` would (which costs about 30 µs)."""
    _driver_sql(conn, sql, conn.connection.dbapi_connection.cursor())  # type: ignore[union-attr]


def _driver_sql(conn: Connection, sql: str, cursor: Any) -> None:
    try:
        cursor.execute(sql)
    except Exception as exc:
        conn._handle_dbapi_exception(exc, sql, {}, cursor, None)
    finally:
        cursor.close()


def _cursor(conn: Connection) -> Any:
    """A cursor of the driver's connection, inside a transaction as `conn.execute` would be
    (SQLAlchemy begins one on a connection's first statement; SQLite's driver here does not)."""
    if not conn.in_transaction():
        conn.begin()
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]


def _run(conn: Connection, plan: _Plan, args: Sequence[Any] | dict[str, Any]) -> Rows:
    make, processors = plan.row_type, plan.results
    named = not make._keys
    answered = _on_libpq(conn, plan.sql, args, named)
    if answered is None:
        answered = _on_cursor(conn, plan.sql, args, named)
    fetched, names, rowcount = answered
    if names is None:
        return Rows([], rowcount)
    if not make._keys:  # plain SQL: the driver's values, keyed by the names it gives
        make = _row_type(names)
        return Rows([make(row) for row in fetched], len(fetched))
    if not any(processors):
        return Rows([make(row) for row in fetched], len(fetched))
    rows = [
        make(
            value if process is None else process(value)
            for process, value in zip(processors, row, strict=True)
        )
        for row in fetched
    ]
    return Rows(rows, len(rows))


def _on_cursor(
    conn: Connection, sql: str, args: Sequence[Any] | dict[str, Any], named: bool
) -> Answer:
    """Run a statement on a DBAPI cursor: its rows, column names (None: it answers no rows;
    empty unless `named`) and the count of rows it changed."""
    cursor = _cursor(conn)
    try:
        cursor.execute(sql, args)
        described = cursor.description
        if described is None:
            return [], None, cursor.rowcount
        names = tuple(column[0] for column in described) if named else ()
        return cursor.fetchall(), names, cursor.rowcount
    except Exception as exc:
        # SQLAlchemy wraps the driver's error in its own class, and drops a lost connection.
        conn._handle_dbapi_exception(exc, sql, args, cursor, None)
        raise  # not reached: SQLAlchemy raised its own
    finally:
        cursor.close()


def _on_libpq(
    conn: Connection, sql: str, args: Sequence[Any] | dict[str, Any], named: bool
) -> Answer | None:
    """Run a statement on libpq when the driver is psycopg (stateous.control.store.libpq);
    None when it is not, or when libpq cannot run it."""
    if conn.dialect.driver != "psycopg":
        return None
    # Imported here: a control plane on SQLite never imports psycopg.
    from stateous.control.store import libpq

    if not conn.in_transaction():
        conn.begin()
    try:
        return libpq.run(conn.connection.dbapi_connection, sql, args, named)  # type: ignore[arg-type]
    except Exception as exc:
        conn._handle_dbapi_exception(exc, sql, args, None, None)
        raise  # not reached: SQLAlchemy raised its own


def insert_values(
    conn: Connection,
    table: Table,
    columns: tuple[str, ...],
    rows: Sequence[Mapping[str, Any]],
    returning: tuple[str, ...] = (),
) -> Rows:
    """Insert `rows` (each with a value for every column of `columns`) in one statement,
    `INSERT INTO <table> (...) VALUES (...), (...) [RETURNING ...]`, on the driver's cursor.

    The values are bound by position, each through its column type's bind processor, with no
    parameter names to build and match: for a start's four ledger rows that is a third of
    the statement's CPU. A driver that binds neither `?` nor `%s` gets SQLAlchemy's own
    multi-row INSERT.
    """
    shape = _values_shape(conn.dialect, table, columns, len(rows), returning)
    if shape is None:
        statement = insert(table).values([{c: row[c] for c in columns} for row in rows])
        if returning:
            statement = statement.returning(*(table.c[c] for c in returning))
        return execute(conn, statement)
    sql, processors = shape
    args = [
        value if process is None else process(value)
        for row in rows
        for process, value in zip(processors, [row[c] for c in columns], strict=True)
    ]
    return _run(conn, _values_plan(sql, returning), args)


@functools.lru_cache(maxsize=256)
def _values_shape(
    dialect: Dialect, table: Table, columns: tuple[str, ...], count: int, returning: tuple[str, ...]
) -> tuple[str, tuple[Processor | None, ...]] | None:
    """The SQL of `insert_values` and each column's bind processor (None: a dialect binding
    neither by `?` nor by `%s`)."""
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(dialect.paramstyle)
    if mark is None:
        return None
    row = "(" + ", ".join([mark] * len(columns)) + ")"
    names = ", ".join(f'"{name}"' for name in columns)
    sql = f"INSERT INTO {table.name} ({names}) VALUES " + ", ".join([row] * count)
    if returning:
        sql += " RETURNING " + ", ".join(f'"{name}"' for name in returning)
    return sql, tuple(_bind_processor(dialect, table.c[name].type) for name in columns)


@functools.lru_cache(maxsize=256)
def _values_plan(sql: str, returning: tuple[str, ...]) -> _Plan:
    """A plan that `_run` can run: the SQL, and its rows keyed by `returning` (no result
    processors: the columns answered are ids and text)."""
    return _Plan(
        sql=sql, names=None, binds=dict, processors=(), constants={}, lists=(),
        row_type=_row_type(returning), results=(None,) * len(returning),
    )  # fmt: skip


def _bind_processor(dialect: Dialect, kind: Any) -> Processor | None:
    """A column type's bind processor for `dialect`; SQLite's DATETIME's is replaced by one
    that writes the same text about four times faster."""
    impl = kind.dialect_impl(dialect)
    process: Processor | None = impl.bind_processor(dialect)
    if isinstance(impl, SQLITE_DATETIME) and impl._storage_format == _SQLITE_FORMAT:
        return _sqlite_datetime(process)
    return process


#: SQLAlchemy's default storage format of SQLite's DATETIME: `isoformat(" ", "microseconds")`
#: of a datetime without a time zone, which ignores any time zone.
_SQLITE_FORMAT = SQLITE_DATETIME()._storage_format  # type: ignore[no-untyped-call]


def _sqlite_datetime(slow: Processor | None) -> Processor:
    def process(value: Any) -> Any:
        if type(value) is datetime and value.tzinfo is None:
            return value.isoformat(" ", "microseconds")
        return value if slow is None else slow(value)  # aware, a date, None, a string: as before

    return process


@functools.lru_cache(maxsize=512)
def _row_type(keys: tuple[str, ...]) -> type[Row]:
    """The class of rows with these column keys."""
    return type("Row", (Row,), {"_keys": keys})


def _plan(dialect: Dialect, statement: ClauseElement, params: Mapping[str, Any]) -> _Plan | None:
    dml = isinstance(statement, UpdateBase)
    names = tuple(sorted(params)) if dml else ()
    key = (id(statement), dialect.name, names)
    found = _plans.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    plan = _compile(dialect, statement, params, dml)
    with _plans_lock:
        if len(_plans) >= _PLANS_MOST:
            _plans.clear()
        _plans[key] = (statement, plan)
    return plan


def _compile(
    dialect: Dialect, statement: ClauseElement, params: Mapping[str, Any], dml: bool
) -> _Plan | None:
    compiled: Any = statement.compile(dialect=dialect, column_keys=list(params) if dml else None)
    binds = compiled.binds
    if any(bind.literal_execute for bind in binds.values()):
        return None  # its SQL holds the values: SQLAlchemy renders it at each execution
    sql, names, constants = compiled.string, compiled.positiontup, {}
    expanding = {name for bind, name in compiled.bind_names.items() if bind.expanding}
    if expanding:
        if expanding & set(params):
            return None  # an IN list of the caller's values: its SQL depends on how many
        # A literal IN list: expanded once, its values bound as constants.
        state = compiled.construct_expanded_state(dict(params))
        sql, names = state.statement, state.positiontup
        fixed = set(compiled.construct_params(dict(params))) - expanding
        constants = {k: v for k, v in state.parameters.items() if k not in fixed}
    processors = []
    for bind, name in compiled.bind_names.items():
        process = _bind_processor(dialect, bind.type)
        if process is None:
            continue
        if name in expanding:
            prefix = name + "_"
            constants = {k: process(v) if k.startswith(prefix) else v for k, v in constants.items()}
        else:
            processors.append((name, process))
    columns = _result_columns(statement)
    return _Plan(
        sql=sql,
        names=tuple(names) if names is not None else None,
        binds=compiled.construct_params,
        processors=tuple(processors),
        constants=constants,
        lists=tuple(expanding),
        row_type=_row_type(tuple(key for key, _ in columns)),
        results=tuple(
            kind.dialect_impl(dialect).result_processor(dialect, None) for _, kind in columns
        ),
    )


def _result_columns(statement: ClauseElement) -> list[tuple[str, Any]]:
    """(key, type) of each column the statement answers (none for a statement of plain SQL,
    whose rows keep the driver's values)."""
    if isinstance(statement, UpdateBase) and not statement._returning:
        return []
    exported = getattr(statement, "exported_columns", None)
    return [] if exported is None else [(c.key, c.type) for c in exported]
