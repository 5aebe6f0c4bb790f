"""The spans of `serve`: one trace per token, a span per operation.

Every call here is one test of `_tracer` when tracing is off (no OpenTelemetry module is
imported then, stateous.model.tracing), so the routes and the clock call these functions
unconditionally. When it is on:

- a start opens its span (a child of the request's `traceparent`, else a new trace) before its
  operation, and the token keeps that span's `traceparent` in `token_traces`, written in the
  start's transaction (stateous.control.starts_together);
- every later operation of the token (fire, claim, report, timer, pause, resume, cancel, a bulk
  step) writes a span, from its beginning to its answer, as a child of the start's span, with
  the token, state, visit, task and attempt as attributes;
- a claim's grant carries its span's `traceparent`, so the supervisor's routine is its child.

A token's `traceparent` is kept in memory after its start here, and read from `token_traces`
for a token started elsewhere (another replica, before a restart). A token without one (started
while no control plane traced, and without the header) gets no spans.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anyio import to_thread
from sqlalchemy import Connection

from stateous.control.store.traces import timer_facts, traces_of
from stateous.model import tracing
from stateous.model.tracing import parse_traceparent

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from stateous.control.plane import Plane
    from stateous.control.store.db import Store
    from stateous.model.wire import GrantWire, TokenWire

__all__ = [
    "Starting",
    "begin_start",
    "begin_starts",
    "bulk_step",
    "claimed",
    "end_start",
    "end_starts",
    "now",
    "on",
    "operation",
    "operation_in_thread",
    "reported",
    "setup",
    "timer_fired",
    "timer_token",
    "token_facts",
    "traceparent_of",
    "untraced_litestar",
    "use",
]

#: The service's name when `OTEL_SERVICE_NAME` gives none.
SERVICE = "stateous-serve"

#: The most tokens whose `traceparent` is kept in memory (the oldest forgotten first).
KNOWN_MOST = 100_000

_tracer: tracing.Tracer | None = None
_known: dict[str, str | None] = {}  # token -> traceparent (None: it has none), oldest first
_lock = threading.Lock()


def setup() -> bool:
    """Start tracing when the environment asks for it (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    `OTEL_TRACES_EXPORTER`); answers whether it is on."""
    use(tracing.start(SERVICE))
    return _tracer is not None


def use(tracer: tracing.Tracer | None) -> None:
    """Write spans with `tracer` (None: tracing off); forgets the known tokens (tests)."""
    global _tracer
    _tracer = tracer
    with _lock:
        _known.clear()


def on() -> bool:
    """Whether this process writes spans."""
    return _tracer is not None


def untraced_litestar() -> None:
    """Before a Litestar application is made with tracing off: Litestar looks for its own
    OpenTelemetry plugin then, which imports OpenTelemetry wherever it is installed (the `otel`
    extra). Stateous never uses that plugin, so its import is refused from now on in this
    process (an import of a module that is None in `sys.modules` raises ImportError, which
    Litestar expects); nothing when tracing is on or the plugin was imported already."""
    if _tracer is None and _LITESTAR_OTEL not in sys.modules:
        sys.modules[_LITESTAR_OTEL] = None  # type: ignore[assignment]  # Python's way to refuse an import


_LITESTAR_OTEL = "litestar.plugins.opentelemetry"


def now() -> int:
    """When an operation begins, for its span (nanoseconds; 0 when tracing is off)."""
    return tracing.now_ns() if _tracer is not None else 0


# --- a start ------------------------------------------------------------------------------------


@dataclass
class Starting:
    """A start's trace: the `traceparent` its token keeps, and its span while it runs (None
    when tracing is off and the request came with the header, kept as it came)."""

    traceparent: str
    span: Span | None = None


def begin_start(header: str | None) -> Starting | None:
    """The trace of a start whose request carried `header` (its `traceparent`, or None): None
    when tracing is off and no valid header came (nothing is written)."""
    parent = parse_traceparent(header)
    if _tracer is None:
        return None if parent is None else Starting(parent)
    span = _tracer.open("stateous.start", parent, {})
    return Starting(tracing.traceparent_of(span), span)


def begin_starts(count: int) -> list[Starting | None]:
    """The traces of the `count` starts of `POST /tokens/batch`: a new trace each while
    `serve` traces (the batch takes no header), else None each."""
    if _tracer is None:
        return [None] * count
    return [begin_start(None) for _ in range(count)]


def traceparent_of(starting: Starting | None) -> str | None:
    """The `traceparent` a start's token keeps, None without a trace."""
    return None if starting is None else starting.traceparent


def end_starts(traces: Sequence[Starting | None], answers: Sequence[Mapping[str, Any]]) -> None:
    """End the spans of a batch's starts with their answers (`{"status", "body"}` each)."""
    if _tracer is None:
        return
    for starting, answer in zip(traces, answers, strict=True):
        status, body = answer["status"], answer["body"]
        if status in (200, 201):
            end_start(starting, body, created=status == 201)
        else:
            end_start(starting, None, error=str(body.get("error")))


def end_start(
    starting: Starting | None,
    token: TokenWire | None,
    created: bool = False,
    error: BaseException | str | None = None,
) -> None:
    """End a start's span with the token's facts, or its refusal; a new token's `traceparent`
    is known from now on."""
    if starting is None:
        return
    if token is not None and created:
        _remember(token["token"], starting.traceparent)
    span = starting.span
    if span is None:
        return
    if token is not None:
        tracing.set_facts(span, _facts(token))
    if error is not None:
        tracing.failed(span, error)
    span.end()


