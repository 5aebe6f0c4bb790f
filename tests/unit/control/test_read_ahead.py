"""A shared transaction's reports read ahead on Postgres (stateous.control.engine.read_ahead):
the same rows as each report read alone, two statements for the group instead of two a report,
and nothing read ahead where a row could have changed before its report."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from sqlalchemy import Connection, text

from stateous.control.clock import FakeClock
from stateous.control.engine import read_ahead
from stateous.control.engine.claim import claim
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.store.db import Store
from stateous.control.store.group import Op, run_group
from stateous.control.store.records import TokenRecord
from stateous.control.store.tasks import insert_task
from stateous.control.store.tokens import insert_token
from tests.unit.control.test_report_statements import sent

BOX = "box"


@pytest.fixture(autouse=True)
def _postgres_only(store: Store) -> None:
    if store.sqlite:
        pytest.skip("SQLite reads nothing ahead")


def _claimed(store: Store, clock: FakeClock, config: EngineConfig, ids: list[str]) -> list[int]:
    """Start each token and claim its first task; answer the task ids in order."""
    tasks = []
    for token in ids:
        with store.begin() as conn:
            start(conn, clock, config, token, {"title": token})
        with store.begin() as conn:
            grant = claim(conn, clock, config, BOX, ["draft"], None)
        assert grant is not None
        tasks.append(int(grant["task"]))
    return tasks


def _report_op(clock: FakeClock, config: EngineConfig, task: int) -> Op:
    outcome = Outcome("event", "submitted", attempt=1, supervisor=BOX)
    work: Callable[[Connection], TokenRecord] = partial(report, clock=clock, config=config,
                                                       task_id=task, outcome=outcome)  # fmt: skip
    return Op("report", lambda conn: work(conn), task=task)


def _history(store: Store, token: str) -> list[tuple[Any, ...]]:
    """The token's ledger without ids of tasks (they differ between tokens)."""
    with store.begin() as conn:
        rows = conn.execute(
            text("SELECT seq, kind, data FROM ledger WHERE token = :t ORDER BY seq"), {"t": token}
        ).all()
    return [(seq, kind, sorted(data)) for seq, kind, data in rows]


def test_reports_read_ahead_write_what_reports_read_alone_write(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    ahead = _claimed(store, clock, orders, ["A-1", "A-2", "A-3"])
    alone = _claimed(store, clock, orders, ["B-1", "B-2", "B-3"])
    group = [_report_op(clock, orders, task) for task in ahead]
    with store.begin() as conn, sent(conn) as statements, read_ahead.reading_ahead(conn, group):
        answers = [op.work(conn) for op in group]
    assert [a.state for a in answers] == ["review"] * 3
    # The group's two reads, then each report's leave (with the next task) and write.
    assert "pg_advisory_xact_lock" in statements[0] and "ANY" in statements[0]
    assert "FROM tasks JOIN tokens" in " ".join(statements[1].split())
    assert len(statements) == 2 + 2 * 3
    outcomes = run_group(store, [_report_op(clock, orders, task) for task in alone])
    assert [ok for ok, _ in outcomes] == [True] * 3
    for n in (1, 2, 3):
        assert _history(store, f"A-{n}") == _history(store, f"B-{n}")


def test_a_task_reported_twice_in_a_group_is_refused_the_second_time(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    [task, other] = _claimed(store, clock, orders, ["C-1", "C-2"])
    group = [_report_op(clock, orders, t) for t in (task, other, task)]
    outcomes = run_group(store, group, read_ahead.reading_ahead)
    assert [ok for ok, _ in outcomes] == [True, True, False]
    assert getattr(outcomes[2][1], "code", None) == "task_not_held"
    assert _history(store, "C-1") == _history(store, "C-2")


def _found_ahead(store: Store, group: list[Op]) -> set[int] | None:
    with store.begin() as conn, read_ahead.reading_ahead(conn, group):
        found = read_ahead._ahead.found
        return None if found is None else set(found)


def test_only_a_report_alone_in_its_family_is_read_ahead(
    store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    [top_task, lone] = _claimed(store, clock, orders, ["F-1", "G-1"])
    at, structure = clock.now(), orders.graph.structure
    with store.begin() as conn:  # two children of F-1, and a grandchild under the first
        for child, parent in (("F-1.a", "F-1"), ("F-1.b", "F-1"), ("F-1.a.x", "F-1.a")):
            insert_token(conn, TokenRecord(child, "draft", "active", 1, {}, at, parent, None,
                                           structure))  # fmt: skip
        child_a, child_b, grandchild = (
            insert_task(conn, token, "draft", 1, at, structure)
            for token in ("F-1.a", "F-1.b", "F-1.a.x")
        )
    op = partial(Op, "report", lambda conn: None)
    # F-1, its child F-1.a and F-1.b share one family; a grandchild takes its top's lock itself.
    assert _found_ahead(store, [op(task=t) for t in (top_task, child_a, lone)]) == {lone}
    assert _found_ahead(store, [op(task=t) for t in (child_b, grandchild, lone)]) == set()
    assert _found_ahead(store, [op(task=t) for t in (child_b, lone)]) == {child_b, lone}
    assert _found_ahead(store, [op(task=t) for t in (lone, lone, top_task)]) == {top_task}
    # Beside an operation that may change a token first, or alone: nothing is read ahead.
    assert _found_ahead(store, [op(task=lone), op(task=top_task), Op("clock", print)]) is None
    assert _found_ahead(store, [op(task=lone)]) is None
    assert _found_ahead(store, [op(task=lone), Op("claim", print)]) is None
    assert _found_ahead(store, [op(task=lone), op(task=top_task), Op("claim", print)]) == {
        lone,
        top_task,
    }
