"""The statements of `workflow_versions`: the graphs served, and the live top
tokens of each structure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, literal, select

from stateous.control.store.stats import live_tops_by_structure
from stateous.control.store.tables import workflow_versions


@dataclass(frozen=True)
class VersionRow:
    """A row of `workflow_versions`."""

    checksum: str
    structure: str
    graph: str
    first_served_at: datetime


def version_rows(conn: Connection, graphs: bool = True) -> list[VersionRow]:
    """Every version on record, newest first (then by checksum, for a stable order); without
    `graphs`, each row's `graph` is empty (a listing needs none)."""
    v = workflow_versions.c
    graph = v.graph if graphs else literal("").label("graph")
    query = select(v.checksum, v.structure, graph, v.first_served_at).order_by(
        v.first_served_at.desc(), v.checksum
    )
    return [
        VersionRow(m["checksum"], m["structure"], m["graph"], m["first_served_at"])
        for m in (row._mapping for row in conn.execute(query))
    ]


def is_on_record(conn: Connection, checksum: str) -> bool:
    """Whether the database has served the graph of this checksum."""
    query = select(workflow_versions.c.checksum).where(workflow_versions.c.checksum == checksum)
    return conn.execute(query).first() is not None


def record_version(
    conn: Connection, checksum: str, structure: str, graph: str, now: datetime
) -> bool:
    """Write the row of a version served for the first time; False when it is on record."""
    if is_on_record(conn, checksum):
        return False
    values = {"checksum": checksum, "structure": structure, "graph": graph}
    conn.execute(insert(workflow_versions).values(**values, first_served_at=now))
    return True


def live_by_structure(conn: Connection) -> dict[str, int]:
    """How many top tokens are active or paused, by structure: from the counts that migration
    0013's triggers keep, not a walk of `tokens_structure` (100,000 live tokens
    took it 120-200 ms on SQLite)."""
    return live_tops_by_structure(conn)
