"""The supervisor's batches against control planes with and without them: claims
with `max` and their fallback, and the sender's `POST /tasks/messages` with its fallback.

The control plane here is an httpx transport standing in for other versions of the control
plane (this case only; the real routes are tested in tests/integration/supervisor/
test_batches.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor.folder import Registry, Settings
from stateous.supervisor.grant import grant_from
from stateous.supervisor.loop import Supervisor, Timings
from stateous.supervisor.outbox import Message, Outbox
from stateous.supervisor.remote import Remote
from tests.support.sending import send_settled

URL = "http://control.test"
Handler = Callable[[str, str, dict[str, Any]], Awaitable[httpx.Response]]


class Plane:
    """The requests a supervisor sent (method, path, body), each answered by `answer`."""

    def __init__(self, answer: Handler) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self._answer = answer

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append((request.method, request.url.path, body))
        return await self._answer(request.method, request.url.path, body)

    def paths(self) -> list[str]:
        """The paths requested, in order."""
        return [path for _, path, _ in self.requests]


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    """The supervisor's outbox in a temporary folder."""
    box = Outbox(tmp_path)
    yield box
    box.close()


def supervisor(tmp_path: Path, outbox: Outbox, plane: Plane, *, tasks: int = 4) -> Supervisor:
    """A supervisor of `draft` whose control plane is `plane`; no long-poll."""
    settings = Settings(folder=tmp_path, url=URL, tasks=tasks, name="box-1", checksum="sha256:0")
    timings = Timings(heartbeat=30.0, idle=0.2, max_retry=0.05, wait=0.0)
    sup = Supervisor(settings, outbox, url=URL, timings=timings)
    sup.remote = Remote(URL, transport=httpx.MockTransport(plane))
    sup.registry = Registry({"draft": (None, lambda ctx: None)})  # type: ignore[dict-item]
    return sup


def grant(task: int) -> dict[str, Any]:
    """A grant's JSON, as a claim answers it."""
    return {
        "task": task, "token": f"O-{task}", "state": "draft", "visit": 1, "attempt": 1,
        "context": {}, "memory": {}, "entered_by": {"name": "__started__"},
    }  # fmt: skip


async def claim_for(sup: Supervisor, seconds: float) -> None:
    """Run the claim loop for `seconds`, then stop it as a stop signal would."""
    loop = asyncio.create_task(sup._claim_loop())
    await asyncio.sleep(seconds)
    sup.stopping = True
    sup._stop.set()
    sup._wake.set()
    await asyncio.wait_for(loop, 5)


# --- claims ---------------------------------------------------------------------------------


async def test_a_claim_asks_for_the_free_slots_and_takes_every_grant(
    tmp_path: Path, outbox: Outbox
) -> None:
    answers = iter([httpx.Response(200, json={"grants": [grant(1), grant(2)]})])

    async def plane_answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return next(answers, httpx.Response(204))

    plane = Plane(plane_answer)
    sup = supervisor(tmp_path, outbox, plane, tasks=5)
    taken: list[object] = []

    def take(body: object) -> None:
        taken.append(body)
        if isinstance(body, dict):  # a grant in progress takes a slot
            sup.grants[body["task"]] = grant_from(body)

    sup._take = take  # type: ignore[method-assign]
    await claim_for(sup, 0.35)
    await sup.remote.aclose()
    assert taken == [grant(1), grant(2)]
    claims = [body for _, path, body in plane.requests if path == "/tasks/claim"]
    assert [body["max"] for body in claims[:2]] == [5, 3]
    assert all("wait" not in body for body in claims)


