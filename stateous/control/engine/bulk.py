"""Bulk jobs: `POST /bulk` freezes the matches; the holder applies them one by one.

A job acts on each frozen token as its own ordinary operation (pause, resume, cancel, fire,
retry or migrate, with `by.bulk`), in the same transaction that marks the match done or skipped,
so a job never applies twice to a token, across a restart or a takeover too.

A `migrate` job keeps its `{"to", "states", "context"}` in the job's `payload`
column (a fire's payload is the only other use of it), `to` resolved when the job is made, so
a job goes on to the same version after the current one changed. Its dry run checks every
matched token against the live data with the route's own checks (`migrate_problem`).
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import batched
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from stateous.control.clock import Clock, iso
from stateous.control.engine.bulk_filter import as_wire, parse_filter
from stateous.control.engine.migrate import ContextMisfit, check_migrate_input, migrate_problem
from stateous.control.engine.tx import EngineConfig, Tx
from stateous.control.errors import (
    RecordedRefusal,
    Refusal,
    StoreError,
    conflict,
    invalid,
    not_found,
)
from stateous.control.store import bulk as store
from stateous.control.store.records import TokenRecord
from stateous.model.selection import Filter
from stateous.model.wire import OWN_EVENTS

log = logging.getLogger("stateous.bulk")

ACTIONS = ("pause", "resume", "cancel", "fire", "retry", "migrate")
MIGRATION_PARTS = ("to", "states", "context")
REQUEST_PARTS = ("action", "filter", "event", "payload", "dry_run", "by", *MIGRATION_PARTS)
FIRST = 50  # ids a dry run shows
EXAMPLES = 5  # ids a migrate's dry run shows per refusal code


@dataclass(frozen=True)
class Request:
    """A checked `POST /bulk` body."""

    action: str
    filter: Any
    event: str | None
    payload: dict[str, Any] | None
    dry_run: bool
    by: dict[str, Any] | None
    #: A migrate's `{"to", "states", "context"}` (`to` None: the current version).
    migration: dict[str, Any] | None = None


def check_request(body: Mapping[str, Any], by: dict[str, Any] | None) -> Request:
    """The shape of a `POST /bulk` body (`422 invalid_body` naming the part)."""
    unknown = [name for name in body if name not in REQUEST_PARTS]
    if unknown:
        raise invalid("invalid_body", f"a bulk job has no part {unknown[0]!r}")
    action = body.get("action")
    if action not in ACTIONS:
        raise invalid("invalid_body", "'action' is one of " + ", ".join(ACTIONS))
    event, payload = body.get("event"), body.get("payload")
    if action == "fire":
        if not isinstance(event, str) or not event:
            raise invalid("invalid_body", "'fire' needs the event's name in 'event'")
        if payload is not None and not isinstance(payload, dict):
            raise invalid("invalid_body", "'payload' is a JSON object, or null")
    elif event is not None or payload is not None:
        raise invalid("invalid_body", f"{action!r} takes no 'event' or 'payload'; only fire does")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise invalid("invalid_body", "'dry_run' is true or false")
    migration = _migration(str(action), body)
    return Request(str(action), body.get("filter"), event, payload, dry_run, by, migration)


def _migration(action: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A migrate's `to`, `states` and `context`, checked; other actions take none of them."""
    given = {name: body.get(name) for name in MIGRATION_PARTS}
    if action != "migrate":
        if any(value is not None for value in given.values()):
            raise invalid(
                "invalid_body",
                f"{action!r} takes no 'to', 'states' or 'context'; only migrate does",
            )
        return None
    check_migrate_input(given["to"], given["states"], given["context"], None)
    return {"to": given["to"], "states": given["states"] or {}, "context": given["context"] or {}}


def create(
    conn: Connection, clock: Clock, config: EngineConfig, request: Request
) -> tuple[int, dict[str, Any]]:
    """A dry run (`200 {"matched", "tokens"}`, nothing written) or a new job whose matches are
    frozen in this transaction (`202 {"job", "matched"}`)."""
    main = config.body(None)
    states, structures = _on_record(conn, config)
    found = parse_filter(request.filter, states, structures)
    if request.event is not None and (
        request.event not in main.events or request.event in OWN_EVENTS
    ):
        raise invalid("invalid_body", f"the workflow {main.name!r} has no event {request.event!r}")
    migration = _resolved(config, request.migration)
    if request.dry_run:
        return 200, _dry_run(conn, clock, config, found, migration)
    now = clock.now()
    payload = migration if migration is not None else request.payload
    job = store.insert_job(conn, {
        "action": request.action, "filter": as_wire(found), "event": request.event,
        "payload": payload, "matched": 0, "status": "running", "created_at": now,
        "finished_at": None, "by": request.by,
    })  # fmt: skip
    ids = [token for token, _ in store.matching(conn, found)]
    store.insert_matches(conn, job, ids)
    store.set_matched(conn, job, len(ids))
    if not ids:
        store.end_job(conn, job, "finished", now)
    return 202, {"job": job, "matched": len(ids)}


