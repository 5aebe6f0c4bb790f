"""A child workflow under each version: a child runs on its parent's
structure, so the children of a parent of the older version take the older child workflow's
events and queue tasks of the older version, beside those of a parent of the new one."""

from __future__ import annotations

from typing import Any

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.model.graph import Graph, load_graph
from stateous.model.wire import GrantWire
from tests.support.graphs import DEV, graph_text, variant
from tests.unit.control.harness import Engine, refusal

CTX = {"repo": "acme/api"}


def _newer() -> dict[str, Any]:
    """DEV whose child `design-review` may also `skip` its look: another structure."""
    doc = variant(DEV)
    child = doc["workflows"]["design-review"]
    child["states"]["look"]["emits"].append("skip")
    child["events"]["skip"] = {}
    child["transitions"].append({"from": "look", "to": "__end__", "on": "skip"})
    return doc


OLD: Graph = load_graph(graph_text(DEV))
NEW: Graph = load_graph(graph_text(_newer()))


def _claim(engine: Engine, graph: Graph, state: str) -> GrantWire:
    with engine.store.begin() as conn:
        grant = claim(conn, engine.clock, engine.config, "box", [state], None, graph.structure)
    assert grant is not None
    return grant


@pytest.fixture
def engine(store: Store, clock: FakeClock) -> Engine:
    """D-OLD in `reviews` on the older version, D-NEW in `reviews` on the new one."""
    engine = Engine(store, clock, EngineConfig(OLD))
    engine.start("D-OLD", CTX)
    engine.config.versions.make_current(NEW)
    engine.start("D-NEW", CTX)
    for graph in (OLD, NEW):
        engine.done(_claim(engine, graph, "coding")["task"], "done")
    return engine


def test_the_children_run_on_their_parents_structure(engine: Engine) -> None:
    structures = {
        child: engine.token(child)["structure"]
        for parent in ("D-OLD", "D-NEW")
        for child in engine.children(parent)
    }
    assert structures == {
        "D-OLD.reviews.1.security-review": OLD.structure,
        "D-OLD.reviews.1.design-review": OLD.structure,
        "D-NEW.reviews.1.security-review": NEW.structure,
        "D-NEW.reviews.1.design-review": NEW.structure,
    }
    rows = engine.query("SELECT token, structure FROM tasks WHERE state = 'look' ORDER BY token")
    assert rows == [
        ("D-NEW.reviews.1.design-review", NEW.structure),
        ("D-OLD.reviews.1.design-review", OLD.structure),
    ]


def test_a_childs_event_of_one_version_only(engine: Engine) -> None:
    old_child, new_child = "D-OLD.reviews.1.design-review", "D-NEW.reviews.1.design-review"
    assert refusal(engine.fire, old_child, "skip")[:2] == (409, "event_not_allowed")
    assert engine.fire(new_child, "skip").token.status == "completed"
    grant = _claim(engine, OLD, "design-review/look")
    assert grant["token"] == old_child
    assert engine.done(grant["task"], "seen").status == "completed"
