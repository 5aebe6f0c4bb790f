"""The statements of `tokens`: reads by id, inserts, changes, the listing and counts.

The hot statements are built once and run through `direct` (the driver's cursor); the read
ignoring case of a child's id, the listing, the children and the count, built at each call,
through `Connection.execute`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    String,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)

from stateous.control.store.dialect import DIALECTS, Dialect, dialect_of, per_dialect
from stateous.control.store.direct import execute as run
from stateous.control.store.few import Narrowed, bound, narrow
from stateous.control.store.records import TokenRecord
from stateous.control.store.rows import IN_MOST, insert_rows
from stateous.control.store.tables import tokens

# Hot statements are built once: SQLAlchemy then only binds parameters.
_GET_TOKEN = select(tokens).where(tokens.c.token == bindparam("t"))
_ANY_CASE = select(tokens).where(func.lower(tokens.c.token) == func.lower(bindparam("t"))).limit(2)
_INSERT_TOKEN = insert(tokens)
# An UPDATE without values sets the columns named by the parameters, besides the key's own.
_UPDATE_TOKEN = update(tokens).where(tokens.c.token == bindparam("token_id"))
# The ids are one bound value (a JSON array on SQLite, an array on Postgres), so the statement
# is the same for any number of them and runs on the driver's cursor (`direct`); both walk the
# unique index `tokens_folded`.
_FOLDED_IN = per_dialect(
    lambda dialect: select(tokens).where(
        dialect.in_one_value(func.lower(tokens.c.token), "lowered", String)
    )
)
_TOKEN_COLUMNS = tuple(c.name for c in tokens.c)

#: The columns of a token's wire shape, in `views.wire_of`'s order.
WIRE_COLUMNS = (
    tokens.c.token, tokens.c.state, tokens.c.status, tokens.c.visit, tokens.c.context,
    tokens.c.entered_at, tokens.c.parent, tokens.c.structure,
)  # fmt: skip


def get_token(conn: Connection, token: str) -> TokenRecord | None:
    """The token with exactly this id, or None."""
    row = run(conn, _GET_TOKEN, {"t": token}).first()
    return TokenRecord.from_row(row) if row else None


def token_any_case(conn: Connection, token: str) -> tuple[TokenRecord | None, str | None]:
    """(the token with exactly this id, the id of another equal to it ignoring case) in one read."""
    exact, other = None, None
    for row in run(conn, _ANY_CASE, {"t": token}):
        record = TokenRecord.from_row(row)
        if record.token == token:
            exact = record
        else:
            other = record.token
    return exact, other


def token_folded(conn: Connection, token: str) -> str | None:
    """The id of a token equal to `token` ignoring case, or None."""
    query = select(tokens.c.token).where(func.lower(tokens.c.token) == token.lower())
    return conn.execute(query.limit(1)).scalar()


def insert_token(conn: Connection, record: TokenRecord) -> None:
    """Insert a new token row."""
    run(conn, _INSERT_TOKEN, record.__dict__)


def tokens_folded_in(conn: Connection, lowered: Sequence[str]) -> dict[str, TokenRecord]:
    """The tokens whose ids, in lower case, are among `lowered` (ASCII ids in lower case),
    keyed by that: one read for a batch of starts."""
    found: dict[str, TokenRecord] = {}
    statement = _FOLDED_IN[dialect_of(conn)]
    for first in range(0, len(lowered), IN_MOST):
        chunk = list(lowered[first : first + IN_MOST])
        for row in run(conn, statement, {"lowered": chunk}):
            record = TokenRecord.from_row(row)
            found[record.token.lower()] = record
    return found


def insert_tokens(conn: Connection, records: Sequence[TokenRecord]) -> None:
    """Insert new token rows, `rows.ROWS_MOST` a statement."""
    insert_rows(conn, tokens, _TOKEN_COLUMNS, [record.__dict__ for record in records])


def update_token(conn: Connection, token: str, **values: Any) -> None:
    """Change columns of one token."""
    run(conn, _UPDATE_TOKEN, {"token_id": token, **values})


def listing_columns(
    conn: Connection,
    status: str | None,
    parent: str | None,
    limit: int,
    structure: str | None = None,
    *,
    prefix: str | None = None,
    context: Mapping[str, str] | None = None,
    **more: Any,
) -> Sequence[Sequence[Any]]:
    """The listing's tokens as rows of WIRE_COLUMNS: no record is built for each of the
    thousand rows a listing may answer. `prefix` and `context` are probed first (`few`);
    `more`: `listing_query`'s other keywords."""
    narrowed, dialect = narrow(conn, prefix, context), dialect_of(conn)
    query = listing_query(
        status, parent, limit, structure, narrowed=narrowed, dialect=dialect, **more
    )
    return conn.execute(query, bound(narrowed)).all()


def listing_query(
    status: str | None,
    parent: str | None,
    limit: int,
    structure: str | None = None,
    *,
    state: str | None = None,
    after: tuple[datetime, str] | None = None,
    narrowed: Narrowed | None = None,
    dialect: Dialect = DIALECTS["sqlite"],
) -> Select[Any]:
    """The listing's query: a walk of `tokens_moved` (or `tokens_status`, `tokens_state`), in
    their order, from the row after `after` (a page's last row's `entered_at` and id: a keyset,
    never an offset). `narrowed`: the prefix's and search keys' conditions (`few.narrow`)."""
    query, leading = select(*WIRE_COLUMNS), []
    if narrowed is not None and narrowed.ids is not None:
        # A probe found few ids: they lead (read by their key, then sorted), so no index of a
        # status or a state may serve (`|| ''`); SQLite walked `tokens_status` over a million
        # completed tokens testing each against the ids (seconds).
        if status is not None:
            query = query.where(tokens.c.status.concat("") == status)
        if state is not None:
            query = query.where(tokens.c.state.concat("") == state)
        status = state = None
    # A status or a state leads the order too: the planner then walks `tokens_status` or
    # `tokens_state`, never `tokens_moved` past every token of the others.
    if status is not None:
        query, leading = (
            query.where(dialect.leading_equal(tokens.c.status, status)),
            [tokens.c.status],
        )
    elif state is not None:
        query, leading = query.where(dialect.leading_equal(tokens.c.state, state)), [tokens.c.state]
    if state is not None and status is not None:
        query = query.where(tokens.c.state == state)
    if parent is not None:
        query = query.where(tokens.c.parent == parent)
    if structure is not None:
        query = query.where(tokens.c.structure == structure)
    if narrowed is not None:
        query = query.where(*narrowed.conditions)
    if after is not None:
        query = query.where(after_moved(*after))
    order = [*leading, tokens.c.entered_at.desc(), tokens.c.token.asc()]
    return query.order_by(*order).limit(limit)


def after_moved(entered_at: datetime, token: str) -> ColumnElement[bool]:
    """The tokens listed after (`entered_at`, `token`), most recently moved first: the first
    term bounds the index walk, the second skips the page's own time's first ids."""
    moved = tokens.c.entered_at
    return and_(moved <= entered_at, or_(moved < entered_at, tokens.c.token > token))


def children_of(conn: Connection, parent: str) -> list[TokenRecord]:
    """Every child token of `parent` (all visits), by id."""
    query = select(tokens).where(tokens.c.parent == parent).order_by(tokens.c.token)
    return [TokenRecord.from_row(row) for row in conn.execute(query)]


def count_live(conn: Connection) -> int:
    """How many tokens are active or paused."""
    query = select(func.count()).select_from(tokens)
    return int(conn.execute(query.where(tokens.c.status.in_(("active", "paused")))).scalar() or 0)
