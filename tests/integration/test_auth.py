"""Optional authentication against a real `serve --auth-token-file`: every route but
`GET /health` refuses a missing or wrong token with `401 unauthorized`; the Client, the token
commands, the console's API client and the supervisor send the token."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stateous.client import Client
from stateous.tui.api import ControlPlane
from tests.faults.harness import SUPERVISE_ENV
from tests.integration.supervisor.procs import wait_until
from tests.support import ServeProcess, serve_process, sqlite_url, start_supervise

ROOT = Path(__file__).resolve().parents[2]
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
TOKEN = "s3cret-Token_1"
UNAUTHORIZED = {
    "error": "this control plane needs the header 'Authorization: Bearer <token>' with its "
    "token, and this request has no valid one",
    "code": "unauthorized",
}
ROUTES = [
    ("POST", "/tokens"), ("GET", "/tokens"), ("GET", "/tokens/T-1"), ("GET", "/tokens/T-1/history"),
    ("POST", "/tokens/T-1/events/done"), ("POST", "/tokens/T-1/pause"),
    ("POST", "/tokens/T-1/resume"), ("POST", "/tokens/T-1/cancel"), ("GET", "/workflow"),
    ("POST", "/tasks/claim"), ("POST", "/tasks/heartbeat"), ("POST", "/tasks/1/report"),
    ("POST", "/tasks/1/note"), ("PUT", "/tasks/1/memory"), ("GET", "/tasks"),
    ("GET", "/tokens/T-1/tasks"), ("GET", "/tokens/T-1/timers"), ("GET", "/tokens/T-1/memory"),
    ("GET", "/stats"), ("GET", "/metrics"), ("GET", "/schema/openapi.json"),
    ("POST", "/supervisors/beat"), ("GET", "/supervisors"), ("GET", "/inbox"),
]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("auth")
    (folder / "token.txt").write_text(TOKEN + "\n", encoding="utf-8")
    (folder / "token.txt").chmod(0o600)  # serve refuses a token file others can read
    extra = ["--auth-token-file", str(folder / "token.txt")]
    env = {"STATEOUS_LEASE_SECONDS": "3", "STATEOUS_TICK_SECONDS": "0.2"}
    with serve_process(SDLC, sqlite_url(folder), cwd=folder, extra=extra, env=env) as running:
        yield running
    for pipe in (running.process.stdout, running.process.stderr):
        if pipe is not None:
            pipe.close()


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", f"Bearer {TOKEN}x", TOKEN, f"Basic {TOKEN}", "Bearer"]
)
def test_every_route_refuses_a_missing_or_wrong_token(
    served: ServeProcess, method: str, path: str, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    answer = httpx.request(method, served.url + path, headers=headers, json={}, timeout=10)
    assert (answer.status_code, answer.json()) == (401, UNAUTHORIZED)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_takes_the_right_token(served: ServeProcess, method: str, path: str) -> None:
    headers = {"Authorization": f"bearer {TOKEN}"}  # the scheme's case does not matter
    answer = httpx.request(method, served.url + path, headers=headers, json={}, timeout=10)
    assert answer.status_code != 401, answer.text


def test_health_needs_no_token(served: ServeProcess) -> None:
    answer = httpx.get(served.url + "/health", timeout=10)
    assert answer.status_code == 200 and answer.json()["workflow"] == "sdlc"


def test_the_client_sends_the_token(served: ServeProcess) -> None:
    with Client(served.url, auth_token=TOKEN) as client:
        assert client.start("CLIENT-1", {"repo": "r"})["status"] == "active"
    with Client(served.url) as client, pytest.raises(Exception) as refused:
        client.start("CLIENT-2", {"repo": "r"})
    assert getattr(refused.value, "code", None) == "unauthorized"


def test_the_token_commands_send_the_token(served: ServeProcess) -> None:
    def token(*args: str, auth: str | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "STATEOUS_AUTH_TOKEN"}
        if auth is not None:
            env["STATEOUS_AUTH_TOKEN"] = auth
        return subprocess.run(
            [sys.executable, "-m", "stateous", "token", *args, "--url", served.url],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip

    made = token("start", "CLI-1", '{"repo": "r"}', auth=TOKEN)
    assert made.returncode == 0, made.stderr
    refused = token("show", "CLI-1", auth=None)
    assert (refused.returncode, refused.stderr) == (
        1,
        f"error: the control plane at {served.url} refused (401): it needs a valid token; set "
        "STATEOUS_AUTH_TOKEN to a token of the file its serve was given with --auth-token-file\n",
    )


def test_the_console_client_sends_the_token(served: ServeProcess) -> None:
    async def both() -> tuple[dict[str, object], str]:
        good = ControlPlane(served.url, auth_token=TOKEN)
        bad = ControlPlane(served.url, auth_token="nope")
        try:
            stats = await good.stats()
            try:
                await bad.stats()
            except Exception as exc:  # the console's Refused
                return stats, str(getattr(exc, "code", ""))
            return stats, ""
        finally:
            await good.close()
            await bad.close()

    stats, code = asyncio.run(both())
    assert "tokens" in stats and code == "unauthorized"


def test_the_supervisor_sends_the_token_of_its_file(served: ServeProcess, tmp_path: Path) -> None:
    folder = tmp_path / "box"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "sdlc-supervisor" / "contract.py", folder / "contract.py")
    (folder / "routines.py").write_text(
        "from stateous import on_state\n"
        "from contract import Tests, TicketContext, events, states\n\n\n"
        "@on_state(states.coding)\nasync def coding(ctx: TicketContext) -> events.done:\n"
        "    return events.done()\n\n\n"
        "@on_state(states.testing)\nasync def testing(ctx: TicketContext) -> events.passed:\n"
        "    return events.passed(Tests(passed=1, failed=0))\n",
        encoding="utf-8",
    )
    (folder / "secret").write_text(TOKEN, encoding="utf-8")
    (folder / "stateous.yaml").write_text(
        f"url: {served.url}\nname: box\nauth_token_file: secret\n", encoding="utf-8"
    )
    run = start_supervise(folder, env=SUPERVISE_ENV)
    try:
        with Client(served.url, auth_token=TOKEN) as client:
            client.start("SUP-1", {"repo": "r"})
            wait_until(lambda: client.get("SUP-1")["status"] == "completed", timeout=30)
    finally:
        assert run.stop() == 0, run.lines


def test_a_bad_token_file_stops_serve_and_supervise(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "serve", str(SDLC), "--db", sqlite_url(tmp_path),
         "--listen", "127.0.0.1:0", "--auth-token-file", str(tmp_path / "none")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: cannot read the token file {tmp_path / 'none'}: no such file or directory"
    )
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    (tmp_path / "empty").chmod(0o600)
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "serve", str(SDLC), "--db", sqlite_url(tmp_path),
         "--listen", "127.0.0.1:0", "--auth-token-file", str(tmp_path / "empty")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stderr.strip() == (
        f"error: the token file {tmp_path / 'empty'} is empty; write the token in it"
    )
