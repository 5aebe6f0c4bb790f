"""Schedules: the operator's acts on them, and the clock's step that starts the token of a due
slot.

Exactly once per slot: a slot's token id comes from the slot, and the start and the move of
the schedule's `next_at` commit in one transaction, with the schedule's row locked; a slot
whose token exists already counts as done. A restart, a takeover or a second clock therefore
finds the slot either not started and still due, or started and passed.

A schedule's context is checked against the current version's context model when it is saved
(`422 invalid_body`). A slot whose token still does not start (a version served since has
another model) is skipped, and its row keeps the refusal's sentence, the slot's time and one
more failure, in the step's transaction. A later slot that starts leaves them as they are: the
error stays on record with its time, and `last_at` after `last_error_at` shows it was fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from stateous.control.clock import Clock, iso
from stateous.control.engine.start import start, start_problem
from stateous.control.engine.tx import EngineConfig
from stateous.control.errors import Refusal, conflict, invalid, not_found
from stateous.control.store import schedules as table
from stateous.control.store.schedules import ScheduleRecord
from stateous.model.schedules import (
    ScheduleProblem,
    ScheduleSpec,
    check_spec,
    next_slot,
    plan,
)

#: The steps (transactions) of one schedule in one tick, at most: a long `catch_up: all`
#: goes on at the next tick, so that the tick's timers and leases do not wait for all of it.
MOST_STEPS = 4


def check_body(body: Mapping[str, Any], name: str | None = None) -> ScheduleSpec:
    """A schedule's body checked, or `422 invalid_body` naming the part."""
    try:
        return check_spec(body, name)
    except ScheduleProblem as exc:
        raise invalid("invalid_body", str(exc)) from exc


def check_context(config: EngineConfig, spec: ScheduleSpec) -> None:
    """`422 invalid_body` when a token of the current version could not start on the
    schedule's context: every slot would fail."""
    problem = start_problem(config.body(None), spec.context)
    if problem is not None:
        raise invalid(
            "invalid_body",
            f"'context' cannot start a token of the version served now ({problem})",
        )


def spec_of(record: ScheduleRecord) -> ScheduleSpec:
    """The fields of a saved schedule."""
    return ScheduleSpec(
        name=record.name, cron=record.cron, tz=record.tz, context=record.context,
        id=record.id, catch_up=record.catch_up, paused=record.paused,
    )  # fmt: skip


def schedule_wire(record: ScheduleRecord) -> dict[str, Any]:
    """A schedule as the API answers it; `next_at` is null while it is paused."""
    return {
        "name": record.name,
        "cron": record.cron,
        "tz": record.tz,
        "context": record.context,
        "id": record.id,
        "catch_up": record.catch_up,
        "paused": record.paused,
        "next_at": None if record.paused else iso(record.next_at),
        "last_at": None if record.last_at is None else iso(record.last_at),
        "last_token": record.last_token,
        "last_error": record.last_error,
        "last_error_at": None if record.last_error_at is None else iso(record.last_error_at),
        "failures": record.failures,
    }


def no_schedule(name: str) -> Refusal:
    """`404 schedule_not_found`."""
    return not_found("schedule_not_found", f"there is no schedule {name!r}")


def _existing(conn: Connection, name: str) -> ScheduleRecord:
    found = table.get_schedule(conn, name, lock=True)
    if found is None:
        raise no_schedule(name)
    return found


def _acted(
    conn: Connection, name: str, kind: str, at: datetime, by: Mapping[str, Any] | None
) -> None:
    if by is not None:
        table.write_act(conn, name, kind, at, by)


# --- the operator's acts ----------------------------------------------------------------------


def list_wire(conn: Connection) -> list[dict[str, Any]]:
    """Every schedule, by name."""
    return [schedule_wire(record) for record in table.list_schedules(conn)]


def get_wire(conn: Connection, name: str) -> dict[str, Any]:
    """One schedule, or `404 schedule_not_found`."""
    found = table.get_schedule(conn, name)
    if found is None:
        raise no_schedule(name)
    return schedule_wire(found)


