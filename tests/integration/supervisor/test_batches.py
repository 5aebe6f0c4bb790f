"""The supervisor's batches against a real `stateous serve`: a claim of several
tasks whose answer is lost is replayed with the same grants; a refused message in the middle of
a batch answers alone; a batch whose answer is lost is sent again whole and applies nothing
twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from tests.support.local_files import stateous_messages
from tests.support.sending import send_settled

ROUTINE = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    ctx.note("working")
    return events.stuck()
"""


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Iterator[Path]:
    yaml = "name: build-box-1\ntasks: 4\n"
    with imports_undone(routine_folder(tmp_path, plane.url, "batch-supervisor", ROUTINE, yaml)):
        yield tmp_path / "batch-supervisor"


def start_tokens(url: str, names: list[str]) -> None:
    """Start each token; its `coding` task is queued at once."""
    for name in names:
        answer = httpx.post(f"{url}/tokens", json={"token": name, "context": {"repo": "r"}})
        assert answer.status_code == 201


def claimed(url: str, token: str) -> list[str]:
    """The token's `task_claimed` rows."""
    return [line for line in history(url, token) if line.startswith("task_claimed")]


async def test_a_lost_answer_to_a_claim_of_several_is_replayed_with_the_same_grants(
    plane: ServeProcess, folder: Path
) -> None:
    transport = LoseFirst("/tasks/claim")
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(
        settings, outbox, timings=IN_TEST, remote=Remote(settings.url, transport=transport)
    )
    tokens = ["T-1", "T-2", "T-3"]
    try:
        await supervisor.start()
        start_tokens(plane.url, tokens)
        running = asyncio.create_task(supervisor.run())
        async with httpx.AsyncClient() as client:
            for _ in range(200):
                statuses = [
                    (await client.get(f"{plane.url}/tokens/{t}")).json()["status"] for t in tokens
                ]
                if statuses == ["completed"] * 3:
                    break
                await asyncio.sleep(0.05)
        supervisor.signal()
        assert await running == 0
        assert outbox.count() == 0
    finally:
        outbox.close()
    assert transport.lost
    claims = transport.bodies("/tasks/claim")
    assert claims[0]["max"] == 4
    assert claims[1] == claims[0]  # the replay: the same request id, the same max
    requests = [c["request"] for c in claims]
    assert len(set(requests)) == len(requests) - 1  # only the replay repeats an id
    for task, token in enumerate(tokens, start=1):
        assert claimed(plane.url, token) == [
            f'task_claimed {{"task": {task}, "supervisor": "build-box-1", "attempt": 1}}'
        ]
        assert history(plane.url, token)[-1] == "completed {}"


async def claim_two(url: str) -> list[int]:
    """Claim the two queued `coding` tasks as build-box-1, as one claim of several."""
    body = {"supervisor": "build-box-1", "states": ["coding"], "max": 2}
    answer = httpx.post(f"{url}/tasks/claim", json=body)
    assert answer.status_code == 200
    return [grant["task"] for grant in answer.json()["grants"]]


def stuck(attempt: int = 1) -> dict[str, Any]:
    """The report of a routine that returned `stuck`."""
    return {"kind": "event", "event": "stuck", "context": None, "schedules": [], "attempt": attempt}


async def test_a_refused_message_in_the_middle_of_a_batch_answers_alone(
    plane: ServeProcess, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    start_tokens(plane.url, ["T-1", "T-2"])
    assert await claim_two(plane.url) == [1, 2]
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(settings, outbox, timings=IN_TEST)
    try:
        messages = [
            outbox.add(1, 1, "T-1", "note", {"text": "first"}),
            outbox.add(1, 1, "T-1", "memory", {"key": "", "value": 1}),  # refused: empty key
            outbox.add(2, 1, "T-2", "note", {"text": "second"}),
            outbox.add(1, 1, "T-1", "report", stuck()),
            outbox.add(2, 1, "T-2", "report", stuck()),
        ]
        # DEBUG: a report's line is at DEBUG (the tally's line a minute is at INFO).
        with caplog.at_level(logging.DEBUG, logger="stateous.supervisor"):
            assert await send_settled(supervisor.sender, messages) == set()
        assert outbox.count() == 0
    finally:
        await supervisor.remote.aclose()
        outbox.close()
    lines = stateous_messages(caplog.records)
    assert len(lines) == 3
    assert lines[0].startswith("task 1: the control plane refused a memory: ")
    assert lines[1:] == ["task 1 of T-1: reported stuck", "task 2 of T-2: reported stuck"]
    for token, text in (("T-1", "first"), ("T-2", "second")):
        rows = history(plane.url, token)
        assert [r for r in rows if r.startswith(("note", "memory"))] == [
            f'note {{"task": {token[-1]}, "text": "{text}"}}'
        ]
        assert rows[-1] == "completed {}"


async def test_a_batch_whose_answer_is_lost_is_sent_again_whole_and_applies_nothing_twice(
    plane: ServeProcess, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    start_tokens(plane.url, ["T-1", "T-2"])
    assert await claim_two(plane.url) == [1, 2]
    transport = LoseFirst("/tasks/messages")
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(
        settings, outbox, timings=IN_TEST, remote=Remote(settings.url, transport=transport)
    )
    try:
        messages = [
            outbox.add(1, 1, "T-1", "note", {"text": "first"}),
            outbox.add(1, 1, "T-1", "memory", {"key": "k", "value": 1}),
            outbox.add(2, 1, "T-2", "report", stuck()),
            outbox.add(1, 1, "T-1", "report", stuck()),
        ]
        with caplog.at_level(logging.INFO, logger="stateous.supervisor"):
            assert await send_settled(supervisor.sender, messages) == set()
        assert outbox.count() == 0
    finally:
        await supervisor.remote.aclose()
        outbox.close()
    assert transport.lost
    sent = transport.bodies("/tasks/messages")
    assert len(sent) == 2
    assert sent[0] == sent[1]  # the same messages, whole
    one = history(plane.url, "T-1")
    assert [r for r in one if r.startswith(("note", "memory", "task_done", "completed"))] == [
        'note {"task": 1, "text": "first"}',
        'memory_set {"state": "coding", "memory_key": "k"}',
        'task_done {"task": 1}',
        "completed {}",
    ]
    two = history(plane.url, "T-2")
    assert [r for r in two if r.startswith(("task_done", "completed"))] == [
        'task_done {"task": 2}',
        "completed {}",
    ]
    # The repeated reports were refused, checked with a heartbeat, and dropped.
    assert transport.bodies("/tasks/heartbeat") == [
        {"supervisor": "build-box-1", "tasks": [2]},
        {"supervisor": "build-box-1", "tasks": [1]},
    ]
