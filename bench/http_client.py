"""The supervisor's HTTP client alone: wall and CPU milliseconds a call, one call at a time.

A real `stateous serve` (SQLite, a fresh folder); each client sends `--calls` claims of a state
nobody serves (`204` at once, so the control plane's part is the same small one for all):
`httpx` is `httpx.AsyncClient` on httpx's own transport (httpcore, h11, anyio), `lean` the same
client on the supervisor's transport (`stateous.supervisor.transport.LeanTransport`), `mock` the
client's own layer without any socket (httpx's `MockTransport`, `204` in process), and `raw` the
request's bytes on asyncio's streams (the floor). All on one uvloop event loop, as `supervise`.

Usage: `python bench/http_client.py [--calls N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # after the path is set

from stateous.event_loop import loop_factory
from stateous.supervisor.transport import LeanTransport

BODY = {"supervisor": "bench", "states": ["no-such-state"]}


async def timed(call: Callable[[], Awaitable[object]], calls: int) -> tuple[float, float]:
    """(wall ms, CPU ms) a call, after a warm-up."""
    for _ in range(50):
        await call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await call()
    return (
        (time.perf_counter() - wall) / calls * 1000,
        (time.process_time() - cpu) / calls * 1000,
    )


async def with_client(
    url: str, transport: httpx.AsyncBaseTransport | None, calls: int
) -> tuple[float, float]:
    async with httpx.AsyncClient(transport=transport, trust_env=False, timeout=30) as client:
        target = httpx.URL(url + "/tasks/claim")

        async def call() -> None:
            answer = await client.request("POST", target, json=BODY)
            if answer.status_code != 204:
                raise SystemExit(f"error: the claim answered {answer.status_code}")

        return await timed(call, calls)


async def raw(url: str, calls: int) -> tuple[float, float]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    payload = json.dumps(BODY).encode()
    request = (
        f"POST /tasks/claim HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode() + payload

    async def call() -> None:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 204"):
            raise SystemExit(f"error: the claim answered {head[:40]!r}")

    try:
        return await timed(call, calls)
    finally:
        writer.close()


async def measure(url: str, calls: int) -> dict[str, float]:
    async def mock_answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(204)

    figures: dict[str, float] = {}
    runs: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "httpx": lambda: with_client(url, None, calls),
        "lean": lambda: with_client(url, LeanTransport(), calls),
        "mock": lambda: with_client(url, httpx.MockTransport(mock_answer), calls),
        "raw": lambda: raw(url, calls),
    }
    for name, run in runs.items():
        wall, cpu = await run()
        figures[f"{name}_wall_ms"] = round(wall, 3)
        figures[f"{name}_cpu_ms"] = round(cpu, 3)
    return figures


def main() -> None:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    with common.fresh_folder() as folder:
        common.prepare(folder)
        serve = common.start_serve(folder, f"sqlite:///{folder}/stateous.db")
        with common.stopping(serve):
            figures = asyncio.run(measure(serve.url, args.calls), loop_factory=loop_factory())
    common.emit({"bench": "http_client", "calls": args.calls, **figures})


if __name__ == "__main__":
    main()
