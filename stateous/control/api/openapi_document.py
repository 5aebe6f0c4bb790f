"""The bodies and answers of the OpenAPI document, as pydantic models, and
`document(app)`, which completes Litestar's generated document with them.

Litestar's generator lists every route with its path parameters; the handlers read raw bodies
(the API's own rules decide what a body is, not a framework), so the generator cannot see the bodies
and answers. This module is imported when the document is first asked for
(stateous.control.api.openapi): building its models costs every start-up a thirtieth of a second
that a control plane nobody asks for its schema never needs.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, cast, get_origin, get_type_hints

from litestar import Litestar
from litestar.openapi.spec import Components, Operation, PathItem, Schema
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import models_json_schema

from stateous.model.wire import EnteredByWire, GrantWire

__all__ = ["ROUTES", "document"]

REF = "#/components/schemas/{model}"
Json = dict[str, Any]


class _Open(BaseModel):
    """A wire shape; answers may grow fields, so none is closed."""

    model_config = ConfigDict(extra="allow")


class Token(_Open):
    """The token object; `parent` only on a child token."""

    token: str
    state: str
    status: Literal["active", "paused", "completed", "failed", "cancelled"]
    visit: int
    context: dict[str, Any]
    entered_at: str
    parent: str = Field(default="", description="Present only on a child token.")
    structure: str = Field(default="", description="The structure the token runs on (sha256:…).")
    trace_id: str = Field(
        default="",
        description="`GET /tokens/{id}` only, on a token with a trace: its trace id.",
    )


class Duplicate(_Open):
    """A fire whose `Idempotency-Key` was used already."""

    duplicate: Literal[True]
    token: Token


class HistoryEntry(_Open):
    """One ledger row of a token."""

    seq: int
    at: str
    kind: str
    data: dict[str, Any]


def _from_wire(name: str, wire: type, doc: str, nested: dict[type, type[BaseModel]]) -> type[_Open]:
    """The open model of a wire TypedDict of `stateous.model.wire`, which alone lists the fields;
    `nested` names the models that stand for the TypedDicts inside it."""
    marked = get_type_hints(wire, include_extras=True)
    fields: dict[str, Any] = {
        key: (
            nested.get(hint, hint),
            Field(default="") if get_origin(marked[key]) is NotRequired else ...,
        )
        for key, hint in get_type_hints(wire).items()
    }
    return create_model(name, __base__=_Open, __doc__=doc, __module__=__name__, **fields)


EnteredBy = _from_wire(
    "EnteredBy", EnteredByWire, "The event that moved the token into the state.", {}
)
Grant = _from_wire("Grant", GrantWire, "A claimed task.", {EnteredByWire: EnteredBy})


class Lost(_Open):
    """The heartbeat's answer: the tasks not renewed."""

    lost: list[int]


class Health(_Open):
    """The served workflow, the graph file's checksum and this control plane's role; with
    authentication on and a valid token, what that token may do."""

    workflow: str
    checksum: str
    role: Literal["holder", "replica"]
    access: Literal["read", "operate", "supervise", "admin"] | None = None


class Version(_Open):
    """A version on record; `live` counts a structure's live top tokens once."""

    checksum: str
    structure: str
    current: bool
    first_served_at: str
    live: int


class Refusal(_Open):
    """Every refusal: a sentence for people and a stable code for programs."""

    error: str
    code: str


class TaskRow(_Open):
    """A task, as the operators' routes show it."""

    task: int
    token: str
    state: str
    visit: int
    status: str
    attempt: int
    claimed_by: str | None
    lease_until: str | None
    queued_at: str


class TimerRow(_Open):
    """A timer of a token."""

    id: int
    state: str
    visit: int
    event: str
    kind: str
    status: str
    set_at: str
    due_at: str


class MemoryRow(_Open):
    """A memory row of a token."""

    state: str
    key: str
    value: Any


class Stats(_Open):
    """Counts by status and state."""

    tokens: dict[str, int]
    states: dict[str, dict[str, int]]
    oldest_queued_at: str | None
    serving: str | None


class StartBody(BaseModel):
    """`POST /tokens`."""

    token: str = Field(description="[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
    context: dict[str, Any] | None = None


class FireBody(BaseModel):
    """`POST /tokens/{id}/events/{event}`."""

    payload: dict[str, Any] | None = None


class ClaimBody(BaseModel):
    """`POST /tasks/claim`."""

    supervisor: str = Field(min_length=1, max_length=256)
    states: list[str] = Field(max_length=1000)
    request: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,64}$")
    wait: float = Field(default=0, ge=0, le=60, description="Long-poll seconds.")
    max: int | None = Field(default=None, ge=1, le=64, description="Claim up to this many tasks.")


