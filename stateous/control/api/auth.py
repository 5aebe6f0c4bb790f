"""Optional authentication (spec 70 §5): every route but `GET /health` needs the bearer token."""

from __future__ import annotations

import hmac
from typing import Any

from litestar import Request

from stateous.control.errors import Refusal

__all__ = ["UNAUTHORIZED", "check_bearer"]

UNAUTHORIZED = (
    "this control plane needs the header 'Authorization: Bearer <token>' with its token, "
    "and this request has no valid one"
)
_PREFIX = "bearer "


def check_bearer(request: Request[Any, Any, Any], token: str | None) -> None:
    """Refuse `401 unauthorized` unless the request carries `token` (no token: nothing to check).

    The comparison takes the same time wherever the two differ (hmac.compare_digest), so the
    answer's timing does not tell a caller how much of a guess was right.
    """
    if token is None or request.url.path == "/health":
        return
    header = request.headers.get("authorization", "")
    given = header[len(_PREFIX) :].strip() if header[: len(_PREFIX)].lower() == _PREFIX else ""
    if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        raise Refusal("unauthorized", UNAUTHORIZED, 401)
