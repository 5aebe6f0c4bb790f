"""Moving a live or failed token to another version, on SQLite and Postgres: each
refusal in its documented order (and that it writes nothing), the rows of the effect exactly, a
paused and a failed token, idempotency keys, and the history line."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from stateous.control.clock import FakeClock, iso
from stateous.control.engine.migrate import migrate
from stateous.control.engine.report import Outcome
from stateous.control.engine.retry import retry
from stateous.control.engine.tx import EngineConfig
from stateous.control.engine.versions import Versions
from stateous.control.store.db import Store
from stateous.control.store.records import TokenRecord
from stateous.control.store.versions import record_version, version_rows
from stateous.model.canonical import canonical_json
from stateous.model.graph import Graph, load_graph
from stateous.model.history import history_text
from tests.support.graphs import ORDERS, graph_text, variant
from tests.unit.control.harness import DEV, Engine, refusal

T0 = datetime(2026, 10, 16, 20, 0, 0)
BY = {"actor": "alice", "reason": "review is gone", "via": "cli"}


def _v2() -> dict[str, Any]:
    """orders, changed: `review` is replaced by `checking` (a timeout of 1h), and the context
    takes `priority` (an integer) and `team` (default `core`)."""
    doc = variant(ORDERS)
    doc["states"] = {
        "draft": {"emits": ["submitted"]},
        "checking": {"timeout": "1h", "emits": ["checked"]},
    }
    doc["events"] = {"submitted": {}, "checked": {}}
    doc["transitions"] = [
        {"from": "__start__", "to": "draft"},
        {"from": "draft", "to": "checking", "on": "submitted"},
        {"from": "checking", "to": "__end__", "on": "checked"},
    ]
    item = doc["schemas"]["Item"]["properties"]
    item["priority"] = {"type": "integer"}
    item["team"] = {"type": "string", "default": "core"}
    return doc


def _dev_v2() -> dict[str, Any]:
    """dev with one more event out of `merging`."""
    doc = variant(DEV)
    doc["states"]["merging"]["emits"] = ["merged", "dropped"]
    doc["events"]["dropped"] = {}
    doc["transitions"].append({"from": "merging", "to": "__end__", "on": "dropped"})
    return doc


V1, V2 = load_graph(graph_text(ORDERS)), load_graph(graph_text(_v2()))
V1_TUNED = load_graph(graph_text({**variant(ORDERS), "states": {
    "draft": {"emits": ["submitted"], "timeout": "1d"}, "review": {"emits": ["reviewed"]},
}}))  # fmt: skip
DEV1, DEV2 = load_graph(graph_text(DEV)), load_graph(graph_text(_dev_v2()))
NEVER = "sha256:" + "0" * 64


def short(graph: Graph) -> str:
    return graph.checksum[7:15]


class Versioned(Engine):
    """The engine harness over several versions on record, with migrate and retry."""

    def migrate(
        self,
        token: str,
        to: Any = None,
        states: Any = None,
        context: Any = None,
        by: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> TokenRecord:
        with self.store.begin() as conn:
            return migrate(conn, self.clock, self.config, token, to, states, context, by, key)

    def retry(self, token: str) -> TokenRecord:
        with self.store.begin() as conn:
            return retry(conn, self.clock, self.config, token)

    def make_current(self, graph: Graph) -> None:
        self.config.versions.make_current(graph)

    def tasks(self, token: str) -> list[tuple[int, str, int, str, str | None]]:
        """(id, state, visit, status, structure) of a token's tasks, by id."""
        rows = self.query(
            "SELECT id, state, visit, status, structure FROM tasks WHERE token = :t ORDER BY id",
            t=token,
        )
        return [(int(a), str(b), int(c), str(d), e) for a, b, c, d, e in rows]

    def count_rows(self) -> int:
        return int(self.query("SELECT count(*) FROM ledger")[0][0])


def versioned(store: Store, clock: FakeClock, *graphs: Graph) -> Versioned:
    """The engine with every graph of `graphs` on record, the first current (and the newest
    served, so that it is the graph its structure runs on)."""
    clock.set(T0)
    with store.begin() as conn:
        for n, graph in enumerate(graphs):
            at = T0 - timedelta(seconds=n)
            record_version(conn, graph.checksum, graph.structure, canonical_json(graph.doc), at)
    versions = Versions(graphs[0], load=lambda: store.read(version_rows))
    versions.reload()
    return Versioned(store, clock, EngineConfig(graphs[0], versions=versions))


@pytest.fixture
def orders(store: Store, clock: FakeClock) -> Versioned:
    """orders on V1 (current) and V2 on record."""
    return versioned(store, clock, V1, V2, V1_TUNED)


