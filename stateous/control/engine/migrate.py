"""Move a live or failed top token to another version: `POST /tokens/{id}/migrate`.

Every check runs before anything is written, in this order (the first that fails
answers): `child_token`, `token_not_active`, `token_in_parallel`, `version_not_found`,
`same_version`, `unknown_state`, `invalid_context`. `migrate_problem` runs them and writes
nothing, so a bulk dry run checks the live data exactly as the route does.

The effect, in one transaction: the current visit is left as a move leaves it (open tasks
`task_cancelled`, pending timers cancelled), the context saved with its writes (and the target
model's defaults), `tokens.structure` set, `migrated {"from", "to", "state", "into", "keys"?,
"by"?}` written (with the request's idempotency key), then the mapped state entered on the
target's graph as a new visit. A paused token stays paused; a failed token stays failed, its
`state` set to the mapped state, for a `retry` to enter on the new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock
from stateous.control.engine.checks import no_token
from stateous.control.engine.move import pause_family
from stateous.control.engine.moves import enter, leave
from stateous.control.engine.repair import by_data, entry_problem
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import Refusal, conflict, invalid
from stateous.control.store.ledger import key_used
from stateous.control.store.records import TokenRecord
from stateous.control.store.tokens import get_token
from stateous.model.graph import END, START, Graph
from stateous.model.validation import validator_for
from stateous.model.versions import short

MIGRATABLE = ("active", "paused", "failed")
# A parallel state is refused before anything is left, so no child is ever cancelled by this;
# the reason is there for `leave`'s signature.
CHILD_REASON = "the parent was migrated"
_RESERVED = {START, END, "START", "END"}


@dataclass(frozen=True)
class Plan:
    """A migration checked against the live data: everything `migrate` writes."""

    token: TokenRecord
    source: Graph  # the graph the token runs on now
    target: Graph
    into: str  # the mapped state
    writes: dict[str, Any]  # the request's context writes
    context: dict[str, Any]  # the context after them, with the target model's defaults


def check_migrate_input(to: Any, states: Any, context: Any, key: str | None) -> None:
    """The shape of `to`, `states`, `context` and the idempotency key (`422 invalid_body`)."""
    if to is not None and not isinstance(to, str):
        raise invalid("invalid_body", "'to' is the checksum of a version on record (sha256:…)")
    if states is not None and (
        not isinstance(states, dict) or not all(isinstance(value, str) for value in states.values())
    ):
        raise invalid("invalid_body", "'states' is an object of old state: new state names")
    if context is not None and not isinstance(context, dict):
        raise invalid("invalid_body", "'context' is a JSON object of the keys to write, or null")
    if key is not None and (
        not 1 <= len(key) <= 256 or any(ord(ch) < 32 or ord(ch) == 127 for ch in key)
    ):
        raise invalid(
            "invalid_body", "an idempotency key has 1 to 256 characters, no control characters"
        )


def migrate(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    token_id: str,
    to: Any = None,
    states: Any = None,
    context: Any = None,
    by: Mapping[str, Any] | None = None,
    key: str | None = None,
) -> TokenRecord:
    """Move a top token to the version `to` (None: the current one); every refusal writes
    nothing. A repeated `key` answers the token as it is and writes nothing."""
    check_migrate_input(to, states, context, key)
    tx = Tx.open(conn, clock, config)
    token = tx.lock_token(token_id)
    if token is None:
        raise no_token(token_id)
    if key is not None and key_used(conn, token.token, key):
        return token
    checked = plan(tx, token, to, states, context)
    _apply(tx, checked, by, key)
    tx.flush()
    return get_token(conn, token.token) or token


def migrate_problem(
    tx: Tx, token: TokenRecord, to: Any, states: Any, context: Any
) -> Refusal | None:
    """The refusal a migration of `token` would meet now, or None; writes nothing."""
    try:
        plan(tx, token, to, states, context)
    except Refusal as exc:
        return exc
    return None


def plan(tx: Tx, token: TokenRecord, to: Any, states: Any, context: Any) -> Plan:
    """Check a migration in the module's order and answer what it writes; raise the first
    refusal."""
    _check_token(tx, token)
    versions = tx.config.versions
    source = versions.of(token.structure)
    target = _target(tx.config, token, to, source)
    into = _into(token, dict(states or {}), source, target)
    writes = dict(context or {})
    merged = _context(token, writes, target)
    entry_problem(tx, target.main, replace(token, structure=target.structure), into, merged)
    return Plan(token, source, target, into, writes, merged)


def _check_token(tx: Tx, token: TokenRecord) -> None:
    """`409 child_token`, `409 token_not_active`, `409 token_in_parallel`."""
    if token.parent is not None:
        top = tx.top_of(token)
        raise conflict(
            "child_token",
            f"token {token.token!r} is a child of {token.parent!r}: it runs on its parent's "
            f"version, and cannot be migrated on its own; migrate {top!r} instead",
        )
    if token.status not in MIGRATABLE:
        raise conflict(
            "token_not_active",
            f"token {token.token!r} is {token.status}; only an active, paused or failed token "
            "can be migrated",
        )
    spec = tx.config.body_of(token).states.get(token.state)
    if spec is not None and spec.is_parallel:
        raise conflict(
            "token_in_parallel",
            f"token {token.token!r} is in the parallel state {token.state!r}; migrate it "
            "after the join",
        )


def _target(config: EngineConfig, token: TokenRecord, to: Any, source: Graph) -> Graph:
    """The target's graph: `422 version_not_found`, `409 same_version`."""
    target = config.graph if to is None else config.versions.by_checksum(str(to))
    if target is None:
        raise invalid(
            "version_not_found",
            f"no version {to!r} was ever served; serve its graph file once before migrating "
            "tokens to it",
        )
    if target.structure == source.structure:
        raise conflict("same_version", f"token {token.token!r} already runs on {target.checksum}")
    return target


