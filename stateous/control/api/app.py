"""The Litestar application of the HTTP API: `create_app(plane)`, its token, task,
health and workflow routes, and the route functions the fast path (api/lean.py) answers with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from anyio import CapacityLimiter, to_thread
from litestar import Litestar, Request, Response, get, post, put
from litestar.exceptions import MethodNotAllowedException
from litestar.params import FromPath
from litestar.types import Receive
from sqlalchemy import Connection

from stateous.control import tracing
from stateous.control.api import batch as batch_routes
from stateous.control.api import (
    bodies,
    edge,
    inbox,
    longpoll,
    openapi,
    operator,
    pages,
    roles,
    supervisors,
)
from stateous.control.api import bulk as bulk_routes
from stateous.control.api import migrate as migrate_routes
from stateous.control.api import planes as plane_routes
from stateous.control.api import repair as repair_routes
from stateous.control.api import retention as retention_routes
from stateous.control.api import schedules as schedule_routes
from stateous.control.api.acts import actor_of, by_of
from stateous.control.api.answers import (
    answer,
    known_id,
    no_content,
    plane_of,
    read_body,
    reply,
    run,
    task_segment,
)
from stateous.control.api.metrics import metrics_route
from stateous.control.engine import reads, search
from stateous.control.engine.cancel import cancel
from stateous.control.engine.claim import claim
from stateous.control.engine.fire import fire
from stateous.control.engine.heartbeat import heartbeat
from stateous.control.engine.memory import write_memory
from stateous.control.engine.note import note
from stateous.control.engine.pause import pause
from stateous.control.engine.reads import versions_wire
from stateous.control.engine.report import report
from stateous.control.engine.resume import resume
from stateous.control.engine.start_many import StartArgs
from stateous.control.engine.views import token_wire
from stateous.control.errors import not_found
from stateous.control.plane import Plane
from stateous.control.starts_together import start_alone
from stateous.control.store.db import ENGINE_CALLS
from stateous.control.store.traces import trace_of
from stateous.model.auth import Grant
from stateous.model.tracing import trace_id_of

Reply = batch_routes.Reply


# --- tokens -------------------------------------------------------------------------------------


async def start_reply(
    plane: Plane, actor: str | None, body: dict[str, Any], traceparent: str | None = None
) -> Reply:
    """Start a token (`201`), or answer the existing one (`200`); a new token keeps the trace
    of the `traceparent` header, or a new one when `serve` traces."""
    token_id, context = body.get("token"), body.get("context")
    by = bodies.by_arg(body, actor)
    trace = tracing.begin_start(traceparent)
    args = StartArgs(token_id, context, by, None if trace is None else trace.traceparent)
    try:
        if plane.starts is not None:  # with the starts that arrive together
            started = await plane.starts.start(args)
        else:
            started = await start_alone(plane, args)
    except Exception as exc:
        tracing.end_start(trace, None, error=exc)
        raise
    wire = token_wire(started.token)
    tracing.end_start(trace, wire, started.created)
    return (201 if started.created else 200), wire


@post("/tokens", status_code=201)
async def start_token(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Start a token (`201`), or answer the existing one (`200`)."""
    body = await read_body(request)
    header = request.headers.get("traceparent")
    return reply(await start_reply(plane_of(request), actor_of(request), body, header))


