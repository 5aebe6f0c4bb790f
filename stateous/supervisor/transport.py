"""A lean HTTP/1.1 transport under the supervisor's httpx client.

The supervisor's calls go through `httpx.AsyncClient` as every client of the project does, but
httpx's default transport (httpcore, h11 and anyio's streams) cost 0.7 ms of CPU a call, against
0.1 ms for httpx's own layer (a request to `MockTransport`) and 0.05 ms for the bytes on asyncio's
streams (`bench/http_client.py`). A token is four of the supervisor's calls on the path from
start to completed, and under load they were a third of `supervise`'s CPU. This transport speaks
the HTTP/1.1 that a control plane answers: one request at a time on a kept-alive connection, a
body by `content-length` or chunked, `connection: close` honoured. An `https://` URL goes to
httpx's own transport, unchanged.

Failures are httpx's exceptions, as httpcore raises them: `ConnectError` and `ConnectTimeout`
(the request surely did nothing), `WriteError`, `ReadError`, `ReadTimeout` and
`RemoteProtocolError` (it may have). A connection whose call failed or was cancelled is closed,
never reused; an idle one is used again only if the server has not closed it and it has been
idle for less than `KEEPALIVE_SECONDS` (under uvicorn's 5 s, after which the server closes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx

__all__ = ["KEEPALIVE_SECONDS", "LeanTransport"]

#: How long an idle connection is kept for the next call (the server's own limit is 5 s).
KEEPALIVE_SECONDS = 4.0

#: The most idle connections kept per host (the supervisor makes a few calls at a time).
IDLE_MOST = 8

#: The longest head of an answer (status line and headers) read.
HEAD_MOST = 64 * 1024

_NO_BODY_STATUSES = frozenset({204, 304})
_SKIPPED = frozenset({b"accept-encoding", b"connection"})


class _Connection:
    """One kept-alive connection: its streams and when it was last idle."""

    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        """Whether it may carry the next request (not closed by the server, not idle long)."""
        return (
            not self.reader.at_eof()
            and not self.writer.is_closing()
            and now - self.idle_since < KEEPALIVE_SECONDS
        )

    def close(self) -> None:
        """Close it (its call failed, or the server asked)."""
        with contextlib.suppress(Exception):
            self.writer.close()


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 on asyncio's streams for `http://`; httpx's own transport for the rest."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._other: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` and read its whole answer."""
        url = request.url
        if url.scheme != "http":
            if self._other is None:
                self._other = httpx.AsyncHTTPTransport()
            return await self._other.handle_async_request(request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        key = (url.host, url.port or 80)
        connection = self._take(key) or await _connect(request, key, timeouts.get("connect"))
        try:
            sent = _on_the_wire(request, await request.aread())
            try:
                connection.writer.write(sent)
            except OSError as exc:
                raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
            async with _reading(request, timeouts.get("read")):
                status, headers, content, keep = await _answer(connection.reader, request)
        except BaseException:
            connection.close()
            raise
        if keep:
            self._put(key, connection)
        else:
            connection.close()
        return httpx.Response(
            status,
            headers=headers,
            content=content,
            extensions={"http_version": b"HTTP/1.1"},
            request=request,
        )

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def _put(self, key: tuple[str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) >= IDLE_MOST:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def aclose(self) -> None:
        """Close every idle connection (and httpx's own transport, if it was used)."""
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        if self._other is not None:
            await self._other.aclose()


async def _connect(
    request: httpx.Request, key: tuple[str, int], timeout: float | None
) -> _Connection:
    host, port = key
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=HEAD_MOST)
    except TimeoutError as exc:
        raise httpx.ConnectTimeout("timed out connecting", request=request) from exc
    except OSError as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
    return _Connection(reader, writer)


def _on_the_wire(request: httpx.Request, body: bytes) -> bytes:
    """The request's line, headers and body, as they go on the wire."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    lines.extend(b"%s: %s" % pair for pair in _headers(request.headers.raw))
    if body and "content-length" not in request.headers:
        lines.append(b"content-length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _headers(raw: list[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
    # No compressed answers (the body is passed on as it came), and keep-alive is HTTP/1.1's own.
    for name, value in raw:
        if name.lower() not in _SKIPPED:
            yield name, value


@contextlib.asynccontextmanager
async def _reading(request: httpx.Request, timeout: float | None) -> Any:
    """Read within `timeout`; a lost connection is httpx's ReadError, a malformed answer its
    RemoteProtocolError."""
    try:
        async with asyncio.timeout(timeout):
            yield
    except TimeoutError as exc:
        raise httpx.ReadTimeout("timed out reading the answer", request=request) from exc
    except asyncio.IncompleteReadError as exc:
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        ) from exc
    except (asyncio.LimitOverrunError, ValueError) as exc:
        raise httpx.RemoteProtocolError(f"malformed answer: {exc}", request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


async def _answer(
    reader: asyncio.StreamReader, request: httpx.Request
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """(status, headers, body, whether the connection may be kept) of one answer."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        status, version, headers = _parse_head(head)
        if not 100 <= status < 200:  # `100 Continue` and the like come before the answer
            break
    fields = {name.lower(): value for name, value in headers}
    keep = version == b"HTTP/1.1" and fields.get(b"connection", b"").lower() != b"close"
    if request.method == "HEAD" or status in _NO_BODY_STATUSES:
        return status, headers, b"", keep
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        return status, headers, await _chunked(reader), keep
    length = fields.get(b"content-length")
    if length is not None:
        return status, headers, await reader.readexactly(int(length)), keep
    return status, headers, await reader.read(), False  # to the end: the server closes


def _parse_head(head: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    lines = head[:-4].split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    if not version.startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
    status = int(rest[:3])
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            raise ValueError(f"a header line without a colon: {line[:60]!r}")
        headers.append((name.strip(), value.strip()))
    return status, version, headers


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            break
        parts.append((await reader.readexactly(size + 2))[:-2])
    while await reader.readuntil(b"\r\n") != b"\r\n":  # the trailers
        pass
    return b"".join(parts)
