"""An answer's head and body leave in one `send` (`protocol._Corked`), written once the
current turn of the event loop ends; `close` writes what waits first. The transport here
records each write, as the socket's `send` calls would see them."""

from __future__ import annotations

import asyncio
from typing import Any

from stateous.control.api.protocol import _Corked, _LingerMixin


class Recording:
    """A transport that keeps each write (one `send` each) and whether it was closed."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return {"peername": ("127.0.0.1", 1)}.get(name)


async def _corked(close: bool, *parts: bytes) -> tuple[list[bytes], list[bytes], Recording]:
    transport = Recording()
    # A protocol whose client sends nothing more: its close is at once, not lingering.
    corked = _Corked(transport, asyncio.get_running_loop(), _LingerMixin())
    for part in parts:
        corked.write(part)
    before = list(transport.sent)  # nothing is written during the turn that writes
    if close:
        corked.close()
    await asyncio.sleep(0)
    return before, transport.sent, transport


def test_writes_of_one_turn_leave_in_one_send_after_it() -> None:
    head, body = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n", b"{}"
    before, sent, transport = asyncio.run(_corked(False, head, body))
    assert (before, sent, transport.closed) == ([], [head + body], False)


def test_close_writes_what_waits_then_closes() -> None:
    answer = b"HTTP/1.1 400 Bad Request\r\n\r\n"
    before, sent, transport = asyncio.run(_corked(True, answer))
    assert (before, sent, transport.closed) == ([], [answer], True)


def test_everything_else_is_the_transports_own() -> None:
    async def peer() -> Any:
        corked = _Corked(Recording(), asyncio.get_running_loop(), _LingerMixin())
        return corked.get_extra_info("peername")

    assert asyncio.run(peer()) == ("127.0.0.1", 1)
