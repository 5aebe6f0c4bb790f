"""A grant's messages reach the control plane in order when one of
them gets `503 database_busy` inside a batch: the control plane holds back the task's later
messages (`503` too) and applies the other tasks'; the supervisor sends the held ones again,
alone, in their order, so the note and the report land after the memory write that failed.

Against a real `stateous serve` on SQLite: a trigger makes every memory insert fail with a
database error (`no such function`), answered `503 database_busy`; it is dropped after the first
time the supervisor sends the memory write again alone and gets `503` once more.
"""

from __future__ import annotations

import json
import logging
import sqlite3
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
    history,
    imports_undone,
    routine_folder,
)
from tests.support import ServeProcess
from tests.support.local_files import stateous_messages
from tests.support.sending import send_settled

BUSY = {"error": "the database cannot take this request now; try again", "code": "database_busy"}

ROUTINE = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    return events.stuck()
"""


class MemoryFails:
    """While installed, every memory insert of the SQLite file fails with a database error."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.installed = False

    def _run(self, statement: str) -> None:
        with sqlite3.connect(self.database, timeout=30) as conn:
            conn.execute(statement)
        conn.close()

    def install(self) -> None:
        self._run(
            "CREATE TRIGGER memory_fails BEFORE INSERT ON memory "
            "BEGIN SELECT stateous_no_such_function(); END"
        )
        self.installed = True

    def heal(self) -> None:
        if self.installed:
            self._run("DROP TRIGGER memory_fails")
            self.installed = False


class Watch(httpx.AsyncBaseTransport):
    """Forwards every request and keeps (method, path, body, status, answer); the first `503`
    to a memory write sent alone heals the database."""

    def __init__(self, fault: MemoryFails) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.fault = fault
        self.sent: list[tuple[str, str, Any, int, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        await response.aread()
        body = json.loads(request.content) if request.content else None
        answer = json.loads(response.content) if response.content else None
        path = request.url.path
        self.sent.append((request.method, path, body, response.status_code, answer))
        if path == "/tasks/1/memory" and response.status_code == 503:
            self.fault.heal()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def folder(tmp_path: Path, plane: ServeProcess) -> Iterator[Path]:
    yaml = "name: build-box-1\ntasks: 4\n"
    with imports_undone(routine_folder(tmp_path, plane.url, "order-supervisor", ROUTINE, yaml)):
        yield tmp_path / "order-supervisor"


def stuck() -> dict[str, Any]:
    """The report of a routine that returned `stuck`, attempt 1."""
    return {"kind": "event", "event": "stuck", "context": None, "schedules": [], "attempt": 1}


def after_claim(url: str, token: str) -> list[str]:
    """The token's history after its claim."""
    rows = history(url, token)
    claimed = next(i for i, row in enumerate(rows) if row.startswith("task_claimed"))
    return rows[claimed + 1 :]


async def test_a_busy_message_keeps_its_grants_later_messages_behind_it(
    plane: ServeProcess, folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("T-1", "T-2"):
        answer = httpx.post(f"{plane.url}/tokens", json={"token": name, "context": {"repo": "r"}})
        assert answer.status_code == 201
    claim = {"supervisor": "build-box-1", "states": ["coding"], "max": 2}
    granted = httpx.post(f"{plane.url}/tasks/claim", json=claim).json()["grants"]
    assert [grant["task"] for grant in granted] == [1, 2]
    fault = MemoryFails(tmp_path / "stateous.db")
    transport = Watch(fault)
    settings = read_folder(folder)
    outbox = Outbox(folder)
    supervisor = Supervisor(
        settings, outbox, timings=IN_TEST, remote=Remote(settings.url, transport=transport)
    )
    try:
        messages = [
            outbox.add(1, 1, "T-1", "memory", {"key": "session", "value": 7}),
            outbox.add(2, 1, "T-2", "note", {"text": "other"}),
            outbox.add(1, 1, "T-1", "note", {"text": "after"}),
            outbox.add(1, 1, "T-1", "report", stuck()),
        ]
        fault.install()
        # DEBUG: a report's line is at DEBUG (the tally's line a minute is at INFO).
        with caplog.at_level(logging.DEBUG, logger="stateous.supervisor"):
            assert await send_settled(supervisor.sender, messages) == set()
        assert outbox.count() == 0
    finally:
        fault.heal()
        await supervisor.remote.aclose()
        outbox.close()
    sent = [(method, path, status) for method, path, _, status, _ in transport.sent]
    assert sent == [
        ("POST", "/tasks/messages", 200),
        ("PUT", "/tasks/1/memory", 503),  # still failing: the database heals now
        ("PUT", "/tasks/1/memory", 204),
        ("POST", "/tasks/1/note", 204),
        ("POST", "/tasks/1/report", 200),
    ]
    assert transport.sent[0][4]["answers"] == [
        {"status": 503, "body": BUSY},
        {"status": 204, "body": None},
        {"status": 503, "body": BUSY},
        {"status": 503, "body": BUSY},
    ]
    assert after_claim(plane.url, "T-1") == [
        'memory_set {"state": "coding", "memory_key": "session"}',
        'note {"task": 1, "text": "after"}',
        'event_accepted {"event": "stuck", "payload": null, "state": "coding"}',
        'task_done {"task": 1}',
        "completed {}",
    ]
    assert after_claim(plane.url, "T-2") == ['note {"task": 2, "text": "other"}']
    lines = stateous_messages(caplog.records)
    assert lines[-1] == "task 1 of T-1: reported stuck"
    assert any("database_busy" in line and "trying again in" in line for line in lines)
