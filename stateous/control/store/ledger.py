"""The statements of `ledger`: a token's rows read, numbered and appended.

Every statement is built once and run through `direct` (the driver's cursor); the read of
some kinds has an expanding IN list, which `direct.execute` hands to `Connection.execute`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from stateous.control.store.direct import execute as run
from stateous.control.store.records import LedgerRecord
from stateous.control.store.rows import insert_rows
from stateous.control.store.tables import ledger

#: The columns of a ledger row, in the order they are inserted.
LEDGER_COLUMNS = ("token", "seq", "at", "kind", "key", "data")

_LAST_SEQ = select(func.max(ledger.c.seq)).where(ledger.c.token == bindparam("t"))
_LEDGER = select(ledger).where(ledger.c.token == bindparam("t"))
_LEDGER_IN_ORDER = _LEDGER.order_by(ledger.c.seq)
_LEDGER_OF_KINDS = _LEDGER_IN_ORDER.where(ledger.c.kind.in_(bindparam("kinds", expanding=True)))
_LAST_OF_KIND = (
    _LEDGER.where(ledger.c.kind == bindparam("kind")).order_by(ledger.c.seq.desc()).limit(1)
)
_KEY_USED = select(ledger.c.seq).where(
    ledger.c.token == bindparam("t"), ledger.c.key == bindparam("key")
)


def last_seq(conn: Connection, token: str) -> int:
    """The highest seq of a token's ledger (0 when empty)."""
    return int(run(conn, _LAST_SEQ, {"t": token}).scalar() or 0)


def insert_ledger(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Append ledger rows (already numbered), all in one statement."""
    insert_rows(conn, ledger, LEDGER_COLUMNS, rows)


def key_used(conn: Connection, token: str, key: str) -> bool:
    """Whether a ledger row of this token carries this idempotency key."""
    return run(conn, _KEY_USED, {"t": token, "key": key}).first() is not None


def ledger_of(
    conn: Connection, token: str, kinds: Iterable[str] | None = None
) -> list[LedgerRecord]:
    """A token's ledger rows in seq order, optionally only some kinds."""
    if kinds is None:
        rows = run(conn, _LEDGER_IN_ORDER, {"t": token})
    else:
        rows = run(conn, _LEDGER_OF_KINDS, {"t": token, "kinds": list(kinds)})
    return [LedgerRecord.from_row(row) for row in rows]


def last_of_kind(conn: Connection, token: str, kind: str) -> LedgerRecord | None:
    """The token's latest ledger row of one kind."""
    row = run(conn, _LAST_OF_KIND, {"t": token, "kind": kind}).first()
    return LedgerRecord.from_row(row) if row else None
