"""The counts of `GET /stats` and `GET /metrics` kept by migration 0013's and 0017's triggers
answer exactly what a scan of the tokens and tasks answers, after every kind of
write, on SQLite and Postgres; on Postgres before and after the deltas are folded."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta

from alembic import command
from sqlalchemy import Connection, func, select, text

from stateous.control.clock import FakeClock
from stateous.control.engine import retention
from stateous.control.engine.report import Outcome
from stateous.control.plane import Plane
from stateous.control.stats_folder import StatsFolder
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.control.store.figures import Figures, read_figures
from stateous.control.store.operator_queries import state_name
from stateous.control.store.stats import Stats, fold_deltas, oldest_queued_query, stats
from stateous.control.store.tables import TASK_IS_OPEN, TOKEN_IS_LIVE_TOP, tasks, tokens
from stateous.control.store.versions import live_by_structure
from stateous.model.wire import TASK_STATUSES, TOKEN_STATUSES
from tests.unit.control import test_live_indexes as live_indexes
from tests.unit.control.harness import Engine
from tests.unit.control.test_migrate import DEV1, DEV2, T0, V1, V2, Versioned, versioned

_COUNTED = ("active", "paused", "queued", "claimed", "waiting")
ORDERS_STATES = ["draft", "review", "checking"]
DEV_STATES = ["coding", "reviews", "merging", "security-review/triage", "design-review/look"]


def scan_stats(conn: Connection, states: Iterable[str]) -> Stats:
    """`stats()` as it was before migration 0013: grouped scans of `tokens` and `tasks`."""
    by_status = dict.fromkeys(TOKEN_STATUSES, 0)
    for status, count in conn.execute(
        select(tokens.c.status, func.count()).group_by(tokens.c.status)
    ):
        by_status[status] = int(count)
    per_state = {name: dict.fromkeys(_COUNTED, 0) for name in states}
    live = (
        select(tokens.c.workflow, tokens.c.state, tokens.c.status, func.count())
        .where(tokens.c.status.in_(("active", "paused")))
        .group_by(tokens.c.workflow, tokens.c.state, tokens.c.status)
    )
    held = (
        select(tokens.c.workflow, tasks.c.state, tasks.c.status, func.count())
        .join(tokens, tokens.c.token == tasks.c.token)
        .where(TASK_IS_OPEN)
        .group_by(tokens.c.workflow, tasks.c.state, tasks.c.status)
    )
    for query in (live, held):
        for workflow, state, status, count in conn.execute(query):
            entry = per_state.setdefault(state_name(workflow, state), dict.fromkeys(_COUNTED, 0))
            entry[status] = int(count)
    oldest = conn.execute(
        select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    ).scalar()
    serving = conn.execute(text("SELECT serving FROM control_plane WHERE id = 1")).scalar()
    return Stats(by_status, per_state, oldest, serving)


def scan_figures(conn: Connection) -> Figures:
    """`read_figures()` as it was before migration 0017: grouped scans of `tokens` and `tasks`."""
    by_status = dict.fromkeys(TOKEN_STATUSES, 0)
    for status, count in conn.execute(
        select(tokens.c.status, func.count()).group_by(tokens.c.status)
    ):
        by_status[status] = int(count)
    task_statuses = dict.fromkeys(TASK_STATUSES, 0)
    for status, count in conn.execute(
        select(tasks.c.status, func.count()).group_by(tasks.c.status)
    ):
        task_statuses[status] = int(count)
    queued = {
        state_name(workflow, state): int(count)
        for workflow, state, count in conn.execute(
            select(tokens.c.workflow, tasks.c.state, func.count())
            .join(tokens, tokens.c.token == tasks.c.token)
            .where(TASK_IS_OPEN, tasks.c.status == "queued")
            .group_by(tokens.c.workflow, tasks.c.state)
        )
    }
    oldest = conn.execute(
        select(func.min(tasks.c.queued_at)).where(TASK_IS_OPEN, tasks.c.status == "queued")
    ).scalar()
    live_tops = select(tokens.c.structure, func.count()).where(TOKEN_IS_LIVE_TOP)
    walked = conn.execute(live_tops.group_by(tokens.c.structure)).all()
    live = {structure: int(n) for structure, n in walked if structure is not None}
    return Figures(by_status, task_statuses, queued, oldest, {}, live)


def same(store: Store, states: list[str]) -> Stats:
    """Assert that the counts answer what the scans answer, for /stats and /metrics (on
    Postgres, before and after a fold of the deltas); answers /stats' figures."""
    with store.begin() as conn:
        kept, scanned = stats(conn, states, TOKEN_STATUSES), scan_stats(conn, states)
        figures, scanned_figures = read_figures(conn), scan_figures(conn)
        live = live_by_structure(conn)
    assert kept == scanned
    assert figures == scanned_figures
    assert live == figures.live
    if not store.sqlite:
        with store.begin() as conn:
            fold_deltas(conn)
        with store.begin() as conn:
            assert conn.execute(text("SELECT count(*) FROM stats_deltas")).scalar() == 0
            assert stats(conn, states, TOKEN_STATUSES) == scanned
            assert read_figures(conn) == scanned_figures
    return kept


