"""Which version a control plane serves: recorded at start, followed by
replicas, made current again by a replica that takes the hold.

The versions tokens run on are read from `workflow_versions` into `Versions`; the current
one is the `control_plane` row's checksum.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import Connection

from stateous.control.engine.search import index_imported
from stateous.control.engine.versions import Versions
from stateous.control.store.control_plane import read_control_plane, write_control_plane
from stateous.control.store.db import Store
from stateous.control.store.retention import structure_on_record
from stateous.control.store.versions import live_by_structure, record_version, version_rows
from stateous.model.canonical import canonical_json
from stateous.model.errors import StateousError
from stateous.model.graph import Graph
from stateous.model.versions import short

__all__ = [
    "follow_current",
    "load_versions",
    "older_versions_line",
    "record_served",
]

log = logging.getLogger("stateous.control")


def record_served(conn: Connection, graph: Graph, now: datetime) -> None:
    """Record `graph` as a version (if its checksum is new) and make it current.

    Refuses when live tokens run on a structure whose graph is not on record (a database of
    before versions, last served with another graph file): they could not be run. At the first
    serve of a structure, the search keys of its tokens imported before are indexed.
    """
    read_control_plane(conn, for_update=True)
    first = not structure_on_record(conn, graph.structure)
    record_version(conn, graph.checksum, graph.structure, canonical_json(graph.doc), now)
    if first and (indexed := index_imported(conn, graph)):
        log.info("indexed the search keys of %d imported tokens", indexed)
    known = {row.structure for row in version_rows(conn, graphs=False)}
    unknown = {s: n for s, n in live_by_structure(conn).items() if s not in known}
    if unknown:
        count = sum(unknown.values())
        raise StateousError(
            f"refusing to serve: {count} token(s) are active or paused on a structure of the "
            f"workflow {graph.workflow!r} whose graph is not on record; serve the graph file "
            "they started on once, so that it is recorded, then serve this one"
        )
    write_control_plane(conn, structure=graph.structure, checksum=graph.checksum)


def load_versions(store: Store, current: Graph) -> Versions:
    """The versions on record, `current` the current one; a structure served later by another
    control plane is read when a token of it is first met."""
    versions = Versions(current, load=lambda: store.read(version_rows))
    versions.reload()
    return versions


def older_versions_line(conn: Connection, current: Graph) -> str | None:
    """`serve`'s line about live top tokens of other structures, or None when there are none:
    `12 live token(s) stay on 1 older version (sha256:99ab12cd…); they keep running on it: see
    stateous versions`."""
    live = {s: n for s, n in live_by_structure(conn).items() if s != current.structure}
    if not live:
        return None
    newest: dict[str, str] = {}
    for row in version_rows(conn, graphs=False):  # newest first: each structure's newest checksum
        newest.setdefault(row.structure, row.checksum)
    names = ", ".join(f"sha256:{short(newest.get(s, s))}…" for s in live)
    count, many = sum(live.values()), len(live)
    plural = "version" if many == 1 else "versions"
    pronoun = "it" if many == 1 else "them"
    return (
        f"{count} live token(s) stay on {many} older {plural} ({names}); they keep running "
        f"on {pronoun}: see stateous versions"
    )


def follow_current(store: Store, versions: Versions) -> None:
    """A replica's tick: start new tokens on the version the holder serves (the
    `control_plane` row's checksum), read from the database when it changed."""
    checksum = store.read(lambda conn: read_control_plane(conn).checksum)
    if checksum is None or checksum == versions.current.checksum:
        return
    graph = versions.by_checksum(checksum)
    if graph is None:  # recorded with its row by the holder, in the same transaction
        log.warning("the holder serves %s, which is not on record; keeping the current", checksum)
        return
    versions.make_current(graph)
    log.info("new tokens start on sha256:%s… (the holder's current version)", short(checksum))
