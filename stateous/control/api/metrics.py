"""`GET /metrics`; each request is counted by stateous.control.api.edge."""

from __future__ import annotations

from typing import Any

from anyio import to_thread
from litestar import Request, Response, get

from stateous.control.metrics import CONTENT_TYPE
from stateous.control.plane import Plane
from stateous.control.store.figures import Figures, read_figures

__all__ = ["metrics_route"]


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