class HeartbeatBody(BaseModel):
    """`POST /tasks/heartbeat`."""

    supervisor: str = Field(min_length=1, max_length=256)
    tasks: list[int] = Field(max_length=1000)


class Schedule(BaseModel):
    """A routine timer of a report."""

    event: str
    payload: dict[str, Any] | None = None
    after: str = Field(pattern=r"^[1-9][0-9]*[smhd]$")


class ReportBody(BaseModel):
    """`POST /tasks/{id}/report`."""

    kind: Literal["event", "waiting", "failed"]
    event: str | None = None
    error: str | None = None
    payload: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    schedules: list[Schedule] = []
    attempt: int | None = Field(default=None, ge=1)
    supervisor: str | None = Field(default=None, min_length=1, max_length=256)


class NoteBody(BaseModel):
    """`POST /tasks/{id}/note`."""

    text: str = Field(min_length=1, max_length=500)
    attempt: int | None = Field(default=None, ge=1)


class MemoryBody(BaseModel):
    """`PUT /tasks/{id}/memory`; a `null` value deletes the key."""

    key: str = Field(min_length=1, max_length=128)
    value: Any
    attempt: int | None = Field(default=None, ge=1)


class Grants(_Open):
    """The answer of a claim with `max`."""

    grants: list[Grant]  # type: ignore[valid-type]  # a model made by create_model


class Message(BaseModel):
    """One message of `POST /tasks/messages`: the body of its single route."""

    type: Literal["report", "note", "memory"]
    task: int = Field(ge=0)
    body: dict[str, Any]


class MessagesBody(BaseModel):
    """`POST /tasks/messages`."""

    supervisor: str = Field(min_length=1, max_length=256)
    messages: list[Message] = Field(min_length=1, max_length=100)


class StartsBody(BaseModel):
    """`POST /tokens/batch`: each start is the body of `POST /tokens`."""

    tokens: list[StartBody] = Field(min_length=1, max_length=1000)


class PartAnswer(_Open):
    """The answer to one message or start: its single route's status and body (null for 204)."""

    status: int
    body: Any


class Answers(_Open):
    """The answers of a batch, one per message or start, in order."""

    answers: list[PartAnswer]


class BeatBody(BaseModel):
    """`POST /supervisors/beat`."""

    supervisor: str = Field(min_length=1, max_length=256)
    host: str = Field(min_length=1, max_length=256)
    pid: int = Field(ge=0)
    version: str = Field(min_length=1, max_length=64)
    states: list[str] = Field(max_length=1000)
    slots: int = Field(ge=0, le=100_000)
    running: list[int] = Field(max_length=10_000)
    started_at: str = Field(description="An ISO 8601 time, e.g. 2026-10-16T20:48:44Z")
    stopping: bool = False
    checksum: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="The version the supervisor serves; none: the current one",
    )


class Supervisor(_Open):
    """A supervisor as the control plane sees it."""

    supervisor: str
    host: str
    pid: int
    version: str
    states: list[str]
    slots: int
    running: list[int]
    started_at: str
    stopping: bool
    seen_at: str
    status: Literal["live", "stale", "gone"]
    checksum: str | None


class InboxEvent(_Open):
    """An event a waiting task's state takes from outside, with its payload's JSON Schema."""

    event: str
    payload_schema: dict[str, Any] | None


class ControlPlane(_Open):
    """A live control plane on the database."""

    name: str
    role: Literal["holder", "replica"]
    started_at: str
    seen_at: str


class InboxEntry(_Open):
    """A waiting task of a live token."""

    task: int
    token: str
    state: str
    visit: int
    status: Literal["active", "paused"]
    since: str
    note: str | None
    events: list[InboxEvent]


class By(BaseModel):
    """Who acts and why."""

    actor: str = Field(description="1 to 64 printable characters")
    reason: str = Field(default="", description="0 to 500 characters")
    via: Literal["cli", "console", "client", "api"] | None = None


class RetryBody(BaseModel):
    """`POST /tokens/{id}/retry`."""

    by: By | None = None


class MoveBody(BaseModel):
    """`POST /tokens/{id}/move`."""

    to: str = Field(description="A state of the token's workflow, not START or END")
    context: dict[str, Any] | None = None
    by: By | None = None


