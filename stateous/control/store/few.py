"""Filters of the token listing that some values make rare and others common: an id prefix and
a search key's value: a prefix matching a million ids and one matching three must both be
fast.

A listing walks an index in its order (most recently moved first) and stops at its page; that
is quick when many tokens match, and a scan of every token when few do. For few, the quick way
is the opposite: find them by their index and sort them. No planner is told the count before it
plans (a prepared statement's plan is made without the values), so the store asks it: a probe
counts at most `FEW + 1` ids through the filter's own index; when there are `FEW` or fewer, the
listing takes exactly these ids (`token IN`, then a sort of at most `FEW` rows); else it walks
its order with a condition no index serves, so the planner walks.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, Connection, String, func, select

from stateous.control.store.dialect import dialect_of
from stateous.control.store.tables import token_keys, tokens

__all__ = ["FEW", "Narrowed", "bound", "narrow", "next_text"]

#: The most ids a listing sorts; beyond, it walks its index. When the matches are spread over a
#: million tokens, a walk to a page of 100 reads about 100 × 1,000,000 / FEW entries, about what
#: reading and sorting FEW rows costs.
FEW = 5000


class Narrowed:
    """The conditions on `tokens` for a prefix and search keys, and the ids they allow when
    they are few (None: a walk)."""

    def __init__(self) -> None:
        self.conditions: list[ColumnElement[bool]] = []
        self.ids: list[str] | None = None

    def only(self, found: list[str]) -> None:
        """Keep the ids found by one probe (the fewest of several probes)."""
        if self.ids is None or len(found) < len(self.ids):
            self.ids = found


def next_text(prefix: str) -> str | None:
    """The first text after every text starting with `prefix` in code point order, or None
    when there is none (a prefix of only the last code point)."""
    chars = list(prefix)
    while chars:
        point = ord(chars.pop()) + 1
        if point == 0xD800:  # surrogates are no characters of a UTF-8 text
            point = 0xE000
        if point <= sys.maxunicode:
            return "".join(chars) + chr(point)
    return None


def _starts(prefix: str) -> ColumnElement[bool]:
    # Exact on both databases (case counts, as it does in Postgres's LIKE), and no index
    # serves it: a listing with it walks its order.
    return func.substr(tokens.c.token, 1, len(prefix)) == prefix


def narrow(conn: Connection, prefix: str | None, context: Mapping[str, str] | None) -> Narrowed:
    """The prefix's and each search key's conditions, after a probe of each."""
    narrowed = Narrowed()
    dialect = dialect_of(conn)
    # A probe of a million matches stops at FEW + 1; Postgres would start workers for it (a
    # Parallel Seq Scan, 51 ms) and for the walk after it.
    dialect.serial(conn)
    if prefix is not None:
        ids = select(tokens.c.token).where(
            dialect.in_code_order(tokens.c.token, prefix, next_text(prefix)), _starts(prefix)
        )
        _probe(conn, narrowed, ids)
        narrowed.conditions.append(_starts(prefix))
    for key, text in (context or {}).items():
        found = select(token_keys.c.token).where(token_keys.c.key == key)
        found = found.where(token_keys.c.value == text)
        _probe(conn, narrowed, found)
        # Checked for each token the walk meets (through the key's primary key), never built as
        # the set of every token with the value.
        narrowed.conditions.append(found.where(token_keys.c.token == tokens.c.token).exists())
    if narrowed.ids is not None:
        narrowed.conditions.append(dialect.in_one_value(tokens.c.token, "few_ids", String))
    return narrowed


def _probe(conn: Connection, narrowed: Narrowed, ids: Any) -> None:
    # Counted in the database first: reading FEW ids into Python costs more than walking to
    # the page, and a common value is the usual case.
    counted = select(func.count()).select_from(ids.limit(FEW + 1).subquery())
    if conn.execute(counted).scalar_one() <= FEW:
        narrowed.only(list(conn.execute(ids).scalars()))


def bound(narrowed: Narrowed) -> dict[str, Any]:
    """The values the conditions bind."""
    return {} if narrowed.ids is None else {"few_ids": narrowed.ids}
