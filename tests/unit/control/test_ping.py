"""A pooled Postgres connection is pinged when taken only after it sat idle (store/ping.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from stateous.control.store.db import normalize_url
from stateous.control.store.ping import ping_when_idle
from tests.support.databases import postgres_database


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


def _engine(url: str, idle: float) -> Engine:
    engine = create_engine(normalize_url(url), pool_size=1, max_overflow=0)
    ping_when_idle(engine, idle)
    return engine


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _end_backend(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):  # pg_terminate_backend only signals: wait until it is gone
            gone = admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            if gone.fetchone() is None:
                return
            time.sleep(0.02)


def test_a_connection_idle_for_longer_is_pinged_and_replaced_when_gone(pg_url: str) -> None:
    engine = _engine(pg_url, idle=0.2)
    try:
        first = _backend_pid(engine)
        _end_backend(pg_url, first)
        time.sleep(0.3)
        second = _backend_pid(engine)  # the ping failed: a new connection answered
        assert second != first
    finally:
        engine.dispose()


def test_a_connection_just_returned_is_not_pinged(pg_url: str) -> None:
    engine = _engine(pg_url, idle=60.0)
    try:
        first = _backend_pid(engine)
        _end_backend(pg_url, first)
        # No ping: the transaction finds the connection lost (503 in the API, the pool replaced).
        with pytest.raises(OperationalError), engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        assert _backend_pid(engine) != first
    finally:
        engine.dispose()
