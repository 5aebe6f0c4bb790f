"""The supervisor's beat: at start, every `beat` seconds and at a graceful stop;
independent of claims; one log line and no more beats from a control plane without the route.

The control plane here is an httpx transport standing in for control planes with and without
the route (the real one is tested in tests/integration/supervisor/test_beat.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor.folder import Registry, Settings
from stateous.supervisor.grant import grant_from
from stateous.supervisor.loop import Supervisor, Timings
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote
from tests.support.local_files import stateous_messages

URL = "http://control.test"
Handler = Callable[[str, dict[str, Any]], Awaitable[httpx.Response]]


class Plane:
    """Answers claims with `204` after `claim_delay`, and beats with `beat`; records beats."""

    def __init__(self, beat: Handler, claim_delay: float = 0.0) -> None:
        self.beats: list[tuple[float, dict[str, Any]]] = []
        self.claims = 0
        self._beat = beat
        self._claim_delay = claim_delay

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        if request.url.path == "/supervisors/beat":
            self.beats.append((asyncio.get_running_loop().time(), body))
            return await self._beat(request.url.path, body)
        assert request.url.path == "/tasks/claim"
        self.claims += 1
        await asyncio.sleep(self._claim_delay)
        return httpx.Response(204)


async def accept(path: str, body: dict[str, Any]) -> httpx.Response:
    """The answer of a control plane with the route."""
    return httpx.Response(200, json={**body, "status": "live"})


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    """The supervisor's outbox in a temporary folder."""
    box = Outbox(tmp_path)
    yield box
    box.close()


def supervisor(tmp_path: Path, outbox: Outbox, plane: Plane, beat: float = 0.1) -> Supervisor:
    """A supervisor of `draft` and `review` whose control plane is `plane`."""
    settings = Settings(folder=tmp_path, url=URL, tasks=3, name="box-1", checksum="sha256:0")
    timings = Timings(heartbeat=30.0, idle=0.05, max_retry=0.05, wait=0.0, beat=beat)
    sup = Supervisor(settings, outbox, url=URL, timings=timings)
    sup.remote = Remote(URL, transport=httpx.MockTransport(plane))
    routines = {"draft": (None, lambda ctx: None), "review": (None, lambda ctx: None)}
    sup.registry = Registry(routines)  # type: ignore[arg-type]
    return sup


async def run_for(sup: Supervisor, seconds: float) -> int:
    """Run the supervisor for `seconds`, then stop it gracefully; answers its exit code."""
    sup.bind()
    running = asyncio.create_task(sup.run())
    await asyncio.sleep(seconds)
    sup.signal()
    return await asyncio.wait_for(running, 10)


async def test_beats_at_start_every_interval_and_at_a_graceful_stop(
    tmp_path: Path, outbox: Outbox
) -> None:
    plane = Plane(accept)
    sup = supervisor(tmp_path, outbox, plane)
    started = asyncio.get_running_loop().time()
    assert await run_for(sup, 0.45) == 0
    times = [at for at, _ in plane.beats]
    bodies = [body for _, body in plane.beats]
    assert times[0] - started < 0.05  # at start
    assert 3 <= len(bodies) <= 7  # 0.45 s of beats every 0.1 s, on a busy machine too
    gaps = [b - a for a, b in itertools.pairwise(times[:-1])]  # the stop's beat comes at once
    assert all(0.08 <= gap < 0.4 for gap in gaps)
    expected = {
        "supervisor": "box-1",
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "version": version("stateous"),
        "states": ["draft", "review"],
        "slots": 3,
        "running": [],
        "started_at": sup.started_at,
        "checksum": sup.settings.checksum,
    }
    assert bodies[:-1] == [expected] * (len(bodies) - 1)
    assert bodies[-1] == {**expected, "stopping": True}


async def test_the_beat_names_the_running_tasks_but_not_the_lost_ones(
    tmp_path: Path, outbox: Outbox
) -> None:
    plane = Plane(accept)
    sup = supervisor(tmp_path, outbox, plane)
    for task in (7, 3, 5):
        sup.grants[task] = grant_from(
            {
                "task": task,
                "token": f"T-{task}",
                "state": "draft",
                "visit": 1,
                "attempt": 1,
                "context": {},
                "memory": {},
                "entered_by": {"name": "__started__"},
            }
        )
    sup.lose(sup.grants[5])
    assert sup.beats.body()["running"] == [3, 7]
    await sup.remote.aclose()


async def test_beats_go_on_while_a_claim_waits(tmp_path: Path, outbox: Outbox) -> None:
    plane = Plane(accept, claim_delay=5.0)
    sup = supervisor(tmp_path, outbox, plane)
    sup.bind()
    running = asyncio.create_task(sup.run())
    await asyncio.sleep(0.45)
    assert plane.claims == 1
    assert len(plane.beats) >= 3
    running.cancel()
    await asyncio.wait({running})
    await sup.remote.aclose()


@pytest.mark.parametrize("status", [404, 405])
async def test_a_control_plane_without_the_route_gets_one_beat_and_one_log_line(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    async def missing(path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(status, json={"error": "no such route", "code": "not_found"})

    plane = Plane(missing)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.INFO, logger="stateous.supervisor"):
        assert await run_for(sup, 0.35) == 0
    assert len(plane.beats) == 1
    beats = [m for m in stateous_messages(caplog.records) if "beat" in m]
    assert beats == [
        "the control plane has no POST /supervisors/beat: this supervisor does not beat"
    ]


async def test_a_refused_beat_is_logged_once_and_beats_go_on(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuse(path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(
            422, json={"error": "a beat's 'host' is a string", "code": "invalid_body"}
        )

    plane = Plane(refuse)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.INFO, logger="stateous.supervisor"):
        assert await run_for(sup, 0.35) == 0
    assert len(plane.beats) >= 3
    assert plane.beats[-1][1]["stopping"] is True
    beats = [m for m in stateous_messages(caplog.records) if "beat" in m]
    assert beats == ["the control plane refused a beat: a beat's 'host' is a string"]


async def test_a_beat_without_answer_is_followed_by_the_next_one(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(503)

    plane = Plane(down)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.INFO, logger="stateous.supervisor"):
        assert await run_for(sup, 0.35) == 0
    assert len(plane.beats) >= 3
    assert [m for m in stateous_messages(caplog.records) if "beat" in m] == []


def test_the_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATEOUS_SUPERVISOR_BEAT", raising=False)
    assert Timings.from_env().beat == 10.0
    monkeypatch.setenv("STATEOUS_SUPERVISOR_BEAT", "0.5")
    assert Timings.from_env().beat == 0.5
