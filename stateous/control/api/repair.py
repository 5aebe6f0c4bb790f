"""The repair routes: retry a failed token, move a token, and why it is not moving.

`POST /tokens/{id}/retry` (body: optional `by`), `POST /tokens/{id}/move` (`{"to", "context"?,
"by"?}`) answer the token after the act; `GET /tokens/{id}/why` answers the findings.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.params import FromPath

from stateous.control.api.acts import by_of
from stateous.control.api.answers import answer, plane_of, read_body, run
from stateous.control.engine.move import move
from stateous.control.engine.retry import retry
from stateous.control.engine.views import token_wire
from stateous.control.engine.why import why
from stateous.control.errors import invalid

MOVE_PARTS = ("to", "context", "by")


def _move_parts(body: dict[str, Any]) -> None:
    """A move's body names only `to`, `context` and `by`."""
    unknown = [name for name in body if name not in MOVE_PARTS]
    if unknown:
        raise invalid(
            "invalid_body", f"a move has no part {unknown[0]!r}; its parts are to, context, by"
        )


@post("/tokens/{token_id:str}/retry", status_code=200)
async def retry_token(request: Request[Any, Any, Any], token_id: FromPath[str]) -> Response[bytes]:
    """Enter the failed token's state again, as a new visit."""
    by = by_of(request, await read_body(request))
    plane = plane_of(request)
    token = await run(
        request, "retry", lambda conn: retry(conn, plane.clock, plane.config, token_id, by)
    )
    return answer(token_wire(token))


@post("/tokens/{token_id:str}/move", status_code=200)
async def move_token(request: Request[Any, Any, Any], token_id: FromPath[str]) -> Response[bytes]:
    """Move a live or failed top token to a state of its workflow."""
    body = await read_body(request)
    _move_parts(body)
    by = by_of(request, body)
    plane = plane_of(request)
    to, context = body.get("to"), body.get("context")
    token = await run(
        request,
        "move",
        lambda conn: move(conn, plane.clock, plane.config, token_id, to, context, by),
    )
    return answer(token_wire(token))


@get("/tokens/{token_id:str}/why")
async def why_token(request: Request[Any, Any, Any], token_id: FromPath[str]) -> Response[bytes]:
    """Why the token is not moving: its findings, most important first."""
    plane = plane_of(request)
    return answer(
        await run(request, "why", lambda conn: why(conn, plane.clock, plane.config, token_id))
    )


ROUTES = [retry_token, move_token, why_token]
"""The repair routes, registered by `create_app`."""
