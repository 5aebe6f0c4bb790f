"""Read a control plane database's tables as plain values, to compare with known rows."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, text


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _time(value: Any) -> str | None:
    if value is None:
        return None
    return str(value) if not hasattr(value, "isoformat") else value.isoformat(sep=" ")


def ledger_rows(conn: Connection, token: str) -> list[tuple[Any, ...]]:
    """(seq, at, kind, key, data) of a token, in seq order."""
    rows = conn.execute(
        text("SELECT seq, at, kind, key, data FROM ledger WHERE token = :t ORDER BY seq"),
        {"t": token},
    )
    return [(r.seq, _time(r.at), r.kind, r.key, _json(r.data)) for r in rows]


def token_row(conn: Connection, token: str) -> tuple[Any, ...]:
    """The tokens row as a tuple."""
    r = conn.execute(text("SELECT * FROM tokens WHERE token = :t"), {"t": token}).one()
    return (
        r.token,
        r.state,
        r.status,
        r.visit,
        _json(r.context),
        _time(r.entered_at),
        r.parent,
        r.workflow,
    )


def task_rows(conn: Connection) -> list[tuple[Any, ...]]:
    """Every tasks row, by id."""
    rows = conn.execute(text("SELECT * FROM tasks ORDER BY id"))
    return [
        (
            r.id,
            r.token,
            r.state,
            r.visit,
            r.status,
            r.attempt,
            r.claimed_by,
            _time(r.lease_until),
            _time(r.queued_at),
        )
        for r in rows
    ]


def table_rows(conn: Connection, table: str) -> list[tuple[Any, ...]]:
    """Every row of a small table, as tuples."""
    return [
        tuple(r) for r in conn.execute(text(f"SELECT * FROM {table}"))
    ]  # test helper, fixed names


def leave_stray_ledger_row(conn: Connection, token: str) -> None:
    """A ledger row of `token` without its token: the first seq of a new token of that id is
    taken, so a shared insert of its first rows fails (`Raced`)."""
    conn.execute(
        text(
            "INSERT INTO ledger (token, seq, at, kind, key, data) "
            "VALUES (:t, 1, '2026-10-16 20:48:40', 'note', NULL, '{}')"
        ),
        {"t": token},
    )
