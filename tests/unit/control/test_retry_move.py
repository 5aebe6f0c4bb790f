"""Retry a failed token and move a token by hand: every refusal and every row."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock, iso
from stateous.control.engine.move import move
from stateous.control.engine.report import Outcome
from stateous.control.engine.retry import retry
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.control.store.records import TokenRecord
from stateous.model.graph import load_graph
from tests.support.graphs import ORDERS, SDLC, graph_text, variant
from tests.unit.control.harness import DEV, Engine, refusal

T0 = datetime(2026, 10, 16, 20, 0, 0)
CTX = {"repo": "acme/api", "branch": "main"}
ALL = ["coding", "testing", "merging", "security-review/triage", "design-review/look"]
BY = {"actor": "alice", "reason": "the vendor is back", "via": "cli"}


class Repair(Engine):
    """The engine harness with retry and move."""

    def retry(self, token: str, by: dict[str, Any] | None = None) -> TokenRecord:
        with self.store.begin() as conn:
            return retry(conn, self.clock, self.config, token, by)

    def move(
        self,
        token: str,
        to: Any,
        context: Any = None,
        by: dict[str, Any] | None = None,
    ) -> TokenRecord:
        with self.store.begin() as conn:
            return move(conn, self.clock, self.config, token, to, context, by)

    def query_write(self, sql: str) -> None:
        with self.store.begin() as conn:
            conn.execute(text(sql))

    def fail_task(self, task: int) -> TokenRecord:
        grant = self.claim("box", ALL)
        assert grant is not None and grant["task"] == task
        return self.report(task, Outcome("failed", error="the vendor is down", supervisor="box"))


def engine_for(store: Store, clock: FakeClock, doc: dict[str, Any]) -> Repair:
    clock.set(T0)
    return Repair(store, clock, EngineConfig(load_graph(graph_text(doc))))


@pytest.fixture
def sdlc(store: Store, clock: FakeClock) -> Repair:
    return engine_for(store, clock, SDLC)


def at(seconds: float) -> str:
    return iso(T0 + timedelta(seconds=seconds))


def since(engine: Repair, token: str, seq: int) -> list[tuple[str, dict[str, Any]]]:
    return engine.rows(token)[seq:]


# --- retry --------------------------------------------------------------------------------------


def test_retry_after_the_retries_ran_out_starts_again_at_attempt_1(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    for task_attempt in (1, 2, 3):
        grant = sdlc.claim("box", ["coding"])
        assert grant is not None and grant["attempt"] == task_attempt
        failed = sdlc.report(1, Outcome("failed", error="the vendor is down", supervisor="box"))
    reason = "'coding' failed, and has no transition on 'error': the vendor is down"
    assert (failed.status, failed.state, failed.visit) == ("failed", "coding", 1)
    before = len(sdlc.rows("T"))
    sdlc.clock.advance(60)
    token = sdlc.retry("T")
    assert (token.state, token.status, token.visit) == ("coding", "active", 2)
    assert sdlc.rows("T")[before - 1] == ("failed", {"reason": reason})
    assert since(sdlc, "T", before) == [
        ("retried", {"state": "coding"}),
        ("entered", {"state": "coding", "visit": 2}),
        ("task_queued", {"task": 2, "state": "coding"}),
        ("timer_set", {"event": "timeout", "due_at": at(60 + 6 * 3600)}),
    ]
    assert sdlc.task(1) == ("failed", 3, "box")
    assert sdlc.task(2) == ("queued", 0, None)
    assert sdlc.timers("T") == [
        ("timeout", "timeout", "cancelled"),
        ("timeout", "timeout", "pending"),
    ]
    grant = sdlc.claim("box", ["coding"])
    assert grant is not None and (grant["task"], grant["attempt"], grant["visit"]) == (2, 1, 2)


def test_count_guards_still_count_the_whole_life_after_a_retry(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    task = 1
    for _ in range(2):  # coding -> testing -> 'failed' (count 1, 2 < 3) -> coding again
        sdlc.claim("box", ["coding", "testing"])
        sdlc.done(task, "done")
        sdlc.claim("box", ["coding", "testing"])
        sdlc.done(task + 1, "failed", {"passed": 1, "failed": 1})
        task += 2
    sdlc.claim("box", ["coding", "testing"])
    assert sdlc.done(task, "done").state == "testing"
    failed = sdlc.fail_task(task + 1)
    assert (failed.status, failed.state, failed.visit) == ("failed", "testing", 3)
    assert sdlc.retry("T").visit == 4
    sdlc.claim("box", ["testing"])
    # The third 'failed' of the token's life: count('failed') < 3 no longer holds.
    done = sdlc.done(task + 2, "failed", {"passed": 0, "failed": 2})
    assert done.status == "completed"


def test_retry_writes_by_as_the_last_key(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.claim("box", ["coding"])
    sdlc.done(1, "done")
    sdlc.fail_task(2)
    before = len(sdlc.rows("T"))
    sdlc.retry("T", BY)
    assert since(sdlc, "T", before)[0] == ("retried", {"state": "testing", "by": BY})
    assert list(sdlc.rows("T")[before][1]) == ["state", "by"]


def test_retry_refusals_write_nothing(sdlc: Repair) -> None:
    assert refusal(sdlc.retry, "NOPE") == (404, "token_not_found", "there is no token 'NOPE'")
    sdlc.start("T", {"repo": "acme/api"})
    rows = sdlc.rows("T")
    assert refusal(sdlc.retry, "T") == (
        409, "token_not_failed", "token 'T' is active; only a failed token can be retried",
    )  # fmt: skip
    sdlc.pause("T")
    assert refusal(sdlc.retry, "T")[1:] == (
        "token_not_failed", "token 'T' is paused; only a failed token can be retried",
    )  # fmt: skip
    sdlc.cancel("T")
    assert refusal(sdlc.retry, "T")[1:] == (
        "token_not_failed", "token 'T' is cancelled; only a failed token can be retried",
    )  # fmt: skip
    assert len(sdlc.rows("T")) == len(rows) + 3  # paused, task_cancelled, cancelled


def test_retry_of_a_token_that_failed_at_start_is_refused(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.cancel("T")
    # No compiled graph fails a token at START; the row is made by hand to reach the check.
    sdlc.query_write("UPDATE tokens SET state = '__start__', visit = 0, status = 'failed'")
    before = sdlc.rows("T")
    assert refusal(sdlc.retry, "T") == (
        409,
        "token_not_failed",
        "token 'T' failed at START, before it entered any state: there is no state to enter "
        "again; move it to a state, or start a new token",
    )
    assert sdlc.rows("T") == before


def test_retry_of_a_child_is_refused(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", CTX)
    engine.claim("box", ["coding"])
    engine.done(1, "done")
    child = "T.reviews.1.design-review"
    assert refusal(engine.retry, child) == (
        409,
        "child_token",
        f"token {child!r} is a child of 'T': it is part of its parent's work, and cannot be "
        "retried on its own; retry 'T' instead",
    )


def failing_join() -> dict[str, Any]:
    """`dev` with join any and no `otherwise`: a failed child fails its parent."""
    doc = variant(DEV)
    doc["states"]["reviews"]["join"] = "any"
    doc["transitions"] = [t for t in doc["transitions"] if not t.get("otherwise")]
    return doc


def test_retry_of_a_failed_parent_starts_new_children(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, failing_join())
    engine.start("T", CTX)
    engine.claim("box", ["coding"])
    engine.done(1, "done")
    grant = engine.claim("box", ["design-review/look"])
    assert grant is not None
    parent = engine.report(grant["task"], Outcome("failed", error="down", supervisor="box"))
    assert parent.token == "T.reviews.1.design-review"
    token = engine.token("T")
    assert (token["status"], token["state"], token["visit"]) == ("failed", "reviews", 1)
    before = len(engine.rows("T"))
    clock.advance(5)
    retried = engine.retry("T")
    assert (retried.status, retried.state, retried.visit) == ("active", "reviews", 2)
    assert since(engine, "T", before) == [
        ("retried", {"state": "reviews"}),
        ("entered", {"state": "reviews", "visit": 2}),
        ("timer_set", {"event": "timeout", "due_at": at(5 + 2 * 86400)}),
        ("branch_started", {"workflow": "security-review", "token": "T.reviews.2.security-review"}),
        ("branch_started", {"workflow": "design-review", "token": "T.reviews.2.design-review"}),
    ]  # fmt: skip
    assert engine.children("T") == [
        "T.reviews.1.design-review", "T.reviews.1.security-review",
        "T.reviews.2.design-review", "T.reviews.2.security-review",
    ]  # fmt: skip
    assert engine.token("T.reviews.2.design-review")["status"] == "active"
    assert engine.token("T.reviews.1.security-review")["status"] == "cancelled"


# --- move ---------------------------------------------------------------------------------------


def test_move_cancels_the_visit_writes_the_context_and_enters(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.claim("box", ["coding"])
    sdlc.memory(1, "session", "abc", 1)
    before = len(sdlc.rows("T"))
    sdlc.clock.advance(10)
    token = sdlc.move("T", "testing", {"repo": "acme/web"}, BY)
    assert (token.state, token.status, token.visit) == ("testing", "active", 1)
    assert token.context == {"repo": "acme/web"}
    assert since(sdlc, "T", before) == [
        ("task_cancelled", {"task": 1}),
        ("moved", {"from": "coding", "to": "testing", "keys": ["repo"], "by": BY}),
        ("entered", {"state": "testing", "visit": 1}),
        ("task_queued", {"task": 2, "state": "testing"}),
        ("timer_set", {"event": "timeout", "due_at": at(10 + 3600)}),
    ]
    assert sdlc.task(1) == ("cancelled", 1, "box")
    assert sdlc.timers("T") == [
        ("timeout", "timeout", "cancelled"),
        ("timeout", "timeout", "pending"),
    ]
    # A live token keeps its memory: an agent coming back to 'coding' resumes its session.
    assert sdlc.query("SELECT state, key FROM memory WHERE token = 'T'") == [("coding", "session")]


def test_move_to_the_same_state_is_a_new_visit_without_keys(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    before = len(sdlc.rows("T"))
    token = sdlc.move("T", "coding")
    assert token.visit == 2
    assert since(sdlc, "T", before)[:3] == [
        ("task_cancelled", {"task": 1}),
        ("moved", {"from": "coding", "to": "coding"}),
        ("entered", {"state": "coding", "visit": 2}),
    ]


def test_move_of_a_paused_token_waits_for_the_resume(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.clock.advance(1)
    sdlc.pause("T")
    sdlc.clock.advance(100)
    token = sdlc.move("T", "testing")
    assert (token.state, token.status, token.visit) == ("testing", "paused", 1)
    assert sdlc.claim("box", ["coding", "testing"]) is None
    sdlc.clock.advance(50)
    sdlc.resume("T")
    # The timeout set during the pause gets back the part of the pause after it was set.
    ((due,),) = sdlc.query("SELECT due_at FROM timers WHERE status = 'pending'")
    assert str(due)[:19] == str(T0 + timedelta(seconds=151 + 3600))
    grant = sdlc.claim("box", ["coding", "testing"])
    assert grant is not None and (grant["task"], grant["state"], grant["attempt"]) == (
        2,
        "testing",
        1,
    )


def test_move_of_a_failed_token_makes_it_active(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.claim("box", ["coding"])
    sdlc.done(1, "done")
    sdlc.fail_task(2)
    token = sdlc.move("T", "coding")
    assert (token.state, token.status, token.visit) == ("coding", "active", 2)
    assert sdlc.rows("T")[-5:-3] == [
        ("failed", {"reason": "'testing' failed, and has no transition on 'error': the vendor is down"}),
        ("moved", {"from": "testing", "to": "coding"}),
    ]  # fmt: skip


def test_move_with_a_context_write_that_breaks_the_model_writes_nothing(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.claim("box", ["coding"])
    before = sdlc.rows("T")
    assert refusal(sdlc.move, "T", "testing", {"repo": 5}) == (
        422, "invalid_context", "the context changes break the schema: repo: 5 is not of type 'string'",
    )  # fmt: skip
    assert sdlc.rows("T") == before
    assert sdlc.task(1) == ("claimed", 1, "box")
    assert sdlc.token("T")["context"] == {"repo": "acme/api"}


def test_move_refusals(sdlc: Repair) -> None:
    assert refusal(sdlc.move, "NOPE", "coding") == (
        404,
        "token_not_found",
        "there is no token 'NOPE'",
    )
    sdlc.start("T", {"repo": "acme/api"})
    before = sdlc.rows("T")
    assert refusal(sdlc.move, "T", "nowhere") == (
        422, "unknown_state", "the workflow 'sdlc' has no state 'nowhere'",
    )  # fmt: skip
    for name in ("__start__", "__end__", "START", "END"):
        assert refusal(sdlc.move, "T", name) == (
            422, "unknown_state", f"a token cannot be moved to {name!r}: 'to' names a state of 'sdlc'",
        )  # fmt: skip
    assert refusal(sdlc.move, "T", 5) == (
        422, "invalid_body", "'to' is the name of a state of the token's workflow",
    )  # fmt: skip
    assert refusal(sdlc.move, "T", "testing", [1]) == (
        422, "invalid_context", "'context' must be a JSON object, or null",
    )  # fmt: skip
    assert sdlc.rows("T") == before
    sdlc.cancel("T")
    assert refusal(sdlc.move, "T", "coding") == (
        409, "token_not_active",
        "token 'T' is cancelled; only an active, paused or failed token can be moved",
    )  # fmt: skip


def test_move_of_a_child_is_refused(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", CTX)
    engine.claim("box", ["coding"])
    engine.done(1, "done")
    child = "T.reviews.1.security-review"
    assert refusal(engine.move, child, "approved") == (
        409,
        "child_token",
        f"token {child!r} is a child of 'T': it is part of its parent's work, and cannot be "
        "moved on its own; move 'T' instead",
    )


def test_move_out_of_a_parallel_state_cancels_the_children(store: Store, clock: FakeClock) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", CTX)
    engine.claim("box", ["coding"])
    engine.done(1, "done")
    before = len(engine.rows("T"))
    engine.move("T", "merging")
    assert since(engine, "T", before) == [
        ("moved", {"from": "reviews", "to": "merging"}),
        ("entered", {"state": "merging", "visit": 1}),
        ("task_queued", {"task": 4, "state": "merging"}),
    ]
    for child in ("T.reviews.1.security-review", "T.reviews.1.design-review"):
        assert engine.rows(child)[-2:] == [
            ("task_cancelled", {"task": 2 if "security" in child else 3}),
            ("cancelled", {"reason": "the parent was moved"}),
        ]


def test_move_of_a_paused_token_into_a_parallel_state_pauses_the_children(
    store: Store, clock: FakeClock
) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", CTX)
    engine.pause("T")
    token = engine.move("T", "reviews")
    assert (token.state, token.status) == ("reviews", "paused")
    child = "T.reviews.1.design-review"
    assert engine.token(child)["status"] == "paused"
    assert engine.rows(child)[-1] == ("paused", {})
    assert engine.claim("box", ALL) is None
    engine.resume("T")
    assert engine.token(child)["status"] == "active"
    grant = engine.claim("box", ["design-review/look"])
    assert grant is not None and grant["token"] == child


def test_move_into_a_parallel_state_whose_children_cannot_start_writes_nothing(
    store: Store, clock: FakeClock
) -> None:
    engine = engine_for(store, clock, DEV)
    engine.start("T", CTX)
    engine.start("t.reviews.1.design-review", CTX)  # takes the id of a child (case ignored)
    before = engine.rows("T")
    assert refusal(engine.move, "T", "reviews") == (
        422, "invalid_context", "the child id 'T.reviews.1.design-review' is taken by another token",
    )  # fmt: skip
    assert engine.rows("T") == before


def test_a_retry_repeated_after_a_lost_answer_applies_once(sdlc: Repair) -> None:
    sdlc.start("T", {"repo": "acme/api"})
    sdlc.claim("box", ["coding"])
    sdlc.done(1, "done")
    sdlc.fail_task(2)
    sdlc.retry("T")
    rows = sdlc.rows("T")
    # The caller did not hear the answer and sends the same retry again.
    assert refusal(sdlc.retry, "T") == (
        409, "token_not_failed", "token 'T' is active; only a failed token can be retried",
    )  # fmt: skip
    assert sdlc.rows("T") == rows
    assert [kind for kind, _ in rows].count("retried") == 1


def test_retry_after_two_guards_matched_enters_the_state_it_was_leaving(
    store: Store, clock: FakeClock
) -> None:
    doc = variant(ORDERS)  # a hand-made graph: compile would refuse these overlapping guards
    doc["transitions"][3] = {
        "from": "review", "to": "draft", "on": "reviewed", "when": "payload.note == ''",
    }  # fmt: skip
    engine = engine_for(store, clock, doc)
    engine.start("O", {"title": "first order"})
    engine.claim("box", ["draft"])
    engine.done(1, "submitted")
    engine.claim("box", ["review"])
    failed = engine.done(2, "reviewed", {"approved": True, "note": ""})
    assert (failed.status, failed.state, failed.visit) == ("failed", "review", 1)
    assert engine.rows("O")[-1] == (
        "failed",
        {
            "reason": "'reviewed' from 'review' matched more than one guard ('__end__', 'draft'); "
            "compile the workflow again, which refuses such guards"
        },
    )
    retried = engine.retry("O")
    assert (retried.status, retried.state, retried.visit) == ("active", "review", 2)
    assert engine.rows("O")[-3:] == [
        ("retried", {"state": "review"}),
        ("entered", {"state": "review", "visit": 2}),
        ("task_queued", {"task": 3, "state": "review"}),
    ]
