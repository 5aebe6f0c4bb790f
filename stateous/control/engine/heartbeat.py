"""Heartbeat: `POST /tasks/heartbeat` renews leases in one statement."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.tasks import renew_leases


def heartbeat(
    conn: Connection, clock: Clock, config: EngineConfig, supervisor: str, tasks: Sequence[int]
) -> list[int]:
    """Renew the leases still held by `supervisor`; answer the listed ids not renewed, sorted."""
    if not tasks:
        return []
    now = clock.now()
    renewed = renew_leases(conn, supervisor, sorted(set(tasks)), now, now + config.lease)
    return sorted(set(tasks) - renewed)
