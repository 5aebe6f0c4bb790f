"""`GET /control-planes`: the live control planes on this database."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get

from stateous.control.api.answers import answer, plane_of, run
from stateous.control.store.planes import EVERY, LIVE_BEATS, live_planes

__all__ = ["ROUTES"]


@get("/control-planes")
async def control_planes(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every control plane seen within three of its intervals: the holder first, then by name."""
    plane = plane_of(request)
    # `serve` sets the interval it writes at (tests shorten it); 10 s otherwise.
    every = getattr(request.app.state, "presence_every", EVERY)
    since = plane.clock.now() - LIVE_BEATS * every
    found = await run(request, "control planes", lambda conn: live_planes(conn, since))
    return answer([row.wire() for row in found])


ROUTES = [control_planes]
