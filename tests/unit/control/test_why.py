"""Why is this token not moving? One test per code, and a healthy token's one finding."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from stateous.control.clock import FakeClock, iso
from stateous.control.engine.moves import Schedule
from stateous.control.engine.report import Outcome
from stateous.control.engine.start_many import StartArgs, start_many
from stateous.control.engine.tx import EngineConfig
from stateous.control.engine.why import why
from stateous.control.store.db import Store
from stateous.control.store.registry import Beat, record_beat
from stateous.control.store.tasks import AHEAD_MOST
from stateous.model.graph import load_graph
from tests.support.graphs import ORDERS, SDLC, graph_text, variant
from tests.unit.control.harness import DEV, Engine, refusal

T0 = datetime(2026, 10, 16, 20, 0, 0)
CTX = {"title": "first order"}
#: The orders graph's version as people read it (the first 8 hex digits of its checksum).
ORDERS_VERSION = load_graph(graph_text(ORDERS)).checksum[7:15]


class Why(Engine):
    """The engine harness with `why` and a supervisor's beat."""

    def why(self, token: str) -> dict[str, Any]:
        with self.store.begin() as conn:
            return why(conn, self.clock, self.config, token)

    def codes(self, token: str) -> list[str]:
        return [f["code"] for f in self.why(token)["findings"]]

    def sentences(self, token: str) -> list[str]:
        return [f["sentence"] for f in self.why(token)["findings"]]

    def beat(
        self, name: str, states: list[str], ago: float = 0.0, checksum: str | None = None
    ) -> None:
        """A beat of supervisor `name`, `ago` seconds ago (recorded as the registry does), of
        the version `checksum` (None: a beat that names none)."""
        seen = self.clock.now() - timedelta(seconds=ago)
        beat = Beat(name, "build-box-1", 1, "0.3.0", states, 4, [], seen, False, checksum)
        with self.store.begin() as conn:
            record_beat(conn, beat, seen)


def engine_for(store: Store, clock: FakeClock, doc: dict[str, Any]) -> Why:
    clock.set(T0)
    return Why(store, clock, EngineConfig(load_graph(graph_text(doc))))


@pytest.fixture
def orders(store: Store, clock: FakeClock) -> Why:
    return engine_for(store, clock, ORDERS)


def test_unknown_token(orders: Why) -> None:
    assert refusal(orders.why, "NOPE") == (404, "token_not_found", "there is no token 'NOPE'")


def test_a_healthy_moving_token_gets_exactly_one_finding(orders: Why) -> None:
    orders.beat("box", ["draft", "review"])
    orders.start("ORDER-1", CTX)
    answer = orders.why("ORDER-1")
    assert answer["token"]["token"] == "ORDER-1"
    assert answer["findings"] == [
        {
            "code": "queued_behind",
            "sentence": "task 1 is queued for 'draft', first in line; a live supervisor of "
            "'draft' takes it at its next claim",
            "since": iso(T0),
        }
    ]
    orders.clock.advance(1)
    orders.claim("box", ["draft"])
    assert orders.why("ORDER-1")["findings"] == [
        {
            "code": "claimed",
            "sentence": "'box' works on task 1 (attempt 1); its lease ends at "
            f"{iso(T0 + timedelta(seconds=121))} unless it beats",
            "since": iso(T0 + timedelta(seconds=1)),
        }
    ]


def test_ended(orders: Why) -> None:
    orders.start("A", CTX)
    orders.claim("box", ["draft"])
    orders.report(1, Outcome("failed", error="the vendor is down", supervisor="box"))
    orders.start("B", CTX)
    orders.cancel("B")
    orders.start("C", CTX)
    orders.claim("box", ["draft"])
    orders.done(3, "submitted")
    orders.claim("box", ["review"])
    orders.done(4, "reviewed", {"approved": True})
    assert orders.why("A")["findings"] == [
        {
            "code": "ended",
            "sentence": "token 'A' failed in 'draft': 'draft' failed, and has no transition on "
            "'error': the vendor is down; retry it after the fix, or move it to a state",
            "since": iso(T0),
        }
    ]
    assert orders.sentences("B") == ["token 'B' was cancelled in 'draft'"]
    assert orders.sentences("C") == ["token 'C' completed after 'review'"]


def test_paused(orders: Why) -> None:
    orders.start("A", CTX)
    orders.clock.advance(5)
    orders.pause("A")
    orders.fire("A", "submitted")
    assert orders.why("A")["findings"] == [
        {
            "code": "paused",
            "sentence": "token 'A' is paused; 1 event is held until 'A' is resumed",
            "since": iso(T0 + timedelta(seconds=5)),
        }
    ]


