"""Resume: `POST /tokens/{id}/resume` applies the held events in arrival order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.audit import acting
from stateous.control.engine.hold import family, held_events
from stateous.control.engine.moves import Schedule, fail_token, take
from stateous.control.engine.routing import Refused, context_errors, decide, routing_context
from stateous.control.engine.steering import steered_token
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.store.records import LedgerRecord, TokenRecord
from stateous.control.store.timers import shift_pending_timers
from stateous.control.store.tokens import get_token
from stateous.model.wire import OWN_EVENTS


def resume(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    by: Mapping[str, Any] | None = None,
) -> TokenRecord:
    """Resume each paused member, give timers back the paused time, then replay held events;
    with `by`, the top token's `resumed` row carries it."""
    tx = Tx.open(conn, clock, config)
    token = steered_token(
        tx, token_id, "resumed", ("paused",), "only a paused token can be resumed"
    )
    acting(tx, token.token, frozenset({"resumed"}), by)
    collected: list[LedgerRecord] = []
    for member in family(tx, token.token):
        if member.status == "paused":
            collected.extend(_resume_member(tx, member))
    collected.sort(key=lambda row: (row.data.get("arrival", 0), row.at, row.token, row.seq))
    for row in collected:
        _apply(tx, row)
    tx.flush()
    return get_token(conn, token.token) or token


def _resume_member(tx: Tx, member: TokenRecord) -> list[LedgerRecord]:
    rows = tx.ledger(member.token, ("paused",))
    paused_at = rows[-1].at if rows else tx.now
    shift_pending_timers(tx.conn, member.token, paused_at, tx.now)
    tx.update_token(member.token, status="active")
    held = held_events(tx, member.token)
    tx.write(member.token, "resumed", {})
    return held


def _drop(tx: Tx, token: str, event: str, reason: str) -> None:
    tx.write(token, "event_dropped", {"event": event, "reason": reason})


def _apply(tx: Tx, row: LedgerRecord) -> None:
    """Apply one held event as if it arrived now, or drop it with its reason."""
    event, payload = str(row.data["event"]), row.data.get("payload")
    member = get_token(tx.conn, row.token)
    if member is None:
        return
    if member.status != "active":
        _drop(
            tx,
            member.token,
            event,
            f"token {member.token!r} is {member.status}; it takes no events",
        )
        return
    if "task" in row.data and (member.state, member.visit) != (
        row.data["state"],
        row.data["visit"],
    ):
        _drop(tx, member.token, event, "the token left the state it came from")
        return
    body = tx.config.body_of(member)
    writes = row.data.get("context") or {}
    routing = routing_context(body, member, event, payload, writes)
    errors = context_errors(tx, body, routing.context)
    if errors is not None:
        _drop(tx, member.token, event, f"the context changes break the schema: {errors}")
        return
    decision = decide(tx, body, member, event, payload, routing.context)
    if isinstance(decision, Refused):
        _drop(tx, member.token, event, decision.reason)
        if decision.failing or event in OWN_EVENTS:
            fail_token(tx, body, member, decision.reason)
        return
    tx.write(member.token, "event_replayed", {"event": event})
    schedules = [
        Schedule(s["event"], s.get("payload"), s["after"]) for s in row.data.get("schedules", [])
    ]
    take(tx, body, member, decision, event, payload, routing=routing, schedules=schedules)
