"""A bulk `migrate` on SQLite and Postgres: the dry run checks every matched token
against the live data (refusals by code, the first ids of each) and writes nothing; the job
applies each token with the route's engine function and skips refused ones by code; the
filter's `structure` and states of older versions."""

from __future__ import annotations

from typing import Any

import pytest

from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.control.engine import bulk
from stateous.control.engine.report import Outcome
from stateous.control.plane import Plane
from stateous.control.store.db import Store
from stateous.model.graph import Graph, load_graph
from tests.support.graphs import graph_text
from tests.unit.control.harness import refusal
from tests.unit.control.test_migrate import (
    NEVER,
    V1,
    V1_TUNED,
    V2,
    Versioned,
    _v2,
    in_review,
    versioned,
)  # fmt: skip

BY = {"actor": "alice", "reason": "review is gone", "via": "console"}
MAP = {"review": "checking"}


@pytest.fixture
def orders(store: Store, clock: FakeClock) -> Versioned:
    """Six tokens, oldest first: F (failed in review), A2 (review), A1 (draft), C (cancelled),
    P (paused in draft) on V1, then N on V2, which is current."""
    engine = versioned(store, clock, V1, V2, V1_TUNED)
    in_review(engine, "F")
    grant = engine.claim("box", ["review"])
    assert grant is not None
    engine.report(grant["task"], Outcome("failed", error="boom", supervisor="box"))
    clock.advance(1)
    in_review(engine, "A2")
    clock.advance(1)
    engine.start("A1", {"title": "t"})
    clock.advance(1)
    engine.start("C", {"title": "t"})
    engine.cancel("C")
    clock.advance(1)
    engine.start("P", {"title": "t"})
    engine.pause("P")
    engine.make_current(V2)
    clock.advance(1)
    engine.start("N", {"title": "t"})
    return engine


