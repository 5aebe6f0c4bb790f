"""The routing context and `into=`, and Decide (which transition an event takes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stateous.control.engine.children import children_problem
from stateous.control.engine.choice import choose
from stateous.control.engine.choice import choose_start as choose_start
from stateous.control.engine.choice import context_errors as context_errors
from stateous.control.engine.choice import targets_text as targets_text
from stateous.control.engine.tx import Tx
from stateous.control.store.records import TokenRecord
from stateous.model.graph import TransitionSpec, WorkflowBody
from stateous.model.guards import GuardEnv


@dataclass(frozen=True)
class Refused:
    """An event that cannot move the token; `failing` means the token must fail instead."""

    reason: str
    failing: bool = False


@dataclass(frozen=True)
class Routing:
    """The context the guards read and, if the event is accepted, the context saved."""

    context: dict[str, Any]
    keys: list[str]


def routing_context(
    body: WorkflowBody,
    token: TokenRecord,
    event: str,
    payload: Any,
    writes: Mapping[str, Any] | None = None,
    state_into: str | None = None,
) -> Routing:
    """Overlay the routine's writes, then the `into=` key (which wins on the same key)."""
    context = dict(token.context)
    keys = set(writes or {})
    context.update(writes or {})
    spec = body.events.get(event)
    into = state_into if event == "joined" else (spec.into if spec is not None else None)
    if into is not None:
        context[into] = payload
        keys.add(into)
    return Routing(context, sorted(keys))


def accepted_counts(tx: Tx, token: str) -> Counter[str]:
    """How many times each event was accepted on this token, over its whole life."""
    rows = tx.ledger(token, ("event_accepted",))
    return Counter(str(row.data.get("event")) for row in rows)


def decide(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    event: str,
    payload: Any,
    context: Mapping[str, Any],
    branches: Sequence[Mapping[str, Any]] | None = None,
) -> TransitionSpec | Refused:
    """Choose the transition `event` takes from the token's state; changes nothing."""
    state = token.state
    candidates = body.transitions_from(state, event)
    if not candidates:
        return Refused(f"no transition for {event!r} from {state!r}")
    env = GuardEnv(
        context=context,
        payload=payload if payload is not None else {},
        # Only a guard with `count(...)` reads the ledger's counts: others skip the read.
        counts=accepted_counts(tx, token.token) if _counts_needed(candidates) else {},
        event=event,
        branches=branches,
    )
    chosen = choose(candidates, env)
    if isinstance(chosen, list):
        return Refused(
            f"{event!r} from {state!r} matched more than one guard ({targets_text(chosen)}); "
            "compile the workflow again, which refuses such guards",
            failing=True,
        )
    if chosen is None:
        return Refused(f"no guard matched {event!r} from {state!r}, and no otherwise")
    problem = _parallel_problem(tx, body, token, chosen, context)
    if problem is not None:
        return Refused(problem)
    return chosen


def _counts_needed(candidates: Sequence[TransitionSpec]) -> bool:
    return any(t.guard is not None and t.guard.counted_events() for t in candidates)


def _parallel_problem(
    tx: Tx,
    body: WorkflowBody,
    token: TokenRecord,
    chosen: TransitionSpec,
    context: Mapping[str, Any],
) -> str | None:
    """Whether every child of a parallel target can start, checked before entering it."""
    target = body.states.get(chosen.target)
    if target is None or not target.is_parallel:
        return None
    visit = next_visit(tx, token.token, target.name)
    return children_problem(tx, token.token, target, visit, context, body.structure)


def next_visit(tx: Tx, token: str, state: str) -> int:
    """The visit a token makes on entering `state` now: its `entered` rows for it, plus 1.

    (Entering a state that queues tasks counts its tasks instead, in the statement that queues
    the next: `queries.queue_next_visit`.)
    """
    rows = tx.ledger(token, ("entered",))
    return 1 + sum(1 for row in rows if row.data.get("state") == state)
