"""The hand-off (stateous.control.wakeups): a waiting claim is run by the lane in the shared
transaction that queues its task, on a real store of each backend; and the parking's rules in
`Wakeups` itself (what joins a group, what a commit moves on, what a notification withdraws)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, event, text

from stateous.control.api.longpoll import claim_waiting
from stateous.control.clock import FakeClock
from stateous.control.engine.claim import claim, claim_many
from stateous.control.engine.report import Outcome, report
from stateous.control.engine.start import start
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import DatabaseBusy
from stateous.control.plane import Plane
from stateous.control.store.db import Store
from stateous.control.store.group import Op
from stateous.control.wakeups import Wakeups
from tests.support.failing_commit import ORPHAN, deferred_foreign_key
from tests.support.rows import ledger_rows

BOX = "build-box-1"
REQUEST = "a" * 32


class Commits:
    """Counts the commits of a store's engine."""

    def __init__(self, store: Store) -> None:
        self.count = 0
        event.listen(store.engine, "commit", self._one)

    def _one(self, _conn: Any) -> None:
        self.count += 1


@pytest.fixture
def plane(store: Store, clock: FakeClock, orders: EngineConfig) -> Iterator[Plane]:
    yield Plane.of(store, orders, clock)


def waiting_claim(plane: Plane, states: list[str], most: int | None = None) -> Awaitable[Any]:
    """A long-poll claim of 10 s as the API runs it (its attempts, and its parked work)."""

    def work(conn: Connection) -> Any:
        if most is None:
            return claim(conn, plane.clock, plane.config, BOX, states, REQUEST)
        return claim_many(conn, plane.clock, plane.config, BOX, states, REQUEST, most) or None

    async def attempt() -> Any:
        return await plane.run_async("claim", work)

    return claim_waiting(plane.wakeups, 10.0, attempt, None, states, work)


async def parked(wakeups: Wakeups, count: int = 1) -> None:
    """Wait until `count` claims wait."""
    for _ in range(500):
        if wakeups.waiting == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{wakeups.waiting} claims wait, not {count}")


def starting(plane: Plane, token: str) -> Callable[[Connection], Any]:
    return lambda conn: start(conn, plane.clock, plane.config, token, {"title": token})


def kinds(store: Store, token: str) -> list[str]:
    with store.begin() as conn:
        return [row[2] for row in ledger_rows(conn, token)]


def test_a_start_hands_its_task_to_the_waiting_claim_in_its_own_commit(
    plane: Plane, store: Store
) -> None:
    async def scenario() -> tuple[Any, int]:
        waiting = asyncio.ensure_future(waiting_claim(plane, ["draft"]))
        await parked(plane.wakeups)
        commits = Commits(store)
        await plane.run_async("start", starting(plane, "ORDER-1"))
        granted = await asyncio.wait_for(waiting, 5)
        return granted, commits.count

    granted, commits = asyncio.run(scenario())
    assert commits == 1  # the start and the claim: one shared transaction
    assert (granted["task"], granted["token"], granted["state"]) == (1, "ORDER-1", "draft")
    assert kinds(store, "ORDER-1") == [
        "started",
        "event_accepted",
        "entered",
        "task_queued",
        "task_claimed",
    ]
    with store.begin() as conn:
        saved = conn.execute(text("SELECT request, task_id FROM claims")).one()
    assert tuple(saved) == (REQUEST, 1)


def test_a_report_hands_the_next_task_to_a_waiting_claim_of_several(
    plane: Plane, store: Store, clock: FakeClock, orders: EngineConfig
) -> None:
    plane.run("start", starting(plane, "ORDER-1"))
    plane.run("claim", lambda conn: claim(conn, clock, orders, "other", ["draft"], "b" * 32))

    async def scenario() -> tuple[Any, int]:
        waiting = asyncio.ensure_future(waiting_claim(plane, ["review"], most=8))
        await parked(plane.wakeups)
        commits = Commits(store)
        outcome = Outcome("event", "submitted", attempt=1)
        await plane.run_async("report", lambda conn: report(conn, clock, orders, 1, outcome))
        granted = await asyncio.wait_for(waiting, 5)
        return granted, commits.count

    granted, commits = asyncio.run(scenario())
    assert commits == 1
    assert [(g["task"], g["state"]) for g in granted] == [(2, "review")]
    assert kinds(store, "ORDER-1")[-3:] == ["entered", "task_queued", "task_claimed"]


def test_a_claim_that_the_queued_task_does_not_serve_waits_on(plane: Plane, store: Store) -> None:
    async def scenario() -> tuple[bool, int, Any]:
        waiting = asyncio.ensure_future(waiting_claim(plane, ["review"]))
        await parked(plane.wakeups)
        commits = Commits(store)
        await plane.run_async("start", starting(plane, "ORDER-1"))  # queues a `draft` task
        await parked(plane.wakeups)  # parked again, after its claim ran in the start's group
        still = not waiting.done()
        ran = commits.count
        # The `review` task comes: the same waiting claim gets it.
        await plane.run_async(
            "claim",
            lambda conn: claim(conn, plane.clock, plane.config, "other", ["draft"], "b" * 32),
        )
        outcome = Outcome("event", "submitted", attempt=1)
        await plane.run_async(
            "report", lambda conn: report(conn, plane.clock, plane.config, 1, outcome)
        )
        return still, ran, await asyncio.wait_for(waiting, 5)

    still, commits, granted = asyncio.run(scenario())
    assert still
    assert commits == 1  # its claim ran in the start's transaction, and claimed nothing
    assert (granted["task"], granted["state"]) == (2, "review")


