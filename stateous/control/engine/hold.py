"""Hold an event that arrives at a paused token."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stateous.control.engine.tx import Tx
from stateous.control.store.records import LedgerRecord, TaskRecord, TokenRecord
from stateous.control.store.tokens import get_token


def held_events(tx: Tx, token: str) -> list[LedgerRecord]:
    """The token's `event_deferred` rows written after its most recent `paused` row."""
    rows = tx.ledger(token, ("paused", "event_deferred"))
    last_pause = max((row.seq for row in rows if row.kind == "paused"), default=0)
    return [row for row in rows if row.kind == "event_deferred" and row.seq > last_pause]


def family(tx: Tx, top: str) -> list[TokenRecord]:
    """The top token, then each child of its current visit in `parallel` order, depth first."""
    token = get_token(tx.conn, top)
    if token is None:
        return []
    members = [token]
    body = tx.config.body_of(token)
    spec = body.states.get(token.state)
    if spec is not None and spec.is_parallel:
        for workflow in spec.parallel:
            members.extend(family(tx, f"{token.token}.{token.state}.{token.visit}.{workflow}"))
    return members


def hold(
    tx: Tx,
    token: TokenRecord,
    event: str,
    payload: Any,
    *,
    key: str | None = None,
    task: TaskRecord | None = None,
    writes: Mapping[str, Any] | None = None,
    schedules: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Write `event_deferred` with the next arrival number of the family."""
    # Only paused members hold events now: a member that ended since the last pause keeps its
    # replayed or dropped `event_deferred` rows after its last `paused` row.
    members = [m for m in family(tx, tx.top_of(token)) if m.status == "paused"]
    arrival = 1 + sum(len(held_events(tx, m.token)) for m in members)
    data: dict[str, Any] = {"event": event, "payload": payload}
    if task is not None:
        data.update(state=task.state, visit=task.visit, task=task.id)
    data["arrival"] = arrival
    if writes:
        data["context"] = dict(writes)
    if schedules:
        data["schedules"] = list(schedules)
    tx.write(token.token, "event_deferred", data, key)
