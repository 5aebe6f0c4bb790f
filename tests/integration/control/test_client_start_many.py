"""`Client.start_many`: batches over a real socket on both backends, progress, a
start too large to send, and the fallback to `POST /tokens` against a control plane without
`POST /tokens/batch` (a small fake server: no part of Stateous is faked)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from stateous.client import Client, Refused
from tests.support.app import RunningApi
from tests.support.ports import free_port


def test_start_many_sends_batches_and_reports_progress(api: RunningApi) -> None:
    seen: list[list[int]] = []
    starts: list[tuple[str, dict[str, str] | None]] = [
        (f"S-{n}", {"title": str(n)}) for n in range(5)
    ]
    starts.insert(2, ("S-0", {"title": "again"}))
    starts.append(("-bad", None))
    with Client(api.url) as client:
        answers = client.start_many(
            starts, batch_size=2, progress=lambda done: seen.append([a["status"] for a in done])
        )
    assert [a["status"] for a in answers] == [201, 201, 200, 201, 201, 201, 422]
    assert seen == [[201, 201], [200, 201], [201, 201], [422]]
    assert answers[2]["body"] == answers[0]["body"]
    assert answers[6]["body"]["code"] == "invalid_token_id"


def test_a_start_too_large_to_send_is_answered_in_its_place(api: RunningApi) -> None:
    huge = {"title": "x" * 1_100_000}
    with Client(api.url) as client:
        answers = client.start_many(
            [("L-1", {"title": "a"}), ("L-2", huge), ("L-3", {"title": "c"})]
        )
        assert [a["status"] for a in answers] == [201, 413, 201]
        assert answers[1]["body"] == {
            "error": "the body is larger than 1 MiB, the most this API reads",
            "code": "bad_request",
        }
        with pytest.raises(ValueError, match="batch_size is 1 to 1000"):
            client.start_many([("L-4", None)], batch_size=1001)


class _OldPlane(BaseHTTPRequestHandler):
    """A control plane of before batches: no `POST /tokens/batch`."""

    seen: ClassVar[list[str]] = []
    #: The answer to `POST /tokens/batch`: 404 (no such route), or 503 (the database is busy).
    batch_status: ClassVar[int] = 404

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        _OldPlane.seen.append(self.path)
        if self.path != "/tokens" and _OldPlane.batch_status == 503:
            self._answer(503, {"error": "the database is busy", "code": "database_busy"})
        elif self.path != "/tokens":
            self._answer(404, {"error": f"this API has no {self.path}", "code": "not_found"})
        elif body["token"].startswith("-"):
            self._answer(422, {"error": "a bad id", "code": "invalid_token_id"})
        else:
            self._answer(201, {"token": body["token"], "context": body["context"]})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # the base's name
        """Quiet."""


@pytest.fixture
def old_plane() -> Iterator[str]:
    """The fake's URL."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _OldPlane)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _OldPlane.seen = []
    _OldPlane.batch_status = 404
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_start_many_falls_back_to_single_starts(old_plane: str) -> None:
    with Client(old_plane) as client:
        answers = client.start_many([("A-1", {"k": 1}), ("-x", None), ("A-2", None)], batch_size=2)
    assert answers == [
        {"status": 201, "body": {"token": "A-1", "context": {"k": 1}}},
        {"status": 422, "body": {"error": "a bad id", "code": "invalid_token_id"}},
        {"status": 201, "body": {"token": "A-2", "context": {}}},
    ]
    # One try of the batch route, then single starts only.
    assert _OldPlane.seen == ["/tokens/batch", "/tokens", "/tokens", "/tokens"]


def test_a_refusal_of_the_whole_batch_raises(old_plane: str) -> None:
    _OldPlane.batch_status = 503
    with Client(old_plane) as client, pytest.raises(Refused) as caught:
        client.start_many([(f"B-{n}", None) for n in range(2)], batch_size=2)
    assert (caught.value.status, caught.value.code) == (503, "database_busy")
    assert _OldPlane.seen == ["/tokens/batch"]


def test_batches_are_split_to_stay_below_1_mib(api: RunningApi) -> None:
    seen: list[int] = []
    starts = [(f"W-{n}", {"title": str(n) * 400_000}) for n in range(3)]
    with Client(api.url) as client:
        answers = client.start_many(starts, progress=lambda done: seen.append(len(done)))
    assert [a["status"] for a in answers] == [201, 201, 201]
    assert seen == [2, 1]