@get("/tokens")
async def list_tokens(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Tokens, most recently moved first; `context.KEY=JSON` finds them by their search
    keys; `after=CURSOR` the page after the one whose `Link` header gave it."""
    names = ("status", "parent", "limit", "structure", "state", "prefix")
    query = {name: request.query_params.get(name) for name in names}
    status, parent, limit, structure = bodies.listing_args(query)
    more: dict[str, Any] = bodies.listing_more(query)
    after = pages.cursor_arg(request.query_params.get("after"), "ts")
    if after is not None:
        more["after"] = (after[0], after[1])
    wanted = bodies.context_args(request.query_params.multi_items())
    config = plane_of(request).config
    if wanted:
        more["context"] = search.search_texts(config.versions, wanted)

    def listing(conn: Connection) -> pages.Page:
        if wanted:
            search.check_ready(conn, config.versions, config.filling, wanted)
        found = reads.list_tokens(conn, status, parent, limit + 1, structure, **more)
        return pages.Page(found, limit, lambda t: (pages.wire_time(t["entered_at"]), t["token"]))

    page = await run(request, "list", listing)
    return pages.paged(request, page.rows, page.next)


@get("/tokens/{token_id:str}")
async def get_token(request: Request[Any, Any, Any], token_id: FromPath[str]) -> Response[bytes]:
    """One token; with its `trace_id` when it has a trace."""
    return answer(await run(request, "token", lambda conn: traced_token(conn, token_id)))


def traced_token(conn: Connection, token_id: str) -> Any:
    """`reads.read_token` with the token's `trace_id` when it has a trace."""
    wire = reads.read_token(conn, token_id)
    parent = trace_of(conn, wire["token"])
    if parent is not None:
        wire["trace_id"] = trace_id_of(parent)
    return wire


@get("/tokens/{token_id:str}/history")
async def token_history(
    request: Request[Any, Any, Any], token_id: FromPath[str]
) -> Response[bytes]:
    """A token's ledger; with `after=SEQ` only the entries after it."""
    after = operator.after_arg(request.query_params.get("after"))
    if after is not None:
        return answer(
            await run(
                request, "history", lambda conn: operator.history_after(conn, token_id, after)
            )
        )
    return answer(await run(request, "history", lambda conn: reads.history(conn, token_id)))


@post("/tokens/{token_id:str}/events/{event:str}", status_code=200)
async def fire_event(
    request: Request[Any, Any, Any], token_id: FromPath[str], event: FromPath[str]
) -> Response[bytes]:
    """Fire an event from outside."""
    body = await read_body(request)
    key = request.headers.get("idempotency-key")
    plane = plane_of(request)
    by = by_of(request, body)
    started = tracing.now()
    fired = await run(
        request,
        "fire",
        lambda conn: fire(
            conn, plane.clock, plane.config, token_id, event, body.get("payload"), key, by
        ),
    )
    if tracing.on():
        facts = {**tracing.token_facts(token_wire(fired.token)), "event": event}
        await tracing.operation(plane, "stateous.fire", started, token_id, facts)
    if fired.duplicate:
        return answer({"duplicate": True, "token": token_wire(fired.token)})
    return answer(token_wire(fired.token))


def _steer_route(path: str, name: str, work: Callable[..., Any]) -> Any:
    async def steer(request: Request[Any, Any, Any], token_id: FromPath[str]) -> Response[bytes]:
        by = by_of(request, await read_body(request))  # a body of `{}`, or none, is fine
        plane = plane_of(request)
        started = tracing.now()
        token = await run(
            request, name, lambda conn: work(conn, plane.clock, plane.config, token_id, by)
        )
        wire = token_wire(token)
        if tracing.on():
            facts = tracing.token_facts(wire)
            await tracing.operation(plane, f"stateous.{name}", started, token_id, facts)
        return answer(wire)

    steer.__doc__ = f"{name.capitalize()} a top token."
    return post(path, status_code=200, name=name)(steer)


pause_token = _steer_route("/tokens/{token_id:str}/pause", "pause", pause)
resume_token = _steer_route("/tokens/{token_id:str}/resume", "resume", resume)
cancel_token = _steer_route("/tokens/{token_id:str}/cancel", "cancel", cancel)


# --- workflow and health ------------------------------------------------------------------------


@get("/workflow")
async def workflow(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The current graph document; with `checksum=`, that version's."""
    plane = plane_of(request)
    plane.check_serving()
    checksum = request.query_params.get("checksum")
    if checksum is None:
        return answer(plane.config.graph.doc)
    graph = await to_thread.run_sync(plane.config.versions.by_checksum, checksum)
    if graph is None:
        raise not_found("version_not_found", f"no version {checksum!r} was ever served")
    return answer(graph.doc)


@get("/workflow/versions")
async def workflow_versions(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The versions on record, newest first, with their live top tokens."""
    plane = plane_of(request)
    current = plane.config.graph.checksum
    return answer(await run(request, "versions", lambda conn: versions_wire(conn, current)))


@get("/health")
async def health(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The workflow's name, the served graph's checksum and this control plane's role; with
    authentication on and a valid token, that token's role as `access`."""
    plane = plane_of(request)
    plane.check_serving()
    graph = plane.config.graph
    value = {"workflow": graph.workflow, "checksum": graph.checksum, "role": plane.role}
    access = roles.access_of(request)  # what the caller's token may do
    if access is not None:
        value["access"] = access
    return answer(value)


# --- tasks --------------------------------------------------------------------------------------


async def claim_reply(plane: Plane, receive: Receive, body: dict[str, Any]) -> Reply:
    """Claim a task: a grant, or `204`; with `wait`, hold the request until one is queued;
    with `max`, several. `receive` tells when the caller hangs up."""
    supervisor, states, request_id = bodies.claim_args(body)
    structure = bodies.claim_structure(body, plane.config.versions)
    wait = longpoll.wait_arg(body)
    most = bodies.max_arg(body)
    if most is not None:  # several tasks at once
        return await batch_routes.claim_several(
            plane, receive, supervisor, states, request_id, wait, most, structure
        )
    if not states and request_id is None:
        plane.check_serving()
        return 204, None

    def work(conn: Connection) -> Any:
        return claim(conn, plane.clock, plane.config, supervisor, states, request_id, structure)

    async def attempt() -> Any:
        return await plane.run_async("claim", work)

    if not states:
        wait = 0.0  # no task can be queued for no state: nothing to wait for
    started = tracing.now()
    gone = partial(longpoll.until_disconnect, receive)
    granted = await longpoll.claim_waiting(plane.wakeups, wait, attempt, gone, states, work)
    if granted is not None and tracing.on():
        await tracing.claimed(plane, started, [granted])  # the grant's `traceparent`
    return (204, None) if granted is None else (200, granted)


@post("/tasks/claim", status_code=200)
async def claim_task(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Claim a task: a grant, or `204`; with `wait`, hold the request until one is queued."""
    body = await read_body(request)
    return reply(await claim_reply(plane_of(request), request.receive, body))


@post("/tasks/heartbeat", status_code=200)
async def heartbeat_tasks(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Renew leases; answer the lost ones."""
    supervisor, tasks = bodies.heartbeat_args(await read_body(request))
    plane = plane_of(request)
    lost = await run(
        request,
        "heartbeat",
        lambda conn: heartbeat(conn, plane.clock, plane.config, supervisor, tasks),
    )
    return answer({"lost": lost})


async def report_reply(
    plane: Plane, actor: str | None, segment: int, body: dict[str, Any]
) -> Reply:
    """Report the outcome of the task a path's segment names (digits, already checked)."""
    outcome = replace(bodies.report_args(body), by=bodies.by_arg(body, actor))
    task_id = known_id(segment)
    started = tracing.now()
    token = await plane.run_async(
        "report", lambda conn: report(conn, plane.clock, plane.config, task_id, outcome)
    )
    wire = token_wire(token)
    if tracing.on():
        await tracing.reported(plane, started, task_id, body, wire)
    return 200, wire


@post("/tasks/{task:str}/report", status_code=200)
async def report_task(request: Request[Any, Any, Any], task: FromPath[str]) -> Response[bytes]:
    """Report a task's outcome."""
    segment = task_segment(task, request.url.path)
    body = await read_body(request)
    return reply(await report_reply(plane_of(request), actor_of(request), segment, body))


@post("/tasks/{task:str}/note", status_code=200)
async def note_task(request: Request[Any, Any, Any], task: FromPath[str]) -> Response[bytes]:
    """A note on a task."""
    segment = task_segment(task, request.url.path)
    text, attempt = bodies.note_args(await read_body(request))
    task_id = known_id(segment)
    plane = plane_of(request)
    await run(
        request, "note", lambda conn: note(conn, plane.clock, plane.config, task_id, text, attempt)
    )
    return no_content()


@put("/tasks/{task:str}/memory", status_code=200)
async def memory_task(request: Request[Any, Any, Any], task: FromPath[str]) -> Response[bytes]:
    """Write one memory key of the task's state."""
    segment = task_segment(task, request.url.path)
    key, value, attempt = bodies.memory_args(await read_body(request))
    task_id = known_id(segment)
    plane = plane_of(request)
    await run(
        request,
        "memory",
        lambda conn: write_memory(conn, plane.clock, plane.config, task_id, key, value, attempt),
    )
    return no_content()


ROUTES = [
    start_token, list_tokens, get_token, token_history, fire_event, pause_token, resume_token,
    cancel_token, workflow, workflow_versions, health, claim_task, heartbeat_tasks, report_task,
    note_task, memory_task, metrics_route,
]  # fmt: skip


async def no_options(request: Request[Any, Any, Any]) -> None:
    """Before every route: Litestar answers OPTIONS by itself, and this API has no such method
    (`405`); then the bearer token and its role, and only the JSON
    document under `/schema`."""
    if request.method == "OPTIONS":
        raise MethodNotAllowedException()
    grant = edge.check_bearer(request, request.app.state.auth_grants)
    request.state.actor = None if grant is None else grant.name
    await roles.admit(request, grant)
    openapi.only_the_document(request)


def create_app(
    plane: Plane,
    *,
    auth_token: str | None = None,
    auth_names: dict[str, str | None] | None = None,
    auth_grants: Mapping[str, Grant] | None = None,
) -> Litestar:
    """The Litestar application over one control plane; with `auth_token`, every route but
    `GET /health` needs it as a bearer token; `auth_names` are every accepted token
    with its name, the actor of what its requests do, each `admin`; `auth_grants`
    every accepted token with its name and role, instead of both."""
    tracing.untraced_litestar()  # no OpenTelemetry import when tracing is off
    app = Litestar(
        route_handlers=[
            *ROUTES,
            *batch_routes.ROUTES,
            *operator.ROUTES,
            *supervisors.ROUTES,
            *inbox.ROUTES,
            *bulk_routes.ROUTES,
            *repair_routes.ROUTES,
            *migrate_routes.ROUTES,
            *plane_routes.ROUTES,
            *retention_routes.ROUTES,
            *schedule_routes.ROUTES,
        ],
        middleware=[edge.MetricsMiddleware()],
        exception_handlers={Exception: edge.refusal_answer},
        request_max_body_size=edge.MAX_BODY,
        before_request=no_options,
        openapi_config=openapi.config(),
        logging_config=None,
        debug=False,
    )
    app.state.plane = plane
    app.state.auth_token = auth_token
    names = auth_names or ({auth_token: None} if auth_token else {})
    app.state.auth_grants = dict(auth_grants or {t: Grant(name) for t, name in names.items()})
    # The reads' worker threads: reads beyond this would only wait for a pooled connection.
    app.state.reads = CapacityLimiter(ENGINE_CALLS)
    return app