def test_no_supervisor(orders: Why) -> None:
    orders.beat("other", ["review"])
    orders.beat("dead", ["draft"], ago=31)
    orders.start("A", CTX)
    assert orders.why("A")["findings"] == [
        {
            "code": "no_supervisor",
            "sentence": f"task 1 is queued for 'draft', and no live supervisor of version "
            f"{ORDERS_VERSION} serves 'draft'; start one with 'draft' in its folder",
            "since": iso(T0),
        }
    ]


def test_no_supervisor_with_older_tasks_ahead_names_both(orders: Why) -> None:
    orders.beat("other", ["review"])
    for token in ("A", "B"):
        orders.start(token, CTX)
    assert orders.why("B")["findings"] == [
        {
            "code": "no_supervisor",
            "sentence": f"task 2 is queued for 'draft', and no live supervisor of version "
            f"{ORDERS_VERSION} serves 'draft'; start one with 'draft' in its folder",
            "since": iso(T0),
        },
        {
            "code": "queued_behind",
            "sentence": "task 2 is queued for 'draft' behind 1 older task of 'draft'",
            "since": iso(T0),
        },
    ]
    assert orders.codes("A") == ["no_supervisor"]  # first in line: nothing is ahead


def test_no_supervisor_counts_only_the_supervisors_of_the_tokens_version(
    store: Store, clock: FakeClock
) -> None:
    old = load_graph(graph_text(ORDERS))
    changed = variant(ORDERS)
    changed["events"]["withdrawn"] = {}
    changed["transitions"].append({"from": "draft", "to": "__end__", "on": "withdrawn"})
    new = load_graph(graph_text(changed))
    clock.set(T0)
    engine = Why(store, clock, EngineConfig(old))
    engine.start("OLD", CTX)
    engine.config.versions.make_current(new)
    engine.start("NEW", CTX)

    def no_supervisor(task: int, version: str) -> str:
        return (
            f"task {task} is queued for 'draft', and no live supervisor of version {version} "
            "serves 'draft'; start one with 'draft' in its folder"
        )

    # A beat without a checksum serves the current version only, as its claims do.
    engine.beat("published", ["draft"])
    assert engine.codes("NEW") == ["queued_behind"]
    assert engine.sentences("OLD") == [no_supervisor(1, old.checksum[7:15])]
    # A supervisor of the old version, and the current one's named by its checksum.
    engine.beat("published", ["draft"], ago=31)
    engine.beat("old-box", ["draft"], checksum=old.checksum)
    assert engine.codes("OLD") == ["queued_behind"]
    assert engine.sentences("NEW") == [no_supervisor(2, new.checksum[7:15])]
    engine.beat("new-box", ["draft"], checksum=new.checksum)
    assert (engine.codes("OLD"), engine.codes("NEW")) == (["queued_behind"], ["queued_behind"])
    # A checksum never served serves no token.
    engine.beat("old-box", ["draft"], ago=31, checksum=old.checksum)
    engine.beat("stray", ["draft"], checksum="sha256:" + "0" * 64)
    assert engine.sentences("OLD") == [no_supervisor(1, old.checksum[7:15])]


def test_queued_behind(orders: Why) -> None:
    orders.beat("box", ["draft"])
    for token in ("A", "B", "C"):
        orders.start(token, CTX)
    orders.pause("B")  # a paused token's task is not ahead: no claim takes it
    assert orders.codes("C") == ["queued_behind"]
    assert orders.sentences("C") == ["task 3 is queued for 'draft' behind 1 older task of 'draft'"]


def test_queued_behind_counts_up_to_a_thousand(orders: Why) -> None:
    orders.beat("box", ["draft"])
    with orders.store.begin() as conn:
        start_many(conn, orders.clock, orders.config, [
            StartArgs(f"T-{n}", CTX) for n in range(AHEAD_MOST + 2)
        ])  # fmt: skip
    last = f"T-{AHEAD_MOST + 1}"
    assert orders.sentences(last) == [
        f"task {AHEAD_MOST + 2} is queued for 'draft' behind more than 1,000 older tasks of 'draft'"
    ]
    assert orders.sentences(f"T-{AHEAD_MOST}") == [
        f"task {AHEAD_MOST + 1} is queued for 'draft' behind 1000 older tasks of 'draft'"
    ]


