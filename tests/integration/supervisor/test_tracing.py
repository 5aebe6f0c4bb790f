"""Traces across `serve` and `supervise`.

In process, with the SDK's in-memory exporter: the routine's span is a child of the grant's
(the claim's span), its outcome on it, a failure's exception recorded, and an HTTP call the
routine makes through instrumented httpx nests under it with no code for it in the routine.

With real processes and the console exporter (each process's stdout to a file): one token's
spans from both processes share the trace of the `traceparent` header it was started with, and
nest start -> claim -> routine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stateous.control import tracing as serve_tracing
from stateous.model import tracing
from stateous.supervisor import tracing as supervise_tracing
from stateous.supervisor.folder import read_folder
from stateous.supervisor.loop import Supervisor
from stateous.supervisor.outbox import Outbox
from tests.integration.supervisor.procs import (
    DATA,
    IN_TEST,
    imports_undone,
    routine_folder,
    wait_until,
)
from tests.support import ROOT, ServeProcess, sqlite_url
from tests.support.app import RunningApi, running_api
from tests.support.processes import (
    SUPERVISE_FAST,
    Supervise,
    serve_command,
    start_piped,
    stateous_argv,
    until_ready,
)

HEADER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"

CALLING = """
import httpx

from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
async def coding(ctx: TicketContext) -> events.done | events.stuck:
    if ctx.token == "T-2":
        raise RuntimeError("the repository is gone")
    async with httpx.AsyncClient() as client:
        await client.get("URL/health")
    return events.stuck()
"""

PLAIN = """
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
def coding(ctx: TicketContext) -> events.done | events.stuck:
    return events.stuck()
"""


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Both sides trace into one in-memory exporter; httpx is instrumented meanwhile."""
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    tracer = tracing.Tracer(provider)
    serve_tracing.use(tracer)
    supervise_tracing.use(tracer)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    yield found
    HTTPXClientInstrumentor().uninstrument()
    serve_tracing.use(None)
    supervise_tracing.use(None)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[RunningApi]:
    """The supervisor tests' sdlc graph served in this process on a new SQLite file."""
    doc = json.loads((DATA / "sdlc.json").read_text(encoding="utf-8"))
    with running_api(sqlite_url(tmp_path), doc) as running:
        yield running


def _hex(value: int, width: int) -> str:
    return f"{value:0{width}x}"