# --- the operations after it --------------------------------------------------------------------


async def operation(
    plane: Plane,
    name: str,
    started: int,
    token: str,
    facts: Mapping[str, Any],
    error: BaseException | None = None,
) -> str | None:
    """The span of operation `name` of `token` (begun at `started`, from `now`) ending now,
    with `facts` (token, state, visit, task, attempt); answers its `traceparent`, None when
    tracing is off or the token has no trace."""
    if _tracer is None:
        return None
    parents = await _parents_async(plane.store, [token])
    return _write(name, started, parents.get(token), {"token": token, **facts}, error)


def operation_in_thread(
    store: Store, name: str, started: int, items: Iterable[tuple[str, Mapping[str, Any]]]
) -> None:
    """`operation` of several tokens (each with its facts) from a worker thread (the clock,
    a bulk job's batch)."""
    if _tracer is None:
        return
    listed = list(items)
    parents = _parents(store, [token for token, _ in listed])
    for token, facts in listed:
        _write(name, started, parents.get(token), {"token": token, **facts})


async def claimed(plane: Plane, started: int, grants: Sequence[GrantWire]) -> None:
    """A claim's span for each grant; each grant carries its span's `traceparent` (an
    additive field, only for a token with a trace)."""
    if _tracer is None or not grants:
        return
    parents = await _parents_async(plane.store, [grant["token"] for grant in grants])
    for grant in grants:
        facts = {key: grant[key] for key in ("token", "state", "visit", "task", "attempt")}
        written = _write("stateous.claim", started, parents.get(grant["token"]), facts)
        if written is not None:
            grant["traceparent"] = written


async def reported(
    plane: Plane, started: int, task: int, body: Mapping[str, Any], token: Mapping[str, Any]
) -> None:
    """The span of an accepted report of `task` (its `body` as sent, the `token` answered)."""
    if _tracer is None:
        return
    kind, attempt = body.get("kind"), body.get("attempt")
    facts = {**token_facts(token), "task": task, "attempt": attempt, "outcome": kind}
    if kind == "event":
        facts["event"] = body.get("event")
    await operation(plane, "stateous.report", started, str(token["token"]), facts)


def timer_token(store: Store, timer_id: int) -> tuple[str, str, int] | None:
    """A timer's token, state and visit, read before it fires (None when tracing is off)."""
    if _tracer is None:
        return None
    return store.read(lambda conn: timer_facts(conn, timer_id))


def timer_fired(
    store: Store, started: int, timer_id: int, timer: tuple[str, str, int] | None
) -> None:
    """The span of a fired timer (`timer`: its token, state and visit from `timer_token`;
    None: tracing is off, or the timer did not fire)."""
    if _tracer is None or timer is None:
        return
    token, state, visit = timer
    facts = {"state": state, "visit": visit, "timer": timer_id}
    operation_in_thread(store, "stateous.timer", started, [(token, facts)])


def bulk_step(
    store: Store,
    started: int,
    job: int,
    action: str,
    tokens: Sequence[str],
    outcomes: Sequence[Any],
) -> None:
    """The span of each token of a bulk job's step, with the job, its action and the token's
    outcome (`done`, or the code that skipped it; a token with None had nothing done)."""
    if _tracer is None:
        return
    items = [
        (token, {"bulk_job": job, "bulk_action": action, "outcome": str(outcome)})
        for token, outcome in zip(tokens, outcomes, strict=True)
        if outcome is not None  # nothing done: the match was taken already
    ]
    operation_in_thread(store, "stateous.bulk", started, items)


def _write(
    name: str,
    started: int,
    parent: str | None,
    facts: Mapping[str, Any],
    error: BaseException | None = None,
) -> str | None:
    if _tracer is None or parent is None:
        return None
    return _tracer.done(name, parent, facts, started, error)


def _facts(token: TokenWire) -> dict[str, Any]:
    return {"token": token["token"], "state": token["state"], "visit": token["visit"]}


def token_facts(token: Mapping[str, Any]) -> dict[str, Any]:
    """The state and visit of a token object, for `operation`'s facts."""
    return {"state": token.get("state"), "visit": token.get("visit")}


# --- which tokens have a trace ------------------------------------------------------------------


def _remember(token: str, traceparent: str | None) -> None:
    with _lock:
        if len(_known) >= KNOWN_MOST:
            del _known[next(iter(_known))]
        _known[token] = traceparent


def _split(tokens: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The known `traceparent`s, and the tokens to read."""
    found: dict[str, str] = {}
    unknown: list[str] = []
    with _lock:
        for token in tokens:
            if token in _known:
                parent = _known[token]
                if parent is not None:
                    found[token] = parent
            else:
                unknown.append(token)
    return found, unknown


def _read(store: Store, unknown: list[str]) -> dict[str, str]:
    read: dict[str, str] = store.read(lambda conn: _traces(conn, unknown))
    for token in unknown:
        _remember(token, read.get(token))
    return read


def _traces(conn: Connection, tokens: list[str]) -> dict[str, str]:
    return traces_of(conn, sorted(set(tokens)))


def _parents(store: Store, tokens: Sequence[str]) -> dict[str, str]:
    found, unknown = _split(tokens)
    if unknown:
        found.update(_read(store, unknown))
    return found


async def _parents_async(store: Store, tokens: Sequence[str]) -> dict[str, str]:
    found, unknown = _split(tokens)
    if unknown:
        found.update(await to_thread.run_sync(_read, store, unknown))
    return found