def test_supervisor_gone(orders: Why) -> None:
    """A claimed task whose holder is not live gets `claimed` (who, the attempt, the lease's
    end) and then `supervisor_gone` (what the lease's end will do)."""
    orders.beat("box", ["draft"], ago=40)
    orders.start("A", CTX)
    orders.claim("box", ["draft"])
    lease = iso(T0 + timedelta(minutes=2))
    assert orders.why("A")["findings"] == [
        {
            "code": "claimed",
            "sentence": f"'box' holds task 1 (attempt 1); its lease ends at {lease}",
            "since": iso(T0),
        },
        {
            "code": "supervisor_gone",
            "sentence": f"'box' is not live; when its lease on task 1 ends at {lease}, its "
            "last attempt fails and the token fails ('draft' has no 'error')",
            "since": iso(T0),
        },
    ]


def test_supervisor_gone_with_retries_left(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, SDLC)
    engine.start("T", {"repo": "acme/api"})
    engine.claim("box", ["coding"])  # 'box' never beat: not live
    assert engine.codes("T") == ["claimed", "supervisor_gone", "timer"]
    assert engine.sentences("T")[1].endswith(
        "ends at 2026-10-16T20:02:00Z, the task is tried again (attempt 2)"
    )


def test_retrying(orders: Why) -> None:
    doc = variant(ORDERS)
    doc["states"]["draft"]["retries"] = 2
    engine = engine_for(orders.store, orders.clock, doc)
    engine.beat("box", ["draft"])
    engine.start("A", CTX)
    engine.claim("box", ["draft"])
    engine.clock.advance(3)
    engine.report(1, Outcome("failed", error="the vendor is down", supervisor="box"))
    assert engine.why("A")["findings"][1] == {
        "code": "retrying",
        "sentence": "task 1 is on attempt 2; the last attempt failed: the vendor is down",
        "since": iso(T0 + timedelta(seconds=3)),
    }
    assert engine.codes("A") == ["queued_behind", "retrying"]
    engine.claim("box", ["draft"])
    assert engine.codes("A") == ["claimed", "retrying"]


def test_waiting_outside_and_timer(orders: Why) -> None:
    orders.beat("box", ["draft", "review"])
    orders.start("A", CTX)
    orders.claim("box", ["draft"])
    orders.note(1, "which vendor should we ask?", 1)
    orders.clock.advance(2)
    orders.report(1, Outcome("waiting", supervisor="box"))
    assert orders.why("A")["findings"] == [
        {
            "code": "waiting_outside",
            "sentence": "task 1 waits for an event from outside: 'submitted'; its last note: "
            "which vendor should we ask?",
            "since": iso(T0 + timedelta(seconds=2)),
        }
    ]
    orders.start("B", CTX)
    orders.claim("box", ["draft"])
    schedule = Schedule("submitted", None, "1h")
    orders.report(2, Outcome("waiting", schedules=(schedule,), supervisor="box"))
    assert orders.codes("B") == ["waiting_outside", "timer"]
    assert orders.sentences("B")[1] == (
        f"a timer fires 'submitted' at {iso(T0 + timedelta(hours=1, seconds=2))}"
    )


def test_children(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", {"repo": "acme/api"})
    engine.claim("box", ["coding"])
    engine.done(1, "done")
    engine.claim("box", ["design-review/look"])
    engine.done(3, "seen")
    assert engine.codes("T") == ["timer", "children"]
    assert engine.sentences("T")[1] == (
        "1 of 2 children of 'reviews' ended; the join is 'all'; live: "
        "T.reviews.1.security-review in 'triage'"
    )
    child = "T.reviews.1.security-review"
    engine.beat("box", ["security-review/triage"])
    assert engine.codes(child) == ["queued_behind"]


def test_last_event_refused(orders: Why) -> None:
    orders.beat("box", ["draft", "review"])
    orders.start("A", CTX)
    orders.clock.advance(4)
    refusal(orders.fire, "A", "reviewed", {"approved": True})
    assert orders.codes("A") == ["queued_behind", "last_event_refused"]
    assert orders.why("A")["findings"][1] == {
        "code": "last_event_refused",
        "sentence": "'reviewed' was refused: no transition for 'reviewed' from 'draft'",
        "since": iso(T0 + timedelta(seconds=4)),
    }
    orders.claim("box", ["draft"])
    orders.done(1, "submitted")  # a new state: the refusal is of the visit before
    assert orders.codes("A") == ["queued_behind"]


def test_a_healthy_token_in_a_state_with_a_timeout_gets_one_finding(
    store: Store, clock: FakeClock
) -> None:
    engine = engine_for(store, clock, SDLC)
    engine.beat("box", ["coding", "testing"])
    engine.start("T", {"repo": "acme/api"})
    assert engine.codes("T") == ["queued_behind"]
    engine.claim("box", ["coding"])
    assert engine.codes("T") == ["claimed"]
    engine.pause("T")  # no longer moving: the timeout is listed too
    assert engine.codes("T") == ["paused", "claimed", "timer"]
