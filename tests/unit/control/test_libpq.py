"""Statements run on libpq (stateous.control.store.libpq) answer exactly what psycopg's cursor
answers: the same rows and values, the same counts, the same errors, in the same transaction."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest
from psycopg import errors, pq
from psycopg.types.json import Json

from stateous.control.store import libpq
from tests.support import backends, postgres_database

pytestmark = pytest.mark.skipif("postgres" not in backends(), reason="Postgres is not tested")

AT = datetime(2026, 12, 3, 18, 0, 0, 123456)

TABLE = """CREATE TABLE t (
    id BIGINT PRIMARY KEY, name VARCHAR(40), at TIMESTAMP WITHOUT TIME ZONE,
    data JSON, flag BOOLEAN, n INTEGER
)"""


@pytest.fixture
def pair() -> Iterator[tuple[psycopg.Connection[Any], psycopg.Connection[Any]]]:
    """Two connections to one new database holding table `t`: (libpq's, the cursor's)."""
    with postgres_database() as url:
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(plain, autocommit=True) as setup:
            setup.execute(TABLE)
            setup.execute(
                "INSERT INTO t VALUES (1, 'o''brien', %s, '{\"a\": [1, 2]}', true, 7),"
                " (2, NULL, NULL, NULL, NULL, NULL), (3, 'ünï', %s, '[]', false, -1)",
                (AT, AT),
            )
        with psycopg.connect(plain) as ours, psycopg.connect(plain) as theirs:
            yield ours, theirs


def _theirs(connection: psycopg.Connection[Any], sql: str, args: Any) -> libpq.Answer:
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        if cursor.description is None:
            return [], None, cursor.rowcount
        names = tuple(column.name for column in cursor.description)
        return cursor.fetchall(), names, cursor.rowcount


@pytest.mark.parametrize(
    ("sql", "args"),
    [
        ("SELECT id, name, at, data, flag, n FROM t ORDER BY id", {}),
        ("SELECT * FROM t WHERE id = %(id)s::BIGINT", {"id": 1}),
        ("SELECT * FROM t WHERE name = %(name)s::VARCHAR", {"name": "o'brien"}),
        ("SELECT * FROM t WHERE name = %(name)s::VARCHAR", {"name": "ünï"}),
        ("SELECT * FROM t WHERE id = %(id)s::BIGINT", {"id": 99}),
        ("SELECT id FROM t WHERE at = %(at)s::TIMESTAMP WITHOUT TIME ZONE", {"at": AT}),
        ("SELECT id FROM t WHERE flag = %(f)s::BOOLEAN", {"f": False}),
        ("SELECT id FROM t WHERE id = ANY(CAST(%(ids)s AS BIGINT[])) ORDER BY id", {"ids": [3, 1]}),
        (
            "SELECT id FROM t WHERE name = ANY(CAST(%(names)s AS VARCHAR[]))",
            {"names": ["o'brien", 'a "quoted", {braced} name']},
        ),
        (
            "SELECT %(a)s::INTEGER + %(a)s::INTEGER AS twice, %(b)s::VARCHAR AS b",
            {"a": 2, "b": None},
        ),
        ("SELECT 100 %% 7 AS rest, %(x)s::BIGINT AS big", {"x": 2**62}),
        ("SELECT %(d)s::JSON AS doc", {"d": Json({"k": ["v", 1, None, True]})}),
        ("SELECT id FROM t WHERE id > %s ORDER BY id LIMIT %s", [1, 1]),
        ("UPDATE t SET n = n + 1 WHERE n IS NOT NULL", {}),
        ("UPDATE t SET n = 0 WHERE id = %(id)s::BIGINT RETURNING id, n", {"id": 3}),
        ("DELETE FROM t WHERE id = %(id)s::BIGINT", {"id": 2}),
        (
            "INSERT INTO t (id, name, at, data) VALUES (%s, %s, %s, %s), (%s, %s, %s, %s)",
            [10, "x", AT, Json([1]), 11, None, None, None],
        ),
        ("INSERT INTO t (id) VALUES (%(id)s::BIGINT) RETURNING id, name", {"id": 12}),
    ],
)
def test_a_statement_answers_as_on_the_cursor(
    pair: tuple[psycopg.Connection[Any], psycopg.Connection[Any]], sql: str, args: Any
) -> None:
    ours, theirs = pair
    for _ in range(3):  # run unprepared, then prepared, then from the prepared statement
        # Each is rolled back before the other runs: a change would wait for the other's lock.
        answer = libpq.run(ours, sql, args, named=True)
        ours.rollback()
        assert answer == _theirs(theirs, sql, args)
        theirs.rollback()


def test_a_statement_runs_in_a_transaction_begun_as_psycopg_begins_one(
    pair: tuple[psycopg.Connection[Any], psycopg.Connection[Any]],
) -> None:
    ours, _ = pair
    assert ours.pgconn.transaction_status == pq.TransactionStatus.IDLE
    libpq.run(ours, "INSERT INTO t (id) VALUES (%(id)s::BIGINT)", {"id": 20})
    assert ours.pgconn.transaction_status == pq.TransactionStatus.INTRANS
    ours.rollback()
    assert libpq.run(ours, "SELECT id FROM t WHERE id = 20", {}) == ([], (), 0)


def test_the_second_run_prepares_the_statement(
    pair: tuple[psycopg.Connection[Any], psycopg.Connection[Any]],
) -> None:
    ours, _ = pair
    sql = "SELECT id FROM t WHERE id = %(id)s::BIGINT"
    prepared = "SELECT name, statement FROM pg_prepared_statements"

    def listed() -> list[tuple[Any, ...]]:
        return ours.execute(prepared).fetchall()  # on psycopg's cursor: not prepared

    libpq.run(ours, sql, {"id": 1})
    assert listed() == []
    libpq.run(ours, sql, {"id": 1})
    assert listed() == [("_stateous_0", "SELECT id FROM t WHERE id = $1::BIGINT")]
    ours.rollback()  # psycopg prepares nothing of its own, so it deallocates nothing
    libpq.run(ours, sql, {"id": 1})
    assert listed() == [("_stateous_0", "SELECT id FROM t WHERE id = $1::BIGINT")]


@pytest.mark.parametrize(
    ("sql", "args", "kind"),
    [
        ("INSERT INTO t (id) VALUES (%(id)s::BIGINT)", {"id": 1}, errors.UniqueViolation),
        ("SELECT nothing FROM t", {}, errors.UndefinedColumn),
        ("SELEC 1", {}, errors.SyntaxError),
        ("SELECT 1 / %(z)s::INTEGER", {"z": 0}, errors.DivisionByZero),
    ],
)
def test_an_error_is_psycopgs_own_and_aborts_the_transaction(
    pair: tuple[psycopg.Connection[Any], psycopg.Connection[Any]],
    sql: str,
    args: Any,
    kind: type[Exception],
) -> None:
    ours, theirs = pair
    for _ in range(2):  # its second run would prepare it
        with pytest.raises(kind) as got:
            libpq.run(ours, sql, args)
        with pytest.raises(kind) as expected:
            _theirs(theirs, sql, args)
        assert str(got.value) == str(expected.value)
        assert ours.pgconn.transaction_status == pq.TransactionStatus.INERROR
        ours.rollback()
        theirs.rollback()


def test_a_connection_in_pipeline_mode_is_left_to_the_cursor(
    pair: tuple[psycopg.Connection[Any], psycopg.Connection[Any]],
) -> None:
    ours, _ = pair
    with ours.pipeline():
        assert libpq.run(ours, "SELECT 1", {}) is None
