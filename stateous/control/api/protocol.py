"""uvicorn's HTTP protocol with the refusal envelope for requests that are not HTTP at all.

The parser refuses such a request before the application sees it; spec 20 §1.7 still wants a
JSON refusal, and a `Content-Length` of more than 18 digits answered as too large (413).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

LONG_LENGTH = re.compile(rb"(?im)^content-length[ \t]*:[ \t]*\d{19,}")
TOO_LARGE = "the body is larger than 1 MiB, the most this API reads"


def refusal_bytes(status: int, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 answer with the refusal envelope, closing the connection."""
    body = json.dumps({"error": message, "code": "bad_request"}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


class _Corked:
    """A transport whose writes in one turn of the event loop leave in one `send`.

    uvicorn writes an answer's head and its body separately: two system calls, made while the
    event loop holds the GIL (a fifth of `serve`'s event loop under load), and two TCP segments
    for the client to read. Here they are joined and written once the current callback ends.
    Everything else is the transport's own; `close` writes what is waiting first.
    """

    __slots__ = ("_loop", "_parts", "_transport")

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        """Queue `data`; the first write of a turn schedules the one `send`."""
        if not self._parts:
            self._loop.call_soon(self._flush)
        self._parts.append(data)

    def _flush(self) -> None:
        parts, self._parts = self._parts, []
        if parts and not self._transport.is_closing():
            self._transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:
        """Write what waits, then close."""
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _EnvelopeMixin:
    """Remembers the last chunk received, to tell an oversized `Content-Length` from other errors."""

    transport: Any
    _last_chunk: bytes = b""

    def _remember(self, data: bytes) -> None:
        self._last_chunk = data[:65536]

    def send_400_response(self, msg: str) -> None:
        """Answer the refusal envelope instead of uvicorn's plain text."""
        if LONG_LENGTH.search(self._last_chunk):
            answer = refusal_bytes(413, "Content Too Large", TOO_LARGE)
        else:
            answer = refusal_bytes(400, "Bad Request", "the request is not valid HTTP")
        self.transport.write(answer)
        self.transport.close()


def protocol_class() -> type[Any]:
    """The HTTP protocol for uvicorn: httptools where installed, h11 otherwise."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base: type[Any] = HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol

    class EnvelopeProtocol(_EnvelopeMixin, base):  # type: ignore[misc]  # the base is chosen at run time
        def connection_made(self, transport: Any) -> None:
            super().connection_made(_Corked(transport, asyncio.get_running_loop()))

        def data_received(self, data: bytes) -> None:
            self._remember(data)
            super().data_received(data)

    return EnvelopeProtocol
