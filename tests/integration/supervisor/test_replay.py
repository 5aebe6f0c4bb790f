"""A claim whose answer is lost is sent again with the same request id, and gets the same grant.

The supervisor runs in this process against a real `stateous serve`; the network between them
loses the first answer that grants a task (the control plane did grant it).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor.folder import read_folder
from stateous.supervisor.loop import Supervisor, Timings
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote
from tests.integration.supervisor.procs import history, init_folder, serving
from tests.support import ServeProcess, sqlite_url

DATA = Path(__file__).resolve().parents[2] / "unit" / "supervisor" / "data"

ROUTINE = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    return events.stuck()
"""


class LoseFirstGrant(httpx.AsyncBaseTransport):
    """Forwards every request; the first claim that gets a task loses its answer on the way back."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.claims: list[dict[str, Any]] = []
        self.lost = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path == "/tasks/claim":
            self.claims.append(json.loads(request.content))
            await response.aread()
            if response.status_code == 200 and not self.lost:
                self.lost = True
                raise httpx.ReadTimeout("the answer was lost", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ServeProcess]:
    graph = tmp_path / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", graph)
    with serving(graph, sqlite_url(tmp_path)) as served:
        yield served


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Iterator[Path]:
    folder = tmp_path / "replay-supervisor"
    init_folder(plane.url, folder)
    (folder / "coding.py").write_text(ROUTINE, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {plane.url}\nname: build-box-1\n")
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        del sys.modules[name]
    sys.path.remove(str(folder.resolve()))


async def test_a_lost_claim_answer_is_replayed(plane: ServeProcess, folder: Path) -> None:
    transport = LoseFirstGrant()
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(
        settings,
        outbox,
        timings=Timings(heartbeat=0.5, idle=0.1, max_retry=0.2, wait=1.0),
        remote=Remote(settings.url, transport=transport),
    )
    try:
        await supervisor.start()
        running = asyncio.create_task(supervisor.run())
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                f"{plane.url}/tokens", json={"token": "T-1", "context": {"repo": "r"}}
            )
            assert answer.status_code == 201
            for _ in range(200):
                token = (await client.get(f"{plane.url}/tokens/T-1")).json()
                if token["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
        supervisor.signal()
        assert await running == 0
    finally:
        outbox.close()
    assert transport.lost
    granted = next(i for i, c in enumerate(transport.claims) if i and c == transport.claims[i - 1])
    assert transport.claims[granted]["request"] == transport.claims[granted - 1]["request"]
    requests = [c["request"] for c in transport.claims]
    assert len(set(requests)) == len(requests) - 1  # only the replay repeats an id
    assert [line for line in history(plane.url, "T-1") if line.startswith("task_claimed")] == [
        'task_claimed {"task": 1, "supervisor": "build-box-1", "attempt": 1}'
    ]
