"""The supervisor's beat against a real `stateous serve`: a real `stateous supervise`
is `live` in `GET /supervisors` within one beat of its start, with what it serves and runs, and
`gone` at once after a graceful stop.
"""

from __future__ import annotations

import socket
import time
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from tests.integration.supervisor.procs import BLOCKING_ROUTINE, entries, routine_folder, wait_until
from tests.support import ServeProcess, start_supervise


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Path:
    yaml = "name: build-box-1\ntasks: 2\n"
    return routine_folder(tmp_path, plane.url, "beat-supervisor", BLOCKING_ROUTINE, yaml)


def test_a_supervisor_is_live_within_a_beat_shows_its_tasks_and_is_gone_after_a_stop(
    plane: ServeProcess, folder: Path
) -> None:
    running = start_supervise(folder, env={"STATEOUS_SUPERVISOR_BEAT": "0.5"})
    try:
        running.wait_for("build-box-1 serves coding")
        serving_since = time.monotonic()
        wait_until(lambda: entries(plane.url) != [], timeout=10, what="the first beat")
        assert time.monotonic() - serving_since < 2.0  # the first beat comes at start (slack: load)
        [entry] = entries(plane.url)
        assert entry["status"] == "live"
        assert entry["stopping"] is False
        assert {k: entry[k] for k in ("supervisor", "host", "pid", "version")} == {
            "supervisor": "build-box-1",
            "host": socket.gethostname(),
            "pid": running.process.pid,
            "version": version("stateous"),
        }
        assert (entry["states"], entry["slots"], entry["running"]) == (["coding"], 2, [])
        answer = httpx.post(f"{plane.url}/tokens", json={"token": "T-1", "context": {"repo": "r"}})
        assert answer.status_code == 201
        wait_until(lambda: entries(plane.url)[0]["running"] == [1], timeout=10, what="task 1")
        assert entries(plane.url)[0]["status"] == "live"
        (folder.parent / "release").write_text("", encoding="utf-8")
        wait_until(lambda: entries(plane.url)[0]["running"] == [], timeout=10, what="no task")
        assert running.stop() == 0
        [entry] = entries(plane.url)
        assert (entry["status"], entry["stopping"]) == ("gone", True)
    finally:
        if running.process.poll() is None:
            running.kill()
