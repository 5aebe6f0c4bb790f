"""Long-poll claims: the `wait` field of `POST /tasks/claim` and the waiting loop.

Each try is the ordinary claim, one short transaction; between tries the request
sleeps on `Wakeups` with no transaction, connection or lock held, and leaves its claim there for
a lane to run in the next transaction that may queue a task (the hand-off).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from stateous.control.errors import invalid
from stateous.control.store.group import Op
from stateous.control.wakeups import Wakeups

__all__ = ["MAX_WAIT", "claim_waiting", "wait_arg"]

MAX_WAIT = 60.0
"""The longest wait a claim may ask for, in seconds."""


def wait_arg(body: Mapping[str, Any]) -> float:
    """`wait`: seconds from 0 to 60, default 0 (absent or null); anything else `invalid_body`."""
    value = body.get("wait")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_WAIT:
        raise invalid("invalid_body", "'wait' is a number of seconds from 0 to 60")
    return float(value)


async def claim_waiting[T](
    wakeups: Wakeups,
    wait: float,
    attempt: Callable[[], Awaitable[T | None]],
    gone: Callable[[], Awaitable[Any]] | None = None,
    states: Sequence[str] | None = None,
    park: Callable[[Connection], T | None] | None = None,
) -> T | None:
    """Claim at once; with nothing to claim, try again on each wake-up until `wait` ends.

    `attempt` runs one claim transaction (None: no task). `gone` resolves when the caller hung
    up: the wait then ends with nothing, so no task is granted to a closed connection.
    `states`: the claim's states (`<state>` or `<workflow>/<state>`); a notification from
    another control plane about another state does not wake it. `park`: the
    claim's work, which a lane may run while the claim sleeps, in a transaction that may queue
    a task (the hand-off, stateous.control.wakeups).
    """
    names = None if states is None else frozenset(s.rpartition("/")[2] for s in states)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    hangup: asyncio.Future[Any] | None = None
    try:
        seen = wakeups.generation
        granted = await attempt()
        while granted is None:
            remaining = deadline - loop.time()
            if remaining <= 0 or wakeups.closed:
                return None
            if gone is not None and hangup is None:
                hangup = asyncio.ensure_future(gone())
            op = None if park is None else Op("claim", park)
            sleep = asyncio.ensure_future(wakeups.wait(seen, remaining, names, op))
            waited = {sleep} if hangup is None else {sleep, hangup}
            done, _ = await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if sleep not in done:
                sleep.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sleep
                return None
            taken = sleep.result()
            if taken is not None and taken.op is not None:
                try:
                    granted = await asyncio.wrap_future(taken.op.future)
                except Exception:
                    pass  # its shared transaction failed: it claims on its own, below
                else:
                    seen = taken.seen  # what its claim in the lane has seen
                    continue
            if wakeups.closed:
                return None
            seen = wakeups.generation
            granted = await attempt()
        return granted
    finally:
        if hangup is not None and not hangup.done():
            hangup.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await hangup


async def until_disconnect(receive: Callable[[], Awaitable[Mapping[str, Any]]]) -> None:
    """Resolve when the ASGI connection reports `http.disconnect` (the body was read before)."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return
