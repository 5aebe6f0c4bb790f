"""The supervisor's line a minute (issue 30): its words, its count, and its loop, which logs
at INFO only after a minute in which tasks were reported (the minute is shortened here)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from stateous.supervisor.tally import EVERY, Tally, tally_loop


def counted(done: int, failed: int) -> Tally:
    """A tally of `done` tasks done and `failed` failed."""
    tally = Tally()
    for _ in range(done):
        tally.count(failed=False)
    for _ in range(failed):
        tally.count(failed=True)
    return tally


def test_the_line_counts_the_tasks_with_thousands_separated() -> None:
    tally = counted(1200, 4)
    assert tally.take() == "ran 1,204 tasks (1,200 done, 4 failed) in the last minute"
    assert tally.take() is None  # taken: the next minute counts from zero


def test_one_task_is_one_task_and_none_is_no_line() -> None:
    assert Tally().take() is None
    assert counted(0, 1).take() == "ran 1 task (0 done, 1 failed) in the last minute"


def test_the_line_comes_each_minute() -> None:
    assert EVERY == 60.0


async def test_the_loop_logs_a_line_after_each_period_with_tasks_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tally = counted(2, 1)
    with caplog.at_level(logging.INFO, logger="stateous.supervisor"):
        loop = asyncio.create_task(tally_loop(tally, 0.1))
        await asyncio.sleep(0.15)  # one period: the three tasks
        tally.count(failed=False)
        await asyncio.sleep(0.1)  # the next: one more
        await asyncio.sleep(0.1)  # and one without any
        loop.cancel()
    records = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        (logging.INFO, "ran 3 tasks (2 done, 1 failed) in the last minute"),
        (logging.INFO, "ran 1 task (1 done, 0 failed) in the last minute"),
    ]
