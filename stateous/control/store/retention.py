"""The statements of retention: ended top tokens by id with their end, a family's
rows deleted, and exported rows put back.

A token's end is the `at` of its latest ledger row whose kind is its status (`completed`,
`failed` or `cancelled`): ending a token leaves `entered_at` as it was (the time it entered its
last state), and a failed token that was retried and failed again ended at the second row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, func, literal_column, select

from stateous.control.store.audit import insert_acts
from stateous.control.store.ledger import insert_ledger
from stateous.control.store.records import TokenRecord
from stateous.control.store.tables import (
    audit,
    claim_grants,
    claims,
    ledger,
    memory,
    tasks,
    timers,
    tokens,
    workflow_versions,
)
from stateous.control.store.token_keys import delete_keys, insert_keys, rows_of
from stateous.control.store.traces import delete_traces

#: The statuses of an ended token.
ENDED = ("completed", "failed", "cancelled")

# The end of the token of the row at hand: its latest ledger row of the kind of its status
# (walks the ledger's primary key of that token only).
_END = (
    select(func.max(ledger.c.at))
    .where(ledger.c.token == tokens.c.token, ledger.c.kind == tokens.c.status)
    .scalar_subquery()
)
_ENDED_TOP = tokens.c.parent.is_(None) & tokens.c.status.in_(
    [literal_column(f"'{status}'") for status in ENDED]
)


def ended_tops(
    conn: Connection, before: datetime, after: str | None, limit: int
) -> list[TokenRecord]:
    """Up to `limit` ended top tokens whose end is before `before`, in id order after `after`
    (keyset: the primary key's order, never OFFSET)."""
    query = select(tokens).where(_ENDED_TOP, before > _END)
    if after is not None:
        query = query.where(tokens.c.token > after)
    query = query.order_by(tokens.c.token).limit(limit)
    return [TokenRecord.from_row(row) for row in conn.execute(query)]


def end_of(conn: Connection, token: str, status: str) -> datetime | None:
    """When the token ended: the `at` of its latest ledger row of kind `status`."""
    query = select(func.max(ledger.c.at)).where(ledger.c.token == token, ledger.c.kind == status)
    found: datetime | None = conn.execute(query).scalar()
    return found


def family_of(conn: Connection, top: str) -> list[str]:
    """The ids of a token and of all its descendants, the top first."""
    family, ahead = [top], [top]
    while ahead:
        query = select(tokens.c.token).where(tokens.c.parent.in_(ahead)).order_by(tokens.c.token)
        ahead = list(conn.execute(query).scalars())
        family.extend(ahead)
    return family


def _delete_by_token(conn: Connection, table: Table, ids: Sequence[str]) -> None:
    conn.execute(delete(table).where(table.c.token.in_(ids)))


def delete_family(conn: Connection, ids: Sequence[str]) -> None:
    """Delete every row of these tokens: the claims that name their tasks, then tasks,
    timers, memory, search keys (`token_keys`, where the database has it), audit rows, ledger
    rows and the tokens. Bulk jobs' matches stay: they are the record of what a job did."""
    task_ids = list(conn.execute(select(tasks.c.id).where(tasks.c.token.in_(ids))).scalars())
    if task_ids:
        conn.execute(delete(claim_grants).where(claim_grants.c.task_id.in_(task_ids)))
        conn.execute(delete(claims).where(claims.c.task_id.in_(task_ids)))
    for table in (tasks, timers, memory, audit, ledger):
        _delete_by_token(conn, table, ids)
    delete_keys(conn, ids)
    delete_traces(conn, ids)
    _delete_by_token(conn, tokens, ids)


def any_case_exists(conn: Connection, token: str) -> bool:
    """Whether a token with this id, ignoring case, is in the database (`tokens_folded`)."""
    query = select(tokens.c.token).where(func.lower(tokens.c.token) == token.lower()).limit(1)
    return conn.execute(query).first() is not None


def insert_family(
    conn: Connection, records: Sequence[TokenRecord], rows: Sequence[dict[str, Any]]
) -> bool:
    """Insert exported tokens and their ledger rows (each `token, seq, at, kind, key, data`),
    the audit rows of those carrying `by`, as the engine wrote them, and the top token's search
    keys. False when the database has no graph of the top's structure, so no key is known yet:
    the first serve of one indexes them (`index_imported`)."""
    values = [
        {"token": r.token, "state": r.state, "status": r.status, "visit": r.visit,
         "context": r.context, "entered_at": r.entered_at, "parent": r.parent,
         "workflow": r.workflow, "structure": r.structure}
        for r in records
    ]  # fmt: skip
    conn.execute(tokens.insert(), values)
    insert_ledger(conn, rows)
    insert_acts(conn, rows)  # the same audit index the engine writes
    known = True
    for record in records:
        if record.parent is None:  # only top tokens are searched
            keys = search_keys_of(conn, record.structure)
            known = keys is not None
            insert_keys(conn, rows_of(record.token, record.context, keys or []))
    return known


def search_keys_of(conn: Connection, structure: str | None) -> list[str] | None:
    """The search keys of the newest graph on record of a structure; None when the database
    never served it (an archive opened in a database of its own); none for no structure."""
    if structure is None:
        return []
    v = workflow_versions.c
    query = select(v.graph).where(v.structure == structure).order_by(v.first_served_at.desc())
    text = conn.execute(query.limit(1)).scalar()
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    keys = doc.get("search", []) if isinstance(doc, dict) else []
    return [key for key in keys if isinstance(key, str)]


def structure_on_record(conn: Connection, structure: str) -> bool:
    """Whether the database has served a graph of this structure."""
    query = select(workflow_versions.c.checksum).where(workflow_versions.c.structure == structure)
    return conn.execute(query.limit(1)).first() is not None


def tops_after(
    conn: Connection, structure: str, after: str | None, limit: int
) -> list[tuple[str, Any]]:
    """(token, context) of the next top tokens of `structure`, of any status, in id order
    after `after`."""
    query = select(tokens.c.token, tokens.c.context).where(
        tokens.c.parent.is_(None), tokens.c.structure == structure
    )
    if after is not None:
        query = query.where(tokens.c.token > after)
    rows = conn.execute(query.order_by(tokens.c.token).limit(limit))
    return [(row[0], row[1]) for row in rows]