class MigrateBody(BaseModel):
    """`POST /tokens/{id}/migrate`; the `Idempotency-Key` header makes it safe to
    send again."""

    to: str | None = Field(default=None, description="A checksum on record; default: the current")
    states: dict[str, str] | None = Field(default=None, description="old state: new state")
    context: dict[str, Any] | None = Field(default=None, description="Context keys to write")
    by: By | None = None


class SteerBody(BaseModel):
    """`POST /tokens/{id}/pause|resume|cancel`: `{}` or absent, or who acts."""

    by: By | None = None


class BulkFilter(BaseModel):
    """The selection of a bulk job: every part optional, all must hold."""

    status: list[str] | None = None
    state: list[str] | None = None
    prefix: str | None = Field(default=None, min_length=1, max_length=128)
    entered_before: str | None = Field(default=None, description="ISO 8601")
    entered_after: str | None = Field(default=None, description="ISO 8601")
    context: dict[str, Any] | None = Field(default=None, description="key: the JSON it equals")
    tokens: list[str] | None = Field(default=None, max_length=10_000)
    structure: list[str] | None = Field(default=None, description="Structures (sha256:…)")


class BulkBody(BaseModel):
    """`POST /bulk`."""

    action: Literal["pause", "resume", "cancel", "fire", "retry", "migrate"]
    filter: BulkFilter | None = None
    event: str | None = Field(default=None, description="fire only, and needed there")
    payload: dict[str, Any] | None = None
    to: str | None = Field(default=None, description="migrate only: a checksum on record")
    states: dict[str, str] | None = Field(default=None, description="migrate only")
    context: dict[str, Any] | None = Field(default=None, description="migrate only")
    dry_run: bool = False
    by: By | None = None


class BulkPreview(_Open):
    """A dry run: how many match, and the first 50 ids, oldest first; a migrate's adds the
    refusals by code, the first 5 ids of each, and what the context lacks or has wrong."""

    matched: int
    tokens: list[str]
    refused: dict[str, int] = Field(default_factory=dict, description="migrate only")
    examples: dict[str, list[str]] = Field(default_factory=dict, description="migrate only")
    reasons: dict[str, str] = Field(
        default_factory=dict,
        description="migrate only: for invalid_context, the field the first refused token's "
        "context lacks or has wrong, e.g. \"'priority' is required\"",
    )


class BulkStarted(_Open):
    """A new bulk job."""

    job: int
    matched: int


class BulkJob(_Open):
    """`GET /bulk/{job}`: a job and its progress."""

    job: int
    action: str
    filter: dict[str, Any]
    event: str | None
    matched: int
    done: int
    skipped: dict[str, int]
    status: Literal["running", "finished", "stopped"]
    created_at: str
    finished_at: str | None
    by: dict[str, Any] | None


class Act(_Open):
    """One operator act of `GET /audit`."""

    token: str
    seq: int
    at: str
    kind: str
    actor: str | None
    via: str | None
    reason: str | None
    bulk: int | None


class ExportEntry(_Open):
    """One exported token: the token, its history, its children's entries."""

    token: Token
    history: list[HistoryEntry]
    children: list[dict[str, Any]] = Field(description="Entries of this same shape, by id")


class ExportPage(_Open):
    """`GET /export`: ended top tokens in id order; `next` is the `after` of the next page."""

    tokens: list[ExportEntry]
    next: str | None


class PruneBody(BaseModel):
    """`POST /prune`."""

    tokens: list[str] = Field(description="1 to 1000 token ids")
    ended_before: str = Field(description="ISO 8601: prune only tokens that ended before it")
    by: By | None = None


class Pruned(_Open):
    """What `POST /prune` did: the tokens pruned, the others by code."""

    pruned: int
    skipped: dict[str, int]


class ImportBody(BaseModel):
    """`POST /import`."""

    tokens: list[ExportEntry] = Field(description="1 to 1000 entries, as GET /export answers")
    by: By | None = None


class Imported(_Open):
    """What `POST /import` did: the tokens put back, those already there (skipped), and of
    the put back those whose search keys are indexed when their graph is first served here."""

    imported: int
    skipped: int
    keys_pending: int


class ScheduleBody(BaseModel):
    """`POST /schedules`."""

    name: str = Field(pattern="^[a-z0-9-]{1,64}$")
    cron: str = Field(description="5 fields: minute hour day-of-month month day-of-week")
    tz: str = Field(default="UTC", description="An IANA time zone")
    context: dict[str, Any] | None = None
    id: str = Field(default="{name}-{at}", description="The token id; {at} is YYYYMMDDTHHMM")
    catch_up: Literal["none", "last", "all"] = "last"
    paused: bool = False
    by: By | None = None


