"""The migrations build exactly the tables of the metadata, and refuse foreign databases."""

from __future__ import annotations

import shutil
import sqlite3
import warnings
from contextlib import closing
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from stateous.control.errors import StoreError
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.control.store.tables import metadata
from tests.support import postgres_database, sqlite_url
from tests.support.migrated import dump_sql, migrate_now


def test_the_known_revisions_are_alembics() -> None:
    # `migrate.check` knows the revisions without Alembic (start-up does not import it).
    scripts = ScriptDirectory(str(migrate.MIGRATIONS))
    assert set(migrate.TABLES_AT) == {script.revision for script in scripts.walk_revisions()}
    assert scripts.get_current_head() == migrate.HEAD


def test_migrations_match_the_metadata(db_url: str) -> None:
    store = Store(make_engine(db_url))
    with store.begin() as conn:
        migrate.upgrade(conn)
    with store.begin() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": "stateous_version"})
        with warnings.catch_warnings():
            # SQLite cannot reflect the lower(token) index; Postgres compares it.
            warnings.simplefilter("ignore")
            diff = compare_metadata(context, metadata)
        assert diff == []
        assert conn.execute(text("SELECT version_num FROM stateous_version")).all() == [
            (migrate.HEAD,)
        ]
        rows = conn.execute(
            text("SELECT id, structure, checksum, serving, since FROM control_plane")
        )
        assert rows.all() == [(1, None, None, None, None)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = {index["name"] for index in inspect(conn).get_indexes("tokens")}
        assert {"tokens_parent", "tokens_moved"} <= names
    store.engine.dispose()


def test_a_second_upgrade_changes_nothing(db_url: str) -> None:
    store = Store(make_engine(db_url))
    for _ in range(2):
        with store.begin() as conn:
            migrate.upgrade(conn)
    with store.begin() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD
    store.engine.dispose()


def test_an_old_schema_is_upgraded_keeping_its_tokens(db_url: str) -> None:
    store = Store(make_engine(db_url))
    from alembic import command

    with store.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "0001")
        conn.execute(
            text(
                "INSERT INTO tokens (token, state, status, visit, context, entered_at) "
                "VALUES ('T-1', 'draft', 'active', 1, '{}', '2026-10-16 20:48:44.845389')"
            )
        )
    with store.begin() as conn:
        migrate.upgrade(conn)
    with store.begin() as conn:
        row = conn.execute(text("SELECT token, parent, workflow FROM tokens")).one()
        assert tuple(row) == ("T-1", None, None)
        with pytest.raises(IntegrityError, match=r"(?i)unique|duplicate"):
            conn.execute(
                text(
                    "INSERT INTO tokens (token, state, status, visit, context, entered_at) "
                    "VALUES ('t-1', 'draft', 'active', 1, '{}', '2026-10-16 20:48:44')"
                )
            )
    store.engine.dispose()


def test_a_schedule_of_0017_is_upgraded_with_no_failure_on_record(db_url: str) -> None:
    from alembic import command

    store = Store(make_engine(db_url))
    with store.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "0017")
        conn.execute(
            text(
                "INSERT INTO schedules (name, cron, tz, id, catch_up, paused, next_at, created_at)"
                " VALUES ('nightly', '0 21 * * *', 'UTC', '{name}-{at}', 'last', false,"
                " '2026-10-16 21:00:00', '2026-10-16 20:48:44')"
            )
        )
    with store.begin() as conn:
        migrate.upgrade(conn)
    with store.begin() as conn:
        row = conn.execute(text("SELECT name, last_error, last_error_at, failures FROM schedules"))
        assert [tuple(r) for r in row] == [("nightly", None, None, 0)]
    store.engine.dispose()


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (
            ["CREATE TABLE tokens (x INTEGER)"],
            "this database has tables with the names Stateous uses, but no version of Stateous; "
            "start a new database",
        ),
        (
            [
                "CREATE TABLE stateous_version (version_num VARCHAR(32) PRIMARY KEY)",
                "INSERT INTO stateous_version VALUES ('0099')",
            ],
            "this database was made by another version of Stateous (schema 0099); use that "
            "version, or start a new database",
        ),
    ],
)
def test_foreign_databases_are_refused(db_url: str, setup: list[str], reason: str) -> None:
    store = Store(make_engine(db_url))
    with store.begin() as conn:
        for statement in setup:
            conn.execute(text(statement))
    with pytest.raises(StoreError) as caught, store.begin() as conn:
        migrate.upgrade(conn)
    assert caught.value.message == reason
    store.engine.dispose()


def test_a_missing_and_a_foreign_table_are_refused(db_url: str) -> None:
    from alembic import command

    store = Store(make_engine(db_url))
    with store.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "0001")
        conn.execute(text("CREATE TABLE claims (x INTEGER)"))
    with pytest.raises(StoreError) as caught, store.begin() as conn:
        migrate.upgrade(conn)
    assert caught.value.message == (
        "this database has a table named claims that Stateous did not make; start a new database"
    )
    with store.begin() as conn:
        conn.execute(text("DROP TABLE claims"))
        conn.execute(text("DROP TABLE memory"))
    with pytest.raises(StoreError) as caught, store.begin() as conn:
        migrate.upgrade(conn)
    assert caught.value.message == "this database has no memory table; start a new database"
    store.engine.dispose()


def test_a_copy_of_the_tests_template_is_a_migrated_database(
    backend: str, migrated_db_url: str, tmp_path: Path
) -> None:
    # The suite's stores are copies of one migrated template per worker (tests/support/migrated):
    # a copy holds exactly what a migration makes, or every such test would test something else.
    if backend == "sqlite":
        fresh = sqlite_url(tmp_path, "fresh.db")
        migrate_now(fresh)
        assert sqlite_dump(migrated_db_url) == sqlite_dump(fresh)
        return
    dump = shutil.which("pg_dump")
    if dump is None:
        pytest.skip("pg_dump is not on this machine: the suite migrates each database")
    with postgres_database() as fresh:
        migrate_now(fresh)
        assert dump_sql(dump, name_of(migrated_db_url)) == dump_sql(dump, name_of(fresh))


def name_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def sqlite_dump(url: str) -> list[str]:
    """The SQL text of a SQLite file's schema and rows (`iterdump`)."""
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
        return list(conn.iterdump())
