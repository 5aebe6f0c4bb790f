"""Parallel states: the children's start and cancel (spec 30 §3.14), and the join (§3.15)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.control.engine.moves import LIVE, cancel_token, create_token, fail_token
from stateous.control.engine.routing import Refused, choose_start, context_errors
from stateous.control.engine.tx import Tx
from stateous.control.store import queries as q
from stateous.control.store.queries import TokenRecord
from stateous.model.graph import StateSpec

MAX_ID = 128


def child_id(parent: str, state: str, visit: int, workflow: str) -> str:
    """`<parent>.<state>.<visit>.<workflow>`."""
    return f"{parent}.{state}.{visit}.{workflow}"


def child_context(
    tx: Tx, workflow: str, context: Mapping[str, Any], inputs: tuple[str, ...]
) -> dict[str, Any]:
    """The parent's context restricted to `inputs` (present keys, in order), plus defaults."""
    given = {key: context[key] for key in inputs if key in context}
    body = tx.config.body(workflow)
    if body.context is None:
        return given
    return tx.config.model(body.context).with_defaults(given)


def children_problem(
    tx: Tx, parent: str, spec: StateSpec, visit: int, context: Mapping[str, Any]
) -> str | None:
    """Why a child of `spec` could not start, or None when all can (changes nothing)."""
    for workflow in spec.parallel:
        cid = child_id(parent, spec.name, visit, workflow)
        if len(cid) > MAX_ID:
            return (
                f"the child {cid!r} of {spec.name!r} would have an id longer than 128 "
                "characters; use a shorter token id"
            )
        if q.token_folded(tx.conn, cid) is not None:
            return f"the child id {cid!r} is taken by another token"
        problem = _start_problem(
            tx, cid, workflow, child_context(tx, workflow, context, spec.inputs)
        )
        if problem is not None:
            return f"the child {workflow!r} of {spec.name!r} cannot start: {problem}"
    return None


def _start_problem(tx: Tx, cid: str, workflow: str, context: dict[str, Any]) -> str | None:
    body = tx.config.body(workflow)
    errors = context_errors(tx, body, context)
    if errors is not None:
        return f"its context breaks the schema: {errors}"
    chosen = choose_start(body, context)
    if isinstance(chosen, str):
        return chosen
    target = body.states.get(chosen.target)
    if target is not None and target.is_parallel:
        return children_problem(tx, cid, target, 1, context)
    return None


def start_children(tx: Tx, parent: TokenRecord, spec: StateSpec, visit: int) -> None:
    """`branch_started` on the parent and a new child token, per workflow in order."""
    for workflow in spec.parallel:
        cid = child_id(parent.token, spec.name, visit, workflow)
        tx.write(parent.token, "branch_started", {"workflow": workflow, "token": cid})
        context = child_context(tx, workflow, parent.context, spec.inputs)
        body = tx.config.body(workflow)
        chosen = choose_start(body, context)
        if isinstance(chosen, str):  # checked by Decide; a graph changed under us
            raise AssertionError(chosen)
        create_token(tx, body, cid, context, chosen, parent=parent.token)


def current_children(tx: Tx, parent: TokenRecord, spec: StateSpec) -> list[TokenRecord]:
    """The children of the parent's current visit of `spec`, in `parallel` order."""
    found = []
    for workflow in spec.parallel:
        child = q.get_token(tx.conn, child_id(parent.token, spec.name, parent.visit, workflow))
        if child is not None:
            found.append(child)
    return found


def cancel_live_children(tx: Tx, parent: TokenRecord, spec: StateSpec, reason: str) -> None:
    """Cancel each live child of the current visit with `cancelled {reason}`."""
    for child in current_children(tx, parent, spec):
        if child.status in LIVE:
            cancel_token(tx, tx.config.body(child.workflow), child, {"reason": reason})


def branch_entry(tx: Tx, child: TokenRecord) -> dict[str, Any]:
    """One entry of the `joined` payload (spec 30 §2.14)."""
    rows = tx.ledger(child.token, ("event_accepted", "entered"))
    last_entered = max((r.seq for r in rows if r.kind == "entered"), default=0)
    accepted = [r for r in rows if r.kind == "event_accepted" and r.seq < last_entered]
    payload = accepted[-1].data.get("payload") if accepted else None
    return {
        "workflow": child.workflow, "token": child.token, "status": child.status,
        "final": child.state, "payload": payload, "context": child.context,
    }  # fmt: skip


def check_join(tx: Tx, child: TokenRecord) -> None:
    """The join check of a child that just completed or failed."""
    from stateous.control.engine.route import route

    if child.parent is None:
        return
    parent = q.get_token(tx.conn, child.parent)
    if parent is None or parent.status != "active":
        return
    body = tx.config.body(parent.workflow)
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
