"""The audit index: one row per ledger row that carries an operator's `by`.

Rows are inserted by the engine's ledger writer in the transaction that writes the ledger row,
so `GET /audit` reads this small table, never the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, insert, select, tuple_

from stateous.control.store.tables import audit


@dataclass(frozen=True)
class Act:
    """One operator act as `GET /audit` answers it."""

    token: str
    seq: int
    at: datetime
    kind: str
    actor: str | None
    via: str | None
    reason: str | None
    bulk: int | None


_INSERT = insert(audit)


def insert_acts(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Index the ledger rows (as the engine writes them) whose data carries `by`."""
    acts = [_act_row(row) for row in rows if "by" in row["data"]]
    if acts:
        conn.execute(_INSERT, acts)


def _act_row(row: dict[str, Any]) -> dict[str, Any]:
    by: dict[str, Any] = row["data"]["by"]
    return {
        "token": row["token"],
        "seq": row["seq"],
        "at": row["at"],
        "kind": row["kind"],
        "actor": by.get("actor"),
        "via": by.get("via"),
        "reason": by.get("reason") or None,
        "bulk": by.get("bulk"),
    }


def acts(
    conn: Connection,
    *,
    actor: str | None = None,
    token: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
    after: tuple[datetime, str, int] | None = None,
) -> list[Act]:
    """Operator acts newest first, filtered by actor, token and time (`at >= since`); `after`:
    only the acts after that (at, token, seq), the last of the page before."""
    query = acts_query(actor=actor, token=token, since=since, limit=limit, after=after)
    return [Act(**row._mapping) for row in conn.execute(query)]


def acts_query(
    *,
    actor: str | None = None,
    token: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
    after: tuple[datetime, str, int] | None = None,
) -> Select[Any]:
    """The query of `acts`: a walk of `audit_at`, or of `audit_actor` for an actor."""
    query = select(audit)
    if after is not None:
        query = query.where(tuple_(audit.c.at, audit.c.token, audit.c.seq) < tuple_(*after))
    if actor is not None:
        query = query.where(audit.c.actor == actor)
    if token is not None:
        query = query.where(audit.c.token == token)
    if since is not None:
        query = query.where(audit.c.at >= since)
    return query.order_by(audit.c.at.desc(), audit.c.token.desc(), audit.c.seq.desc()).limit(limit)