def _on_record(conn: Connection, config: EngineConfig) -> tuple[set[str], set[str]]:
    """The states a filter may name (of the main workflow of every version on record: a token
    of an older version may be in a state the current one lacks) and the structures."""
    structures = {config.graph.structure, *store.structures_on_record(conn)}
    states: set[str] = set()
    for structure in structures:
        try:
            states.update(config.versions.of(structure).main.states)
        except StoreError:  # recorded by another control plane and unreadable here: no states
            continue
    return states, structures


def _resolved(config: EngineConfig, migration: dict[str, Any] | None) -> dict[str, Any] | None:
    """A migrate's parts with `to` the checksum it names (`422 version_not_found`)."""
    if migration is None:
        return None
    to = migration["to"]
    target = config.graph if to is None else config.versions.by_checksum(str(to))
    if target is None:
        raise invalid("version_not_found", f"no version {to!r} was ever served")
    return {**migration, "to": target.checksum}


def _dry_run(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    found: Filter,
    migration: dict[str, Any] | None,
) -> dict[str, Any]:
    """`{"matched", "tokens"}`; a migrate's adds `refused` by code, the first `examples` of
    each and the `reasons` of the codes that name a field (`invalid_context`: the first refused
    token's), every matched token checked as the route checks it. Nothing is written."""
    matches: Iterable[tuple[str, datetime]] = store.matching(conn, found)
    checked = _Checked(Tx.open(conn, clock, config), migration) if migration else None
    if checked is not None:
        matches = checked.pages(conn, matches)
    counted = _Counted(iter(matches))
    oldest = heapq.nsmallest(FIRST, counted, key=lambda item: (item[1], item[0]))
    answer: dict[str, Any] = {"matched": counted.count, "tokens": [token for token, _ in oldest]}
    if checked is not None:
        answer["refused"] = dict(sorted(checked.refused.items()))
        answer["examples"] = dict(sorted(checked.examples.items()))
        answer["reasons"] = dict(sorted(checked.reasons.items()))
    return answer


class _Checked:
    """A migrate's dry run: each matched token checked, the refusals counted by code."""

    def __init__(self, tx: Tx, migration: dict[str, Any]) -> None:
        self.tx = tx
        self.migration = migration
        self.refused: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}
        self.reasons: dict[str, str] = {}

    def pages(
        self, conn: Connection, matches: Iterable[tuple[str, datetime]]
    ) -> Iterator[tuple[str, datetime]]:
        """The matches as they come, each page of them checked first (one read a page)."""
        for page in batched(matches, store.PAGE):
            for record in store.records_of(conn, [token for token, _ in page]):
                self.check(record)
            yield from page

    def check(self, record: TokenRecord) -> None:
        """Count the refusal a migration of `record` would meet now, if any."""
        m = self.migration
        problem = migrate_problem(self.tx, record, m["to"], m["states"], m["context"])
        if problem is None:
            return
        self.refused[problem.code] = self.refused.get(problem.code, 0) + 1
        if isinstance(problem, ContextMisfit):
            self.reasons.setdefault(problem.code, problem.reason)
        shown = self.examples.setdefault(problem.code, [])
        if len(shown) < EXAMPLES:
            shown.append(record.token)


class _Counted:
    """An iterator that counts what it hands out (a dry run counts while it keeps the oldest)."""

    def __init__(self, items: Iterator[tuple[str, datetime]]) -> None:
        self.items = items
        self.count = 0

    def __iter__(self) -> Iterator[tuple[str, datetime]]:
        for item in self.items:
            self.count += 1
            yield item


# --- applying ------------------------------------------------------------------------------------

Act = Callable[[Connection, Clock, EngineConfig, str, store.Job, dict[str, Any]], Any]


def _act(job: store.Job) -> Act:
    if job.action == "migrate":
        from stateous.control.engine.migrate import migrate

        p = job.payload or {}
        return lambda conn, clock, config, token, job, by: migrate(
            conn, clock, config, token, p.get("to"), p.get("states"), p.get("context"), by
        )
    if job.action == "fire":
        from stateous.control.engine.fire import fire

        return lambda conn, clock, config, token, job, by: fire(
            conn, clock, config, token, str(job.event), job.payload, None, by
        )
    if job.action == "retry":
        from stateous.control.engine.retry import retry as work
    elif job.action == "pause":
        from stateous.control.engine.pause import pause as work
    elif job.action == "resume":
        from stateous.control.engine.resume import resume as work
    else:
        from stateous.control.engine.cancel import cancel as work
    return lambda conn, clock, config, token, job, by: work(conn, clock, config, token, by)


