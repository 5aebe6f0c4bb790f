"""Claim tasks: `POST /tasks/claim`, with or without `max`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.engine.views import grant
from stateous.control.store.claims import (
    claim_row_for_update,
    claim_tasks,
    queued_candidates,
    save_claim,
    tasks_to_claim,
)
from stateous.control.store.locks import try_lock_families
from stateous.control.store.records import ClaimRecord, TaskRecord, TokenRecord
from stateous.control.store.tasks import task_and_token, update_task
from stateous.control.store.tokens import get_token
from stateous.model.wire import GrantWire

CANDIDATES = 20
MAX_GRANTS = 64
"""The most tasks one claim may ask for with `max`."""

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
    structure: str | None = None,
) -> GrantWire | None:
    """Claim the oldest queued task of the served states, or repeat a lost answer; None: `204`.
    Only tasks of tokens on `structure` (None: the current one) are granted."""
    if not states and request is None:
        return None
    tx = Tx.open(conn, clock, config)
    row = None if request is None else claim_row_for_update(conn, supervisor)
    if row is not None:
        repeated = _repeat(tx, supervisor, str(request), row)
        if repeated is not None:
            return repeated
    taken = _new_claims(tx, supervisor, states, 1, structure)
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
    structure: str | None = None,
) -> list[GrantWire]:
    """Claim up to `most` of the oldest queued tasks in one operation, or repeat
    the last claim's grants that this supervisor still holds; an empty list: `204`."""
    if not states and request is None:
        return []
    tx = Tx.open(conn, clock, config)
    row = None if request is None else claim_row_for_update(conn, supervisor)
    if row is not None:
        repeated = _repeat_all(tx, supervisor, str(request), row)
        if repeated:
            return repeated
    taken = _new_claims(tx, supervisor, states, most, structure)
    if row is not None:
        _save(tx, row, str(request), taken)
    return _granted(tx, supervisor, taken)


def _save(tx: Tx, row: ClaimRecord, request: str, taken: Sequence[Taken]) -> None:
    """Keep this claim as the supervisor's last one, for a repeat of its request id."""
    if not taken and row.request == request and row.task_id is None and not row.more:
        return  # kept already: a waiting claim that found nothing again (the hand-off)
    pairs = [(task.id, task.attempt) for task, _, _ in taken]
    save_claim(tx.conn, row.supervisor, request, pairs, had_more=bool(row.more))


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


def _repeat(tx: Tx, supervisor: str, request: str, row: ClaimRecord) -> GrantWire | None:
    """The same grant again when the last claim's task is still held on the same attempt."""
    if row.request != request or row.task_id is None or row.attempt is None:
        return None
    return _renewed(tx, supervisor, row.task_id, row.attempt)


def _repeat_all(tx: Tx, supervisor: str, request: str, row: ClaimRecord) -> list[GrantWire]:
    """Every grant of the last claim still held on its attempt, renewed, in the first order.

    Empty when the request id is another, or nothing of that claim is still held: then this is
    a new claim, as for a single claim.
    """
    if row.request != request or row.task_id is None or row.attempt is None:
        return []
    held = [(row.task_id, row.attempt), *row.more]
    renewed = (_renewed(tx, supervisor, task_id, attempt) for task_id, attempt in held)
    return [found for found in renewed if found is not None]


def _renewed(tx: Tx, supervisor: str, task_id: int, attempt: int) -> GrantWire | None:
    """Renew the lease of a task this supervisor still holds on `attempt`, and its grant."""
    found = task_and_token(tx.conn, task_id)
    if found is None:
        return None
    task, token = found
    if task.status != "claimed" or task.claimed_by != supervisor or task.attempt != attempt:
        return None
    if task.lease_until is None or task.lease_until < tx.now:
        return None
    until = tx.now + tx.config.lease
    update_task(tx.conn, task.id, lease_until=until)
    return grant(tx, replace(task, lease_until=until), token)


# --- a new claim --------------------------------------------------------------------------------


def _new_claims(
    tx: Tx, supervisor: str, states: Sequence[str], most: int, structure: str | None
) -> list[Taken]:
    """Take up to `most` of the oldest claimable queued tasks of the served states, of
    tokens on `structure` (None: the current one).

    The candidates are locked, read again and claimed a few statements at a time, not three
    per task: their families' locks in one statement, then one read of those locked, then one
    update of those still queued with their tokens active. When some were not (changed before
    their lock was taken), the next candidates are tried the same way.
    """
    pairs = served_pairs(states)
    if not pairs:
        return []
    # SQLite's one writer always gets the first candidates; Postgres may find families busy.
    limit = CANDIDATES + most - 1 if tx.locks else most
    served = structure or tx.graph.structure
    rest = _with_tops(tx, queued_candidates(tx.conn, served, pairs, limit))
    taken: list[Taken] = []
    while rest and len(taken) < most:
        locked, rest = _lock_families(tx, rest, most - len(taken))
        taken.extend(_take(tx, supervisor, [task.id for task, _ in locked]))
    return taken


# A candidate task and the id of its family's top token (whose lock it takes).
Candidate = tuple[TaskRecord, str]


def _with_tops(tx: Tx, found: Sequence[tuple[TaskRecord, str | None]]) -> list[Candidate]:
    """Each candidate with its top token's id (Postgres; a child's top is read, once for all
    the children of one parent). SQLite takes no lock: the token's own id stands in."""
    if not tx.locks:
        return [(task, task.token) for task, _ in found]
    tops: dict[str, str] = {}  # a parent's id -> its family's top
    candidates: list[Candidate] = []
    for task, parent in found:
        if parent is None:
            candidates.append((task, task.token))
            continue
        if parent not in tops:
            tops[parent] = _top(tx, task.token)
        candidates.append((task, tops[parent]))
    return candidates


def _lock_families(
    tx: Tx, candidates: Sequence[Candidate], want: int
) -> tuple[list[Candidate], list[Candidate]]:
    """The first `want` candidates whose family lock could be taken without waiting, in order,
    and the candidates not tried yet. SQLite (one writer): the first `want`."""
    if not tx.locks:
        return list(candidates[:want]), list(candidates[want:])
    positions = try_lock_families(tx.conn, [top for _, top in candidates], want)
    tried = positions[-1] + 1 if len(positions) == want else len(candidates)
    return [candidates[n] for n in positions], list(candidates[tried:])


def _take(tx: Tx, supervisor: str, task_ids: Sequence[int]) -> list[Taken]:
    """Claim the candidates still queued with their tokens active (read again, after their
    locks), in the candidates' order."""
    if not task_ids:
        return []
    # With each token's last seq, so its `task_claimed` row needs no read of its own, and what
    # its grant needs of the ledger and memory.
    found = tasks_to_claim(tx.conn, task_ids)
    ready = [
        found[task_id]
        for task_id in task_ids
        if task_id in found
        and found[task_id].task.status == "queued"
        and found[task_id].token.status == "active"
    ]
    if not ready:
        return []
    until = tx.now + tx.config.lease
    claim_tasks(tx.conn, [one.task.id for one in ready], supervisor, until)
    taken: list[Taken] = []
    for one in ready:
        tx.know_seq(one.token.token, one.seq)
        claimed = replace(
            one.task,
            status="claimed",
            claimed_by=supervisor,
            attempt=one.task.attempt + 1,
            lease_until=until,
        )
        taken.append((claimed, one.token, (one.entered_by, one.has_memory)))
    return taken


def _top(tx: Tx, token_id: str) -> str:
    token = get_token(tx.conn, token_id)
    return tx.top_of(token) if token is not None else token_id