def in_review(engine: Engine, token: str) -> int:
    """Start `token`, take it to `review` (an event from outside); answers the review task's id."""
    engine.start(token, {"title": token})
    engine.fire(token, "submitted")
    return last_task(engine, token)


def last_task(engine: Engine, token: str) -> int:
    """The id of the token's newest task."""
    return int(engine.query("SELECT max(id) FROM tasks WHERE token = :t", t=token)[0][0])


def test_orders_starts_moves_waits_failures_pause_cancel_migrate_prune_import(
    store: Store, clock: FakeClock
) -> None:
    engine: Versioned = versioned(store, clock, V1, V2)
    assert same(store, ORDERS_STATES).tokens == dict.fromkeys(TOKEN_STATUSES, 0)
    review = {token: in_review(engine, token) for token in ("T-7", "T-8", "T-9")}
    for n in range(1, 7):
        clock.advance(1)
        engine.start(f"T-{n}", {"title": "t"})
    first = same(store, ORDERS_STATES)
    assert first.states["draft"] == {
        "active": 6, "paused": 0, "queued": 6, "claimed": 0, "waiting": 0
    }  # fmt: skip
    assert first.states["review"]["queued"] == 3
    # Claimed, waiting, a failed attempt that fails the token, and its retry.
    for token in ("T-7", "T-8"):
        claimed = engine.claim("box", ["review"])
        assert claimed is not None and claimed["task"] == review[token]
    engine.report(review["T-8"], Outcome("waiting", supervisor="box"))
    same(store, ORDERS_STATES)
    engine.report(review["T-7"], Outcome("failed", error="boom", supervisor="box"))
    assert engine.token("T-7")["status"] == "failed"
    same(store, ORDERS_STATES)
    engine.retry("T-7")
    # Pause, resume, cancel; a token sent back to draft; one completed.
    engine.pause("T-2")
    engine.pause("T-9")
    same(store, ORDERS_STATES)
    engine.resume("T-2")
    engine.cancel("T-3")
    engine.done(review["T-8"], "reviewed", {"approved": False}, supervisor=None)
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.done(grant["task"], "submitted")
    same(store, ORDERS_STATES)
    # A lease that ends puts the task back in the queue.
    grant = engine.claim("box", ["draft"])
    assert grant is not None
    engine.tick(3600)
    same(store, ORDERS_STATES)
    # Moved to V2: `review` becomes `checking`, the task of another structure.
    engine.migrate("T-8", V2.checksum, {"review": "checking"})
    same(store, ORDERS_STATES)
    # Completed, then pruned, then imported back.
    in_review(engine, "T-10")
    engine.fire("T-10", "reviewed", {"approved": True})
    clock.advance(60)
    with store.begin() as conn:
        page = retention.export_page(conn, clock.now(), None, 100)
    ended = [entry["token"]["token"] for entry in page["tokens"]]
    assert {"T-10", "T-3"} <= set(ended)  # completed, cancelled (and any failed)
    with store.begin() as conn:
        answer = retention.prune(conn, [*ended, "T-9"], clock.now(), None)
    assert answer == {"pruned": len(ended), "skipped": {"token_not_ended": 1}}
    same(store, ORDERS_STATES)
    with store.begin() as conn:
        for entry in page["tokens"]:
            family = retention.family_of_entry(json.loads(json.dumps(entry)))
            assert retention.import_family(conn, family)
    last = same(store, ORDERS_STATES)
    assert last.tokens["completed"] == 1 and last.tokens["cancelled"] == 1
    assert last.states["review"]["paused"] == 1  # T-9


