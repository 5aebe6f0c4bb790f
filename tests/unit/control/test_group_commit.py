"""Shared commits on a real store: operations queued together share one transaction,
without savepoints unless one fails, each with its own `at`; a refused one rolls back alone; a
failed commit fails them all with `503 database_busy` and applies none."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Connection, event, text

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import Started, start
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import DatabaseBusy, RecordedRefusal, Refusal
from stateous.control.plane import Plane
from stateous.control.store.db import Store
from stateous.control.store.group import Lanes, Op
from tests.support.failing_commit import ORPHAN, deferred_foreign_key
from tests.support.rows import ledger_rows

T1 = datetime(2026, 10, 16, 20, 48, 44, 845389)
T0 = datetime(2026, 10, 16, 20, 48, 40)
BOX = "build-box-1"
START_KINDS = ["started", "event_accepted", "entered", "task_queued"]


def starting(plane: Plane, token: str, context: Any) -> tuple[str, Any]:
    """A start operation as a batch route queues it."""
    return ("start", lambda conn: start(conn, plane.clock, plane.config, token, context))


def tokens(store: Store) -> list[str]:
    with store.begin() as conn:
        return [r[0] for r in conn.execute(text("SELECT token FROM tokens ORDER BY token"))]


def test_a_refused_operation_rolls_back_alone(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(T1)
    plane = Plane.of(store, orders, clock)

    def start_then_refuse(conn: Connection) -> None:
        start(conn, clock, orders, "HALF", {"title": "written, then refused"})
        raise Refusal("invalid_context", "refused after a write", 422)

    answers = plane.run_many(
        [
            starting(plane, "ORDER-1", {"title": "first"}),
            ("start", start_then_refuse),
            starting(plane, "ORDER-2", {"wrong": 1}),
            starting(plane, "ORDER-3", {"title": "third"}),
        ]
    )
    assert [type(a).__name__ for a in answers] == ["Started", "Refusal", "Refusal", "Started"]
    assert isinstance(answers[0], Started) and answers[0].created
    assert answers[1].code == "invalid_context" and answers[2].code == "invalid_context"
    assert tokens(store) == ["ORDER-1", "ORDER-3"]
    with store.begin() as conn:
        assert [r[2] for r in ledger_rows(conn, "ORDER-1")] == START_KINDS
        assert ledger_rows(conn, "HALF") == []


def test_a_recorded_refusal_keeps_its_rows_among_others(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(T1)
    plane = Plane.of(store, orders, clock)
    plane.run("start", lambda conn: start(conn, clock, orders, "ORDER-1", {"title": "first"}))
    plane.run("claim", lambda conn: claim(conn, clock, orders, BOX, ["draft"], "a" * 32))
    plane.run(
        "report",
        lambda conn: report(conn, clock, orders, 1, Outcome("event", "submitted", attempt=1)),
    )
    plane.run("claim", lambda conn: claim(conn, clock, orders, BOX, ["review"], "b" * 32))
    bad = Outcome("event", "submitted", attempt=1)  # `review` may not emit it
    answers = plane.run_many(
        [
            ("report", lambda conn: report(conn, clock, orders, 2, bad)),
            starting(plane, "ORDER-2", {"title": "second"}),
        ]
    )
    assert isinstance(answers[0], RecordedRefusal)
    assert isinstance(answers[1], Started) and answers[1].created
    with store.begin() as conn:
        kinds = [r[2] for r in ledger_rows(conn, "ORDER-1")]
    assert kinds[-1] == "event_rejected"
    assert tokens(store) == ["ORDER-1", "ORDER-2"]


def test_a_failed_commit_fails_every_operation_and_applies_none(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    """A deferred foreign key is checked at COMMIT: the shared commit itself fails."""
    deferred_foreign_key(store)
    clock.set(T1)
    plane = Plane.of(store, orders, clock)

    def orphan(conn: Connection) -> str:
        conn.execute(text(ORPHAN))
        return "written"

    answers = plane.run_many(
        [
            starting(plane, "ORDER-1", {"title": "first"}),
            ("note", orphan),
            starting(plane, "ORDER-2", {"title": "second"}),
        ]
    )
    assert [type(a) for a in answers] == [DatabaseBusy, DatabaseBusy, DatabaseBusy]
    assert [(a.code, a.status) for a in answers] == [("database_busy", 503)] * 3
    assert tokens(store) == []
    with store.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM child_row")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM ledger")).scalar() == 0
    # The lane goes on: the next operations commit.
    assert isinstance(plane.run_many([starting(plane, "ORDER-3", {"title": "3"})])[0], Started)
    assert tokens(store) == ["ORDER-3"]


def test_operations_apply_in_order_and_their_at_never_decreases(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(T1)
    plane = Plane.of(store, orders, clock)

    def step_back(conn: Connection) -> None:
        clock.set(T0)  # the computer's clock steps back between two operations of one group

    answers = plane.run_many(
        [
            starting(plane, "B-first", {"title": "1"}),
            ("note", step_back),
            starting(plane, "A-second", {"title": "2"}),
            starting(plane, "B-first", {"title": "again"}),
        ]
    )
    assert [getattr(a, "created", None) for a in answers] == [True, None, True, False]
    physical = "rowid" if store.sqlite else "ctid"  # the order the rows were written in
    with store.begin() as conn:
        rows = conn.execute(
            text(f"SELECT token, seq, at, kind FROM ledger ORDER BY {physical}")
        ).fetchall()
    assert [(r.token, r.seq, r.kind) for r in rows] == [
        *[("B-first", seq, kind) for seq, kind in enumerate(START_KINDS, 1)],
        *[("A-second", seq, kind) for seq, kind in enumerate(START_KINDS, 1)],
    ]
    stamps = [r.at if isinstance(r.at, datetime) else datetime.fromisoformat(r.at) for r in rows]
    assert stamps == [T1] * 8  # the step back never shows in commit order


def test_operations_from_many_threads_all_commit(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(T1)
    plane = Plane.of(store, orders, clock)
    failures: list[BaseException] = []

    def one(name: str) -> Started:
        return plane.run("start", lambda conn: start(conn, clock, orders, name, {"title": name}))

    def starter(n: int) -> None:
        try:
            for i in range(10):
                one(f"T-{n}-{i}")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=starter, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(tokens(store)) == 80
    with store.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM ledger")).scalar() == 80 * len(START_KINDS)


def test_two_groups_in_a_deadlock_are_rerun_one_by_one(store: Store) -> None:
    """Postgres: two lanes' groups wait on each other's family locks; the database stops one
    group, which is rolled back whole and its operations run again one by one."""
    if store.sqlite:
        return  # one lane, one writer: no two groups wait on each other
    with store.begin() as conn:
        conn.execute(text("CREATE TABLE applied (name TEXT PRIMARY KEY)"))
    meeting = threading.Barrier(2, timeout=30)
    first_started = threading.Event()
    runs: list[str] = []

    def locking(name: str, key: int, meet: bool) -> Op:
        def work(conn: Connection) -> str:
            runs.append(name)
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
            if meet and runs.count(name) == 1:  # only the first run meets the other group
                first_started.set()
                meeting.wait()
            conn.execute(text("INSERT INTO applied (name) VALUES (:n)"), {"n": name})
            return name

        return Op("note", work)

    group_a = [locking("a1", 1, True), locking("a2", 2, False)]
    group_b = [locking("b1", 2, True), locking("b2", 1, False)]
    lanes = Lanes(store)
    lanes.submit(group_a)
    assert first_started.wait(30)
    lanes.submit(group_b)  # the first lane is busy: a second lane takes it
    answers = sorted(op.future.result(timeout=60) for op in group_a + group_b)
    assert answers == ["a1", "a2", "b1", "b2"]
    with store.begin() as conn:
        applied = [r[0] for r in conn.execute(text("SELECT name FROM applied ORDER BY name"))]
    assert applied == ["a1", "a2", "b1", "b2"]
    # One group ran its two operations twice: together (stopped), then one by one.
    assert sorted(runs) in (
        ["a1", "a1", "a2", "a2", "b1", "b2"],
        ["a1", "a2", "b1", "b1", "b2", "b2"],
    )


def test_a_cancelled_wait_does_not_stop_the_group(store: Store) -> None:
    """A request whose client went away cancels its future: the group still answers the rest."""
    release = threading.Event()
    lanes = Lanes(store)
    busy = Op("note", lambda conn: release.wait(30))
    lanes.submit([busy])
    gone = Op("note", lambda conn: release.wait(30) and "ran")
    kept = Op("note", lambda conn: "answered")
    lanes.submit([gone])
    lanes.submit([kept])
    assert gone.future.cancel()
    release.set()
    assert busy.future.result(timeout=30) is True
    assert kept.future.result(timeout=30) == "answered"
    assert gone.future.cancelled()


def test_a_lost_connection_fails_every_operation_and_applies_none(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    """The server ends the shared transaction's connection in the middle of a group (a Postgres
    restart): its savepoint cannot be rolled back, and every operation is `503 database_busy`."""
    if store.sqlite:
        return  # a SQLite connection cannot be ended from the server's side
    clock.set(T1)
    plane = Plane.of(store, orders, clock)

    def ended(conn: Connection) -> str:
        conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        return "unreachable"

    answers = plane.run_many(
        [
            starting(plane, "ORDER-1", {"title": "first"}),
            ("note", ended),
            starting(plane, "ORDER-2", {"title": "second"}),
        ]
    )
    assert [(type(a), a.code, a.status) for a in answers] == [
        (DatabaseBusy, "database_busy", 503)
    ] * 3
    assert tokens(store) == []
    # The lane goes on with a new connection: the next operations commit.
    assert isinstance(plane.run_many([starting(plane, "ORDER-3", {"title": "3"})])[0], Started)


def _traced(store: Store) -> list[str]:
    """Every statement SQLite runs on the store's connections from now on (its own trace)."""
    seen: list[str] = []
    store.engine.dispose()  # new connections, each traced from its start

    @event.listens_for(store.engine, "connect")
    def _trace(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(seen.append)

    return seen


@pytest.fixture
def traced(store: Store, clock: FakeClock, orders: EngineConfig) -> tuple[Plane, list[str]]:
    """A plane on SQLite at T1, and every statement its connections run from now on."""
    if not store.sqlite:
        pytest.skip("SQLite's trace shows each statement; the path is the same on Postgres")
    clock.set(T1)
    return Plane.of(store, orders, clock), _traced(store)


def test_a_group_whose_operations_all_succeed_takes_no_savepoint(
    traced: tuple[Plane, list[str]],
) -> None:
    plane, seen = traced
    answers = plane.run_many([starting(plane, f"ORDER-{n}", {"title": "t"}) for n in (1, 2, 3)])
    assert [a.created for a in answers] == [True, True, True]
    assert [s for s in seen if "SAVEPOINT" in s] == []
    assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1


def test_a_group_with_a_refusal_runs_again_each_in_its_savepoint_and_applies_each_once(
    store: Store, traced: tuple[Plane, list[str]]
) -> None:
    plane, seen = traced
    answers = plane.run_many(
        [
            starting(plane, "ORDER-1", {"title": "first"}),
            starting(plane, "ORDER-2", {"wrong": 1}),
            starting(plane, "ORDER-3", {"title": "third"}),
        ]
    )
    assert [type(a).__name__ for a in answers] == ["Started", "Refusal", "Started"]
    # The quick pass stopped at the refusal and was rolled back; the second pass took a
    # savepoint per operation and committed once.
    assert seen.count("BEGIN IMMEDIATE") == 2 and seen.count("ROLLBACK") == 1
    assert seen.count("SAVEPOINT stateous_op") == 3 and seen.count("COMMIT") == 1
    assert tokens(store) == ["ORDER-1", "ORDER-3"]
    with store.begin() as conn:
        assert [r[2] for r in ledger_rows(conn, "ORDER-1")] == START_KINDS
        assert [r[2] for r in ledger_rows(conn, "ORDER-3")] == START_KINDS
