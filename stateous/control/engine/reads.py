"""The read routes: one token, a listing, a history (no lock, no row)."""

from __future__ import annotations

from sqlalchemy import Connection

from stateous.control.engine.checks import no_token
from stateous.control.engine.views import history_entry, token_wire, wire_of
from stateous.control.store.ledger import ledger_of
from stateous.control.store.tokens import get_token, listing_columns
from stateous.model.wire import HistoryEntryWire, TokenWire


def read_token(conn: Connection, token_id: str) -> TokenWire:
    """One token, or `404 token_not_found`."""
    token = get_token(conn, token_id)
    if token is None:
        raise no_token(token_id)
    return token_wire(token)


def list_tokens(
    conn: Connection, status: str | None, parent: str | None, limit: int
) -> list[TokenWire]:
    """Tokens, most recently moved first."""
    return [wire_of(*columns) for columns in listing_columns(conn, status, parent, limit)]


def history(conn: Connection, token_id: str) -> list[HistoryEntryWire]:
    """A token's ledger in seq order, or `404 token_not_found`."""
    if get_token(conn, token_id) is None:
        raise no_token(token_id)
    return [history_entry(row) for row in ledger_of(conn, token_id)]
