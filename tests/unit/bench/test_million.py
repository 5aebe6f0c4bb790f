"""bench/million.py's shape, written by bench/preload.py's `write_shape` into a real SQLite file
and a Postgres database (a small N): the tokens of each kind, their tasks, timers, search keys
and audit rows, ledger data as the store writes it, and `/stats`'s figures true."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import million  # noqa: E402  # bench/ is put on the path first, as its scripts do
import million_db  # noqa: E402
import preload  # noqa: E402

from stateous.control.store import tables  # noqa: E402
from stateous.control.store.db import Store, make_engine  # noqa: E402
from stateous.control.store.stats import stats  # noqa: E402
from stateous.model.graph import Graph  # noqa: E402
from tests.support import backends, postgres_database  # noqa: E402

SHAPE = million.Shape.scaled(ended=400, live=100)
STATUSES = ("active", "paused", "completed", "failed", "cancelled")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, Graph]:
    """The bench workflow and its other version, compiled once."""
    return million_db.graphs(tmp_path_factory.mktemp("graphs"))


@pytest.fixture(scope="module", params=backends())
def written(
    request: pytest.FixtureRequest,
    graphs: tuple[Graph, Graph],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Connection, str, str]]:
    """The shape in a new database (SQLite: executemany; Postgres: COPY); a connection to it,
    the current and other structure."""
    current, other = graphs
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('million') / 'stateous.db'}"
        else:
            url = stack.enter_context(postgres_database())
        preload.write_shape(url, SHAPE, current, other)
        store = Store(make_engine(url))
        with store.engine.connect() as conn:
            yield conn, current.structure, other.structure
        store.engine.dispose()


def rows(conn: Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in conn.execute(text(sql))]


def test_the_shape_is_what_spec_95_asks_for_in_proportion() -> None:
    assert (SHAPE.ended, SHAPE.live, SHAPE.waiting, SHAPE.timers, SHAPE.paused) == (
        400, 100, 20, 10, 1,
    )  # fmt: skip
    assert million.Shape() == million.Shape.scaled(1_000_000, 100_000)
    with pytest.raises(ValueError, match="timers <= waiting"):
        million.Shape(live=10, waiting=5, timers=6)


def test_tokens_by_status_and_structure(written: tuple[Connection, str, str]) -> None:
    conn, current, other = written
    found = rows(conn, "SELECT status, structure, count(*) FROM tokens GROUP BY 1, 2 ORDER BY 1, 2")
    cancelled = len(range(0, SHAPE.ended, SHAPE.cancelled_every))
    assert found == sorted(
        [
            ("active", current, SHAPE.waiting),
            ("active", other, SHAPE.live - SHAPE.waiting - SHAPE.paused),
            ("cancelled", current, cancelled),
            ("completed", current, SHAPE.ended - cancelled),
            ("paused", other, SHAPE.paused),
        ]
    )


def test_no_live_task_is_work_for_the_bench_supervisor(
    written: tuple[Connection, str, str],
) -> None:
    conn, current, other = written
    found = rows(
        conn,
        "SELECT structure, state, status, count(*) FROM tasks "
        "WHERE status IN ('queued', 'claimed', 'waiting') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    expected = [
        (current, "draft", "waiting", SHAPE.timers),
        (current, "review", "waiting", SHAPE.waiting - SHAPE.timers),
        (other, "draft", "queued", SHAPE.live - SHAPE.waiting),
    ]
    assert found == sorted(expected)


def test_timers_search_keys_and_audit_rows(written: tuple[Connection, str, str]) -> None:
    conn, _current, _other = written
    timers = rows(conn, "SELECT status, kind, event, count(*) FROM timers GROUP BY 1, 2, 3")
    assert timers == [("pending", "timer", "submitted", SHAPE.timers)]
    due = conn.execute(text("SELECT min(due_at) FROM timers")).scalar_one()
    due = datetime.fromisoformat(due) if isinstance(due, str) else due  # SQLite: its text
    assert due > datetime.now(UTC).replace(tzinfo=None) + timedelta(days=29)
    assert rows(conn, "SELECT count(*), count(DISTINCT token) FROM token_keys") == [(500, 500)]
    assert rows(conn, "SELECT value FROM token_keys WHERE token = 'order-0000007'") == [
        ('"item 2"',)  # values = 5
    ]
    audit = rows(conn, "SELECT kind, count(*) FROM audit GROUP BY 1 ORDER BY 1")
    assert audit == [("cancelled", 2), ("paused", SHAPE.paused)]
    assert SHAPE.audited == 2 + SHAPE.paused


def test_ledgers_are_numbered_and_written_as_the_store_writes_json(
    written: tuple[Connection, str, str],
) -> None:
    conn, _current, _other = written
    seqs = rows(conn, "SELECT token, count(*), min(seq), max(seq) FROM ledger GROUP BY token")
    assert len(seqs) == SHAPE.ended + SHAPE.live
    assert all(n == last and first == 1 for _token, n, first, last in seqs)
    for (data,) in rows(conn, "SELECT CAST(data AS TEXT) FROM ledger"):
        assert json.dumps(json.loads(str(data))) == data
    kinds = rows(conn, "SELECT kind FROM ledger WHERE token = 'order-0000001' ORDER BY seq")
    assert [k for (k,) in kinds][-3:] == ["event_accepted", "task_done", "completed"]
    waiting = rows(
        conn, "SELECT kind, CAST(data AS TEXT) FROM ledger WHERE token = 'live-000015' ORDER BY seq"
    )
    assert waiting[-2:] == [
        (
            "timer_set",
            json.dumps({"event": "submitted", "due_at": json.loads(str(waiting[-2][1]))["due_at"]}),
        ),
        ("task_waiting", json.dumps({"task": 2 * SHAPE.ended + 2 * 15 + 1})),
    ]


def test_stats_answers_the_counts(written: tuple[Connection, str, str]) -> None:
    conn, _current, _other = written
    figures = stats(conn, ["draft", "review"], STATUSES)
    counted = rows(conn, "SELECT status, count(*) FROM tokens GROUP BY status")
    direct = {str(status): int(str(n)) for status, n in counted}
    assert figures.tokens == {status: direct.get(status, 0) for status in STATUSES}
    assert figures.states["review"]["waiting"] == SHAPE.waiting - SHAPE.timers
    assert figures.states["draft"]["waiting"] == SHAPE.timers
    assert figures.states["draft"]["queued"] == SHAPE.live - SHAPE.waiting
    if conn.dialect.name == "postgresql":  # folded, as a holder folds them
        assert rows(conn, "SELECT count(*) FROM stats_deltas") == [(0,)]


def test_a_waiting_task_waits_since_its_task_waiting_row(
    written: tuple[Connection, str, str],
) -> None:
    conn, _current, _other = written
    if "waiting_since" not in tables.tasks.c:
        pytest.skip("no tasks.waiting_since in this schema (before migration 0014)")
    found = rows(
        conn,
        "SELECT count(*), sum(CASE WHEN t.waiting_since = l.at THEN 1 ELSE 0 END) "
        "FROM tasks t JOIN ledger l "
        "ON l.token = t.token AND l.kind = 'task_waiting' WHERE t.status = 'waiting'",
    )
    assert found == [(SHAPE.waiting, SHAPE.waiting)]
    assert rows(conn, "SELECT count(*) FROM tasks WHERE waiting_since IS NOT NULL") == [
        (SHAPE.waiting,)
    ]
