"""The JSON shapes of the HTTP API, shared by the control plane and its clients."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

#: Ledger kinds.
LEDGER_KINDS: tuple[str, ...] = (
    "started",
    "event_accepted",
    "entered",
    "task_queued",
    "timer_set",
    "branch_started",
    "task_claimed",
    "context_changed",
    "task_done",
    "task_cancelled",
    "task_waiting",
    "task_failed",
    "task_retrying",
    "event_rejected",
    "event_deferred",
    "event_replayed",
    "event_dropped",
    "timer_fired",
    "paused",
    "resumed",
    "completed",
    "failed",
    "cancelled",
    "note",
    "memory_set",
    "memory_deleted",
)

TOKEN_STATUSES: tuple[str, ...] = ("active", "paused", "completed", "failed", "cancelled")
TASK_STATUSES: tuple[str, ...] = ("queued", "claimed", "waiting", "done", "failed", "cancelled")
OWN_EVENTS: frozenset[str] = frozenset({"__started__", "timeout", "error", "joined"})
START = "__start__"
END = "__end__"


class TokenWire(TypedDict):
    """The token object; `parent` only on a child token."""

    token: str
    state: str
    status: str
    visit: int
    context: dict[str, Any]
    entered_at: str
    parent: NotRequired[str]
    #: The structure the token runs on, the full `sha256:…`.
    structure: NotRequired[str]
    #: `GET /tokens/{id}` of a token with a trace: its 32 hex digits.
    trace_id: NotRequired[str]


class DuplicateWire(TypedDict):
    """The answer to a fire whose idempotency key was used already."""

    duplicate: bool
    token: TokenWire


class HistoryEntryWire(TypedDict):
    """One ledger row as `GET /tokens/{id}/history` sends it."""

    seq: int
    at: str
    kind: str
    data: dict[str, Any]


class EnteredByWire(TypedDict):
    """The event that moved the token into the state: its name only."""

    name: str


class GrantWire(TypedDict):
    """The answer to a claim that got a task.

    The one definition of the grant's fields: the API's OpenAPI model and the supervisor's
    check of a claim's answer read them from here.
    """

    task: int
    token: str
    state: str
    visit: int
    attempt: int
    context: dict[str, Any]
    memory: dict[str, Any]
    entered_by: EnteredByWire
    #: The claim's span, only for a token with a trace while `serve` traces: the
    #: routine's span is its child.
    traceparent: NotRequired[str]


class HeartbeatWire(TypedDict):
    """The answer to a heartbeat: the ids not renewed, ascending."""

    lost: list[int]


class HealthWire(TypedDict):
    """The answer of `GET /health`; `role`: `holder` or `replica`."""

    workflow: str
    checksum: str
    role: NotRequired[str]


class RefusalWire(TypedDict):
    """Every refusal's body: a sentence for people and a stable code for programs."""

    error: str
    code: str


class ScheduleWire(TypedDict):
    """A routine's timer in a report: fire `event` with `payload` `after` a duration."""

    event: str
    payload: NotRequired[dict[str, Any] | None]
    after: str


class ReportWire(TypedDict, total=False):
    """The body of `POST /tasks/{id}/report`."""

    kind: str
    event: str | None
    payload: dict[str, Any] | None
    error: str | None
    context: dict[str, Any] | None
    schedules: list[ScheduleWire]
    attempt: int | None
    supervisor: str | None


class ClaimWire(TypedDict, total=False):
    """The body of `POST /tasks/claim`."""

    supervisor: str
    states: list[str]
    request: str | None
