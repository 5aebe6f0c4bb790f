"""Fire, claim, heartbeat, report, note and memory: the rows and refusals of each."""

from __future__ import annotations

from typing import Any

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.fire import fire
from stateous.control.engine.heartbeat import heartbeat
from stateous.control.engine.memory import write_memory
from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.store.db import Store
from stateous.model.graph import load_graph
from tests.support.graphs import SDLC, graph_text, variant
from tests.support.rows import ledger_rows, table_rows, task_rows


def kinds(store: Store, token: str) -> list[tuple[str, dict[str, Any]]]:
    with store.begin() as conn:
        return [(row[2], row[4]) for row in ledger_rows(conn, token)]


def test_fire_with_a_key_applies_once_and_a_rejection_keeps_the_key_free(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, sdlc, "T-1", {"repo": "acme/api"})
    with pytest.raises(Refusal) as refused, store.begin() as conn:
        fire(conn, clock, sdlc, "T-1", "passed", {"passed": 1, "failed": 0}, "k1")
    assert (refused.value.code, refused.value.message) == (
        "event_not_allowed", "no transition for 'passed' from 'coding'",
    )  # fmt: skip
    with store.begin() as conn:
        moved = fire(conn, clock, sdlc, "T-1", "done", None, "k1")
    assert (moved.token.state, moved.duplicate) == ("testing", False)
    with store.begin() as conn:
        again = fire(conn, clock, sdlc, "T-1", "done", None, "k1")
    assert again.duplicate and again.token.state == "testing"
    rows = kinds(store, "T-1")
    assert [k for k, _ in rows[5:]] == [
        "event_rejected", "event_accepted", "task_cancelled", "entered", "task_queued", "timer_set",
    ]  # fmt: skip
    with store.begin() as conn:
        keys = [row[3] for row in ledger_rows(conn, "T-1")]
    assert keys.count("k1") == 1 and keys[6] == "k1"
    assert rows[10][1] == {"event": "timeout", "due_at": "2026-10-16T21:48:44.845389Z"}


def test_two_matching_guards_fail_the_token(store: Store, clock: FakeClock) -> None:
    doc = variant(SDLC)
    doc["transitions"][5] = {
        "from": "testing",
        "to": "__end__",
        "on": "failed",
        "when": "payload.failed > 0",
    }
    config = EngineConfig(load_graph(graph_text(doc)))
    with store.begin() as conn:
        start(conn, clock, config, "T-2", {"repo": "r"})
        fire(conn, clock, config, "T-2", "done", None)
    with store.begin() as conn:
        failed = fire(conn, clock, config, "T-2", "failed", {"passed": 0, "failed": 1})
    assert failed.token.status == "failed"
    rows = kinds(store, "T-2")
    assert rows[-2:] == [
        ("task_cancelled", {"task": 2}),
        ("failed", {"reason": "'failed' from 'testing' matched more than one guard ('coding', '__end__'); "
                    "compile the workflow again, which refuses such guards"}),
    ]  # fmt: skip


def test_claim_repeats_a_lost_answer_and_heartbeats_find_lost_tasks(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, sdlc, "T-1", {"repo": "r"})
        start(conn, clock, sdlc, "T-2", {"repo": "r"})
    with store.begin() as conn:
        first = claim(conn, clock, sdlc, "box", ["coding"], "r1")
    clock.advance(5)
    with store.begin() as conn:
        repeat = claim(conn, clock, sdlc, "box", [], "r1")
    assert first is not None and repeat == first and first["task"] == 1
    with store.begin() as conn:
        second = claim(conn, clock, sdlc, "box", ["coding"], "r2")
        assert table_rows(conn, "claims") == [("box", "r2", 2, 1)]
    assert second is not None and second["task"] == 2
    with store.begin() as conn:
        assert claim(conn, clock, sdlc, "box", ["coding"], "r3") is None
        assert table_rows(conn, "claims") == [("box", "r3", None, None)]
        fire(conn, clock, sdlc, "T-1", "done", None)
    with store.begin() as conn:
        assert heartbeat(conn, clock, sdlc, "box", [2, 1, 99, 2]) == [1, 99]
        assert heartbeat(conn, clock, sdlc, "other", [2]) == [2]
    clock.advance(121)
    with store.begin() as conn:
        assert heartbeat(conn, clock, sdlc, "box", [2]) == [2]
    assert [k for k, _ in kinds(store, "T-1")].count("task_claimed") == 1


