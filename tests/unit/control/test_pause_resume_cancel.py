"""Pause, resume and cancel: TICKET-3 (pause, fire, resume, cancel, fire) row by row, and the
refusals."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from stateous.control.clock import FakeClock, iso
from stateous.control.engine import reads
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.history import show_lines
from tests.unit.control.harness import Engine, refusal

T0 = datetime(2026, 10, 16, 20, 39, 47, 250000)
SHOW_TICKET_3 = """
TICKET-3: testing, cancelled
22:39:47  #1  started
22:39:47  #2  __started__ in START
22:39:47  #3  entered coding
22:39:47  #4  task 1 queued for coding
22:39:47  #5  timer set: timeout at 2026-10-17 04:39:47
22:39:48  #6  paused
22:39:49  #7  done held while paused
22:39:49  #8  resumed
22:39:49  #9  done applied on resume
22:39:49  #10  done in coding
22:39:49  #11  task 1 cancelled
22:39:49  #12  entered testing
22:39:49  #13  task 2 queued for testing
22:39:49  #14  timer set: timeout at 2026-10-16 23:39:49
22:39:50  #15  task 2 cancelled
22:39:50  #16  cancelled
22:39:51  #17  done refused: token 'TICKET-3' is cancelled; it takes no events
"""


@pytest.fixture
def engine(store: Store, clock: FakeClock, sdlc: EngineConfig) -> Engine:
    clock.set(T0)
    return Engine(store, clock, sdlc)


def test_ticket_3_pause_held_event_resume_cancel(engine: Engine) -> None:
    engine.start("TICKET-3", {"repo": "acme/api"})
    engine.clock.advance(1)
    assert engine.pause("TICKET-3").status == "paused"
    engine.clock.advance(1)
    fired = engine.fire("TICKET-3", "done")
    assert (fired.token.state, fired.token.status) == ("coding", "paused")
    resumed = engine.resume("TICKET-3")
    assert (resumed.state, resumed.status) == ("testing", "active")
    engine.clock.advance(1)
    assert engine.cancel("TICKET-3").status == "cancelled"
    engine.clock.advance(1)
    assert refusal(engine.fire, "TICKET-3", "done") == (
        409, "token_not_active", "token 'TICKET-3' is cancelled; it takes no events",
    )  # fmt: skip
    t = [str(T0 + timedelta(seconds=n)) for n in range(5)]
    assert engine.full_rows("TICKET-3") == [
        (1, t[0], "started", None, {"context": {"repo": "acme/api"}}),
        (2, t[0], "event_accepted", None, {"event": "__started__", "payload": None, "state": "__start__"}),
        (3, t[0], "entered", None, {"state": "coding", "visit": 1}),
        (4, t[0], "task_queued", None, {"task": 1, "state": "coding"}),
        (5, t[0], "timer_set", None, {"event": "timeout", "due_at": iso(T0 + timedelta(hours=6))}),
        (6, t[1], "paused", None, {}),
        (7, t[2], "event_deferred", None, {"event": "done", "payload": None, "arrival": 1}),
        (8, t[2], "resumed", None, {}),
        (9, t[2], "event_replayed", None, {"event": "done"}),
        (10, t[2], "event_accepted", None, {"event": "done", "payload": None, "state": "coding"}),
        (11, t[2], "task_cancelled", None, {"task": 1}),
        (12, t[2], "entered", None, {"state": "testing", "visit": 1}),
        (13, t[2], "task_queued", None, {"task": 2, "state": "testing"}),
        (14, t[2], "timer_set", None, {"event": "timeout", "due_at": iso(T0 + timedelta(hours=1, seconds=2))}),
        (15, t[3], "task_cancelled", None, {"task": 2}),
        (16, t[3], "cancelled", None, {}),
        (17, t[4], "event_rejected", None, {"event": "done", "reason": "token 'TICKET-3' is cancelled; it takes no events"}),
    ]  # fmt: skip
    assert engine.timers("TICKET-3") == [
        ("timeout", "timeout", "cancelled"),
        ("timeout", "timeout", "cancelled"),
    ]
    assert engine.query("SELECT status FROM tasks ORDER BY id") == [("cancelled",), ("cancelled",)]
    # `stateous token show TICKET-3` in a zone two hours east of UTC: its 17 lines.
    with engine.store.begin() as conn:
        wire, entries = reads.read_token(conn, "TICKET-3"), reads.history(conn, "TICKET-3")
    lines = [str(line) for line in show_lines(wire, [], entries, timezone(timedelta(hours=2)))]
    assert lines == SHOW_TICKET_3.strip().splitlines()


def test_a_held_fire_keeps_its_key_and_a_repeat_is_a_duplicate(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.pause("T")
    engine.fire("T", "done", key="k1")
    again = engine.fire("T", "done", key="k1")
    assert again.duplicate and again.token.status == "paused"
    assert engine.full_rows("T")[-1][2:4] == ("event_deferred", "k1")
    engine.resume("T")
    rows = engine.full_rows("T")
    accepted = [r for r in rows if r[2] == "event_accepted" and r[4]["event"] == "done"]
    assert [r[3] for r in accepted] == [None]  # the replay carries no key; the held row keeps it
    assert engine.fire("T", "done", key="k1").duplicate


def test_resume_gives_the_timers_back_the_paused_time(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.clock.advance(600)
    engine.pause("T")
    engine.clock.advance(3600)
    engine.resume("T")
    due = engine.query("SELECT due_at FROM timers WHERE token = 'T'")[0][0]
    assert str(due).rstrip("0") == str(T0 + timedelta(hours=7)).rstrip("0")


def test_a_paused_token_is_not_claimed_and_its_timers_wait(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.pause("T")
    assert engine.claim("box", ["coding"]) is None
    result = engine.tick(7 * 3600)
    assert result.timers == 0
    assert engine.token("T")["status"] == "paused"
    engine.resume("T")
    assert engine.claim("box", ["coding"]) is not None


def test_the_refusals_of_pause_resume_and_cancel_write_nothing(
    store: Store, clock: FakeClock
) -> None:
    from stateous.model.graph import load_graph
    from tests.support.graphs import graph_text
    from tests.unit.control.harness import DEV

    engine = Engine(store, clock, EngineConfig(load_graph(graph_text(DEV))))
    engine.start("T", {"repo": "r"})
    engine.fire("T", "done")
    child = "T.reviews.1.design-review"
    before = engine.rows(child)
    for verb, call in (
        ("paused", engine.pause),
        ("resumed", engine.resume),
        ("cancelled", engine.cancel),
    ):
        base = {"paused": "pause", "resumed": "resume", "cancelled": "cancel"}[verb]
        assert refusal(call, child) == (
            409, "child_token",
            f"token {child!r} is a child of 'T': it is part of its parent's work, and cannot be "
            f"{verb} on its own; {base} 'T' instead",
        )  # fmt: skip
    assert refusal(engine.pause, "nope") == (404, "token_not_found", "there is no token 'nope'")
    assert refusal(engine.resume, "T") == (
        409, "token_not_active", "token 'T' is active; only a paused token can be resumed",
    )  # fmt: skip
    engine.cancel("T")
    assert refusal(engine.pause, "T") == (
        409, "token_not_active", "token 'T' is cancelled; only an active token can be paused",
    )  # fmt: skip
    assert refusal(engine.cancel, "T") == (
        409, "token_not_active",
        "token 'T' is cancelled; only an active or paused token can be cancelled",
    )  # fmt: skip
    assert engine.rows(child)[: len(before)] == before


def test_cancel_deletes_memory_and_closes_everything(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    grant = engine.claim("box", ["coding"])
    assert grant is not None
    engine.memory(1, "k", {"v": 1}, 1)
    engine.cancel("T")
    assert engine.query("SELECT * FROM memory") == []
    assert engine.task(1)[0] == "cancelled"
    assert engine.timers("T") == [("timeout", "timeout", "cancelled")]
    assert engine.rows("T")[-2:] == [("task_cancelled", {"task": 1}), ("cancelled", {})]


def test_a_running_routine_goes_on_while_paused(engine: Engine) -> None:
    """While paused, heartbeats, notes, memory and `waiting` apply; an outcome is decided first."""
    from stateous.control.engine.heartbeat import heartbeat
    from stateous.control.engine.moves import Schedule
    from stateous.control.engine.report import Outcome

    engine.start("T", {"repo": "r"})
    engine.fire("T", "done")
    engine.claim("box", ["testing"])
    engine.pause("T")
    with engine.store.begin() as conn:
        assert heartbeat(conn, engine.clock, engine.config, "box", [2]) == []
    engine.note(2, "still going", 1)
    engine.memory(2, "k", 1, 1)
    refused = "'testing' may not emit 'done'; it may emit: passed, failed"
    assert refusal(engine.done, 2, "done") == (409, "event_not_allowed", refused)
    engine.report(
        2,
        Outcome(
            "waiting", context={"repo": "r2"}, schedules=(Schedule("passed", {"passed": 1, "failed": 0}, "1m"),),
            supervisor="box",
        ),
    )  # fmt: skip
    assert engine.rows("T")[-7:] == [
        ("paused", {}),
        ("note", {"task": 2, "text": "still going"}),
        ("memory_set", {"state": "testing", "memory_key": "k"}),
        ("event_rejected", {"event": "done", "reason": refused}),
        ("context_changed", {"keys": ["repo"]}),
        ("timer_set", {"event": "passed", "due_at": engine.rows("T")[-2][1]["due_at"]}),
        ("task_waiting", {"task": 2}),
    ]
    assert engine.token("T")["context"] == {"repo": "r2"}
    assert engine.tick(120).timers == 0  # due, but the token is paused
    engine.resume("T")
    # Set during the pause, the timer gets back the whole pause after it was set: 60 s again.
    assert engine.tick(59).timers == 0
    assert engine.tick(1).timers == 1
    assert engine.rows("T")[-4:] == [
        ("timer_fired", {"event": "passed"}),
        ("event_accepted", {"event": "passed", "payload": {"passed": 1, "failed": 0}, "state": "testing"}),
        ("task_done", {"task": 2}),
        ("completed", {}),
    ]  # fmt: skip


def test_a_held_outcome_of_a_state_left_is_dropped_whole(engine: Engine) -> None:
    from stateous.control.engine.moves import Schedule

    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.pause("T")
    engine.fire("T", "done")
    engine.done(1, "stuck", context={"repo": "changed"}, schedules=[Schedule("stuck", None, "1m")])
    assert engine.rows("T")[-2:] == [
        ("event_deferred", {
            "event": "stuck", "payload": None, "state": "coding", "visit": 1, "task": 1,
            "arrival": 2, "context": {"repo": "changed"},
            "schedules": [{"event": "stuck", "after": "1m"}],
        }),
        ("task_done", {"task": 1}),
    ]  # fmt: skip
    engine.resume("T")
    rows = engine.rows("T")
    assert rows[-7:] == [
        ("resumed", {}),
        ("event_replayed", {"event": "done"}),
        ("event_accepted", {"event": "done", "payload": None, "state": "coding"}),
        ("entered", {"state": "testing", "visit": 1}),
        ("task_queued", {"task": 2, "state": "testing"}),
        ("timer_set", {"event": "timeout", "due_at": rows[-2][1]["due_at"]}),
        ("event_dropped", {"event": "stuck", "reason": "the token left the state it came from"}),
    ]
    assert engine.token("T")["context"] == {"repo": "r"}
    assert [t for t in engine.timers("T") if t[0] == "stuck"] == []