@pytest.fixture
def dev(store: Store, clock: FakeClock) -> Versioned:
    """dev on DEV1 (current) and DEV2 on record."""
    return versioned(store, clock, DEV1, DEV2)


def in_review(engine: Versioned, token: str) -> None:
    """Start `token` on the current version and take it to `review` (its task queued)."""
    engine.start(token, {"title": "t"})
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.done(grant["task"], "submitted")


def at(seconds: float) -> str:
    return iso(T0 + timedelta(seconds=seconds))


# --- the effect -----------------------------------------------------------------------------------


def test_an_active_token_moves_to_the_mapped_state_of_the_new_version(orders: Versioned) -> None:
    in_review(orders, "A")
    grant = orders.claim("box", ["review"])
    assert grant is not None and grant["task"] == 2
    orders.memory(2, "session", {"id": 7}, 1)
    orders.make_current(V2)
    before = len(orders.rows("A"))
    orders.clock.advance(60)
    token = orders.migrate("A", states={"review": "checking"}, by=BY)
    assert (token.state, token.status, token.visit) == ("checking", "active", 1)
    assert token.structure == V2.structure
    assert token.context == {"title": "t", "verdict": None, "team": "core"}
    assert orders.rows("A")[before:] == [
        ("task_cancelled", {"task": 2}),
        (
            "migrated",
            {"from": V1.checksum, "to": V2.checksum, "state": "review", "into": "checking",
             "by": BY},
        ),
        ("entered", {"state": "checking", "visit": 1}),
        ("task_queued", {"task": 3, "state": "checking"}),
        ("timer_set", {"event": "timeout", "due_at": at(60 + 3600)}),
    ]  # fmt: skip
    assert orders.tasks("A") == [
        (1, "draft", 1, "done", V1.structure),
        (2, "review", 1, "cancelled", V1.structure),
        (3, "checking", 1, "queued", V2.structure),
    ]
    wire = orders.token("A")
    assert (wire["state"], wire["status"], wire["structure"]) == (
        "checking", "active", V2.structure,
    )  # fmt: skip
    assert orders.query("SELECT state, key FROM memory WHERE token = 'A'") == [
        ("review", "session")
    ]
    assert orders.query("SELECT token, kind, actor, via FROM audit") == [
        ("A", "migrated", "alice", "cli")
    ]
    # The new task is the current version's: a claim without a checksum is granted it.
    grant = orders.claim("box", ["checking"])
    assert grant is not None and (grant["task"], grant["state"]) == (3, "checking")
    assert orders.done(3, "checked").status == "completed"


def test_without_a_map_the_state_keeps_its_name_and_context_writes_are_saved(
    orders: Versioned,
) -> None:
    orders.start("A", {"title": "t"})
    orders.make_current(V2)
    before = len(orders.rows("A"))
    token = orders.migrate("A", context={"priority": 2})
    assert (token.state, token.visit, token.structure) == ("draft", 2, V2.structure)
    assert token.context == {"title": "t", "verdict": None, "priority": 2, "team": "core"}
    assert orders.rows("A")[before:] == [
        ("task_cancelled", {"task": 1}),
        (
            "migrated",
            {"from": V1.checksum, "to": V2.checksum, "state": "draft", "into": "draft",
             "keys": ["priority"]},
        ),
        ("entered", {"state": "draft", "visit": 2}),
        ("task_queued", {"task": 2, "state": "draft"}),
    ]  # fmt: skip
    assert orders.query("SELECT count(*) FROM audit") == [(0,)]
    # Its history line names the keys it wrote (not `team`, the model's default).
    migrated = {"kind": "migrated", "data": orders.rows("A")[before + 1][1]}
    assert history_text(migrated) == (
        f"migrated to sha256:{short(V2)}… (draft → draft); context changed: priority"
    )


def test_to_names_the_version_and_pending_timers_are_cancelled(orders: Versioned) -> None:
    orders.make_current(V2)
    orders.start("A", {"title": "t", "priority": 1})  # on V2
    grant = orders.claim("box", ["draft"])
    assert grant is not None
    orders.done(grant["task"], "submitted")  # checking, with its timeout
    assert orders.timers("A") == [("timeout", "timeout", "pending")]
    token = orders.migrate("A", to=V1_TUNED.checksum, states={"checking": "review"})
    assert (token.state, token.structure) == ("review", V1.structure)
    assert orders.timers("A") == [("timeout", "timeout", "cancelled")]
    assert orders.rows("A")[-4:] == [
        ("task_cancelled", {"task": 2}),
        (
            "migrated",
            {"from": V2.checksum, "to": V1_TUNED.checksum, "state": "checking",
             "into": "review"},
        ),
        ("entered", {"state": "review", "visit": 1}),
        ("task_queued", {"task": 3, "state": "review"}),
    ]  # fmt: skip
    assert orders.tasks("A")[-1] == (3, "review", 1, "queued", V1.structure)


