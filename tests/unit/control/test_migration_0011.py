"""Migration 0011 on a database of before versions: each token and each open task
gets the structure on record; `serve` then records that graph, or refuses another structure
while tokens live on one whose graph it has never seen."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import select, text

from stateous.control.clock import FakeClock
from stateous.control.runtime import serve_version
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.control.store.tables import tasks, tokens, workflow_versions
from stateous.model.errors import StateousError
from stateous.model.graph import load_graph
from tests.support.graphs import ORDERS, graph_text, variant

GRAPH = load_graph(graph_text(ORDERS))
AT = "2026-10-16 20:48:44.845389"


def _old_database(db_url: str) -> Store:
    """A database at 0010 serving ORDERS: T-1 live with a queued task, T-2 completed with a
    done task."""
    store = Store(make_engine(db_url))
    with store.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "0010")
        conn.execute(
            text("UPDATE control_plane SET structure = :s, checksum = :c WHERE id = 1"),
            {"s": GRAPH.structure, "c": GRAPH.checksum},
        )
        for token, status, task in (("T-1", "active", "queued"), ("T-2", "completed", "done")):
            conn.execute(
                text(
                    "INSERT INTO tokens (token, state, status, visit, context, entered_at) "
                    "VALUES (:t, 'draft', :s, 1, '{}', :at)"
                ),
                {"t": token, "s": status, "at": AT},
            )
            conn.execute(
                text(
                    "INSERT INTO tasks (token, state, visit, status, attempt, queued_at) "
                    "VALUES (:t, 'draft', 1, :s, 0, :at)"
                ),
                {"t": token, "s": task, "at": AT},
            )
    with store.begin() as conn:
        migrate.upgrade(conn)
    return store


def test_the_tokens_and_open_tasks_get_the_structure_on_record(db_url: str) -> None:
    store = _old_database(db_url)
    try:
        with store.begin() as conn:
            found = conn.execute(select(tokens.c.token, tokens.c.structure).order_by("token"))
            assert list(found) == [("T-1", GRAPH.structure), ("T-2", GRAPH.structure)]
            found = conn.execute(select(tasks.c.token, tasks.c.structure).order_by("token"))
            assert list(found) == [("T-1", GRAPH.structure), ("T-2", None)]
            assert conn.execute(select(workflow_versions)).all() == []
        serve_version(store, GRAPH, FakeClock())  # the graph on record: its row is written
        with store.begin() as conn:
            versions = conn.execute(
                select(workflow_versions.c.checksum, workflow_versions.c.structure)
            )
            assert list(versions) == [(GRAPH.checksum, GRAPH.structure)]
    finally:
        store.engine.dispose()


def test_another_structure_is_refused_while_tokens_live_on_one_never_recorded(
    db_url: str,
) -> None:
    store = _old_database(db_url)
    other = variant(ORDERS)
    other["events"]["extra"] = {}
    try:
        with pytest.raises(StateousError) as refused:
            serve_version(store, load_graph(graph_text(other)), FakeClock())
        assert refused.value.message == (
            "refusing to serve: 1 token(s) are active or paused on a structure of the workflow "
            "'orders' whose graph is not on record; serve the graph file they started on once, "
            "so that it is recorded, then serve this one"
        )
        serve_version(store, GRAPH, FakeClock())  # once recorded, the other one starts
        serve_version(store, load_graph(graph_text(other)), FakeClock())
    finally:
        store.engine.dispose()
