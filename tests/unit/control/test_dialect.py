"""The one dialect object per database: what it locks and fuses, and the SQL each database gets
where the two differ (exactly the SQL each ran before the statements had a dialect object)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect as SqlDialect

from stateous.control.store import claims, direct, tokens
from stateous.control.store.db import Store
from stateous.control.store.dialect import DIALECTS, PostgresDialect, SqliteDialect, dialect_of
from stateous.control.store.records import TokenRecord
from stateous.control.store.rows import IN_MOST
from stateous.control.store.tables import control_plane
from stateous.control.store.tables import tokens as tokens_table
from stateous.control.store.tasks import insert_task
from stateous.control.store.tokens import insert_tokens, tokens_folded_in

AT = datetime(2026, 10, 16, 20, 48, 44)
DRIVERS: dict[str, SqlDialect] = {
    "postgresql": postgresql.psycopg.dialect(),  # type: ignore[no-untyped-call]  # untyped
    "sqlite": sqlite.pysqlite.dialect(),
}


def _sql(statement: Any, name: str) -> str:
    return " ".join(str(statement.compile(dialect=DRIVERS[name])).split())


def test_each_database_gets_its_own_dialect_object(store: Store, migrated_db_url: str) -> None:
    with store.begin() as conn:
        dialect = dialect_of(conn)
    if migrated_db_url.startswith("sqlite"):
        assert type(dialect) is SqliteDialect
        assert (dialect.locks, dialect.fuses_writes) == (False, False)
    else:
        assert type(dialect) is PostgresDialect
        assert (dialect.locks, dialect.fuses_writes) == (True, True)


@pytest.mark.parametrize(
    ("name", "folded", "ids"),
    [
        (
            "sqlite",
            "WHERE lower(tokens.token) IN (SELECT value FROM json_each(?) AS anon_1)",
            "WHERE tasks.id IN (__[POSTCOMPILE_ids])",
        ),
        (
            "postgresql",
            "WHERE lower(tokens.token) = ANY (%(lowered)s::VARCHAR[])",
            "WHERE tasks.id = ANY (%(ids)s::BIGINT[])",
        ),
    ],
)
def test_a_list_of_values_is_bound_as_each_database_binds_it(
    name: str, folded: str, ids: str
) -> None:
    dialect = DIALECTS[name]
    assert _sql(tokens._FOLDED_IN[dialect], name).endswith(folded)
    assert _sql(claims._TASKS_TO_CLAIM[dialect], name).endswith(ids)
    assert _sql(claims._CLAIM_TASKS[dialect], name).endswith(ids)


def test_rows_are_locked_only_where_writers_run_side_by_side() -> None:
    query = select(control_plane).where(control_plane.c.id == 1)
    assert _sql(DIALECTS["postgresql"].for_update(query), "postgresql").endswith("FOR UPDATE")
    assert "FOR UPDATE" not in _sql(DIALECTS["sqlite"].for_update(query), "sqlite")
    locked = _sql(claims._CLAIM_ROW_LOCKED[DIALECTS["postgresql"]], "postgresql")
    assert locked.endswith("WHERE claims.supervisor = %(sup)s::VARCHAR FOR UPDATE")
    assert _sql(claims._CLAIM_ROW_NEW[DIALECTS["postgresql"]], "postgresql") == (
        "INSERT INTO claims (supervisor, request) VALUES (%(sup)s::VARCHAR, %(request)s::VARCHAR) "
        "ON CONFLICT DO NOTHING"
    )


def test_only_sqlites_planner_is_told_that_live_tokens_are_few() -> None:
    live = tokens_table.c.status.in_(("active", "paused"))
    assert _sql(
        select(tokens_table.c.token).where(DIALECTS["sqlite"].rare(live)), "sqlite"
    ).endswith("WHERE likelihood(tokens.status IN (__[POSTCOMPILE_status_1]), 0.01)")
    rare = DIALECTS["postgresql"].rare(live)
    assert rare is live


def test_ids_in_one_value_find_the_tokens_ignoring_case_beyond_one_statement(store: Store) -> None:
    """`tokens_folded_in` binds the ids as one value (a JSON array on SQLite, an array on
    Postgres), `IN_MOST` a statement: the tokens of the second statement are found too."""
    made = [TokenRecord(f"Tok-{n}", "draft", "active", 1, {}, AT, None, None) for n in (1, 2)]
    asked = [f"other-{n}" for n in range(IN_MOST)] + ["tok-1", "tok-2", "tok-3"]
    with store.begin() as conn:
        insert_tokens(conn, made)
        found = tokens_folded_in(conn, asked)
    assert {key: record.token for key, record in found.items()} == {
        "tok-1": "Tok-1",
        "tok-2": "Tok-2",
    }


def test_a_statement_built_per_dialect_answers_through_direct_what_sqlalchemy_answers(
    store: Store,
) -> None:
    """Postgres's array of ids runs on the driver's cursor; SQLite's expanding IN list through
    `Connection.execute`: both answer the rows SQLAlchemy answers."""
    record = TokenRecord("Tok-1", "draft", "active", 1, {"n": [1]}, AT, None, None)
    with store.begin() as conn:
        insert_tokens(conn, [record])
        task = insert_task(conn, "Tok-1", "draft", 1, AT, "sha256:s")
        dialect = dialect_of(conn)
        cases: list[tuple[Any, dict[str, Any]]] = [
            (claims._TASKS_TO_CLAIM[dialect], {"ids": [task, task + 1]}),
            (tokens._FOLDED_IN[dialect], {"lowered": ["tok-1", "tok-2"]}),
        ]
        for statement, params in cases:
            theirs = [(tuple(r), dict(r._mapping)) for r in conn.execute(statement, params)]
            ours = [(tuple(r), dict(r._mapping)) for r in direct.execute(conn, statement, params)]
            assert ours == theirs
            assert len(ours) == 1
