"""Tokens of an older version run on its graph after a new version is current:
an event of the older version only is taken by its tokens and refused on the new ones; a
timeout and retries of the older graph only still work for its tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.report import Outcome
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.graph import Graph, load_graph
from stateous.model.wire import GrantWire
from tests.support.graphs import ORDERS, graph_text, variant
from tests.unit.control.harness import Engine, refusal

T0 = datetime(2026, 10, 16, 20, 0, 0)
CTX = {"title": "first order"}


def _older() -> dict[str, Any]:
    """ORDERS with what the new version drops: an event `withdrawn` (draft → END), and a
    `draft` that times out after an hour (→ END) and retries once."""
    doc = variant(ORDERS)
    doc["states"]["draft"] = {"timeout": "1h", "retries": 1, "emits": ["submitted", "withdrawn"]}
    doc["events"]["withdrawn"] = {}
    doc["transitions"] += [
        {"from": "draft", "to": "__end__", "on": "withdrawn"},
        {"from": "draft", "to": "__end__", "on": "timeout"},
    ]
    return doc


OLD: Graph = load_graph(graph_text(_older()))
NEW: Graph = load_graph(graph_text(ORDERS))


class Versioned(Engine):
    """The harness with claims of one version."""

    def claim_of(self, graph: Graph, supervisor: str = "box") -> GrantWire | None:
        """Claim a `draft` task of tokens of `graph`'s version."""
        with self.store.begin() as conn:
            return claim(
                conn, self.clock, self.config, supervisor, ["draft"], None, graph.structure
            )


@pytest.fixture
def engine(store: Store, clock: FakeClock) -> Versioned:
    """OLD-* tokens started on the older version, NEW-* on the current one."""
    clock.set(T0)
    engine = Versioned(store, clock, EngineConfig(OLD))
    for token in ("OLD-1", "OLD-2", "OLD-3"):
        engine.start(token, CTX)
    engine.config.versions.make_current(NEW)
    for token in ("NEW-1", "NEW-2", "NEW-3"):
        engine.start(token, CTX)
    return engine


def test_the_tokens_run_on_their_own_structures(engine: Versioned) -> None:
    assert OLD.structure != NEW.structure
    assert [engine.token(t)["structure"] for t in ("OLD-1", "NEW-1")] == [
        OLD.structure,
        NEW.structure,
    ]


def test_an_event_of_the_older_version_only_is_taken_by_its_tokens_only(
    engine: Versioned,
) -> None:
    fired = engine.fire("OLD-1", "withdrawn")
    assert (fired.token.status, fired.token.state) == ("completed", "draft")
    assert refusal(engine.fire, "NEW-1", "withdrawn") == (
        409,
        "event_not_allowed",
        "the workflow 'orders' has no event 'withdrawn'",
    )
    assert engine.token("NEW-1")["status"] == "active"
    rejected = [data for kind, data in engine.rows("NEW-1") if kind == "event_rejected"]
    assert rejected == [
        {"event": "withdrawn", "reason": "the workflow 'orders' has no event 'withdrawn'"}
    ]


def test_the_older_versions_timeout_ends_its_tokens_only(engine: Versioned) -> None:
    engine.tick(3600)
    assert {t: engine.token(t)["status"] for t in ("OLD-1", "NEW-1")} == {
        "OLD-1": "completed",
        "NEW-1": "active",
    }
    assert engine.rows("OLD-1")[4:] == [
        ("timer_set", {"event": "timeout", "due_at": "2026-10-16T21:00:00Z"}),
        ("timer_fired", {"event": "timeout"}),
        ("event_accepted", {"event": "timeout", "payload": None, "state": "draft"}),
        ("task_cancelled", {"task": 1}),
        ("completed", {}),
    ]
    assert [kind for kind, _ in engine.rows("NEW-1")] == [
        "started",
        "event_accepted",
        "entered",
        "task_queued",
    ]  # no timer on the current version


def test_the_older_versions_retries_apply_to_its_tokens_only(engine: Versioned) -> None:
    old = engine.claim_of(OLD)
    new = engine.claim_of(NEW)
    assert old is not None and new is not None
    assert (old["token"], new["token"]) == ("OLD-1", "NEW-1")
    engine.report(old["task"], Outcome("failed", error="the vendor is down", supervisor="box"))
    engine.report(new["task"], Outcome("failed", error="the vendor is down", supervisor="box"))
    assert engine.token("NEW-1")["status"] == "failed"  # `draft` has no retries there
    assert engine.token("OLD-1")["status"] == "active"
    again = engine.claim_of(OLD)
    assert again is not None
    assert (again["token"], again["task"], again["attempt"]) == ("OLD-1", old["task"], 2)
