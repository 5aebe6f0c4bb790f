"""Shared commits: operations that arrive together share one transaction.

Operations are queued on `Lanes` (the control plane owns them); a lane (a thread holding one
connection at a time) takes everything queued when it is free, runs the operations in the order
taken, and commits once. What arrives meanwhile forms the next group, so an operation alone
never waits for company; one taken alone runs in a transaction of its own (`Store.run_alone`).

A group runs first without savepoints (`run_quickly`): when every operation succeeds, the usual
case, it pays for none. When one fails, the transaction is rolled back and the group runs again
with a savepoint per operation (`run_shared`), so a refused operation undoes its own writes
alone. No operation learns its outcome before the shared commit: every future is set after it.
A failed commit fails every operation of the group with `503 database_busy`.

SQLite has one lane (one writer at a time); Postgres has `POSTGRES_LANES`, each its own
transaction, and reruns the operations of a group one by one when the database stopped it for a
deadlock.

This module builds on the store (stateous.control.store.db); the store never imports it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from stateous.control.errors import DatabaseBusy, RecordedRefusal
from stateous.control.store.db import Store, commit
from stateous.control.store.db_errors import busy, is_retry
from stateous.control.store.direct import execute_sql

log = logging.getLogger("stateous.store")

#: The most operations one shared transaction takes (a few milliseconds of work at most).
GROUP_MOST = 32

#: Postgres lanes: shared transactions committing at once (SQLite has one writer: one lane).
POSTGRES_LANES = 8

#: A lane with nothing to do for this long ends its thread (a new one starts on demand).
IDLE_SECONDS = 2.0

#: A lane with nothing to do for this long gives back the connection it keeps between groups.
HOLD_SECONDS = 0.02


@dataclass
class Op:
    """One queued operation: the engine call, its work and the future of its outcome; `task`,
    the task a report names (for `ReadAhead`), else None."""

    call: str
    work: Callable[[Connection], Any]
    future: Future[Any] = field(default_factory=Future)
    task: int | None = None


Outcome = tuple[bool, Any]


class Companion(Protocol):
    """What runs beside a lane's groups: the waiting claims of the hand-off (control.wakeups)."""

    def join(self, group: Sequence[Op]) -> list[Op]:
        """Operations to run after `group`'s own, in its transaction; each is handed to this
        lane alone."""

    def committed(self, group: Sequence[Op], outcomes: Sequence[Outcome]) -> None:
        """Called once the group is committed (or failed), before any of its futures is set."""


#: What a group's operations may read together before they run, for as long as they run
#: (stateous.control.engine.read_ahead); only a group run without savepoints reads ahead.
ReadAhead = Callable[[Connection, Sequence[Op]], AbstractContextManager[None]]


class _Group(threading.local):
    """Whether this thread runs a group now, and the last `at` taken in it."""

    active: bool = False
    floor: datetime | None = None


_group = _Group()


def group_time(now: datetime) -> datetime:
    """The `at` of an operation beginning now: never before the previous one of its group.

    Operations of one shared transaction run one after another in their lane, so their `at`s
    never decrease in commit order, even if the computer's clock steps back meanwhile.
    """
    if not _group.active:
        return now
    floor = _group.floor
    if floor is not None and now < floor:
        return floor
    _group.floor = now
    return now


