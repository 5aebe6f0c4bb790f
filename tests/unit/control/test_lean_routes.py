"""The hot routes answered in front of Litestar (`LeanRoutes`) answer exactly what Litestar
answers: the same status, headers and bytes, for every request of a token's life and for
their refusals, with and without authentication; and they count in `/metrics` alike.

Two control planes on two SQLite files with the same fixed clock take the same requests, one
through `LeanRoutes`, the other through the bare Litestar app; their transcripts must match.
(The path in front of Litestar does not depend on the database: the routes' work is the same
engine call either way, tested on both backends elsewhere.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stateous.control.api.app import create_app
from stateous.control.api.lean import LeanRoutes
from stateous.control.clock import FakeClock
from stateous.control.engine.tx import EngineConfig
from stateous.control.plane import Plane
from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from stateous.control.store.ledger import ledger_of
from stateous.model.graph import load_graph
from tests.support.databases import sqlite_url
from tests.support.graphs import ORDERS, graph_text

Asgi = Any
Transcript = list[tuple[str, int, list[tuple[bytes, bytes]], bytes]]

TOKEN = "s3cret"
AUTH = [(b"authorization", f"Bearer {TOKEN}".encode())]


def _app(folder: Path, name: str, lean: bool, auth: bool) -> tuple[Asgi, Plane]:
    store = Store(make_engine(sqlite_url(folder, name)))
    with store.begin() as conn:
        migrate.upgrade(conn)
    plane = Plane(store, EngineConfig(load_graph(graph_text(ORDERS))), FakeClock())
    app = create_app(plane, auth_names={TOKEN: "ops"} if auth else None)
    return (LeanRoutes(app) if lean else app), plane


@pytest.fixture
def pair(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Asgi, Asgi, Plane]]:
    auth = bool(getattr(request, "param", False))
    lean, lean_plane = _app(tmp_path, "lean.db", True, auth)
    plain, plain_plane = _app(tmp_path, "plain.db", False, auth)
    yield lean, plain, lean_plane
    lean_plane.store.engine.dispose()
    plain_plane.store.engine.dispose()


async def _call(
    app: Asgi, path: str, body: bytes, headers: list[tuple[bytes, bytes]], method: str = "POST"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
        "headers": [(b"content-length", str(len(body)).encode()), *headers],
    }  # fmt: skip
    await app(scope, receive, send)
    start = sent[0]
    content = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], list(start["headers"]), content


def _transcript(
    app: Asgi, requests: list[tuple[str, Any, list[tuple[bytes, bytes]]]]
) -> Transcript:
    async def run() -> Transcript:
        out: Transcript = []
        for path, body, headers in requests:
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            status, answered, content = await _call(app, path, raw, headers)
            out.append((path, status, answered, content))
        return out

    return asyncio.run(run())


LIFE: list[tuple[str, Any, list[tuple[bytes, bytes]]]] = [
    ("/tokens", {"token": "T-1", "context": {"title": "one"}}, []),
    ("/tokens", {"token": "T-1", "context": {"title": "one"}}, []),  # the existing one: 200
    ("/tokens", {"token": "t-1", "context": {"title": "one"}}, []),  # another case: 422
    ("/tokens", {"token": "T-2", "context": {}}, []),  # invalid_context
    ("/tokens", b'{"token":', []),  # not JSON
    ("/tokens", b"[1]", []),  # not an object
    ("/tokens", {"token": "T-3", "context": {"title": "x"}, "by": {"via": "nope"}}, []),
    ("/tasks/claim", {"supervisor": "box", "states": ["draft"], "request": "r1"}, []),
    ("/tasks/claim", {"supervisor": "box", "states": ["draft"], "request": "r1"}, []),  # replay
    ("/tasks/claim", {"supervisor": "box", "states": ["draft"], "max": 0}, []),
    ("/tasks/claim", {"supervisor": "box", "states": ["draft"], "max": 5}, []),  # nothing: 204
    ("/tasks/claim", {"states": ["draft"]}, []),
    ("/tasks/1/report", {"attempt": 1, "kind": "event", "event": "submitted"}, []),
    ("/tasks/1/report", {"attempt": 1, "kind": "event", "event": "submitted"}, []),  # again
    ("/tasks/99/report", {"attempt": 1, "kind": "event", "event": "submitted"}, []),
    ("/tasks/99999999999999999999/report", {"attempt": 1, "kind": "event", "event": "x"}, []),
    ("/tasks/x1/report", {"attempt": 1, "kind": "event", "event": "submitted"}, []),  # 404
    ("/tasks/2/report", {"kind": "event"}, []),
    ("/tasks/claim", {"supervisor": "box", "states": ["review"], "max": 3}, []),
    (
        "/tasks/messages",
        {
            "supervisor": "box",
            "messages": [
                {"task": 2, "type": "note", "body": {"text": "hi", "attempt": 1}},
                {"task": 2, "type": "memory", "body": {"key": "k", "value": 1, "attempt": 1}},
                {"task": 2, "type": "report", "body": {"attempt": 1, "kind": "bogus"}},
                {
                    "task": 2,
                    "type": "report",
                    "body": {
                        "attempt": 1,
                        "kind": "event",
                        "event": "reviewed",
                        "payload": {"approved": True},
                    },
                },
                {"task": 7, "type": "note", "body": {"text": "x", "attempt": 1}},
            ],
        },
        [],
    ),
    ("/tasks/messages", {"supervisor": "box", "messages": "no"}, []),
    ("/tokens", b"x" * 1_048_577, []),  # too large
]


def test_a_tokens_life_and_its_refusals_answer_the_same_bytes(
    pair: tuple[Asgi, Asgi, Plane],
) -> None:
    lean, plain, _ = pair
    ours, theirs = _transcript(lean, LIFE), _transcript(plain, LIFE)
    assert [row[:2] for row in ours] == [row[:2] for row in theirs]
    assert ours == theirs
    statuses = [status for _, status, _, _ in ours]
    assert statuses == [
        201, 200, 422, 422, 400, 422, 422, 200, 200, 422, 204, 422,
        200, 409, 404, 404, 404, 422, 200, 200, 422, 413,
    ]  # fmt: skip


@pytest.mark.parametrize("pair", [True], indirect=True)
def test_authentication_refuses_and_names_the_actor_alike(pair: tuple[Asgi, Asgi, Plane]) -> None:
    lean, plain, plane = pair
    wrong = [(b"authorization", b"Bearer nope")]
    requests = [
        ("/tokens", {"token": "T-1", "context": {"title": "one"}}, []),
        ("/tokens", {"token": "T-1", "context": {"title": "one"}}, wrong),
        ("/tasks/claim", {"supervisor": "box", "states": ["draft"]}, []),
        ("/tasks/messages", {"supervisor": "box", "messages": []}, wrong),
        ("/tasks/1/report", {"attempt": 1, "kind": "event", "event": "submitted"}, []),
        ("/tokens", {"token": "T-1", "context": {"title": "one"}}, AUTH),
        ("/tasks/claim", {"supervisor": "box", "states": ["draft"], "max": 2}, AUTH),
        ("/tasks/1/report", {"attempt": 1, "kind": "event", "event": "submitted"}, AUTH),
    ]
    ours, theirs = _transcript(lean, requests), _transcript(plain, requests)
    assert ours == theirs
    assert [status for _, status, _, _ in ours] == [401, 401, 401, 401, 401, 201, 200, 200]
    with plane.store.begin() as conn:
        started = ledger_of(conn, "T-1")[0]
    assert started.data["by"] == {"actor": "ops", "via": "api"}


def test_the_hot_routes_are_counted_in_metrics_as_litestar_counts_them(
    pair: tuple[Asgi, Asgi, Plane],
) -> None:
    lean, _, plane = pair
    _transcript(lean, LIFE[:3] + LIFE[7:9] + LIFE[12:13])
    text = plane.metrics.exposition().decode()
    counts = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith(("stateous_request_duration_seconds_count", "stateous_refusals_total"))
    }
    assert counts == {
        'stateous_request_duration_seconds_count{method="POST",route="/tokens"}': 3.0,
        'stateous_request_duration_seconds_count{method="POST",route="/tasks/claim"}': 2.0,
        'stateous_request_duration_seconds_count{method="POST",route="/tasks/{task}/report"}': 1.0,
        'stateous_refusals_total{code="invalid_token_id"}': 1.0,
    }


def test_an_unexpected_failure_is_500_unexpected_and_logged(
    pair: tuple[Asgi, Asgi, Plane], caplog: pytest.LogCaptureFixture
) -> None:
    lean, _, plane = pair
    plane.config = None  # type: ignore[assignment]  # any engine call now fails unexpectedly
    with caplog.at_level(logging.ERROR, logger="stateous.api"):
        ours = _transcript(lean, LIFE[:1])
    body = b'{"error":"the request failed unexpectedly","code":"unexpected"}'
    assert [(status, content) for _, status, _, content in ours] == [(500, body)]
    assert "POST /tokens failed unexpectedly" in caplog.text
