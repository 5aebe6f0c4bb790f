"""The database: one engine factory with the SQLite and Postgres settings, and the
store that runs transactions on it and keeps a lane's connection between them."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, RootTransaction, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import Pool, StaticPool

from stateous.control.errors import DatabaseBusy, RecordedRefusal
from stateous.control.store.db_errors import is_retry
from stateous.control.store.direct import execute_begin
from stateous.control.store.ping import ping_when_idle

log = logging.getLogger("stateous.store")

T = TypeVar("T")

#: How many reads the API runs at once, each in a worker thread holding a pooled connection
#: (writes run in the lanes of stateous.control.store.group); counted in a Postgres pool's size.
ENGINE_CALLS = 16
#: The Postgres pool's connections beyond the reads': the lanes, the clock and the hold share them.
OTHER_CONNECTIONS = 8

#: The execution option of a connection that only reads (SQLite: a deferred BEGIN).
READ = "stateous_read"

#: Engine calls that only read: they run beside the shared transactions, never in them.
#: (`memory` names both the read and the write of task memory, so it runs with the writes.)
READ_CALLS = frozenset(
    {"list", "token", "history", "tasks", "token tasks", "timers", "stats", "metrics", "why",
     "supervisors", "inbox", "audit", "bulk read", "versions", "export", "schedules"}
)  # fmt: skip


def postgres_connect_args(
    statement_timeout: float = 30.0, lock_timeout: float = 10.0
) -> dict[str, Any]:
    """The connection time limits (30 s a statement, 10 s a lock; tests may shorten them);
    psycopg prepares no statement itself (`store.libpq` prepares the hot ones: psycopg would
    deallocate them all at a ROLLBACK after preparing one of its own)."""
    return {
        "prepare_threshold": None,
        "connect_timeout": 10,
        "options": f"-c statement_timeout={int(statement_timeout * 1000)} "
        f"-c lock_timeout={int(lock_timeout * 1000)}",
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 10,
        "keepalives_count": 3,
    }


def normalize_url(url: str) -> str:
    """Rewrite `postgresql://` and `postgres://` to the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def mask_url(url: str) -> str:
    """The URL with its password masked, for sentences."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def is_sqlite(engine: Engine) -> bool:
    """Whether `engine` talks to SQLite."""
    return engine.dialect.name == "sqlite"


#: SQLite's own default: a commit that brings the WAL past this many pages checkpoints it.
WAL_AUTOCHECKPOINT = 1000


def make_engine(
    url: str,
    *,
    busy_timeout: float = 30.0,
    lock_timeout: float = 10.0,
    wal_autocheckpoint: int = WAL_AUTOCHECKPOINT,
) -> Engine:
    """An engine configured once for its dialect; raises sqlalchemy errors for a bad URL.

    `busy_timeout` (SQLite's wait for another process's write lock) and `lock_timeout`
    (Postgres) keep their documented values unless a test shortens them. `wal_autocheckpoint`
    (SQLite): the WAL's pages at which a commit checkpoints it itself; a control plane that
    checkpoints in the background (`Store.checkpoint`) raises it to a backstop.
    """
    url = normalize_url(url)
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, parsed.database, busy_timeout, wal_autocheckpoint)
    if backend == "postgresql":
        args = postgres_connect_args(lock_timeout=lock_timeout)
        # A fixed pool: an overflow connection would be opened and closed again per request
        # under load, and a Postgres connection costs milliseconds. Its connections serve the
        # API's reads (worker threads, at most ENGINE_CALLS), the lanes, the clock and the hold.
        size = ENGINE_CALLS + OTHER_CONNECTIONS
        engine = create_engine(url, connect_args=args, pool_size=size, max_overflow=0)
        ping_when_idle(engine)  # not `pool_pre_ping`: one round trip per transaction
        return engine
    # Another backend would fail later on a driver that is not installed, or on SQL written for
    # these two only: say what is supported instead.
    raise ValueError(
        f"Stateous stores its data in SQLite (sqlite:///FILE) or PostgreSQL "
        f"(postgresql://USER@HOST/DB), not {backend!r}"
    )


def _sqlite_engine(
    url: str, database: str | None, busy_timeout: float, wal_autocheckpoint: int
) -> Engine:
    in_memory = database in (None, "", ":memory:")
    if not in_memory and database is not None and not database.startswith("file:"):
        _check_folder(Path(database).parent)
    kwargs: dict[str, Any] = {"connect_args": {"timeout": busy_timeout, "check_same_thread": False}}
    if in_memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's begin event issue BEGIN IMMEDIATE itself (the pysqlite recipe).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
            if wal_autocheckpoint != WAL_AUTOCHECKPOINT:
                cursor.execute(f"PRAGMA wal_autocheckpoint = {int(wal_autocheckpoint)}")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A read takes no write lock: in WAL it reads a snapshot beside the one writer.
        execute_begin(
            conn, "BEGIN" if conn.get_execution_options().get(READ) else "BEGIN IMMEDIATE"
        )

    return engine


def _check_folder(folder: Path) -> None:
    """Refuse a database file whose folder does not exist: SQLite would only say it cannot
    open the file, at the first transaction, which reads as a busy database."""
    if not folder.is_dir():
        raise ValueError(
            f"the folder {str(folder)!r} of the database file does not exist; create it first"
        )


class Store:
    """One database: transactions that rerun once after a deadlock and answer `database_busy`
    when a limit stops them, and the connection a lane keeps between them. The shared
    transactions are built on
    these by stateous.control.store.group, which this module never imports."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sqlite = is_sqlite(engine)
        # Within one process, SQLite transactions take turns: a lock is cheaper
        # than letting the driver's busy timeout poll.
        self._turn = threading.Lock() if self.sqlite else None
        # One connection shared by every thread (an in-memory database): reads take turns too.
        self._shared = isinstance(engine.pool, StaticPool)
        self._held = _Held()

    @contextmanager
    def begin(self, *, read: bool = False) -> Iterator[Connection]:
        """One transaction. A RecordedRefusal commits first; a database failure is DatabaseBusy.

        `read`: a transaction that only reads (SQLite: no write lock, no turn).
        """
        with self.turn(read):
            try:
                with self.connection(read) as conn:
                    if read:
                        conn.execution_options(**{READ: True})
                    trans = conn.begin()
                    try:
                        yield conn
                    except RecordedRefusal:
                        commit(conn, trans)
                        raise
                    except BaseException:
                        trans.rollback()
                        raise
                    commit(conn, trans)
            except OperationalError as exc:
                if is_retry(exc):
                    raise
                raise DatabaseBusy() from exc
            except PoolTimeout as exc:  # every pooled connection stayed in use for 30 s
                raise DatabaseBusy() from exc

    @contextmanager
    def holding_connections(self) -> Iterator[None]:
        """Within: this thread (a lane) keeps the connection of its transactions from one to
        the next, until `release_connection` (a pool checkout and check-in cost about 100 µs
        of CPU, a tenth of a start's under load).

        SQLite's lane only: Postgres lanes take theirs from the pool each time (kept ones were
        once found open at collection in the test suite, a psycopg ResourceWarning), and a
        shared in-memory connection is never taken."""
        self._held.on = self.sqlite and not self._shared
        try:
            yield
        finally:
            self.release_connection()
            self._held.on = False

    def release_connection(self) -> None:
        """Give the connection this thread keeps back to the pool (a lane about to idle)."""
        conn, self._held.conn = self._held.conn, None
        if conn is None:
            return
        pool = self._held.pool
        with contextlib.suppress(SQLAlchemyError):
            conn.close()
        if pool is not None and pool is not self.engine.pool:
            # The engine was disposed while the lane kept the connection: its old pool would
            # keep it open, unused, until collected. (A dispose after this check closes it
            # itself: the connection is back in that pool.)
            with contextlib.suppress(SQLAlchemyError):
                pool.dispose()

    def _connect_held(self) -> Connection:
        """A connection for this lane to keep, and the pool it came from (an engine disposed
        while it was taken may have handed it from either pool: then from neither)."""
        while True:
            pool = self.engine.pool
            conn = self.engine.connect()
            if self.engine.pool is pool:
                self._held.pool = pool
                return conn
            conn.invalidate()  # closes the driver's connection, whichever pool it came from
            conn.close()

    @contextmanager
    def connection(self, read: bool) -> Iterator[Connection]:
        """The connection of a transaction, not begun: the one this thread keeps (a lane's
        write), else one from the pool for this transaction alone. Within `turn`."""
        if read or not self._held.on:
            with self.engine.connect() as conn:
                yield conn
            return
        held = self._held.conn
        if (
            held is None
            or held.invalidated
            or held.closed
            or self._held.pool is not self.engine.pool
        ):
            # None yet, lost, dropped after a failed commit, or of a pool since disposed.
            self.release_connection()
            held = self._held.conn = self._connect_held()
        yield held

    @contextmanager
    def turn(self, read: bool = False) -> Iterator[None]:
        """Within: this thread's turn to run a transaction (SQLite: one writer in this process;
        a read takes none unless every thread shares one in-memory connection)."""
        if self._turn is None or (read and not self._shared):
            yield
            return
        with self._turn:
            yield

    def checkpoint(self) -> int:
        """SQLite: copy the WAL's committed pages into the database file; answers how many
        pages the WAL holds that are not copied yet (0 on Postgres and in memory).

        Passive: it neither waits for nor takes the write lock, so commits go on meanwhile;
        each commit is already durable in the WAL, so when the copy happens changes nothing
        a client can see. A commit that crosses the engine's `wal_autocheckpoint` does it
        itself, on the lane, holding every shared transaction behind it: on a database of
        100,000 tokens, whose pages lie far apart in the file, that was a fifth of the lane's
        time (docs/performance.md, round 11).
        """
        if not self.sqlite or self._shared:
            return 0
        with self.engine.connect() as conn:
            # The driver's own cursor: SQLAlchemy's would begin a transaction (BEGIN
            # IMMEDIATE, the write lock), inside which SQLite refuses to checkpoint.
            cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            try:
                _busy, logged, copied = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            finally:
                cursor.close()
        return max(0, int(logged) - int(copied))

    def read(self, work: Callable[[Connection], T]) -> T:
        """Run `work` in a transaction that only reads."""
        try:
            with self.begin(read=True) as conn:
                return work(conn)
        except (OperationalError, InterfaceError) as exc:
            raise DatabaseBusy() from exc

    def run_alone(self, call: str, work: Callable[[Connection], T]) -> T:
        """Run `work` in a transaction of its own; a deadlock reruns it once."""
        for attempt in (1, 2):
            try:
                with self.begin() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if not is_retry(exc):
                    if isinstance(exc, OperationalError | InterfaceError):
                        raise DatabaseBusy() from exc
                    raise
                if attempt == 2:
                    raise DatabaseBusy() from exc
                log.warning("the database stopped %s for a deadlock; trying once more", call)
        raise AssertionError("unreachable")


class _Held(threading.local):
    """A lane's connection, kept between its transactions (`Store.holding_connections`)."""

    on: bool = False
    conn: Connection | None = None
    pool: Pool | None = None  # the engine's pool when `conn` was taken


def commit(conn: Connection, trans: RootTransaction) -> None:
    """Commit; a commit the database refuses (a deferred check, a lost disk) is `database_busy`:
    nothing of the transaction was applied. A deadlock or serialization failure is raised as it
    is (the caller reruns the transaction)."""
    try:
        trans.commit()
    except DBAPIError as exc:
        # SQLite leaves the transaction open after a refused COMMIT and the pool's reset does
        # not end it: the connection is dropped, which rolls it back.
        conn.invalidate()
        if is_retry(exc):
            raise
        raise DatabaseBusy() from exc


def family_key(top: str) -> int:
    """The advisory-lock key of `token:<top id in lower case>` as a signed 64-bit integer."""
    return lock_key(f"token:{top.lower()}")


def lock_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for a name."""
    digest = hashlib.sha256(name.encode()).digest()[:8]
    return int.from_bytes(digest, "big", signed=True)
