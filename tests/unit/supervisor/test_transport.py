"""The supervisor's lean HTTP/1.1 transport under httpx, against a real server on a socket that
answers exactly the bytes each test writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from stateous.supervisor import transport as lean
from stateous.supervisor.transport import LeanTransport

# One answer: the bytes to write once a whole request has come (None: close without answering).
Answer = bytes | None
Script = Callable[[int, bytes], Answer]  # (the request's number, the request) -> the answer


def answer(status: str, body: bytes = b"", *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Server:
    """A socket server: counts connections, keeps the requests, answers by `script`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.url = ""

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = self.script(len(self.requests), request)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower() or b"x-test-close: 1" in reply:
                    break  # the answer asked for it, or the test closes after it
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def run(script: Script, calls: Callable[[httpx.AsyncClient, Server], Awaitable[Any]]) -> Any:
    async def scenario() -> Any:
        async with Server(script) as server:
            client = httpx.AsyncClient(transport=LeanTransport(), timeout=5, trust_env=False)
            async with client:
                return await calls(client, server)

    return asyncio.run(scenario())


def test_a_post_with_json_and_its_answer() -> None:
    body = json.dumps({"task": 7}).encode()

    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[Any, ...]:
        response = await client.post(
            server.url + "/tasks/claim?x=1", json={"a": 1}, headers={"authorization": "Bearer t"}
        )
        return response.status_code, response.json(), response.headers["content-type"], server

    status, parsed, kind, server = run(
        lambda n, r: answer("200 OK", body, "content-type: application/json"), calls
    )
    assert (status, parsed, kind) == (200, {"task": 7}, "application/json")
    head, _, sent = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /tasks/claim?x=1 HTTP/1.1"
    assert b"authorization: Bearer t" in lines
    assert b"Content-Length: 7" in lines
    assert not any(line.lower().startswith(b"accept-encoding") for line in lines)
    assert json.loads(sent) == {"a": 1}


def test_calls_one_after_another_share_one_connection() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[list[int], int]:
        codes = [(await client.post(server.url + "/x", json={})).status_code for _ in range(5)]
        return codes, server.connections

    codes, connections = run(lambda n, r: answer("204 No Content"), calls)
    assert (codes, connections) == ([204] * 5, 1)


def test_calls_at_once_take_a_connection_each_and_keep_them() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[int, int]:
        await asyncio.gather(*(client.get(server.url + "/x") for _ in range(3)))
        first = server.connections
        await asyncio.gather(*(client.get(server.url + "/x") for _ in range(3)))
        return first, server.connections

    assert run(lambda n, r: answer("200 OK", b"{}"), calls) == (3, 3)


def test_a_chunked_body_and_a_closing_answer() -> None:
    chunked = answer(
        "200 OK",
        b'4\r\n{"a"\r\n3;ext=1\r\n: 1\r\n1\r\n}\r\n0\r\nx-trailer: 1\r\n\r\n',
        "transfer-encoding: chunked",
    )
    replies = {1: chunked, 2: answer("200 OK", b"[]", "connection: close"), 3: answer("200 OK")}

    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[Any, ...]:
        first = (await client.get(server.url + "/a")).json()
        second = (await client.get(server.url + "/b")).json()
        third = (await client.get(server.url + "/c")).status_code
        return first, second, third, server.connections

    # The closing answer ends its connection: the third call opens another.
    assert run(lambda n, r: replies[n], calls) == ({"a": 1}, [], 200, 2)


def test_an_answer_without_a_length_is_read_to_the_end_of_the_connection() -> None:
    raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-test-close: 1\r\n\r\nall of it"
    replies = {1: raw, 2: answer("200 OK", b"next")}

    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[Any, ...]:
        first = (await client.get(server.url + "/a")).text
        return first, (await client.get(server.url + "/b")).text, server.connections

    assert run(lambda n, r: replies[n], calls) == ("all of it", "next", 2)


