"""Many rows of one table inserted a bounded number per statement, on the driver's cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table

from stateous.control.store.direct import insert_values

__all__ = ["IN_MOST", "ROWS_MOST", "insert_rows"]

#: Beyond this many rows, one statement would pass SQLite's limit of bound parameters.
ROWS_MOST = 100
#: Ids looked up in one statement.
IN_MOST = 500


def insert_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[dict[str, Any]]
) -> None:
    """Insert `rows` (each with a value for every column of `columns`), `ROWS_MOST` rows a
    statement, on the driver's cursor (`direct.insert_values`)."""
    names = tuple(columns)
    for first in range(0, len(rows), ROWS_MOST):
        insert_values(conn, table, names, rows[first : first + ROWS_MOST])