def _into(token: TokenRecord, states: dict[str, str], source: Graph, target: Graph) -> str:
    """The state the token is in on the target (`422 unknown_state`)."""
    own = source.main.states
    for name in states:
        if name not in own or name in _RESERVED:
            raise invalid(
                "unknown_state",
                f"'states' maps {name!r}, which is not a state of {source.workflow!r} on "
                f"sha256:{short(source.checksum)}… (the token's version)",
            )
    into = states.get(token.state, token.state)
    if into in _RESERVED or into not in target.main.states:
        shown = {START: "START", END: "END"}.get(into, into)
        hint = "" if token.state in states else f"; map it with 'states': {{{token.state!r}: …}}"
        raise invalid(
            "unknown_state",
            f"token {token.token!r} would be in {shown!r}, which is not a state of "
            f"{target.workflow!r} on sha256:{short(target.checksum)}…{hint}",
        )
    return into


def _context(token: TokenRecord, writes: dict[str, Any], target: Graph) -> dict[str, Any]:
    """The context on the target: the writes applied and the target model's defaults filled
    in; `422 invalid_context` with the first error."""
    merged = {**token.context, **writes}
    name = target.main.context
    if name is None:
        return merged
    model = validator_for(target.schemas, name)
    merged = model.with_defaults(merged)
    errors = model.errors(merged)
    if errors is not None:
        reason = context_reason(errors.split("; ")[0], name)
        raise ContextMisfit(
            f"the context of token {token.token!r} does not fit the context model of "
            f"sha256:{short(target.checksum)}…: {reason}",
            reason,
        )
    return merged


class ContextMisfit(Refusal):
    """`422 invalid_context`: the context on the target breaks its model. `reason` names the
    field and what is wrong with it (`'priority' is required`), the same for every token that
    misses it, so that a bulk dry run can say it once."""

    def __init__(self, sentence: str, reason: str) -> None:
        super().__init__("invalid_context", sentence, 422)
        self.reason = reason


def context_reason(error: str, model: str) -> str:
    """A validator's message as a reason that names the field: `Ticket: 'priority' is a
    required property` → `'priority' is required`; `repo: 5 is not of type 'string'` as it is."""
    return error.removeprefix(f"{model}: ").replace(" is a required property", " is required")


def _apply(tx: Tx, plan: Plan, by: Mapping[str, Any] | None, key: str | None) -> None:
    """The writes of a checked migration (see the module's docstring)."""
    token, target = plan.token, plan.target
    leave(tx, plan.source.main, token, None, CHILD_REASON)
    if plan.context != token.context:
        tx.update_token(token.token, context=plan.context)
    tx.update_token(token.token, structure=target.structure)
    data: dict[str, Any] = {
        "from": plan.source.checksum, "to": target.checksum,
        "state": token.state, "into": plan.into,
    }  # fmt: skip
    if plan.writes:
        data["keys"] = sorted(plan.writes)
    tx.write(token.token, "migrated", by_data(data, by), key)
    if token.status == "failed":
        # Nothing is entered: a `retry` enters the mapped state on the new version.
        tx.update_token(token.token, state=plan.into)
        return
    moved = replace(token, context=plan.context, structure=target.structure, status="active")
    entered = enter(tx, target.main, moved, plan.into)
    if token.status == "paused":
        pause_family(tx, entered)
