"""Checks shared by the task routes: the task, the attempt rule, held."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.control.engine.moves import WORKED_ON
from stateous.control.engine.read_ahead import taken_ahead
from stateous.control.engine.routing import Refused
from stateous.control.engine.tx import Tx
from stateous.control.errors import conflict, not_found, rejected
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import task_token_seq
from stateous.model.graph import WorkflowBody
from stateous.model.validation import validator_for


def no_token(token_id: str) -> Exception:
    """`404 token_not_found`."""
    return not_found("token_not_found", f"there is no token {token_id!r}")


def locked_task(tx: Tx, task_id: int) -> tuple[TaskRecord, TokenRecord]:
    """The task and its token, read again after the family lock (or as read ahead with it,
    `read_ahead`); `404` if unknown."""
    found = taken_ahead(task_id)
    if found is None:
        tx.lock_task_family(task_id)
        # The token's last seq comes with it (after the lock): its ledger rows follow it.
        found = task_token_seq(tx.conn, task_id)
    if found is None:
        raise not_found("task_not_found", f"there is no task {task_id}")
    task, token, seq = found
    tx.know_seq(token.token, seq)
    return task, token


def check_held(task: TaskRecord, attempt: int | None) -> None:
    """The attempt rule, then the task must be claimed or waiting."""
    if attempt is not None and attempt != task.attempt:
        code = "attempt_over" if attempt < task.attempt else "task_not_held"
        raise conflict(code, f"task {task.id} is at attempt {task.attempt}, not attempt {attempt}")
    if task.status not in WORKED_ON:
        raise conflict("task_not_held", f"task {task.id} is {task.status}; no one works on it now")


def reject(tx: Tx, token: TokenRecord, event: str, refusal: Refused, code: str) -> Exception:
    """Record `event_rejected` and answer the refusal that commits it."""
    tx.write(token.token, "event_rejected", {"event": event, "reason": refusal.reason})
    tx.flush()
    return rejected(code, refusal.reason)


def payload_errors(
    body: WorkflowBody, model: str | None, event: str, payload: Mapping[str, Any] | None
) -> str | None:
    """Errors of a payload against the event's model in `body`'s graph (null checked as
    `{}`), or None."""
    if model is None:
        return None if not payload else f"{event!r} carries no payload"
    return validator_for(body.schemas, model).errors(dict(payload or {}))
