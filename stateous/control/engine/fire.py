"""Fire an event from outside: `POST /tokens/{id}/events/{event}`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.audit import FIRED, acting
from stateous.control.engine.checks import no_token, payload_errors, reject
from stateous.control.engine.hold import hold
from stateous.control.engine.moves import ENDED, fail_token, take
from stateous.control.engine.routing import Refused, context_errors, decide, routing_context
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import invalid
from stateous.control.store.ledger import key_used
from stateous.control.store.records import TokenRecord
from stateous.model.wire import OWN_EVENTS


@dataclass(frozen=True)
class Fired:
    """The token after a fire; `duplicate` when the key was used already."""

    token: TokenRecord
    duplicate: bool = False


def check_fire_input(payload: Any, key: str | None) -> None:
    """The form checks of the payload and the idempotency key (no row)."""
    if payload is not None and not isinstance(payload, dict):
        raise invalid("invalid_payload", "'payload' must be a JSON object, or null")
    if key is None:
        return
    if not 1 <= len(key) <= 256:
        raise invalid("invalid_payload", "an idempotency key has 1 to 256 characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise invalid("invalid_payload", "an idempotency key has no control characters")


def fire(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    event: str,
    payload: Any,
    key: str | None = None,
    by: Mapping[str, Any] | None = None,
) -> Fired:
    """Fire `event` at a token; a recorded refusal is committed, then raised.

    With `by`, the `event_accepted` or `event_deferred` row carries it."""
    check_fire_input(payload, key)
    tx = Tx.open(conn, clock, config)
    token = tx.lock_token(token_id)
    if token is None:
        raise no_token(token_id)
    acting(tx, token.token, FIRED, by)
    if key is not None and key_used(conn, token.token, key):
        return Fired(token, duplicate=True)
    body = config.body_of(token)
    if token.status in ENDED:
        reason = f"token {token.token!r} is {token.status}; it takes no events"
        raise reject(tx, token, event, Refused(reason), "token_not_active")
    if event in OWN_EVENTS:
        reason = f"{event!r} is Stateous's own event; only Stateous fires it"
        raise reject(tx, token, event, Refused(reason), "event_not_allowed")
    spec = body.events.get(event)
    if spec is None:
        reason = f"the workflow {body.name!r} has no event {event!r}"
        raise reject(tx, token, event, Refused(reason), "event_not_allowed")
    errors = payload_errors(body, spec.payload, event, payload)
    if errors is not None:
        raise invalid("invalid_payload", f"{event}: {errors}")
    if token.status == "paused":
        hold(tx, token, event, payload, key=key)
        tx.flush()
        return Fired(token)
    routing = routing_context(body, token, event, payload)
    errors = context_errors(tx, body, routing.context)
    if errors is not None:
        raise invalid("invalid_payload", f"{event}: {errors}")
    decision = decide(tx, body, token, event, payload, routing.context)
    if isinstance(decision, Refused):
        if not decision.failing:
            raise reject(tx, token, event, decision, "event_not_allowed")
        token = fail_token(tx, body, token, decision.reason)
    else:
        token = take(tx, body, token, decision, event, payload, key=key, routing=routing)
    tx.flush()
    return Fired(token)
