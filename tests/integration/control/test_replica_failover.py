"""Several control plane URLs: the Client and the supervisor's Remote move on to
the next URL on a transport error or `503 not_serving`, against real `serve` processes.

A request that surely did nothing (no connection, `not_serving`) is sent to the next URL at once;
one that may have been applied (no answer in time) is raised, and the next call goes on.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from stateous.client import Client
from stateous.client.errors import Unreachable
from stateous.client.url import split_urls
from stateous.supervisor.folder import read_folder
from stateous.supervisor.remote import NoAnswer, Remote
from tests.support import ServeProcess, backends, free_port, postgres_database, serve_process
from tests.support.graphs import ORDERS, write_graph

pytestmark = pytest.mark.skipif("postgres" not in backends(), reason="replicas need Postgres")

NOT_SERVING = {
    "error": "another control plane took this database; this control plane does no more work; "
    "trying again does not help: stop this server",
    "code": "not_serving",
}


class _NotServing(BaseHTTPRequestHandler):
    """A control plane that lost its hold: every request `503 not_serving`."""

    hits = 0

    def _answer(self) -> None:
        type(self).hits += 1
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = json.dumps(NOT_SERVING).encode()
        self.send_response(503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_args: object) -> None:
        """Quiet."""


@contextmanager
def not_serving() -> Iterator[str]:
    """The URL of a server that answers `503 not_serving` to everything."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotServing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent() -> Iterator[str]:
    """The URL of a server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    """A holder and a replica of orders on one Postgres database."""
    folder = tmp_path_factory.mktemp("failover")
    graph = write_graph(folder, ORDERS)
    with (
        postgres_database() as url,
        serve_process(graph, url) as holder,
        serve_process(graph, url, extra=["--replica"]) as replica,
    ):
        yield holder, replica


def dead_url() -> str:
    """A URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


def test_urls_are_a_list_or_separated_by_commas() -> None:
    assert split_urls(" http://a:1 , http://b:2,,") == ["http://a:1", "http://b:2"]
    assert split_urls(["http://a:1", " http://b:2 "]) == ["http://a:1", "http://b:2"]
    with Client("http://a:1/, http://b:2") as client:
        assert client.urls == ["http://a:1", "http://b:2"] and client.url == "http://a:1"


def test_the_client_moves_on_past_no_connection_and_not_serving(
    pair: tuple[ServeProcess, ServeProcess],
) -> None:
    holder, replica = pair
    with not_serving() as refusing:
        before = _NotServing.hits
        with Client([dead_url(), refusing, replica.url]) as client:
            started = client.start("FAIL-1", {"title": "a"})
            assert started["token"] == "FAIL-1" and started["status"] == "active"
            assert client.url == replica.url
            assert client.get("FAIL-1")["token"] == "FAIL-1"
        assert _NotServing.hits == before + 1
    kinds = [row["kind"] for row in httpx.get(f"{holder.url}/tokens/FAIL-1/history").json()]
    assert kinds.count("started") == 1


def test_the_client_raises_a_request_without_answer_and_moves_on(
    pair: tuple[ServeProcess, ServeProcess],
) -> None:
    holder, _replica = pair
    with silent() as quiet, Client([quiet, holder.url], timeout=1.0) as client:
        began = time.monotonic()
        with pytest.raises(Unreachable) as raised:
            client.start("FAIL-2", {"title": "b"})  # it may have been applied: not resent
        assert str(raised.value).startswith(f"cannot reach the control plane at {quiet}: ")
        assert time.monotonic() - began < 5
        assert client.url == holder.url
        assert client.start("FAIL-2", {"title": "b"})["token"] == "FAIL-2"


def test_the_supervisors_remote_moves_on(pair: tuple[ServeProcess, ServeProcess]) -> None:
    holder, replica = pair

    async def calls(refusing: str) -> None:
        remote = Remote(f"{dead_url()}, {refusing}, {replica.url}")
        try:
            answer = await remote.call("GET", "/health")
            assert answer.status == 200 and answer.body["role"] == "replica"
            assert remote.url == replica.url
        finally:
            await remote.aclose()
        lone = Remote(refusing)
        try:
            with pytest.raises(NoAnswer) as raised:
                await lone.call("GET", "/health")
            assert raised.value.text == (
                f"the control plane at {refusing} does not serve its database now "
                f"(not_serving): {NOT_SERVING['error']}"
            )
        finally:
            await lone.aclose()

    with not_serving() as refusing:
        asyncio.run(calls(refusing))
    assert holder.process.poll() is None


def test_stateous_yaml_takes_a_list_of_urls(tmp_path: Path) -> None:
    checksum = "sha256:" + "0" * 64
    (tmp_path / "contract.py").write_text(f'__checksum__ = "{checksum}"\n', encoding="utf-8")
    (tmp_path / "stateous.yaml").write_text(
        "url:\n  - http://127.0.0.1:8080/\n  - http://127.0.0.1:8081\nname: box\n",
        encoding="utf-8",
    )
    assert read_folder(tmp_path).url == "http://127.0.0.1:8080, http://127.0.0.1:8081"
    (tmp_path / "stateous.yaml").write_text(
        "url: http://127.0.0.1:8080, ftp://x\nname: box\n", encoding="utf-8"
    )
    with pytest.raises(Exception) as raised:
        read_folder(tmp_path)
    assert str(raised.value) == (
        f"cannot use {tmp_path}/stateous.yaml: url: 'ftp://x' is not an http:// or https:// address"
    )


def test_the_consoles_client_moves_on(pair: tuple[ServeProcess, ServeProcess]) -> None:
    from stateous.client import Unreachable as ConsoleUnreachable
    from stateous.tui.api import ControlPlane

    holder, _replica = pair

    async def calls(refusing: str, quiet: str) -> None:
        api = ControlPlane(f"{dead_url()}, {refusing}, {holder.url}")
        try:
            assert (await api.health())["role"] == "holder"
            assert api.url == holder.url
        finally:
            await api.close()
        api = ControlPlane(f"{quiet}, {holder.url}", timeout=1.0)
        try:
            with pytest.raises(ConsoleUnreachable):
                await api.health()
            assert api.url == holder.url
            assert (await api.health())["workflow"] == "orders"
        finally:
            await api.close()

    with not_serving() as refusing, silent() as quiet:
        asyncio.run(calls(refusing, quiet))


def test_the_token_commands_take_several_urls(pair: tuple[ServeProcess, ServeProcess]) -> None:
    import subprocess
    import sys

    holder, replica = pair
    env = {"STATEOUS_URL": f"{dead_url()},{replica.url}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "token", "start", "CLI-1", '{"title": "c"}'],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "CLI-1" in done.stdout
    assert httpx.get(f"{holder.url}/tokens/CLI-1").json()["state"] == "draft"
