"""Parallel states' children: their ids and contexts, whether they can start, and
the join's branch entries. The moves that start, cancel and join them are in `moves`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.control.engine.choice import choose_start, context_errors
from stateous.control.engine.tx import Tx
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import get_token, token_folded
from stateous.model.graph import StateSpec
from stateous.model.validation import validator_for

MAX_ID = 128


def child_id(parent: str, state: str, visit: int, workflow: str) -> str:
    """`<parent>.<state>.<visit>.<workflow>`."""
    return f"{parent}.{state}.{visit}.{workflow}"


def child_context(
    tx: Tx,
    workflow: str,
    context: Mapping[str, Any],
    inputs: tuple[str, ...],
    structure: str | None,
) -> dict[str, Any]:
    """The parent's context restricted to `inputs` (present keys, in order), plus defaults of
    the child's model in the parent's version (`structure`)."""
    given = {key: context[key] for key in inputs if key in context}
    body = tx.config.body(workflow, structure)
    if body.context is None:
        return given
    return validator_for(body.schemas, body.context).with_defaults(given)


def children_problem(
    tx: Tx,
    parent: str,
    spec: StateSpec,
    visit: int,
    context: Mapping[str, Any],
    structure: str | None,
) -> str | None:
    """Why a child of `spec` (a state of the version `structure`) could not start, or None
    when all can (changes nothing)."""
    for workflow in spec.parallel:
        cid = child_id(parent, spec.name, visit, workflow)
        if len(cid) > MAX_ID:
            return (
                f"the child {cid!r} of {spec.name!r} would have an id longer than 128 "
                "characters; use a shorter token id"
            )
        if token_folded(tx.conn, cid) is not None:
            return f"the child id {cid!r} is taken by another token"
        given = child_context(tx, workflow, context, spec.inputs, structure)
        problem = _start_problem(tx, cid, workflow, given, structure)
        if problem is not None:
            return f"the child {workflow!r} of {spec.name!r} cannot start: {problem}"
    return None


def _start_problem(
    tx: Tx, cid: str, workflow: str, context: dict[str, Any], structure: str | None
) -> str | None:
    body = tx.config.body(workflow, structure)
    errors = context_errors(tx, body, context)
    if errors is not None:
        return f"its context breaks the schema: {errors}"
    chosen = choose_start(body, context)
    if isinstance(chosen, str):
        return chosen
    target = body.states.get(chosen.target)
    if target is not None and target.is_parallel:
        return children_problem(tx, cid, target, 1, context, structure)
    return None


def current_children(tx: Tx, parent: TokenRecord, spec: StateSpec) -> list[TokenRecord]:
    """The children of the parent's current visit of `spec`, in `parallel` order."""
    found = []
    for workflow in spec.parallel:
        child = get_token(tx.conn, child_id(parent.token, spec.name, parent.visit, workflow))
        if child is not None:
            found.append(child)
    return found


def branch_entry(tx: Tx, child: TokenRecord) -> dict[str, Any]:
    """One entry of the `joined` payload."""
    rows = tx.ledger(child.token, ("event_accepted", "entered"))
    last_entered = max((r.seq for r in rows if r.kind == "entered"), default=0)
    accepted = [r for r in rows if r.kind == "event_accepted" and r.seq < last_entered]
    payload = accepted[-1].data.get("payload") if accepted else None
    return {
        "workflow": child.workflow, "token": child.token, "status": child.status,
        "final": child.state, "payload": payload, "context": child.context,
    }  # fmt: skip
