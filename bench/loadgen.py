"""A lean load generator: many `POST`s of JSON over a few keep-alive HTTP/1.1 connections.

Why not httpx, the project's client everywhere else: on a machine of two cores the load
generator shares the CPU with the processes it measures, and httpx's client (its request and
response models, httpcore's connection machinery, a thread per connection fighting for the
GIL) spent 0.65-0.8 ms of CPU per start, more than `serve` spent answering it (0.5 ms): the
figures of `POST /tokens` with 8 connections, and of e2e, measured the load generator as much
as the control plane. This one writes each request as bytes on an asyncio stream and reads the
answer's status line, headers and `content-length` body, on one event loop for every
connection: a few tens of microseconds a request. It speaks just what a benchmark needs of
HTTP/1.1 (keep-alive, `content-length` answers) and refuses anything else loudly; the
scripts' `--client httpx` measures with httpx instead, for comparison.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = ["post_many"]


class LoadError(Exception):
    """The control plane answered what this load generator does not read."""


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes, body: bytes
) -> tuple[int, bytes]:
    writer.write(head % len(body) + body)
    status_line = await reader.readline()
    if not status_line:
        raise LoadError("the control plane closed the connection")
    status = int(status_line.split(b" ", 2)[1])
    length = -1
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            raise LoadError("a chunked answer (this load generator reads content-length only)")
    if length < 0:  # only an answer without a body may say nothing of its length
        if status not in (204, 304):
            raise LoadError(f"an answer {status} without content-length")
        length = 0
    return status, await reader.readexactly(length)


async def _connection(
    url: str,
    path: str,
    bodies: Sequence[bytes],
    answers: list[tuple[int, bytes]],
    first: int,
    step: int,
) -> None:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
        "content-type: application/json\r\ncontent-length: %d\r\n\r\n"
    ).encode()
    try:
        for n in range(first, len(bodies), step):
            answers[n] = await _exchange(reader, writer, head, bodies[n])
    finally:
        writer.close()


async def _post_all(
    urls: Sequence[str], path: str, values: Sequence[Any], connections: int
) -> list[tuple[int, bytes]]:
    bodies = [json.dumps(value, separators=(",", ":")).encode() for value in values]
    answers: list[tuple[int, bytes]] = [(0, b"")] * len(bodies)
    # Connection n sends values n, n + connections, ...: the starts go out in about their order.
    count = min(connections, len(bodies))
    await asyncio.gather(
        *(_connection(urls[n % len(urls)], path, bodies, answers, n, count) for n in range(count))
    )
    return answers


def post_many(
    urls: Sequence[str], path: str, values: Sequence[Any], connections: int = 8
) -> list[tuple[int, bytes]]:
    """POST each value as JSON to `path`, over `connections` connections spread across `urls`
    (each sends one request at a time); answers each `(status, body)` in the values' order."""
    return asyncio.run(_post_all(urls, path, values, connections), loop_factory=_loop_factory())


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where installed (it is, with uvicorn's extras): less CPU a request.

    The same as `stateous.event_loop.loop_factory`, written here because the benchmarks run
    with the baseline's venv too, whose package has no such module."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