class ScheduleReplaceBody(BaseModel):
    """`PUT /schedules/{name}`: the fields of `POST /schedules`, `name` as the path's."""

    name: str | None = Field(default=None, description="The path's name, if given")
    cron: str = Field(description="5 fields: minute hour day-of-month month day-of-week")
    tz: str = Field(default="UTC", description="An IANA time zone")
    context: dict[str, Any] | None = None
    id: str = Field(default="{name}-{at}", description="The token id; {at} is YYYYMMDDTHHMM")
    catch_up: Literal["none", "last", "all"] = "last"
    paused: bool = False
    by: By | None = None


class CronSchedule(_Open):
    """A schedule; `next_at` is null while it is paused."""

    name: str
    cron: str
    tz: str
    context: dict[str, Any] | None
    id: str
    catch_up: Literal["none", "last", "all"]
    paused: bool
    next_at: str | None
    last_at: str | None
    last_token: str | None
    last_error: str | None = Field(
        description="Why the last slot that failed did not start its token; kept after a "
        "later slot starts (then last_at is after last_error_at)"
    )
    last_error_at: str | None = Field(description="The time of the slot of last_error")
    failures: int = Field(description="The slots whose token did not start, since it was made")


class Finding(_Open):
    """One reason a token is not moving."""

    code: Literal[
        "ended", "paused", "no_supervisor", "queued_behind", "claimed", "supervisor_gone",
        "retrying", "waiting_outside", "timer", "children", "last_event_refused",
    ]  # fmt: skip
    sentence: str
    since: str = Field(default="", description="Present when the finding has a start time.")


class Why(_Open):
    """`GET /tokens/{id}/why`: the findings, most important first."""

    token: Token
    findings: list[Finding]


_MODELS: list[type[BaseModel]] = [
    Token, Duplicate, HistoryEntry, Grant, Lost, Health, Refusal, TaskRow, TimerRow, MemoryRow,
    Stats, StartBody, FireBody, ClaimBody, HeartbeatBody, ReportBody, NoteBody, MemoryBody,
    Grants, MessagesBody, StartsBody, Answers,
    BeatBody, Supervisor, InboxEntry, ControlPlane,
    By, RetryBody, MoveBody, MigrateBody, Finding, Why,
    SteerBody, BulkFilter, BulkBody, BulkPreview, BulkStarted, BulkJob, Act, Version,
    ExportEntry, ExportPage, PruneBody, Pruned, ImportBody, Imported,
    ScheduleBody, ScheduleReplaceBody, CronSchedule,
]  # fmt: skip

