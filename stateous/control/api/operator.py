"""The operators' read routes: tasks, a token's tasks, timers, memory, stats.

Each route reads in one transaction and writes nothing; refusals are the usual ones
(`422 invalid_argument` for a bad query, `404 token_not_found` for an unknown token).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Request, Response, get
from litestar.params import FromPath
from sqlalchemy import Connection

from stateous.control.api import pages
from stateous.control.api.answers import answer, plane_of, run
from stateous.control.api.supervisors import stats_with_supervisors
from stateous.control.clock import iso
from stateous.control.engine.checks import no_token
from stateous.control.engine.reads import versions_wire
from stateous.control.errors import invalid
from stateous.control.store import operator_queries as oq
from stateous.control.store.stats import Stats
from stateous.control.store.tokens import get_token
from stateous.model.wire import TASK_STATUSES, TOKEN_STATUSES

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_DIGITS = 18


def _whole(name: str, text: str | None, low: int, high: int, default: int) -> int:
    """A query argument that is a whole number in decimal digits, from `low` to `high`."""
    if text is None:
        return default
    if not text.isdigit() or not text.isascii() or len(text) > MAX_DIGITS:
        raise invalid("invalid_argument", f"'{name}' is a whole number from {low} to {high}")
    value = int(text)
    if not low <= value <= high:
        raise invalid("invalid_argument", f"'{name}' is a whole number from {low} to {high}")
    return value


def _text(name: str, text: str | None, most: int) -> str | None:
    """An optional text argument of 1 to `most` characters."""
    if text is not None and not 1 <= len(text) <= most:
        raise invalid("invalid_argument", f"'{name}' is a text of 1 to {most} characters")
    return text


def task_query(query: Mapping[str, str | None]) -> dict[str, Any]:
    """The filters of `GET /tasks`: `status`, `token`, `state`, `supervisor`, `limit`."""
    status = query.get("status")
    if status is not None and status not in TASK_STATUSES:
        raise invalid("invalid_argument", "'status' is one of " + ", ".join(TASK_STATUSES))
    return {
        "status": status,
        "token": _text("token", query.get("token"), 256),
        "state": _text("state", query.get("state"), 129),
        "supervisor": _text("supervisor", query.get("supervisor"), 256),
        "limit": _whole("limit", query.get("limit"), 1, MAX_LIMIT, DEFAULT_LIMIT),
    }


def after_arg(text: str | None) -> int | None:
    """`after=SEQ` of a history: a whole number of 0 or more, or None when absent."""
    if text is None:
        return None
    return _whole("after", text, 0, 2**63 - 1, 0)


def task_wire(task: oq.OperatorTask) -> dict[str, Any]:
    """A task as the operator routes send it."""
    return {
        "task": task.id,
        "token": task.token,
        "state": task.state,
        "visit": task.visit,
        "status": task.status,
        "attempt": task.attempt,
        "claimed_by": task.claimed_by,
        "lease_until": iso(task.lease_until) if task.lease_until else None,
        "queued_at": iso(task.queued_at),
    }


def timer_wire(timer: oq.OperatorTimer) -> dict[str, Any]:
    """A timer as `GET /tokens/{id}/timers` sends it."""
    return {
        "id": timer.id,
        "state": timer.state,
        "visit": timer.visit,
        "event": timer.event,
        "kind": timer.kind,
        "status": timer.status,
        "set_at": iso(timer.set_at),
        "due_at": iso(timer.due_at),
    }


def _known(conn: Connection, token_id: str) -> None:
    if get_token(conn, token_id) is None:
        raise no_token(token_id)


def token_tasks(conn: Connection, token_id: str) -> list[dict[str, Any]]:
    """A token's tasks in id order; `404 token_not_found` for an unknown token."""
    _known(conn, token_id)
    return [task_wire(t) for t in oq.tasks_of(conn, token_id)]


