"""ORDER-1 and ORDER-2 of the getting-started walkthrough, driven through the engine with a fake
clock: ORDER-1's rows are those docs/data.md shows."""

from __future__ import annotations

from datetime import datetime

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.note import note
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from tests.support.rows import ledger_rows, table_rows, task_rows, token_row

T1 = "2026-10-16 20:48:44.845389"
T5 = "2026-10-16 20:48:45.546816"
T6 = "2026-10-16 20:48:45.575304"
T10 = "2026-10-16 20:48:45.592695"
T11 = "2026-10-16 20:48:45.609424"
BOX = "build-box-1"
REQUEST = "eebe09928fb149949cb05e9fcb8740ff"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_order_1_writes_the_rows_of_seed_000(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    clock.set(at(T1))
    with store.begin() as conn:
        started = start(conn, clock, orders, "ORDER-1", {"title": "first order"})
    assert started.created
    clock.set(at(T5))
    with store.begin() as conn:
        grant = claim(conn, clock, orders, BOX, ["draft", "review"], "a" * 32)
    assert grant == {
        "task": 1, "token": "ORDER-1", "state": "draft", "visit": 1, "attempt": 1,
        "context": {"title": "first order", "verdict": None}, "memory": {},
        "entered_by": {"name": "__started__"},
    }  # fmt: skip
    clock.set(at(T6))
    with store.begin() as conn:
        report(conn, clock, orders, 1, Outcome("event", "submitted", attempt=1, supervisor=BOX))
    clock.set(at(T10))
    with store.begin() as conn:
        grant = claim(conn, clock, orders, BOX, ["draft", "review"], "b" * 32)
    assert grant is not None and grant["entered_by"] == {"name": "submitted"}
    clock.set(at(T11))
    verdict = {"approved": True, "note": ""}
    with store.begin() as conn:
        token = report(
            conn, clock, orders, 2, Outcome("event", "reviewed", verdict, attempt=1, supervisor=BOX)
        )
    assert token.status == "completed"
    clock.set(at("2026-10-16 20:48:46.62"))
    with store.begin() as conn:
        assert claim(conn, clock, orders, BOX, ["draft", "review"], REQUEST) is None
    with store.begin() as conn:
        assert ledger_rows(conn, "ORDER-1") == [
            (1, T1, "started", None, {"context": {"title": "first order", "verdict": None}}),
            (
                2,
                T1,
                "event_accepted",
                None,
                {"event": "__started__", "payload": None, "state": "__start__"},
            ),
            (3, T1, "entered", None, {"state": "draft", "visit": 1}),
            (4, T1, "task_queued", None, {"task": 1, "state": "draft"}),
            (5, T5, "task_claimed", None, {"task": 1, "supervisor": BOX, "attempt": 1}),
            (
                6,
                T6,
                "event_accepted",
                None,
                {"event": "submitted", "payload": None, "state": "draft"},
            ),
            (7, T6, "task_done", None, {"task": 1}),
            (8, T6, "entered", None, {"state": "review", "visit": 1}),
            (9, T6, "task_queued", None, {"task": 2, "state": "review"}),
            (10, T10, "task_claimed", None, {"task": 2, "supervisor": BOX, "attempt": 1}),
            (11, T11, "context_changed", None, {"keys": ["verdict"]}),
            (
                12,
                T11,
                "event_accepted",
                None,
                {"event": "reviewed", "payload": verdict, "state": "review"},
            ),
            (13, T11, "task_done", None, {"task": 2}),
            (14, T11, "completed", None, {}),
        ]
        assert token_row(conn, "ORDER-1") == (
            "ORDER-1", "review", "completed", 1, {"title": "first order", "verdict": verdict}, T6, None, None,
        )  # fmt: skip
        assert task_rows(conn) == [
            (1, "ORDER-1", "draft", 1, "done", 1, BOX, None, T1),
            (2, "ORDER-1", "review", 1, "done", 1, BOX, None, T6),
        ]
        assert table_rows(conn, "timers") == []
        assert table_rows(conn, "memory") == []
        assert table_rows(conn, "claims") == [(BOX, REQUEST, None, None)]


def test_order_2_is_sent_back_and_waits(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, orders, "ORDER-2", {"title": "reject me"})
    for task, event, payload in (
        (1, "submitted", None),
        (2, "reviewed", {"approved": False, "note": ""}),
    ):
        with store.begin() as conn:
            claim(conn, clock, orders, BOX, ["draft", "review"], None)
        with store.begin() as conn:
            report(conn, clock, orders, task, Outcome("event", event, payload, supervisor=BOX))
    with store.begin() as conn:
        grant = claim(conn, clock, orders, BOX, ["draft", "review"], None)
    assert grant is not None and grant["visit"] == 2 and grant["entered_by"] == {"name": "reviewed"}
    with store.begin() as conn:
        note(conn, clock, orders, 3, "the review sent this order back: a person must change it", 1)
        report(conn, clock, orders, 3, Outcome("waiting", attempt=1, supervisor=BOX))
    with store.begin() as conn:
        kinds = [row[2] for row in ledger_rows(conn, "ORDER-2")]
        assert kinds == [
            "started", "event_accepted", "entered", "task_queued", "task_claimed", "event_accepted",
            "task_done", "entered", "task_queued", "task_claimed", "context_changed",
            "event_accepted", "task_done", "entered", "task_queued", "task_claimed", "note",
            "task_waiting",
        ]  # fmt: skip
        rows = ledger_rows(conn, "ORDER-2")
        assert rows[13][4] == {"state": "draft", "visit": 2}
        assert rows[16][4] == {
            "task": 3,
            "text": "the review sent this order back: a person must change it",
        }
        assert token_row(conn, "ORDER-2")[1:5] == (
            "draft", "active", 2, {"title": "reject me", "verdict": {"approved": False, "note": ""}},
        )  # fmt: skip