async def test_the_free_slots_are_at_most_64(tmp_path: Path, outbox: Outbox) -> None:
    async def none(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(204)

    plane = Plane(none)
    sup = supervisor(tmp_path, outbox, plane, tasks=200)
    await claim_for(sup, 0.1)
    await sup.remote.aclose()
    assert plane.requests[0][2]["max"] == 64


async def test_a_control_plane_that_refuses_max_gets_single_claims(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def old(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if "max" in body:
            return httpx.Response(
                422, json={"error": "unknown field 'max'", "code": "invalid_body"}
            )
        return (
            httpx.Response(200, json=grant(2)) if len(plane.requests) == 2 else httpx.Response(204)
        )

    plane = Plane(old)
    sup = supervisor(tmp_path, outbox, plane)
    taken: list[object] = []
    sup._take = taken.append  # type: ignore[method-assign,assignment]
    with caplog.at_level(logging.WARNING, logger="stateous.supervisor"):
        await claim_for(sup, 0.3)
    await sup.remote.aclose()
    bodies = [body for _, _, body in plane.requests]
    assert bodies[0]["max"] == 4
    assert len(bodies) >= 2
    assert all("max" not in body for body in bodies[1:])
    assert sup.claim_several is False
    assert taken[0] == grant(2)
    refusals = [r.getMessage() for r in caplog.records if "refused a claim" in r.getMessage()]
    assert refusals == ["the control plane refused a claim: unknown field 'max'"]


async def test_a_control_plane_that_ignores_max_answers_one_grant_which_is_taken(
    tmp_path: Path, outbox: Outbox
) -> None:
    answers = iter([httpx.Response(200, json=grant(9))])

    async def base(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return next(answers, httpx.Response(204))

    plane = Plane(base)
    sup = supervisor(tmp_path, outbox, plane)
    taken: list[object] = []
    sup._take = taken.append  # type: ignore[method-assign,assignment]
    await claim_for(sup, 0.1)
    await sup.remote.aclose()
    assert taken == [grant(9)]
    assert sup.claim_several is True


async def test_grants_that_are_not_a_list_are_a_refused_claim(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    answers = iter([httpx.Response(200, json={"grants": "none"})])

    async def odd(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return next(answers, httpx.Response(204))

    plane = Plane(odd)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.WARNING, logger="stateous.supervisor"):
        await claim_for(sup, 0.1)
    await sup.remote.aclose()
    assert sup.grants == {}
    assert [r.getMessage() for r in caplog.records] == [
        "the control plane refused a claim: the claimed task is not valid: "
        "'grants' is not a list of grants"
    ]


# --- messages -------------------------------------------------------------------------------


def messages_of(outbox: Outbox) -> list[Message]:
    """Two grants' messages: task 1 a note, a memory write and its report; task 2 a report."""
    return [
        outbox.add(1, 1, "O-1", "note", {"text": "looking"}),
        outbox.add(2, 1, "O-2", "report", {"kind": "waiting"}),
        outbox.add(1, 1, "O-1", "memory", {"key": "k", "value": 3}),
        outbox.add(1, 1, "O-1", "report", {"kind": "event", "event": "submitted"}),
    ]


BATCH = [
    {"type": "note", "task": 1, "body": {"text": "looking", "attempt": 1}},
    {"type": "report", "task": 2, "body": {"kind": "waiting", "attempt": 1, "supervisor": "box-1"}},
    {"type": "memory", "task": 1, "body": {"key": "k", "value": 3, "attempt": 1}},
    {
        "type": "report", "task": 1,
        "body": {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": "box-1"},
    },
]  # fmt: skip
TOKEN = {"token": "O-1", "state": "review", "status": "active", "visit": 1, "context": {}}


def accepted(kind: str) -> dict[str, Any]:
    """A message's answer when its single route accepts it."""
    return {"status": 200, "body": TOKEN} if kind == "report" else {"status": 204, "body": None}


async def test_ready_messages_of_every_grant_go_in_one_request_in_order(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def plane_answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(
            200, json={"answers": [accepted(m["type"]) for m in body["messages"]]}
        )

    plane = Plane(plane_answer)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.DEBUG, logger="stateous.supervisor"):
        assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    assert plane.requests == [
        ("POST", "/tasks/messages", {"supervisor": "box-1", "messages": BATCH})
    ]
    assert outbox.pending() == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "task 2 of O-2: reported waiting"),
        (logging.DEBUG, "task 1 of O-1: reported submitted"),
    ]
    assert sup.tally.take() == "ran 2 tasks (2 done, 0 failed) in the last minute"


async def test_a_refused_message_in_the_middle_leaves_alone_and_the_rest_are_applied(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    refused = {"status": 409, "body": {"error": "task 1 is not held", "code": "task_not_held"}}

    async def plane_answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        answers = [accepted(m["type"]) for m in body["messages"]]
        answers[2] = refused  # the memory write
        return httpx.Response(200, json={"answers": answers})

    plane = Plane(plane_answer)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.DEBUG, logger="stateous.supervisor"):
        assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/messages"]
    assert outbox.pending() == []
    assert [r.getMessage() for r in caplog.records] == [
        "task 1: the control plane refused a memory: task 1 is not held",
        "task 2 of O-2: reported waiting",
        "task 1 of O-1: reported submitted",
    ]


async def test_a_batch_without_answer_is_sent_again_whole(tmp_path: Path, outbox: Outbox) -> None:
    async def busy_once(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if len(plane.requests) == 1:
            return httpx.Response(503, json={"error": "busy", "code": "database_busy"})
        return httpx.Response(
            200, json={"answers": [accepted(m["type"]) for m in body["messages"]]}
        )

    plane = Plane(busy_once)
    sup = supervisor(tmp_path, outbox, plane)
    assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/messages", "/tasks/messages"]
    assert plane.requests[0] == plane.requests[1]
    assert outbox.pending() == []


async def test_a_message_whose_own_answer_is_no_answer_is_sent_again_alone(
    tmp_path: Path, outbox: Outbox
) -> None:
    async def plane_answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if path != "/tasks/messages":
            return httpx.Response(204)
        answers = [accepted(m["type"]) for m in body["messages"]]
        answers[0] = {"status": 503, "body": {"error": "busy", "code": "database_busy"}}
        return httpx.Response(200, json={"answers": answers})

    plane = Plane(plane_answer)
    sup = supervisor(tmp_path, outbox, plane)
    assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/messages", "/tasks/1/note"]
    assert plane.requests[1][2] == {"text": "looking", "attempt": 1}
    assert outbox.pending() == []


@pytest.mark.parametrize("status", [404, 405])
async def test_a_control_plane_without_the_route_gets_single_messages(
    tmp_path: Path, outbox: Outbox, status: int
) -> None:
    async def old(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if path == "/tasks/messages":
            return httpx.Response(status, json={"error": "no such route", "code": "not_found"})
        if path.endswith("/report"):
            return httpx.Response(200, json=TOKEN)
        return httpx.Response(204)

    plane = Plane(old)
    sup = supervisor(tmp_path, outbox, plane)
    assert await send_settled(sup.sender, messages_of(outbox)) == set()
    assert sup.sender.batching is False
    assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    singles = [
        ("POST", "/tasks/1/note", {"text": "looking", "attempt": 1}),
        ("POST", "/tasks/2/report", {"kind": "waiting", "attempt": 1, "supervisor": "box-1"}),
        ("PUT", "/tasks/1/memory", {"key": "k", "value": 3, "attempt": 1}),
        (
            "POST",
            "/tasks/1/report",
            {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": "box-1"},
        ),
    ]
    assert plane.requests[:1] == [
        ("POST", "/tasks/messages", {"supervisor": "box-1", "messages": BATCH})
    ]
    assert plane.requests[1:] == singles * 2
    assert outbox.pending() == []


async def test_a_batch_without_answer_at_a_stop_stays_in_the_outbox(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(503)

    plane = Plane(down)
    sup = supervisor(tmp_path, outbox, plane)
    sup.stopping = True
    sent = messages_of(outbox)
    with caplog.at_level(logging.WARNING, logger="stateous.supervisor"):
        assert await send_settled(sup.sender, sent) == {1, 2}
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/messages"]
    assert outbox.pending() == sent
    assert [r.getMessage() for r in caplog.records] == [
        "task 1 of O-1: the control plane cannot be reached; the note stays in the outbox "
        "for the next start",
        "task 2 of O-2: the control plane cannot be reached; the report stays in the outbox "
        "for the next start",
    ]


async def test_the_sender_sends_what_grants_queued_meanwhile_together(
    tmp_path: Path, outbox: Outbox
) -> None:
    """While one message is on its way, the ones queued behind it go in one request."""
    gate = asyncio.Event()

    async def slow(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if path == "/tasks/1/note":
            await gate.wait()
            return httpx.Response(204)
        return httpx.Response(
            200, json={"answers": [accepted(m["type"]) for m in body["messages"]]}
        )

    plane = Plane(slow)
    sup = supervisor(tmp_path, outbox, plane)
    sup.bind()
    one, two = grant_from(grant(1)), grant_from(grant(2))
    sup.grants.update({1: one, 2: two})
    sender = asyncio.create_task(sup.sender.run())
    sup.enqueue(one, outbox.add(1, 1, "O-1", "note", {"text": "first"}))
    await asyncio.sleep(0.05)
    sup.enqueue(one, outbox.add(1, 1, "O-1", "note", {"text": "second"}))
    sup.enqueue(two, outbox.add(2, 1, "O-2", "report", {"kind": "waiting"}))
    sup.enqueue(one, outbox.add(1, 1, "O-1", "report", {"kind": "waiting"}))
    assert not one.drained.is_set()
    gate.set()
    await asyncio.wait_for(one.drained.wait(), 5)
    await asyncio.wait_for(two.drained.wait(), 5)
    await sup.sender.removed()
    sender.cancel()
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/1/note", "/tasks/messages"]
    assert [(m["type"], m["task"]) for m in plane.requests[1][2]["messages"]] == [
        ("note", 1),
        ("report", 1),
        ("report", 2),
    ]
    assert outbox.pending() == []


async def test_the_messages_of_a_lost_grant_are_not_sent(tmp_path: Path, outbox: Outbox) -> None:
    async def never(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        raise AssertionError(f"nothing is sent, but {path} was")

    plane = Plane(never)
    sup = supervisor(tmp_path, outbox, plane)
    sup.bind()
    one = grant_from(grant(1))
    sup.grants[1] = one
    sup.enqueue(one, outbox.add(1, 1, "O-1", "note", {"text": "first"}))
    sup.lose(one)
    sender = asyncio.create_task(sup.sender.run())
    await asyncio.wait_for(one.drained.wait(), 5)
    await asyncio.sleep(0.05)
    sender.cancel()
    await sup.remote.aclose()
    assert plane.requests == []


async def test_a_report_refused_in_a_batch_is_followed_by_its_failure_report(
    tmp_path: Path, outbox: Outbox, caplog: pytest.LogCaptureFixture
) -> None:
    invalid = {"status": 422, "body": {"error": "the context is bad", "code": "invalid_context"}}

    async def plane_answer(method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        if path == "/tasks/1/report":
            return httpx.Response(200, json=TOKEN)
        answers = [accepted(m["type"]) for m in body["messages"]]
        answers[3] = invalid  # the report of task 1
        return httpx.Response(200, json={"answers": answers})

    plane = Plane(plane_answer)
    sup = supervisor(tmp_path, outbox, plane)
    with caplog.at_level(logging.DEBUG, logger="stateous.supervisor"):
        assert await send_settled(sup.sender, messages_of(outbox)) == set()
    await sup.remote.aclose()
    assert plane.paths() == ["/tasks/messages", "/tasks/1/report"]
    assert plane.requests[1][2] == {
        "kind": "failed",
        "error": "the control plane refused the report: the context is bad",
        "context": None,
        "schedules": [],
        "attempt": 1,
        "supervisor": "box-1",
    }
    assert outbox.pending() == []
    # A grant's lines keep their order; an accepted report's line follows its removal from the
    # outbox, which runs beside the refused report's handling.
    assert [r.getMessage() for r in caplog.records] == [
        "task 1 of O-1: the control plane refused the report: the context is bad",
        "task 2 of O-2: reported waiting",
        "task 1 of O-1: reported failed",
    ]
    # The refused report is not counted; the failure report that followed it is.
    assert sup.tally.take() == "ran 2 tasks (1 done, 1 failed) in the last minute"