def test_a_paused_token_stays_paused_and_its_new_task_waits_for_resume(
    orders: Versioned,
) -> None:
    in_review(orders, "P")
    orders.pause("P")
    orders.make_current(V2)
    before = len(orders.rows("P"))
    token = orders.migrate("P", states={"review": "checking"})
    assert (token.state, token.status, token.structure) == ("checking", "paused", V2.structure)
    assert orders.rows("P")[before:] == [
        ("task_cancelled", {"task": 2}),
        (
            "migrated",
            {"from": V1.checksum, "to": V2.checksum, "state": "review", "into": "checking"},
        ),
        ("entered", {"state": "checking", "visit": 1}),
        ("task_queued", {"task": 3, "state": "checking"}),
        ("timer_set", {"event": "timeout", "due_at": at(3600)}),
    ]
    assert orders.claim("box", ["checking"]) is None
    orders.resume("P")
    grant = orders.claim("box", ["checking"])
    assert grant is not None and grant["task"] == 3


def test_a_failed_token_stays_failed_and_a_retry_enters_the_new_version(
    orders: Versioned,
) -> None:
    in_review(orders, "F")
    orders.claim("box", ["review"])
    failed = orders.report(2, Outcome("failed", error="boom", supervisor="box"))
    assert (failed.status, failed.state) == ("failed", "review")
    orders.make_current(V2)
    before = len(orders.rows("F"))
    token = orders.migrate("F", states={"review": "checking"})
    assert (token.state, token.status, token.visit) == ("checking", "failed", 1)
    assert token.structure == V2.structure
    assert orders.rows("F")[before:] == [
        (
            "migrated",
            {"from": V1.checksum, "to": V2.checksum, "state": "review", "into": "checking"},
        ),
    ]
    assert orders.tasks("F") == [
        (1, "draft", 1, "done", V1.structure),
        (2, "review", 1, "failed", V1.structure),
    ]
    orders.clock.advance(10)
    retried = orders.retry("F")
    assert (retried.state, retried.status, retried.visit) == ("checking", "active", 1)
    assert orders.rows("F")[before + 1 :] == [
        ("retried", {"state": "checking"}),
        ("entered", {"state": "checking", "visit": 1}),
        ("task_queued", {"task": 3, "state": "checking"}),
        ("timer_set", {"event": "timeout", "due_at": at(10 + 3600)}),
    ]
    assert orders.tasks("F")[-1] == (3, "checking", 1, "queued", V2.structure)
    grant = orders.claim("box", ["checking"])
    assert grant is not None and grant["task"] == 3


def test_a_repeated_key_answers_the_token_and_writes_nothing(orders: Versioned) -> None:
    in_review(orders, "A")
    orders.make_current(V2)
    first = orders.migrate("A", states={"review": "checking"}, key="move-1")
    rows = orders.full_rows("A")
    assert [(kind, key) for _, _, kind, key, _ in rows if key is not None] == [
        ("migrated", "move-1")
    ]
    orders.clock.advance(5)
    again = orders.migrate("A", states={"review": "checking"}, key="move-1")
    assert again == first
    assert orders.full_rows("A") == rows
    # Another key is another request: the token already runs on V2.
    assert refusal(orders.migrate, "A", key="move-2") == (
        409, "same_version", f"token 'A' already runs on {V2.checksum}",
    )  # fmt: skip


# --- refusals -------------------------------------------------------------------------------------


