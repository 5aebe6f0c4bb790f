"""Claim a task (spec 30 §3.3): `POST /tasks/claim`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.engine.views import grant
from stateous.control.store import queries as q
from stateous.control.store.queries import TaskRecord, TokenRecord
from stateous.model.wire import GrantWire

CANDIDATES = 20


def served_pairs(states: Sequence[str]) -> list[tuple[str | None, str]]:
    """`<state>` → (None, state); `<workflow>/<state>` → (workflow, state), split at the last `/`."""
    pairs: dict[tuple[str | None, str], None] = {}
    for name in states:
        workflow, slash, state = name.rpartition("/")
        pairs[(workflow if slash else None, state)] = None
    return list(pairs)


def claim(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    supervisor: str,
    states: Sequence[str],
    request: str | None,
) -> GrantWire | None:
    """Claim the oldest queued task of the served states, or repeat a lost answer; None: `204`."""
    if not states and request is None:
        return None
    tx = Tx.open(conn, clock, config)
    if request is not None:
        row = q.claim_row_for_update(conn, supervisor)
        repeated = _repeat(tx, supervisor, request, row)
        if repeated is not None:
            return repeated
    taken = _new_claim(tx, supervisor, states)
    if request is not None:
        task_id, attempt = (taken[0].id, taken[0].attempt) if taken else (None, None)
        q.save_claim(conn, supervisor, request, task_id, attempt)
    if taken is None:
        return None
    task, token = taken
    tx.write(
        token.token,
        "task_claimed",
        {"task": task.id, "supervisor": supervisor, "attempt": task.attempt},
    )
    return grant(tx, task, token)


def _repeat(tx: Tx, supervisor: str, request: str, row: q.ClaimRecord) -> GrantWire | None:
    """The same grant again when the last claim's task is still held on the same attempt."""
    if row.request != request or row.task_id is None:
        return None
    task = q.get_task(tx.conn, row.task_id)
    if task is None or task.status != "claimed" or task.claimed_by != supervisor:
        return None
    if task.attempt != row.attempt or task.lease_until is None or task.lease_until < tx.now:
        return None
    until = tx.now + tx.config.lease
    q.update_task(tx.conn, task.id, lease_until=until)
    token = q.get_token(tx.conn, task.token)
    if token is None:
        return None
    return grant(tx, task, token)


def _new_claim(
    tx: Tx, supervisor: str, states: Sequence[str]
) -> tuple[TaskRecord, TokenRecord] | None:
    pairs = served_pairs(states)
    if not pairs:
        return None
    # SQLite's one writer always gets the first candidate; Postgres may find families busy.
    limit = CANDIDATES if tx.locks else 1
    for task, parent in q.queued_candidates(tx.conn, pairs, limit):
        if tx.locks:
            top = task.token if parent is None else _top(tx, task.token)
            if not tx.try_lock_id(top):
                continue
        found = q.task_and_token(tx.conn, task.id)
        if found is None:
            continue
        fresh, token = found
        if fresh.status != "queued" or token.status != "active":
            continue
        until = tx.now + tx.config.lease
        attempt = fresh.attempt + 1
        q.update_task(
            tx.conn,
            task.id,
            status="claimed",
            claimed_by=supervisor,
            attempt=attempt,
            lease_until=until,
        )
        return replace(
            fresh, status="claimed", claimed_by=supervisor, attempt=attempt, lease_until=until
        ), token
    return None


def _top(tx: Tx, token_id: str) -> str:
    token = q.get_token(tx.conn, token_id)
    return tx.top_of(token) if token is not None else token_id
