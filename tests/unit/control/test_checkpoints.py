"""SQLite's checkpoints off the commit path (stateous.control.checkpoints): with the backstop, a
commit leaves its pages in the WAL; `Store.checkpoint` copies them into the database file
without taking the write lock; the running task does it every interval and stops with `stop`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import insert, text

from stateous.control import checkpoints
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.control.store.tables import memory
from tests.support import sqlite_url
from tests.support.local_files import rows_in_the_file


def _store(tmp_path: Path) -> Store:
    store = Store(make_engine(sqlite_url(tmp_path), wal_autocheckpoint=checkpoints.BACKSTOP))
    with store.begin() as conn:
        migrate.upgrade(conn)
    store.checkpoint()
    return store


def _write(store: Store, count: int, token: str = "T-1") -> None:
    rows = [{"token": token, "state": "s", "key": f"k{n}", "value": n} for n in range(count)]
    with store.begin() as conn:
        conn.execute(insert(memory), rows)


def _in_the_file(tmp_path: Path) -> int | None:
    """The memory rows the database file itself holds (its WAL ignored)."""
    return rows_in_the_file(tmp_path / "stateous.db", "memory")


def test_a_commit_leaves_its_pages_in_the_wal_and_a_checkpoint_copies_them(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    try:
        _write(store, 2000)  # some 20 pages: under SQLite's default 1,000 as under the backstop
        assert _in_the_file(tmp_path) == 0
        assert store.checkpoint() == 0
        assert _in_the_file(tmp_path) == 2000
        with store.begin() as conn:
            count = conn.execute(text("SELECT count(*) FROM memory")).scalar()
        assert count == 2000
    finally:
        store.engine.dispose()


def test_a_checkpoint_goes_on_beside_an_open_write_transaction(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        _write(store, 100)
        with store.begin() as conn:
            conn.execute(insert(memory), [{"token": "T-2", "state": "s", "key": "k", "value": 1}])
            # Passive: the write lock is held by this transaction, and the copy does not wait.
            assert store.checkpoint() == 0
        assert _in_the_file(tmp_path) == 100
        assert store.checkpoint() == 0
        assert _in_the_file(tmp_path) == 101
    finally:
        store.engine.dispose()


def test_the_backstop_is_set_on_each_connection(tmp_path: Path) -> None:
    store = _store(tmp_path)
    default = Store(make_engine(sqlite_url(tmp_path)))
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 10_000
        with default.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
    finally:
        store.engine.dispose()
        default.engine.dispose()


def test_postgres_and_memory_have_nothing_to_copy(db_url: str) -> None:
    store = Store(make_engine(db_url if not db_url.startswith("sqlite") else "sqlite://"))
    try:
        assert store.checkpoint() == 0
    finally:
        store.engine.dispose()


async def test_the_task_checkpoints_every_interval_until_stopped(tmp_path: Path) -> None:
    store = _store(tmp_path)
    stop = asyncio.Event()
    task = asyncio.create_task(checkpoints.run_checkpoints(store, stop, every=0.05))
    try:
        await asyncio.to_thread(_write, store, 300)
        for _ in range(100):
            if _in_the_file(tmp_path) == 300:
                break
            await asyncio.sleep(0.02)
        assert _in_the_file(tmp_path) == 300
        stop.set()
        await asyncio.wait_for(task, timeout=2)
        await asyncio.to_thread(_write, store, 1, "T-2")  # after the stop: stays in the WAL
        await asyncio.sleep(0.15)
        assert _in_the_file(tmp_path) == 300
    finally:
        stop.set()
        await task
        store.engine.dispose()


async def test_the_task_ends_at_once_on_postgres(postgres_url: str) -> None:
    store = Store(make_engine(postgres_url))
    try:
        await asyncio.wait_for(
            checkpoints.run_checkpoints(store, asyncio.Event(), every=60), timeout=2
        )
    finally:
        store.engine.dispose()


@pytest.fixture
def postgres_url(db_url: str) -> str:
    if db_url.startswith("sqlite"):
        pytest.skip("a Postgres case")
    return db_url
