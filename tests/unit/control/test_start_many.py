"""Many starts in one operation (`start_many`) write exactly what `start` writes
one by one: the same answers, token rows, tasks, timers, ledger rows and audit rows, for new,
existing, case-folded, repeated and refused starts alike; and a race refuses the whole part."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text

from stateous.control.clock import FakeClock
from stateous.control.engine.start import Started, start
from stateous.control.engine.start_many import Raced, StartArgs, start_many, starts_in_bulk
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal
from stateous.control.store.db import Store, make_engine
from stateous.model.graph import load_graph
from tests.support import postgres_database, sqlite_url
from tests.support.graphs import SDLC, graph_text, variant
from tests.support.migrated import migrated
from tests.support.rows import table_rows

BY = {"actor": "ops@example.com", "via": "api", "reason": "backfill"}

#: Starts of the sdlc workflow (context `Ticket`: a `repo`; `coding` has a 6 h timeout).
STARTS = [
    StartArgs("OLD-1", {"repo": "/r/a"}),  # exists before: answered as it is
    StartArgs("old-1", {"repo": "/r/b"}),  # equal ignoring case to an existing one
    StartArgs("NEW-1", {"repo": "/r/1"}),
    StartArgs("NEW-2", {"repo": "/r/2"}, BY),  # an operator's act: `by` on its `started`
    StartArgs("NEW-1", {"repo": "/r/other"}),  # made earlier in the batch: answered as made
    StartArgs("new-2", {"repo": "/r/2"}),  # equal ignoring case to one made in the batch
    StartArgs("bad id!", {"repo": "/r/x"}),  # not an id's form
    StartArgs(7, {"repo": "/r/x"}),  # not a string
    StartArgs("NEW-3", ["not", "an", "object"]),  # a context that is not an object
    StartArgs("NEW-4", {"title": "no repo"}),  # a context the model refuses
    StartArgs("OLD-1", {"title": "invalid, but it exists"}),  # existing first, checked after
    StartArgs("NEW-5", None),  # the model's refusal of an empty context
    StartArgs("NEW-6", {"repo": "/r/6"}),
]

TABLES = ["tokens", "tasks", "timers", "ledger", "audit"]


@pytest.fixture
def twin(backend: str, tmp_path: Path) -> Iterator[Store]:
    """A second migrated store on the same backend as `store`."""
    with ExitStack() as stack:
        url = (
            sqlite_url(tmp_path, "twin.db")
            if backend == "sqlite"
            else stack.enter_context(postgres_database())
        )
        migrated(url)
        store = Store(make_engine(url))
        yield store
        store.engine.dispose()


def outcome_of(outcome: Started | Refusal) -> tuple[Any, ...]:
    """An outcome as plain values: (created, token row) or (status, code, sentence)."""
    if isinstance(outcome, Refusal):
        return (outcome.status, outcome.code, outcome.message)
    return (outcome.created, outcome.token)


def one_by_one(conn: Connection, clock: FakeClock, config: EngineConfig) -> list[Any]:
    """`start` for each of STARTS, a refusal as a value."""
    outcomes: list[Any] = []
    for args in STARTS:
        try:
            outcomes.append(start(conn, clock, config, args.token, args.context, args.by))
        except Refusal as exc:
            outcomes.append(exc)
    return outcomes


def rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    with store.begin() as conn:
        return {table: sorted(table_rows(conn, table), key=repr) for table in TABLES}


def test_start_many_writes_what_starts_one_by_one_write(
    store: Store, twin: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    for each in (store, twin):
        with each.begin() as conn:
            start(conn, clock, sdlc, "OLD-1", {"repo": "/r/old"})
    clock.advance(5)
    with store.begin() as conn:
        expected = one_by_one(conn, clock, sdlc)
    with twin.begin() as conn:
        got = start_many(conn, clock, sdlc, STARTS)
    assert [outcome_of(o) for o in got] == [outcome_of(o) for o in expected]
    assert [o.created if isinstance(o, Started) else o.code for o in got] == [
        False, "invalid_token_id", True, True, False, "invalid_token_id", "invalid_token_id",
        "invalid_token_id", "invalid_context", "invalid_context", False, "invalid_context", True,
    ]  # fmt: skip
    assert rows(twin) == rows(store)
    with twin.begin() as conn:
        kinds = conn.execute(text("SELECT kind FROM ledger WHERE token = 'NEW-2' ORDER BY seq"))
        assert [k for (k,) in kinds] == [
            "started", "event_accepted", "entered", "task_queued", "timer_set",
        ]  # fmt: skip
        acts = conn.execute(text("SELECT token, seq, kind, actor, via, reason FROM audit"))
        assert [tuple(a) for a in acts] == [
            ("NEW-2", 1, "started", "ops@example.com", "api", "backfill")
        ]


def test_a_row_the_database_refuses_raises_raced_and_writes_nothing(
    store: Store, clock: FakeClock, sdlc: EngineConfig
) -> None:
    with store.begin() as conn:  # a ledger row without its token: its first seq is taken
        conn.execute(
            text(
                "INSERT INTO ledger (token, seq, at, kind, key, data) "
                "VALUES ('NEW-2', 1, '2026-10-16 20:48:40', 'note', NULL, '{}')"
            )
        )
    with pytest.raises(Raced), store.begin() as conn:
        start_many(conn, clock, sdlc, [StartArgs("NEW-1", {"repo": "/r/1"}), STARTS[3]])
    with store.begin() as conn:
        assert table_rows(conn, "tokens") == []
        assert table_rows(conn, "tasks") == []


def test_only_starts_into_a_task_state_are_made_in_bulk(sdlc: EngineConfig) -> None:
    assert starts_in_bulk(sdlc.body(None))
    doc = variant(SDLC)  # a token that ends as it starts
    doc["transitions"][0]["to"] = "__end__"
    assert not starts_in_bulk(EngineConfig(load_graph(graph_text(doc))).body(None))
