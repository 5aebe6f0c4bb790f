"""Indexes of live rows (migrations 0010, 0011): `tasks_queue` holds open tasks, `tasks_lease` leased
ones, `ledger_key` keyed rows, `tokens_parent` children; each query that reads them still walks
them on both databases, with its values bound as the engine binds them (a planner proves a
partial index usable only from the query's own condition)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import IntegrityError

from stateous.control.store import inbox
from stateous.control.store import ledger as ledger_statements
from stateous.control.store import operator_queries as oq
from stateous.control.store.claims import candidates_query
from stateous.control.store.db import Store
from stateous.control.store.stats import stats
from stateous.control.store.tables import TASK_IS_OPEN, ledger, tasks, tokens
from stateous.control.store.tokens import children_of

BASE = datetime(2026, 1, 1)
ENDED = 20_000
CONDITIONS = {
    "tasks_queue": "status IN ('queued', 'claimed', 'waiting')",
    "tasks_lease": "lease_until IS NOT NULL",
    "ledger_key": "key IS NOT NULL",
    "tokens_parent": "parent IS NOT NULL",
    "tokens_structure": "status IN ('active', 'paused') AND parent IS NULL",
}
#: The structure of every row of `fill`.
STRUCTURE = "sha256:" + "5" * 64


def fill(store: Store) -> None:
    """ENDED completed tokens with a done task and an unkeyed ledger row each; a few live
    tokens with a queued, a claimed and a waiting task, a keyed row and a child."""
    token_rows: list[dict[str, Any]] = []
    task_rows: list[dict[str, Any]] = []
    for i in range(ENDED + 30):
        live = i >= ENDED
        token_rows.append(
            {"token": f"T-{i:06d}", "state": "draft", "status": "active" if live else "completed",
             "visit": 1, "context": {}, "entered_at": BASE + timedelta(seconds=i),
             "parent": "T-020000" if i == ENDED + 29 else None, "workflow": None,
             "structure": STRUCTURE}
        )  # fmt: skip
        status = ("queued", "claimed", "waiting")[i % 3] if live else "done"
        task_rows.append(
            {"token": f"T-{i:06d}", "state": "draft", "visit": 1, "status": status,
             "attempt": 1, "claimed_by": "box" if status == "claimed" else None,
             "lease_until": BASE + timedelta(days=1) if status == "claimed" else None,
             "queued_at": BASE + timedelta(seconds=i), "structure": STRUCTURE}
        )  # fmt: skip
    ledger_rows = [
        {"token": row["token"], "seq": 1, "at": BASE, "kind": "started",
         "key": "k-1" if row["status"] == "active" else None, "data": {}}
        for row in token_rows
    ]  # fmt: skip
    with store.begin() as conn:
        conn.execute(insert(tokens), token_rows)
        conn.execute(insert(tasks), task_rows)
        conn.execute(insert(ledger), ledger_rows)
    with store.begin() as conn:
        conn.execute(text("ANALYZE"))


def plan(store: Store, query: Any) -> str:
    """The plan of `query` with its values bound (Postgres: the generic plan, made before the
    values are known, as for a prepared statement)."""
    with store.begin() as conn:
        compiled = query.compile(conn, compile_kwargs={"render_postcompile": True})
        params = compiled.construct_params()
        if store.sqlite:
            values = tuple(_bound(compiled, name, params[name]) for name in compiled.positiontup)
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", values)
            return "\n".join(row[3] for row in rows)
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
        return "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {compiled}", params))


def _bound(compiled: Any, name: str, value: Any) -> Any:
    processor = compiled._bind_processors.get(name)  # the dialect's, as an execution applies
    return processor(value) if processor is not None else value


def uses(store: Store, query: Any, index: str) -> None:
    found = plan(store, query)
    if store.sqlite:
        assert f"USING INDEX {index}" in found or f"USING COVERING INDEX {index}" in found, found
    else:
        assert f"using {index} on" in found, found
        assert "Seq Scan on tasks" not in found and "Seq Scan on ledger" not in found, found


def test_the_indexes_hold_their_conditions(store: Store) -> None:
    with store.begin() as conn:
        if store.sqlite:
            rows = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
        else:
            rows = conn.execute(text("SELECT indexname, indexdef FROM pg_indexes"))
        found = {name: sql for name, sql in rows if name in CONDITIONS}
    assert set(found) == set(CONDITIONS)
    for name, condition in CONDITIONS.items():
        assert _bare(found[name].split(" WHERE ", 1)[1]) == _bare(condition), found[name]


def _bare(sql: str) -> str:
    """A condition without quotes, casts and brackets; Postgres writes an IN list as
    `= ANY (ARRAY[...])`."""
    for noise in ('"', "::character varying", "::text", "(", ")"):
        sql = sql.replace(noise, "")
    return sql.replace("= ANY ARRAY[", "IN ").replace("]", "")


def test_the_claim_and_the_consoles_reads_walk_the_open_tasks(store: Store) -> None:
    fill(store)
    served = ((None, "draft"),)
    uses(store, candidates_query(served, 16).params(structure=STRUCTURE), "tasks_queue")
    oldest = select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    uses(store, oldest, "tasks_queue")
    with store.begin() as conn:
        counts = stats(conn, ["draft"], ["active", "completed"])
        waiting = inbox.waiting_tasks(conn, None, 50)
        listed = oq.list_tasks(
            conn, status="queued", token=None, state=None, supervisor=None, limit=100
        )
    assert counts.states["draft"] == {
        "active": 30, "paused": 0, "queued": 10, "claimed": 10, "waiting": 10
    }  # fmt: skip
    assert counts.oldest_queued_at == BASE + timedelta(seconds=ENDED + 1)
    assert [item.token for item in waiting] == [f"T-{ENDED + i:06d}" for i in range(0, 30, 3)]
    assert [task.token for task in listed] == [f"T-{ENDED + i:06d}" for i in range(28, 0, -3)]


def test_the_sweep_walks_the_leased_tasks(store: Store) -> None:
    fill(store)
    expired = select(tasks.c.id).where(
        tasks.c.status == "claimed",
        tasks.c.lease_until.is_not(None),
        tasks.c.lease_until < BASE + timedelta(days=2),
    )
    uses(store, expired, "tasks_lease")
    with store.begin() as conn:
        assert len(conn.execute(expired).all()) == 10


def test_keys_and_children_are_found_through_their_indexes(store: Store) -> None:
    fill(store)
    uses(store, ledger_statements._KEY_USED.params(t="T-020000", key="k-1"), "ledger_key")
    uses(store, select(tokens).where(tokens.c.parent == "T-020000"), "tokens_parent")
    with store.begin() as conn:
        assert [t.token for t in children_of(conn, "T-020000")] == ["T-020029"]
        assert (
            conn.execute(ledger_statements._KEY_USED, {"t": "T-020000", "key": "k-1"}).scalar() == 1
        )


def test_keys_still_collide_and_null_keys_still_do_not(store: Store) -> None:
    row = {"token": "T-1", "at": BASE, "kind": "started", "data": {}}
    with store.begin() as conn:
        conn.execute(
            insert(ledger), [{**row, "seq": 1, "key": None}, {**row, "seq": 2, "key": None}]
        )
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(insert(ledger), [{**row, "seq": 3, "key": "k"}, {**row, "seq": 4, "key": "k"}])
    with store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(ledger)).scalar() == 2
