"""A TCP proxy on loopback that holds one chosen HTTP request until the test lets it go.

It puts a client at a known point: the Nth request whose bytes hold `request` (such as
`b"POST /prune "`) is kept from the control plane, so the client waits for its answer; `held`
is set then. The test acts (sends Ctrl-C), then calls `release()` to forward the request, or
`close()` to cut every connection without forwarding it.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field


@dataclass
class HoldingProxy:
    """Forwards 127.0.0.1:<port> to the upstream port, holding the `nth` `request`."""

    upstream: int
    request: bytes
    nth: int
    port: int = 0
    held: threading.Event = field(default_factory=threading.Event)
    seen: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _stop: asyncio.Event | None = None
    _go: asyncio.Event | None = None
    _thread: threading.Thread | None = None
    _open: list[asyncio.StreamWriter] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The proxy's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HoldingProxy:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_held(self, timeout: float = 60.0) -> None:
        """Wait until the chosen request is held (AssertionError after `timeout`)."""
        assert self.held.wait(timeout), f"request {self.nth} of {self.request!r} never came"

    def release(self) -> None:
        """Forward the held request (and everything after it)."""
        if self._loop is not None and self._go is not None:
            self._loop.call_soon_threadsafe(self._go.set)

    def close(self) -> None:
        """Stop listening and cut every connection; a request still held is never sent."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop, self._go = asyncio.Event(), asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            for writer in self._open:
                writer.transport.abort()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._open.append(client_w)
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            client_w.close()
            return
        self._open.append(up_w)
        await asyncio.gather(
            self._pipe(client_r, up_w, watch=True),
            self._pipe(up_r, client_w, watch=False),
            return_exceptions=True,
        )

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, watch: bool
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if watch and self.request in chunk:
                    self.seen += 1
                    if self.seen == self.nth:
                        self.held.set()
                        assert self._go is not None
                        await self._go.wait()
                writer.write(chunk)
                await writer.drain()
        finally:
            writer.close()
