"""The background loop of bulk jobs, the search-key fill and retention: what ends it, how it
rests, and that a failed step is logged and tried again."""

from __future__ import annotations

import asyncio

import pytest

from stateous.control.errors import NotServing
from stateous.control.paced import Pace, run_paced


def test_a_failed_step_is_logged_and_tried_again_and_no_work_ends_a_fill(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers: list[int | Exception] = [3, RuntimeError("the disk is gone"), 2, 0, 5]
    forgotten: list[bool] = []

    def step() -> int:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    pace = Pace(0.001, None, 0.001, "filling a search key failed", False)
    asyncio.run(run_paced(step, asyncio.Event(), pace, lambda: forgotten.append(True)))
    assert answers == [5]  # ended at the step with nothing to do
    assert forgotten == [True]
    assert [r.getMessage() for r in caplog.records] == [
        "filling a search key failed (the disk is gone); trying again"
    ]


def test_not_serving_ends_it_and_a_set_stop_runs_no_step() -> None:
    calls: list[int] = []

    def step() -> int:
        calls.append(1)
        raise NotServing()

    pace = Pace(0.001, 0.001, 0.001, "a bulk job's batch failed")
    asyncio.run(run_paced(step, asyncio.Event(), pace))
    assert calls == [1]
    stopped = asyncio.Event()
    stopped.set()
    asyncio.run(run_paced(step, stopped, pace))
    assert calls == [1]
