"""The parts of replicas (several control planes on one Postgres) inside one process: a replica's
hold and clock, the presence rows, and wake-ups for one state (on real databases; the processes
themselves are in tests/integration/control/test_replicas.py)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.hold import TOOK, Hold
from stateous.control.plane import Plane
from stateous.control.presence import Presence
from stateous.control.store import migrate, planes
from stateous.control.store.control_plane import read_control_plane, write_control_plane
from stateous.control.store.db import Store, make_engine
from stateous.control.ticker import Ticker, TickResult
from stateous.control.wakeups import Wakeups
from tests.support.databases import backends, postgres_database
from tests.support.local_files import stateous_messages

T0 = datetime(2026, 10, 16, 20, 49, 8, 725674)


async def _woken(wakeups: Wakeups, states: frozenset[str] | None, state: str | None) -> bool:
    seen = wakeups.generation
    waiting = asyncio.ensure_future(wakeups.wait(seen, 0.3, states))
    await asyncio.sleep(0.01)
    wakeups.notify(state)
    began = asyncio.get_running_loop().time()
    await waiting
    return asyncio.get_running_loop().time() - began < 0.2


@pytest.mark.parametrize(
    ("states", "state", "woken"),
    [
        (frozenset({"draft"}), "draft", True),
        (frozenset({"draft"}), "review", False),
        (frozenset({"draft"}), None, True),  # a re-check of every held claim
        (None, "review", True),
    ],
)
def test_a_notification_wakes_the_claims_of_its_state(
    states: frozenset[str] | None, state: str | None, woken: bool
) -> None:
    assert asyncio.run(_woken(Wakeups(), states, state)) is woken


def test_a_replicas_clock_does_nothing_until_it_holds(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    clock.set(T0)
    plane = Plane(store, sdlc, clock, role="replica")
    plane.run("start", lambda conn: start(conn, clock, sdlc, "T-1", {"repo": "r"}))
    clock.advance(7 * 3600)  # coding's 6 h timeout is due
    holding = [False]
    ticker = Ticker(plane, None, runs_clock=lambda: holding[0])
    assert ticker.tick() == TickResult(skipped=True)
    holding[0] = True
    assert ticker.tick() == TickResult(timers=1)


@pytest.mark.skipif("postgres" not in backends(), reason="the hold of a replica is Postgres")
def test_a_replica_takes_the_hold_when_the_holder_gives_it_up(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    clock.set(T0)
    with postgres_database() as url:
        holder_store, replica_store = Store(make_engine(url)), Store(make_engine(url))
        holder = Hold(holder_store, clock)
        holder.take_and_migrate()
        taken: list[str] = []
        replica = Hold(replica_store, clock, holding=False, on_taken=lambda: taken.append("x"))
        try:
            assert (replica.renew(), replica.holding, replica.role) == (True, False, "replica")
            assert taken == []
            holder.give_up()
            clock.advance(1)
            with caplog.at_level(logging.INFO, logger="stateous.hold"):
                assert replica.renew() is True
            assert (replica.holding, replica.role, taken) == (True, "holder", ["x"])
            assert stateous_messages(caplog.records) == [TOOK]
            with replica_store.begin() as conn:
                row = read_control_plane(conn)
            assert (row.serving, row.since) == (replica.name, clock.now())
            # The old holder cannot come back as a holder now; its renewal says it lost.
            assert holder.renew() is False
        finally:
            replica.give_up()
            holder_store.engine.dispose()
            replica_store.engine.dispose()


def test_presence_rows_are_written_listed_and_left(store: Store, clock: FakeClock) -> None:
    clock.set(T0)
    role = ["replica"]
    mine = Presence(store, clock, "box:1:aaaaaaaa", lambda: role[0], timedelta(seconds=10))
    other = Presence(store, clock, "box:2:bbbbbbbb", lambda: "holder", timedelta(seconds=10))
    assert mine.beat() and other.beat()
    clock.advance(5)
    assert not mine.beat()  # not due yet
    role[0] = "holder"
    assert mine.beat()  # its role changed: at once
    with store.begin() as conn:
        # A row that says `holder` counts only while control_plane.serving names it.
        write_control_plane(conn, serving="box:2:bbbbbbbb")
        assert [p.name for p in planes.live_planes(conn, T0)] == ["box:2:bbbbbbbb"]
        write_control_plane(conn, serving="box:1:aaaaaaaa")
    clock.advance(26)  # `other` was seen 31 s ago: no longer live
    with store.begin() as conn:
        listed = planes.live_planes(conn, clock.now() - timedelta(seconds=30))
    assert [(p.name, p.role, p.started_at, p.seen_at) for p in listed] == [
        ("box:1:aaaaaaaa", "holder", T0, T0 + timedelta(seconds=5))
    ]
    mine.beat()  # deletes the rows of those gone for 30 s
    mine.leave()
    with store.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM control_planes")).scalar_one() == 0


def test_the_schema_has_the_control_planes_table(store: Store) -> None:
    with store.begin() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD
        assert conn.execute(text("SELECT count(*) FROM control_planes")).scalar_one() == 0
