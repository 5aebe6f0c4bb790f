"""The supervisors' registry (`GET /supervisors`) with real `stateous serve` and `stateous
supervise` processes (SQLite): live within one beat of start, stale then gone after SIGKILL, gone at
once after a graceful stop, busy and idle supervisors stay live, and per-state live counts in
`/stats`.

The control plane's thresholds are shortened (stale after 3 s, gone after 6 s) and the
supervisors beat every 0.5 s: the default ratio of beat to stale (10 s to 30 s) with room for a
loaded machine.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.supervisor.procs import init_folder, wait_until
from tests.support import ServeProcess, Supervise, serve_process, sqlite_url, start_supervise

DATA = Path(__file__).resolve().parents[2] / "unit" / "supervisor" / "data"
THRESHOLDS = {"STATEOUS_SUPERVISOR_STALE_SECONDS": "3", "STATEOUS_SUPERVISOR_GONE_SECONDS": "6"}
BEAT = {"STATEOUS_SUPERVISOR_BEAT": "0.5"}

CODING = """
import asyncio

from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
async def coding(ctx: TicketContext) -> events.done | events.stuck:
    if ctx["repo"] == "long":
        await asyncio.sleep(600)
    return events.done()
"""

TESTING = """
from stateous import on_state

from contract import Tests, TicketContext, events, states


@on_state(states.testing)
def testing(ctx: TicketContext) -> events.passed | events.failed:
    return events.passed(Tests(passed=1, failed=0))
"""


BOTH = (
    CODING
    + """
from contract import Tests


@on_state(states.testing)
def testing(ctx: TicketContext) -> events.passed | events.failed:
    return events.passed(Tests(passed=1, failed=0))
"""
)


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ServeProcess]:
    """`stateous serve` of sdlc with short registry thresholds."""
    graph = tmp_path / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", graph)
    with serve_process(graph, sqlite_url(tmp_path), env=THRESHOLDS) as served:
        yield served


def make_folder(root: Path, url: str, name: str, routines: str, tasks: int = 2) -> Path:
    """A supervisor folder named `name` with `routines` (which decide the states it serves)."""
    folder = root / name
    init_folder(url, folder, again=True)
    (folder / "routines.py").write_text(routines, encoding="utf-8")
    (folder / "stateous.yaml").write_text(
        f"url: {url}\ntasks: {tasks}\nname: {name}\n", encoding="utf-8"
    )
    return folder


def supervisors(url: str) -> dict[str, dict[str, Any]]:
    """`GET /supervisors` by name."""
    answer = httpx.get(f"{url}/supervisors", timeout=10)
    assert answer.status_code == 200, answer.text
    return {entry["supervisor"]: entry for entry in answer.json()}


def status_of(url: str, name: str) -> str | None:
    entry = supervisors(url).get(name)
    return None if entry is None else str(entry["status"])


def live_per_state(url: str) -> dict[str, int]:
    states = httpx.get(f"{url}/stats", timeout=10).json()["states"]
    return {name: entry["supervisors"] for name, entry in states.items()}


@pytest.fixture
def started() -> Iterator[list[Supervise]]:
    """The supervisors a test starts; any still running at the end is killed."""
    running: list[Supervise] = []
    yield running
    for process in running:
        if process.process.poll() is None:
            process.kill()
        for pipe in (process.process.stderr, process.process.stdout):
            if pipe is not None:
                pipe.close()


def launch(started: list[Supervise], folder: Path) -> Supervise:
    process = start_supervise(folder, env=BEAT)
    started.append(process)
    return process


def test_live_within_one_beat_then_stale_then_gone_after_sigkill(
    plane: ServeProcess, tmp_path: Path, started: list[Supervise]
) -> None:
    folder = make_folder(tmp_path, plane.url, "box-1", BOTH)
    began = time.monotonic()
    box = launch(started, folder)
    wait_until(lambda: status_of(plane.url, "box-1") == "live", timeout=30, what="box-1 live")
    # The first beat goes at start: live well within one beat (10 s) of the process's start.
    assert time.monotonic() - began < 10
    entry = supervisors(plane.url)["box-1"]
    assert {k: entry[k] for k in ("states", "slots", "running", "stopping", "pid")} == {
        "states": ["coding", "testing"],
        "slots": 2,
        "running": [],
        "stopping": False,
        "pid": box.process.pid,
    }
    box.kill()
    killed = time.monotonic()
    wait_until(lambda: status_of(plane.url, "box-1") == "stale", timeout=15, what="stale")
    assert time.monotonic() - killed < 6
    wait_until(lambda: status_of(plane.url, "box-1") == "gone", timeout=15, what="gone")
    assert 2.5 < time.monotonic() - killed < 12
    assert supervisors(plane.url)["box-1"]["stopping"] is False


def test_gone_at_once_after_a_graceful_stop(
    plane: ServeProcess, tmp_path: Path, started: list[Supervise]
) -> None:
    folder = make_folder(tmp_path, plane.url, "box-1", CODING)
    box = launch(started, folder)
    wait_until(lambda: status_of(plane.url, "box-1") == "live", timeout=30, what="box-1 live")
    assert box.stop() == 0
    entry = supervisors(plane.url)["box-1"]
    assert (entry["status"], entry["stopping"]) == ("gone", True)


def test_a_busy_and_an_idle_supervisor_stay_live(
    plane: ServeProcess, tmp_path: Path, started: list[Supervise]
) -> None:
    busy = make_folder(tmp_path, plane.url, "busy", CODING, tasks=1)
    idle = make_folder(tmp_path, plane.url, "idle", TESTING)
    launch(started, busy)
    launch(started, idle)
    answer = httpx.post(
        f"{plane.url}/tokens", json={"token": "T-1", "context": {"repo": "long"}}, timeout=10
    )
    assert answer.status_code == 201, answer.text
    wait_until(
        lambda: supervisors(plane.url).get("busy", {}).get("running") == [1],
        timeout=30,
        what="busy runs task 1",
    )
    wait_until(lambda: status_of(plane.url, "idle") == "live", timeout=30, what="idle live")
    # Three times the stale threshold: the beats, not the claims or reports, keep them live.
    deadline = time.monotonic() + 9
    while time.monotonic() < deadline:
        found = supervisors(plane.url)
        assert (found["busy"]["status"], found["busy"]["running"]) == ("live", [1])
        assert (found["idle"]["status"], found["idle"]["running"]) == ("live", [])
        time.sleep(0.25)


def test_two_supervisors_of_different_states_give_the_per_state_counts(
    plane: ServeProcess, tmp_path: Path, started: list[Supervise]
) -> None:
    assert live_per_state(plane.url) == {"coding": 0, "testing": 0}
    coder = launch(started, make_folder(tmp_path, plane.url, "coder", CODING))
    launch(started, make_folder(tmp_path, plane.url, "tester", TESTING))
    wait_until(
        lambda: live_per_state(plane.url) == {"coding": 1, "testing": 1},
        timeout=30,
        what="one live supervisor per state",
    )
    launch(started, make_folder(tmp_path, plane.url, "tester-2", TESTING))
    wait_until(
        lambda: live_per_state(plane.url) == {"coding": 1, "testing": 2},
        timeout=30,
        what="two testers",
    )
    assert coder.stop() == 0
    assert live_per_state(plane.url) == {"coding": 0, "testing": 2}
    assert {name: e["status"] for name, e in supervisors(plane.url).items()} == {
        "coder": "gone",
        "tester": "live",
        "tester-2": "live",
    }
