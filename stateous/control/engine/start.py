"""Start a token: `POST /tokens`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from stateous.control.clock import Clock
from stateous.control.engine.audit import acting
from stateous.control.engine.moves import create_token
from stateous.control.engine.routing import choose_start, context_errors
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import invalid
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import token_any_case
from stateous.model.graph import TransitionSpec, WorkflowBody
from stateous.model.validation import validator_for

TOKEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class _ScheduledTx(Tx):
    """A start by a schedule: the top token's `started` row carries
    `"schedule": <name>` as its last key."""

    schedule: str = ""

    def write(self, token: str, kind: str, data: dict[str, Any], key: str | None = None) -> None:
        """Tx.write, the schedule's name added to the top token's `started` row."""
        if kind == "started" and "parent" not in data:
            data = {**data, "schedule": self.schedule}
        super().write(token, kind, data, key)


@dataclass(frozen=True)
class Started:
    """The token after a start, and whether it is new (`201`) or existed (`200`)."""

    token: TokenRecord
    created: bool


def check_start_body(token: Any, context: Any) -> None:
    """The shape checks of `token` and `context` (no row)."""
    if not isinstance(token, str):
        raise invalid("invalid_token_id", "'token' is the token's id: a string")
    if context is not None and not isinstance(context, dict):
        raise invalid("invalid_context", "'context' must be a JSON object, or null")


def check_new_id(token_id: str, other: str | None) -> None:
    """The checks of a new token's id: its form, and no token equal to it ignoring case
    (`other`, the id of such a token, or None)."""
    if not TOKEN_ID.fullmatch(token_id):
        raise invalid(
            "invalid_token_id",
            "a token id is a letter or digit, then up to 127 letters, digits, '.', '_' or '-'",
        )
    if other is not None:
        raise invalid(
            "invalid_token_id",
            f"a token {other!r} already exists; token ids are compared without regard to case",
        )


def filled_context(body: WorkflowBody, context: Any) -> dict[str, Any]:
    """The starting context: the given keys, then the model's defaults of the others."""
    given = dict(context or {})
    return validator_for(body.schemas, body.context).with_defaults(given) if body.context else given


def start_problem(body: WorkflowBody, context: Any) -> str | None:
    """Why a token of `body` could not start on `context` (the sentence of the start's
    `invalid_context` refusal), or None: what a schedule's context is checked with when saved."""
    filled = filled_context(body, context)
    if body.context is not None:
        errors = validator_for(body.schemas, body.context).errors(filled)
        if errors is not None:
            return f"{body.name}: {errors}"
    chosen = choose_start(body, filled)
    return chosen if isinstance(chosen, str) else None


def starting(tx: Tx, body: WorkflowBody, context: Any) -> tuple[dict[str, Any], TransitionSpec]:
    """The starting context (the model's defaults filled in) and the transition out of START,
    or the `invalid_context` refusal."""
    filled = filled_context(body, context)
    errors = context_errors(tx, body, filled)
    if errors is not None:
        raise invalid("invalid_context", f"{body.name}: {errors}")
    chosen = choose_start(body, filled)
    if isinstance(chosen, str):
        raise invalid("invalid_context", chosen)
    return filled, chosen


def start(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: Any,
    context: Any,
    by: Mapping[str, Any] | None = None,
    schedule: str | None = None,
) -> Started:
    """Start a token, or answer the existing one unchanged; refusals write nothing.

    With `by`, the `started` row carries it as its last key; a start by a
    `schedule` (no `by`) carries the schedule's name instead."""
    check_start_body(token_id, context)
    tx = Tx.open(conn, clock, config)
    if schedule is not None:
        tx = _ScheduledTx(tx.raw, tx.now, tx.config, tx.dialect, schedule=schedule)
    acting(tx, token_id, frozenset({"started"}), by)
    # Lock first, so that two starts of one id take turns and the second sees the first.
    tx.lock_id(token_id)
    existing, other = token_any_case(conn, token_id)
    if existing is not None:
        return Started(existing, created=False)
    check_new_id(token_id, other)
    body = config.body(None)
    filled, chosen = starting(tx, body, context)
    target = body.states.get(chosen.target)
    if target is not None and target.is_parallel:
        from stateous.control.engine.children import children_problem

        problem = children_problem(tx, token_id, target, 1, filled, body.structure)
        if problem is not None:
            raise invalid("invalid_context", problem)
    try:
        created = create_token(tx, body, token_id, filled, chosen)
        tx.flush()
    except IntegrityError as exc:
        raise invalid(
            "invalid_token_id",
            "a token id differs only in case from one that another call made at the same time; "
            "token ids are compared without regard to case",
        ) from exc
    return Started(created, created=True)
