"""Search keys: the keys each version indexes, and a transaction's writes of the
rows of its top tokens whose context changed (`Tx.flush` calls `write_keys`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from stateous.control.engine.versions import Versions
from stateous.control.errors import conflict, invalid
from stateous.control.store import token_keys
from stateous.control.store.retention import tops_after
from stateous.control.store.stats import counts
from stateous.model.canonical import canonical_json
from stateous.model.graph import Graph


def search_of(graph: Graph) -> tuple[str, ...]:
    """The searchable keys of a graph's main workflow (empty when it declares none)."""
    return graph.search


def searching(versions: Versions) -> bool:
    """Whether any version known declares a search key: if none does, a context change
    writes no row and reads nothing more (the hot path of a graph without search keys)."""
    return versions.searches


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


def search_texts(versions: Versions, wanted: Mapping[str, Any]) -> dict[str, str]:
    """The JSON text each wanted key is searched by; a key no version searches by is
    `422 invalid_argument` naming it and the search keys."""
    known = searchable(versions)
    for key in wanted:
        if key not in known:
            keys = ", ".join(sorted(known))
            raise invalid(
                "invalid_argument",
                f"the context key {key!r} is not a search key; "
                + (f"the search keys are {keys}" if keys else "the workflow has no search keys"),
            )
    # A value too long to be indexed finds no token: its text is never in `token_keys`.
    return {
        key: token_keys.key_text(value) or canonical_json(value) for key, value in wanted.items()
    }


def check_ready(
    conn: Connection,
    versions: Versions,
    filling: Mapping[tuple[str, str], tuple[int, int]],
    keys: Collection[str],
) -> None:
    """`409 search_not_ready` while a key is being filled for the tokens of a version that
    searches by it, with the progress when this control plane fills it (`filling`:
    `EngineConfig.filling`)."""
    done = token_keys.filled(conn)
    for graph in versions.graphs():
        for key in search_of(graph):
            if key in keys and (graph.structure, key) not in done:
                progress = filling.get((graph.structure, key))
                raise conflict("search_not_ready", not_ready(key, progress))


def not_ready(key: str, progress: tuple[int, int] | None) -> str:
    """The sentence of `409 search_not_ready`."""
    if progress is None:
        return f"the search key {key!r} is being filled; try again soon"
    done, total = progress
    return f"the search key {key!r} is being filled: {done:,} of {total:,} tokens; try again soon"


def settle_keys(conn: Connection, graph: Graph, at: datetime) -> None:
    """At a graph's serve: its search keys not filled yet are filled at once when its
    structure has no live top token (a new database, a new structure); else the holder's
    `SearchFiller` fills them."""
    token_keys.forget_unsearched(conn, graph.structure, search_of(graph))
    done = token_keys.filled(conn)
    todo = [key for key in search_of(graph) if (graph.structure, key) not in done]
    if todo and token_keys.count_live_top(conn, graph.structure) == 0:
        for key in todo:
            token_keys.mark_filled(conn, graph.structure, key, at)


#: Top tokens a statement of `index_imported` reads.
INDEX_BATCH = 500


def index_imported(conn: Connection, graph: Graph) -> int:
    """At the first serve of a graph's structure: index the search keys of the top tokens of
    that structure already in the database, answering how many. Only an import puts them there
    before (ended tokens of an archive), and it could index none: no graph of theirs was known.

    Read from the kept counts first, so a structure without such tokens (every new version
    served) costs no walk of the tokens."""
    keys = search_of(graph)
    if not keys or not _has_tops(conn, graph.structure):
        return 0
    done, after = 0, None
    while batch := tops_after(conn, graph.structure, after, INDEX_BATCH):
        rows = {token: token_keys.rows_of(token, context, keys)
                for token, context in batch if isinstance(context, dict)}  # fmt: skip
        token_keys.replace_keys(conn, rows)
        done += len(batch)
        after = batch[-1][0]
    return done


def _has_tops(conn: Connection, structure: str) -> bool:
    """Whether the counts hold a top token of `structure`, of any status."""
    return any(
        count.kind == "token" and not count.workflow and count.structure == structure
        for count in counts(conn)
    )