def create(engine: Versioned, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """`POST /bulk` as the route runs it."""
    checked = bulk.check_request(body, body.get("by"))
    with engine.store.begin() as conn:
        return bulk.create(conn, engine.clock, engine.config, checked)


def job(engine: Versioned, number: int) -> dict[str, Any]:
    with engine.store.begin() as conn:
        return bulk.job_wire(conn, number)


def test_the_dry_run_counts_the_refusals_by_code_and_writes_nothing(orders: Versioned) -> None:
    rows = orders.count_rows()
    body = {"action": "migrate", "filter": {}, "states": MAP, "dry_run": True}
    assert create(orders, body) == (200, {
        "matched": 6, "tokens": ["F", "A2", "A1", "C", "P", "N"],
        "refused": {"same_version": 1, "token_not_active": 1},
        "examples": {"same_version": ["N"], "token_not_active": ["C"]}, "reasons": {},
    })  # fmt: skip
    # Without the map, the tokens in review have no state on V2.
    body = {"action": "migrate", "filter": {"status": ["active", "failed"]}, "dry_run": True}
    assert create(orders, body) == (200, {
        "matched": 4, "tokens": ["F", "A2", "A1", "N"],
        "refused": {"same_version": 1, "unknown_state": 2},
        "examples": {"same_version": ["N"], "unknown_state": ["A2", "F"]}, "reasons": {},
    })  # fmt: skip
    body = {"action": "migrate", "filter": {"structure": [V1.structure]}, "states": MAP,
            "context": {"priority": "high"}, "dry_run": True}  # fmt: skip
    assert create(orders, body) == (200, {
        "matched": 5, "tokens": ["F", "A2", "A1", "C", "P"],
        "refused": {"invalid_context": 4, "token_not_active": 1},
        "examples": {"invalid_context": ["A1", "A2", "F", "P"], "token_not_active": ["C"]},
        "reasons": {"invalid_context": "priority: 'high' is not of type 'integer'"},
    })  # fmt: skip
    assert orders.count_rows() == rows
    assert orders.query("SELECT count(*) FROM bulk_jobs") == [(0,)]


def test_the_examples_are_the_first_five_ids_of_each_code(store: Store, clock: FakeClock) -> None:
    engine = versioned(store, clock, V1, V2)
    for number in range(7, 0, -1):  # R7 is the oldest
        in_review(engine, f"R{number}")
        clock.advance(1)
    engine.make_current(V2)
    body = {"action": "migrate", "dry_run": True}
    assert create(engine, body) == (200, {
        "matched": 7, "tokens": [f"R{n}" for n in range(7, 0, -1)],
        "refused": {"unknown_state": 7},
        "examples": {"unknown_state": ["R1", "R2", "R3", "R4", "R5"]}, "reasons": {},
    })  # fmt: skip


def _requiring_priority() -> Graph:
    """V2 whose context model requires `priority`."""
    doc = _v2()
    doc["schemas"]["Item"]["required"] = ["title", "priority"]
    return load_graph(graph_text(doc))


def test_the_dry_run_names_the_field_a_context_lacks(store: Store, clock: FakeClock) -> None:
    """`invalid_context` says what the context lacks (`'priority' is required`), once for the
    code: the first refused token's; the route's sentence says the same."""
    strict = _requiring_priority()
    engine = versioned(store, clock, V1, strict)
    for token in ("ORDER-4", "ORDER-5", "ORDER-6"):
        engine.start(token, {"title": "t"})
        clock.advance(1)
    engine.make_current(strict)
    body = {"action": "migrate", "dry_run": True}
    assert create(engine, body) == (200, {
        "matched": 3, "tokens": ["ORDER-4", "ORDER-5", "ORDER-6"],
        "refused": {"invalid_context": 3},
        "examples": {"invalid_context": ["ORDER-4", "ORDER-5", "ORDER-6"]},
        "reasons": {"invalid_context": "'priority' is required"},
    })  # fmt: skip
    assert refusal(engine.migrate, "ORDER-4") == (
        422, "invalid_context", "the context of token 'ORDER-4' does not fit the context model "
        f"of sha256:{strict.checksum[7:15]}…: 'priority' is required",
    )  # fmt: skip
    body = {"action": "migrate", "context": {"priority": 1}, "dry_run": True}
    assert create(engine, body)[1]["refused"] == {}


def test_a_filter_may_name_a_state_of_an_older_version_and_a_structure(
    orders: Versioned,
) -> None:
    body = {"action": "pause", "filter": {"state": ["review"]}, "dry_run": True}
    assert create(orders, body) == (200, {"matched": 2, "tokens": ["F", "A2"]})
    body = {"action": "pause", "filter": {"structure": [V2.structure]}, "dry_run": True}
    assert create(orders, body) == (200, {"matched": 1, "tokens": ["N"]})


def test_the_job_migrates_each_token_and_skips_the_refused_by_code(orders: Versioned) -> None:
    body = {"action": "migrate", "filter": {}, "states": MAP, "by": BY}
    assert create(orders, body) == (202, {"job": 1, "matched": 6})
    orders.make_current(V1)  # `to` was resolved when the job was made: V2 still
    plane = Plane(orders.store, orders.config, orders.clock)
    assert BulkRunner(plane).drain() == 6
    wire = job(orders, 1)
    assert {k: wire[k] for k in ("action", "done", "skipped", "status", "to", "states")} == {
        "action": "migrate", "done": 4, "skipped": {"same_version": 1, "token_not_active": 1},
        "status": "finished", "to": V2.checksum, "states": MAP,
    }  # fmt: skip
    assert wire["context"] == {}
    found = {
        t: (orders.token(t)["state"], orders.token(t)["status"], orders.token(t)["structure"])
        for t in ("A1", "A2", "C", "F", "P", "N")
    }
    assert found == {
        "A1": ("draft", "active", V2.structure),
        "A2": ("checking", "active", V2.structure),
        "C": ("draft", "cancelled", V1.structure),
        "F": ("checking", "failed", V2.structure),
        "P": ("draft", "paused", V2.structure),
        "N": ("draft", "active", V2.structure),
    }
    migrated = [data for kind, data in orders.rows("A2") if kind == "migrated"]
    assert migrated == [
        {"from": V1.checksum, "to": V2.checksum, "state": "review", "into": "checking",
         "by": {**BY, "bulk": 1}},
    ]  # fmt: skip
    assert orders.query("SELECT token, kind, bulk FROM audit ORDER BY token") == [
        (t, "migrated", 1) for t in ("A1", "A2", "F", "P")
    ]


def test_bad_migrate_bodies_are_refused(orders: Versioned) -> None:
    cases: list[tuple[dict[str, Any], tuple[int, str, str]]] = [
        ({"action": "migrate", "event": "x"}, (422, "invalid_body",
            "'migrate' takes no 'event' or 'payload'; only fire does")),
        ({"action": "pause", "to": V2.checksum}, (422, "invalid_body",
            "'pause' takes no 'to', 'states' or 'context'; only migrate does")),
        ({"action": "migrate", "states": ["review"]}, (422, "invalid_body",
            "'states' is an object of old state: new state names")),
        ({"action": "migrate", "to": NEVER}, (422, "version_not_found",
            f"no version {NEVER!r} was ever served")),
        ({"action": "migrate", "filter": {"structure": "sha256:1"}}, (422, "invalid_body",
            "the filter's 'structure' is a list of 'sha256:' and 64 hex digits each")),
        ({"action": "migrate", "filter": {"structure": [NEVER]}}, (422, "invalid_body",
            f"the filter's 'structure' names {NEVER!r}, which is no version's on record")),
        ({"action": "migrate", "filter": {"state": ["gone"]}}, (422, "invalid_body",
            "the filter's 'state' names 'gone', which is not a state of the workflow")),
    ]  # fmt: skip
    for body, expected in cases:
        assert refusal(create, orders, body) == expected, body
    assert orders.query("SELECT count(*) FROM bulk_jobs") == [(0,)]
