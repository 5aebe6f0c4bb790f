"""A quiet supervisor that stops at once (issue 30), against a real `stateous serve`: an idle
one exits within a second of Ctrl-C although its claim is held for 10 s, `--log-level` sets
what it logs, and at INFO the tasks of a run show as the line a minute only."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from stateous.supervisor.folder import read_folder
from stateous.supervisor.loop import Supervisor
from stateous.supervisor.outbox import Outbox
from tests.integration.supervisor.procs import (
    IN_TEST,
    history,
    imports_undone,
    routine_folder,
    wait_until,
)
from tests.support import ServeProcess, start_supervise
from tests.support.local_files import stateous_messages

ROUTINE = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    return events.stuck()
"""
STOPPING = "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)"


def make_folder(tmp_path: Path, url: str) -> Path:
    """A supervisor folder of `coding` (which returns `stuck`: the token completes)."""
    return routine_folder(tmp_path, url, "quiet-supervisor", ROUTINE, "name: quiet-box\n")


def run_token(url: str, token: str) -> None:
    """Start `token` and wait until its one task was reported and it completed."""
    answer = httpx.post(f"{url}/tokens", json={"token": token, "context": {"repo": "r"}})
    assert answer.status_code == 201
    wait_until(lambda: history(url, token)[-1] == "completed {}", what=f"{token} completed")


def test_an_idle_supervisor_stops_within_a_second_of_ctrl_c(
    plane: ServeProcess, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path, plane.url)
    # The claim's own 10 s long-poll (the tests' usual 1 s would hide a stop that waits it out).
    running = start_supervise(folder, env={"STATEOUS_SUPERVISOR_WAIT": "10"})
    try:
        running.wait_for(" serves ")
        time.sleep(0.5)  # the first claim is held by the control plane now
        began = time.monotonic()
        code = running.interrupt(timeout=20)
        took = time.monotonic() - began
    finally:
        running.stop()
    assert code == 0
    assert took < 3.0, f"it took {took:.1f} s to stop"
    assert running.messages()[-1] == STOPPING


def test_a_task_queued_after_the_stop_is_left_for_the_next_claim(
    plane: ServeProcess, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path, plane.url)
    running = start_supervise(folder, env={"STATEOUS_SUPERVISOR_WAIT": "10"})
    try:
        running.wait_for(" serves ")
        time.sleep(0.5)
        assert running.interrupt(timeout=20) == 0
    finally:
        running.stop()
    # The cut claim was granted nothing: a token started now waits, unclaimed.
    answer = httpx.post(f"{plane.url}/tokens", json={"token": "T-LATE", "context": {"repo": "r"}})
    assert answer.status_code == 201
    time.sleep(0.3)
    assert not any(line.startswith("task_claimed") for line in history(plane.url, "T-LATE"))


def test_the_log_level_sets_what_a_supervisor_logs(plane: ServeProcess, tmp_path: Path) -> None:
    folder = make_folder(tmp_path, plane.url)
    seen: dict[str, list[str]] = {}
    for token, level in (("T-1", None), ("T-2", "warning"), ("T-3", "debug")):
        running = start_supervise(folder, log_level=level)
        try:
            if level != "warning":  # else no line says it has started: the token waits
                running.wait_for(" serves ")
            run_token(plane.url, token)
            if level == "debug":
                # The token completes when the plane applies the report, a moment before the
                # supervisor reads the plane's answer and logs it: a stop signalled in between
                # would log its line first.
                running.wait_for("reported stuck")
        finally:
            assert running.stop() == 0
        seen[str(level)] = running.messages()
    served = f"quiet-box serves coding; the control plane is {plane.url}"
    # The default, info: its start and its stop, not the task's two lines.
    assert seen["None"] == [served, STOPPING]
    assert seen["warning"] == [STOPPING]
    assert seen["debug"] == [
        served,
        "task 3: coding of T-3, attempt 1",
        "task 3 of T-3: reported stuck",
        STOPPING,
    ]


def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    running = start_supervise(tmp_path / "nowhere", log_level="loud")
    assert running.process.wait(timeout=30) == 2
    running.stop()
    assert any("Invalid value for '--log-level'" in line for line in running.lines)


async def test_at_info_the_tasks_of_a_run_show_in_the_line_a_minute_only(
    plane: ServeProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tokens = ["T-1", "T-2", "T-3"]
    with imports_undone(make_folder(tmp_path, plane.url)) as folder:
        outbox = Outbox(folder)
        # A "minute" of 0.3 s, so that the test sees a line or two.
        supervisor = Supervisor(read_folder(folder), outbox, timings=replace(IN_TEST, tally=0.3))
        try:
            with caplog.at_level(logging.INFO, logger="stateous"):
                await supervisor.start()
                running = asyncio.create_task(supervisor.run())
                for token in tokens:
                    await asyncio.to_thread(run_token, plane.url, token)
                await asyncio.sleep(0.5)  # one more period: the last line is out
                supervisor.signal()
                assert await running == 0
        finally:
            outbox.close()
    messages = stateous_messages(caplog.records)
    assert messages[0].startswith("quiet-box serves coding;")
    assert messages[-1] == STOPPING
    lines = messages[1:-1]
    counts = [
        re.fullmatch(r"ran (\d+) tasks? \((\d+) done, 0 failed\) in the last minute", m)
        for m in lines
    ]
    assert all(counts), lines
    assert sum(int(found[1]) for found in counts if found) == 3
    assert all(found[1] == found[2] for found in counts if found)