def by_of(job: store.Job) -> dict[str, Any]:
    """The `by` of the rows a job writes: the job's, with `"bulk": <job id>` added inside."""
    return {**(job.by or {}), "bulk": job.id}


def apply_one(
    conn: Connection, clock: Clock, config: EngineConfig, job: store.Job, token: str
) -> str | None:
    """Act on one frozen token of a running job in the caller's transaction.

    `job` may have been read before this transaction (its action, event, payload and `by` never
    change): whether it still runs is checked here, in the statement that takes the match.
    Answers `done`, the refusal code it was skipped with, or None when there was nothing to do
    (the job is not running, or the match was taken already).
    """
    if not store.take_match(conn, job.id, token):
        return None
    savepoint = conn.begin_nested()
    try:
        _act(job)(conn, clock, config, token, job, by_of(job))
    except RecordedRefusal as exc:  # its `event_rejected` row stays, like any refused fire
        savepoint.commit()
        store.skip_match(conn, job.id, token, exc.code)
        return exc.code
    except Refusal as exc:
        if exc.code == "database_busy":
            raise
        savepoint.rollback()
        store.skip_match(conn, job.id, token, exc.code)
        return exc.code
    except DBAPIError:
        raise  # the database's trouble (a deadlock, a lost connection): the token is tried again
    except Exception:
        # A defect must not stop the job on this token for ever: it is skipped, and logged.
        log.exception("bulk job %s failed unexpectedly on token %r; skipped", job.id, token)
        savepoint.rollback()
        store.skip_match(conn, job.id, token, "unexpected")
        return "unexpected"
    savepoint.commit()
    return "done"


def finish_if_done(conn: Connection, clock: Clock, job_id: int) -> bool:
    """End a running job with no pending token left; True when it ended now."""
    if store.has_pending(conn, job_id):
        return False
    return store.end_job(conn, job_id, "finished", clock.now())


def stop(conn: Connection, clock: Clock, job_id: int) -> dict[str, Any]:
    """Stop a running job: what is done stays done (`404 bulk_not_found`, `409 bulk_not_running`)."""
    job = store.get_job(conn, job_id)
    if job is None:
        raise no_job(job_id)
    if not store.end_job(conn, job_id, "stopped", clock.now()):
        raise conflict(
            "bulk_not_running",
            f"bulk job {job_id} is {job.status}; only a running job can be stopped",
        )
    return job_wire(conn, job_id)


def no_job(job_id: int) -> Refusal:
    """`404 bulk_not_found`."""
    return no_job_text(str(job_id))


def no_job_text(job: str) -> Refusal:
    """`404 bulk_not_found` for a job named in a path."""
    return not_found("bulk_not_found", f"there is no bulk job {job}")


def job_wire(conn: Connection, job_id: int) -> dict[str, Any]:
    """`GET /bulk/{job}`'s answer (`404 bulk_not_found`)."""
    job = store.get_job(conn, job_id)
    if job is None:
        raise no_job(job_id)
    return wire(conn, job)


def wire(
    conn: Connection, job: store.Job, progress: store.Progress | None = None
) -> dict[str, Any]:
    """A job as the routes answer it (`progress`: read here unless given)."""
    if progress is None:
        progress = store.progress(conn, job.id)
    return {
        "job": job.id,
        "action": job.action,
        "filter": job.filter,
        "event": job.event,
        "matched": job.matched,
        "done": progress.done,
        "skipped": progress.skipped,
        "status": job.status,
        "created_at": iso(job.created_at),
        "finished_at": iso(job.finished_at) if job.finished_at else None,
        "by": job.by,
        # A migrate's `to`, `states` and `context`, kept in the payload column.
        **((job.payload or {}) if job.action == "migrate" else {}),
    }


def list_wire(
    conn: Connection, limit: int, status: str | None, after: int | None = None
) -> list[dict[str, Any]]:
    """`GET /bulk`: jobs newest first; `after`: those with a lower id. The page's progress in
    one statement."""
    jobs = store.list_jobs(conn, limit, status, after)
    done = store.progress_of(conn, [job.id for job in jobs]) if jobs else {}
    return [wire(conn, job, done[job.id]) for job in jobs]
