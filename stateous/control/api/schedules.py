"""The routes of schedules: `POST /schedules`, `GET /schedules`,
`GET|PUT|DELETE /schedules/{name}`, `POST /schedules/{name}/pause|resume`.

Every write takes the operator's optional `by` (who acted, and why), indexed in `GET /audit` under
the token `schedule:NAME`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath
from sqlalchemy import Connection

from stateous.control.api.acts import by_of
from stateous.control.api.answers import answer, plane_of, read_body, run
from stateous.control.clock import Clock
from stateous.control.engine import schedules
from stateous.control.errors import invalid

#: An act on a named schedule: pause, resume or remove.
Act = Callable[[Connection, Clock, str, Mapping[str, Any] | None], dict[str, Any]]
#: What a pause, resume or removal body may hold.
ACT_PARTS = ("by",)


def _act_body(body: dict[str, Any]) -> None:
    unknown = [name for name in body if name not in ACT_PARTS]
    if unknown:
        raise invalid("invalid_body", f"this act has no part {unknown[0]!r}; its part is by")


@post("/schedules", status_code=201)
async def create_schedule(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Save a new schedule (`409 schedule_exists`; `422 invalid_body` for a bad field, or a
    context the current version refuses)."""
    body = await read_body(request)
    spec = schedules.check_body(body)
    by = by_of(request, body)
    plane = plane_of(request)
    made = await run(
        request,
        "schedule",
        lambda conn: schedules.create(conn, plane.clock, plane.config, spec, by),
    )
    return answer(made, 201)


@get("/schedules")
async def list_schedules(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every schedule, by name, with its next and last slot."""
    return answer(await run(request, "schedules", schedules.list_wire))


@get("/schedules/{name:str}")
async def get_schedule(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    """One schedule (`404 schedule_not_found`)."""
    return answer(await run(request, "schedules", lambda conn: schedules.get_wire(conn, name)))


@put("/schedules/{name:str}", status_code=200)
async def replace_schedule(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    """Replace a schedule's fields (`404 schedule_not_found`; `422 invalid_body` as the
    create)."""
    body = await read_body(request)
    spec = schedules.check_body(body, name)
    by = by_of(request, body)
    plane = plane_of(request)
    replaced = await run(
        request,
        "schedule",
        lambda conn: schedules.replace(conn, plane.clock, plane.config, spec, by),
    )
    return answer(replaced)


async def _act(request: Request[Any, Any, Any], name: str, act: Act) -> Response[bytes]:
    body = await read_body(request)
    _act_body(body)
    by = by_of(request, body)
    plane = plane_of(request)
    return answer(await run(request, "schedule", lambda conn: act(conn, plane.clock, name, by)))


@post("/schedules/{name:str}/pause", status_code=200)
async def pause_schedule(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    """Pause a schedule: it starts nothing until resumed."""
    return await _act(request, name, schedules.pause)


@post("/schedules/{name:str}/resume", status_code=200)
async def resume_schedule(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    """Resume a schedule from its first slot after now."""
    return await _act(request, name, schedules.resume)


@delete("/schedules/{name:str}", status_code=200)
async def remove_schedule(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    """Remove a schedule; answers it as it was."""
    return await _act(request, name, schedules.remove)


ROUTES = [
    create_schedule, list_schedules, get_schedule, replace_schedule, pause_schedule,
    resume_schedule, remove_schedule,
]  # fmt: skip
"""The routes of schedules, registered by `create_app`."""
