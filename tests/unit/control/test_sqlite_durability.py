"""A SQLite commit is durable before it is answered: the control plane's store and the
supervisor's outbox run in WAL mode with `synchronous=FULL` on every connection, and a write
transaction takes the write lock as it begins."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from stateous.control.store.db import make_engine
from stateous.supervisor.outbox import Outbox
from tests.support import sqlite_url

#: `PRAGMA synchronous`'s answer for FULL.
FULL = 2


def test_every_connection_of_the_store_is_wal_and_synchronous_full(tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    try:
        for _ in range(2):  # a second connection is configured as the first
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == FULL
    finally:
        engine.dispose()


def test_a_write_transaction_takes_the_write_lock_as_it_begins(tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT 1")
            with closing(sqlite3.connect(tmp_path / "stateous.db", timeout=0)) as other:
                try:
                    other.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    refused = str(exc)
                else:
                    refused = ""
        assert refused == "database is locked"
    finally:
        engine.dispose()


def test_the_outbox_is_a_wal_file_written_with_synchronous_full(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path)
    # The outbox holds its file under an exclusive lock: only its own connection can ask.
    assert outbox._conn.execute("PRAGMA synchronous").fetchone() == (FULL,)
    outbox.close()
    with closing(sqlite3.connect(tmp_path / ".stateous" / "outbox.db")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