def test_dev_children_of_a_parallel_state_and_a_move(store: Store, clock: FakeClock) -> None:
    engine: Versioned = versioned(store, clock, DEV1, DEV2)
    for token in ("TICKET-1", "TICKET-2"):
        engine.start(token, {"repo": "acme/api"})
        grant = engine.claim("box", ["coding"])
        assert grant is not None
        clock.advance(1)
        engine.done(grant["task"], "done")
    kept = same(store, DEV_STATES)
    assert kept.states["security-review/triage"]["queued"] == 2
    assert kept.states["reviews"]["active"] == 2
    grant = engine.claim("box", ["security-review/triage"])
    assert grant is not None
    engine.done(grant["task"], "ok", {"ok": True})
    grant = engine.claim("box", ["design-review/look"])
    assert grant is not None
    same(store, DEV_STATES)
    engine.pause("TICKET-2")
    engine.cancel("TICKET-1")
    same(store, DEV_STATES)
    engine.resume("TICKET-2")
    engine.tick(3 * 86400)  # the timeout of `reviews` ends TICKET-2 and its children
    same(store, DEV_STATES)
    engine.start("TICKET-3", {"repo": "acme/api"})
    engine.migrate("TICKET-3", DEV2.checksum)
    same(store, DEV_STATES)


def test_a_write_rolled_back_counts_nothing(store: Store, clock: FakeClock) -> None:
    engine: Versioned = versioned(store, clock, V1, V2)
    engine.start("T-1", {"title": "t"})
    before = same(store, ORDERS_STATES)
    with store.begin() as conn:
        savepoint = conn.begin_nested()
        conn.execute(text("UPDATE tokens SET status = 'paused'"))
        conn.execute(text("UPDATE tasks SET status = 'claimed'"))
        savepoint.rollback()
    assert same(store, ORDERS_STATES) == before


def test_the_oldest_queued_is_the_first_of_each_state_in_claim_order(
    store: Store, clock: FakeClock
) -> None:
    engine: Versioned = versioned(store, clock, V1, V2)
    assert same(store, ORDERS_STATES).oldest_queued_at is None
    engine.start("A", {"title": "t"})
    clock.advance(5)
    in_review(engine, "B")  # B's draft task is done, its review task queued at +5 s
    clock.advance(5)
    engine.start("C", {"title": "t"})
    assert same(store, ORDERS_STATES).oldest_queued_at == T0
    grant = engine.claim("box", ["draft"])
    assert grant is not None and grant["token"] == "A"
    assert same(store, ORDERS_STATES).oldest_queued_at == T0 + timedelta(seconds=5)


