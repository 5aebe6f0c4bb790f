"""Retry a failed token: `POST /tokens/{id}/retry`.

A failed top token becomes `active` and enters again the state it failed in, as a new visit:
`retried {"state", "by"?}`, then the ordinary rows of entering (a new task whose first claim is
attempt 1, the timeout set again, new children for a parallel state). The failure stays in the
history, and `count(...)` guards go on counting the token's whole life.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.moves import enter
from stateous.control.engine.repair import by_data, entry_problem, repaired_token
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import conflict
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import get_token
from stateous.model.graph import START, WorkflowBody


def retry(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    by: Mapping[str, Any] | None = None,
) -> TokenRecord:
    """Enter the failed token's state again; every refusal writes nothing."""
    tx = Tx.open(conn, clock, config)
    token = repaired_token(tx, token_id, "retried")
    if token.status != "failed":
        raise conflict(
            "token_not_failed",
            f"token {token.token!r} is {token.status}; only a failed token can be retried",
        )
    body = config.body_of(token)
    _check_state(token, body)
    entry_problem(tx, body, token, token.state, token.context)
    tx.update_token(token.token, status="active")
    token = replace(token, status="active")
    tx.write(token.token, "retried", by_data({"state": token.state}, by))
    token = enter(tx, body, token, token.state)
    tx.flush()
    return get_token(conn, token.token) or token


def _check_state(token: TokenRecord, body: WorkflowBody) -> None:
    """`409 token_not_failed` when there is no state to enter again."""
    if token.state == START:
        raise conflict(
            "token_not_failed",
            f"token {token.token!r} failed at START, before it entered any state: there is no "
            "state to enter again; move it to a state, or start a new token",
        )
    if token.state not in body.states:
        raise conflict(
            "token_not_failed",
            f"token {token.token!r} failed in {token.state!r}, which the served workflow no "
            "longer has; move it to a state instead",
        )
