"""The supervisor's outbox, `FOLDER/.stateous/outbox.db` (seed 000, spec 40 §5).

One SQLite file with one table, `messages`. Every message is committed before it is sent, and
leaves the table when the control plane answers it for good. The file is held under an exclusive
lock for the whole life of the supervisor, so a second supervisor on the folder cannot start.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from stateous.model.errors import StateousError

__all__ = ["Message", "MessageKind", "Outbox", "OutboxError", "OutboxLocked", "debug_point"]

MessageKind = Literal["report", "note", "memory"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    token TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('report', 'note', 'memory')),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""


class OutboxError(StateousError):
    """The outbox cannot be opened or written; the message says why."""

    code = "outbox"


class OutboxLocked(OutboxError):
    """Another supervisor holds the outbox of this folder."""


@dataclass(frozen=True)
class Message:
    """One row of `messages`."""

    id: int
    task: int
    attempt: int
    token: str
    kind: MessageKind
    body: dict[str, Any]
    created_at: str


def debug_point(name: str) -> None:
    """A named crash point for durability tests: kills the process when armed, else nothing.

    `STATEOUS_DEBUG_POINT=<name>` arms it (SIGKILL at that point, as a power cut would).
    """
    if os.environ.get("STATEOUS_DEBUG_POINT") == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class Outbox:
    """The open outbox of one folder, holding its exclusive lock until `close()`.

    Safe to use from the event loop and from the threads of `def` routines.
    """

    def __init__(self, folder: Path) -> None:
        absolute = folder.resolve()
        directory = absolute / ".stateous"
        self.path = directory / "outbox.db"
        try:
            directory.mkdir(exist_ok=True)
        except OSError as exc:
            raise OutboxError(f"cannot make {directory}: {exc.strerror or exc}") from None
        try:
            # timeout=0: the lock is taken without waiting (spec 40 §4.2 step 2).
            self._conn = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise OutboxError(f"cannot open {self.path}: {exc}") from None
        self._lock = threading.Lock()
        try:
            self._conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._conn.execute("PRAGMA synchronous=FULL")
            # A write transaction takes the exclusive lock; EXCLUSIVE mode keeps it until close.
            self._conn.execute("BEGIN EXCLUSIVE")
            self._conn.execute(_SCHEMA)
            self._conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self._conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise OutboxLocked(
                    f"another supervisor runs on {absolute} now: stop it, or use another folder"
                ) from None
            raise OutboxError(f"cannot use {self.path}: {exc}") from None
        except sqlite3.Error as exc:
            self._conn.close()
            raise OutboxError(f"cannot use {self.path}: {exc}") from None

    def add(
        self, task: int, attempt: int, token: str, kind: MessageKind, body: dict[str, Any]
    ) -> Message:
        """Insert and commit one message; raises OutboxError (the disk is full, ...)."""
        text = json.dumps(body, allow_nan=False, ensure_ascii=False)
        created = datetime.now(UTC).isoformat()
        try:
            with self._lock:
                cursor = self._conn.execute(
                    "INSERT INTO messages (task, attempt, token, kind, body, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (task, attempt, token, kind, text, created),
                )
        except sqlite3.Error as exc:
            raise OutboxError(str(exc)) from None
        message_id = cursor.lastrowid
        if message_id is None:  # pragma: no cover - SQLite always sets it after an INSERT
            raise OutboxError("the outbox gave no id")
        debug_point(f"after_outbox_commit:{kind}")
        return Message(message_id, task, attempt, token, kind, body, created)

    def remove(self, message_id: int) -> None:
        """Remove one message: the control plane answered it for good."""
        with self._lock:
            self._conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))

    def remove_attempt(self, task: int, attempt: int) -> int:
        """Remove every message of a task's attempt (the task was lost); answers how many."""
        with self._lock:
            cursor = self._conn.execute(
                "DELETE FROM messages WHERE task = ? AND attempt = ?", (task, attempt)
            )
        return cursor.rowcount

    def pending(self) -> list[Message]:
        """Every message, in id order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, task, attempt, token, kind, body, created_at FROM messages ORDER BY id"
            ).fetchall()
        return [Message(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6]) for r in rows]

    def count(self) -> int:
        """How many messages wait."""
        with self._lock:
            (n,) = self._conn.execute("SELECT COUNT(*) FROM messages").fetchone()
        return int(n)

    def close(self) -> None:
        """Release the lock."""
        with self._lock:
            self._conn.close()
