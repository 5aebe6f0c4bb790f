"""The shared procedures that move a token, with a parallel state's children
and the join, which routes the parent.

Each runs inside the caller's transaction and answers the token as it is afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from stateous.control.clock import iso
from stateous.control.engine.children import branch_entry, child_context, child_id, current_children
from stateous.control.engine.choice import choose_start, context_errors
from stateous.control.engine.hold import held_events, hold
from stateous.control.engine.routing import Refused, Routing, decide, next_visit, routing_context
from stateous.control.engine.tx import Tx
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import (
    insert_task,
    leave_and_queue,
    leave_tasks_and_timers,
    queue_next_visit,
)
from stateous.control.store.timers import insert_timer
from stateous.control.store.tokens import get_token, insert_token
from stateous.model.durations import parse_duration
from stateous.model.graph import END, START, STARTED, StateSpec, TransitionSpec, WorkflowBody

ENDED = frozenset({"completed", "failed", "cancelled"})
LIVE = frozenset({"active", "paused"})
WORKED_ON = frozenset({"claimed", "waiting"})


@dataclass(frozen=True)
class Schedule:
    """A routine's timer: fire `event` with `payload` `after` a duration."""

    event: str
    payload: dict[str, Any] | None
    after: str

    def as_data(self) -> dict[str, Any]:
        """The schedule as held in `event_deferred` (payload omitted when null)."""
        data: dict[str, Any] = {"event": self.event}
        if self.payload is not None:
            data["payload"] = self.payload
        data["after"] = self.after
        return data


def create_token(
    tx: Tx,
    body: WorkflowBody,
    token_id: str,
    context: dict[str, Any],
    transition: TransitionSpec,
    parent: str | None = None,
) -> TokenRecord:
    """Create a token: `started`, the row at START, `__started__`, the entry."""
    write_started(tx, token_id, context, parent)
    token = TokenRecord(
        token=token_id, state=START, status="active", visit=0, context=context,
        entered_at=tx.now, parent=parent, workflow=body.name if parent is not None else None,
        structure=body.structure,
    )  # fmt: skip
    target = body.states.get(transition.target)
    if target is not None and not target.is_parallel:
        # The common start: the row is inserted once, already in its first state.
        token = replace(token, state=target.name, visit=1)
        insert_token(tx.conn, token)
        task = insert_task(tx.raw, token.token, target.name, 1, tx.now, body.structure)
        write_first_entry(tx, token, task, target.timeout_seconds)
        return token
    insert_token(tx.conn, token)
    if transition.target == END:
        return end_token(tx, token, "completed", {})
    return enter(tx, body, token, transition.target)


def write_started(
    tx: Tx, token_id: str, context: dict[str, Any], parent: str | None = None
) -> None:
    """A new token's first rows: `started` (with its parent, for a child) and the event
    `__started__` accepted at START."""
    tx.new_tokens.add(token_id)
    started: dict[str, Any] = {"context": context}
    if parent is not None:
        started["parent"] = parent
    tx.write(token_id, "started", started)
    tx.write(token_id, "event_accepted", {"event": STARTED, "payload": None, "state": START})


def write_first_entry(tx: Tx, token: TokenRecord, task: int, timeout: int | None) -> None:
    """The entry of a new token into its first state (visit 1), whose row already holds it and
    whose task `task` is queued: `entered`, `task_queued`, and the state's timeout."""
    tx.write(token.token, "entered", {"state": token.state, "visit": 1})
    tx.write(token.token, "task_queued", {"task": task, "state": token.state})
    if timeout is not None:
        set_timer(tx, token, "timeout", None, timeout, "timeout")


def set_timer(
    tx: Tx, token: TokenRecord, event: str, payload: Any, seconds: int, kind: str
) -> None:
    """A pending timer for the token's current state and visit; writes `timer_set`."""
    due = tx.now + timedelta(seconds=seconds)
    insert_timer(
        tx.raw, token=token.token, state=token.state, visit=token.visit, event=event,
        payload=payload, set_at=tx.now, due_at=due, kind=kind,
    )  # fmt: skip
    tx.write(token.token, "timer_set", {"event": event, "due_at": iso(due)})


def enter(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    state: str,
    queued: tuple[int, int] | None = None,
) -> TokenRecord:
    """Enter a state: `entered`, then a task, a timeout, or the children. `queued`:
    the task and visit of this entry, queued already by `leave`."""
    spec = body.states[state]
    task = None
    if spec.is_parallel:
        visit = next_visit(tx, token.token, state)
    elif queued is not None:
        task, visit = queued
    else:  # the task and its visit in one statement
        task, visit = queue_next_visit(tx.raw, token.token, state, tx.now, body.structure)
    tx.write(token.token, "entered", {"state": state, "visit": visit})
    tx.update_token(token.token, state=state, visit=visit, entered_at=tx.now)
    token = replace(token, state=state, visit=visit, entered_at=tx.now)
    if task is not None:
        tx.write(token.token, "task_queued", {"task": task, "state": state})
    if spec.timeout_seconds is not None:
        set_timer(tx, token, "timeout", None, spec.timeout_seconds, "timeout")
    if spec.is_parallel:
        start_children(tx, token, spec, visit)
    return token