#: (method, path) -> (request body model or None, {status: answer}); an answer is a model, a
#: list of a model, a tuple of models (any of them), "empty" (no body) or "text" (Prometheus).
Answer = type[BaseModel] | tuple[type[BaseModel], ...] | list[type[BaseModel]] | str | None
ROUTES: dict[tuple[str, str], tuple[type[BaseModel] | None, dict[int, Answer]]] = {
    ("post", "/tokens"): (StartBody, {201: Token, 200: Token}),
    ("get", "/tokens"): (None, {200: [Token]}),
    ("get", "/tokens/{token_id}"): (None, {200: Token}),
    ("get", "/tokens/{token_id}/history"): (None, {200: [HistoryEntry]}),
    ("post", "/tokens/{token_id}/events/{event}"): (FireBody, {200: (Token, Duplicate)}),
    ("post", "/tokens/{token_id}/pause"): (SteerBody, {200: Token}),
    ("post", "/tokens/{token_id}/resume"): (SteerBody, {200: Token}),
    ("post", "/tokens/{token_id}/cancel"): (SteerBody, {200: Token}),
    ("get", "/workflow"): (None, {200: None}),
    ("get", "/workflow/versions"): (None, {200: [Version]}),
    ("get", "/health"): (None, {200: Health}),
    ("post", "/tasks/claim"): (ClaimBody, {200: (Grant, Grants), 204: "empty"}),
    ("post", "/tasks/messages"): (MessagesBody, {200: Answers}),
    ("post", "/tokens/batch"): (StartsBody, {200: Answers}),
    ("post", "/tasks/heartbeat"): (HeartbeatBody, {200: Lost}),
    ("post", "/tasks/{task}/report"): (ReportBody, {200: Token}),
    ("post", "/tasks/{task}/note"): (NoteBody, {204: "empty"}),
    ("put", "/tasks/{task}/memory"): (MemoryBody, {204: "empty"}),
    ("get", "/tasks"): (None, {200: [TaskRow]}),
    ("get", "/tokens/{token_id}/tasks"): (None, {200: [TaskRow]}),
    ("get", "/tokens/{token_id}/timers"): (None, {200: [TimerRow]}),
    ("get", "/tokens/{token_id}/memory"): (None, {200: [MemoryRow]}),
    ("get", "/stats"): (None, {200: Stats}),
    ("get", "/metrics"): (None, {200: "text"}),
    ("post", "/supervisors/beat"): (BeatBody, {200: Supervisor}),
    ("get", "/supervisors"): (None, {200: [Supervisor]}),
    ("get", "/inbox"): (None, {200: [InboxEntry]}),
    ("post", "/tokens/{token_id}/retry"): (RetryBody, {200: Token}),
    ("post", "/tokens/{token_id}/move"): (MoveBody, {200: Token}),
    ("post", "/tokens/{token_id}/migrate"): (MigrateBody, {200: Token}),
    ("get", "/tokens/{token_id}/why"): (None, {200: Why}),
    ("get", "/control-planes"): (None, {200: [ControlPlane]}),
    ("get", "/audit"): (None, {200: [Act]}),
    ("post", "/bulk"): (BulkBody, {202: BulkStarted, 200: BulkPreview}),
    ("get", "/bulk"): (None, {200: [BulkJob]}),
    ("get", "/bulk/{job}"): (None, {200: BulkJob}),
    ("post", "/bulk/{job}/stop"): (None, {200: BulkJob}),
    ("get", "/export"): (None, {200: ExportPage}),
    ("post", "/prune"): (PruneBody, {200: Pruned}),
    ("post", "/import"): (ImportBody, {200: Imported}),
    ("post", "/schedules"): (ScheduleBody, {201: CronSchedule}),
    ("get", "/schedules"): (None, {200: [CronSchedule]}),
    ("get", "/schedules/{name}"): (None, {200: CronSchedule}),
    ("put", "/schedules/{name}"): (ScheduleReplaceBody, {200: CronSchedule}),
    ("post", "/schedules/{name}/pause"): (SteerBody, {200: CronSchedule}),
    ("post", "/schedules/{name}/resume"): (SteerBody, {200: CronSchedule}),
    ("delete", "/schedules/{name}"): (SteerBody, {200: CronSchedule}),
}

#: The refusal statuses (401 with a bearer token required, 403 for a role that may not),
#: each with the envelope.
REFUSALS = {
    400: "Not JSON, NaN/Infinity, too deep (`bad_request`)",
    401: "No or a wrong bearer token, when authentication is on (`unauthorized`)",
    403: "The token's role does not take this route (`forbidden`)",
    404: "`not_found`, `token_not_found`, `task_not_found`, `bulk_not_found`, `version_not_found`, "
    "`schedule_not_found`",
    405: "`method_not_allowed`",
    409: "`event_not_allowed`, `token_not_active`, `child_token`, `task_not_held`, `attempt_over`, "
    "`token_not_failed`, `bulk_not_running`, `token_in_parallel`, `same_version`, "
    "`search_not_ready`, `schedule_exists`",
    413: "The body is larger than 1 MiB (`bad_request`)",
    422: "`invalid_argument`, `invalid_context`, `invalid_payload`, `invalid_token_id`, "
    "`invalid_body`, `unknown_state`, `version_not_found`",
    500: "`unexpected`",
    503: "`database_busy`, `not_serving`",
}

#: `after=CURSOR` of the listings' pages (issue 32): opaque, as a `Link` header gave it.
_AFTER = ("after", "A cursor from the Link header of the page before: the rows after it")

#: The listings whose `200` may carry `Link: <…&after=CURSOR>; rel="next"` (RFC 8288).
PAGED = frozenset({"/tokens", "/tasks", "/inbox", "/audit", "/bulk"})
LINK = {
    "description": 'RFC 8288 `<PATH?…&after=CURSOR>; rel="next"` when more rows follow; '
    "absent on the last page",
    "schema": {"type": "string"},
}

