"""The supervisors as the control plane sees them: the last beat of each, and
whether it is `live`, `stale` or `gone` now.

A supervisor is `live` when its last beat is at most `stale` old and it did not stop
gracefully, `stale` when that beat is older (up to `gone`), and `gone` when it stopped
gracefully or was not seen for `gone`. An entry gone for more than `keep` is left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, delete, select

from stateous.control.store.dialect import dialect_of
from stateous.control.store.tables import supervisors
from stateous.model.environment import DEFAULTS, environment

__all__ = [
    "STATUSES",
    "Beat",
    "Supervisor",
    "Thresholds",
    "counts_by_status",
    "find",
    "is_live",
    "list_supervisors",
    "live_counts",
    "live_supervisors_for",
    "record_beat",
]

STATUSES = ("live", "stale", "gone")
"""A supervisor's statuses, in the order `/metrics` lists them."""

#: Rows not seen for this long are deleted when any supervisor beats (kept well past `keep`).
PRUNE_AFTER = timedelta(days=7)


@dataclass(frozen=True)
class Thresholds:
    """When a silent supervisor turns `stale` and `gone`, and how long `gone` ones are listed.

    The defaults are the documented ones; tests shorten them (in process, or through the environment
    variables `STATEOUS_SUPERVISOR_STALE_SECONDS` and `STATEOUS_SUPERVISOR_GONE_SECONDS`).
    """

    stale: timedelta = timedelta(seconds=DEFAULTS.supervisor_stale_seconds)
    gone: timedelta = timedelta(seconds=DEFAULTS.supervisor_gone_seconds)
    keep: timedelta = timedelta(days=1)

    @classmethod
    def from_env(cls) -> Thresholds:
        """The defaults, with the test knobs of the environment applied."""
        env = environment()
        return cls(
            stale=timedelta(seconds=env.supervisor_stale_seconds),
            gone=timedelta(seconds=env.supervisor_gone_seconds),
        )


@dataclass(frozen=True)
class Beat:
    """One `POST /supervisors/beat`, checked for shape."""

    supervisor: str
    host: str
    pid: int
    version: str
    states: list[str]
    slots: int
    running: list[int]
    started_at: datetime
    stopping: bool = False
    checksum: str | None = None  # the version it serves; None: the current one


@dataclass(frozen=True)
class Supervisor:
    """A row of `supervisors` with its status at the time it was read."""

    supervisor: str
    host: str
    pid: int
    version: str
    states: list[str]
    slots: int
    running: list[int]
    started_at: datetime
    seen_at: datetime
    stopped_at: datetime | None
    status: str
    checksum: str | None = None  # the version its beat names; None: the current one

    @classmethod
    def from_row(cls, row: Row[Any], now: datetime, limits: Thresholds) -> Supervisor:
        """Build from a `supervisors` row, its status judged at `now`."""
        m = row._mapping
        return cls(
            m["supervisor"], m["host"], m["pid"], m["version"], list(m["states"]), m["slots"],
            list(m["running"]), m["started_at"], m["seen_at"], m["stopped_at"],
            status_at(m["seen_at"], m["stopped_at"], now, limits), m["checksum"],
        )  # fmt: skip

    def gone_since(self, limits: Thresholds) -> datetime | None:
        """When it became `gone`: its graceful stop, or `limits.gone` after its last beat;
        None when it is not gone."""
        if self.status != "gone":
            return None
        return self.stopped_at if self.stopped_at is not None else self.seen_at + limits.gone


def status_at(
    seen_at: datetime, stopped_at: datetime | None, now: datetime, limits: Thresholds
) -> str:
    """`live`, `stale` or `gone` at `now` for a supervisor last seen at `seen_at`."""
    if stopped_at is not None:
        return "gone"
    silent = now - seen_at
    if silent <= limits.stale:
        return "live"
    return "stale" if silent < limits.gone else "gone"


def _upsert(conn: Connection, values: dict[str, Any]) -> None:
    """Insert the row, or replace every column of the existing one (one statement, no race)."""
    statement = dialect_of(conn).insert(supervisors).values(values)
    changes = {name: statement.excluded[name] for name in values if name != "supervisor"}
    conn.execute(statement.on_conflict_do_update(index_elements=["supervisor"], set_=changes))


