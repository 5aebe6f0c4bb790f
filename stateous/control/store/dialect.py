"""What differs between SQLite and Postgres for the store: one `Dialect` object per database.

Every difference of SQL or of locking between the two databases is answered here: no query
module asks which database it runs on, it asks `dialect_of(conn)` whether writers run side by
side (`locks`), whether writes can share a statement (`fuses_writes`), and for the clauses
written differently (a list in one bound value, `FOR UPDATE`, an upsert, a hint to SQLite's
planner). The statements stay in their modules, built once per dialect (`per_dialect`). What
the processes around the store do differently (the lanes, the listener, the checkpoints, the
hold) is decided from `Store.sqlite`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    ColumnElement,
    Connection,
    Select,
    Table,
    and_,
    any_,
    bindparam,
    column,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY, array

__all__ = ["DIALECTS", "Dialect", "PostgresDialect", "SqliteDialect", "dialect_of", "per_dialect"]

#: An upsert's INSERT: both databases' have `on_conflict_do_update` and `excluded`.
Upsert = postgresql.Insert | sqlite.Insert


class Dialect(ABC):
    """One database's ways: what it locks, what it fuses, and its clauses that differ."""

    #: SQLAlchemy's name of the dialect.
    name: ClassVar[str]
    #: Writers run side by side, so a transaction locks what it reads before changing it (a
    #: family's advisory lock, `FOR UPDATE`). SQLite has one writer at a time, so what a
    #: transaction read stays true until it commits: it locks nothing.
    locks: ClassVar[bool]
    #: Writes to different rows go into one statement, each a data-modifying WITH of the last
    #: (one round trip instead of several). SQLite has no data-modifying WITH, and its
    #: statements cost no round trip.
    fuses_writes: ClassVar[bool]

    @abstractmethod
    def in_list(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        """`expr` is one of the list of values bound as `name`, expanded at each execution
        where needed (through `Connection.execute`, not `direct`)."""

    @abstractmethod
    def in_one_value(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        """`expr` is one of the list bound as ONE value `name`: the statement's text is the
        same for any number of values (so `direct` runs it, and Postgres plans it once)."""

    @abstractmethod
    def for_update(self, query: Select[Any]) -> Select[Any]:
        """`query`, locking the rows it reads where writers run side by side."""

    @abstractmethod
    def insert(self, table: Table) -> Upsert:
        """The dialect's own INSERT of `table`, which can say what to do on a conflict."""

    @abstractmethod
    def rare(self, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        """`condition`, marked as true of few rows where the planner needs telling."""

    @abstractmethod
    def serial(self, conn: Connection) -> None:
        """Plan the rest of the transaction without parallel workers: for a read that stops
        after a page, which a planner that expects a long scan would start workers for."""

    @abstractmethod
    def leading_equal(self, expr: ColumnElement[Any], value: Any) -> Any:
        """`expr = value`, for an index whose first column is `expr` and whose next ones give
        the order by (`expr`, ...): written so that the planner keeps `expr` in the order and
        walks that index, not another one of the rest of the order."""

    @abstractmethod
    def in_code_order(self, expr: ColumnElement[Any], low: str, high: str | None) -> Any:
        """`low <= expr < high` (no upper end when `high` is None) comparing texts by their
        code points, whatever the database's collation, in a form an index of `expr` serves."""


class SqliteDialect(Dialect):
    """SQLite: one writer at a time, a list as a JSON array, a hint to its planner."""

    name = "sqlite"
    locks = False
    fuses_writes = False

    def in_list(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        return expr.in_(bindparam(name, expanding=True))

    def in_one_value(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        # A JSON array, walked by `json_each`.
        values = func.json_each(bindparam(name, type_=JSON)).table_valued("value")
        return expr.in_(select(column("value")).select_from(values))

    def for_update(self, query: Select[Any]) -> Select[Any]:
        return query

    def insert(self, table: Table) -> Upsert:
        return sqlite.insert(table)

    def rare(self, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        # Its statistics know how many values a column holds, not that few rows hold some of
        # them (few tokens are live): without this it would scan every ended token.
        return func.likelihood(condition, literal_column("0.01"))

    def serial(self, conn: Connection) -> None:
        pass  # SQLite runs every statement in the calling thread

    def leading_equal(self, expr: ColumnElement[Any], value: Any) -> Any:
        return expr == value

    def in_code_order(self, expr: ColumnElement[Any], low: str, high: str | None) -> Any:
        # BINARY, SQLite's collation of every Stateous column, compares UTF-8 bytes.
        return and_(expr >= low, expr < high) if high is not None else expr >= low


class PostgresDialect(Dialect):
    """Postgres: writers side by side (advisory locks, `FOR UPDATE`), lists as arrays, and
    data-modifying WITHs."""

    name = "postgresql"
    locks = True
    fuses_writes = True

    def in_list(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        # An array (`= ANY`): the statement's text is the same for any number of values, and
        # Postgres plans it once per connection (`store.libpq` prepares it at its second run).
        return self.in_one_value(expr, name, item)

    def in_one_value(self, expr: ColumnElement[Any], name: str, item: Any) -> Any:
        return expr == any_(bindparam(name, type_=ARRAY(item)))

    def for_update(self, query: Select[Any]) -> Select[Any]:
        return query.with_for_update()

    def insert(self, table: Table) -> Upsert:
        return postgresql.insert(table)

    def rare(self, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        return condition

    def serial(self, conn: Connection) -> None:
        # The inbox's first page at 20,000 waiting tasks: 25-32 ms with one worker launched,
        # 0.4 ms without (the walk stops after 101 rows; starting the worker is the cost).
        conn.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))

    def leading_equal(self, expr: ColumnElement[Any], value: Any) -> Any:
        # `= value` makes `expr` a constant that Postgres drops from the order, and then walks
        # whichever index holds the rest of it, unaware that the rows it wants may all lie far
        # behind (a status of old tokens, behind the live ones); `= ANY(ARRAY[value])` keeps
        # `expr` in the order, which only the index that starts with it gives unsorted.
        return expr == any_(array([value]))

    def in_code_order(self, expr: ColumnElement[Any], low: str, high: str | None) -> Any:
        # The pattern operators compare bytes under any collation; `tokens_id_order`
        # (text_pattern_ops) serves them.
        found = expr.op("~>=~")(low)
        return and_(found, expr.op("~<~")(high)) if high is not None else found


#: The dialect object of each database, by SQLAlchemy's name of it.
DIALECTS: Mapping[str, Dialect] = {d.name: d for d in (SqliteDialect(), PostgresDialect())}


def dialect_of(conn: Connection) -> Dialect:
    """The dialect object of the database `conn` is connected to."""
    return DIALECTS[conn.dialect.name]


def per_dialect[T](build: Callable[[Dialect], T]) -> dict[Dialect, T]:
    """`build(dialect)` for each dialect, built once (at import): a statement that differs by
    database, looked up with `[dialect_of(conn)]`."""
    return {dialect: build(dialect) for dialect in DIALECTS.values()}
