"""A watched system stays fast (issue 13): the console's `GET /tokens?limit=1000` is a walk of an
index in the listing's own order, never a scan or a sort of the table, and `GET /stats` counts
the few live tokens through an index; checked with each database's own plan at 20,000 tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import insert, text

from stateous.control.store.db import Store
from stateous.control.store.stats import stats
from stateous.control.store.tables import tokens
from stateous.control.store.tokens import listing_columns, listing_query

BASE = datetime(2026, 1, 1)
COUNT = 20_000


def fill(store: Store) -> None:
    """COUNT tokens, three to a moment (ties in entered_at), one in 100 active."""
    rows = [
        {
            "token": f"T-{i:06d}", "state": "draft",
            "status": "active" if i % 100 == 0 else "completed", "visit": 1,
            "context": {"title": "x"}, "entered_at": BASE + timedelta(milliseconds=i // 3),
            "parent": None, "workflow": None,
        }
        for i in range(COUNT)
    ]  # fmt: skip
    with store.begin() as conn:
        conn.execute(insert(tokens), rows)
    with store.begin() as conn:
        conn.execute(text("ANALYZE"))


def plan(store: Store, sql: str) -> str:
    with store.begin() as conn:
        if store.sqlite:
            return "\n".join(r[3] for r in conn.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
        return "\n".join(r[0] for r in conn.execute(text(f"EXPLAIN {sql}")))


def compiled(store: Store, query: object) -> str:
    with store.begin() as conn:
        return str(query.compile(conn, compile_kwargs={"literal_binds": True}))  # type: ignore[attr-defined]


def test_the_listing_walks_the_index_in_its_order(store: Store) -> None:
    fill(store)
    found = plan(store, compiled(store, listing_query(None, None, 1000)))
    if store.sqlite:
        assert found == "SCAN tokens USING INDEX tokens_moved"
    else:
        assert "Index Scan using tokens_moved on tokens" in found
        assert "Sort" not in found and "Seq Scan" not in found
    with store.begin() as conn:
        listed = listing_columns(conn, None, None, 1000)
    # Most recently moved first; the id ascending among tokens moved at the same moment.
    assert [t[0] for t in listed[:4]] == ["T-019998", "T-019999", "T-019995", "T-019996"]
    assert len(listed) == 1000


def test_a_status_listing_never_sorts_the_table(store: Store) -> None:
    fill(store)
    found = plan(store, compiled(store, listing_query("completed", None, 1000)))
    if store.sqlite:
        assert found == "SEARCH tokens USING INDEX tokens_status (status=?)"
    else:
        # Either index is a walk in the listing's order; the planner picks by the statistics.
        assert "Index Scan using tokens_" in found
        assert "Sort" not in found and "Seq Scan" not in found


def test_stats_counts_live_tokens_through_the_index(store: Store) -> None:
    fill(store)
    with store.begin() as conn:
        found = stats(conn, ["draft"], ["active", "paused", "completed"])
    assert found.tokens == {"active": 200, "paused": 0, "completed": 19_800}
    assert found.states["draft"]["active"] == 200
    if store.sqlite:
        with store.begin() as conn:
            live = text(
                "EXPLAIN QUERY PLAN SELECT workflow, state, status, count(*) FROM tokens WHERE "
                "likelihood(status IN ('active', 'paused'), 0.01) GROUP BY workflow, state, status"
            )
            steps = [r[3] for r in conn.execute(live)]
        assert steps[0] == "SEARCH tokens USING INDEX tokens_status (status=?)"