def record_beat(conn: Connection, beat: Beat, now: datetime) -> None:
    """Store `beat` as its supervisor's last one, seen at `now`.

    A beat without `stopping` clears an earlier stop: a supervisor restarted under the same
    name is `live` again.
    """
    values = {
        "supervisor": beat.supervisor,
        "host": beat.host,
        "pid": beat.pid,
        "version": beat.version,
        "states": beat.states,
        "slots": beat.slots,
        "running": beat.running,
        "started_at": beat.started_at,
        "seen_at": now,
        "stopped_at": now if beat.stopping else None,
        "checksum": beat.checksum,
    }
    _upsert(conn, values)
    conn.execute(delete(supervisors).where(supervisors.c.seen_at < now - PRUNE_AFTER))


def _recent(conn: Connection, now: datetime, limits: Thresholds) -> Iterable[Supervisor]:
    """Every row that may still be listed (a rough cut in SQL through `supervisors_seen`)."""
    oldest = now - limits.keep - limits.gone
    query = (
        select(supervisors)
        .where(supervisors.c.seen_at >= oldest)
        .order_by(supervisors.c.supervisor)
    )
    return (Supervisor.from_row(row, now, limits) for row in conn.execute(query))


def list_supervisors(
    conn: Connection, now: datetime, limits: Thresholds | None = None
) -> list[Supervisor]:
    """The supervisors by name, leaving out those gone for more than `limits.keep`."""
    limits = limits or Thresholds.from_env()
    listed = []
    for found in _recent(conn, now, limits):
        since = found.gone_since(limits)
        if since is None or now - since <= limits.keep:
            listed.append(found)
    return listed


def live_supervisors_for(
    conn: Connection, state: str, now: datetime, limits: Thresholds | None = None
) -> list[Supervisor]:
    """The `live` supervisors that serve `state` (`<state>`, or `<workflow>/<state>` for a
    child workflow's state, as in a claim), by name; empty when none does.

    For `why`: `no_supervisor` when this is empty for a queued task's state.
    """
    limits = limits or Thresholds.from_env()
    return [s for s in _live(conn, now, limits) if state in s.states]


def find(
    conn: Connection, supervisor: str, now: datetime, limits: Thresholds | None = None
) -> Supervisor | None:
    """The supervisor named `supervisor` with its status now; None when it never beat."""
    limits = limits or Thresholds.from_env()
    row = conn.execute(select(supervisors).where(supervisors.c.supervisor == supervisor)).first()
    return None if row is None else Supervisor.from_row(row, now, limits)


def is_live(
    conn: Connection, supervisor: str, now: datetime, limits: Thresholds | None = None
) -> bool:
    """Whether the supervisor named `supervisor` is `live` now (False when it never beat).

    For `why`: `supervisor_gone` when the holder of a claimed task is not live.
    """
    found = find(conn, supervisor, now, limits)
    return found is not None and found.status == "live"


def _live(conn: Connection, now: datetime, limits: Thresholds) -> list[Supervisor]:
    query = select(supervisors).where(
        supervisors.c.seen_at >= now - limits.stale, supervisors.c.stopped_at.is_(None)
    )
    found = (Supervisor.from_row(row, now, limits) for row in conn.execute(query))
    return sorted((s for s in found if s.status == "live"), key=lambda s: s.supervisor)


def live_counts(
    conn: Connection, states: Iterable[str], now: datetime, limits: Thresholds | None = None
) -> dict[str, int]:
    """Per state (`states` first, all present, in their order), how many live supervisors
    serve it; a state a live supervisor names that is not in `states` is added after them."""
    limits = limits or Thresholds.from_env()
    counts = dict.fromkeys(states, 0)
    for found in _live(conn, now, limits):
        for state in dict.fromkeys(found.states):  # a state named twice counts once
            counts[state] = counts.get(state, 0) + 1
    return counts


def counts_by_status(
    conn: Connection, now: datetime, limits: Thresholds | None = None
) -> dict[str, int]:
    """How many listed supervisors are `live`, `stale` and `gone` now."""
    counts = dict.fromkeys(STATUSES, 0)
    for found in list_supervisors(conn, now, limits):
        counts[found.status] += 1
    return counts
