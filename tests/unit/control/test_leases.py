"""Lease expiry and retries: a crashed supervisor's task tried again, a held `error` that cannot
apply, old attempts."""

from __future__ import annotations

from datetime import datetime

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine import reads
from stateous.control.engine.heartbeat import heartbeat
from stateous.control.engine.lease import expire_lease
from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.history import history_text
from tests.unit.control.harness import Engine, refusal

T0 = datetime(2026, 10, 16, 20, 0, 0, 125000)
LEASE = 120


def gone(box: str) -> str:
    return f"{box} stopped answering: no heartbeat for 2 minutes"


@pytest.fixture
def engine(store: Store, clock: FakeClock, sdlc: EngineConfig) -> Engine:
    clock.set(T0)
    return Engine(store, clock, sdlc)


def test_a_crashed_supervisor_is_retried_then_the_token_fails(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.clock.advance(1)
    assert engine.claim("build-box-1", ["coding"]) is not None
    engine.memory(1, "progress", 3, 1)
    assert engine.tick(LEASE).leases == 0  # the lease ends only once it is before now
    assert engine.tick(0.001).leases == 1
    assert engine.rows("T")[5:] == [
        ("task_claimed", {"task": 1, "supervisor": "build-box-1", "attempt": 1}),
        ("memory_set", {"state": "coding", "memory_key": "progress"}),
        ("task_failed", {"task": 1, "error": gone("build-box-1")}),
        ("task_retrying", {"task": 1, "attempt": 2}),
    ]
    assert engine.task(1) == ("queued", 1, None)
    # The late report of attempt 1: not held while queued, over once attempt 2 is claimed.
    late = Outcome("event", "done", attempt=1, supervisor="build-box-1")
    assert refusal(engine.report, 1, late) == (
        409, "task_not_held", "task 1 is queued; no one works on it now",
    )  # fmt: skip
    grant = engine.claim("build-box-2", ["coding"])
    assert grant is not None and grant["attempt"] == 2 and grant["memory"] == {"progress": 3}
    over = (409, "attempt_over", "task 1 is at attempt 2, not attempt 1")
    assert refusal(engine.report, 1, late) == over
    assert refusal(engine.note, 1, "late words", 1) == over
    assert refusal(engine.memory, 1, "k", 1, 1) == over
    assert engine.rows("T")[-1] == (
        "task_claimed", {"task": 1, "supervisor": "build-box-2", "attempt": 2},
    )  # fmt: skip
    with engine.store.begin() as conn:
        entries = [e for e in reads.history(conn, "T") if e["kind"].startswith("task_")][1:]
    assert [history_text(e) for e in entries] == [
        "build-box-1 took task 1 (attempt 1)",
        "task 1 failed: build-box-1 stopped answering: no heartbeat for 2 minutes",
        "task 1 is tried again (attempt 2)",
        "build-box-2 took task 1 (attempt 2)",
    ]
    engine.tick(LEASE + 1)
    assert engine.claim("build-box-3", ["coding"]) is not None
    engine.tick(LEASE + 1)
    reason = "'coding' failed, and has no transition on 'error': " + gone("build-box-3")
    tail = engine.rows("T")[-2:]
    assert tail == [
        ("task_failed", {"task": 1, "error": gone("build-box-3")}),
        ("failed", {"reason": reason}),
    ]
    assert engine.task(1) == ("failed", 3, "build-box-3")
    assert engine.timers("T") == [("timeout", "timeout", "cancelled")]
    assert engine.query("SELECT * FROM memory") == []


def test_a_heartbeat_keeps_the_lease_and_a_renewed_lease_is_not_ended(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.clock.advance(LEASE - 1)
    with engine.store.begin() as conn:
        assert heartbeat(conn, engine.clock, engine.config, "box", [1]) == []
    assert engine.tick(LEASE - 1).leases == 0
    engine.clock.advance(2)
    with engine.store.begin() as conn:
        assert heartbeat(conn, engine.clock, engine.config, "box", [1]) == [1]
    with engine.store.begin() as conn:
        assert expire_lease(conn, engine.clock, engine.config, 1) is True
    with engine.store.begin() as conn:
        assert expire_lease(conn, engine.clock, engine.config, 1) is False
    assert engine.rows("T")[-2:] == [
        ("task_failed", {"task": 1, "error": gone("box")}),
        ("task_retrying", {"task": 1, "attempt": 2}),
    ]


def test_a_retry_stops_the_routine_timers_but_not_the_timeout(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.report(
        1, Outcome("waiting", schedules=(Schedule("stuck", None, "2h"),), supervisor="box")
    )
    engine.report(1, Outcome("failed", error="flaky"))
    assert engine.rows("T")[-2:] == [
        ("task_failed", {"task": 1, "error": "flaky"}),
        ("task_retrying", {"task": 1, "attempt": 2}),
    ]
    assert engine.timers("T") == [
        ("timeout", "timeout", "pending"),
        ("stuck", "timer", "cancelled"),
    ]
    assert engine.tick(3 * 3600).timers == 0


def test_a_lease_that_ends_while_paused(engine: Engine) -> None:
    engine.start("T", {"repo": "r"})
    engine.claim("box", ["coding"])
    engine.pause("T")
    engine.tick(LEASE + 1)
    assert engine.rows("T")[-2:] == [
        ("task_failed", {"task": 1, "error": gone("box")}),
        ("task_retrying", {"task": 1, "attempt": 2}),
    ]
    assert engine.claim("box", ["coding"]) is None  # queued again, but not until the resume
    engine.resume("T")
    assert engine.claim("box", ["coding"]) is not None


def test_a_held_error_that_cannot_apply(engine: Engine) -> None:
    """A paused token's last attempt ends with its lease: `error` is held, then dropped at the
    resume, and the token fails."""
    engine.start("T", {"repo": "r"})
    engine.fire("T", "done")
    assert engine.claim("box-1", ["testing"]) is not None
    engine.pause("T")
    engine.tick(LEASE + 1)
    assert engine.rows("T")[-2:] == [
        ("task_failed", {"task": 2, "error": gone("box-1")}),
        ("event_deferred", {
            "event": "error", "payload": None, "state": "testing", "visit": 1, "task": 2,
            "arrival": 1,
        }),
    ]  # fmt: skip
    assert engine.task(2) == ("failed", 1, "box-1")
    engine.resume("T")
    refused = "no transition for 'error' from 'testing'"
    assert engine.rows("T")[-3:] == [
        ("resumed", {}),
        ("event_dropped", {"event": "error", "reason": refused}),
        ("failed", {"reason": refused}),
    ]
    assert engine.token("T")["status"] == "failed"
    assert engine.timers("T")[-1] == ("timeout", "timeout", "cancelled")