def _span_id(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return _hex(ctx.span_id, 16)


def _trace_of(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return _hex(ctx.trace_id, 32)


def _parent(span: ReadableSpan) -> str | None:
    return None if span.parent is None else _hex(span.parent.span_id, 16)


def _token(span: ReadableSpan) -> object:
    return (span.attributes or {}).get("stateous.token")


def _firsts(spans: Sequence[ReadableSpan], name: str) -> dict[object, ReadableSpan]:
    """The first span named `name` of each token."""
    found: dict[object, ReadableSpan] = {}
    for span in spans:
        if span.name == name:
            found.setdefault(_token(span), span)
    return found


async def test_the_routine_runs_in_a_span_under_the_claim_with_its_own_spans_inside(
    exporter: InMemorySpanExporter, api: RunningApi, tmp_path: Path
) -> None:
    routine = CALLING.replace("URL", api.url)
    yaml = "name: box-1\ntasks: 2\n"
    with imports_undone(routine_folder(tmp_path, api.url, "traced", routine, yaml)) as folder:
        settings = read_folder(folder)
        outbox = Outbox(folder)
        supervisor = Supervisor(settings, outbox, timings=IN_TEST)
        try:
            await supervisor.start()
            async with httpx.AsyncClient(base_url=api.url) as client:
                for token in ("T-1", "T-2"):
                    body = {"token": token, "context": {"repo": "r"}}
                    assert (await client.post("/tokens", json=body)).status_code == 201
            running = asyncio.create_task(supervisor.run())
            for _ in range(200):
                names = [(s.name, _token(s)) for s in exporter.get_finished_spans()]
                if {("stateous.report", "T-1"), ("stateous.routine", "T-2")} <= set(names):
                    break
                await asyncio.sleep(0.05)
            supervisor.signal()
            assert await running == 0
        finally:
            await supervisor.remote.aclose()
            outbox.close()
    spans = exporter.get_finished_spans()
    starts = {_token(s): s for s in spans if s.name == "stateous.start"}
    claims = _firsts(spans, "stateous.claim")  # T-2's routine fails, and is tried again
    routines = _firsts(spans, "stateous.routine")

    done = routines["T-1"]
    assert _trace_of(done) == _trace_of(starts["T-1"])
    assert _parent(claims["T-1"]) == _span_id(starts["T-1"])
    assert _parent(done) == _span_id(claims["T-1"])
    assert dict(done.attributes or {}) == {
        "stateous.token": "T-1", "stateous.state": "coding", "stateous.visit": 1,
        "stateous.task": 1, "stateous.attempt": 1,
        "stateous.outcome": "event", "stateous.event": "stuck",
    }  # fmt: skip
    assert done.status.status_code.name == "UNSET"
    # The routine's own call: instrumented httpx, a child of the routine's span.
    [call] = [s for s in spans if s.name == "GET" and _parent(s) == _span_id(done)]
    assert _trace_of(call) == _trace_of(done)
    report = next(s for s in spans if s.name == "stateous.report" and _token(s) == "T-1")
    assert _parent(report) == _span_id(starts["T-1"])

    failed = routines["T-2"]
    assert _parent(failed) == _span_id(claims["T-2"])
    assert (failed.attributes or {})["stateous.outcome"] == "failed"
    assert failed.status.status_code.name == "ERROR"
    assert failed.status.description == "RuntimeError: the repository is gone"
    [recorded] = failed.events
    assert recorded.name == "exception"
    assert (recorded.attributes or {})["exception.type"] == "RuntimeError"


# --- real processes, the console exporter ----------------------------------------------------


def _console_spans(path: Path) -> list[dict[str, Any]]:
    """The spans a process's console exporter wrote, one JSON object a line."""
    found: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def _short(value: str | None) -> str | None:
    """`0x…` of the console's JSON as the hex digits alone."""
    return None if value is None else value.removeprefix("0x")


def test_one_token_s_spans_from_serve_and_supervise_are_one_trace(tmp_path: Path) -> None:
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "", "PYTHONPATH": str(ROOT)}
    graph = tmp_path / "sdlc.json"
    graph.write_text((DATA / "sdlc.json").read_text(encoding="utf-8"), encoding="utf-8")
    serve_out, supervise_out = tmp_path / "serve.out", tmp_path / "supervise.out"
    with serve_out.open("w") as out:
        process = start_piped(
            serve_command(graph, sqlite_url(tmp_path), "127.0.0.1:0"), env=env, stdout=out.fileno()
        )
    served = until_ready(ServeProcess(url="", process=process))
    try:
        with imports_undone(routine_folder(tmp_path, served.url, "traced", PLAIN, "tasks: 1\n")):
            folder = tmp_path / "traced"
            answer = httpx.post(
                f"{served.url}/tokens",
                json={"token": "T-1", "context": {"repo": "r"}},
                headers={"traceparent": HEADER},
            )
            assert answer.status_code == 201
            with supervise_out.open("w") as out:
                argv = stateous_argv("supervise", str(folder))
                supervising = start_piped(
                    argv, env={**SUPERVISE_FAST, **env}, cwd=tmp_path, stdout=out.fileno()
                )
            supervise = Supervise(supervising)
            supervise.start_reading()
            try:
                wait_until(
                    lambda: httpx.get(f"{served.url}/tokens/T-1").json()["status"] == "completed",
                    what="T-1 completed",
                )
            finally:
                assert supervise.stop() == 0
        shown = httpx.get(f"{served.url}/tokens/T-1").json()
        assert shown["trace_id"] == TRACE
    finally:
        served.stop()
    serve_spans = _console_spans(serve_out)
    routine_spans = _console_spans(supervise_out)
    by_name = {span["name"]: span for span in serve_spans}
    assert {"stateous.start", "stateous.claim", "stateous.report"} <= set(by_name)
    for span in serve_spans:
        assert _short(span["context"]["trace_id"]) == TRACE
        assert span["resource"]["attributes"]["service.name"] == "stateous-serve"
    start, claim = by_name["stateous.start"], by_name["stateous.claim"]
    assert _short(start["parent_id"]) == "00f067aa0ba902b7"
    assert _short(claim["parent_id"]) == _short(start["context"]["span_id"])
    assert _short(by_name["stateous.report"]["parent_id"]) == _short(start["context"]["span_id"])
    [routine] = [span for span in routine_spans if span["name"] == "stateous.routine"]
    assert _short(routine["context"]["trace_id"]) == TRACE
    assert _short(routine["parent_id"]) == _short(claim["context"]["span_id"])
    assert routine["resource"]["attributes"]["service.name"] == "stateous-supervise"
    assert routine["attributes"] == {
        "stateous.token": "T-1", "stateous.state": "coding", "stateous.visit": 1,
        "stateous.task": 1, "stateous.attempt": 1,
        "stateous.outcome": "event", "stateous.event": "stuck",
    }  # fmt: skip