def create(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    spec: ScheduleSpec,
    by: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Save a new schedule (`422 invalid_body` when its context cannot start a token of the
    current version, `409 schedule_exists` when the name is taken); its first slot is the first
    after now."""
    now = clock.now()
    check_context(config, spec)
    table.lock_name(conn, spec.name)
    if table.get_schedule(conn, spec.name) is not None:
        raise conflict(
            "schedule_exists",
            f"a schedule {spec.name!r} exists already; PUT /schedules/{spec.name} replaces it",
        )
    record = ScheduleRecord(
        name=spec.name, cron=spec.cron, tz=spec.tz, context=_context(spec), id=spec.id,
        catch_up=spec.catch_up, paused=spec.paused, next_at=next_slot(spec, now),
        last_at=None, last_token=None, created_at=now,
    )  # fmt: skip
    table.insert_schedule(conn, record)
    _acted(conn, spec.name, "schedule_added", now, by)
    return schedule_wire(record)


def _context(spec: ScheduleSpec) -> dict[str, Any] | None:
    return None if spec.context is None else dict(spec.context)


def replace(
    conn: Connection,
    clock: Clock,
    config: EngineConfig,
    spec: ScheduleSpec,
    by: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Replace a schedule's fields (`422 invalid_body` as `create`); its last slot, last error
    and failures stay. Its next slot is recomputed from now when the calendar (cron, zone)
    changed or it is resumed by the replacement."""
    now = clock.now()
    check_context(config, spec)
    old = _existing(conn, spec.name)
    same = (old.cron, old.tz) == (spec.cron, spec.tz) and not (old.paused and not spec.paused)
    values = {
        "cron": spec.cron, "tz": spec.tz, "context": _context(spec), "id": spec.id,
        "catch_up": spec.catch_up, "paused": spec.paused,
        "next_at": old.next_at if same else next_slot(spec, now),
    }  # fmt: skip
    table.update_schedule(conn, spec.name, values)
    _acted(conn, spec.name, "schedule_replaced", now, by)
    return get_wire(conn, spec.name)


def pause(
    conn: Connection, clock: Clock, name: str, by: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Pause a schedule: it starts nothing until resumed (pausing a paused one changes
    nothing but the audit)."""
    now = clock.now()
    _existing(conn, name)
    table.update_schedule(conn, name, {"paused": True})
    _acted(conn, name, "schedule_paused", now, by)
    return get_wire(conn, name)


def resume(
    conn: Connection, clock: Clock, name: str, by: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Resume a paused schedule from its first slot after now: the slots of the pause are
    not caught up. A running schedule stays as it is."""
    now = clock.now()
    old = _existing(conn, name)
    if old.paused:
        table.update_schedule(
            conn, name, {"paused": False, "next_at": next_slot(spec_of(old), now)}
        )
    _acted(conn, name, "schedule_resumed", now, by)
    return get_wire(conn, name)


def remove(
    conn: Connection, clock: Clock, name: str, by: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Delete a schedule, answering it as it was; the tokens it started stay."""
    now = clock.now()
    old = _existing(conn, name)
    table.delete_schedule(conn, name)
    _acted(conn, name, "schedule_removed", now, by)
    return schedule_wire(old)


# --- the clock ----------------------------------------------------------------------------------


def failure_text(token_id: str, refusal: Refusal) -> str:
    """What a schedule keeps of a slot that failed: the token and the refusal's sentence."""
    return f"the token {token_id!r} did not start: {refusal.message}"


@dataclass(frozen=True)
class Step:
    """One step of a due schedule: the tokens started (or found there already), oldest first;
    the refusal that kept a slot's token (`refused_token`) from starting; whether the schedule
    is still due (`more`)."""

    tokens: tuple[str, ...] = ()
    refused: Refusal | None = None
    refused_token: str | None = None
    more: bool = False


def due_schedules(conn: Connection, clock: Clock) -> list[str]:
    """The schedules whose next slot is due, not paused (one read)."""
    return table.due_names(conn, clock.now())


def run_step(conn: Connection, clock: Clock, config: EngineConfig, name: str) -> Step:
    """Start the slots its `catch_up` picks of a due schedule and move `next_at` past them, in
    the caller's one transaction; nothing when it is no longer due (paused, removed, or done
    by another clock meanwhile).

    A slot whose token cannot start (its context no longer fits the current version) is
    skipped: the refusal is answered for the log and kept in the schedule's row (its sentence,
    the slot's time, one more failure), the step ends there, and the schedule moves on past
    that slot."""
    now = clock.now()
    record = table.get_schedule(conn, name, lock=True)
    if record is None or record.paused:
        return Step()
    spec = spec_of(record)
    step = plan(spec, record.next_at, now)
    if step is None:
        return Step()
    values: dict[str, Any] = {"next_at": step.next_at}
    tokens: list[str] = []
    for slot in step.slots:
        token_id = spec.token_id(slot)
        try:
            start(conn, clock, config, token_id, record.context, schedule=name)
        except Refusal as exc:  # it wrote nothing: the slots before it stay started
            values["next_at"] = next_slot(spec, slot)
            table.update_schedule(conn, name, values)
            table.count_failure(conn, name, failure_text(token_id, exc), slot)
            more = values["next_at"] <= now
            return Step(tuple(tokens), refused=exc, refused_token=token_id, more=more)
        values.update(last_at=slot, last_token=token_id)
        tokens.append(token_id)
    table.update_schedule(conn, name, values)
    return Step(tuple(tokens), more=step.next_at <= now)
