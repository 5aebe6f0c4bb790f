"""The statements of `token_keys` and `search_keys`: a top token's searchable
context values, the search by them, and which keys are filled.

A value is kept as its canonical JSON text (`key_text`). A value whose text is longer than
256 characters (the column's width) is not indexed: no search finds the token by it, the
bulk filter's scan still does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, delete, func, insert, select

from stateous.control.store.rows import IN_MOST, insert_rows
from stateous.control.store.tables import (
    TOKEN_IS_LIVE_TOP,
    search_keys,
    token_keys,
    tokens,
    workflow_versions,
)
from stateous.model.canonical import canonical_json
from stateous.model.selection import Filter

#: The statuses of live tokens, the ones a key's fill indexes.
LIVE = frozenset({"active", "paused"})
#: The widest value text the column holds.
VALUE_MOST = 256
_COLUMNS = ("key", "value", "token")


def key_text(value: Any) -> str | None:
    """The JSON text a value is kept and searched as, or None when it is not indexed (longer
    than `VALUE_MOST`, or not JSON). An integral float is the integer (JSON's `1.0` is `1`,
    as the bulk filter compares them)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        text = canonical_json(value)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= VALUE_MOST else None


def rows_of(token: str, context: Mapping[str, Any], keys: Iterable[str]) -> list[dict[str, Any]]:
    """The rows of one token: each of `keys` present in its context, with an indexable value."""
    rows = []
    for key in keys:
        if key in context:
            text = key_text(context[key])
            if text is not None:
                rows.append({"key": key, "value": text, "token": token})
    return rows


def delete_keys(conn: Connection, ids: Sequence[str]) -> None:
    """Delete every row of the tokens `ids` (a context change, a prune)."""
    for first in range(0, len(ids), IN_MOST):
        part = list(ids[first : first + IN_MOST])
        conn.execute(delete(token_keys).where(token_keys.c.token.in_(part)))


def insert_keys(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows of `rows_of` (a batch start's in one statement a hundred rows)."""
    if rows:
        insert_rows(conn, token_keys, _COLUMNS, rows)


def replace_keys(conn: Connection, rows_by_token: Mapping[str, list[dict[str, Any]]]) -> None:
    """Replace the rows of each token with its new ones."""
    delete_keys(conn, list(rows_by_token))
    insert_keys(conn, [row for rows in rows_by_token.values() for row in rows])


def holds_all(wanted: Mapping[str, str]) -> list[ColumnElement[bool]]:
    """Conditions on `tokens`: for each key, the token has a row of that key and JSON text."""
    return [
        tokens.c.token.in_(
            select(token_keys.c.token).where(token_keys.c.key == key, token_keys.c.value == text)
        )
        for key, text in wanted.items()
    ]


def top_rows(conn: Connection, ids: Collection[str]) -> list[tuple[str, str | None, Any]]:
    """(token, structure, context) of the top tokens among `ids`."""
    found: list[tuple[str, str | None, Any]] = []
    ordered = sorted(ids)
    for first in range(0, len(ordered), IN_MOST):
        part = ordered[first : first + IN_MOST]
        query = select(tokens.c.token, tokens.c.structure, tokens.c.context).where(
            tokens.c.token.in_(part), tokens.c.parent.is_(None)
        )
        found.extend((row[0], row[1], row[2]) for row in conn.execute(query))
    return found


def index_conditions(conn: Connection, found: Filter) -> list[ColumnElement[bool]] | None:
    """The conditions that select a bulk filter's `context` through `token_keys`, or None
    when the index may miss a match, so the filter scans: every key must be
    filled for every structure the filter may select, and only live tokens wanted (the fill
    of a key added later indexes only the live tokens)."""
    if not found.context or found.status is None or not set(found.status) <= LIVE:
        return None
    texts = {key: key_text(value) for key, value in found.context.items()}
    if any(text is None for text in texts.values()):
        return None
    structures = found.structure
    if structures is None:
        query = select(workflow_versions.c.structure).distinct()
        structures = tuple(row[0] for row in conn.execute(query))
    done = filled(conn)
    if not all((s, key) in done for s in structures for key in texts):
        return None
    return holds_all({key: text for key, text in texts.items() if text is not None})


# --- which keys are filled -------------------------------------------------------------------


def filled(conn: Connection) -> set[tuple[str, str]]:
    """(structure, key) of every search key whose tokens are all indexed."""
    query = select(search_keys.c.structure, search_keys.c.key)
    return {(row[0], row[1]) for row in conn.execute(query)}


def forget_unsearched(conn: Connection, structure: str, keys: Collection[str]) -> None:
    """Forget the filled keys of `structure` that its graph no longer searches by: its new
    tokens get no row of them, so the bulk filter must scan for them."""
    query = delete(search_keys).where(search_keys.c.structure == structure)
    conn.execute(query.where(search_keys.c.key.not_in(list(keys))) if keys else query)


def mark_filled(conn: Connection, structure: str, key: str, at: datetime) -> None:
    """Record that every token of `structure` has its rows of `key`."""
    conn.execute(insert(search_keys).values(structure=structure, key=key, filled_at=at))


def live_top_after(
    conn: Connection, structure: str, after: str | None, limit: int
) -> list[tuple[str, Any]]:
    """(token, context) of the next live top tokens of `structure` in id order after `after`."""
    query = select(tokens.c.token, tokens.c.context).where(
        TOKEN_IS_LIVE_TOP, tokens.c.structure == structure
    )
    if after is not None:
        query = query.where(tokens.c.token > after)
    rows = conn.execute(query.order_by(tokens.c.token).limit(limit))
    return [(row[0], row[1]) for row in rows]


def count_live_top(conn: Connection, structure: str) -> int:
    """How many live top tokens run on `structure` (the walk of `tokens_structure`)."""
    query = select(func.count()).select_from(tokens)
    query = query.where(TOKEN_IS_LIVE_TOP, tokens.c.structure == structure)
    return int(conn.execute(query).scalar() or 0)