def leave(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    event: str | None,
    child_reason: str,
    enters: str | None = None,
) -> tuple[int, int] | None:
    """Leave the current state: close open tasks, cancel timers and live children.

    `enters`: the state entered next. When it queues a task and the state left has no
    children, that task is queued by the same statement (see `enter`'s `queued`), answered as
    its id and visit; else None."""
    spec = body.states.get(token.state)
    emits = spec.emits if spec is not None else ()
    # One statement closes them all (a claimed or waiting task is `done` on an emitted event).
    done = event is not None and event in emits
    parallel = spec is not None and spec.is_parallel
    target = body.states.get(enters) if enters is not None else None
    queued = None
    if target is not None and not target.is_parallel and not parallel:
        closed, queued = leave_and_queue(
            tx.raw, token.token, done, target.name, tx.now, body.structure
        )
    else:
        closed = leave_tasks_and_timers(tx.raw, token.token, done)
    for task_id, status in closed:
        tx.write(token.token, f"task_{status}", {"task": task_id})
    if spec is not None and parallel:
        cancel_live_children(tx, token, spec, child_reason)
    return queued


def apply_outcome(
    tx: Tx, token: TokenRecord, routing: Routing | None, schedules: Sequence[Schedule]
) -> TokenRecord:
    """Save context writes and `into=` (`context_changed`), then set each schedule."""
    if routing is not None and routing.keys:
        tx.update_token(token.token, context=routing.context)
        token = replace(token, context=routing.context)
        tx.write(token.token, "context_changed", {"keys": routing.keys})
    for schedule in schedules:
        set_timer(
            tx, token, schedule.event, schedule.payload, parse_duration(schedule.after), "timer"
        )
    return token


def take(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    transition: TransitionSpec,
    event: str,
    payload: Any,
    *,
    key: str | None = None,
    routing: Routing | None = None,
    schedules: Sequence[Schedule] = (),
) -> TokenRecord:
    """Take a transition: changes, `event_accepted`, the leave, the entry or the end."""
    token = apply_outcome(tx, token, routing, schedules)
    state = token.state
    tx.write(
        token.token, "event_accepted", {"event": event, "payload": payload, "state": state}, key
    )
    reason = f"the parent left {state!r} on {event!r}"
    queued = leave(tx, body, token, event, reason, enters=transition.target)
    if transition.target == END:
        return end_token(tx, token, "completed", {})
    return enter(tx, body, token, transition.target, queued)


def end_token(tx: Tx, token: TokenRecord, status: str, data: dict[str, Any]) -> TokenRecord:
    """End a token: status, its row, memory deleted, then the parent's join."""
    tx.update_token(token.token, status=status)
    token = replace(token, status=status)
    tx.write(token.token, status, data)
    tx.delete_all_memory(token.token)
    if token.parent is not None and status in ("completed", "failed"):
        check_join(tx, token)
    return token


def fail_token(tx: Tx, body: WorkflowBody, token: TokenRecord, reason: str) -> TokenRecord:
    """Fail a token: leave with no event, then `failed {reason}`."""
    leave(tx, body, token, None, f"the parent failed: {reason}")
    return end_token(tx, token, "failed", {"reason": reason})


def cancel_token(
    tx: Tx, body: WorkflowBody, token: TokenRecord, data: dict[str, Any]
) -> TokenRecord:
    """Cancel a token inside a transaction: drop held events, leave, `cancelled`."""
    if token.status == "paused":
        for row in held_events(tx, token.token):
            reason = "the token was cancelled"
            tx.write(token.token, "event_dropped", {"event": row.data["event"], "reason": reason})
    leave(tx, body, token, None, "the parent was cancelled")
    return end_token(tx, token, "cancelled", data)


def start_children(tx: Tx, parent: TokenRecord, spec: StateSpec, visit: int) -> None:
    """`branch_started` on the parent and a new child token, per workflow in order."""
    for workflow in spec.parallel:
        cid = child_id(parent.token, spec.name, visit, workflow)
        tx.write(parent.token, "branch_started", {"workflow": workflow, "token": cid})
        context = child_context(tx, workflow, parent.context, spec.inputs, parent.structure)
        body = tx.config.body(workflow, parent.structure)
        chosen = choose_start(body, context)
        if isinstance(chosen, str):  # checked by Decide; a graph changed under us
            raise AssertionError(chosen)
        create_token(tx, body, cid, context, chosen, parent=parent.token)


def cancel_live_children(tx: Tx, parent: TokenRecord, spec: StateSpec, reason: str) -> None:
    """Cancel each live child of the current visit with `cancelled {reason}`."""
    for child in current_children(tx, parent, spec):
        if child.status in LIVE:
            cancel_token(tx, tx.config.body_of(child), child, {"reason": reason})


def check_join(tx: Tx, child: TokenRecord) -> None:
    """The join check of a child that just completed or failed."""
    if child.parent is None:
        return
    parent = get_token(tx.conn, child.parent)
    if parent is None or parent.status != "active":
        return
    body = tx.config.body_of(parent)
    spec = body.states.get(parent.state)
    prefix = f"{parent.token}.{parent.state}.{parent.visit}."
    if spec is None or not spec.is_parallel or not child.token.startswith(prefix):
        return
    if spec.join == "all":
        children = current_children(tx, parent, spec)
        if any(c.status in LIVE for c in children):
            return
        branches = [branch_entry(tx, c) for c in children]
    else:
        branches = [branch_entry(tx, child)]
    payload = {"branches": branches}
    result = route(tx, body, parent, "joined", payload, branches=branches, state_into=spec.into)
    if isinstance(result, Refused):
        reason = f"the join of {spec.name!r} cannot move the token: {result.reason}"
        fail_token(tx, body, parent, reason)


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