def test_the_upgrade_of_a_filled_0012_database_counts_its_rows(db_url: str) -> None:
    store = Store(make_engine(db_url))
    at = "2026-10-16 20:48:44.845389"
    tops = [("A", "draft", "active"), ("B", "review", "paused"), ("C", "draft", "completed"),
            ("D", "review", "failed"), ("E", "draft", "active")]  # fmt: skip
    open_tasks = [("A", "draft", "queued", "S1"), ("B", "review", "waiting", "S1"),
                  ("E", "draft", "claimed", None), ("A.x.1.sec", "triage", "queued", "S1"),
                  ("C", "draft", "done", None), ("D", "review", "failed", "S1")]  # fmt: skip
    try:
        with store.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0012")
            insert = text(
                "INSERT INTO tokens (token, state, status, visit, context, entered_at, parent,"
                " workflow, structure) VALUES (:t, :s, :st, 1, '{}', :at, :p, :w, 'S1')"
            )
            for token, state, status in tops:
                conn.execute(insert, {"t": token, "s": state, "st": status, "at": at, "p": None,
                                      "w": None})  # fmt: skip
            conn.execute(insert, {"t": "A.x.1.sec", "s": "triage", "st": "active", "at": at,
                                  "p": "A", "w": "sec"})  # fmt: skip
            for n, (token, state, status, structure) in enumerate(open_tasks):
                conn.execute(
                    text(
                        "INSERT INTO tasks (token, state, visit, status, attempt, queued_at,"
                        " structure) VALUES (:t, :s, 1, :st, 0, :at, :structure)"
                    ),
                    {"t": token, "s": state, "st": status, "structure": structure,
                     "at": f"2026-10-16 20:48:4{n}"},
                )  # fmt: skip
        with store.begin() as conn:
            migrate.upgrade(conn)
        kept = same(store, ["draft", "review"])
        assert kept.tokens == {**dict.fromkeys(TOKEN_STATUSES, 0), "active": 3, "paused": 1,
                               "completed": 1, "failed": 1}  # fmt: skip
        assert kept.states == {
            "draft": {"active": 2, "paused": 0, "queued": 1, "claimed": 1, "waiting": 0},
            "review": {"active": 0, "paused": 1, "queued": 0, "claimed": 0, "waiting": 1},
            "sec/triage": {"active": 1, "paused": 0, "queued": 1, "claimed": 0, "waiting": 0},
        }
        assert str(kept.oldest_queued_at) == "2026-10-16 20:48:40"
        with store.begin() as conn:
            assert read_figures(conn).tasks == {"queued": 2, "claimed": 1, "waiting": 1,
                                                "done": 1, "failed": 1, "cancelled": 0}  # fmt: skip
    finally:
        store.engine.dispose()


def test_a_new_database_has_the_six_triggers(store: Store) -> None:
    with store.begin() as conn:
        if store.sqlite:
            found = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        else:
            found = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
        names = sorted(name for name in conn.execute(text(found)).scalars() if "stats_" in name)
    assert names == sorted(f"stats_{table}_{op}" for table in ("tokens", "tasks")
                           for op in ("insert", "update", "delete"))  # fmt: skip


def test_the_folder_folds_every_delta_once(store: Store, clock: FakeClock) -> None:
    engine: Versioned = versioned(store, clock, V1, V2)
    folder = StatsFolder(Plane.of(store, engine.config, clock))
    for token in ("A", "B"):
        in_review(engine, token)
    # Each start: the token (+1) and its task (+1); each move: the token (-1 +1), the task that
    # ended (-1 open, +1 ended) and the new one (+1).
    if not store.sqlite:
        with store.begin() as conn:
            assert fold_deltas(conn, most=5) == 5
    assert folder.step() == (0 if store.sqlite else 2 * (2 + 5) - 5)
    if not store.sqlite:  # vacuumed: no page of dead deltas left for /stats to read
        size = "SELECT pg_relation_size('stats_deltas')"
        assert engine.query(size) == [(0,)]
    assert folder.step() == 0
    kept = same(store, ORDERS_STATES)
    assert kept.tokens["active"] == 2 and kept.states["review"]["queued"] == 2


def test_the_oldest_queued_reads_one_entry_of_tasks_queue_per_state(store: Store) -> None:
    live_indexes.fill(store)  # 20,000 ended tokens, a few live ones with open tasks
    # (An open task of no structure exists only in a database that had no graph on record at
    # migration 0011, so no token: Postgres sorts that part, which holds nothing.)
    pairs = ((live_indexes.STRUCTURE, "draft"), (live_indexes.STRUCTURE, "review"))
    query = oldest_queued_query(pairs, postgres=not store.sqlite)
    assert query is not None
    found = live_indexes.plan(store, query)
    if store.sqlite:
        assert found.count("USING INDEX tasks_queue (status=? AND structure=?") == 2, found
        assert "TEMP B-TREE" not in found, found
    else:
        assert found.count("Index Scan using tasks_queue on tasks") == 2, found
        assert "Sort" not in found and "Seq Scan" not in found, found
    with store.begin() as conn:
        kept = stats(conn, ["draft"], TOKEN_STATUSES)
    assert kept.oldest_queued_at == live_indexes.BASE + timedelta(seconds=live_indexes.ENDED + 1)
