"""A failed attempt; `route` lives with the moves, as the join routes too."""

from __future__ import annotations

from stateous.control.engine.hold import hold
from stateous.control.engine.moves import fail_token
from stateous.control.engine.moves import route as route
from stateous.control.engine.routing import Refused
from stateous.control.engine.tx import Tx
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import update_task
from stateous.control.store.timers import cancel_timers
from stateous.model.graph import WorkflowBody


def failed_attempt(
    tx: Tx, body: WorkflowBody, token: TokenRecord, task: TaskRecord, error: str
) -> TokenRecord:
    """A failed attempt of a worked-on task: retry it, or take `error`, or fail the token."""
    tx.write(token.token, "task_failed", {"task": task.id, "error": error})
    spec = body.states[task.state]
    if task.attempt <= spec.retries:
        update_task(tx.raw, task.id, status="queued", claimed_by=None, lease_until=None)
        tx.write(token.token, "task_retrying", {"task": task.id, "attempt": task.attempt + 1})
        cancel_timers(tx.raw, token.token, kind="timer")
        return token
    update_task(tx.raw, task.id, status="failed", lease_until=None)
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