QUERIES: dict[str, list[tuple[str, str]]] = {
    "/tokens": [("status", "One of the token statuses"), ("parent", "A parent's id"),
                ("structure", "A structure (sha256:…)"), ("state", "A state"),
                ("prefix", "The start of the token ids"),
                ("context.KEY", "A search key's value as JSON; several keys "
                 "must all hold"),
                ("limit", "1 to 1000, default 100"), _AFTER],
    "/tasks": [("status", "One of the task statuses"), ("token", "A token id"),
               ("state", "A state"), ("supervisor", "A supervisor name"),
               ("limit", "1 to 1000, default 100"), _AFTER],
    "/tokens/{token_id}/history": [("after", "Only the entries with seq > after")],
    "/workflow": [("checksum", "A version on record (sha256:…); default: the current one")],
    "/inbox": [("state", "A state"), ("limit", "1 to 1000, default 100"), _AFTER],
    "/audit": [("actor", "An actor"), ("token", "A token id"),
               ("since", "ISO 8601: acts at or after it"), ("limit", "1 to 1000, default 100"),
               _AFTER],
    "/bulk": [("status", "running, finished or stopped"), ("limit", "1 to 1000, default 100"),
              _AFTER],
    "/export": [("ended_before", "ISO 8601, required: tokens that ended before it"),
                ("after", "A token id: the tokens after it"), ("limit", "1 to 1000, default 100")],
}  # fmt: skip


def _ref(model: type[BaseModel]) -> Json:
    return {"$ref": REF.format(model=model.__name__)}


def _answer_schema(shape: Answer) -> Json | None:
    if isinstance(shape, tuple):
        return {"anyOf": [_ref(model) for model in shape]}
    if isinstance(shape, list):
        return {"type": "array", "items": _ref(shape[0])}
    if shape is None:
        return {"type": "object"}
    if isinstance(shape, str):
        return None
    return _ref(shape)


def _responses(answers: dict[int, Answer]) -> Json:
    out: Json = {}
    for status, shape in answers.items():
        if shape == "empty":
            out[str(status)] = {"description": "No body"}
        elif shape == "text":
            out[str(status)] = {
                "description": "Prometheus text exposition",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        else:
            schema = _answer_schema(shape)
            out[str(status)] = {
                "description": "OK",
                "content": {"application/json": {"schema": schema}},
            }
    refusal = {"application/json": {"schema": _ref(Refusal)}}
    for status, text in REFUSALS.items():
        out[str(status)] = {"description": f"Refusal: {text}", "content": refusal}
    return out


def _operation(method: str, path: str, op: Operation) -> None:
    body, answers = ROUTES[(method, path)]
    # The OpenAPI objects hold plain dicts here: Litestar's to_schema() passes dicts through.
    responses = _responses(answers)
    if method == "get" and path in PAGED:  # issue 32: the link to the next page
        responses["200"]["headers"] = {"Link": LINK}
    op.responses = cast(Any, responses)
    if body is not None:
        op.request_body = cast(
            Any,
            {"required": False, "content": {"application/json": {"schema": _ref(body)}}},
        )
    if path in ("/tokens/{token_id}/events/{event}", "/tokens/{token_id}/migrate"):
        key = {"name": "Idempotency-Key", "in": "header", "required": False,
               "schema": {"type": "string", "minLength": 1, "maxLength": 256}}  # fmt: skip
        op.parameters = [*(op.parameters or []), cast(Any, key)]
    if (method, path) == ("post", "/tokens"):
        parent = {"name": "traceparent", "in": "header", "required": False,
                  "schema": {"type": "string"},
                  "description": "W3C Trace Context: the trace the new token keeps."}  # fmt: skip
        op.parameters = [*(op.parameters or []), cast(Any, parent)]
    if method == "get" and path in QUERIES:
        extra = [{"name": name, "in": "query", "required": False,
                  "schema": {"type": "string"}, "description": text}
                 for name, text in QUERIES[path]]  # fmt: skip
        op.parameters = [*(op.parameters or []), *cast(list[Any], extra)]


def document(app: Litestar) -> None:
    """Complete Litestar's generated document (cached by the app) with bodies and answers."""
    openapi = app.openapi_schema
    for path, item in (openapi.paths or {}).items():
        assert isinstance(item, PathItem)
        for method in ("get", "post", "put", "delete"):
            op = getattr(item, method)
            if isinstance(op, Operation) and (method, path) in ROUTES:
                _operation(method, path, op)
    _, defs = models_json_schema([(m, "validation") for m in _MODELS], ref_template=REF)
    schemas = cast(dict[str, Schema | Any], defs.get("$defs", {}))
    components = openapi.components if isinstance(openapi.components, Components) else Components()
    components.schemas = {**(components.schemas or {}), **schemas}
    openapi.components = components
