"""What counts as an answer of the control plane, and the log text of no answer."""

from __future__ import annotations

import httpx
import pytest

from stateous.supervisor.remote import NoAnswer, Remote, UnreadableAnswer

URL = "http://127.0.0.1:8080"


def remote(status: int, body: bytes, content_type: str = "application/json") -> Remote:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": content_type})

    return Remote(URL, transport=httpx.MockTransport(answer))


async def no_answer(client: Remote) -> str:
    with pytest.raises(NoAnswer) as caught:
        await client.call("POST", "/tasks/claim", {})
    await client.aclose()
    return caught.value.text


async def test_answers_and_refusals() -> None:
    ok = await remote(200, b'{"lost": []}').call("POST", "/tasks/heartbeat", {})
    assert (ok.ok, ok.body) == (True, {"lost": []})
    none = await remote(204, b"").call("POST", "/tasks/claim", {})
    assert (none.status, none.body) == (204, None)
    refused = await remote(409, b'{"error": "task 7 is done", "code": "task_not_held"}').call(
        "POST", "/tasks/7/report", {}
    )
    assert (refused.ok, refused.code, refused.sentence) == (
        False,
        "task_not_held",
        "task 7 is done",
    )
    with pytest.raises(UnreadableAnswer):
        await remote(404, b"<html>no</html>", "text/html").call("GET", "/health")


async def test_what_is_no_answer() -> None:
    assert await no_answer(remote(502, b"")) == (
        f"cannot reach the control plane at {URL} (it answered 502)"
    )
    busy = b'{"error": "the database cannot take this request now; try again", "code": "database_busy"}'
    assert await no_answer(remote(503, busy)) == (
        f"cannot reach the control plane at {URL} (it answered 503, database_busy: the database "
        "cannot take this request now; try again)"
    )
    gone = b'{"error": "another control plane took this database", "code": "not_serving"}'
    assert await no_answer(remote(503, gone)) == (
        f"the control plane at {URL} does not serve its database now (not_serving): another "
        "control plane took this database"
    )

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("All connection attempts failed", request=request)

    assert await no_answer(Remote(URL, transport=httpx.MockTransport(refuse))) == (
        f"cannot reach the control plane at {URL} (All connection attempts failed)"
    )
