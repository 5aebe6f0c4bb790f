"""What tests read straight from local files: the log records of stateous's loggers, and the
rows a SQLite database file holds without its WAL."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path


def stateous_messages(records: Iterable[logging.LogRecord]) -> list[str]:
    """The messages of the records of stateous's own loggers (not httpx's or Alembic's, which a
    root logger at DEBUG lets in)."""
    return [r.getMessage() for r in records if r.name.startswith("stateous")]


def rows_in_the_file(path: Path, table: str) -> int | None:
    """The rows of `table` the SQLite database file itself holds (its WAL ignored), or None
    while a checkpoint writes the file: an immutable read takes no lock, so it may meet a page
    half written ("database disk image is malformed")."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as db:
            return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.DatabaseError:
        return None