def test_failed_reports_retry_then_fail_the_token(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, sdlc, "T-1", {"repo": "r"})
    for attempt in (1, 2, 3):
        with store.begin() as conn:
            grant = claim(conn, clock, sdlc, "box", ["coding"], None)
            assert grant is not None and grant["attempt"] == attempt
            write_memory(conn, clock, sdlc, 1, "tries", attempt, attempt)
        with store.begin() as conn:
            report(
                conn, clock, sdlc, 1, Outcome("failed", error="", attempt=attempt, supervisor="box")
            )
    rows = kinds(store, "T-1")
    assert ("task_retrying", {"task": 1, "attempt": 3}) in rows
    assert rows[-2:] == [
        ("task_failed", {"task": 1, "error": "the routine failed, and said no more"}),
        ("failed", {"reason": "'coding' failed, and has no transition on 'error': the routine failed, and said no more"}),
    ]  # fmt: skip
    with store.begin() as conn:
        assert task_rows(conn)[0][4:7] == ("failed", 3, "box")
        assert table_rows(conn, "memory") == []
        assert table_rows(conn, "timers")[0][8] == "cancelled"


def test_waiting_report_with_context_and_schedules(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, sdlc, "T-1", {"repo": "r"})
        claim(conn, clock, sdlc, "box", ["coding"], None)
    outcome = Outcome(
        "waiting",
        context={"repo": "acme"},
        schedules=[Schedule("stuck", None, "2h")],
        supervisor="box",
    )
    with store.begin() as conn:
        token = report(conn, clock, sdlc, 1, outcome)
    assert token.context == {"repo": "acme"}
    assert kinds(store, "T-1")[-3:] == [
        ("context_changed", {"keys": ["repo"]}),
        ("timer_set", {"event": "stuck", "due_at": "2026-10-16T22:48:44.845389Z"}),
        ("task_waiting", {"task": 1}),
    ]
    with pytest.raises(Refusal) as refused, store.begin() as conn:
        report(conn, clock, sdlc, 1, Outcome("event", "done", supervisor="box"))
    assert refused.value.message == "task 1 is not held by 'box'"
    with store.begin() as conn:
        moved = report(conn, clock, sdlc, 1, Outcome("event", "done"))
    assert moved.state == "testing"
    assert kinds(store, "T-1")[-5][0] == "event_accepted" and kinds(store, "T-1")[-4] == (
        "task_done",
        {"task": 1},
    )


def test_memory_set_delete_and_the_grant(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:
        start(conn, clock, sdlc, "T-1", {"repo": "r"})
        claim(conn, clock, sdlc, "box", ["coding"], None)
        write_memory(conn, clock, sdlc, 1, "a", {"x": [1]}, None)
        write_memory(conn, clock, sdlc, 1, "b", 2, 1)
        write_memory(conn, clock, sdlc, 1, "b", None, 1)
        write_memory(conn, clock, sdlc, 1, "zzz", None, 1)
        report(conn, clock, sdlc, 1, Outcome("failed", error="e", supervisor="box"))
    with store.begin() as conn:
        grant = claim(conn, clock, sdlc, "box", ["coding"], None)
    assert grant is not None and grant["memory"] == {"a": {"x": [1]}} and grant["attempt"] == 2
    assert [r for r in kinds(store, "T-1") if r[0].startswith("memory")] == [
        ("memory_set", {"state": "coding", "memory_key": "a"}),
        ("memory_set", {"state": "coding", "memory_key": "b"}),
        ("memory_deleted", {"state": "coding", "memory_key": "b"}),
    ]
