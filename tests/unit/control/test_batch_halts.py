"""The rule that keeps a task's messages in order in `POST /tasks/messages`: which
messages are held back after one failed for the moment, also when a deadlock reruns them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from stateous.control.api.batch import Halts, for_good, in_turn
from stateous.control.errors import DatabaseBusy, NotServing, Refusal, conflict

CONN: Any = None  # the works below never touch their connection


def fails(exc: Exception) -> Any:
    def work(conn: Connection) -> Any:
        raise exc

    return work


def ok(conn: Connection) -> Any:
    return (204, None)


def test_answers_for_good_are_the_4xx_refusals_only() -> None:
    assert for_good(conflict("task_not_held", "no"))
    assert for_good(Refusal("invalid_body", "no", 422))
    assert not for_good(DatabaseBusy())
    assert not for_good(NotServing())
    assert not for_good(OperationalError("UPDATE", {}, Exception("locked")))
    assert not for_good(ValueError("a fault"))


def test_a_failure_for_the_moment_holds_back_the_tasks_later_messages_only() -> None:
    halts = Halts()
    with pytest.raises(DatabaseBusy):
        in_turn(fails(DatabaseBusy()), 1, 1, halts)(CONN)
    with pytest.raises(DatabaseBusy):
        in_turn(ok, 1, 3, halts)(CONN)  # held back, not run
    assert in_turn(ok, 2, 2, halts)(CONN) == (204, None)  # another task
    assert halts.blocks(1, 4) and not halts.blocks(1, 1) and not halts.blocks(2, 5)


def test_a_refusal_for_good_holds_nothing_back() -> None:
    halts = Halts()
    with pytest.raises(Refusal):
        in_turn(fails(conflict("task_not_held", "no")), 1, 0, halts)(CONN)
    assert in_turn(ok, 1, 1, halts)(CONN) == (204, None)


def test_a_message_that_runs_after_all_releases_its_task() -> None:
    # A deadlock stops the shared transaction at message 1; the rerun one by one applies it.
    halts = Halts()
    with pytest.raises(OperationalError):
        in_turn(fails(OperationalError("UPDATE", {}, Exception("deadlock"))), 1, 1, halts)(CONN)
    assert in_turn(ok, 1, 1, halts)(CONN) == (204, None)
    assert in_turn(ok, 1, 2, halts)(CONN) == (204, None)


def test_the_first_failure_of_a_task_counts() -> None:
    halts = Halts()
    halts.fail(1, 5)
    halts.fail(1, 2)  # a failed commit of an earlier part, recorded after
    halts.clear(1, 5)  # not the first: stays
    assert halts.blocks(1, 3) and not halts.blocks(1, 2)
