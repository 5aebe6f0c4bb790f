"""Route one event on one token (spec 30 §2.3), and a failed attempt (§2.10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stateous.control.engine.hold import hold
from stateous.control.engine.moves import ENDED, fail_token, take
from stateous.control.engine.routing import (
    Refused,
    Routing,
    context_errors,
    decide,
    routing_context,
)
from stateous.control.engine.tx import Tx
from stateous.control.store import queries as q
from stateous.control.store.queries import TaskRecord, TokenRecord
from stateous.model.graph import WorkflowBody


def route(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    event: str,
    payload: Any,
    *,
    routing: Routing | None = None,
    task: TaskRecord | None = None,
    branches: Sequence[Mapping[str, Any]] | None = None,
    state_into: str | None = None,
) -> TokenRecord | Refused:
    """Hold, fail, refuse or move: a plain refusal is returned for the caller to record.

    Used where there is no outside caller (clock, `error`, `joined`, resume), so an `into=`
    value that breaks the model is a refusal, not a 422.
    """
    if token.status in ENDED:
        return Refused(f"token {token.token!r} is {token.status}; it takes no events")
    if token.status == "paused":
        hold(tx, token, event, payload, task=task)
        return token
    if routing is None:
        routing = routing_context(body, token, event, payload, state_into=state_into)
    errors = context_errors(tx, body, routing.context)
    if errors is not None:
        return Refused(f"the context changes break the schema: {errors}")
    decision = decide(tx, body, token, event, payload, routing.context, branches)
    if isinstance(decision, Refused):
        if decision.failing:
            return fail_token(tx, body, token, decision.reason)
        return decision
    return take(tx, body, token, decision, event, payload, routing=routing)


def failed_attempt(
    tx: Tx, body: WorkflowBody, token: TokenRecord, task: TaskRecord, error: str
) -> TokenRecord:
    """A failed attempt of a worked-on task: retry it, or take `error`, or fail the token."""
    tx.write(token.token, "task_failed", {"task": task.id, "error": error})
    spec = body.states[task.state]
    if task.attempt <= spec.retries:
        q.update_task(tx.conn, task.id, status="queued", claimed_by=None, lease_until=None)
        tx.write(token.token, "task_retrying", {"task": task.id, "attempt": task.attempt + 1})
        q.cancel_timers(tx.conn, token.token, kind="timer")
        return token
    q.update_task(tx.conn, task.id, status="failed", lease_until=None)
    state = task.state
    if token.status == "paused":
        hold(tx, token, "error", None, task=task)
        return token
    if not body.transitions_from(state, "error"):
        reason = f"{state!r} failed, and has no transition on 'error': {error}"
        return fail_token(tx, body, token, reason)
    result = route(tx, body, token, "error", None)
    if isinstance(result, Refused):
        reason = f"{state!r} failed, and 'error' cannot move it: {result.reason}"
        return fail_token(tx, body, token, reason)
    return result
