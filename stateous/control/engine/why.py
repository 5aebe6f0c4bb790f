"""Why is this token not moving? `GET /tokens/{id}/why`.

Reads only, in one transaction, and answers the findings most important first (the order of
`CODES`). A claimed task always gets `claimed`, and `supervisor_gone` after it when its holder
is not live. A live token always gets at least one finding; a healthy moving token gets
exactly one (`claimed`, or `queued_behind` with the number of tasks ahead, possibly none).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock, iso
from stateous.control.engine.checks import no_token
from stateous.control.engine.hold import family, held_events
from stateous.control.engine.moves import ENDED, LIVE
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.engine.versions import Versions
from stateous.control.engine.views import token_wire
from stateous.control.store import registry
from stateous.control.store.ledger import last_of_kind
from stateous.control.store.operator_queries import state_name
from stateous.control.store.records import TaskRecord, TokenRecord
from stateous.control.store.tasks import AHEAD_MOST, open_tasks, queued_ahead
from stateous.control.store.tokens import get_token
from stateous.model.graph import StateSpec
from stateous.model.versions import short
from stateous.model.wire import OWN_EVENTS

Finding = dict[str, Any]

CODES = (
    "ended", "paused", "no_supervisor", "queued_behind", "claimed", "supervisor_gone",
    "retrying", "waiting_outside", "timer", "children", "last_event_refused",
)  # fmt: skip
"""The codes of `why`, most important first: findings are answered in this order."""


@dataclass(frozen=True)
class Seen:
    """What the control plane knows of the supervisors now: who is live, what states they
    serve, and the structure of the version each serves."""

    live: dict[str, frozenset[str]]
    structures: dict[str, str | None]  # None: a checksum that was never served

    def serves(self, state: str, structure: str) -> bool:
        """Whether a live supervisor of `structure` serves `state` (`<state>` or
        `<workflow>/<state>`)."""
        return any(
            state in served and self.structures.get(name) == structure
            for name, served in self.live.items()
        )

    def is_live(self, supervisor: str) -> bool:
        """Whether the supervisor is live."""
        return supervisor in self.live


def seen_supervisors(conn: Connection, now: datetime, versions: Versions) -> Seen:
    """The live supervisors of the registry: the one place `why` asks. A supervisor
    whose beat names no checksum serves the current structure, as its claims do."""
    found = [s for s in registry.list_supervisors(conn, now) if s.status == "live"]
    return Seen(
        {s.supervisor: frozenset(s.states) for s in found},
        {s.supervisor: _structure_of(s.checksum, versions) for s in found},
    )


def _structure_of(checksum: str | None, versions: Versions) -> str | None:
    if checksum is None:
        return versions.current.structure
    graph = versions.by_checksum(checksum)
    return None if graph is None else graph.structure


def why(conn: Connection, clock: Clock, config: EngineConfig, token_id: str) -> dict[str, Any]:
    """`{"token", "findings"}` for one token, or `404 token_not_found`."""
    token = get_token(conn, token_id)
    if token is None:
        raise no_token(token_id)
    tx = Tx.open(conn, clock, config)
    found = sorted(_findings(tx, token), key=lambda f: CODES.index(f["code"]))
    return {"token": token_wire(token), "findings": found}


def _findings(tx: Tx, token: TokenRecord) -> Iterator[Finding]:
    if token.status in ENDED:
        yield _ended(tx, token)
        return
    if token.status == "paused":
        yield _paused(tx, token)
    spec = tx.config.body_of(token).states.get(token.state)
    task = next(iter(open_tasks(tx.conn, token.token)), None)
    healthy = False
    if task is not None:
        found = list(_task_findings(tx, token, task))
        codes = [f["code"] for f in found]
        healthy = token.status == "active" and codes in (["claimed"], ["queued_behind"])
        yield from found
    if not healthy:
        yield from _timers(tx, token)
    if spec is not None and spec.is_parallel:
        yield _children(tx, token, spec)
    refused = _last_refused(tx, token)
    if refused is not None:
        yield refused


def _finding(code: str, sentence: str, since: datetime | None = None) -> Finding:
    found: Finding = {"code": code, "sentence": sentence}
    if since is not None:
        found["since"] = iso(since)
    return found


def _ended(tx: Tx, token: TokenRecord) -> Finding:
    row = last_of_kind(tx.conn, token.token, token.status)
    since = row.at if row is not None else None
    where = _shown(token.state)
    if token.status == "completed":
        return _finding("ended", f"token {token.token!r} completed after {where}", since)
    reason = row.data.get("reason") if row is not None else None
    if token.status == "failed":
        sentence = f"token {token.token!r} failed in {where}: {reason}"
        if token.parent is None:
            sentence += "; retry it after the fix, or move it to a state"
        return _finding("ended", sentence, since)
    tail = f": {reason}" if reason else ""
    return _finding("ended", f"token {token.token!r} was cancelled in {where}{tail}", since)


def _shown(state: str) -> str:
    return {"__start__": "START", "__end__": "END"}.get(state, repr(state))


def _paused(tx: Tx, token: TokenRecord) -> Finding:
    row = last_of_kind(tx.conn, token.token, "paused")
    members = family(tx, token.token) if token.parent is None else [token]
    held = sum(len(held_events(tx, m.token)) for m in members if m.status == "paused")
    events = "1 event is" if held == 1 else f"{held} events are"
    top = tx.top_of(token)
    return _finding(
        "paused",
        f"token {token.token!r} is paused; {events} held until {top!r} is resumed",
        row.at if row is not None else None,
    )


def _task_findings(tx: Tx, token: TokenRecord, task: TaskRecord) -> Iterator[Finding]:
    name = state_name(token.workflow, task.state)
    if task.status == "queued" and token.status == "active":
        yield from _queued(tx, token, task, name)
    elif task.status == "claimed":
        yield from _claimed(tx, token, task)
    elif task.status == "waiting":
        yield _waiting(tx, token, task)
    failure = _last_failure(tx, token, task)
    if failure is not None:
        yield failure


def _queued(tx: Tx, token: TokenRecord, task: TaskRecord, name: str) -> Iterator[Finding]:
    """`no_supervisor` when no live supervisor of the token's version serves the state,
    and `queued_behind`: always when one does (first in line included), else only when
    older tasks are ahead."""
    ahead = _ahead(tx, token, task)
    versions = tx.config.versions
    structure = tx.config.body_of(token).structure
    if seen_supervisors(tx.conn, tx.now, versions).serves(name, structure):
        yield _queued_behind(task, name, ahead)
        return
    version = short(versions.of(structure).checksum)
    yield _finding(
        "no_supervisor",
        f"task {task.id} is queued for {name!r}, and no live supervisor of version {version} "
        f"serves {name!r}; start one with {name!r} in its folder",
        task.queued_at,
    )
    if ahead > 0:
        yield _queued_behind(task, name, ahead)


def _ahead(tx: Tx, token: TokenRecord, task: TaskRecord) -> int:
    """How many older queued tasks of the same state, of active tokens, a claim takes first."""
    return queued_ahead(tx.conn, task, token.workflow)


def _queued_behind(task: TaskRecord, name: str, ahead: int) -> Finding:
    if ahead == 0:
        sentence = (
            f"task {task.id} is queued for {name!r}, first in line; a live supervisor of "
            f"{name!r} takes it at its next claim"
        )
    else:
        tasks_ahead = (
            "1 older task"
            if ahead == 1
            else f"more than {AHEAD_MOST:,} older tasks"
            if ahead > AHEAD_MOST
            else f"{ahead} older tasks"
        )
        sentence = f"task {task.id} is queued for {name!r} behind {tasks_ahead} of {name!r}"
    return _finding("queued_behind", sentence, task.queued_at)


def _claim_time(tx: Tx, token: TokenRecord, task: TaskRecord) -> datetime | None:
    rows = tx.ledger(token.token, ("task_claimed",))
    return next((r.at for r in reversed(rows) if r.data.get("task") == task.id), None)


def _claimed(tx: Tx, token: TokenRecord, task: TaskRecord) -> Iterator[Finding]:
    """`claimed` for every claimed task (who holds it, the attempt, when its lease ends); then
    `supervisor_gone` when the holder is not live, saying what the lease's end will do."""
    holder = task.claimed_by or "?"
    lease = iso(task.lease_until) if task.lease_until else "?"
    since = _claim_time(tx, token, task)
    if seen_supervisors(tx.conn, tx.now, tx.config.versions).is_live(holder):
        yield _finding(
            "claimed",
            f"{holder!r} works on task {task.id} (attempt {task.attempt}); its lease ends at "
            f"{lease} unless it beats",
            since,
        )
        return
    yield _finding(
        "claimed",
        f"{holder!r} holds task {task.id} (attempt {task.attempt}); its lease ends at {lease}",
        since,
    )
    yield _finding(
        "supervisor_gone",
        f"{holder!r} is not live; when its lease on task {task.id} ends at {lease}, "
        f"{_after_lease(tx, token, task)}",
        since,
    )


