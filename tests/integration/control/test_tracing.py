"""Traces of `serve`, in process with the SDK's in-memory exporter: one trace per
token, a span per operation as a child of the start's, the grant's `traceparent`, the
`traceparent` header kept, `trace_id` on `GET /tokens/{id}`; and with tracing off, nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import Connection, select

from stateous.control import tracing
from stateous.control.bulk_runner import BulkRunner
from stateous.control.clock import FakeClock
from stateous.control.engine import retention
from stateous.control.engine.retention import prune
from stateous.control.store.tables import token_traces
from stateous.control.ticker import Ticker
from stateous.model.tracing import Tracer
from tests.support import ROOT, sqlite_url
from tests.support.app import RunningApi, running_api
from tests.support.graphs import DEV, ORDERS, variant

HEADER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
HEADER_TRACE, HEADER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """`serve`'s tracing on, into an in-memory exporter, for the test."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(Tracer(provider))
    yield exporter
    tracing.use(None)


@pytest.fixture
def plain() -> Iterator[None]:
    """`serve`'s tracing off (as without the OTEL_* variables)."""
    tracing.use(None)
    yield


def _ids(span: ReadableSpan) -> tuple[str, str, str | None]:
    """(trace id, span id, parent span id) in hex."""
    ctx = span.get_span_context()
    assert ctx is not None
    parent = None if span.parent is None else f"{span.parent.span_id:016x}"
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", parent


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def _one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    [found] = _named(exporter, name)
    return found


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _claim(http: httpx.Client, **more: Any) -> dict[str, Any]:
    answer = http.post("/tasks/claim", json={"supervisor": "s1", "states": ["draft"], **more})
    assert answer.status_code == 200, answer.text
    grant: dict[str, Any] = answer.json()
    return grant


