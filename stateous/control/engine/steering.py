"""The checks shared by pause, resume and cancel of a top token (no row on a refusal)."""

from __future__ import annotations

from stateous.control.engine.checks import no_token
from stateous.control.engine.tx import Tx
from stateous.control.errors import conflict
from stateous.control.store.records import TokenRecord


def steered_token(
    tx: Tx, token_id: str, verb: str, allowed: tuple[str, ...], rule: str
) -> TokenRecord:
    """The locked top token, or `404`, `409 child_token`, `409 token_not_active`."""
    token = tx.lock_token(token_id)
    if token is None:
        raise no_token(token_id)
    if token.parent is not None:
        top = tx.top_of(token)
        raise conflict(
            "child_token",
            f"token {token.token!r} is a child of {token.parent!r}: it is part of its parent's "
            f"work, and cannot be {verb} on its own; {verb_base(verb)} {top!r} instead",
        )
    if token.status not in allowed:
        raise conflict("token_not_active", f"token {token.token!r} is {token.status}; {rule}")
    return token


def verb_base(verb: str) -> str:
    """`paused` → `pause`, `resumed` → `resume`, `cancelled` → `cancel`."""
    return {"paused": "pause", "resumed": "resume", "cancelled": "cancel"}[verb]
