"""The supervisor's outbox, `FOLDER/.stateous/outbox.db`.

One SQLite file with one table, `messages`. Every message is committed before it is sent, and
leaves the table when the control plane answers it for good. The file is held under an exclusive
lock for the whole life of the supervisor, so a second supervisor on the folder cannot start.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from stateous.model.errors import StateousError
from stateous.supervisor.debug_points import debug_point

__all__ = ["Message", "MessageKind", "Outbox", "OutboxError", "OutboxLocked"]

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
            # timeout=0: the lock is taken without waiting: a second supervisor of a folder stops.
            self._conn = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise OutboxError(f"cannot open {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self._group = _GroupCommit(self._conn, self._lock)
        try:
            self._conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._conn.execute("PRAGMA synchronous=FULL")
            # WAL: a commit appends to one file and syncs it (a rollback journal is created,
            # synced and removed each time), about half the CPU and wall time of a commit. In
            # EXCLUSIVE mode its index lives in memory (no -shm); a reader after a crash, the
            # console or the next start, recovers the committed messages from the -wal file.
            self._conn.execute("PRAGMA journal_mode=WAL")
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
            message_id = self._group.write(
                "INSERT INTO messages (task, attempt, token, kind, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (task, attempt, token, kind, text, created),
            )[0]
        except sqlite3.Error as exc:
            raise OutboxError(str(exc)) from None
        if message_id is None:  # pragma: no cover - SQLite always sets it after an INSERT
            raise OutboxError("the outbox gave no id")
        debug_point(f"after_outbox_commit:{kind}")
        return Message(message_id, task, attempt, token, kind, body, created)

    def remove(self, message_id: int) -> None:
        """Remove one message: the control plane answered it for good."""
        self._group.write("DELETE FROM messages WHERE id = ?", (message_id,))

    def remove_many(self, message_ids: list[int]) -> None:
        """Remove messages the control plane answered for good, in one commit."""
        if message_ids:
            marks = ", ".join("?" * len(message_ids))
            self._group.write(f"DELETE FROM messages WHERE id IN ({marks})", tuple(message_ids))

    def remove_attempt(self, task: int, attempt: int) -> int:
        """Remove every message of a task's attempt (the task was lost); answers how many."""
        return self._group.write(
            "DELETE FROM messages WHERE task = ? AND attempt = ?", (task, attempt)
        )[1]

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


class _GroupCommit:
    """Writes from several threads at once share one commit (one fsync), each durable on return.

    A writer queues its statement; the first writer that finds no commit in progress runs every
    queued statement in one transaction and commits it, while the others wait for that commit.
    With `synchronous=FULL` a commit costs a few milliseconds of disk flush: sharing it lets a
    supervisor with many routines finishing at once report them at the disk's pace, not one
    flush per message. A batch that fails is rolled back and its statements run one by one, so
    each writer gets its own answer or error.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self._conn = conn
        self._lock = lock  # the connection's lock: reads take it too
        self._turn = threading.Condition()
        self._queue: list[_Write] = []
        self._writing = False

    def write(self, sql: str, params: tuple[Any, ...]) -> tuple[int | None, int]:
        """Run one statement in a committed transaction: (lastrowid, rowcount)."""
        entry = _Write(sql, params)
        with self._turn:
            self._queue.append(entry)
            while not entry.done:
                if self._writing:
                    self._turn.wait()
                    continue
                self._writing = True
                batch, self._queue = self._queue, []
                self._turn.release()
                try:
                    self._commit(batch)
                finally:
                    self._turn.acquire()
                    self._writing = False
                    self._turn.notify_all()
        if entry.error is not None:
            raise entry.error
        return entry.lastrowid, entry.rowcount

    def _commit(self, batch: list[_Write]) -> None:
        with self._lock:
            if len(batch) > 1:
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                    for entry in batch:
                        entry.run(self._conn)
                    self._conn.execute("COMMIT")
                    for entry in batch:
                        entry.done = True
                    return
                except sqlite3.Error:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
            for entry in batch:  # alone, or one by one after a failed batch
                try:
                    entry.run(self._conn)
                except sqlite3.Error as exc:
                    entry.error = exc
                entry.done = True


class _Write:
    """One queued statement and, once committed, its outcome."""

    __slots__ = ("done", "error", "lastrowid", "params", "rowcount", "sql")

    def __init__(self, sql: str, params: tuple[Any, ...]) -> None:
        self.sql = sql
        self.params = params
        self.done = False
        self.error: sqlite3.Error | None = None
        self.lastrowid: int | None = None
        self.rowcount = 0

    def run(self, conn: sqlite3.Connection) -> None:
        cursor = conn.execute(self.sql, self.params)
        self.lastrowid, self.rowcount = cursor.lastrowid, cursor.rowcount
