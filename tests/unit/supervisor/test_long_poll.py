"""The supervisor's long-poll claims: `wait` in each claim, and the fallback to
claiming each second when a control plane of the base design refuses or ignores the field.

The control plane here is an httpx transport standing in for other versions of the control
plane (the real one is tested in tests/integration/control/test_long_poll.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor.folder import Registry, Settings
from stateous.supervisor.loop import Supervisor, Timings
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote

URL = "http://control.test"
Handler = Callable[[dict[str, Any]], Awaitable[httpx.Response]]
GRANT = {
    "task": 7, "token": "O-1", "state": "draft", "visit": 1, "attempt": 1,
    "context": {"title": "t"}, "memory": {}, "entered_by": {"name": "__started__"},
}  # fmt: skip


class Recorder:
    """The claims a supervisor sent: each body and when it arrived."""

    def __init__(self, answer: Handler) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.times: list[float] = []
        self._answer = answer

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/tasks/claim"
        body = json.loads(request.content)
        self.bodies.append(body)
        self.times.append(time.monotonic())
        return await self._answer(body)

    def gaps(self) -> list[float]:
        """Seconds between one claim and the next."""
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    """The supervisor's outbox in a temporary folder."""
    box = Outbox(tmp_path)
    yield box
    box.close()


def supervisor(tmp_path: Path, outbox: Outbox, recorder: Recorder, timings: Timings) -> Supervisor:
    """A supervisor of `draft` whose control plane is `recorder`."""
    settings = Settings(folder=tmp_path, url=URL, tasks=4, name="box-1", checksum="sha256:0")
    sup = Supervisor(settings, outbox, url=URL, timings=timings)
    sup.remote = Remote(URL, transport=httpx.MockTransport(recorder))
    sup.registry = Registry({"draft": (None, lambda ctx: None)})  # type: ignore[dict-item]
    return sup


async def claim_for(sup: Supervisor, seconds: float) -> None:
    """Run the claim loop for `seconds`, then stop it with a stop signal."""
    loop = asyncio.create_task(sup._claim_loop())
    await asyncio.sleep(seconds)
    sup.signal()
    await asyncio.wait_for(loop, 5)
    await sup.remote.aclose()


async def test_claims_carry_the_wait_and_follow_each_other_after_a_full_wait(
    tmp_path: Path, outbox: Outbox
) -> None:
    async def held(body: dict[str, Any]) -> httpx.Response:
        await asyncio.sleep(body["wait"])
        return httpx.Response(204)

    recorder = Recorder(held)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=5.0, wait=0.2))
    await claim_for(sup, 0.9)
    # The last claim was held at the stop: it was cut, and its request id sent again for no state.
    *claims, collect = recorder.bodies
    assert len(claims) >= 3
    assert all(body["wait"] == 0.2 for body in claims)
    assert all(body["states"] == ["draft"] and body["supervisor"] == "box-1" for body in claims)
    assert collect == {**claims[-1], "states": [], "wait": 0}
    # After a claim that waited its time out, the next one goes at once (not after `idle`).
    assert max(recorder.gaps()) < 1.0
    assert len({body["request"] for body in claims}) == len(claims)


async def test_a_stop_cuts_a_held_claim_and_runs_what_its_request_id_was_granted(
    tmp_path: Path, outbox: Outbox
) -> None:
    async def granted_as_it_was_cut(body: dict[str, Any]) -> httpx.Response:
        if body["states"]:
            await asyncio.sleep(body["wait"])  # held: only the stop ends it
            return httpx.Response(204)
        return httpx.Response(200, json={"grants": [GRANT]})

    recorder = Recorder(granted_as_it_was_cut)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=5.0, wait=10.0))
    taken: list[object] = []
    sup._take = taken.append  # type: ignore[method-assign,assignment]  # a recorder in its place
    began = time.monotonic()
    await claim_for(sup, 0.3)
    assert time.monotonic() - began < 1.5  # not the 10 s of the held claim
    first, collect = recorder.bodies
    assert first == {
        "supervisor": "box-1", "states": ["draft"], "request": first["request"], "wait": 10.0,
        "max": 4, "checksum": sup.settings.checksum,
    }  # fmt: skip
    assert collect == {**first, "states": [], "wait": 0}
    assert taken == [GRANT]


async def test_a_stop_does_not_cut_a_claim_without_wait(tmp_path: Path, outbox: Outbox) -> None:
    async def old_and_slow(body: dict[str, Any]) -> httpx.Response:
        if "wait" in body:
            return httpx.Response(422, json={"error": "unknown field", "code": "invalid_body"})
        await asyncio.sleep(0.6)  # a slow answer, not a held claim: it brings no task later
        return httpx.Response(204)

    recorder = Recorder(old_and_slow)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=0.05, wait=10.0))
    began = time.monotonic()
    await claim_for(sup, 0.3)
    assert time.monotonic() - began >= 0.6  # the claim in flight got its answer
    # The refusal, then a claim without `wait`, and no claim for no state after it.
    assert [("wait" in body, body["states"]) for body in recorder.bodies] == [
        (True, ["draft"]),
        (False, ["draft"]),
    ]


async def test_a_control_plane_that_refuses_the_wait_gets_a_claim_each_idle_period(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def old(body: dict[str, Any]) -> httpx.Response:
        if "wait" in body:
            return httpx.Response(
                422, json={"error": "unknown field 'wait'", "code": "invalid_body"}
            )
        return httpx.Response(204)

    recorder = Recorder(old)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=0.3, wait=10.0))
    with caplog.at_level(logging.WARNING, logger="stateous.supervisor"):
        await claim_for(sup, 1.2)
    assert "wait" in recorder.bodies[0]
    assert len(recorder.bodies) >= 3
    assert all("wait" not in body for body in recorder.bodies[1:])
    assert all(gap >= 0.25 for gap in recorder.gaps())
    assert sup.long_poll is False
    refusals = [r.getMessage() for r in caplog.records if "refused a claim" in r.getMessage()]
    assert refusals == ["the control plane refused a claim: unknown field 'wait'"]


async def test_a_control_plane_that_ignores_the_wait_is_not_claimed_in_a_busy_loop(
    tmp_path: Path, outbox: Outbox
) -> None:
    async def ignores(body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(204)

    recorder = Recorder(ignores)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=0.3, wait=10.0))
    await claim_for(sup, 1.0)
    assert 2 <= len(recorder.bodies) <= 5
    assert all(gap >= 0.25 for gap in recorder.gaps())


async def test_a_grant_after_a_wait_starts_at_once_and_the_next_claim_follows(
    tmp_path: Path, outbox: Outbox
) -> None:
    grant = GRANT
    answers = iter([httpx.Response(200, json=grant)])

    async def once(body: dict[str, Any]) -> httpx.Response:
        await asyncio.sleep(0.05)
        return next(answers, httpx.Response(204))

    recorder = Recorder(once)
    sup = supervisor(tmp_path, outbox, recorder, Timings(idle=5.0, wait=0.2))
    taken: list[object] = []
    sup._take = taken.append  # type: ignore[method-assign,assignment]  # a recorder in its place
    await claim_for(sup, 0.5)
    assert taken == [grant]
    assert len(recorder.bodies) >= 2
    assert recorder.gaps()[0] < 1.0


def test_the_wait_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATEOUS_SUPERVISOR_WAIT", raising=False)
    assert Timings.from_env().wait == 10.0
    monkeypatch.setenv("STATEOUS_SUPERVISOR_WAIT", "0")
    assert Timings.from_env().wait == 0.0