def token_timers(conn: Connection, token_id: str) -> list[dict[str, Any]]:
    """A token's timers in id order."""
    _known(conn, token_id)
    return [timer_wire(t) for t in oq.timers_of(conn, token_id)]


def token_memory(conn: Connection, token_id: str) -> list[dict[str, Any]]:
    """A token's memory rows."""
    _known(conn, token_id)
    return [
        {"state": m.state, "key": m.key, "value": m.value} for m in oq.memory_rows(conn, token_id)
    ]


def history_after(conn: Connection, token_id: str, after: int) -> list[dict[str, Any]]:
    """The entries of a token's history with `seq > after` (for a live view)."""
    _known(conn, token_id)
    return [
        {"seq": row.seq, "at": iso(row.at), "kind": row.kind, "data": row.data}
        for row in oq.ledger_after(conn, token_id, after)
    ]


def graph_states(request: Request[Any, Any, Any]) -> list[str]:
    """Every state of the current graph in order: the main workflow's, then `<child>/<state>`;
    then those only older versions have, in the same order."""
    versions = plane_of(request).config.versions
    names: dict[str, None] = {}
    for graph in versions.graphs():
        names.update(dict.fromkeys(graph.main.states))
        for name, body in graph.bodies.items():
            if name != graph.workflow:
                names.update(dict.fromkeys(f"{name}/{state}" for state in body.states))
    return list(names)


def stats_wire(found: Stats, versions: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer of `GET /stats`, with the versions of `GET /workflow/versions`."""
    return {
        "tokens": found.tokens,
        "states": found.states,
        "oldest_queued_at": iso(found.oldest_queued_at) if found.oldest_queued_at else None,
        "serving": found.serving,
        "versions": versions,
    }


# --- routes -------------------------------------------------------------------------------------


@get("/tasks")
async def list_tasks(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Tasks newest first, filtered by status, token, state and supervisor; `after=CURSOR`
    the next page (its `Link` header)."""
    names = ("status", "token", "state", "supervisor", "limit")
    filters = task_query({name: request.query_params.get(name) for name in names})
    after = pages.cursor_arg(request.query_params.get("after"), "i")
    limit = filters.pop("limit")

    def listing(conn: Connection) -> pages.Page:
        found = oq.list_tasks(conn, **filters, limit=limit + 1, after=after[0] if after else None)
        return pages.Page(found, limit, lambda task: (task.id,))

    page = await run(request, "tasks", listing)
    return pages.paged(request, [task_wire(t) for t in page.rows], page.next)


@get("/tokens/{token_id:str}/tasks")
async def get_token_tasks(
    request: Request[Any, Any, Any], token_id: FromPath[str]
) -> Response[bytes]:
    """A token's tasks."""
    return answer(await run(request, "token tasks", lambda conn: token_tasks(conn, token_id)))


@get("/tokens/{token_id:str}/timers")
async def get_token_timers(
    request: Request[Any, Any, Any], token_id: FromPath[str]
) -> Response[bytes]:
    """A token's timers."""
    return answer(await run(request, "timers", lambda conn: token_timers(conn, token_id)))


@get("/tokens/{token_id:str}/memory")
async def get_token_memory(
    request: Request[Any, Any, Any], token_id: FromPath[str]
) -> Response[bytes]:
    """A token's memory rows."""
    return answer(await run(request, "memory", lambda conn: token_memory(conn, token_id)))


@get("/stats")
async def get_stats(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Tokens by status, and tokens, tasks and live supervisors by state."""
    plane = plane_of(request)
    states, now, current = graph_states(request), plane.clock.now, plane.config.graph.checksum

    def read(conn: Connection) -> dict[str, Any]:
        found = stats_with_supervisors(conn, states, TOKEN_STATUSES, now())
        return stats_wire(found, versions_wire(conn, current))

    return answer(await run(request, "stats", read))


ROUTES = [list_tasks, get_token_tasks, get_token_timers, get_token_memory, get_stats]
"""The operator routes, registered by `create_app`."""
