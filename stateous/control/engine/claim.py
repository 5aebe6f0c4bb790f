"""Claim tasks (spec 30 §3.3, spec 75 §1): `POST /tasks/claim`, with or without `max`."""

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
MAX_GRANTS = 64
"""The most tasks one claim may ask for with `max` (spec 75 §1)."""

# A claimed task, its token, and its grant's facts (the entering event, whether it has memory).
Taken = tuple[TaskRecord, TokenRecord, tuple[str, bool]]


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
    row = None if request is None else q.claim_row_for_update(conn, supervisor)
    if row is not None:
        repeated = _repeat(tx, supervisor, str(request), row)
        if repeated is not None:
            return repeated
    taken = _new_claims(tx, supervisor, states, 1)
    if row is not None:
        _save(tx, row, str(request), taken)
    grants = _granted(tx, supervisor, taken)
    return grants[0] if grants else None


def claim_many(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    supervisor: str,
    states: Sequence[str],
    request: str | None,
    most: int,
) -> list[GrantWire]:
    """Claim up to `most` of the oldest queued tasks in one operation (spec 75 §1), or repeat
    the last claim's grants that this supervisor still holds; an empty list: `204`."""
    if not states and request is None:
        return []
    tx = Tx.open(conn, clock, config)
    row = None if request is None else q.claim_row_for_update(conn, supervisor)
    if row is not None:
        repeated = _repeat_all(tx, supervisor, str(request), row)
        if repeated:
            return repeated
    taken = _new_claims(tx, supervisor, states, most)
    if row is not None:
        _save(tx, row, str(request), taken)
    return _granted(tx, supervisor, taken)


def _save(tx: Tx, row: q.ClaimRecord, request: str, taken: Sequence[Taken]) -> None:
    """Keep this claim as the supervisor's last one, for a repeat of its request id."""
    pairs = [(task.id, task.attempt) for task, _, _ in taken]
    q.save_claim(tx.conn, row.supervisor, request, pairs, had_more=bool(row.more))


def _granted(tx: Tx, supervisor: str, taken: Sequence[Taken]) -> list[GrantWire]:
    """Write each claimed task's `task_claimed` row, then build the grants."""
    for task, token, _ in taken:
        tx.write(
            token.token,
            "task_claimed",
            {"task": task.id, "supervisor": supervisor, "attempt": task.attempt},
        )
    return [grant(tx, task, token, known) for task, token, known in taken]


# --- a repeated request id --------------------------------------------------------------------


def _repeat(tx: Tx, supervisor: str, request: str, row: q.ClaimRecord) -> GrantWire | None:
    """The same grant again when the last claim's task is still held on the same attempt."""
    if row.request != request or row.task_id is None or row.attempt is None:
        return None
    return _renewed(tx, supervisor, row.task_id, row.attempt)


def _repeat_all(tx: Tx, supervisor: str, request: str, row: q.ClaimRecord) -> list[GrantWire]:
    """Every grant of the last claim still held on its attempt, renewed, in the first order.

    Empty when the request id is another, or nothing of that claim is still held: then this is
    a new claim, as spec 20 §1.6 says for a single claim.
    """
    if row.request != request or row.task_id is None or row.attempt is None:
        return []
    held = [(row.task_id, row.attempt), *row.more]
    renewed = (_renewed(tx, supervisor, task_id, attempt) for task_id, attempt in held)
    return [found for found in renewed if found is not None]


def _renewed(tx: Tx, supervisor: str, task_id: int, attempt: int) -> GrantWire | None:
    """Renew the lease of a task this supervisor still holds on `attempt`, and its grant."""
    found = q.task_and_token(tx.conn, task_id)
    if found is None:
        return None
    task, token = found
    if task.status != "claimed" or task.claimed_by != supervisor or task.attempt != attempt:
        return None
    if task.lease_until is None or task.lease_until < tx.now:
        return None
    until = tx.now + tx.config.lease
    q.update_task(tx.conn, task.id, lease_until=until)
    return grant(tx, replace(task, lease_until=until), token)


# --- a new claim --------------------------------------------------------------------------------


def _new_claims(tx: Tx, supervisor: str, states: Sequence[str], most: int) -> list[Taken]:
    """Take up to `most` of the oldest claimable queued tasks of the served states."""
    pairs = served_pairs(states)
    if not pairs:
        return []
    # SQLite's one writer always gets the first candidates; Postgres may find families busy.
    limit = CANDIDATES + most - 1 if tx.locks else most
    taken: list[Taken] = []
    for task, parent in q.queued_candidates(tx.conn, pairs, limit):
        if tx.locks:
            top = task.token if parent is None else _top(tx, task.token)
            if not tx.try_lock_id(top):
                continue
        claimed = _take(tx, supervisor, task.id)
        if claimed is not None:
            taken.append(claimed)
            if len(taken) == most:
                break
    return taken


def _take(tx: Tx, supervisor: str, task_id: int) -> Taken | None:
    """Claim one candidate if it is still queued and its token active (read again)."""
    # With the token's last seq, so its `task_claimed` row needs no read of its own, and what
    # its grant needs of the ledger and memory.
    found = q.task_to_claim(tx.conn, task_id)
    if found is None:
        return None
    fresh, token, seq = found.task, found.token, found.seq
    if fresh.status != "queued" or token.status != "active":
        return None
    tx.know_seq(token.token, seq)
    until = tx.now + tx.config.lease
    attempt = fresh.attempt + 1
    q.update_task(
        tx.conn,
        task_id,
        status="claimed",
        claimed_by=supervisor,
        attempt=attempt,
        lease_until=until,
    )
    claimed = replace(
        fresh, status="claimed", claimed_by=supervisor, attempt=attempt, lease_until=until
    )
    return claimed, token, (found.entered_by, found.has_memory)


def _top(tx: Tx, token_id: str) -> str:
    token = q.get_token(tx.conn, token_id)
    return tx.top_of(token) if token is not None else token_id
