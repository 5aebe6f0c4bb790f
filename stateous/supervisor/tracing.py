"""The spans of `supervise`: each routine runs inside a span.

The span is a child of the grant's `traceparent` (the control plane's claim span) when the grant
carries one, else the first of a trace of its own. It is the current span of the thread or task
where the routine runs, so a routine's own spans (an HTTP call through instrumented httpx, an LLM
call) nest under it without any code in the routine. It ends with the routine's outcome; an
exception the routine raised is recorded on it.

Every call here is one test of `_tracer` when tracing is off: no OpenTelemetry module is
imported then (stateous.model.tracing).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from stateous.model import tracing

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from stateous.model.wire import GrantWire

__all__ = ["SERVICE", "call", "call_async", "finish", "routine_span", "setup", "use"]

#: The service's name when `OTEL_SERVICE_NAME` gives none.
SERVICE = "stateous-supervise"

_tracer: tracing.Tracer | None = None


def setup() -> bool:
    """Start tracing when the environment asks for it; answers whether it is on."""
    use(tracing.start(SERVICE))
    return _tracer is not None


def use(tracer: tracing.Tracer | None) -> None:
    """Write spans with `tracer` (None: tracing off; tests)."""
    global _tracer
    _tracer = tracer


def routine_span(claim: GrantWire) -> Span | None:
    """The span of the routine of a grant, begun now; None when tracing is off."""
    if _tracer is None:
        return None
    facts = {key: claim[key] for key in ("token", "state", "visit", "task", "attempt")}
    return _tracer.open("stateous.routine", claim.get("traceparent"), facts)


def call(span: Span | None, function: Callable[[Any], Any], ctx: Any) -> Any:
    """`function(ctx)` with `span` as the current span of this thread (a plain call when it is
    None); an exception it raises is recorded on the span."""
    if span is None or _tracer is None:
        return function(ctx)
    with _tracer.current(span):
        return function(ctx)


async def call_async(span: Span | None, function: Callable[[Any], Awaitable[Any]], ctx: Any) -> Any:
    """`await function(ctx)` with `span` as the current span of this task (see `call`)."""
    if span is None or _tracer is None:
        return await function(ctx)
    with _tracer.current(span):
        return await function(ctx)


def finish(span: Span | None, outcome: Mapping[str, Any] | None) -> None:
    """End the routine's span with its outcome: the report's `kind` (and event), a failure's
    sentence as the span's error; None: the grant was lost or the supervisor stopped first."""
    if span is None:
        return
    if outcome is None:
        span.set_attribute("stateous.outcome", "lost")
    else:
        span.set_attribute("stateous.outcome", str(outcome.get("kind")))
        if outcome.get("kind") == "event":
            span.set_attribute("stateous.event", str(outcome.get("event")))
        elif outcome.get("kind") == "failed":
            tracing.failed(span, str(outcome.get("error")))
    span.end()
