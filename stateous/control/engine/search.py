"""Search keys (spec 95 §1): the keys each version indexes, and a transaction's writes of the
rows of its top tokens whose context changed (`Tx.flush` calls `write_keys`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import Connection

from stateous.control.engine.versions import Versions
from stateous.control.store import token_keys
from stateous.model.graph import Graph


def search_of(graph: Graph) -> tuple[str, ...]:
    """The searchable keys of a graph's main workflow (empty when it declares none)."""
    declared = getattr(graph, "search", None)
    if declared is None:
        declared = graph.doc.get("search", ())
    return tuple(declared)


def searching(versions: Versions) -> bool:
    """Whether any version known declares a search key: if none does, a context change
    writes no row and reads nothing more (the hot path of a graph without search keys)."""
    return any(search_of(graph) for graph in versions.graphs())


def searchable(versions: Versions) -> set[str]:
    """Every key searchable in some version known (the keys `GET /tokens` accepts)."""
    return {key for graph in versions.graphs() for key in search_of(graph)}


def write_keys(
    conn: Connection,
    versions: Versions,
    started: Mapping[str, Mapping[str, Any]],
    changed: Collection[str],
) -> None:
    """Write the rows of new top tokens (`started`: token → context, on the current version)
    and replace those of tokens whose context or structure `changed` (read back as written;
    a child has none)."""
    current = search_of(versions.current)
    rows = [
        row
        for token, context in started.items()
        if token not in changed
        for row in token_keys.rows_of(token, context, current)
    ]
    token_keys.insert_keys(conn, rows)
    if changed:
        replaced = {
            token: token_keys.rows_of(token, context, search_of(versions.of(structure)))
            for token, structure, context in token_keys.top_rows(conn, changed)
            if isinstance(context, dict)
        }
        token_keys.replace_keys(conn, replaced)
