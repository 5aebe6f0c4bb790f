"""uvicorn's HTTP protocol with three changes: the refusal envelope for requests that are not HTTP
at all, an answer's writes joined into one `send`, and a lingering close.

The parser refuses a request that is not HTTP before the application sees it; it still gets
the JSON refusal envelope, and a `Content-Length` of more than 18 digits is answered as too
large (413).

A lingering close: when the server closes a connection while the client may still be sending
its request's body (a `413` to a client that asked for `Connection: close`, or a request the
parser refused), closing at once would make the kernel answer the unread bytes with a reset,
and a client still writing would see a broken pipe instead of the answer. Here the answer is
sent, the server stops writing (a half-close), and what the client still sends is read and
dropped until it closes its side, for at most `LINGER_SECONDS` and `LINGER_BYTES`; then the
connection is closed. A connection whose request was read whole closes at once, as before.

Everything here leans on uvicorn's protocol classes, which are not its public API:
tests/unit/test_private_names.py fails, naming the name, when an upgrade changes one.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from stateous.control.api.edge import TOO_LARGE, envelope_bytes

LONG_LENGTH = re.compile(rb"(?im)^content-length[ \t]*:[ \t]*\d{19,}")

#: How long, and how many bytes, a lingering close reads and drops before it closes.
LINGER_SECONDS = 5.0
LINGER_BYTES = 16 * 1_048_576


def refusal_bytes(status: int, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 answer with the refusal envelope, closing the connection."""
    body = envelope_bytes("bad_request", message)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


class _Corked:
    """A transport whose writes in one turn of the event loop leave in one `send`, and whose
    `close` is the protocol's (a lingering close when the request's body may still come).

    uvicorn writes an answer's head and its body separately: two system calls, made while the
    event loop holds the GIL (a fifth of `serve`'s event loop under load), and two TCP segments
    for the client to read. Here they are joined and written once the current callback ends.
    Everything else is the transport's own.
    """

    __slots__ = ("_closed", "_loop", "_parts", "_protocol", "_transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, protocol: _LingerMixin
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._protocol = protocol
        self._parts: list[bytes] = []
        self._closed = False

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
        """Write what waits, then close: the first time as the protocol decides (at once, or
        lingering), a second time at once (uvicorn's shutdown, say)."""
        self._flush()
        if self._closed:
            self._transport.close()
            return
        self._closed = True
        self._protocol.close_connection(self._transport)

    def is_closing(self) -> bool:
        """Closed or closing (a lingering close counts: nothing more is written)."""
        return self._closed or bool(self._transport.is_closing())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _LingerMixin:
    """The lingering close; and the last chunk received, to tell an oversized `Content-Length`
    from other errors of the parser."""

    cycle: Any
    _last_chunk: bytes = b""
    _refused = False  # the parser refused the request: whatever follows it is unread
    _draining = False  # the answer is sent and the server stopped writing: input is dropped
    _drained = 0
    _linger_timer: asyncio.TimerHandle | None = None

    def _remember(self, data: bytes) -> None:
        self._last_chunk = data[:65536]

    def _client_may_send(self) -> bool:
        """Whether the client may still be sending as the server closes: the parser refused its
        request, or its request's body has not all arrived and the answer ends the connection
        (uvicorn's `keep_alive` is false; a shutdown or an idle timeout leaves it true)."""
        cycle = getattr(self, "cycle", None)
        if self._refused:
            return True
        return cycle is not None and not cycle.keep_alive and bool(cycle.more_body)

    def close_connection(self, transport: Any) -> None:
        """Close now, unless the client may still be sending: then linger (see the module)."""
        if not self._client_may_send() or transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        self._draining = True
        transport.write_eof()  # after what waits to be written: the client reads its answer
        transport.resume_reading()  # uvicorn may have paused reading a body nobody reads now
        self._linger_timer = asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)

    def _drain(self, transport: Any, data: bytes) -> None:
        """Drop what a lingering connection receives; past `LINGER_BYTES`, close."""
        self._drained += len(data)
        if self._drained > LINGER_BYTES:
            transport.close()

    def _end_linger(self) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None


def protocol_class() -> type[Any]:
    """The HTTP protocol for uvicorn: httptools where installed, h11 otherwise."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base: type[Any] = HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol

    class EnvelopeProtocol(_LingerMixin, base):  # type: ignore[misc]  # the base is chosen at run time
        _raw: Any = None

        def connection_made(self, transport: Any) -> None:
            self._raw = transport
            super().connection_made(_Corked(transport, asyncio.get_running_loop(), self))

        def data_received(self, data: bytes) -> None:
            if self._draining:
                self._drain(self._raw, data)
                return
            self._remember(data)
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._end_linger()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            """Answer the refusal envelope instead of uvicorn's plain text, then linger."""
            if LONG_LENGTH.search(self._last_chunk):
                answer = refusal_bytes(413, "Content Too Large", TOO_LARGE)
            else:
                answer = refusal_bytes(400, "Bad Request", "the request is not valid HTTP")
            self._refused = True
            self.transport.write(answer)
            self.transport.close()

    return EnvelopeProtocol
