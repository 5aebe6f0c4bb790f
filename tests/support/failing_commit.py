"""A table whose foreign key is checked at COMMIT, so that a test can make a commit fail."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from stateous.control.store.db import Store

#: A row that breaks the deferred key: written in an operation, its commit fails.
ORPHAN = "INSERT INTO child_row (id, parent) VALUES (1, 99)"


def deferred_foreign_key(store: Store) -> None:
    """Make `parent_row` and `child_row`, whose key is checked at COMMIT (on SQLite too)."""
    if store.sqlite:
        # SQLite checks foreign keys only when asked, per connection.
        @event.listens_for(store.engine, "connect")
        def _keys(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.execute("PRAGMA foreign_keys = ON")

        store.engine.dispose()
    with store.begin() as conn:
        conn.execute(text("CREATE TABLE parent_row (id INTEGER PRIMARY KEY)"))
        conn.execute(
            text(
                "CREATE TABLE child_row (id INTEGER PRIMARY KEY, parent INTEGER "
                "REFERENCES parent_row (id) DEFERRABLE INITIALLY DEFERRED)"
            )
        )
