"""The statements of a token's trace: `token_traces` written with a start, read by
the spans of later operations and by `GET /tokens/{id}`, deleted with the token by a prune."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, delete, insert, select

from stateous.control.store.rows import IN_MOST
from stateous.control.store.tables import timers, token_traces

__all__ = ["delete_traces", "insert_traces", "timer_facts", "trace_of", "traces_of"]


def insert_traces(conn: Connection, pairs: Iterable[tuple[str, str]]) -> None:
    """Keep each new token's `traceparent` (token, traceparent); nothing for none."""
    values = [{"token": token, "traceparent": parent} for token, parent in pairs]
    if values:
        conn.execute(insert(token_traces), values)


def trace_of(conn: Connection, token: str) -> str | None:
    """The token's `traceparent`, or None when it has no trace."""
    query = select(token_traces.c.traceparent).where(token_traces.c.token == token)
    found: str | None = conn.execute(query).scalar()
    return found


def traces_of(conn: Connection, tokens: Sequence[str]) -> dict[str, str]:
    """The `traceparent` of each of these tokens that has one."""
    if not tokens:
        return {}
    t = token_traces.c
    query = select(t.token, t.traceparent).where(t.token.in_(tokens))
    return {token: parent for token, parent in conn.execute(query)}


def delete_traces(conn: Connection, tokens: Sequence[str]) -> None:
    """Delete these tokens' traces (a prune)."""
    for first in range(0, len(tokens), IN_MOST):
        part = list(tokens[first : first + IN_MOST])
        conn.execute(delete(token_traces).where(token_traces.c.token.in_(part)))


def timer_facts(conn: Connection, timer_id: int) -> tuple[str, str, int] | None:
    """A timer's token, state and visit, for the span of its firing; None: no such timer."""
    query = select(timers.c.token, timers.c.state, timers.c.visit).where(timers.c.id == timer_id)
    row = conn.execute(query).first()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))
