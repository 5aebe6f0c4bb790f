"""Which role may call which route: the one table, keyed by method and Litestar's
route template, and the `403 forbidden` of a request outside its role.

Both edges ask here: Litestar's `before_request` (stateous.control.api.app) and the fast path
(stateous.control.api.lean), after the bearer token and before anything is read or written. A
report on a task is the one route that a role may call only in part: `operate` may make a report
from outside (no `supervisor` in the body) on a `waiting` task, so that route's check
ends after its body is read (`check_report`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from litestar import Request

from stateous.control.api.bodies import DIGITS, MAX_ID, parse_body
from stateous.control.api.edge import grant_of
from stateous.control.errors import Refusal
from stateous.control.plane import Plane
from stateous.control.store.tasks import get_task
from stateous.model.auth import Grant, Role

__all__ = [
    "ROUTES",
    "Need",
    "access_of",
    "admit",
    "allows",
    "check_report",
    "check_route",
    "forbidden",
    "need_of",
]


class Need(Enum):
    """What a route does, as the roles of the token file list it."""

    READ = "read"  # a GET: read, operate, admin
    WORKFLOW = "workflow"  # a GET a supervisor needs too: every role
    OPERATE = "operate"  # an operator's act: operate, admin
    SUPERVISE = "supervise"  # a supervisor's message: supervise, admin
    REPORT = "report"  # supervise, admin; operate from outside on a waiting task
    ADMIN = "admin"  # a route this table does not know: admin only


#: Each route of the API by (method, Litestar's route template). A GET not listed is READ (a
#: `read` token may call every GET); any other route not listed is ADMIN, so a route added without
#: a line here is closed to the narrower roles rather than open to them
#: (tests/unit/control/test_roles.py holds every route of the app to a line here).
ROUTES: dict[tuple[str, str], Need] = {
    # reads
    ("GET", "/tokens"): Need.READ,
    ("GET", "/tokens/{token_id}"): Need.READ,
    ("GET", "/tokens/{token_id}/history"): Need.READ,
    ("GET", "/tokens/{token_id}/tasks"): Need.READ,
    ("GET", "/tokens/{token_id}/timers"): Need.READ,
    ("GET", "/tokens/{token_id}/memory"): Need.READ,
    ("GET", "/tokens/{token_id}/why"): Need.READ,
    ("GET", "/tokens/batch"): Need.READ,
    ("GET", "/tasks"): Need.READ,
    ("GET", "/stats"): Need.READ,
    ("GET", "/metrics"): Need.READ,
    ("GET", "/supervisors"): Need.READ,
    ("GET", "/inbox"): Need.READ,
    ("GET", "/audit"): Need.READ,
    ("GET", "/bulk"): Need.READ,
    ("GET", "/bulk/{job}"): Need.READ,
    ("GET", "/control-planes"): Need.READ,
    ("GET", "/export"): Need.READ,
    ("GET", "/schedules"): Need.READ,
    ("GET", "/schedules/{name}"): Need.READ,
    ("GET", "/schema"): Need.READ,
    ("GET", "/schema/openapi.json"): Need.READ,
    ("GET", "/schema/{path}"): Need.READ,
    # the reads a supervisor makes at start-up
    ("GET", "/workflow"): Need.WORKFLOW,
    ("GET", "/workflow/versions"): Need.WORKFLOW,
    ("GET", "/health"): Need.WORKFLOW,
    # an operator's acts
    ("POST", "/tokens"): Need.OPERATE,
    ("POST", "/tokens/batch"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/events/{event}"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/pause"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/resume"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/cancel"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/retry"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/move"): Need.OPERATE,
    ("POST", "/tokens/{token_id}/migrate"): Need.OPERATE,
    ("POST", "/bulk"): Need.OPERATE,
    ("POST", "/bulk/{job}/stop"): Need.OPERATE,
    ("POST", "/prune"): Need.OPERATE,
    # an administrator's act: tokens put back as exported, history and all
    ("POST", "/import"): Need.ADMIN,
    ("POST", "/schedules"): Need.OPERATE,
    ("PUT", "/schedules/{name}"): Need.OPERATE,
    ("POST", "/schedules/{name}/pause"): Need.OPERATE,
    ("POST", "/schedules/{name}/resume"): Need.OPERATE,
    ("DELETE", "/schedules/{name}"): Need.OPERATE,
    # a supervisor's messages
    ("POST", "/tasks/claim"): Need.SUPERVISE,
    ("POST", "/tasks/heartbeat"): Need.SUPERVISE,
    ("POST", "/tasks/messages"): Need.SUPERVISE,
    ("POST", "/tasks/{task}/note"): Need.SUPERVISE,
    ("PUT", "/tasks/{task}/memory"): Need.SUPERVISE,
    ("POST", "/supervisors/beat"): Need.SUPERVISE,
    ("POST", "/tasks/{task}/report"): Need.REPORT,
}

#: The roles each need lets through; `operate` on REPORT only from outside (`check_report`).
_ALLOWED: dict[Need, frozenset[Role]] = {
    Need.READ: frozenset({"read", "operate", "admin"}),
    Need.WORKFLOW: frozenset({"read", "operate", "supervise", "admin"}),
    Need.OPERATE: frozenset({"operate", "admin"}),
    Need.SUPERVISE: frozenset({"supervise", "admin"}),
    Need.REPORT: frozenset({"operate", "supervise", "admin"}),
    Need.ADMIN: frozenset({"admin"}),
}

#: What each role may do, as its refusal says it (`the token 'viewer' may only read`).
_SCOPE: dict[Role, str] = {
    "read": "read",
    "operate": "read and operate, not supervise",
    "supervise": "supervise and read the workflow",
    "admin": "do everything",
}


def need_of(method: str, template: str) -> Need:
    """What the route `method template` does; a route not in `ROUTES` is READ for a GET, else
    ADMIN."""
    need = ROUTES.get((method, template))
    if need is not None:
        return need
    return Need.READ if method == "GET" else Need.ADMIN


def allows(role: Role, need: Need) -> bool:
    """Whether `role` may call a route of `need` (for REPORT, `operate` still has to pass
    `check_report`)."""
    return role in _ALLOWED[need]


def _who(grant: Grant) -> str:
    return "this token" if grant.name is None else f"the token {grant.name!r}"


def forbidden(grant: Grant) -> Refusal:
    """`403 forbidden`, naming the token and its role's scope: `the token 'viewer' may only
    read`."""
    return Refusal("forbidden", f"{_who(grant)} may only {_SCOPE[grant.role]}", 403)


def check_route(grant: Grant | None, method: str, template: str) -> bool:
    """Refuse `403 forbidden` unless `grant`'s role may call the route (no grant: no
    authentication, or `GET /health`, every route is open). True when the body must still be
    checked: a report by an `operate` token (`check_report`)."""
    if grant is None or grant.role == "admin":
        return False
    need = need_of(method, template)
    if not allows(grant.role, need):
        raise forbidden(grant)
    return need is Need.REPORT and grant.role == "operate"


async def check_report(plane: Plane, grant: Grant, task: int, body: Mapping[str, Any]) -> None:
    """The rest of `check_route` for an `operate` token's report on `task`: it is made from
    outside (no `supervisor`) on a `waiting` task, else `403 forbidden`.

    An unknown task passes, so that the report answers `404 task_not_found` as for any caller.
    The task is read just before the report's own transaction; a task that stops waiting in
    between is refused by the report itself, unless a supervisor claimed it again meanwhile (a
    failed outside attempt with retries left), which any outside report may then report on.
    """
    rule = f"{_who(grant)} may report only from outside (without 'supervisor') on a waiting task"
    if "supervisor" in body:
        raise Refusal("forbidden", rule, 403)
    if task > MAX_ID:
        return  # no such task: the report's own 404
    found = await plane.run_async("tasks", lambda conn: get_task(conn, task))
    if found is not None and found.status != "waiting":
        raise Refusal("forbidden", f"{rule}, and task {task} is {found.status}", 403)


async def admit(request: Request[Any, Any, Any], grant: Grant | None) -> None:
    """`check_route` and `check_report` for a Litestar request, before its handler: the body a
    report's check reads stays in the request for the handler. A report path whose task is not
    digits is left to the handler's `404`."""
    if not check_route(grant, request.method, str(request.scope.get("path_template", ""))):
        return
    task = str(request.path_params.get("task", ""))
    if grant is not None and DIGITS.fullmatch(task):
        body = parse_body(await request.body())
        await check_report(request.app.state.plane, grant, int(task), body)


def access_of(request: Request[Any, Any, Any]) -> Role | None:
    """The role of the token a request carries, for `GET /health`'s `access`: what
    the console may do. None without authentication or without a valid token."""
    grants: Mapping[str, Grant] = request.app.state.auth_grants
    if not grants:
        return None
    grant = grant_of(request.headers.get("authorization", ""), grants)
    return None if grant is None else grant.role
