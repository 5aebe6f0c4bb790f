"""Creating and upgrading the schema at start-up, refusing a database it cannot use."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text

from stateous.control.errors import StoreError
from stateous.control.store.db import lock_key
from stateous.control.store.dialect import dialect_of
from stateous.control.store.tables import TABLE_NAMES

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported only when a database needs its scripts: a control plane that starts on a
# database already at HEAD (every restart, every replica) does without it, a third of a second
# of start-up.

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "stateous_version"
HEAD = "0018"

# The tables of audit and bulk jobs, made by 0006.
BY_0006 = frozenset({"audit", "bulk_jobs", "bulk_matches"})
# The table of the live control planes, made by 0007.
BY_0007 = frozenset({"control_planes"})
# The table of the versions served, made by 0011.
BY_0011 = frozenset({"workflow_versions"})
# The tables of search keys, made by 0012.
BY_0012 = frozenset({"search_keys", "token_keys"})
# The tables made by 0013-0016 (counts, schedules, traces).
BY_0013: frozenset[str] = frozenset({"stats_counts", "stats_deltas"})
BY_0014: frozenset[str] = frozenset()
BY_0015: frozenset[str] = frozenset({"schedules"})
BY_0016: frozenset[str] = frozenset({"token_traces"})
LATER = BY_0013 | BY_0014 | BY_0015 | BY_0016

# The tables each revision has, to find a missing or a foreign table; its keys are every
# revision of the scripts (tests/unit/control/test_migrations.py checks that against Alembic).
TABLES_AT: dict[str, frozenset[str]] = {
    "0001": frozenset({"control_plane", "ledger", "memory", "tasks", "timers", "tokens"}),
    "0002": frozenset({"claims", "control_plane", "ledger", "memory", "tasks", "timers", "tokens"}),
    "0003": frozenset({"claims", "control_plane", "ledger", "memory", "tasks", "timers", "tokens"}),
    "0004": frozenset(
        set(TABLE_NAMES) - LATER - BY_0012 - BY_0011 - BY_0007 - BY_0006 - {"claim_grants"}
    ),
    "0005": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011 - BY_0007 - BY_0006),
    "0006": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011 - BY_0007),
    "0007": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011),
    "0008": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011),
    "0009": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011),
    "0010": frozenset(set(TABLE_NAMES) - LATER - BY_0012 - BY_0011),
    "0011": frozenset(set(TABLE_NAMES) - LATER - BY_0012),
    "0012": frozenset(set(TABLE_NAMES) - LATER),
    "0013": frozenset(set(TABLE_NAMES) - BY_0014 - BY_0015 - BY_0016),
    "0014": frozenset(set(TABLE_NAMES) - BY_0015 - BY_0016),
    "0015": frozenset(set(TABLE_NAMES) - BY_0016),
    "0016": frozenset(TABLE_NAMES),
    "0017": frozenset(TABLE_NAMES),
    "0018": frozenset(TABLE_NAMES),
}


def alembic_config(conn: Connection | None = None) -> Config:
    """Alembic's configuration for the scripts inside the package."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def current_revision(conn: Connection) -> str | None:
    """The revision recorded in `stateous_version`, or None."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def upgrade(conn: Connection) -> None:
    """Bring the schema to the newest revision inside the caller's transaction, or refuse.

    Raises StoreError with the reason (the caller wraps them as
    `cannot use the database <url>: <reason>`).
    """
    if dialect_of(conn).locks:
        # Concurrent starters migrate one at a time (Postgres); migrations may run longer than
        # 30 s.
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key("@stateous/migrate")})
        conn.execute(text("SET LOCAL statement_timeout = 0"))
    check(conn)
    if current_revision(conn) != HEAD:
        from alembic import command

        command.upgrade(alembic_config(conn), "head")


def check(conn: Connection) -> None:
    """Refuse a database that this version cannot upgrade."""
    present = set(inspect(conn).get_table_names()) & set(TABLE_NAMES)
    revision = current_revision(conn)
    if revision is None:
        if present:
            raise StoreError(
                "this database has tables with the names Stateous uses, but no version of "
                "Stateous; start a new database"
            )
        return
    if revision not in TABLES_AT:
        raise StoreError(
            f"this database was made by another version of Stateous (schema {revision}); "
            "use that version, or start a new database"
        )
    missing = sorted(TABLES_AT[revision] - present)
    if missing:
        raise StoreError(f"this database has no {', '.join(missing)} table; start a new database")
    foreign = sorted((TABLES_AT[HEAD] - TABLES_AT[revision]) & present)
    if foreign:
        raise StoreError(
            f"this database has a table named {', '.join(foreign)} that Stateous did not make; "
            "start a new database"
        )
