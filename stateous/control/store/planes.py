"""The live control planes: each writes its name, role and `seen_at` every 10 s.

A control plane is live when its row was written within `LIVE_BEATS` of its intervals; the rows
of control planes that stopped answering are deleted by the next write of any other one, and a
clean stop deletes its own row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from stateous.control.clock import iso
from stateous.control.store.tables import control_plane, control_planes

__all__ = ["EVERY", "LIVE_BEATS", "PlaneRow", "leave", "live_planes", "write_plane"]

#: How often each control plane writes its row.
EVERY = timedelta(seconds=10)

#: A row not rewritten for this many intervals belongs to a control plane that is gone.
LIVE_BEATS = 3


@dataclass(frozen=True)
class PlaneRow:
    """One control plane: `host:pid:id`, `holder` or `replica`, its start, its last write."""

    name: str
    role: str
    started_at: datetime
    seen_at: datetime

    def wire(self) -> dict[str, Any]:
        """The entry of `GET /control-planes`."""
        return {
            "name": self.name,
            "role": self.role,
            "started_at": iso(self.started_at),
            "seen_at": iso(self.seen_at),
        }


def write_plane(
    conn: Connection, name: str, role: str, started_at: datetime, now: datetime, gone: datetime
) -> None:
    """Write this control plane's row (`seen_at` = now) and delete rows not seen since `gone`."""
    values = {"role": role, "seen_at": now}
    changed = conn.execute(
        update(control_planes).where(control_planes.c.name == name).values(**values)
    ).rowcount
    if not changed:
        conn.execute(insert(control_planes).values(name=name, started_at=started_at, **values))
    conn.execute(delete(control_planes).where(control_planes.c.seen_at < gone))


def leave(conn: Connection, name: str) -> None:
    """Delete this control plane's row (a clean stop)."""
    conn.execute(delete(control_planes).where(control_planes.c.name == name))


def live_planes(conn: Connection, since: datetime) -> list[PlaneRow]:
    """The control planes seen at or after `since`: the holder first, then by name.

    A row that says `holder` but is not the one `control_plane.serving` names belongs to a
    holder that ended (killed, or its hold taken) in the last 30 s: it is left out.
    """
    serving = conn.execute(select(control_plane.c.serving).where(control_plane.c.id == 1)).scalar()
    rows = conn.execute(
        select(control_planes)
        .where(control_planes.c.seen_at >= since)
        .order_by(control_planes.c.name)
    ).all()
    found = [
        PlaneRow(r.name, r.role, r.started_at, r.seen_at)
        for r in rows
        if r.role != "holder" or r.name == serving
    ]
    return sorted(found, key=lambda row: (row.role != "holder", row.name))
