"""A claim that got fewer tasks than it asked for lets their routines report before the next
claim is written (`ClaimLoop._reports_first`), for at most `REPORTS_FIRST` seconds; against a
control plane that is an httpx transport recording the order of the requests."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor import claims
from stateous.supervisor.claims import REPORTS_FIRST
from stateous.supervisor.folder import Registry
from stateous.supervisor.outbox import Outbox
from tests.unit.supervisor.test_batches import Plane, claim_for, grant, outbox, supervisor

__all__ = ["outbox"]  # the fixture

TOKEN = {"token": "O-1", "status": "active", "state": "review", "context": {}}


async def run_claims(
    tmp_path: Path, outbox: Outbox, plane: Plane, routine: Any, seconds: float
) -> None:
    sup = supervisor(tmp_path, outbox, plane, tasks=4)
    sup.registry = Registry({"draft": (None, routine)})  # type: ignore[dict-item]  # no StateRef needed
    sup.bind()
    sender = asyncio.create_task(sup.sender.run())
    await claim_for(sup, seconds)
    for task in list(sup.tasks):
        await asyncio.wait_for(task, 5)
    sender.cancel()
    await sup.remote.aclose()


def answering(first_claim: dict[str, Any]) -> Plane:
    """A control plane whose first claim answers `first_claim`, every later one `204`, and
    every report `200`."""
    claims = iter([httpx.Response(200, json=first_claim)])

    async def answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if path == "/tasks/claim":
            return next(claims, httpx.Response(204))
        return httpx.Response(200, json=TOKEN)

    return Plane(answer)


async def test_the_report_of_a_routine_that_returns_at_once_goes_before_the_next_claim(
    tmp_path: Path, outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A limit no loaded test machine reaches: the order, not the 5 ms, is what is tested here.
    monkeypatch.setattr(claims, "REPORTS_FIRST", 10.0)
    plane = answering({"grants": [grant(1)]})  # one task, of the four asked for
    await run_claims(tmp_path, outbox, plane, lambda ctx: None, 0.3)
    assert plane.paths()[:3] == ["/tasks/claim", "/tasks/1/report", "/tasks/claim"]
    assert plane.requests[0][2]["max"] == 4


async def test_a_routine_that_takes_long_holds_the_next_claim_back_no_longer_than_the_limit(
    tmp_path: Path, outbox: Outbox
) -> None:
    release = threading.Event()
    plane = answering({"grants": [grant(1)]})

    def slow(ctx: Any) -> None:
        release.wait(5)

    async def scenario() -> None:
        runs = asyncio.ensure_future(run_claims(tmp_path, outbox, plane, slow, 0.3))
        await asyncio.sleep(0.15)  # far more than REPORTS_FIRST
        claims_while_running = plane.paths().count("/tasks/claim")
        release.set()
        await runs
        assert claims_while_running >= 2  # the next claim went while the routine still ran

    assert REPORTS_FIRST < 0.05
    await scenario()
    assert plane.paths()[:2] == ["/tasks/claim", "/tasks/claim"]
    assert "/tasks/1/report" in plane.paths()
