"""Search keys: the rows of `token_keys` are written in the transaction of every
context change of a top token, for the keys of the token's own version."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from stateous.control.clock import FakeClock
from stateous.control.engine.migrate import migrate
from stateous.control.engine.move import move
from stateous.control.engine.report import Outcome
from stateous.control.engine.retry import retry
from stateous.control.engine.search import settle_keys
from stateous.control.engine.start_many import StartArgs, start_many
from stateous.control.engine.tx import EngineConfig
from stateous.control.engine.versions import Versions
from stateous.control.store import token_keys
from stateous.control.store.db import Store
from stateous.control.store.token_keys import key_text
from stateous.control.store.versions import record_version, version_rows
from stateous.model.canonical import canonical_json
from stateous.model.graph import Graph, load_graph
from tests.support.graphs import ORDERS, graph_text, variant
from tests.unit.control.harness import Engine

T0 = datetime(2026, 10, 16, 20, 0, 0)


def searched(*keys: str, extra: str | None = None) -> dict[str, Any]:
    """orders whose Item has `customer` (string) and `amount` (integer), searching `keys`;
    `extra` adds an event `noted` out of `review` (a different structure)."""
    doc = variant(ORDERS)
    item = doc["schemas"]["Item"]["properties"]
    item["customer"] = {"type": "string", "default": "acme"}
    item["amount"] = {"type": "integer", "default": 1}
    if keys:
        doc["search"] = sorted(keys)
    if extra is not None:
        doc["states"]["review"]["emits"] = ["reviewed", extra]
        doc["events"][extra] = {}
        doc["transitions"].append({"from": "review", "to": "__end__", "on": extra})
    return doc


V1 = load_graph(graph_text(searched("amount", "customer", "verdict")))
V2 = load_graph(graph_text(searched("title", extra="noted")))


def engine_of(store: Store, clock: FakeClock, *graphs: Graph) -> Engine:
    """The engine with `graphs` on record, the first current."""
    clock.set(T0)
    with store.begin() as conn:
        for n, graph in enumerate(graphs):
            at = T0 - timedelta(seconds=n)
            record_version(conn, graph.checksum, graph.structure, canonical_json(graph.doc), at)
    versions = Versions(graphs[0], load=lambda: store.read(version_rows))
    versions.reload()
    return Engine(store, clock, EngineConfig(graphs[0], versions=versions))


@pytest.fixture
def engine(store: Store, clock: FakeClock) -> Engine:
    """orders with search keys amount, customer and verdict, and V2 (title) on record."""
    return engine_of(store, clock, V1, V2)


def keys(engine: Engine) -> list[tuple[str, str, str]]:
    """Every row of token_keys as (token, key, value), sorted."""
    rows = engine.query("SELECT token, key, value FROM token_keys ORDER BY token, key, value")
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_a_start_writes_the_keys_present_in_the_context(engine: Engine) -> None:
    engine.start("A-1", {"title": "t", "customer": "globex", "amount": 7})
    engine.start("A-2", {"title": "t"})
    assert keys(engine) == [
        ("A-1", "amount", "7"), ("A-1", "customer", '"globex"'), ("A-1", "verdict", "null"),
        ("A-2", "amount", "1"), ("A-2", "customer", '"acme"'), ("A-2", "verdict", "null"),
    ]  # fmt: skip


def test_a_batch_start_writes_the_keys_of_each_token(engine: Engine) -> None:
    with engine.store.begin() as conn:
        starts = [StartArgs(f"B-{n}", {"title": "t", "amount": n}) for n in range(3)]
        start_many(conn, engine.clock, engine.config, starts)
    assert [row for row in keys(engine) if row[1] == "amount"] == [
        ("B-0", "amount", "0"), ("B-1", "amount", "1"), ("B-2", "amount", "2"),
    ]  # fmt: skip
    assert len(keys(engine)) == 9


def test_a_reports_context_writes_and_an_event_with_into_replace_the_keys(
    engine: Engine,
) -> None:
    engine.start("R-1", {"title": "t"})
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.done(grant["task"], "submitted", context={"customer": "initech", "amount": 2})
    assert keys(engine) == [
        ("R-1", "amount", "2"), ("R-1", "customer", '"initech"'), ("R-1", "verdict", "null"),
    ]  # fmt: skip
    grant = engine.claim("box", ["review"])
    assert grant is not None
    engine.done(grant["task"], "reviewed", {"approved": False, "note": "no"})
    assert keys(engine)[2] == ("R-1", "verdict", '{"approved":false,"note":"no"}')


def test_an_outside_event_with_into_writes_the_keys(engine: Engine) -> None:
    engine.start("F-1", {"title": "t"})
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.done(grant["task"], "submitted")
    engine.fire("F-1", "reviewed", {"approved": False})
    assert keys(engine)[2] == ("F-1", "verdict", '{"approved":false}')


def test_a_move_with_context_replaces_the_keys(engine: Engine) -> None:
    engine.start("M-1", {"title": "t", "customer": "globex"})
    with engine.store.begin() as conn:
        move(conn, engine.clock, engine.config, "M-1", "review", {"customer": "hooli"})
    assert keys(engine)[1] == ("M-1", "customer", '"hooli"')


def test_a_migrate_indexes_the_keys_of_the_new_version(engine: Engine) -> None:
    engine.start("G-1", {"title": "kept", "customer": "globex"})
    with engine.store.begin() as conn:
        migrate(conn, engine.clock, engine.config, "G-1", V2.checksum)
    assert keys(engine) == [("G-1", "title", '"kept"')]


def test_a_child_and_a_graph_without_keys_write_nothing(store: Store, clock: FakeClock) -> None:
    engine = engine_of(store, clock, load_graph(graph_text(searched())))
    engine.start("N-1", {"title": "t"})
    assert keys(engine) == []


def test_a_long_value_is_not_indexed_and_a_whole_float_is_its_integer() -> None:
    assert key_text("x" * 254) == '"' + "x" * 254 + '"'
    assert key_text("x" * 255) is None
    assert (key_text(3.0), key_text(2.5), key_text(True)) == ("3", "2.5", "true")


def test_a_token_failed_before_its_key_was_added_is_indexed_when_retried(
    store: Store, clock: FakeClock
) -> None:
    plain = load_graph(graph_text(searched()))
    engine = engine_of(store, clock, plain)
    engine.start("X-1", {"title": "t", "customer": "globex"})
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.report(grant["task"], Outcome("failed", error="down", supervisor="box"))
    assert keys(engine) == []
    engine.config.versions.make_current(load_graph(graph_text(searched("customer"))))
    with store.begin() as conn:
        retry(conn, clock, engine.config, "X-1")
    assert keys(engine) == [("X-1", "customer", '"globex"')]


def test_serving_a_graph_marks_the_keys_with_nothing_to_fill_and_forgets_dropped_ones(
    store: Store, clock: FakeClock
) -> None:
    both = load_graph(graph_text(searched("amount", "customer")))
    one = load_graph(graph_text(searched("customer")))
    assert both.structure == one.structure  # search keys are not in the structure
    with store.begin() as conn:
        settle_keys(conn, both, T0)
        assert token_keys.filled(conn) == {(both.structure, "amount"), (both.structure, "customer")}
        settle_keys(conn, one, T0)
        assert token_keys.filled(conn) == {(both.structure, "customer")}
    engine = engine_of(store, clock, one)
    engine.start("S-1", {"title": "t"})
    with store.begin() as conn:
        settle_keys(conn, both, T0)  # a live token: `amount` is left to the filler
        assert token_keys.filled(conn) == {(both.structure, "customer")}
