"""Move a token by hand: `POST /tokens/{id}/move`.

The operator's override: the current visit is left as a cancel leaves it (open tasks
`task_cancelled`, pending timers cancelled, live children cancelled with `the parent was moved`),
the context writes are saved, `moved {"from", "to", "keys"?, "by"?}` is written, and `to` is
entered as a new visit. A failed token becomes active; a paused token stays paused (its new task
waits for the resume, and new children start paused with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.hold import family
from stateous.control.engine.moves import enter, leave
from stateous.control.engine.repair import by_data, entry_problem, repaired_token
from stateous.control.engine.routing import context_errors
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import conflict, invalid
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import get_token
from stateous.model.graph import END, START, WorkflowBody

MOVABLE = ("active", "paused", "failed")
CHILD_REASON = "the parent was moved"
_RESERVED = {START, END, "START", "END"}


def check_move_body(to: Any, context: Any) -> None:
    """The shape checks of `to` and `context` (no row)."""
    if not isinstance(to, str):
        raise invalid("invalid_body", "'to' is the name of a state of the token's workflow")
    if context is not None and not isinstance(context, dict):
        raise invalid("invalid_context", "'context' must be a JSON object, or null")


def move(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    to: Any,
    context: Any = None,
    by: Mapping[str, Any] | None = None,
) -> TokenRecord:
    """Move a live or failed top token to the state `to`; every refusal writes nothing."""
    check_move_body(to, context)
    tx = Tx.open(conn, clock, config)
    token = repaired_token(tx, token_id, "moved")
    if token.status not in MOVABLE:
        raise conflict(
            "token_not_active",
            f"token {token.token!r} is {token.status}; only an active, paused or failed token "
            "can be moved",
        )
    body = config.body_of(token)
    _check_target(body, to)
    writes = dict(context or {})
    merged = {**token.context, **writes}
    errors = context_errors(tx, body, merged) if writes else None
    if errors is not None:
        raise invalid("invalid_context", f"the context changes break the schema: {errors}")
    entry_problem(tx, body, token, to, merged)
    paused = token.status == "paused"
    leave(tx, body, token, None, CHILD_REASON)
    if writes:
        tx.update_token(token.token, context=merged)
    data: dict[str, Any] = {"from": token.state, "to": to}
    if writes:
        data["keys"] = sorted(writes)
    tx.write(token.token, "moved", by_data(data, by))
    if token.status == "failed":
        tx.update_token(token.token, status="active")
    token = enter(tx, body, replace(token, context=merged, status="active"), to)
    if paused:
        pause_family(tx, token)
    tx.flush()
    return get_token(conn, token.token) or token


def _check_target(body: WorkflowBody, to: str) -> None:
    """`422 unknown_state` unless `to` is a state of the token's workflow."""
    if to in _RESERVED:
        raise invalid(
            "unknown_state",
            f"a token cannot be moved to {to!r}: 'to' names a state of {body.name!r}",
        )
    if to not in body.states:
        raise invalid("unknown_state", f"the workflow {body.name!r} has no state {to!r}")


def pause_family(tx: Tx, token: TokenRecord) -> None:
    """Keep a moved paused token paused: itself, and the children its entry just started."""
    tx.update_token(token.token, status="paused")
    for member in family(tx, token.token)[1:]:
        if member.status == "active":
            tx.update_token(member.token, status="paused")
            tx.write(member.token, "paused", {})
