"""The shared part of the traces: when tracing is on, the W3C `traceparent` text,
and spans made with explicit times and parents, into the SDK's in-memory exporter."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stateous.model import tracing
from stateous.model.tracing import Tracer, parse_traceparent, trace_id_of, wanted

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SERVICE_NAME": "orders"}, False),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_tracing_is_on_when_an_otel_variable_asks(environ: dict[str, str], on: bool) -> None:
    assert wanted(environ) is on


@pytest.mark.parametrize(
    ("text", "read"),
    [
        (PARENT, PARENT),
        (PARENT.upper(), PARENT),
        (f"  {PARENT} ", PARENT),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", PARENT),
        (f"{PARENT}-more", None),  # version 00 has four fields
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", None),
        ("", None),
        (None, None),
    ],
)
def test_a_traceparent_is_read_as_w3c_trace_context_says(
    text: str | None, read: str | None
) -> None:
    assert parse_traceparent(text) == read


def test_the_trace_id_is_the_second_field() -> None:
    assert trace_id_of(PARENT) == "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    yield found
    tracing.reset()


def _tracer(exporter: InMemorySpanExporter) -> Tracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    started = tracing.start("test", provider)
    assert started is not None
    return started


def test_a_span_done_after_its_operation_is_a_child_of_the_parent_given(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = _tracer(exporter)
    began = tracing.now_ns()
    written = tracer.done("stateous.fire", PARENT, {"token": "T", "visit": 2, "task": None}, began)
    [span] = exporter.get_finished_spans()
    ctx = span.get_span_context()
    assert ctx is not None and span.parent is not None
    assert f"{ctx.trace_id:032x}" == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert f"{span.parent.span_id:016x}" == "00f067aa0ba902b7"
    assert span.start_time == began
    assert dict(span.attributes or {}) == {"stateous.token": "T", "stateous.visit": 2}
    assert parse_traceparent(written) == written
    assert written.split("-")[1:3] == [f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"]


def test_a_span_without_parent_begins_a_trace_and_an_error_marks_it(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = _tracer(exporter)
    tracer.done("stateous.start", None, {}, tracing.now_ns(), ValueError("no"))
    [span] = exporter.get_finished_spans()
    assert span.parent is None
    assert span.status.status_code.name == "ERROR"
    assert span.status.description == "ValueError: no"
    assert [event.name for event in span.events] == ["exception"]


def test_the_current_span_is_the_parent_of_spans_made_inside_it(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = _tracer(exporter)
    outer = tracer.open("stateous.routine", PARENT, {"token": "T"})
    inner = tracer.provider.get_tracer("a library")
    with pytest.raises(RuntimeError), tracer.current(outer):
        with inner.start_as_current_span("an http call"):
            pass
        raise RuntimeError("the routine failed")
    outer.end()
    call, routine = exporter.get_finished_spans()
    assert call.parent is not None
    assert call.parent.span_id == routine.get_span_context().span_id  # type: ignore[union-attr]
    assert [event.name for event in routine.events] == ["exception"]


def test_asked_for_without_the_extra_it_warns_once_and_goes_on_untraced(
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    with caplog.at_level(logging.WARNING, logger="stateous.tracing"):
        assert tracing.start("test") is None
        assert tracing.start("test") is None
    assert [r.getMessage() for r in caplog.records] == [
        "OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER asks for traces, but opentelemetry "
        "is not installed; going on without traces (pip install 'stateous[otel]')"
    ]


def test_start_is_once_a_process_and_off_without_the_variables(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    assert tracing.start("test") is None
    first = _tracer(exporter)
    assert tracing.start("test") is first