def test_a_head_answer_and_a_no_content_answer_have_no_body() -> None:
    replies = {1: answer("204 No Content"), 2: answer("200 OK", b"after")}

    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[Any, ...]:
        first = await client.post(server.url + "/a", json={})
        second = await client.get(server.url + "/b")
        return first.content, second.content, server.connections

    assert run(lambda n, r: replies[n], calls) == (b"", b"after", 1)


def test_an_informational_answer_before_the_answer_is_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\n" + answer("201 Created", b"{}")

    async def calls(client: httpx.AsyncClient, server: Server) -> int:
        return (await client.post(server.url + "/a", json={})).status_code

    assert run(lambda n, r: reply, calls) == 201


def test_a_server_that_hangs_up_without_answering() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> str:
        with pytest.raises(httpx.RemoteProtocolError) as raised:
            await client.post(server.url + "/a", json={})
        return str(raised.value)

    assert run(lambda n, r: None, calls) == "Server disconnected without sending a response."


def test_a_malformed_answer_is_a_protocol_error() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> str:
        with pytest.raises(httpx.RemoteProtocolError) as raised:
            await client.get(server.url + "/a")
        return str(raised.value)

    assert run(lambda n, r: b"SPDY/3 200 OK\r\n\r\n", calls).startswith("malformed answer: ")


def test_no_server_is_a_connect_error() -> None:
    async def scenario() -> None:
        async with Server(lambda n, r: None) as server:
            url = server.url
        # The server is closed: nothing listens on its port any more.
        async with httpx.AsyncClient(transport=LeanTransport(), trust_env=False) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(url + "/a")

    asyncio.run(scenario())


def test_a_slow_answer_is_a_read_timeout_and_its_connection_is_not_reused() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> int:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(server.url + "/slow", timeout=0.2)
        await client.get(server.url + "/fast")
        return server.connections

    def script(n: int, r: bytes) -> Answer:
        return b"" if n == 1 else answer("200 OK")  # the first is never answered

    assert run(script, calls) == 2


def test_a_cancelled_call_closes_its_connection() -> None:
    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[int, int]:
        waiting = asyncio.ensure_future(client.get(server.url + "/long-poll"))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        # Its answer comes late; the next call must not read it as its own.
        code = (await client.get(server.url + "/next")).status_code
        return code, server.connections

    def script(n: int, r: bytes) -> Answer:
        return b"" if n == 1 else answer("202 Accepted")

    assert run(script, calls) == (202, 2)


def test_a_connection_the_server_closed_while_idle_is_not_used() -> None:
    """As uvicorn closes a kept-alive connection that sat idle: the answer did not say so."""
    replies = {1: answer("200 OK", b"", "x-test-close: 1"), 2: answer("201 Created")}

    async def calls(client: httpx.AsyncClient, server: Server) -> tuple[int, int]:
        await client.get(server.url + "/a")
        await asyncio.sleep(0.1)  # the server closed it meanwhile
        code = (await client.get(server.url + "/b")).status_code
        return code, server.connections

    assert run(lambda n, r: replies[n], calls) == (201, 2)


def test_a_connection_idle_for_long_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lean, "KEEPALIVE_SECONDS", 0.05)

    async def calls(client: httpx.AsyncClient, server: Server) -> int:
        await client.get(server.url + "/a")
        await asyncio.sleep(0.1)
        await client.get(server.url + "/b")
        return server.connections

    assert run(lambda n, r: answer("200 OK"), calls) == 2


def test_an_https_url_goes_to_httpx_own_transport() -> None:
    async def scenario() -> None:
        async with httpx.AsyncClient(transport=LeanTransport(), trust_env=False) as client:
            # Nothing listens on port 1: httpx's own transport fails to connect.
            with pytest.raises(httpx.ConnectError):
                await client.get("https://127.0.0.1:1/a", timeout=2)

    asyncio.run(scenario())