def test_a_token_s_operations_are_one_trace_under_its_start(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    started = http.post("/tokens", json={"token": "T-1", "context": {"title": "t"}})
    assert started.status_code == 201
    assert "trace_id" not in started.json()  # the token object is as before
    start = _one(spans, "stateous.start")
    trace, start_id, parent = _ids(start)
    assert parent is None  # no header: a new trace
    assert _attributes(start) == {
        "stateous.token": "T-1",
        "stateous.state": "draft",
        "stateous.visit": 1,
    }
    assert http.get("/tokens/T-1").json()["trace_id"] == trace

    grant = _claim(http)
    claim = _one(spans, "stateous.claim")
    assert _ids(claim)[0] == trace and _ids(claim)[2] == start_id
    assert grant["traceparent"].split("-")[:3] == ["00", trace, _ids(claim)[1]]
    assert _attributes(claim) == {
        "stateous.token": "T-1", "stateous.state": "draft", "stateous.visit": 1,
        "stateous.task": grant["task"], "stateous.attempt": 1,
    }  # fmt: skip

    body = {"supervisor": "s1", "kind": "event", "event": "submitted", "attempt": 1}
    assert http.post(f"/tasks/{grant['task']}/report", json=body).status_code == 200
    report = _one(spans, "stateous.report")
    assert _ids(report)[0] == trace and _ids(report)[2] == start_id
    assert _attributes(report) == {
        "stateous.token": "T-1", "stateous.state": "review", "stateous.visit": 1,
        "stateous.task": grant["task"], "stateous.attempt": 1,
        "stateous.outcome": "event", "stateous.event": "submitted",
    }  # fmt: skip

    for name in ("pause", "resume", "cancel"):
        assert http.post(f"/tokens/T-1/{name}", json={}).status_code == 200
        span = _one(spans, f"stateous.{name}")
        assert _ids(span)[0] == trace and _ids(span)[2] == start_id
        assert _attributes(span)["stateous.token"] == "T-1"
    assert len(spans.get_finished_spans()) == 6


def test_the_traceparent_header_is_the_trace_the_token_keeps(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    answer = http.post(
        "/tokens", json={"token": "T-2", "context": {"title": "t"}}, headers={"traceparent": HEADER}
    )
    assert answer.status_code == 201
    start = _one(spans, "stateous.start")
    assert _ids(start)[0] == HEADER_TRACE and _ids(start)[2] == HEADER_SPAN
    assert http.get("/tokens/T-2").json()["trace_id"] == HEADER_TRACE
    grant = _claim(http)
    assert grant["traceparent"].split("-")[1] == HEADER_TRACE
    # Starting it again answers the token as it is; its trace stays the first one.
    again = http.post(
        "/tokens", json={"token": "T-2", "context": {"title": "t"}}, headers={"traceparent": OTHER}
    )
    assert again.status_code == 200
    assert http.get("/tokens/T-2").json()["trace_id"] == HEADER_TRACE


@pytest.mark.parametrize("header", ["", "nonsense", "00-" + "0" * 32 + "-00f067aa0ba902b7-01"])
def test_a_header_that_is_not_a_traceparent_starts_a_new_trace(
    spans: InMemorySpanExporter, http: httpx.Client, header: str
) -> None:
    answer = http.post(
        "/tokens", json={"token": "T-3", "context": {"title": "t"}}, headers={"traceparent": header}
    )
    assert answer.status_code == 201
    trace, _, parent = _ids(_one(spans, "stateous.start"))
    assert parent is None
    assert http.get("/tokens/T-3").json()["trace_id"] == trace


def test_a_refused_start_ends_its_span_with_the_refusal(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    answer = http.post("/tokens", json={"token": "T-4", "context": {}})
    assert answer.status_code == 422
    start = _one(spans, "stateous.start")
    assert start.status.status_code.name == "ERROR"
    assert [event.name for event in start.events] == ["exception"]
    assert http.get("/tokens/T-4").status_code == 404


def test_a_fire_and_several_claims_write_their_spans(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    for n in (5, 6):
        http.post("/tokens", json={"token": f"T-{n}", "context": {"title": "t"}})
    answer = http.post("/tasks/claim", json={"supervisor": "s1", "states": ["draft"], "max": 5})
    grants = answer.json()["grants"]
    assert [g["token"] for g in grants] == ["T-5", "T-6"]
    starts = {_attributes(s)["stateous.token"]: _ids(s) for s in _named(spans, "stateous.start")}
    for grant in grants:
        trace, _, _ = starts[grant["token"]]
        assert grant["traceparent"].split("-")[1] == trace
    fired = http.post("/tokens/T-5/events/submitted", json={})
    assert fired.status_code == 200
    fire = _one(spans, "stateous.fire")
    assert _ids(fire)[0] == starts["T-5"][0] and _ids(fire)[2] == starts["T-5"][1]
    assert _attributes(fire)["stateous.event"] == "submitted"


def test_reports_in_a_batch_of_messages_write_their_spans(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    http.post("/tokens", json={"token": "T-7", "context": {"title": "t"}})
    grant = _claim(http)
    message = {
        "type": "report", "task": grant["task"],
        "body": {"kind": "failed", "error": "E: no", "attempt": 1},
    }  # fmt: skip
    answer = http.post("/tasks/messages", json={"supervisor": "s1", "messages": [message]})
    assert answer.json()["answers"][0]["status"] == 200
    report = _one(spans, "stateous.report")
    assert _ids(report)[0] == grant["traceparent"].split("-")[1]
    assert _attributes(report)["stateous.outcome"] == "failed"


def test_a_bulk_step_and_a_timer_write_their_spans(
    spans: InMemorySpanExporter, migrated_db_url: str
) -> None:
    clock = FakeClock()
    with running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as api:
        http = httpx.Client(base_url=api.url, timeout=30)
        with http:
            for n in (8, 9):
                http.post("/tokens", json={"token": f"T-{n}", "context": {"title": "t"}})
            grant = _claim(http)  # T-8 waits for a timer
            body = {
                "supervisor": "s1", "kind": "waiting", "attempt": 1,
                "schedules": [{"event": "submitted", "after": "1m"}],
            }  # fmt: skip
            assert http.post(f"/tasks/{grant['task']}/report", json=body).status_code == 200
            clock.advance(120)
            assert Ticker(api.plane).tick().timers == 1
            bulk = {"action": "pause", "filter": {"tokens": ["T-9"]}}
            assert http.post("/bulk", json=bulk).status_code == 202
            assert BulkRunner(api.plane).drain() == 1
    starts = {_attributes(s)["stateous.token"]: _ids(s) for s in _named(spans, "stateous.start")}
    timer = _one(spans, "stateous.timer")
    assert _ids(timer)[0] == starts["T-8"][0] and _ids(timer)[2] == starts["T-8"][1]
    assert _attributes(timer)["stateous.state"] == "draft"
    step = _one(spans, "stateous.bulk")
    assert _ids(step)[0] == starts["T-9"][0] and _ids(step)[2] == starts["T-9"][1]
    assert _attributes(step)["stateous.bulk_action"] == "pause"
    assert _attributes(step)["stateous.outcome"] == "done"


def _trace_rows(api: RunningApi) -> list[tuple[str, str]]:
    query = select(token_traces.c.token, token_traces.c.traceparent)
    return [(str(a), str(b)) for a, b in api.plane.store.read(lambda c: list(c.execute(query)))]


def test_without_tracing_nothing_is_written_unless_the_header_came(
    plain: None, api: RunningApi, http: httpx.Client
) -> None:
    http.post("/tokens", json={"token": "T-10", "context": {"title": "t"}})
    assert "trace_id" not in http.get("/tokens/T-10").json()
    assert "traceparent" not in _claim(http)
    assert _trace_rows(api) == []
    # A header is kept all the same: a control plane that traces later goes on with it.
    http.post(
        "/tokens",
        json={"token": "T-11", "context": {"title": "t"}},
        headers={"traceparent": HEADER},
    )
    assert _trace_rows(api) == [("T-11", HEADER)]
    assert http.get("/tokens/T-11").json()["trace_id"] == HEADER_TRACE
    assert "traceparent" not in _claim(http)  # serve does not trace: no claim span


def test_a_prune_deletes_the_token_s_trace(
    plain: None, api: RunningApi, http: httpx.Client
) -> None:
    http.post(
        "/tokens",
        json={"token": "T-12", "context": {"title": "t"}},
        headers={"traceparent": HEADER},
    )
    assert http.post("/tokens/T-12/cancel", json={}).status_code == 200
    plane = api.plane
    cut = plane.clock.now() + timedelta(days=1)
    done = plane.store.run_alone("prune", lambda conn: prune(conn, ["T-12"], cut, None))
    assert done == {"pruned": 1, "skipped": {}}
    assert _trace_rows(api) == []


#: Run in a fresh process without the OTEL_* variables: both sides' set-up, the served app with
#: a start (with the header), a claim and a report, then the OpenTelemetry modules imported.
UNTRACED = """
import sys

import httpx

from stateous.control import runtime, tracing
from stateous.supervisor import loop, tracing as supervising
from tests.support.app import running_api
from tests.support.graphs import DEV, ORDERS, variant

assert not tracing.setup() and not supervising.setup()
with running_api(sys.argv[1], ORDERS) as api, httpx.Client(base_url=api.url) as http:
    header = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    http.post("/tokens", json={"token": "T", "context": {"title": "t"}}, headers=header)
    grant = http.post("/tasks/claim", json={"supervisor": "s", "states": ["draft"]}).json()
    body = {"supervisor": "s", "kind": "event", "event": "submitted", "attempt": 1}
    assert http.post(f"/tasks/{grant['task']}/report", json=body).status_code == 200
    assert http.get("/tokens/T").json()["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
print(sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry"))
"""


def test_without_the_variables_no_opentelemetry_module_is_imported(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", UNTRACED, sqlite_url(tmp_path)],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def _import(family: retention.Family, conn: Connection) -> bool:
    return retention.import_family(conn, family)


def test_an_export_carries_the_trace_and_an_import_puts_it_back(
    plain: None, api: RunningApi, http: httpx.Client
) -> None:
    for token, header in (("T-13", {"traceparent": HEADER}), ("T-14", {})):
        http.post("/tokens", json={"token": token, "context": {"title": "t"}}, headers=header)
        assert http.post(f"/tokens/{token}/cancel", json={}).status_code == 200
    plane = api.plane
    cut = plane.clock.now() + timedelta(days=1)
    page = plane.store.read(lambda conn: retention.export_page(conn, cut, None, 10))
    entries = {entry["token"]["token"]: entry for entry in page["tokens"]}
    assert entries["T-13"]["trace"] == HEADER
    assert "trace" not in entries["T-14"]
    done = plane.store.run_alone("prune", lambda conn: prune(conn, ["T-13", "T-14"], cut, None))
    assert done["pruned"] == 2
    assert _trace_rows(api) == []
    for entry in entries.values():
        family = retention.family_of_entry(entry)
        assert plane.store.run_alone("import", partial(_import, family))
    assert _trace_rows(api) == [("T-13", HEADER)]
    assert http.get("/tokens/T-13").json()["trace_id"] == HEADER_TRACE


def test_each_start_of_a_batch_begins_a_trace_of_its_own(
    spans: InMemorySpanExporter, http: httpx.Client
) -> None:
    tokens = [{"token": f"B-{n}", "context": {"title": "t"}} for n in range(3)]
    batch = {"tokens": [*tokens, {"token": "B-bad", "context": {}}]}
    answer = http.post("/tokens/batch", json=batch, headers={"traceparent": HEADER})
    assert [a["status"] for a in answer.json()["answers"]] == [201, 201, 201, 422]
    starts = _named(spans, "stateous.start")
    assert len(starts) == 4
    traces = {_ids(span)[0] for span in starts}
    assert len(traces) == 4 and HEADER_TRACE not in traces  # the batch takes no header
    assert [span.status.status_code.name for span in starts].count("ERROR") == 1
    for span in starts[:3]:
        token = _attributes(span)["stateous.token"]
        assert http.get(f"/tokens/{token}").json()["trace_id"] == _ids(span)[0]
    grant = _claim(http)
    assert grant["traceparent"].split("-")[1] == http.get("/tokens/B-0").json()["trace_id"]


def test_a_batch_of_starts_one_by_one_keeps_each_token_s_trace(
    spans: InMemorySpanExporter, migrated_db_url: str
) -> None:
    doc = variant(DEV)  # a start into a parallel state: each start an operation of its own
    doc["transitions"][0] = {"from": "__start__", "to": "reviews"}
    with (
        running_api(migrated_db_url, doc, migrate_first=False) as api,
        httpx.Client(base_url=api.url, timeout=30) as http,
    ):
        batch = {"tokens": [{"token": f"P-{n}", "context": {"repo": "r"}} for n in range(2)]}
        answer = http.post("/tokens/batch", json=batch)
        assert [a["status"] for a in answer.json()["answers"]] == [201, 201]
        shown = [http.get(f"/tokens/P-{n}").json().get("trace_id") for n in range(2)]
    starts = {_attributes(s)["stateous.token"]: _ids(s)[0] for s in _named(spans, "stateous.start")}
    assert shown == [starts["P-0"], starts["P-1"]] and shown[0] != shown[1]