class Lanes:
    """The queue of operations and the threads that commit them in groups, on `store`.

    `lanes`: how many groups commit at once (by default one on SQLite, `POSTGRES_LANES` on
    Postgres).
    """

    def __init__(self, store: Store, lanes: int | None = None, most: int = GROUP_MOST) -> None:
        self._store = store
        self._lanes = lanes if lanes is not None else 1 if store.sqlite else POSTGRES_LANES
        self._most = most
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[list[Op]] = deque()
        self._alive = 0
        self._idle = 0
        #: Set by the control plane that owns the lanes (its wake-ups); None without one.
        self.companion: Companion | None = None
        #: Set by the control plane on Postgres (reports read ahead); None: nothing is.
        self.read_ahead: ReadAhead | None = None

    def submit(self, ops: Sequence[Op]) -> None:
        """Queue operations together: they join one group, in this order, when a lane is free.

        A submission is never split between groups (two lanes could run its parts at once and
        out of order); callers submit at most `GROUP_MOST` at a time.
        """
        with self._cond:
            self._queue.append(list(ops))
            if self._idle > 0:
                self._cond.notify()
            elif self._alive < self._lanes:
                self._alive += 1
                threading.Thread(target=self._lane, name="stateous-commit", daemon=True).start()

    def _lane(self) -> None:
        try:
            with self._store.holding_connections():
                while (group := self._take()) is not None:
                    self._run(group)
        except BaseException:  # never leave the queue without a lane that counts as alive
            with self._cond:
                self._alive -= 1
            log.exception("a lane of shared transactions stopped")
            raise

    def _take(self) -> list[Op] | None:
        """Everything queued (up to the group's limit); None when idle for long: the lane ends.

        Under load the next group comes within a moment, on the connection the lane keeps; a
        lane with nothing to do for `HOLD_SECONDS` gives its connection back to the pool.
        """
        group = self._next(HOLD_SECONDS, last=False)
        if group is None:
            self._store.release_connection()
            group = self._next(IDLE_SECONDS, last=True)
        return group

    def _next(self, seconds: float, *, last: bool) -> list[Op] | None:
        """What `_take` takes, once queued within `seconds`; None when nothing came (`last`:
        the lane ends, and no longer counts as alive)."""
        with self._cond:
            while not self._queue:
                self._idle += 1
                try:
                    woken = self._cond.wait(seconds)
                finally:
                    self._idle -= 1
                if not woken and not self._queue:
                    if last:
                        self._alive -= 1
                    return None
            group = self._queue.popleft()
            while self._queue and len(group) + len(self._queue[0]) <= self._most:
                group.extend(self._queue.popleft())
            return group

    def _run(self, group: list[Op]) -> None:
        companion = self.companion
        if companion is not None:
            group = group + companion.join(group)
        try:
            outcomes = run_group(self._store, group, self.read_ahead)
        except BaseException as exc:  # every waiting operation must hear of it
            log.exception("a shared transaction failed unexpectedly")
            outcomes = [_failure(exc) for _ in group]
        if companion is not None:
            try:
                companion.committed(group, outcomes)
            except Exception:  # the answers must still go out
                log.exception("the wake-ups after a shared transaction failed")
        for op, (ok, value) in zip(group, outcomes, strict=True):
            # A request whose client went away cancelled its future; its operation ran anyway
            # (as an answer lost on the way), and the others of the group must still hear.
            with contextlib.suppress(InvalidStateError):
                if ok:
                    op.future.set_result(value)
                else:
                    op.future.set_exception(value)


def _failure(exc: BaseException) -> Outcome:
    return (False, exc)


def run_group(
    store: Store, group: Sequence[Op], read_ahead: ReadAhead | None = None
) -> list[Outcome]:
    """Run queued operations in one shared transaction and commit it once.

    An operation alone runs in a transaction of its own (no savepoint to pay for). A group
    runs first without savepoints; only when one of its operations fails is it rolled back
    and run again with a savepoint each (`run_quickly`, `run_shared`). A failed commit
    fails them all (`database_busy`); a deadlock reruns them one by one.
    """
    if len(group) == 1:
        return [_alone(store, group[0])]
    try:
        with store.turn(), store.connection(False) as conn:
            trans = conn.begin()
            try:
                quick = run_quickly(conn, group, read_ahead)
                if quick is None:  # an operation failed: again, each in its savepoint
                    trans.rollback()
                    trans = conn.begin()
                outcomes = run_shared(conn, group) if quick is None else quick
            except SQLAlchemyError as exc:
                # The transaction is lost (a lost connection, a savepoint that could not be
                # rolled back) or stopped for a deadlock: nothing of the group is applied.
                with contextlib.suppress(SQLAlchemyError):
                    trans.rollback()
                if not (isinstance(exc, DBAPIError) and is_retry(exc)):
                    return [(False, busy(exc)) for _ in group]
                outcomes = []
            else:
                commit(conn, trans)
    except DatabaseBusy as exc:  # the commit failed: nothing applied
        return [(False, busy(exc.__cause__ or exc)) for _ in group]
    except (DBAPIError, PoolTimeout) as exc:  # BEGIN or COMMIT failed: nothing applied
        return [(False, busy(exc)) for _ in group]
    if outcomes:
        return outcomes
    log.warning("the database stopped a shared transaction for a deadlock; one by one now")
    return [_alone(store, op) for op in group]


