"""The HTTP edge, written once for Litestar and the fast path: the 1 MiB body limit, the refusal
envelope, authentication, and the count of each answered request in `/metrics`.

Litestar reaches these through `create_app` (the exception handler `refusal_answer`, the
`before_request` check of the bearer token, `request_max_body_size=MAX_BODY` and
`MetricsMiddleware`); the fast path (stateous.control.api.lean) calls the same functions. The
refusal's code is written in the request's state (`scope["state"]`) where the refusal is made,
and the count reads it from there.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from litestar import Request, Response
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from stateous.control.errors import Refusal
from stateous.control.plane import Plane
from stateous.model.auth import Grant

__all__ = [
    "MAX_BODY",
    "REFUSAL",
    "TOO_LARGE",
    "UNAUTHORIZED",
    "MetricsMiddleware",
    "check_bearer",
    "check_header",
    "count",
    "envelope_bytes",
    "grant_of",
    "json_bytes",
    "read_body",
    "refusal_answer",
    "refused",
    "too_large",
]

log = logging.getLogger("stateous.api")

#: The most a request's body may hold, and the sentence of its `413`.
MAX_BODY = 1_048_576
TOO_LARGE = "the body is larger than 1 MiB, the most this API reads"

UNAUTHORIZED = (
    "this control plane needs the header 'Authorization: Bearer <token>' with its token, "
    "and this request has no valid one"
)
_PREFIX = "bearer "

#: The key of the request's state (`scope["state"]`) that holds the code of its refusal.
REFUSAL = "stateous.refusal"


# --- the refusal envelope --------------------------------------------------------


def json_bytes(value: Any) -> bytes:
    """The JSON of an answer's body: compact, UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def envelope_bytes(code: str, message: str) -> bytes:
    """The body of a refusal: `{"error": message, "code": code}`."""
    return json_bytes({"error": message, "code": code})


def too_large() -> Refusal:
    """`413 bad_request`: the body is over `MAX_BODY`."""
    return Refusal("bad_request", TOO_LARGE, 413)


def refused(
    state: MutableMapping[str, Any], method: str, path: str, exc: Exception
) -> tuple[int, dict[str, str]]:
    """The status and envelope that answer `exc`, its code written in the request's `state`.

    A `Refusal` answers its own; Litestar's errors (no route, no method, a too large body, other
    client errors) theirs; anything else is `500 unexpected`, the traceback only in the log.
    """
    status, code, message = _refusal_of(method, path, exc)
    state[REFUSAL] = code
    return status, {"error": message, "code": code}


def _refusal_of(method: str, path: str, exc: Exception) -> tuple[int, str, str]:
    if isinstance(exc, Refusal):
        return exc.status, exc.code, exc.message
    if isinstance(exc, NotFoundException):
        return 404, "not_found", f"this API has no {path}"
    if isinstance(exc, MethodNotAllowedException):
        return 405, "method_not_allowed", f"{path} does not take {method}"
    if isinstance(exc, HTTPException) and exc.status_code == 413:
        return 413, "bad_request", TOO_LARGE
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        return exc.status_code, "bad_request", f"the request is not valid: {exc.detail}"
    log.error("%s %s failed unexpectedly", method, path, exc_info=exc)
    return 500, "unexpected", "the request failed unexpectedly"


def refusal_answer(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Litestar's exception handler: the refusal envelope of `refused`."""
    state = request.scope.setdefault("state", {})
    status, value = refused(state, request.method, request.url.path, exc)
    return Response(content=json_bytes(value), status_code=status, media_type="application/json")


# --- the body limit -----------------------------------------------------------------------------


async def read_body(content_length: str, receive: Receive) -> bytes:
    """A request's body, as Litestar reads it under `request_max_body_size=MAX_BODY`: over
    `MAX_BODY` is `413`, decided from `Content-Length` before reading, else by counting bytes as
    they arrive. A client that hangs up before the whole body came leaves what had come."""
    if content_length.isdigit() and int(content_length) > MAX_BODY:
        raise too_large()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large()
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


# --- authentication ----------------------------------------------------


def check_bearer(request: Request[Any, Any, Any], tokens: Mapping[str, Grant]) -> Grant | None:
    """`check_header` for a Litestar request."""
    return check_header(request.url.path, request.headers.get("authorization", ""), tokens)


def check_header(path: str, header: str, tokens: Mapping[str, Grant]) -> Grant | None:
    """Refuse `401 unauthorized` unless the `Authorization` header carries one of `tokens` (none:
    nothing to check; `GET /health` is never checked); answer that token's grant: its name (the
    actor of what the request does) and its role, or None."""
    if not tokens or path == "/health":
        return None
    grant = grant_of(header, tokens)
    if grant is None:
        raise Refusal("unauthorized", UNAUTHORIZED, 401)
    return grant


def grant_of(header: str, tokens: Mapping[str, Grant]) -> Grant | None:
    """The grant of the token an `Authorization: Bearer` header carries; None for no header,
    another scheme or a token not in `tokens`.

    Each comparison takes the same time wherever the two differ (hmac.compare_digest), and every
    token is compared, so the answer's timing does not tell a caller how much of a guess was right.
    """
    given = header[len(_PREFIX) :].strip() if header[: len(_PREFIX)].lower() == _PREFIX else ""
    matched: list[Grant] = []
    for token, grant in tokens.items():
        if hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            matched.append(grant)
    return matched[0] if matched else None


# --- the count of requests ---------------------------------------------------------


def count(plane: Plane, scope: Scope, route: str, status: int, started: float) -> None:
    """Count one answered request: its time since `started` (`time.perf_counter`) by method and
    route, and a refusal (any status from 400) by the code in its state; `unknown` when none
    was written there (an answer not made by `refused`)."""
    code = scope["state"].get(REFUSAL, "unknown") if status >= 400 else None
    seconds = time.perf_counter() - started
    plane.metrics.observe(str(scope.get("method", "")), route, status, code, seconds)


class MetricsMiddleware(ASGIMiddleware):
    """Litestar's side of `count`: times each HTTP request and counts it once answered."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        """Pass the request on; count it with the status of its answer."""
        started = time.perf_counter()
        status = 0
        scope.setdefault("state", {})  # uvicorn gives one; a bare ASGI call may not

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await next_app(scope, receive, watch)
        finally:
            plane: Plane | None = getattr(scope["app"].state, "plane", None)
            if plane is not None and status:
                route = str(scope.get("path_template") or "unmatched")
                count(plane, scope, route, status, started)
