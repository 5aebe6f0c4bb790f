"""`GET /metrics` (spec 70 §3) and the middleware that counts every answered request."""

from __future__ import annotations

import json
import time
from typing import Any

from anyio import to_thread
from litestar import Request, Response, get
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from stateous.control.metrics import CONTENT_TYPE, Figures, read_figures
from stateous.control.plane import Plane

__all__ = ["MetricsMiddleware", "metrics_route"]


def _figures(plane: Plane) -> Figures | None:
    """The row figures in one read transaction; None when the database cannot answer now."""
    if not plane.serving:
        return None
    try:
        return plane.store.read(lambda conn: read_figures(conn, plane.clock.now()))
    except Exception:  # a scrape must not fail because the database is busy: counters still show
        return None


@get("/metrics", media_type=CONTENT_TYPE)
async def metrics_route(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The control plane's figures in the Prometheus text exposition format."""
    plane: Plane = request.app.state.plane
    metrics = plane.metrics
    metrics.read_rows_with(lambda: _figures(plane), plane.clock.now)
    metrics.waiting_claims.set(plane.wakeups.waiting)
    body = await to_thread.run_sync(metrics.exposition)
    return Response(content=body, status_code=200, media_type=CONTENT_TYPE)


class MetricsMiddleware(ASGIMiddleware):
    """Times each HTTP request and counts claims, reports and refusals by their answers."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        """Pass the request on; observe the answer's status and, for a refusal, its code."""
        started = time.perf_counter()
        status = 0
        refused = False
        body = bytearray()

        async def watch(message: Message) -> None:
            nonlocal status, refused
            if message["type"] == "http.response.start":
                status = int(message["status"])
                refused = status >= 400
            elif message["type"] == "http.response.body" and refused:
                body.extend(message.get("body", b""))
            await send(message)

        try:
            await next_app(scope, receive, watch)
        finally:
            plane: Plane | None = getattr(scope["app"].state, "plane", None)
            if plane is not None and status:
                route = str(scope.get("path_template") or "unmatched")
                code = _code(bytes(body)) if refused else None
                seconds = time.perf_counter() - started
                method = str(scope.get("method", ""))
                plane.metrics.observe(method, route, status, code, seconds)


def _code(body: bytes) -> str:
    try:
        value = json.loads(body)
    except ValueError:
        return "unknown"
    code = value.get("code") if isinstance(value, dict) else None
    return code if isinstance(code, str) else "unknown"
