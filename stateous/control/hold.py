"""The single-holder rule: take, renew and give up the hold on the database.

A replica starts without the hold and tries the serving lock on each tick; when
the holder's connection ends, the first replica to try gets it and runs the clock from then on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.errors import StoreError
from stateous.control.store import migrate
from stateous.control.store.control_plane import read_control_plane, write_control_plane
from stateous.control.store.db import Store, lock_key
from stateous.control.store.locks import check_answers, try_session_lock, unlock_session
from stateous.control.store.records import ControlPlaneRecord

log = logging.getLogger("stateous.hold")

SERVE_KEY = lock_key("@stateous/serve")
TAKEN = (
    "another control plane took this database; this control plane does no more work; "
    "trying again does not help: stop this server"
)
#: Logged by a replica when it becomes the holder.
TOOK = "this control plane took the hold on the database; it runs the clock now"


class HoldRefused(StoreError):
    """Another control plane serves this database."""


def holder_name() -> str:
    """`<host name>:<pid>:<8 hex chars>`."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass
class Hold:
    """This control plane's hold: the row's `serving`, plus on Postgres a session advisory lock."""

    store: Store
    clock: Clock
    name: str = field(default_factory=holder_name)
    lapse: timedelta = timedelta(seconds=30)
    renew_every: timedelta = timedelta(seconds=10)
    #: Whether this control plane holds the database; a replica starts without.
    holding: bool = True
    #: Called once a replica took the hold (it then runs the clock and the bulk jobs).
    on_taken: Callable[[], None] | None = None
    _lock_conn: Any = None

    @property
    def role(self) -> str:
        """`holder` or `replica`, as `GET /health` and `GET /control-planes` show it."""
        return "holder" if self.holding else "replica"

    def take_and_migrate(self) -> None:
        """Take the hold, then create or upgrade the schema (a second holder never migrates)."""
        if self.store.sqlite:
            with self.store.begin() as conn:
                if "control_plane" in _tables(conn):
                    self._check_sqlite_row(conn)
                migrate.upgrade(conn)
                self._write(conn)
            return
        self._take_pg_lock()
        with self.store.begin() as conn:
            migrate.upgrade(conn)
        with self.store.begin() as conn:
            read_control_plane(conn, for_update=True)
            self._write(conn)

    def _write(self, conn: Connection) -> None:
        write_control_plane(conn, serving=self.name, since=self.clock.now())

    def _check_sqlite_row(self, conn: Connection) -> None:
        row = read_control_plane(conn)
        if self._held_by_other(row):
            seen = row.since.strftime("%H:%M:%S") if row.since else "?"
            raise HoldRefused(
                f"another control plane serves this database ({row.serving}, last seen at "
                f"{seen} UTC); stop it first"
            )

    def _held_by_other(self, row: ControlPlaneRecord) -> bool:
        if row.serving is None or row.serving == self.name or row.since is None:
            return False
        return row.since > self.clock.now() - self.lapse

    def _take_pg_lock(self) -> None:
        conn = self.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        got = try_session_lock(conn, SERVE_KEY)
        if not got:
            conn.close()
            raise HoldRefused("another control plane serves this database; stop it first")
        self._lock_conn = conn

    def renew(self) -> bool:
        """One check of the hold; False when another control plane took the database.

        A replica tries to take the hold instead, and never loses anything (always True).
        """
        if not self.holding:
            self._try_take()
            return True
        if not self.store.sqlite and not self._pg_lock_alive():
            return False
        with self.store.begin() as conn:
            row = read_control_plane(conn, for_update=True)
            if row.serving == self.name:
                if row.since is None or self.clock.now() - row.since >= self.renew_every:
                    self._write(conn)
                return True
            if self.store.sqlite and self._held_by_other(row):
                return False
            self._write(conn)
        log.warning("this control plane took its hold on the database again")
        return True

    def _pg_lock_alive(self) -> bool:
        try:
            check_answers(self._lock_conn)
            return True
        except Exception:  # a dead lock connection: try to take the lock again
            self._close_lock()
            try:
                self._take_pg_lock()
            except HoldRefused:
                return False
            log.warning("this control plane took its hold on the database again")
            return True

    def _try_take(self) -> None:
        """A replica's try (Postgres): the serving lock without waiting, then the row."""
        if self._lock_conn is None:
            self._lock_conn = self.store.engine.connect().execution_options(
                isolation_level="AUTOCOMMIT"
            )
        try:
            got = try_session_lock(self._lock_conn, SERVE_KEY)
            if got:
                with self.store.begin() as conn:
                    read_control_plane(conn, for_update=True)
                    self._write(conn)
        except BaseException:
            # A dead connection, or the row could not be written: let the lock go with the
            # connection, and try again on the next tick.
            self._close_lock()
            raise
        if not got:
            return
        self.holding = True
        log.warning(TOOK)
        if self.on_taken is not None:
            self.on_taken()

    def _close_lock(self) -> None:
        """End the lock connection for real: a pooled connection given back to the pool would
        keep its session, and the session's advisory lock with it. The lock is released first,
        while the connection still answers: a closed connection's lock ends only once the
        server notices, a moment later, and a replica trying it then would not get it."""
        with contextlib.suppress(Exception):  # the connection is gone: so is its lock
            unlock_session(self._lock_conn)
        with contextlib.suppress(Exception):  # already gone; nothing to close
            self._lock_conn.invalidate()
        with contextlib.suppress(Exception):
            self._lock_conn.close()
        self._lock_conn = None

    def give_up(self) -> None:
        """Clear the row if it still names this process, and end the Postgres lock."""
        if not self.holding:  # a replica: the row names another control plane, or none
            if self._lock_conn is not None:
                self._close_lock()
            return
        try:
            with self.store.begin() as conn:
                row = read_control_plane(conn, for_update=True)
                if row.serving == self.name:
                    write_control_plane(conn, serving=None, since=None)
        finally:
            if self._lock_conn is not None:
                self._close_lock()


def _tables(conn: Connection) -> set[str]:
    from sqlalchemy import inspect

    return set(inspect(conn).get_table_names())


def since_text(when: datetime | None) -> str:
    """`HH:MM:SS` of a time, for sentences."""
    return when.strftime("%H:%M:%S") if when else "?"