def test_each_refusal_of_orders_in_the_spec_order_writes_nothing(orders: Versioned) -> None:
    in_review(orders, "A")
    orders.start("C", {"title": "t"})
    orders.cancel("C")
    orders.make_current(V2)
    orders.start("N", {"title": "t"})  # on V2 already
    rows = orders.count_rows()
    v1, v2 = short(V1), short(V2)
    cases: list[tuple[dict[str, Any], tuple[int, str, str]]] = [
        ({"token": "X"}, (404, "token_not_found", "there is no token 'X'")),
        ({"token": "C"}, (409, "token_not_active",
            "token 'C' is cancelled; only an active, paused or failed token can be migrated")),
        # Two checks fail: the first answers.
        ({"token": "C", "to": NEVER}, (409, "token_not_active",
            "token 'C' is cancelled; only an active, paused or failed token can be migrated")),
        ({"token": "A", "to": NEVER}, (422, "version_not_found",
            f"no version {NEVER!r} was ever served; serve its graph file once before migrating "
            "tokens to it")),
        ({"token": "N", "to": NEVER}, (422, "version_not_found",
            f"no version {NEVER!r} was ever served; serve its graph file once before migrating "
            "tokens to it")),
        ({"token": "N"}, (409, "same_version", f"token 'N' already runs on {V2.checksum}")),
        ({"token": "A", "to": V1_TUNED.checksum, "states": {"nope": "x"}},
            (409, "same_version", f"token 'A' already runs on {V1_TUNED.checksum}")),
        ({"token": "A"}, (422, "unknown_state",
            f"token 'A' would be in 'review', which is not a state of 'orders' on "
            f"sha256:{v2}…; map it with 'states': {{'review': …}}")),
        ({"token": "A", "states": {"review": "gone"}}, (422, "unknown_state",
            f"token 'A' would be in 'gone', which is not a state of 'orders' on sha256:{v2}…")),
        ({"token": "A", "states": {"review": "__end__"}}, (422, "unknown_state",
            f"token 'A' would be in 'END', which is not a state of 'orders' on sha256:{v2}…")),
        ({"token": "A", "states": {"review": "checking", "checking": "draft"}},
            (422, "unknown_state", f"'states' maps 'checking', which is not a state of 'orders' "
             f"on sha256:{v1}… (the token's version)")),
        ({"token": "A", "states": {"review": "gone"}, "context": {"priority": "high"}},
            (422, "unknown_state",
             f"token 'A' would be in 'gone', which is not a state of 'orders' on sha256:{v2}…")),
        ({"token": "A", "states": {"review": "checking"}, "context": {"priority": "high"}},
            (422, "invalid_context", f"the context of token 'A' does not fit the context model "
             f"of sha256:{v2}…: priority: 'high' is not of type 'integer'")),
        ({"token": "A", "states": {"review": "checking"}, "context": {"title": None}},
            (422, "invalid_context", f"the context of token 'A' does not fit the context model "
             f"of sha256:{v2}…: title: None is not of type 'string'")),
        ({"token": "A", "to": 5}, (422, "invalid_body",
            "'to' is the checksum of a version on record (sha256:…)")),
        ({"token": "A", "states": {"review": 1}}, (422, "invalid_body",
            "'states' is an object of old state: new state names")),
        ({"token": "A", "context": []}, (422, "invalid_body",
            "'context' is a JSON object of the keys to write, or null")),
        ({"token": "A", "key": ""}, (422, "invalid_body",
            "an idempotency key has 1 to 256 characters, no control characters")),
    ]  # fmt: skip
    for call, expected in cases:
        assert refusal(orders.migrate, **call) == expected, call
    assert orders.count_rows() == rows
    assert orders.token("A")["structure"] == V1.structure


def test_a_completed_token_is_not_active(orders: Versioned) -> None:
    orders.make_current(V2)
    orders.start("D", {"title": "t"})
    grant = orders.claim("box", ["draft"])
    assert grant is not None
    orders.done(grant["task"], "submitted")
    orders.claim("box", ["checking"])
    assert orders.done(grant["task"] + 1, "checked").status == "completed"
    assert refusal(orders.migrate, "D", to=V1.checksum) == (
        409, "token_not_active",
        "token 'D' is completed; only an active, paused or failed token can be migrated",
    )  # fmt: skip


def test_a_child_and_a_token_in_a_parallel_state_are_refused(dev: Versioned) -> None:
    dev.start("T", {"repo": "acme/api", "branch": "main"})
    grant = dev.claim("box", ["coding"])
    assert grant is not None
    assert dev.done(grant["task"], "done").state == "reviews"
    dev.make_current(DEV2)
    rows = dev.count_rows()
    child = "T.reviews.1.security-review"
    assert refusal(dev.migrate, child, to=NEVER) == (
        409, "child_token",
        f"token {child!r} is a child of 'T': it runs on its parent's version, and cannot be "
        "migrated on its own; migrate 'T' instead",
    )  # fmt: skip
    assert refusal(dev.migrate, "T", to=NEVER) == (
        409, "token_in_parallel",
        "token 'T' is in the parallel state 'reviews'; migrate it after the join",
    )  # fmt: skip
    assert dev.count_rows() == rows


# --- the history line -----------------------------------------------------------------------------


def test_the_history_line_names_the_version_and_the_states() -> None:
    data = {"from": V1.checksum, "to": V2.checksum, "state": "review", "into": "checking"}
    entry = {"kind": "migrated", "data": data}
    assert history_text(entry) == f"migrated to sha256:{short(V2)}… (review → checking)"
    entry = {"kind": "migrated", "data": {**data, "into": "review", "by": BY}}
    assert history_text(entry) == (
        f"migrated to sha256:{short(V2)}… (review → review) [alice, cli: review is gone]"
    )
