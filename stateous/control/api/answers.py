"""The API's answer helpers, shared by every route module: JSON answers, the plane,
engine calls off the event loop, bodies and task id segments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyio import CapacityLimiter, to_thread
from litestar import Request, Response
from sqlalchemy import Connection

from stateous.control.api import bodies
from stateous.control.api.edge import json_bytes
from stateous.control.errors import Refusal
from stateous.control.plane import Plane
from stateous.control.store.db import READ_CALLS


def answer(value: Any, status: int = 200) -> Response[bytes]:
    """A JSON answer (UTF-8)."""
    return Response(content=json_bytes(value), status_code=status, media_type="application/json")


def reply(status_and_value: tuple[int, Any]) -> Response[bytes]:
    """The answer of a route's `(status, value)`: JSON, or a `204` without a body."""
    status, value = status_and_value
    return no_content() if status == 204 else answer(value, status)


def no_content() -> Response[bytes]:
    """A `204` without a body."""
    return Response(content=b"", status_code=204)


def plane_of(request: Request[Any, Any, Any]) -> Plane:
    """The control plane this app serves."""
    plane: Plane = request.app.state.plane
    return plane


async def run[T](request: Request[Any, Any, Any], call: str, work: Callable[[Connection], T]) -> T:
    """Run one engine call off the event loop: a write in a shared transaction,
    awaited without a worker thread; a read in a worker thread, beside the writes."""
    plane = plane_of(request)
    if call not in READ_CALLS:
        return await plane.run_async(call, work)
    limiter: CapacityLimiter = request.app.state.reads
    return await to_thread.run_sync(plane.run, call, work, limiter=limiter)


async def read_body(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The request body as a JSON object."""
    return bodies.parse_body(await request.body())


def task_segment(segment: str, path: str) -> int:
    """A task id path segment: digits only, else no route matches (`404 not_found`)."""
    if not bodies.DIGITS.fullmatch(segment):
        raise Refusal("not_found", f"this API has no {path}", 404)
    return int(segment)


def known_id(value: int) -> int:
    """A task id above 2^63-1 names no task (after the body checks, like any unknown task)."""
    if value > bodies.MAX_ID:
        raise Refusal("task_not_found", f"there is no task {value}", 404)
    return value