def test_a_group_that_queues_nothing_leaves_the_parked_claims(plane: Plane, store: Store) -> None:
    async def scenario() -> tuple[int, bool]:
        waiting = asyncio.ensure_future(waiting_claim(plane, ["draft"]))
        await parked(plane.wakeups)
        commits = Commits(store)
        # A claim queues nothing: the waiting one is not run with it, and stays parked.
        await plane.run_async(
            "claim", lambda conn: claim(conn, plane.clock, plane.config, "x", ["draft"], "c" * 32)
        )
        done = waiting.done()
        waiting.cancel()
        return commits.count, done

    commits, done = asyncio.run(scenario())
    assert (commits, done) == (1, False)


def test_a_failed_commit_leaves_the_parked_claim_to_claim_again(plane: Plane, store: Store) -> None:
    """The start's shared commit fails (a deferred foreign key): the claim run in it is not
    answered `503 database_busy` but waits on, and gets the next start's task."""
    deferred_foreign_key(store)

    def orphan_start(conn: Connection) -> None:
        start(conn, plane.clock, plane.config, "LOST", {"title": "lost"})
        conn.execute(text(ORPHAN))

    async def scenario() -> Any:
        waiting = asyncio.ensure_future(waiting_claim(plane, ["draft"]))
        await parked(plane.wakeups)
        with pytest.raises(DatabaseBusy):
            await plane.run_async("start", orphan_start)
        await parked(plane.wakeups)
        await plane.run_async("start", starting(plane, "ORDER-1"))
        return await asyncio.wait_for(waiting, 5)

    granted = asyncio.run(scenario())
    assert (granted["token"], granted["state"]) == ("ORDER-1", "draft")
    assert kinds(store, "LOST") == []


# --- Wakeups alone ------------------------------------------------------------------------------


def _op(call: str) -> Op:
    return Op(call, lambda conn: None)


def test_only_a_group_that_may_queue_a_task_takes_the_parked_claims() -> None:
    async def scenario() -> tuple[list[Op], list[Op], int]:
        wakeups = Wakeups()
        claim_op = _op("claim")
        sleeping = asyncio.ensure_future(wakeups.wait(wakeups.generation, 5, None, claim_op))
        await asyncio.sleep(0)
        none = wakeups.join([_op("claim"), _op("heartbeat"), _op("note")])
        taken = wakeups.join([_op("note"), _op("report")])
        again = wakeups.join([_op("start")])  # taken once only
        waiting = wakeups.waiting
        group = [_op("report"), claim_op]
        wakeups.committed(group, [(True, None), (True, None)])
        claim_op.future.set_result(None)
        waiter = await asyncio.wait_for(sleeping, 5)
        assert waiter is not None and waiter.op is claim_op
        assert waiter.seen == wakeups.generation == 1  # it has seen the report's commit
        assert again == []
        return none, taken, waiting

    none, taken, waiting = asyncio.run(scenario())
    assert none == []
    assert [op.call for op in taken] == ["claim"]
    assert waiting == 0


def test_another_commit_between_join_and_commit_makes_the_claim_look_again() -> None:
    async def scenario() -> tuple[int, int]:
        wakeups = Wakeups()
        claim_op = _op("claim")
        sleeping = asyncio.ensure_future(wakeups.wait(0, 5, None, claim_op))
        await asyncio.sleep(0)
        wakeups.join([_op("report")])
        wakeups.notify()  # another lane's commit (Postgres), or another control plane's
        wakeups.committed([_op("report"), claim_op], [(True, None), (True, None)])
        claim_op.future.set_result(None)
        waiter = await asyncio.wait_for(sleeping, 5)
        assert waiter is not None
        return waiter.seen, wakeups.generation

    seen, generation = asyncio.run(scenario())
    assert (seen, generation) == (0, 2)  # seen != generation: it claims again at once


def test_a_notification_withdraws_a_parked_claim() -> None:
    async def scenario() -> tuple[Any, list[Op]]:
        wakeups = Wakeups()
        sleeping = asyncio.ensure_future(wakeups.wait(0, 5, frozenset({"draft"}), _op("claim")))
        await asyncio.sleep(0)
        wakeups.notify("draft")
        woken = await asyncio.wait_for(sleeping, 5)
        return woken, wakeups.join([_op("report")])

    woken, joined = asyncio.run(scenario())
    assert woken is None  # woken, not taken: it claims on its own
    assert joined == []


def test_a_refused_queuing_operation_moves_nothing_on() -> None:
    wakeups = Wakeups()
    wakeups.committed([_op("report")], [(False, ValueError("refused"))])
    assert wakeups.generation == 0
    wakeups.committed([_op("report")], [(True, None)])
    assert wakeups.generation == 1
