"""Many starts in a few statements: a part of `POST /tokens/batch`.

Each start is its own operation with exactly the checks, ledger rows and refusals of
`POST /tokens` (`start.start`), applied in list order; only the statements are shared. The
ids are locked together (Postgres, in the order of their keys, so two batches never wait on
each other), read in one query, checked in memory, and the new tokens, their first tasks
and all their ledger rows are each inserted in one statement. A refusal is found before
anything is written, so it writes nothing and leaves the other starts as they are.

A start into a parallel state or straight to END creates more than one row of a kind, or
none: such a workflow starts each token with `start.start` (`starts_in_bulk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from stateous.control.clock import Clock
from stateous.control.engine.audit import acting
from stateous.control.engine.moves import write_first_entry, write_started
from stateous.control.engine.start import Started, check_new_id, check_start_body, starting
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import Refusal
from stateous.control.store.locks import lock_families
from stateous.control.store.records import TokenRecord
from stateous.control.store.tasks import insert_first_tasks
from stateous.control.store.tokens import insert_tokens, tokens_folded_in
from stateous.model.graph import START, STARTED, WorkflowBody


@dataclass(frozen=True)
class StartArgs:
    """One start of a batch: `POST /tokens`'s `token`, `context` and `by` (None: no act)."""

    token: Any
    context: Any
    by: Mapping[str, Any] | None = None
    #: The `traceparent` a new token keeps, written by the caller; None: none.
    trace: str | None = None


class Raced(Exception):
    """A unique index refused a new row (a token made meanwhile by another call): nothing of
    the part is applied, and the caller starts its tokens one by one with `start.start`."""


def starts_in_bulk(body: WorkflowBody) -> bool:
    """Whether every transition out of START enters a state of a task (not a parallel state,
    not END): each start then makes one token, one task and the same four ledger rows."""
    return all(
        t.target in body.states and not body.states[t.target].is_parallel
        for t in body.transitions_from(START, STARTED)
    )


def start_many(
    conn: Connection, clock: Clock, config: EngineConfig, starts: Sequence[StartArgs]
) -> list[Started | Refusal]:
    """Apply `starts` in order, as `start.start` would one by one; answer each one's outcome
    (a refusal as a value). Raises `Raced` when the database refused a new row."""
    tx = Tx.open(conn, clock, config)
    outcomes: list[Started | Refusal | None] = []
    for args in starts:
        try:
            check_start_body(args.token, args.context)
            outcomes.append(None)
        except Refusal as exc:
            outcomes.append(exc)
    ids = [args.token for args, outcome in zip(starts, outcomes, strict=True) if outcome is None]
    if tx.locks and ids:
        lock_families(conn, ids)
    # Token ids that may exist are ASCII (the form of `check_new_id`, and children's ids built
    # from them), where Python's lower case is the database's.
    known = tokens_folded_in(conn, sorted({token.lower() for token in ids}))
    body = config.body(None)
    made: list[tuple[TokenRecord, StartArgs]] = []
    for n, args in enumerate(starts):
        if outcomes[n] is None:
            outcomes[n] = _one(tx, body, args, known, made)
    try:
        _insert(tx, body, made)
    except IntegrityError as exc:
        raise Raced() from exc
    return [outcome for outcome in outcomes if outcome is not None]


def _one(
    tx: Tx,
    body: WorkflowBody,
    args: StartArgs,
    known: dict[str, TokenRecord],
    made: list[tuple[TokenRecord, StartArgs]],
) -> Started | Refusal:
    """One start against the tokens known so far (read, or made earlier in the batch)."""
    token_id: str = args.token
    found = known.get(token_id.lower())
    if found is not None and found.token == token_id:
        return Started(found, created=False)
    try:
        check_new_id(token_id, None if found is None else found.token)
        context, chosen = starting(tx, body, args.context)
    except Refusal as exc:
        return exc
    token = TokenRecord(
        token=token_id, state=chosen.target, status="active", visit=1, context=context,
        entered_at=tx.now, parent=None, workflow=None, structure=body.structure,
    )  # fmt: skip
    known[token_id.lower()] = token
    made.append((token, args))
    return Started(token, created=True)


def _insert(tx: Tx, body: WorkflowBody, made: Sequence[tuple[TokenRecord, StartArgs]]) -> None:
    """The rows of the new tokens, `create_token`'s (`write_started`, `write_first_entry`),
    a statement for each kind."""
    insert_tokens(tx.conn, [token for token, _ in made])
    firsts = insert_first_tasks(
        tx.conn, [(token.token, token.state) for token, _ in made], tx.now, body.structure
    )
    for token, args in made:
        acting(tx, token.token, frozenset({"started"}), args.by)
        write_started(tx, token.token, token.context)
        write_first_entry(tx, token, firsts[token.token], body.states[token.state].timeout_seconds)
    tx.flush()
