"""Pinging a pooled Postgres connection before use, only when it sat idle.

SQLAlchemy's `pool_pre_ping` pings at every checkout: one round trip more for each shared
transaction, about one for every 20 statements of the engine under load. A connection that
came back to the pool a moment ago was working then; one that sat idle may have been ended
by the server (a restart, an idle timeout, a network cut). So a connection is pinged only
when it has been idle for more than `IDLE_SECONDS`. A connection that dies within that moment
fails its next transaction as a lost connection does anywhere (`503 database_busy`, and the
pool replaced; the callers retry), which is what a connection lost during a transaction
does already.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError

__all__ = ["IDLE_SECONDS", "ping_when_idle"]

#: A connection idle in the pool for longer than this is pinged when taken.
IDLE_SECONDS = 1.0

_RETURNED = "stateous_returned"


def ping_when_idle(engine: Engine, idle: float = IDLE_SECONDS) -> None:
    """Ping a connection at checkout when it was idle for more than `idle` seconds (or was
    never used); a failed ping makes the pool replace it (`DisconnectionError`)."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _taken(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED)
        if returned is not None and time.monotonic() - returned <= idle:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            # The pool ends this connection and takes (or opens) another, up to three times.
            raise DisconnectionError("the pooled connection is gone") from exc
