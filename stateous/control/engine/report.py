"""Report an outcome: `POST /tasks/{id}/report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.audit import REPORTED, acting
from stateous.control.engine.checks import check_held, locked_task, payload_errors, reject
from stateous.control.engine.hold import hold
from stateous.control.engine.moves import Schedule, apply_outcome, fail_token, take
from stateous.control.engine.route import failed_attempt
from stateous.control.engine.routing import (
    Refused,
    Routing,
    context_errors,
    decide,
    routing_context,
)
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import conflict, invalid
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import update_task
from stateous.model.durations import DurationError, parse_duration
from stateous.model.graph import WorkflowBody
from stateous.model.wire import OWN_EVENTS

NO_ERROR_TEXT = "the routine failed, and said no more"


@dataclass(frozen=True)
class Outcome:
    """A report's body, already checked for shape."""

    kind: str
    event: str | None = None
    payload: dict[str, Any] | None = None
    error: str | None = None
    context: dict[str, Any] | None = None
    schedules: Sequence[Schedule] = field(default_factory=tuple)
    attempt: int | None = None
    supervisor: str | None = None
    #: An outside report's operator; a supervisor's report has none.
    by: dict[str, Any] | None = None


def report(
    conn: Connection, clock: Clock, config: EngineConfig, task_id: int, outcome: Outcome
) -> TokenRecord:
    """Apply a task's outcome; answer the token after it."""
    tx = Tx.open(conn, clock, config)
    task, token = locked_task(tx, task_id)
    check_held(task, outcome.attempt)
    _check_reporter(task, outcome)
    if outcome.supervisor is None:
        acting(tx, token.token, REPORTED, outcome.by)
    body = config.body_of(token)
    if outcome.kind == "failed":
        token = failed_attempt(tx, body, token, task, outcome.error or NO_ERROR_TEXT)
    elif outcome.kind == "waiting":
        token = _waiting(tx, body, token, task, outcome)
    else:
        token = _event(tx, body, token, task, outcome)
    tx.flush()
    # The answer is built from what the report wrote: every change of the token
    # above returns its record updated alongside the row, so reading it back adds nothing.
    return token


def _check_reporter(task: TaskRecord, outcome: Outcome) -> None:
    if outcome.supervisor is not None:
        if task.status != "claimed" or task.claimed_by != outcome.supervisor:
            raise conflict("task_not_held", f"task {task.id} is not held by {outcome.supervisor!r}")
    elif outcome.kind == "waiting":
        raise conflict("task_not_held", "only the supervisor that holds a task reports it waiting")


def _writes(tx: Tx, body: WorkflowBody, token: TokenRecord, outcome: Outcome) -> Routing:
    """The routine's writes overlaid on the context; `422 invalid_context` if they break it."""
    writes = routing_context(body, token, "", None, outcome.context)
    errors = context_errors(tx, body, writes.context)
    if errors is not None:
        raise invalid("invalid_context", f"the context changes break the schema: {errors}")
    return writes


def check_schedules(tx: Tx, body: WorkflowBody, schedules: Sequence[Schedule]) -> None:
    """Each schedule's duration, event and payload (`422 invalid_payload`)."""
    for schedule in schedules:
        event = schedule.event
        try:
            parse_duration(schedule.after)
        except DurationError as exc:
            raise invalid("invalid_payload", f"a timer for {event!r}: {exc.message}") from exc
        spec = body.events.get(event)
        if spec is None or event in OWN_EVENTS:
            raise invalid(
                "invalid_payload",
                f"a timer names {event!r}, which is not an event of {body.name!r}",
            )
        errors = payload_errors(body, spec.payload, event, schedule.payload)
        if errors is not None:
            raise invalid("invalid_payload", f"a timer for {event!r}: {errors}")


def _waiting(
    tx: Tx, body: WorkflowBody, token: TokenRecord, task: TaskRecord, outcome: Outcome
) -> TokenRecord:
    writes = _writes(tx, body, token, outcome)
    check_schedules(tx, body, outcome.schedules)
    token = apply_outcome(tx, token, writes, outcome.schedules)
    # `waiting_since` is the `task_waiting` row's time: the inbox's order (migration 0014).
    update_task(tx.raw, task.id, status="waiting", lease_until=None, waiting_since=tx.now)
    tx.write(token.token, "task_waiting", {"task": task.id})
    return token


def _event(
    tx: Tx, body: WorkflowBody, token: TokenRecord, task: TaskRecord, outcome: Outcome
) -> TokenRecord:
    event = str(outcome.event)
    writes = _writes(tx, body, token, outcome)
    check_schedules(tx, body, outcome.schedules)
    emits = body.states[task.state].emits
    if event not in emits:
        listed = ", ".join(emits) or "nothing"
        reason = f"{task.state!r} may not emit {event!r}; it may emit: {listed}"
        raise reject(tx, token, event, Refused(reason), "event_not_allowed")
    spec = body.events.get(event)
    errors = payload_errors(body, spec.payload if spec else None, event, outcome.payload)
    if errors is not None:
        raise invalid("invalid_payload", f"{event}: {errors}")
    routing = routing_context(body, token, event, outcome.payload, outcome.context)
    errors = context_errors(tx, body, routing.context)
    if errors is not None:
        raise invalid("invalid_payload", f"{event}: {errors}")
    decision = decide(tx, body, token, event, outcome.payload, routing.context)
    if isinstance(decision, Refused) and not decision.failing:
        raise reject(tx, token, event, decision, "event_not_allowed")
    if token.status == "paused":
        return _hold_outcome(tx, token, task, outcome)
    if isinstance(decision, Refused):
        token = apply_outcome(tx, token, writes, outcome.schedules)
        return fail_token(tx, body, token, decision.reason)
    return take(
        tx,
        body,
        token,
        decision,
        event,
        outcome.payload,
        routing=routing,
        schedules=outcome.schedules,
    )


def _hold_outcome(tx: Tx, token: TokenRecord, task: TaskRecord, outcome: Outcome) -> TokenRecord:
    """A paused token: hold the whole outcome, and the task's work is done."""
    schedules = [s.as_data() for s in outcome.schedules]
    hold(
        tx, token, str(outcome.event), outcome.payload, task=task,
        writes=outcome.context, schedules=schedules,
    )  # fmt: skip
    update_task(tx.raw, task.id, status="done", lease_until=None)
    tx.write(token.token, "task_done", {"task": task.id})
    return token
