"""Optional authentication (spec 70 §5): every route but `GET /health` needs the bearer token."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from litestar import Request

from stateous.control.errors import Refusal

__all__ = ["UNAUTHORIZED", "check_bearer", "check_header"]

UNAUTHORIZED = (
    "this control plane needs the header 'Authorization: Bearer <token>' with its token, "
    "and this request has no valid one"
)
_PREFIX = "bearer "


def check_bearer(request: Request[Any, Any, Any], tokens: Mapping[str, str | None]) -> str | None:
    """Refuse `401 unauthorized` unless the request carries one of `tokens` (none: nothing to
    check); answer that token's name (spec 80 §1: the actor of what the request does), or None.

    Each comparison takes the same time wherever the two differ (hmac.compare_digest), and every
    token is compared, so the answer's timing does not tell a caller how much of a guess was right.
    """
    return check_header(request.url.path, request.headers.get("authorization", ""), tokens)


def check_header(path: str, header: str, tokens: Mapping[str, str | None]) -> str | None:
    """`check_bearer` for a request's path and `Authorization` header."""
    if not tokens or path == "/health":
        return None
    given = header[len(_PREFIX) :].strip() if header[: len(_PREFIX)].lower() == _PREFIX else ""
    matched: list[str | None] = []
    for token, name in tokens.items():
        if hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            matched.append(name)
    if not matched:
        raise Refusal("unauthorized", UNAUTHORIZED, 401)
    return matched[0]
