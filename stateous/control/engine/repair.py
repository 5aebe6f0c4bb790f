"""The checks and pieces shared by an operator's retry and move of a top token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stateous.control.engine.checks import no_token
from stateous.control.engine.routing import next_visit
from stateous.control.engine.tx import Tx
from stateous.control.errors import conflict, invalid
from stateous.control.store.records import TokenRecord
from stateous.model.graph import WorkflowBody

_BASE = {"retried": "retry", "moved": "move"}


def repaired_token(tx: Tx, token_id: str, verb: str) -> TokenRecord:
    """The locked top token, or `404 token_not_found`, or `409 child_token`."""
    token = tx.lock_token(token_id)
    if token is None:
        raise no_token(token_id)
    if token.parent is not None:
        top = tx.top_of(token)
        raise conflict(
            "child_token",
            f"token {token.token!r} is a child of {token.parent!r}: it is part of its parent's "
            f"work, and cannot be {verb} on its own; {_BASE[verb]} {top!r} instead",
        )
    return token


def by_data(data: dict[str, Any], by: Mapping[str, Any] | None) -> dict[str, Any]:
    """`data` with `by` as its last key when given; without it, unchanged."""
    if by is not None:
        data["by"] = dict(by)
    return data


def entry_problem(
    tx: Tx, body: WorkflowBody, token: TokenRecord, state: str, context: Mapping[str, Any]
) -> None:
    """`422 invalid_context` when a parallel `state` could not start its children now.

    The same check as a start's: the children of the next
    visit must all be able to start, or the token is not changed at all.
    """
    spec = body.states[state]
    if not spec.is_parallel:
        return
    from stateous.control.engine.children import children_problem

    visit = next_visit(tx, token.token, state)
    problem = children_problem(tx, token.token, spec, visit, context, body.structure)
    if problem is not None:
        raise invalid("invalid_context", problem)
