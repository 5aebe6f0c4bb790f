"""The claim's choice (spec 30 §3.3): the oldest queued task of an active token among the served
states, read one bounded part per state; on both backends."""

from __future__ import annotations

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.pause import pause
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store

BOX = "box"


def _start(store: Store, clock: FakeClock, orders: EngineConfig, token: str) -> None:
    store.run("start", lambda conn: start(conn, clock, orders, token, {"title": token}))


def _claim(store: Store, clock: FakeClock, orders: EngineConfig, states: list[str]) -> str | None:
    grant = store.run("claim", lambda conn: claim(conn, clock, orders, BOX, states, None))
    return None if grant is None else f"{grant['token']}:{grant['state']}"


def test_the_oldest_task_across_the_served_states_is_claimed_first(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    for token in ("A", "B", "C"):
        _start(store, clock, orders, token)
    # A moves on to review: its review task (id 4) is newer than B's and C's draft tasks.
    first = _claim(store, clock, orders, ["draft"])
    assert first == "A:draft"
    submitted = Outcome("event", "submitted", attempt=1, supervisor=BOX)
    store.run("report", lambda conn: report(conn, clock, orders, 1, submitted))
    order = [_claim(store, clock, orders, ["review", "draft"]) for _ in range(4)]
    assert order == ["B:draft", "C:draft", "A:review", None]


def test_more_than_twenty_paused_tokens_do_not_hide_an_active_one(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    for n in range(25):
        _start(store, clock, orders, f"P{n:02}")
        store.run("pause", lambda conn, n=n: pause(conn, clock, orders, f"P{n:02}"))
    _start(store, clock, orders, "ACTIVE")
    assert _claim(store, clock, orders, ["draft", "review"]) == "ACTIVE:draft"
    assert _claim(store, clock, orders, ["draft", "review"]) is None
