"""A lane keeps its connection between the groups that follow each other closely, gives it
back when idle, and never leaves a connection open behind a disposed engine."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import event, text

from stateous.control.errors import DatabaseBusy
from stateous.control.store.db import Store
from stateous.control.store.group import HOLD_SECONDS, Lanes, Op
from tests.support.failing_commit import ORPHAN, deferred_foreign_key

#: Long enough for a lane with nothing to do to have given its connection back.
SETTLED = HOLD_SECONDS * 10


def _count(store: Store, *names: str) -> dict[str, list[Any]]:
    """The driver connections each named pool event saw from now on."""
    seen: dict[str, list[Any]] = {name: [] for name in names}
    for name in names:

        def record(dbapi_connection: Any, *_: Any, name: str = name) -> None:
            seen[name].append(dbapi_connection)

        event.listen(store.engine.pool, name, record)
    return seen


@pytest.fixture
def lanes(store: Store) -> Lanes:
    """Lanes of shared transactions on the store."""
    return Lanes(store)


def _run(lanes: Lanes, work: Any = None) -> Any:
    op = Op("note", work or (lambda conn: conn.execute(text("SELECT 1")).scalar()))
    lanes.submit([op])
    return op.future.result(timeout=30)


def test_groups_in_quick_succession_share_one_checkout(store: Store, lanes: Lanes) -> None:
    if not store.sqlite:
        pytest.skip("a Postgres lane takes its connection from the pool for each group")
    _run(lanes)
    time.sleep(SETTLED)  # the lane starts from an idle one
    seen = _count(store, "checkout", "checkin")
    for _ in range(20):
        _run(lanes)
    assert len(seen["checkout"]) == 1
    assert seen["checkin"] == []
    time.sleep(SETTLED)
    assert seen["checkin"] == seen["checkout"]  # given back once idle


def test_a_connection_kept_across_a_dispose_is_closed(store: Store, lanes: Lanes) -> None:
    """The engine is disposed while the lane keeps a connection (a test's teardown, a server
    stopping): the lane closes it, instead of leaving it open in the old pool."""
    if not store.sqlite:
        pytest.skip("a Postgres lane takes its connection from the pool for each group")
    seen = _count(store, "checkout", "close")
    _run(lanes)
    store.engine.dispose()
    time.sleep(SETTLED)
    assert len(seen["checkout"]) == 1
    assert seen["close"] == seen["checkout"]
    assert _run(lanes) == 1  # the next group takes a connection of the new pool
    assert len(seen["checkout"]) == 2


def test_the_connection_of_a_failed_commit_is_not_used_again(store: Store, lanes: Lanes) -> None:
    """A commit the database refused drops its connection: the next group takes a new one."""
    deferred_foreign_key(store)
    seen = _count(store, "checkout", "close")
    with pytest.raises(DatabaseBusy):
        _run(lanes, lambda conn: conn.execute(text(ORPHAN)))
    assert _run(lanes) == 1
    assert len(seen["checkout"]) == 2
    assert seen["close"] == seen["checkout"][:1]
