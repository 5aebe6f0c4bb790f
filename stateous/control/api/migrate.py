"""The migrate route: `POST /tokens/{id}/migrate` moves a live or failed top token to
another version (`{"to"?, "states"?, "context"?, "by"?}`, the `Idempotency-Key` header) and
answers the token after the act."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post
from litestar.params import FromPath

from stateous.control.api.acts import by_of
from stateous.control.api.answers import answer, plane_of, read_body, run
from stateous.control.engine.migrate import migrate
from stateous.control.engine.views import token_wire
from stateous.control.errors import invalid

MIGRATE_PARTS = ("to", "states", "context", "by")


def _migrate_parts(body: dict[str, Any]) -> None:
    """A migration's body names only `to`, `states`, `context` and `by`."""
    unknown = [name for name in body if name not in MIGRATE_PARTS]
    if unknown:
        raise invalid(
            "invalid_body",
            f"a migration has no part {unknown[0]!r}; its parts are " + ", ".join(MIGRATE_PARTS),
        )


@post("/tokens/{token_id:str}/migrate", status_code=200)
async def migrate_token(
    request: Request[Any, Any, Any], token_id: FromPath[str]
) -> Response[bytes]:
    """Move a live or failed top token to another version (default: the current one)."""
    body = await read_body(request)
    _migrate_parts(body)
    by = by_of(request, body)
    key = request.headers.get("idempotency-key")
    plane = plane_of(request)
    to, states, context = body.get("to"), body.get("states"), body.get("context")
    token = await run(
        request,
        "migrate",
        lambda conn: migrate(
            conn, plane.clock, plane.config, token_id, to, states, context, by, key
        ),
    )
    return answer(token_wire(token))


ROUTES = [migrate_token]
"""The migrate route, registered by `create_app`."""
