"""Filling the screens' `DataTable`s: columns by key, and rows updated in place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import DataTable

Columns = Iterable[tuple[str, str]]
"""A table's columns as (label, key) pairs."""


def add_columns(screen: Screen[Any], tables: Mapping[str, Columns]) -> None:
    """Add its columns to each table of `screen`, named by id (`{"held": HELD}` for `#held`)."""
    for name, columns in tables.items():
        table = screen.query_one(f"#{name}", DataTable)
        for label, key in columns:
            table.add_column(label, key=key)


def fill(table: DataTable[Any], rows: list[list[Text]], keys: list[str]) -> None:
    """Show `rows` in `table`, updating cells in place when the keys did not change."""
    current = [str(row.value) for row in table.rows]
    if current == keys:
        columns = list(table.columns)
        for key, row in zip(keys, rows, strict=True):
            for column, cell in zip(columns, row, strict=True):
                table.update_cell(key, column, cell, update_width=True)
        return
    cursor = table.cursor_row
    table.clear()
    for key, row in zip(keys, rows, strict=True):
        table.add_row(*row, key=key)
    if rows:
        table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
