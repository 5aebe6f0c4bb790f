"""Wake-ups across control planes: `LISTEN stateous_queued` on Postgres.

The database sends `NOTIFY stateous_queued, '<state>'` inside every transaction that queues a
task (the triggers of migration 0007), whichever control plane ran it. Each control plane keeps
one dedicated connection (psycopg, autocommit) listening on that channel, in a thread of its
own, and wakes its held claims for the notified state.

Notifications sent while the connection is down are lost. So when the connection is (re)opened,
every held claim looks at the queue once: a lost notification never leaves a task waiting for
a claim's whole `wait`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from sqlalchemy import URL

from stateous.control.store.db import postgres_connect_args
from stateous.control.ticker import one_line
from stateous.control.wakeups import Wakeups

__all__ = ["CHANNEL", "Listener", "conninfo"]

log = logging.getLogger("stateous.listen")

CHANNEL = "stateous_queued"

#: How long one wait for notifications lasts before the thread looks whether it must stop.
POLL_SECONDS = 0.25


def conninfo(url: URL) -> str:
    """The libpq URL of an SQLAlchemy Postgres URL (its driver name dropped)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class Listener:
    """One listening connection and the thread that reads it; `start()`, then `stop()`."""

    def __init__(self, url: URL, wakeups: Wakeups, retry: float = 1.0) -> None:
        self._conninfo = conninfo(url)
        self._wakeups = wakeups
        self._retry = retry
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: How many times the connection was opened (tests read it).
        self.opened = 0
        self._connected = threading.Event()

    def start(self) -> None:
        """Start listening in a thread of its own (it keeps trying until the database answers)."""
        self._thread = threading.Thread(target=self._run, name="stateous-listen", daemon=True)
        self._thread.start()

    def wait_connected(self, timeout: float) -> bool:
        """Wait until the connection listens (tests and start-up); False after `timeout`."""
        return self._connected.wait(timeout)

    def stop(self) -> None:
        """Stop listening and close the connection (within about a quarter second)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                self._listen()
                failing = False
            except Exception as exc:  # the connection failed or ended: open a new one
                self._connected.clear()
                if not failing:
                    log.warning(
                        "the connection that listens for queued tasks failed (%s); "
                        "opening a new one every %s seconds",
                        one_line(exc),
                        repr(float(self._retry)),
                    )
                failing = True
                self._stop.wait(self._retry)

    def _listen(self) -> None:
        import psycopg  # only a control plane on Postgres listens; SQLite's does without it

        args: dict[str, Any] = postgres_connect_args()
        with psycopg.connect(self._conninfo, autocommit=True, **args) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self.opened += 1
            self._connected.set()
            if self.opened > 1:
                log.warning("the connection that listens for queued tasks is open again")
            # What was notified while no connection listened is lost: every held claim looks
            # at the queue once now.
            self._wakeups.notify()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=POLL_SECONDS):
                    self._wakeups.notify(note.payload or None)
        self._connected.clear()


def close_quietly(listener: Listener | None) -> None:
    """Stop a listener if there is one; never raises (used on every way out of `serve`)."""
    if listener is not None:
        with contextlib.suppress(Exception):
            listener.stop()
