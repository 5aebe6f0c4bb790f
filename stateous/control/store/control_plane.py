"""The statements of `control_plane`, its one row: the structure served, and by whom.

Each statement runs through `Connection.execute`; the row is read `FOR UPDATE` where writers
run side by side (`Dialect.for_update`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from stateous.control.store.dialect import dialect_of
from stateous.control.store.records import ControlPlaneRecord
from stateous.control.store.tables import control_plane


def read_control_plane(conn: Connection, *, for_update: bool = False) -> ControlPlaneRecord:
    """The control_plane row (locked where writers run side by side, when asked)."""
    query = select(control_plane).where(control_plane.c.id == 1)
    if for_update:
        query = dialect_of(conn).for_update(query)
    row = conn.execute(query).first()
    if row is None:
        return ControlPlaneRecord(None, None, None, None)
    m = row._mapping
    return ControlPlaneRecord(m["structure"], m["checksum"], m["serving"], m["since"])


def write_control_plane(conn: Connection, **values: Any) -> None:
    """Change columns of the control_plane row."""
    conn.execute(update(control_plane).where(control_plane.c.id == 1).values(**values))
