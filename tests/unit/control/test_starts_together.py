"""Starts waiting together (control/starts_together.py): a start whose request went away
(its task cancelled) leaves the shared operation to the others; on both backends."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import Connection, text

from stateous.control.clock import FakeClock
from stateous.control.engine.start_many import StartArgs
from stateous.control.engine.tx import EngineConfig
from stateous.control.plane import Plane
from stateous.control.store.db import Store
from stateous.control.store.group import Op


async def _started_with_one_cancelled(plane: Plane) -> list[object]:
    starts = plane.starts
    assert starts is not None
    release, running = threading.Event(), threading.Event()

    def block(_conn: Connection) -> None:
        running.set()
        release.wait(30)

    blocker = Op("test", block)
    plane.lanes.submit([blocker])
    assert await asyncio.to_thread(running.wait, 10)
    tasks = [
        asyncio.create_task(starts.start(StartArgs(f"C-{n}", {"title": str(n)}))) for n in range(3)
    ]
    while starts.waiting() < 3:
        await asyncio.sleep(0.01)
    tasks[1].cancel()
    release.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_a_cancelled_start_leaves_the_operation_to_the_others(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    if not store.sqlite:
        pytest.skip("one lane holds the queue here; Postgres's eight are tested over HTTP")
    plane = Plane(store, orders, clock)
    outcomes = asyncio.run(_started_with_one_cancelled(plane))
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert [getattr(o, "created", None) for o in (outcomes[0], outcomes[2])] == [True, True]
    with store.engine.connect() as conn:
        tokens = conn.execute(text("SELECT token FROM tokens ORDER BY token")).scalars().all()
    # The cancelled request's start ran with the others, as an answer lost on the way.
    assert tokens == ["C-0", "C-1", "C-2"]
