"""The hot routes, answered in front of Litestar.

A token's life is mostly four routes: `POST /tokens`, `POST /tasks/claim`, `POST
/tasks/messages` and `POST /tasks/{task}/report`. Through Litestar each cost about 0.3 ms of
CPU before and after the engine's own work (its router, a `Request`, the middleware stack, a
`Response`), a fifth of `serve`'s CPU per token. Here those four are recognised by method and
path, and answered by the same route functions (`start_reply`, `claim_reply`,
`messages_reply`, `report_reply`) with the same checks in the same order: the bearer token
and its role, the body's size and JSON, then the route's own. Every other request
goes to Litestar unchanged, and so does a report path whose task segment is not digits (its `404`).

What a client sees is what Litestar answers, because the edge of both is one module
(stateous.control.api.edge: the body limit, the bearer token, the refusal envelope and the
count in `/metrics`): the same status, the same JSON bytes with `content-type:
application/json` and `content-length`, a `204` without headers, the refusal envelope with its
code, `500 unexpected` (the traceback logged) for anything else. The parity test
(tests/integration/control/test_fast_path_parity.py) holds them equal byte for byte. Without
this class (`create_app`'s application served alone) every request goes through Litestar.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import Receive, Scope, Send

from stateous.control.api import app as routes
from stateous.control.api import bodies, edge, roles
from stateous.control.api.batch import Reply, messages_reply
from stateous.control.plane import Plane
from stateous.model.auth import Grant

__all__ = ["LeanRoutes"]

REPORT_PATH = re.compile(r"/tasks/([0-9]+)/report")
JSON_HEADERS = [(b"content-type", b"application/json")]

# (plane, actor, the report's task id or 0, scope, receive, body) -> (status, value)
Handler = Callable[[Plane, str | None, int, Scope, Receive, dict[str, Any]], Awaitable[Reply]]


def _start(
    plane: Plane, actor: str | None, _task: int, scope: Scope, _r: Receive, body: dict[str, Any]
) -> Any:
    # A `traceparent` header is the trace the new token keeps.
    traceparent = _header(scope, b"traceparent") or None
    return routes.start_reply(plane, actor, body, traceparent)


def _claim(
    plane: Plane, _actor: str | None, _task: int, _s: Scope, receive: Receive, body: Any
) -> Any:
    return routes.claim_reply(plane, receive, body)


def _messages(
    plane: Plane, actor: str | None, _task: int, _s: Scope, _r: Receive, body: Any
) -> Any:
    return messages_reply(plane, actor, body)


def _report(plane: Plane, actor: str | None, task: int, _s: Scope, _r: Receive, body: Any) -> Any:
    return routes.report_reply(plane, actor, task, body)


#: The fixed paths answered here, with their route templates as `/metrics` names them.
FIXED: dict[str, tuple[str, Handler]] = {
    "/tokens": ("/tokens", _start),
    "/tasks/claim": ("/tasks/claim", _claim),
    "/tasks/messages": ("/tasks/messages", _messages),
}
REPORT = ("/tasks/{task}/report", _report)


class LeanRoutes:
    """An ASGI application: the hot routes answered here, everything else by `app`."""

    def __init__(self, app: Litestar) -> None:
        self.app = app
        self.plane: Plane = app.state.plane
        self.grants: Mapping[str, Grant] = app.state.auth_grants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a hot route, or hand the request to Litestar."""
        if scope["type"] != ScopeType.HTTP or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        task = 0
        route = FIXED.get(path)
        if route is None:
            found = REPORT_PATH.fullmatch(path)
            if found is None:
                await self.app(scope, receive, send)
                return
            route, task = REPORT, int(found.group(1))
        await self._answer(scope, receive, send, route, task)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, route: tuple[str, Handler], task: int
    ) -> None:
        started = time.perf_counter()
        template, handler = route
        state = scope.setdefault("state", {})  # uvicorn gives one; a bare ASGI call may not
        try:
            path = scope["path"]
            grant = edge.check_header(path, _header(scope, b"authorization"), self.grants)
            outside = roles.check_route(grant, "POST", template)
            raw = await edge.read_body(_header(scope, b"content-length"), receive)
            body = bodies.parse_body(raw)
            if outside and grant is not None:  # an `operate` token's report
                await roles.check_report(self.plane, grant, task, body)
            actor = None if grant is None else grant.name
            status, value = await handler(self.plane, actor, task, scope, receive, body)
        except Exception as exc:
            status, value = edge.refused(state, "POST", scope["path"], exc)
        await _send(send, status, value)
        edge.count(self.plane, scope, template, status, started)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


async def _send(send: Send, status: int, value: Any) -> None:
    if status == 204:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    content = edge.json_bytes(value)
    headers = [*JSON_HEADERS, (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content, "more_body": False})
