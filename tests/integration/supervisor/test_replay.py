"""A claim whose answer is lost is sent again with the same request id, and gets the same grant.

The supervisor runs in this process against a real `stateous serve`; the network between them
loses the first answer that grants a task (the control plane did grant it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stateous.supervisor.folder import read_folder
from stateous.supervisor.loop import Supervisor
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote
from tests.integration.supervisor.procs import (
    IN_TEST,
    LoseFirst,
    history,
    imports_undone,
    routine_folder,
)
from tests.support import ServeProcess

ROUTINE = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    return events.stuck()
"""


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Iterator[Path]:
    yaml = "name: build-box-1\n"
    with imports_undone(routine_folder(tmp_path, plane.url, "replay-supervisor", ROUTINE, yaml)):
        yield tmp_path / "replay-supervisor"


async def test_a_lost_claim_answer_is_replayed(plane: ServeProcess, folder: Path) -> None:
    transport = LoseFirst("/tasks/claim")  # the first claim that gets a task loses its answer
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(
        settings,
        outbox,
        timings=IN_TEST,
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
    claims = transport.bodies("/tasks/claim")
    granted = next(i for i, c in enumerate(claims) if i and c == claims[i - 1])
    assert claims[granted]["request"] == claims[granted - 1]["request"]
    requests = [c["request"] for c in claims]
    assert len(set(requests)) == len(requests) - 1  # only the replay repeats an id
    assert [line for line in history(plane.url, "T-1") if line.startswith("task_claimed")] == [
        'task_claimed {"task": 1, "supervisor": "build-box-1", "attempt": 1}'
    ]
