"""The lingering close (stateous.control.api.protocol): a client still sending a body over 1 MiB
when the server answers `413` and closes reads the whole answer, every time, without a broken
pipe; a client that never stops sending is cut off after a bounded time or number of bytes; a
request read whole closes at once, as before.

The real application under uvicorn with the control plane's protocol, on real sockets; each
client asks for `Connection: close`, as urllib and many scripts do.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stateous.control.api import protocol
from tests.support.app import RunningApi, running_api
from tests.support.databases import sqlite_url
from tests.support.graphs import ORDERS

ENVELOPE = (
    b'{"error":"the body is larger than 1 MiB, the most this API reads","code":"bad_request"}'
)
CHUNK = b"x" * 65536


@pytest.fixture
def api(tmp_path: Path) -> Iterator[RunningApi]:
    with running_api(sqlite_url(tmp_path), ORDERS) as running:
        yield running


def connect(api: RunningApi) -> socket.socket:
    host, port = api.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def head(path: str, length: str) -> bytes:
    """A request's head with `Connection: close` and this `Content-Length`."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def send_slowly_then_read(api: RunningApi, path: str, length: str, chunks: int) -> bytes:
    """Send the head, then `chunks` chunks of 64 KiB with a pause after each; then read the
    answer to its end. A send refused by the server raises (a broken pipe, a reset)."""
    with connect(api) as sock:
        sock.sendall(head(path, length))
        for _ in range(chunks):
            sock.sendall(CHUNK)
            time.sleep(0.005)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    return answer


@pytest.mark.parametrize(
    ("path", "length", "status"),
    [
        ("/tokens", str(48 * 65536), b"413"),  # the fast path, by Content-Length
        ("/tokens/T-1/events/done", str(48 * 65536), b"413"),  # Litestar, by Content-Length
        ("/tokens", "9" * 19, b"413"),  # refused by the parser: more than 18 digits
    ],
)
def test_every_client_still_sending_reads_its_whole_413(
    api: RunningApi, path: str, length: str, status: bytes
) -> None:
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: send_slowly_then_read(api, path, length, 48), range(24)))
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:100]
        assert b"\r\nconnection: close\r\n" in answer
        assert answer.endswith(ENVELOPE)


def seconds_until_cut_off(api: RunningApi, pause: float) -> float:
    """Send a body that never ends (64 KiB, then `pause`, again); answer the seconds from the
    head to the send the server refused."""
    with connect(api) as sock:
        sock.sendall(head("/tokens", str(10**12)))
        started = time.monotonic()
        with pytest.raises(OSError):  # a reset, or a broken pipe
            while time.monotonic() - started < 60:
                sock.sendall(CHUNK)
                time.sleep(pause)
        return time.monotonic() - started


def test_a_client_sending_forever_slowly_is_cut_off_after_the_lingering_time(
    api: RunningApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocol, "LINGER_SECONDS", 1.0)
    took = seconds_until_cut_off(api, 0.05)
    assert 0.9 < took < 5


def test_a_client_sending_forever_fast_is_cut_off_after_the_lingering_bytes(
    api: RunningApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocol, "LINGER_SECONDS", 30.0)
    monkeypatch.setattr(protocol, "LINGER_BYTES", 2 * 1_048_576)
    assert seconds_until_cut_off(api, 0.0) < 10


def refuses_more(sock: socket.socket) -> bool:
    """Whether the server closed this connection for good (a lingering one would take and drop
    what the client sends): the first send after a close draws a reset, a later one fails."""
    try:
        for _ in range(5):
            sock.sendall(b"x")
            time.sleep(0.1)
    except OSError:
        return True
    return False


def test_a_request_read_whole_closes_at_once(api: RunningApi) -> None:
    body = b'{"token": "T-1", "context": {"title": "t"}}'
    with connect(api) as sock:
        sock.sendall(head("/tokens", str(len(body))) + body)
        answer = b""
        while data := sock.recv(65536):
            answer += data
        assert answer.startswith(b"HTTP/1.1 201 ")
        assert refuses_more(sock)


def test_a_refused_request_lingers(api: RunningApi) -> None:
    with connect(api) as sock:
        sock.sendall(head("/tokens", str(10**9)) + CHUNK)
        answer = b""
        while data := sock.recv(65536):
            answer += data
        assert answer.endswith(ENVELOPE)
        assert not refuses_more(sock)
