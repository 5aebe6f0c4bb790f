"""A scripted HTTP server on a real socket: it records each request and sends the next answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Script:
    """The answers to send, in order, and the requests received."""

    answers: list[tuple[int, str, str]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)

    def answer(self, status: int, body: str, content_type: str = "application/json") -> None:
        """Queue one answer; status 0 closes the connection without answering."""
        self.answers.append((status, body, content_type))


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.script.requests.append(Recorded(self.command, self.path, headers, body))
        status, text, content_type = self.script.answers.pop(0)
        if status == 0:
            self.close_connection = True
            return
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the recorded requests instead."""


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    """`(url, script)` of a scripted server on a free port of 127.0.0.1."""
    yield from _scripted()


@pytest.fixture
def second_server() -> Iterator[tuple[str, Script]]:
    """Another scripted server, for fail-over between two URLs."""
    yield from _scripted()


def _scripted() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("Handler", (_Handler,), {"script": script})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
