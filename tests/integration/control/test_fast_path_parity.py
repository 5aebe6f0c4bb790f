"""The fast path (`LeanRoutes`, in front of Litestar) answers byte for byte what Litestar answers.

Two servers of the real application on real sockets, one with the fast path and one without
(`running_api(fast_path=False)`: Litestar's application alone), each on its own SQLite file with
the same fixed clock, take the same raw HTTP requests: every hot route (`POST /tokens`, `POST
/tasks/claim`, `POST /tasks/messages`, `POST /tasks/{task}/report`), its successes and every
refusal it can answer (a body that is not JSON, not UTF-8, too deep, not an object, too large by
`Content-Length` or by counting a chunked body, a missing, wrong or unknown bearer token, the
route's own refusals, an unexpected failure). The answers must be the same bytes: the status
line, every header but `date`, and the body. Their counts in `/metrics` must match as well.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.control.clock import FakeClock
from tests.support.app import RunningApi, running_api
from tests.support.databases import sqlite_url
from tests.support.graphs import ORDERS

TOKEN = "s3cret"
BEARER = ("Authorization", f"Bearer {TOKEN}")
BIG = b'{"token": "' + b"x" * 1_048_576 + b'"}'

# (path, body: a JSON value, or bytes as sent, headers, chunked)
Request = tuple[str, Any, list[tuple[str, str]], bool]


def post(path: str, body: Any, *headers: tuple[str, str], chunked: bool = False) -> Request:
    """A `POST` of the transcript."""
    return path, body, list(headers), chunked


def wire(request: Request) -> bytes:
    """The request's bytes: HTTP/1.1, its body by `Content-Length` or in chunks of 64 KiB."""
    path, body, headers, chunked = request
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1"] + [f"{k}: {v}" for k, v in headers]
    if not chunked:
        lines.append(f"Content-Length: {len(raw)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + raw
    lines.append("Transfer-Encoding: chunked")
    parts = [raw[i : i + 65536] for i in range(0, len(raw), 65536)]
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + chunks + b"0\r\n\r\n"


def exchange(url: str, request: bytes) -> bytes:
    """Send `request` on a new connection and read one whole answer (without its `date`)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += _more(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:")), 0
        )
        while len(body) < length:
            body += _more(sock)
    kept = [line for line in lines if not line.startswith(b"date:")]
    return b"\r\n".join(kept) + b"\r\n\r\n" + body


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise AssertionError("the server closed the connection before the whole answer")
    return chunk


REPORT = {"attempt": 1, "kind": "event", "event": "submitted"}
CLAIM = {"supervisor": "box", "states": ["draft"]}
MESSAGES = {
    "supervisor": "box",
    "messages": [
        {"task": 2, "type": "note", "body": {"text": "hi", "attempt": 1}},
        {"task": 2, "type": "memory", "body": {"key": "k", "value": 1, "attempt": 1}},
        {"task": 2, "type": "report", "body": {"attempt": 1, "kind": "bogus"}},
        {
            "task": 2,
            "type": "report",
            "body": {"attempt": 1, "kind": "event", "event": "reviewed", "payload": {"ok": 1}},
        },
        {"task": 7, "type": "note", "body": {"text": "x", "attempt": 1}},
    ],
}

LIFE: list[Request] = [
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}),
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}),  # the existing one: 200
    post("/tokens", {"token": "t-1", "context": {"title": "one"}}),  # another case: 422
    post("/tokens", {"token": "T-2", "context": {}}),  # invalid_context
    post("/tokens", {"token": "T-3", "context": {"title": "x"}, "by": {"via": "nope"}}),
    post("/tokens", b""),  # empty: `{}`, so no token id
    post("/tokens", b'{"token":'),  # not JSON
    post("/tokens", b'{"token": NaN}'),  # not JSON either
    post("/tokens", b"\xff\xfe"),  # not UTF-8
    post("/tokens", b'{"a": ' + b"[" * 64 + b"]" * 64 + b"}"),  # 65 levels
    post("/tokens", b"[1]"),  # not an object
    post("/tokens", BIG),  # too large, by Content-Length
    post("/tokens", BIG, chunked=True),  # too large, by counting
    post("/tokens", {"token": "T-4", "context": {"title": "chunked"}}, chunked=True),
    post("/tasks/claim", {**CLAIM, "request": "r1"}),
    post("/tasks/claim", {**CLAIM, "request": "r1"}),  # the same grant again
    post("/tasks/claim", {**CLAIM, "max": 0}),
    post("/tasks/claim", {**CLAIM, "max": 5}),  # T-4's draft task
    post("/tasks/claim", {**CLAIM, "max": 5}),  # nothing: 204
    post("/tasks/claim", {"states": ["draft"]}),
    post("/tasks/claim", b"{"),
    post("/tasks/claim", BIG),
    post("/tasks/1/report", REPORT),
    post("/tasks/1/report", REPORT),  # again: no longer held
    post("/tasks/99/report", REPORT),
    post("/tasks/99999999999999999999/report", REPORT),
    post("/tasks/x1/report", REPORT),  # no such route: Litestar's 404 on both
    post("/tasks/2/report", {"kind": "event"}),
    post("/tasks/2/report", b"[]"),
    post("/tasks/2/report", BIG, chunked=True),
    post("/tasks/claim", {"supervisor": "box", "states": ["review"], "max": 3}),
    post("/tasks/messages", MESSAGES),
    post("/tasks/messages", {"supervisor": "box", "messages": "no"}),
    post("/tasks/messages", b"nope"),
    post("/tasks/messages", BIG),
]

AUTHENTICATED: list[Request] = [
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}),  # no header
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}, ("Authorization", "Bearer x")),
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}, ("Authorization", TOKEN)),
    post("/tasks/claim", CLAIM, ("Authorization", "Basic czNjcmV0")),
    post("/tasks/messages", MESSAGES, ("Authorization", "Bearer s3cre")),
    post("/tasks/1/report", REPORT),
    post("/tokens", BIG),  # the token is checked before the body is read
    post("/tokens", {"token": "T-1", "context": {"title": "one"}}, BEARER),
    post(
        "/tokens", {"token": "T-2", "context": {"title": "2"}}, ("authorization", "bearer s3cret")
    ),
    post("/tasks/claim", {**CLAIM, "max": 2}, BEARER),
    post("/tasks/1/report", REPORT, BEARER),
    post("/tasks/messages", {"supervisor": "box", "messages": []}, BEARER),
    post("/tokens", b'{"token":', BEARER),
    post("/tokens", BIG, BEARER),
]


@pytest.fixture
def servers(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[list[RunningApi]]:
    """The same application twice, with the fast path and without; authenticated with the
    parameter `True`."""
    names: dict[str, str | None] | None = {TOKEN: "ops"}
    if not getattr(request, "param", False):
        names = None
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                running_api(
                    sqlite_url(tmp_path, f"{kind}.db"),
                    ORDERS,
                    FakeClock(),
                    auth_names=names,
                    fast_path=kind == "fast",
                )
            )
            for kind in ("fast", "litestar")
        ]


def transcript(api: RunningApi, requests: list[Request]) -> list[bytes]:
    """The answers to `requests`, in order."""
    return [exchange(api.url, wire(request)) for request in requests]


def counts(api: RunningApi) -> dict[str, float]:
    """The request counters of `/metrics` (the latencies' counts, refusals, claims, reports)."""
    text = api.plane.metrics.exposition().decode()
    counted = (
        "stateous_request_duration_seconds_count",
        "stateous_refusals_total",
        "stateous_claims_total",
        "stateous_reports_total",
    )
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(counted)
    }


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def test_the_hot_routes_and_their_refusals_answer_the_same_bytes(
    servers: list[RunningApi],
) -> None:
    fast, litestar = servers
    ours, theirs = transcript(fast, LIFE), transcript(litestar, LIFE)
    for request, mine, its in zip(LIFE, ours, theirs, strict=True):
        assert mine == its, request[:2]
    assert [status(answer) for answer in ours] == [
        201, 200, 422, 422, 422, 422, 400, 400, 400, 400, 422, 413, 413, 201,
        200, 200, 422, 200, 204, 422, 400, 413,
        200, 409, 404, 404, 404, 422, 422, 413, 200, 200, 422, 400, 413,
    ]  # fmt: skip
    assert ours[0].startswith(b"HTTP/1.1 201 Created\r\n")
    assert b"\r\ncontent-type: application/json\r\n" in ours[0]
    assert ours[11].endswith(
        b'{"error":"the body is larger than 1 MiB, the most this API reads","code":"bad_request"}'
    )
    assert counts(fast) == counts(litestar)
    assert counts(fast)['stateous_refusals_total{code="bad_request"}'] == 11


@pytest.mark.parametrize("servers", [True], indirect=True)
def test_authentication_refuses_and_names_the_actor_alike(servers: list[RunningApi]) -> None:
    fast, litestar = servers
    ours, theirs = transcript(fast, AUTHENTICATED), transcript(litestar, AUTHENTICATED)
    for request, mine, its in zip(AUTHENTICATED, ours, theirs, strict=True):
        assert mine == its, request[:2]
    assert [status(answer) for answer in ours] == [
        401, 401, 401, 401, 401, 401, 401, 201, 201, 200, 200, 422, 400, 413,
    ]  # fmt: skip
    assert ours[0].endswith(b'"code":"unauthorized"}')
    assert counts(fast) == counts(litestar)
    for api in servers:  # the named token's name is the actor of what its requests did
        history = httpx.get(f"{api.url}/tokens/T-1/history", headers=dict([BEARER])).json()
        assert history[0]["data"]["by"] == {"actor": "ops", "via": "api"}


def test_an_unexpected_failure_answers_the_same_500(
    servers: list[RunningApi], caplog: pytest.LogCaptureFixture
) -> None:
    for api in servers:
        api.plane.config = None  # type: ignore[assignment]  # every engine call now fails
    requests = [post("/tokens", {"token": "T-1", "context": {"title": "one"}})]
    fast, litestar = servers
    ours, theirs = transcript(fast, requests), transcript(litestar, requests)
    assert ours == theirs
    assert [answer.split(b"\r\n\r\n")[1] for answer in ours] == [
        b'{"error":"the request failed unexpectedly","code":"unexpected"}'
    ]
    assert caplog.text.count("POST /tokens failed unexpectedly") == 2  # once by each server
    assert counts(fast) == counts(litestar)
