"""OpenTelemetry traces behind one small module, shared by `serve` and `supervise`.

Tracing is on when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER` is set
in the process's environment (`wanted`). Only then does `start` import OpenTelemetry (the
optional extra `stateous[otel]`); otherwise no module of it is ever imported, and the callers
(stateous.control.tracing, stateous.supervisor.tracing) do nothing but test one None.

The W3C `traceparent` text (`00-<trace id>-<span id>-<flags>`) is read and written here by hand,
so the store and the CLI handle a token's trace without OpenTelemetry.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the extra's types, for the checker only: never imported when tracing is off
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

__all__ = [
    "ATTRIBUTES",
    "Tracer",
    "parse_traceparent",
    "start",
    "trace_id_of",
    "wanted",
]

log = logging.getLogger("stateous.tracing")

#: The span attribute of each of a token's facts.
ATTRIBUTES = {
    "token": "stateous.token",
    "state": "stateous.state",
    "visit": "stateous.visit",
    "task": "stateous.task",
    "attempt": "stateous.attempt",
}

# W3C Trace Context: a version other than ff, a trace id and a span id that are not all zeros.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces: `OTEL_EXPORTER_OTLP_ENDPOINT` or
    `OTEL_TRACES_EXPORTER` set (an exporter of `none` alone is off, and so is everything under
    the standard `OTEL_SDK_DISABLED=true`)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    return bool(exporters or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


def parse_traceparent(text: str | None) -> str | None:
    """A valid W3C `traceparent` as its version-00 text (lower case, no trailing fields), or
    None for anything else (absent, malformed, all-zero ids, version ff)."""
    if not text:
        return None
    found = _TRACEPARENT.fullmatch(text.strip().lower())
    if found is None:
        return None
    version, trace, span, flags, rest = found.groups()
    if version == "ff" or trace == _ZERO_TRACE or span == _ZERO_SPAN:
        return None
    if version == "00" and rest:
        return None  # version 00 has exactly four fields
    return f"00-{trace}-{span}-{flags}"


def trace_id_of(traceparent: str) -> str:
    """The 32 hex digits of a valid `traceparent`'s trace id."""
    return traceparent.split("-")[1]


class Tracer:
    """The spans of one process, over an OpenTelemetry tracer (made by `start`)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("stateous")

    def open(
        self, name: str, parent: str | None, facts: Mapping[str, Any], start_ns: int | None = None
    ) -> Span:
        """A span that has begun (at `start_ns`, else now) as a child of `parent` (a
        `traceparent`; None: a new trace), with the token's `facts` (keys of ATTRIBUTES)."""
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        context = None
        if parent is not None:
            context = TraceContextTextMapPropagator().extract({"traceparent": parent})
        span = self._tracer.start_span(name, context=context, start_time=start_ns)
        set_facts(span, facts)
        return span

    def done(
        self,
        name: str,
        parent: str | None,
        facts: Mapping[str, Any],
        start_ns: int,
        error: BaseException | None = None,
    ) -> str:
        """A span of an operation that ran from `start_ns` until now; answers its
        `traceparent`. `error`: the refusal or failure that ended it."""
        span = self.open(name, parent, facts, start_ns)
        if error is not None:
            failed(span, error)
        span.end()
        return traceparent_of(span)

    @contextlib.contextmanager
    def current(self, span: Span) -> Iterator[None]:
        """`span` as the current span of this thread or task while the block runs (a routine's
        own spans nest under it); an exception that leaves the block is recorded on it."""
        from opentelemetry import trace

        with trace.use_span(
            span, end_on_exit=False, record_exception=True, set_status_on_exception=True
        ):
            yield


def set_facts(span: Span, facts: Mapping[str, Any]) -> None:
    """Set a token's facts (keys of ATTRIBUTES, None left out) as the span's attributes."""
    for key, value in facts.items():
        if value is not None:
            span.set_attribute(ATTRIBUTES.get(key, f"stateous.{key}"), value)


def failed(span: Span, error: BaseException | str) -> None:
    """Mark `span` as failed: the exception recorded, or the failure's sentence."""
    from opentelemetry.trace import Status, StatusCode

    if isinstance(error, BaseException):
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    else:
        span.set_status(Status(StatusCode.ERROR, error))


def traceparent_of(span: Span) -> str:
    """The `traceparent` naming `span` as the parent of what follows."""
    ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def now_ns() -> int:
    """The time an operation begins, for its span (`Tracer.done`)."""
    return time.time_ns()


_lock = threading.Lock()
_started: Tracer | None = None
_missing = False  # asked for without the extra: warned once

#: The warning when the environment asks for traces and OpenTelemetry is not installed.
MISSING = (
    "OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER asks for traces, but %s is not "
    "installed; going on without traces (pip install 'stateous[otel]')"
)


def start(service: str, provider: TracerProvider | None = None) -> Tracer | None:
    """This process's tracer when the environment asks for traces (`wanted`), made once: the
    exporters of `OTEL_TRACES_EXPORTER` (`otlp` over HTTP, `console` to standard output; `otlp`
    alone when only the endpoint is set), `OTEL_SERVICE_NAME` or `service` as the service's
    name, the global tracer provider (so an instrumented library's spans join the trace), and a
    flush at exit. None when tracing is off, or asked for without the `otel` extra installed (a
    warning says so, once). `provider`: a test's own, used as it is."""
    global _started, _missing
    with _lock:
        if _started is not None:
            return _started
        if provider is None:
            if not wanted() or _missing:
                return None
            try:
                provider = _provider(service)
            except ImportError as exc:
                _missing = True
                log.warning(MISSING, exc.name or "opentelemetry")
                return None
        _started = Tracer(provider)
        return _started


def _provider(service: str) -> TracerProvider:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    for processor in _processors():
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)
    return provider


def _processors() -> list[Any]:
    """A span processor per exporter named in `OTEL_TRACES_EXPORTER` (default `otlp`)."""
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    names = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    processors: list[Any] = []
    for name in (part.strip() for part in names.split(",")):
        if name == "console":
            # One span a line, written as it ends: a log a test or a person reads line by line.
            exporter = ConsoleSpanExporter(
                out=sys.stdout, formatter=lambda span: span.to_json(indent=None) + "\n"
            )
            processors.append(SimpleSpanProcessor(exporter))
        elif name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            processors.append(BatchSpanProcessor(OTLPSpanExporter()))
        elif name not in ("", "none"):
            log.warning(
                "OTEL_TRACES_EXPORTER names %r, which Stateous does not know; skipped", name
            )
    return processors


def reset() -> None:
    """Forget this process's tracer (tests: a new in-memory provider for the next)."""
    global _started, _missing
    with _lock:
        _started, _missing = None, False
