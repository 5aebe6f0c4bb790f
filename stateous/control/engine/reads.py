"""The read routes: one token, a listing, a history (no lock, no row)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import iso
from stateous.control.engine.checks import no_token
from stateous.control.engine.views import history_entry, token_wire, wire_of
from stateous.control.store.ledger import ledger_of
from stateous.control.store.tokens import get_token, listing_columns
from stateous.control.store.versions import live_by_structure, version_rows
from stateous.model.wire import HistoryEntryWire, TokenWire


def read_token(conn: Connection, token_id: str) -> TokenWire:
    """One token, or `404 token_not_found`."""
    token = get_token(conn, token_id)
    if token is None:
        raise no_token(token_id)
    return token_wire(token)


def list_tokens(
    conn: Connection,
    status: str | None,
    parent: str | None,
    limit: int,
    structure: str | None = None,
    **more: Any,
) -> list[TokenWire]:
    """Tokens, most recently moved first; `more`: `state`, `prefix` and `context` (key → JSON
    text, searched in `token_keys`), as `store.tokens.listing_query` takes them."""
    found = listing_columns(conn, status, parent, limit, structure, **more)
    return [wire_of(*columns) for columns in found]


def history(conn: Connection, token_id: str) -> list[HistoryEntryWire]:
    """A token's ledger in seq order, or `404 token_not_found`."""
    if get_token(conn, token_id) is None:
        raise no_token(token_id)
    return [history_entry(row) for row in ledger_of(conn, token_id)]


def versions_wire(conn: Connection, current: str) -> list[dict[str, Any]]:
    """`GET /workflow/versions`: the versions on record, newest first; `live`
    counts a structure's active and paused top tokens once, on the checksum its tokens run on:
    the current one for the current structure (after a roll-back too), else the newest."""
    live = live_by_structure(conn)
    rows = version_rows(conn, graphs=False)
    runs_on: dict[str, str] = {}
    for row in rows:  # newest first
        runs_on.setdefault(row.structure, row.checksum)
    for row in rows:
        if row.checksum == current:
            runs_on[row.structure] = current
    return [
        {
            "checksum": row.checksum,
            "structure": row.structure,
            "current": row.checksum == current,
            "first_served_at": iso(row.first_served_at),
            "live": live.get(row.structure, 0) if runs_on[row.structure] == row.checksum else 0,
        }
        for row in rows
    ]
