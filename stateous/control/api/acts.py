"""The `by` of an operator's request: the body's, or the named token's actor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Request

from stateous.control.api import bodies


def actor_of(request: Request[Any, Any, Any]) -> str | None:
    """The name of the token that authenticated the request, if it has one."""
    actor: str | None = request.state.get("actor")
    return actor


def by_of(request: Request[Any, Any, Any], body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request's `by` as its ledger rows carry it, or None (`422 invalid_body` if bad)."""
    return bodies.by_arg(body, actor_of(request))
