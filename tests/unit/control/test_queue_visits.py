"""Entering a state that queues tasks queues its task and counts the visit in one statement."""

from __future__ import annotations

from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.control.store.tasks import queue_next_visit


def test_each_entry_of_a_state_is_its_next_visit(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, orders, "ORDER-1", {"title": "t"})  # draft, visit 1
        start(conn, clock, orders, "ORDER-2", {"title": "t"})
        first = conn.execute(text("SELECT max(id) FROM tasks")).scalar_one()
        assert queue_next_visit(conn, "ORDER-1", "draft", clock.now(), "sha256:s") == (first + 1, 2)
        assert queue_next_visit(conn, "ORDER-1", "review", clock.now(), "sha256:s") == (
            first + 2,
            1,
        )
        assert queue_next_visit(conn, "ORDER-1", "draft", clock.now(), "sha256:s") == (first + 3, 3)
        rows = conn.execute(
            text("SELECT token, state, visit, status, attempt FROM tasks ORDER BY id")
        ).all()
    assert [tuple(row) for row in rows] == [
        ("ORDER-1", "draft", 1, "queued", 0),
        ("ORDER-2", "draft", 1, "queued", 0),
        ("ORDER-1", "draft", 2, "queued", 0),
        ("ORDER-1", "review", 1, "queued", 0),
        ("ORDER-1", "draft", 3, "queued", 0),
    ]
