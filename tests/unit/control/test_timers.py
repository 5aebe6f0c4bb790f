"""Timeouts and routine timers, fired by the clock's tick with a fake clock."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from stateous.control.clock import FakeClock, iso
from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.graph import load_graph
from tests.support.graphs import SDLC, graph_text, variant
from tests.unit.control.harness import Engine

T0 = datetime(2026, 10, 6, 23, 43, 39, 500000)
HOUR = 3600


@pytest.fixture
def engine(store: Store, clock: FakeClock, sdlc: EngineConfig) -> Engine:
    clock.set(T0)
    return Engine(store, clock, sdlc)


def test_the_timer_of_a_waiting_task(engine: Engine) -> None:
    """A waiting task's routine timer: `stuck` after 2h fires, and the waiting task is done."""
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    stuck = Schedule("stuck", None, "2h")
    engine.report(1, Outcome("waiting", schedules=(stuck,), supervisor="box"))
    assert engine.rows("T")[4:] == [
        ("timer_set", {"event": "timeout", "due_at": iso(T0 + timedelta(hours=6))}),
        ("task_claimed", {"task": 1, "supervisor": "box", "attempt": 1}),
        ("timer_set", {"event": "stuck", "due_at": iso(T0 + timedelta(hours=2))}),
        ("task_waiting", {"task": 1}),
    ]
    assert engine.tick(2 * HOUR - 1).timers == 0
    assert engine.tick(1).timers == 1
    assert engine.rows("T")[8:] == [
        ("timer_fired", {"event": "stuck"}),
        ("event_accepted", {"event": "stuck", "payload": None, "state": "coding"}),
        ("task_done", {"task": 1}),
        ("completed", {}),
    ]
    assert engine.timers("T") == [("timeout", "timeout", "cancelled"), ("stuck", "timer", "fired")]
    assert engine.task(1) == ("done", 1, "box")


def test_a_routine_timer_without_a_transition_is_refused(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.fire("T", "done")
    engine.claim("box", ["testing"])
    engine.report(
        2, Outcome("waiting", schedules=(Schedule("done", None, "5m"),), supervisor="box")
    )
    engine.tick(300)
    assert engine.rows("T")[-2:] == [
        ("timer_fired", {"event": "done"}),
        ("event_rejected", {"event": "done", "reason": "no transition for 'done' from 'testing'"}),
    ]
    assert engine.token("T")["status"] == "active" and engine.task(2)[0] == "waiting"


def test_a_timeout_without_a_transition_fails_the_token(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.tick(6 * HOUR)
    assert engine.rows("T")[-3:] == [
        ("timer_fired", {"event": "timeout"}),
        ("task_cancelled", {"task": 1}),
        ("failed", {"reason": "'coding' timed out: no transition for 'timeout' from 'coding'"}),
    ]


def test_a_timeout_covers_every_attempt(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    for _ in range(2):
        engine.claim("box", ["coding"])
        engine.tick(2 * HOUR)  # each lease ends; the retry does not restart the timeout
    assert engine.task(1)[:2] == ("queued", 2)
    engine.tick(2 * HOUR)
    assert engine.rows("T")[-1] == (
        "failed", {"reason": "'coding' timed out: no transition for 'timeout' from 'coding'"},
    )  # fmt: skip


def test_a_timeout_with_a_transition_moves_the_token(store: Store, clock: FakeClock) -> None:
    doc = variant(SDLC)
    doc["transitions"].append({"from": "testing", "to": "coding", "on": "timeout"})
    engine = Engine(store, clock, EngineConfig(load_graph(graph_text(doc))))
    clock.set(T0)
    engine.start("T", {"repo": "r"})
    engine.fire("T", "done")
    engine.tick(HOUR)
    assert engine.rows("T")[-6:] == [
        ("timer_fired", {"event": "timeout"}),
        ("event_accepted", {"event": "timeout", "payload": None, "state": "testing"}),
        ("task_cancelled", {"task": 2}),
        ("entered", {"state": "coding", "visit": 2}),
        ("task_queued", {"task": 3, "state": "coding"}),
        ("timer_set", {"event": "timeout", "due_at": iso(T0 + timedelta(hours=7))}),
    ]


def test_due_timers_fire_in_order_and_the_first_move_cancels_the_rest(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    schedules = (Schedule("done", None, "2h"), Schedule("stuck", None, "1h"))
    engine.report(1, Outcome("waiting", schedules=schedules, supervisor="box"))
    result = engine.tick(3 * HOUR)
    assert result.timers == 1
    assert engine.rows("T")[-4:-2] == [
        ("timer_fired", {"event": "stuck"}),
        ("event_accepted", {"event": "stuck", "payload": None, "state": "coding"}),
    ]
    assert engine.timers("T") == [
        ("timeout", "timeout", "cancelled"),
        ("done", "timer", "cancelled"),
        ("stuck", "timer", "fired"),
    ]


def test_a_timer_of_an_earlier_visit_never_fires(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.report(
        1, Outcome("waiting", schedules=(Schedule("stuck", None, "1m"),), supervisor="box")
    )
    engine.fire("T", "done")
    assert engine.tick(HOUR - 1).timers == 0
    assert [kind for kind, _ in engine.rows("T")].count("timer_fired") == 0
