"""A TCP proxy on loopback that drops, delays and cuts connections at random (asyncio, in a thread)."""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import dataclass, field


@dataclass
class ChaosProxy:
    """Forwards 127.0.0.1:<port> to the upstream port; each connection and chunk may meet a fault.

    `drop`: a new connection is closed at once; `delay`: a chunk waits up to `max_delay` s;
    `cut`: a connection is closed in the middle of an answer (the request may have been applied,
    and the caller never learns it). Besides the random drops, every `every`-th new connection is
    dropped, so that a short run with few new connections (keep-alive) still meets drops.
    Counts of each fault are kept for the figures.
    """

    upstream: int
    drop: float = 0.1
    delay: float = 0.15
    cut: float = 0.1
    max_delay: float = 0.4
    seed: int = 11
    every: int = 5
    port: int = 0
    faults: dict[str, int] = field(default_factory=lambda: {"drop": 0, "delay": 0, "cut": 0})
    _loop: asyncio.AbstractEventLoop | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _stop: asyncio.Event | None = None
    _connections: int = 0
    _thread: threading.Thread | None = None
    _open: list[asyncio.StreamWriter] = field(default_factory=list)

    def start(self) -> None:
        """Listen in a daemon thread; `port` is set when this returns."""
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"

    def close(self) -> None:
        """Stop listening and cut every connection; when this returns, every socket of the
        proxy is closed (one left to the garbage collector would warn in a later test)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._pick = random.Random(self.seed)
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            # A closed writer with unsent bytes stays open until they are sent: abort every
            # writer the proxy made (an abort of one already closed does nothing).
            for writer in self._open:
                writer.transport.abort()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._connections += 1
        self._open.append(client_w)
        if self._connections % self.every == 0 or self._pick.random() < self.drop:
            self.faults["drop"] += 1
            client_w.close()
            return
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            client_w.close()
            return
        self._open.append(up_w)
        both = [client_w, up_w]
        await asyncio.gather(
            self._pipe(client_r, up_w, both, answers=False),
            self._pipe(up_r, client_w, both, answers=True),
            return_exceptions=True,
        )

    async def _pipe(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        both: list[asyncio.StreamWriter],
        *,
        answers: bool,
    ) -> None:
        try:
            while chunk := await source.read(65536):
                if self._pick.random() < self.delay:
                    self.faults["delay"] += 1
                    await asyncio.sleep(self._pick.random() * self.max_delay)
                if answers and self._pick.random() < self.cut:
                    # Half an answer at most: the caller cannot tell whether it was applied.
                    self.faults["cut"] += 1
                    sink.write(chunk[: len(chunk) // 2])
                    break
                sink.write(chunk)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for writer in both:
                writer.close()