def _alone(store: Store, op: Op) -> Outcome:
    try:
        return (True, store.run_alone(op.call, op.work))
    except Exception as exc:  # the operation's own outcome
        return (False, exc)


def run_quickly(
    conn: Connection, group: Sequence[Op], read_ahead: ReadAhead | None = None
) -> list[Outcome] | None:
    """Run a group's operations in the open transaction of `conn` without savepoints: the
    usual case, where every operation succeeds, pays for none (on Postgres each is a round
    trip). None when one failed: the caller rolls the transaction back and runs the group
    again with `run_shared`, where each failure undoes its own operation alone.

    Raises, as `run_shared` does, what loses the transaction or reruns the group.
    """
    outcomes: list[Outcome] = []
    _group.active, _group.floor = True, None
    try:
        with contextlib.nullcontext() if read_ahead is None else read_ahead(conn, group):
            for op in group:
                try:
                    outcomes.append((True, op.work(conn)))
                except DBAPIError as exc:
                    if is_retry(exc) or exc.connection_invalidated:
                        raise
                    return None
                except Exception:
                    return None
    finally:
        _group.active, _group.floor = False, None
    return outcomes


def run_shared(conn: Connection, group: Sequence[Op]) -> list[Outcome]:
    """Run a group's operations in the open transaction of `conn`, each in its own savepoint.

    Raises the DBAPIError of an operation whose savepoint cannot be rolled back (the
    transaction is lost) or which the database stopped for a deadlock (the group is rerun).
    """
    outcomes: list[Outcome] = []
    _group.active, _group.floor = True, None
    try:
        for op in group:
            outcomes.append(_run_in_savepoint(conn, op))
    finally:
        _group.active, _group.floor = False, None
    return outcomes


#: The savepoint of each operation in a group. Written as SQL and run on the driver's cursor
#: (`begin_nested()` builds and compiles a statement of its own for each savepoint: about 4%
#: of `serve`'s CPU under load); operations of a group never nest, so one name serves them all.
_SAVEPOINT = "SAVEPOINT stateous_op"
_RELEASE = "RELEASE SAVEPOINT stateous_op"
_ROLLBACK_TO = "ROLLBACK TO SAVEPOINT stateous_op"


def _run_in_savepoint(conn: Connection, op: Op) -> Outcome:
    execute_sql(conn, _SAVEPOINT)
    try:
        value = op.work(conn)
    except RecordedRefusal as exc:  # its rows are kept, then it is refused
        execute_sql(conn, _RELEASE)
        return (False, exc)
    except DBAPIError as exc:
        # A deadlock reruns the group; a lost connection loses the whole transaction (its
        # savepoint cannot be rolled back), so every operation of the group fails with it.
        if is_retry(exc) or exc.connection_invalidated:
            raise
        _roll_back(conn)
        return (False, busy(exc) if isinstance(exc, OperationalError | InterfaceError) else exc)
    except Exception as exc:  # a refusal (or a bug) of this operation alone
        _roll_back(conn)
        return (False, exc)
    execute_sql(conn, _RELEASE)
    return (True, value)


def _roll_back(conn: Connection) -> None:
    """Undo the operation's savepoint alone, and end it."""
    execute_sql(conn, _ROLLBACK_TO)
    execute_sql(conn, _RELEASE)
