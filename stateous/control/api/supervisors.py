"""The supervisors' beat and the supervisor registry: `POST /supervisors/beat`,
`GET /supervisors`, and the live supervisors per state that `GET /stats` adds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from litestar import Request, Response, get, post
from sqlalchemy import Connection

from stateous.control.api.answers import answer, plane_of, read_body, run
from stateous.control.api.bodies import CHECKSUM, is_whole
from stateous.control.clock import iso
from stateous.control.errors import Refusal, invalid
from stateous.control.store import registry
from stateous.control.store.registry import Beat, Supervisor, Thresholds
from stateous.control.store.stats import Stats, stats

__all__ = ["ROUTES", "beat_args", "stats_with_supervisors", "supervisor_wire"]

MAX_STATES = 1000
MAX_RUNNING = 10_000
MAX_SLOTS = 100_000
MAX_PID = 2**63 - 1


def _refuse(message: str) -> Refusal:
    return invalid("invalid_body", message)


def _text(body: Mapping[str, Any], name: str, most: int) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not 1 <= len(value) <= most:
        raise _refuse(f"a beat's {name!r} is a string of 1 to {most} characters")
    return value


def _count(body: Mapping[str, Any], name: str, most: int, message: str) -> int:
    value = body.get(name)
    if not isinstance(value, int) or not is_whole(value, 0, most):
        raise _refuse(message)
    return value


def _time(body: Mapping[str, Any], name: str) -> datetime:
    """An ISO 8601 time with a zone (or UTC when it names none), as naive UTC."""
    value = body.get(name)
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise _refuse(f"a beat's {name!r} is an ISO 8601 time, e.g. 2026-10-16T20:48:44Z")
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _states(body: Mapping[str, Any]) -> list[str]:
    value = body.get("states")
    if not isinstance(value, list) or not all(
        isinstance(s, str) and 1 <= len(s) <= 129 for s in value
    ):
        raise _refuse("a beat's 'states' is a list of state names")
    if len(value) > MAX_STATES:
        raise _refuse(f"a beat's 'states' has at most {MAX_STATES} state names")
    return value


def _running(body: Mapping[str, Any]) -> list[int]:
    value = body.get("running")
    if not isinstance(value, list) or not all(is_whole(t) for t in value):
        raise _refuse("a beat's 'running' is a list of task ids")
    if len(value) > MAX_RUNNING:
        raise _refuse(f"a beat's 'running' has at most {MAX_RUNNING} task ids")
    return value


def _checksum(body: Mapping[str, Any]) -> str | None:
    """The version the supervisor serves: optional, a supervisor of before versions
    names none. Its shape only: a checksum never served simply matches no token's version."""
    value = body.get("checksum")
    if value is None:
        return None
    if not isinstance(value, str) or not CHECKSUM.fullmatch(value):
        raise _refuse("a beat's 'checksum' is 'sha256:' and 64 lowercase hex digits")
    return value


def beat_args(body: Mapping[str, Any]) -> Beat:
    """A beat's body, checked for shape (`422 invalid_body` naming the first bad field)."""
    supervisor = _text(body, "supervisor", 256)
    host = _text(body, "host", 256)
    pid = _count(body, "pid", MAX_PID, "a beat's 'pid' is a whole number of 0 or more")
    version = _text(body, "version", 64)
    states = _states(body)
    slots = _count(
        body, "slots", MAX_SLOTS, f"a beat's 'slots' is a whole number from 0 to {MAX_SLOTS}"
    )
    running = _running(body)
    started_at = _time(body, "started_at")
    stopping = body.get("stopping", False)
    if not isinstance(stopping, bool):
        raise _refuse("a beat's 'stopping' is true or false")
    checksum = _checksum(body)
    return Beat(
        supervisor, host, pid, version, states, slots, running, started_at, stopping, checksum
    )


def supervisor_wire(found: Supervisor) -> dict[str, Any]:
    """One entry of `GET /supervisors`: the beat's fields, `seen_at`, `status` and `checksum`
    (the version it serves; null for a supervisor whose beat names none)."""
    return {
        "supervisor": found.supervisor,
        "host": found.host,
        "pid": found.pid,
        "version": found.version,
        "states": found.states,
        "slots": found.slots,
        "running": found.running,
        "started_at": iso(found.started_at),
        "stopping": found.stopped_at is not None,
        "seen_at": iso(found.seen_at),
        "status": found.status,
        "checksum": found.checksum,
    }


def stats_with_supervisors(
    conn: Connection, states: list[str], statuses: tuple[str, ...], now: datetime
) -> Stats:
    """`GET /stats`'s figures, each state with `supervisors`: the live supervisors serving it."""
    found = stats(conn, states, statuses)
    live = registry.live_counts(conn, states, now)
    for name, entry in found.states.items():
        entry["supervisors"] = live.get(name, 0)
    return found


def _beat(conn: Connection, beat: Beat, now: datetime, limits: Thresholds) -> dict[str, Any]:
    registry.record_beat(conn, beat, now)
    found = registry.find(conn, beat.supervisor, now, limits)
    assert found is not None  # written just above, in this transaction
    return supervisor_wire(found)


@post("/supervisors/beat", status_code=200)
async def supervisor_beat(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Record a supervisor's beat; answer its entry as `GET /supervisors` lists it."""
    beat = beat_args(await read_body(request))
    plane, limits = plane_of(request), Thresholds.from_env()
    return answer(
        await run(request, "beat", lambda conn: _beat(conn, beat, plane.clock.now(), limits))
    )


@get("/supervisors")
async def list_supervisors(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every supervisor seen lately, by name, with its status now."""
    plane, limits = plane_of(request), Thresholds.from_env()
    found = await run(
        request,
        "supervisors",
        lambda conn: registry.list_supervisors(conn, plane.clock.now(), limits),
    )
    return answer([supervisor_wire(s) for s in found])


ROUTES = [supervisor_beat, list_supervisors]
"""The supervisor registry's routes, registered by `create_app`."""