def _after_lease(tx: Tx, token: TokenRecord, task: TaskRecord) -> str:
    """What the lease expiry will do."""
    body = tx.config.body_of(token)
    spec = body.states.get(task.state)  # a graph served later may lack it: no retries then
    if spec is not None and task.attempt <= spec.retries:
        return f"the task is tried again (attempt {task.attempt + 1})"
    if body.transitions_from(task.state, "error"):
        return f"its last attempt fails and {task.state!r} takes 'error'"
    return f"its last attempt fails and the token fails ({task.state!r} has no 'error')"


def _waiting(tx: Tx, token: TokenRecord, task: TaskRecord) -> Finding:
    rows = tx.ledger(token.token, ("task_waiting", "note"))
    mine = [r for r in rows if r.data.get("task") == task.id]
    since = next((r.at for r in reversed(mine) if r.kind == "task_waiting"), None)
    note = next((r.data.get("text") for r in reversed(mine) if r.kind == "note"), None)
    events = _outside_events(tx, token, task.state)
    takes = ", ".join(repr(e) for e in events) if events else "no event from outside"
    sentence = f"task {task.id} waits for an event from outside: {takes}"
    if note:
        sentence += f"; its last note: {note}"
    return _finding("waiting_outside", sentence, since)


def _outside_events(tx: Tx, token: TokenRecord, state: str) -> list[str]:
    body = tx.config.body_of(token)
    return [e for e in body.events if e not in OWN_EVENTS and body.transitions_from(state, e)]


