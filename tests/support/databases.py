"""Databases for tests: SQLite files, and Postgres databases made and dropped per use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
PG_URL = "postgresql://postgres@127.0.0.1:5432/{name}"


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
    """A new, empty Postgres database with a unique name; dropped (forced) at the end."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_URL.format(name=name)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
