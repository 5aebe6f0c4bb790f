"""A plain `stateous supervise` whose terminal closed (SIGHUP) stops as for SIGTERM (a graceful
stop, docs/running-supervisors.md): no new tasks, its running routine is waited for and reported,
exit 0, and its last beat (`stopping`) makes it `gone` in `GET /supervisors`. A second SIGHUP forces
the stop.

The supervisor is a real process in a session of its own, as one started from a terminal is.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.supervisor.procs import BLOCKING_ROUTINE, entries, history, routine_folder
from tests.support import ServeProcess, Supervise, start_supervise


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Path:
    yaml = "name: box-hup\ntasks: 2\n"
    return routine_folder(tmp_path, plane.url, "hup-supervisor", BLOCKING_ROUTINE, yaml)


@pytest.fixture
def supervise(folder: Path) -> Iterator[Supervise]:
    """`stateous supervise FOLDER` in a session of its own (its own process group, no terminal)."""
    running = start_supervise(folder, new_session=True)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.kill()


def running_task(plane: ServeProcess, supervise: Supervise) -> None:
    """Start T-1 and wait until its routine runs."""
    supervise.wait_for("box-hup serves coding")
    answer = httpx.post(f"{plane.url}/tokens", json={"token": "T-1", "context": {"repo": "r"}})
    assert answer.status_code == 201
    supervise.wait_for(r"^task 1: coding of T-1, attempt 1$")


def test_sighup_stops_gracefully_as_sigterm_does(
    plane: ServeProcess, folder: Path, supervise: Supervise
) -> None:
    running_task(plane, supervise)
    assert os.getsid(supervise.process.pid) == supervise.process.pid
    supervise.process.send_signal(signal.SIGHUP)
    supervise.wait_for("stopping:")
    assert supervise.process.poll() is None  # it waits for the running routine
    (folder.parent / "release").write_text("", encoding="utf-8")
    assert supervise.process.wait(timeout=30) == 0
    messages = supervise.messages()
    assert "stopping: no new tasks; waiting for 1 routine(s) (signal again to stop now)" in messages
    assert "task 1 of T-1: reported stuck" in messages
    assert 'event_accepted {"event": "stuck", "payload": null, "state": "coding"}' in history(
        plane.url, "T-1"
    )
    [entry] = entries(plane.url)
    assert (entry["supervisor"], entry["status"], entry["stopping"]) == ("box-hup", "gone", True)


def test_a_second_sighup_stops_at_once(plane: ServeProcess, supervise: Supervise) -> None:
    running_task(plane, supervise)
    supervise.process.send_signal(signal.SIGHUP)
    supervise.wait_for("stopping:")
    supervise.process.send_signal(signal.SIGHUP)
    assert supervise.process.wait(timeout=30) == 1
    assert "stopping now: cancelling 1 routine(s)" in supervise.messages()