def _last_failure(tx: Tx, token: TokenRecord, task: TaskRecord) -> Finding | None:
    """`retrying` when the task is on (or queued for) an attempt after the first."""
    attempt = task.attempt + 1 if task.status == "queued" else task.attempt
    if attempt <= 1:
        return None
    rows = tx.ledger(token.token, ("task_failed",))
    last = next((r for r in reversed(rows) if r.data.get("task") == task.id), None)
    error = last.data.get("error") if last is not None else "?"
    return _finding(
        "retrying",
        f"task {task.id} is on attempt {attempt}; the last attempt failed: {error}",
        last.at if last is not None else None,
    )


def _timers(tx: Tx, token: TokenRecord) -> Iterator[Finding]:
    from stateous.control.store import operator_queries as oq

    name = state_name(token.workflow, token.state)
    for timer in oq.timers_of(tx.conn, token.token):
        current = (timer.state, timer.visit) == (name, token.visit)
        if timer.status == "pending" and current:
            yield _finding(
                "timer",
                f"a {timer.kind} fires {timer.event!r} at {iso(timer.due_at)}",
                timer.set_at,
            )


def _children(tx: Tx, token: TokenRecord, spec: StateSpec) -> Finding:
    from stateous.control.engine.children import current_children

    children = current_children(tx, token, spec)
    ended = sum(1 for c in children if c.status not in LIVE)
    live = [f"{c.token} in {_shown(c.state)}" for c in children if c.status in LIVE]
    sentence = (
        f"{ended} of {len(children)} children of {spec.name!r} ended; the join is {spec.join!r}"
    )
    if live:
        sentence += "; live: " + ", ".join(live)
    return _finding("children", sentence, token.entered_at)


def _last_refused(tx: Tx, token: TokenRecord) -> Finding | None:
    rows = tx.ledger(token.token, ("entered", "event_rejected"))
    entered = max((r.seq for r in rows if r.kind == "entered"), default=0)
    refused = [r for r in rows if r.kind == "event_rejected" and r.seq > entered]
    if not refused:
        return None
    last = refused[-1]
    return _finding(
        "last_event_refused",
        f"{last.data.get('event')!r} was refused: {last.data.get('reason')}",
        last.at,
    )
