"""The family lock taken by Postgres itself: the key it computes for a task's
token is `family_key` of the token's top, so a report waits for a family locked elsewhere."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.db import Store, family_key
from stateous.control.store.locks import family_key_sql

IDS = ["ORDER-1", "order-1", "a.B_c-9", "X" * 128, "7"]
TRY = "SELECT pg_try_advisory_xact_lock(:k)"


@pytest.fixture
def pg_store(store: Store, backend: str) -> Store:
    if backend != "postgres":
        pytest.skip("the family lock is Postgres's (SQLite has one writer)")
    return store


def test_postgres_computes_the_key_python_does(pg_store: Store) -> None:
    with pg_store.begin() as conn:
        for token in IDS:
            found = conn.execute(text(f"SELECT {family_key_sql(':id')}"), {"id": token}).scalar()
            assert found == family_key(token), token


def test_a_task_locks_its_top_token_family(
    pg_store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    with pg_store.begin() as conn:
        start(conn, clock, orders, "ORDER-1", {"title": "t"})
        task = conn.execute(text("SELECT id FROM tasks WHERE token = 'ORDER-1'")).scalar_one()
    with pg_store.begin() as conn:
        Tx.open(conn, clock, orders).lock_task_family(task)
        with pg_store.begin() as other:
            assert other.execute(text(TRY), {"k": family_key("ORDER-1")}).scalar() is False
            assert other.execute(text(TRY), {"k": family_key("ORDER-2")}).scalar() is True
    with pg_store.begin() as conn:
        Tx.open(conn, clock, orders).lock_task_family(task + 1000)  # no such task: no lock
        with pg_store.begin() as other:
            free = other.execute(text(TRY), {"k": family_key("ORDER-1")}).scalar()
            assert free is True
