"""Databases for tests: SQLite files, and empty Postgres databases, reused within a process.

Making and dropping a Postgres database takes the server most of a second, and a test run needs
a few hundred. So each process (each pytest-xdist worker) keeps the databases it made: a database
handed back is emptied (its other connections ended, the schema `public` dropped and made again),
checked to hold nothing, and handed out again; one that is not found empty is dropped. The kept
ones are dropped when the process ends.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
PG_URL = "postgresql://postgres@127.0.0.1:5432/{name}"
PG_DB = "host=127.0.0.1 port=5432 user=postgres dbname={name}"

#: Emptied databases ready to hand out again, by prefix.
_kept: dict[str, list[str]] = {}

#: What an empty database holds beside the system's own schemas: a schema `public` with nothing
#: in it, the extension plpgsql, no functions, no event triggers, no large objects.
_LEFT_OVER = """
SELECT
  (SELECT count(*) FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema',
     'public') AND nspname NOT LIKE 'pg\\_toast%' AND nspname NOT LIKE 'pg\\_temp\\_%')
  + (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public')
  + (SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE n.nspname = 'public')
  + (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public')
  + (SELECT count(*) FROM pg_extension WHERE extname <> 'plpgsql')
  + (SELECT count(*) FROM pg_event_trigger)
  + (SELECT count(*) FROM pg_largeobject_metadata)
  + (SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
     WHERE d.datname = current_database())
"""


def backends() -> list[str]:
    """The backends chosen by STATEOUS_TEST_DB (`sqlite`, `postgres` or `both`, the default)."""
    choice = os.environ.get("STATEOUS_TEST_DB", "both").strip().lower()
    if choice in ("sqlite", "postgres"):
        return [choice]
    return ["sqlite", "postgres"]


def sqlite_url(folder: Path, name: str = "stateous.db") -> str:
    """The URL of a SQLite file in `folder`."""
    return f"sqlite:///{folder / name}"


@contextmanager
def postgres_database(prefix: str = "stateous_test") -> Iterator[str]:
    """An empty Postgres database of this process alone, as new; emptied or dropped at the end.

    Its name starts with `prefix`; no other connection to it outlives the block.
    """
    kept = _kept.setdefault(prefix, [])
    name = kept.pop() if kept else _create(prefix)
    try:
        yield PG_URL.format(name=name)
    finally:
        if _emptied(name):
            kept.append(name)
        else:
            _drop(name)


def _create(prefix: str) -> str:
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop(name: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _emptied(name: str) -> bool:
    """End the database's other connections, drop and remake `public`; whether it is empty now."""
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
        with psycopg.connect(PG_DB.format(name=name), autocommit=True) as db:
            # The ended connections may hold their locks a moment longer; wait a little for them.
            db.execute("SET lock_timeout = '10s'")
            with db.transaction():
                db.execute("DROP SCHEMA IF EXISTS public CASCADE")
                db.execute("CREATE SCHEMA public AUTHORIZATION pg_database_owner")
                db.execute("GRANT USAGE ON SCHEMA public TO PUBLIC")
                db.execute("COMMENT ON SCHEMA public IS 'standard public schema'")
            left = db.execute(_LEFT_OVER).fetchone()
    except psycopg.Error:
        return False
    return left is not None and left[0] == 0


@atexit.register
def _drop_kept() -> None:
    """Drop the databases this process kept (at its exit)."""
    for names in _kept.values():
        while names:
            with contextlib.suppress(psycopg.Error):  # the server is gone: nothing to clean
                _drop(names.pop())
