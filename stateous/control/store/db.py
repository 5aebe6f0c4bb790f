"""Opening the database: one engine factory with the SQLite and Postgres settings of spec 20."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import StaticPool

from stateous.control.errors import DatabaseBusy, RecordedRefusal

log = logging.getLogger("stateous.store")

T = TypeVar("T")

#: How many engine calls the API runs at once (worker threads holding a connection), besides
#: claims, which have turns of their own.
ENGINE_CALLS = 16
CLAIM_CALLS = 4

# SQLSTATEs of a deadlock and a serialization failure: the request is run once more.
RETRY_STATES = frozenset({"40P01", "40001"})


def postgres_connect_args(
    statement_timeout: float = 30.0, lock_timeout: float = 10.0
) -> dict[str, Any]:
    """The connection time limits of spec 20 §3.6 (tests may shorten them)."""
    return {
        "connect_timeout": 10,
        "options": f"-c statement_timeout={int(statement_timeout * 1000)} "
        f"-c lock_timeout={int(lock_timeout * 1000)}",
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 10,
        "keepalives_count": 3,
    }


def normalize_url(url: str) -> str:
    """Rewrite `postgresql://` and `postgres://` to the psycopg 3 driver (spec 20 §3.6)."""
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


def make_engine(url: str, *, busy_timeout: float = 30.0, lock_timeout: float = 10.0) -> Engine:
    """An engine configured once for its dialect; raises sqlalchemy errors for a bad URL.

    `busy_timeout` (SQLite's wait for another process's write lock) and `lock_timeout`
    (Postgres) keep the spec's values unless a test shortens them.
    """
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, busy_timeout)
    if parsed.get_backend_name() == "postgresql":
        args = postgres_connect_args(lock_timeout=lock_timeout)
        # A fixed pool: an overflow connection would be opened and closed again per request
        # under load, and a Postgres connection costs milliseconds. The API runs at most
        # ENGINE_CALLS + CLAIM_CALLS transactions at once; the rest is for the clock and the hold.
        size = ENGINE_CALLS + CLAIM_CALLS + 4
        return create_engine(
            url, pool_pre_ping=True, connect_args=args, pool_size=size, max_overflow=0
        )
    return create_engine(url, pool_pre_ping=True)


def _sqlite_engine(url: str, database: str | None, busy_timeout: float) -> Engine:
    in_memory = database in (None, "", ":memory:")
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
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _sqlstate(exc: DBAPIError) -> str | None:
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state if isinstance(state, str) else None


class Store:
    """One database: transactions with the retry and busy rules of spec 20 §3.6-3.7."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sqlite = is_sqlite(engine)
        # Within one process, SQLite transactions take turns (spec 20 §3.5): a lock is cheaper
        # than letting the driver's busy timeout poll.
        self._turn = threading.Lock() if self.sqlite else None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """One transaction. A RecordedRefusal commits first; a database failure is DatabaseBusy."""
        with self._take_turn():
            try:
                with self.engine.connect() as conn:
                    trans = conn.begin()
                    try:
                        yield conn
                    except RecordedRefusal:
                        trans.commit()
                        raise
                    except BaseException:
                        trans.rollback()
                        raise
                    trans.commit()
            except OperationalError as exc:
                if _sqlstate(exc) in RETRY_STATES:
                    raise
                raise DatabaseBusy() from exc
            except PoolTimeout as exc:  # every pooled connection stayed in use for 30 s
                raise DatabaseBusy() from exc

    @contextmanager
    def _take_turn(self) -> Iterator[None]:
        if self._turn is None:
            yield
            return
        with self._turn:
            yield

    def run(self, call: str, work: Callable[[Connection], T]) -> T:
        """Run `work` in one transaction; a deadlock reruns it once (spec 30 §1.1)."""
        for attempt in (1, 2):
            try:
                with self.begin() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if _sqlstate(exc) not in RETRY_STATES:
                    if isinstance(exc, OperationalError | InterfaceError):
                        raise DatabaseBusy() from exc
                    raise
                if attempt == 2:
                    raise DatabaseBusy() from exc
                log.warning("the database stopped %s for a deadlock; trying once more", call)
        raise AssertionError("unreachable")

    def lock_family(self, conn: Connection, top: str) -> None:
        """Take the family lock of a top token (Postgres); SQLite has one writer already."""
        if not self.sqlite:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": family_key(top)})

    def try_lock_family(self, conn: Connection, top: str) -> bool:
        """Try the family lock without waiting (claims skip a busy family)."""
        if self.sqlite:
            return True
        got = conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": family_key(top)})
        return bool(got.scalar())


def family_key(top: str) -> int:
    """The advisory-lock key of `token:<top id in lower case>` as a signed 64-bit integer."""
    return lock_key(f"token:{top.lower()}")


def lock_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for a name."""
    digest = hashlib.sha256(name.encode()).digest()[:8]
    return int.from_bytes(digest, "big", signed=True)
