"""A new database at the newest revision, copied from one migrated once per process.

`migrate.upgrade` runs Alembic (about 25 ms of CPU on SQLite, 60 ms here and as much in the
server on Postgres), and some 450 tests of a run want a migrated store. Each process (each
pytest-xdist worker) migrates one template database the first time it needs one, then fills the
others from it: a SQLite file is copied, and a Postgres database runs the template's schema and
rows as `pg_dump` wrote them (about 1 ms of CPU here, 45 ms in the server). Without `pg_dump`,
each database is migrated as before. `tests/unit/control/test_migrations.py` checks that a copy
is the same as a migrated database.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from tests.support.databases import PG_DB, postgres_database, sqlite_url

_sqlite_template: Path | None = None
_postgres_script: str | None = None


def migrate_now(url: str) -> None:
    """Migrate the database of `url` with Alembic, as `serve` does at start."""
    store = Store(make_engine(url))
    try:
        with store.begin() as conn:
            migrate.upgrade(conn)
    finally:
        store.engine.dispose()


def migrated(url: str) -> None:
    """Bring the new, empty database of `url` to the newest revision from this process's
    template (a SQLite file that exists already is migrated in place)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = Path(parsed.database or "")
        if path.exists():
            migrate_now(url)
        else:
            shutil.copyfile(_sqlite(), path)
        return
    script = _postgres()
    if script is None:
        migrate_now(url)
        return
    with (
        psycopg.connect(PG_DB.format(name=parsed.database), autocommit=True) as db,
        db.transaction(),
    ):
        db.execute(script)


def _sqlite() -> Path:
    """The template SQLite file of this process, migrated on first use."""
    global _sqlite_template
    if _sqlite_template is None:
        folder = Path(tempfile.mkdtemp(prefix="stateous-template-"))
        atexit.register(shutil.rmtree, folder, True)
        migrate_now(sqlite_url(folder, "template.db"))
        _sqlite_template = folder / "template.db"
    return _sqlite_template


def _postgres() -> str | None:
    """The template's schema and rows as SQL (`pg_dump` of a database migrated on first use),
    or None when `pg_dump` is not on this machine."""
    global _postgres_script
    if _postgres_script is None:
        dump = shutil.which("pg_dump")
        if dump is None:
            return None
        with postgres_database() as url:
            migrate_now(url)
            _postgres_script = dump_sql(dump, make_url(url).database or "")
    return _postgres_script


def dump_sql(dump: str, name: str) -> str:
    """`pg_dump` of a database's schema and rows as SQL that psycopg can run: without the
    psql commands (`\\restrict`) that newer pg_dumps write."""
    out = subprocess.run(
        [dump, "-h", "127.0.0.1", "-U", "postgres", "--no-owner", "--no-privileges",
         "--inserts", "-d", name],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return "\n".join(line for line in out.splitlines() if not line.startswith("\\"))
