"""The listings' pages (issue 32) in the store, on both databases: the cursor's
round trip and refusals; the token listing's keyset and its prefix and search-key probes (few
ids taken, many walked), each filter walking its index with the limit; the inbox walking
`tasks_waiting` and an actor's acts walking `audit_actor` (plans as in test_live_indexes)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select, text

from stateous.control.api import pages
from stateous.control.errors import Refusal
from stateous.control.store import audit as audit_statements
from stateous.control.store import few
from stateous.control.store import inbox as inbox_statements
from stateous.control.store.db import Store
from stateous.control.store.dialect import dialect_of
from stateous.control.store.tables import audit, tasks, token_keys, tokens
from stateous.control.store.tokens import listing_columns, listing_query
from tests.unit.control.test_live_indexes import plan

BASE = datetime(2026, 1, 1)
STRUCTURE = "sha256:" + "7" * 64


# ---------------------------------------------------------------- the cursor


def test_a_cursor_gives_back_its_sort_key() -> None:
    key = (datetime(2026, 10, 16, 20, 48, 44, 845389), "ORDER-1 é/&", 7)
    cursor = pages.encode(key)
    assert cursor.isascii() and "=" not in cursor and "/" not in cursor and "+" not in cursor
    assert pages.cursor_arg(cursor, "tsi") == list(key)
    assert pages.cursor_arg(pages.encode((BASE,)), "t") == [BASE]  # no microseconds
    assert pages.cursor_arg(None, "ts") is None


@pytest.mark.parametrize(
    ("cursor", "shape"),
    [
        ("", "i"),
        ("!!", "i"),
        (pages.encode(("x",)), "i"),  # a text for a number
        (pages.encode((True,)), "i"),
        (pages.encode((-1,)), "i"),
        (pages.encode((2**63,)), "i"),
        (pages.encode((1, 2)), "i"),  # another route's shape
        (pages.encode(("",)), "s"),
        (pages.encode(("2026-01-01T00:00:00+02:00",)), "t"),  # times are naive UTC
        (pages.encode(("yesterday",)), "t"),
        (pages.encode((1.5,)), "i"),
        ("e30", "i"),  # {}
        ("bnVsbA", "i"),  # null
        ("_w", "i"),  # not UTF-8
        ("A" * 2049, "i"),
    ],
)
def test_a_cursor_that_does_not_parse_is_refused(cursor: str, shape: str) -> None:
    with pytest.raises(Refusal) as refused:
        pages.cursor_arg(cursor, shape)
    assert (refused.value.code, refused.value.status) == ("invalid_argument", 422)
    assert str(refused.value.message) == pages.BAD_CURSOR


def test_the_end_of_a_prefix_in_code_point_order() -> None:
    assert few.next_text("ORDER-") == "ORDER."
    assert few.next_text("a\U0010ffff") == "b"
    assert few.next_text("\U0010ffff") is None
    assert few.next_text("a\ud7ff") == "a\ue000"


# ---------------------------------------------------------------- the store


def fill(store: Store) -> None:
    """60 ended tokens `E-00`.. (one a second), 12 live `L-00`.. in draft (three at one time),
    one in `rare`; `customer` acme on the even ended ones, else its own; waiting tasks."""
    rows: list[dict[str, Any]] = []
    for n in range(60):
        rows.append(_token(f"E-{n:02d}", "review", "completed", BASE + timedelta(seconds=n)))
    for n in range(12):
        rows.append(
            _token(f"L-{n:02d}", "draft", "active", BASE + timedelta(hours=1, seconds=n // 3))
        )
    rows.append(_token("R-1", "rare", "active", BASE))
    keys = [
        {"key": "customer", "value": '"acme"' if n % 2 == 0 else f'"c-{n}"', "token": f"E-{n:02d}"}
        for n in range(60)
    ]
    waiting = [
        {"token": f"L-{n:02d}", "state": "draft", "visit": 1, "status": "waiting", "attempt": 1,
         "claimed_by": None, "lease_until": None, "queued_at": BASE, "structure": STRUCTURE,
         "waiting_since": BASE + timedelta(seconds=(7 * n) % 12)}
        for n in range(12)
    ]  # fmt: skip
    with store.begin() as conn:
        conn.execute(insert(tokens), rows)
        conn.execute(insert(token_keys), keys)
        conn.execute(insert(tasks), waiting)
        conn.execute(text("ANALYZE"))


def _token(token: str, state: str, status: str, at: datetime) -> dict[str, Any]:
    return {"token": token, "state": state, "status": status, "visit": 1, "context": {},
            "entered_at": at, "parent": None, "workflow": None, "structure": STRUCTURE}  # fmt: skip


def listed(store: Store, limit: int, **filters: Any) -> list[str]:
    """Every page of the listing, its ids in order, each page after the last row of the one
    before."""
    found: list[str] = []
    after: tuple[datetime, str] | None = None
    while True:
        with store.begin() as conn:
            rows = listing_columns(conn, None, None, limit, **filters, after=after)
        found.extend(row[0] for row in rows)
        if len(rows) < limit:
            return found
        after = (rows[-1][5], rows[-1][0])


def test_pages_walk_the_listing_through_ties(store: Store) -> None:
    fill(store)
    live = [f"L-{n:02d}" for n in (9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2)]
    assert listed(store, 5, state="draft") == live
    everything = listed(store, 7)
    assert everything[:12] == live and len(everything) == 73 and len(set(everything)) == 73
    assert everything[12:15] == ["E-59", "E-58", "E-57"]


@pytest.mark.parametrize("most", [few.FEW, 3])  # few ids taken, or many walked
def test_a_prefix_and_a_search_key_by_probe_or_by_walk(
    store: Store, most: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store)
    monkeypatch.setattr(few, "FEW", most)  # the count beyond which a listing walks
    assert listed(store, 4, prefix="E-1") == [f"E-{n}" for n in range(19, 9, -1)]
    assert listed(store, 4, prefix="e-1") == []  # case counts, on both databases
    assert listed(store, 4, prefix="E-%") == []  # a LIKE wildcard is a character
    assert listed(store, 50, prefix="L-") == listed(store, 50, state="draft")
    acme = [f"E-{n:02d}" for n in range(58, -1, -2)]
    assert listed(store, 7, context={"customer": '"acme"'}) == acme
    assert listed(store, 7, context={"customer": '"c-7"'}) == ["E-07"]
    assert listed(store, 7, prefix="E-0", context={"customer": '"acme"'}) == [
        "E-08", "E-06", "E-04", "E-02", "E-00"
    ]  # fmt: skip


def uses(store: Store, query: Any, index: str, sort: bool | None = False) -> None:
    """`query` reads `index`, and sorts or not as `sort` says (None: either, a few rows)."""
    found = plan(store, query)
    if store.sqlite:
        assert f"USING INDEX {index}" in found or f"USING COVERING INDEX {index}" in found, found
        sorted_ = "USE TEMP B-TREE FOR ORDER BY" in found
    else:
        assert f"using {index} on" in found or f"Index Scan on {index}" in found, found
        assert "Seq Scan" not in found, found
        sorted_ = "Sort" in found
    assert sort is None or sorted_ is sort, found


def test_each_filter_walks_its_index_with_the_limit(store: Store) -> None:
    # Enough rows that a planner prefers an index to reading the table
    rows = [
        _token(f"E-{n:05d}", "review", "completed", BASE + timedelta(seconds=n))
        for n in range(20_000)
    ]
    # live tokens moved since, all ahead of the completed ones in the listing's order
    rows += [
        _token(f"L-{n:05d}", "draft", "active", BASE + timedelta(days=1, seconds=n))
        for n in range(5_000)
    ]
    waiting = [
        {"token": f"E-{n:05d}", "state": "review", "visit": 1, "attempt": 1, "claimed_by": None,
         "status": "waiting" if n % 100 == 0 else "done", "lease_until": None, "queued_at": BASE,
         "structure": STRUCTURE, "waiting_since": BASE if n % 100 == 0 else None}
        for n in range(20_000)
    ]  # fmt: skip
    acts = [
        {"token": f"E-{n:05d}", "seq": 1, "at": BASE + timedelta(seconds=n), "kind": "paused",
         "actor": "rare" if n % 1000 == 0 else ("alice", "bob")[n % 2], "via": None,
         "reason": None, "bulk": None}
        for n in range(20_000)
    ]  # fmt: skip
    with store.begin() as conn:
        conn.execute(insert(tokens), rows)
        conn.execute(insert(tasks), waiting)
        conn.execute(insert(audit), acts)
        conn.execute(text("ANALYZE"))
    with store.begin() as conn:
        dialect = dialect_of(conn)
    after = (BASE, "E-00")
    uses(store, listing_query(None, None, 100, after=after), "tokens_moved")
    amid = (BASE + timedelta(days=1, seconds=2500), "L-02500")
    uses(store, listing_query("active", None, 100, after=amid, dialect=dialect), "tokens_status")
    # the first page of a status or state whose tokens all lie behind the live ones
    uses(store, listing_query("completed", None, 100, dialect=dialect), "tokens_status")
    uses(store, listing_query(None, None, 100, state="review", dialect=dialect), "tokens_state")
    uses(store, listing_query(None, None, 100, state="rare", after=after), "tokens_state")
    uses(store, inbox_statements.waiting_query(None, 100, (BASE, 7)), "tasks_waiting")
    middle = (BASE + timedelta(seconds=10_000), "E-10000", 1)
    # Postgres may read the rare actor's few acts by a bitmap and sort them
    uses(store, audit_statements.acts_query(actor="rare", after=middle), "audit_actor", None)
    probe = select(tokens.c.token).where(dialect.in_code_order(tokens.c.token, "E-1999", "E-199:"))
    index = "sqlite_autoindex_tokens_1" if store.sqlite else "tokens_id_order"
    uses(store, probe.limit(few.FEW + 1), index, None)


def test_the_inbox_walks_the_waiting_tasks(store: Store) -> None:
    fill(store)
    with store.begin() as conn:
        first = inbox_statements.waiting_tasks(conn, None, 5)
        rest = inbox_statements.waiting_tasks(conn, None, 50, (first[-1].since, first[-1].task))
    order = sorted(range(12), key=lambda n: ((7 * n) % 12, n))
    assert [w.token for w in [*first, *rest]] == [f"L-{n:02d}" for n in order]


def test_an_actors_acts_page_by_page(store: Store) -> None:
    rows = [
        {"token": f"T-{n % 3}", "seq": n, "at": BASE + timedelta(seconds=n // 4), "kind": "paused",
         "actor": "alice" if n % 5 else "bob", "via": None, "reason": None, "bulk": None}
        for n in range(40)
    ]  # fmt: skip
    with store.begin() as conn:
        conn.execute(insert(audit), rows)
    expected = sorted(
        ((r["at"], r["token"], r["seq"]) for r in rows if r["actor"] == "alice"), reverse=True
    )
    found: list[tuple[datetime, str, int]] = []
    after = None
    while True:
        with store.begin() as conn:
            acts = audit_statements.acts(conn, actor="alice", limit=7, after=after)
        found.extend((a.at, a.token, a.seq) for a in acts)
        if len(acts) < 7:
            break
        after = found[-1]
    assert found == expected
