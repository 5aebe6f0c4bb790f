"""The typed records the store's queries answer: one frozen dataclass per table's row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stateous.control.store.direct import AnyRow

__all__ = [
    "TOKEN_PREFIX",
    "ClaimRecord",
    "ControlPlaneRecord",
    "LedgerRecord",
    "TaskRecord",
    "TimerRecord",
    "TokenRecord",
]

#: The prefix of a token's columns read beside a task's (`token_<name>`): a task has columns
#: of the same names.
TOKEN_PREFIX = "token_"


@dataclass(frozen=True)
class TokenRecord:
    """A row of `tokens`."""

    token: str
    state: str
    status: str
    visit: int
    context: dict[str, Any]
    entered_at: datetime
    parent: str | None
    workflow: str | None
    #: The structure the token runs on (its version's; None only for a token of before migration
    #: 0011 in a database that had no graph on record, which then runs on the current one).
    structure: str | None = None

    @classmethod
    def from_row(cls, row: AnyRow, prefix: str = "") -> TokenRecord:
        """Build from a `tokens` row (its columns named `<prefix><column>` in a join)."""
        m = row._mapping
        p = prefix
        return cls(
            m[p + "token"], m[p + "state"], m[p + "status"], m[p + "visit"],
            dict(m[p + "context"]), m[p + "entered_at"], m[p + "parent"], m[p + "workflow"],
            m[p + "structure"],
        )  # fmt: skip


@dataclass(frozen=True)
class TaskRecord:
    """A row of `tasks`."""

    id: int
    token: str
    state: str
    visit: int
    status: str
    attempt: int
    claimed_by: str | None
    lease_until: datetime | None
    queued_at: datetime

    @classmethod
    def from_row(cls, row: AnyRow) -> TaskRecord:
        """Build from a `tasks` row."""
        m = row._mapping
        return cls(
            m["id"], m["token"], m["state"], m["visit"], m["status"], m["attempt"],
            m["claimed_by"], m["lease_until"], m["queued_at"],
        )  # fmt: skip


@dataclass(frozen=True)
class LedgerRecord:
    """A row of `ledger`."""

    token: str
    seq: int
    at: datetime
    kind: str
    key: str | None
    data: dict[str, Any]

    @classmethod
    def from_row(cls, row: AnyRow) -> LedgerRecord:
        """Build from a `ledger` row."""
        m = row._mapping
        return cls(m["token"], m["seq"], m["at"], m["kind"], m["key"], dict(m["data"]))


@dataclass(frozen=True)
class ClaimRecord:
    """A row of `claims`: a supervisor's last claim that carried a request id."""

    supervisor: str
    request: str
    task_id: int | None
    attempt: int | None
    #: The grants after the first of a claim with `max` (`claim_grants`), as (task, attempt).
    more: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ControlPlaneRecord:
    """The one row of `control_plane`."""

    structure: str | None
    checksum: str | None
    serving: str | None
    since: datetime | None


@dataclass(frozen=True)
class TimerRecord:
    """A row of `timers`."""

    id: int
    token: str
    state: str
    visit: int
    event: str
    payload: Any
    set_at: datetime
    due_at: datetime
    status: str
    kind: str

    @classmethod
    def from_row(cls, row: AnyRow) -> TimerRecord:
        """Build from a `timers` row."""
        m = row._mapping
        return cls(
            m["id"], m["token"], m["state"], m["visit"], m["event"], m["payload"],
            m["set_at"], m["due_at"], m["status"], m["kind"],
        )  # fmt: skip
