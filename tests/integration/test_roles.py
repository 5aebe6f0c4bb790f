"""Roles in the auth file against one real `serve` whose file holds four names:
each role against a route of each kind, the `403 forbidden` body, nothing written and the count
in `/metrics`, a report from outside by an `operate` token, `GET /health`'s `access`, the CLI and
the console with a `read` token; then `serve` refusing a file others can read and a bad role."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import DataTable

from stateous.model.auth import Grant
from stateous.tui.app import make_console
from tests.support import ServeProcess, serve_process, sqlite_url
from tests.support.app import running_api
from tests.support.graphs import SDLC as SDLC_DOC
from tests.unit.tui.helpers import settle

ROOT = Path(__file__).resolve().parents[2]
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
#: The auth file: a name per role, and one without a role (admin, as before roles).
TOKENS = {"viewer": "t-viewer", "ops": "t-ops", "worker": "t-worker", "boss": "t-boss"}
AUTH_FILE = "viewer: t-viewer read\nops: t-ops operate\nworker: t-worker supervise\nboss: t-boss\n"
SCOPES = {
    "viewer": "the token 'viewer' may only read",
    "ops": "the token 'ops' may only read and operate, not supervise",
    "worker": "the token 'worker' may only supervise and read the workflow",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("roles")


@pytest.fixture(scope="module")
def served(folder: Path) -> Iterator[ServeProcess]:
    (folder / "tokens").write_text(AUTH_FILE, encoding="utf-8")
    (folder / "tokens").chmod(0o600)
    extra = ["--auth-token-file", str(folder / "tokens")]
    with serve_process(SDLC, sqlite_url(folder), cwd=folder, extra=extra) as running:
        yield running
    for pipe in (running.process.stdout, running.process.stderr):
        if pipe is not None:
            pipe.close()


def call(served: ServeProcess, name: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {TOKENS[name]}"}
    return httpx.request(method, served.url + path, headers=headers, json=body, timeout=10)


#: One route of each kind, both on the fast path and through Litestar, with the
#: names that may call it. Bodies are empty: an allowed call may then be refused for its body.
ROUTES: list[tuple[str, str, set[str]]] = [
    ("GET", "/tokens", {"viewer", "ops", "boss"}),
    ("GET", "/metrics", {"viewer", "ops", "boss"}),
    ("GET", "/workflow", {"viewer", "ops", "worker", "boss"}),
    ("GET", "/workflow/versions", {"viewer", "ops", "worker", "boss"}),
    ("POST", "/tokens", {"ops", "boss"}),  # fast path
    ("POST", "/tokens/NONE/pause", {"ops", "boss"}),
    ("POST", "/tokens/batch", {"ops", "boss"}),
    ("POST", "/bulk", {"ops", "boss"}),
    ("POST", "/prune", {"ops", "boss"}),
    ("POST", "/import", {"boss"}),
    ("GET", "/schedules", {"viewer", "ops", "boss"}),
    ("POST", "/schedules", {"ops", "boss"}),
    ("DELETE", "/schedules/none", {"ops", "boss"}),
    ("POST", "/tasks/claim", {"worker", "boss"}),  # fast path
    ("POST", "/tasks/messages", {"worker", "boss"}),  # fast path
    ("POST", "/tasks/heartbeat", {"worker", "boss"}),
    ("POST", "/tasks/9999/note", {"worker", "boss"}),
    ("PUT", "/tasks/9999/memory", {"worker", "boss"}),
    ("POST", "/supervisors/beat", {"worker", "boss"}),
    ("POST", "/tasks/9999/report", {"ops", "worker", "boss"}),  # fast path
]
REFUSED = [(m, p, n) for m, p, allowed in ROUTES for n in TOKENS if n not in allowed]
ALLOWED = [(m, p, n) for m, p, allowed in ROUTES for n in TOKENS if n in allowed]


@pytest.mark.parametrize(("method", "path", "name"), ALLOWED)
def test_a_role_may_call_the_routes_of_its_list(
    served: ServeProcess, method: str, path: str, name: str
) -> None:
    answer = call(served, name, method, path, {} if method != "GET" else None)
    assert answer.status_code not in (401, 403), answer.text


def counts(folder: Path) -> dict[str, int]:
    """The rows of every table of the served SQLite file."""
    with closing(sqlite3.connect(folder / "stateous.db")) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def forbidden_count(served: ServeProcess) -> float:
    text = call(served, "boss", "GET", "/metrics").text
    found = re.search(r'^stateous_refusals_total\{code="forbidden"\} (\S+)$', text, re.M)
    return 0.0 if found is None else float(found.group(1))


def test_a_request_outside_its_role_is_403_writes_nothing_and_is_counted(
    served: ServeProcess, folder: Path
) -> None:
    started = call(served, "ops", "POST", "/tokens", {"token": "R-1", "context": {"repo": "r"}})
    assert started.status_code in (200, 201)
    before, counted = counts(folder), forbidden_count(served)
    bodies = {
        "/tokens": {"token": "R-2", "context": {"repo": "r"}},
        "/tasks/claim": {"supervisor": "box", "states": ["coding"]},
        "/tokens/NONE/pause": {},
    }
    for method, path, name in REFUSED:
        body = bodies.get(path, {}) if method != "GET" else None
        answer = call(served, name, method, path.replace("NONE", "R-1"), body)
        assert (answer.status_code, answer.json()) == (
            403,
            {"error": SCOPES[name], "code": "forbidden"},
        ), (method, path, name)
    assert counts(folder) == before
    assert forbidden_count(served) == counted + len(REFUSED)
    token = call(served, "viewer", "GET", "/tokens/R-1").json()
    assert token["status"] == "active"  # the refused pause changed nothing


def test_health_answers_the_access_of_the_callers_token(served: ServeProcess) -> None:
    for name, role in [("viewer", "read"), ("ops", "operate"), ("worker", "supervise")]:
        assert call(served, name, "GET", "/health").json()["access"] == role
    assert call(served, "boss", "GET", "/health").json()["access"] == "admin"
    alone = httpx.get(served.url + "/health", timeout=10).json()
    assert set(alone) == {"workflow", "checksum", "role"}  # no token: as before
    wrong = httpx.get(served.url + "/health", headers={"Authorization": "Bearer nope"}).json()
    assert "access" not in wrong


def test_the_cli_prints_the_refusal(served: ServeProcess) -> None:
    env = {**os.environ, "STATEOUS_AUTH_TOKEN": TOKENS["viewer"]}
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "token", "start", "CLI-R", '{"repo": "r"}',
         "--url", served.url],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: the control plane at {served.url} refused (403): the token 'viewer' may only read\n"
    )


async def test_the_console_with_a_read_token_acts_on_nothing(
    served: ServeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"token": "C-1", "context": {"repo": "r"}}
    assert call(served, "ops", "POST", "/tokens", body).status_code == 201
    claim = {"supervisor": "box-c", "states": ["coding"]}
    grant = call(served, "worker", "POST", "/tasks/claim", claim).json()
    waiting = {"kind": "waiting", "supervisor": "box-c", "attempt": grant["attempt"]}
    answer = call(served, "worker", "POST", f"/tasks/{grant['task']}/report", waiting)
    assert answer.status_code == 200, answer.text
    before = call(served, "viewer", "GET", "/tokens").json()
    monkeypatch.setenv("STATEOUS_AUTH_TOKEN", TOKENS["viewer"])
    app = make_console(served.url, refresh=60.0, frozen=True)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        assert app.read_only
        app.screen.query_one("#tokens").focus()
        for key in ("p", "c", "f", "s", "R", "m", "M"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is app.get_screen("tokens"), key  # no form, no confirmation
        await pilot.press("i")
        await settle(pilot)
        assert app.screen is app.get_screen("inbox")
        assert app.screen.query_one("#inbox", DataTable).row_count >= 1
        await pilot.press("enter")  # the inbox's answer: no fire form
        await settle(pilot)
        assert app.screen is app.get_screen("inbox")
    assert call(served, "viewer", "GET", "/tokens").json() == before


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "litestar"])
def test_an_operate_token_reports_from_outside_on_a_waiting_task_only(
    db_url: str, fast_path: bool
) -> None:
    grants = {
        "t-ops": Grant("ops", "operate"),
        "t-worker": Grant("worker", "supervise"),
        "t-viewer": Grant("viewer", "read"),
    }
    rule = "the token 'ops' may report only from outside (without 'supervisor') on a waiting task"
    outside = {"kind": "event", "event": "done"}
    with running_api(db_url, SDLC_DOC, auth_grants=grants, fast_path=fast_path) as api:
        ops, worker, viewer = (
            httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer t-{n}"})
            for n in ("ops", "worker", "viewer")
        )
        with ops, worker, viewer:
            started = ops.post("/tokens", json={"token": "Q-1", "context": {"repo": "r"}})
            assert started.status_code == 201, started.text
            claim = {"supervisor": "box", "states": ["coding"]}
            grant = worker.post("/tasks/claim", json=claim).json()
            task, attempt = grant["task"], grant["attempt"]
            answer = ops.post(f"/tasks/{task}/report", json=outside)
            assert (answer.status_code, answer.json()) == (
                403,
                {"error": f"{rule}, and task {task} is claimed", "code": "forbidden"},
            )
            held = {**outside, "supervisor": "box", "attempt": attempt}
            answer = ops.post(f"/tasks/{task}/report", json=held)
            assert (answer.status_code, answer.json()) == (
                403,
                {"error": rule, "code": "forbidden"},
            )
            answer = viewer.post(f"/tasks/{task}/report", json=outside)
            assert answer.json() == {"error": SCOPES["viewer"], "code": "forbidden"}
            waiting = {"kind": "waiting", "supervisor": "box", "attempt": attempt}
            assert worker.post(f"/tasks/{task}/report", json=waiting).status_code == 200
            answer = ops.post(f"/tasks/{task}/report", json=outside)
            assert (answer.status_code, answer.json()["state"]) == (200, "testing")
            rows = ops.get("/tokens/Q-1/history").json()
            acted = [row for row in rows if "by" in row["data"]]
            # The report's rows name the token that made it.
            assert [r["kind"] for r in acted][:2] == ["started", "event_accepted"]
            assert {str(r["data"]["by"]) for r in acted} == {"{'actor': 'ops', 'via': 'api'}"}
            assert ops.post("/tasks/99999/report", json=outside).json()["code"] == "task_not_found"
            assert ops.post("/tasks/x/report", json=outside).json()["code"] == "not_found"


def serve_refusal(folder: Path, text: str, mode: int) -> subprocess.CompletedProcess[str]:
    path = folder / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return subprocess.run(
        [sys.executable, "-m", "stateous", "serve", str(SDLC), "--db", sqlite_url(folder),
         "--listen", "127.0.0.1:0", "--auth-token-file", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_serve_refuses_a_file_others_may_read_and_a_bad_role(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    done = serve_refusal(tmp_path, "s3cret\n", 0o644)  # a single token's file too
    assert (done.returncode, done.stderr) == (
        1,
        f"error: the token file {path} can be read or written by other users than its owner; "
        f"run chmod 600 {path}\n",
    )
    done = serve_refusal(tmp_path, "viewer: t-1 read\nops: t-2 root\n", 0o600)
    assert (done.returncode, done.stderr) == (
        1,
        f"error: line 2 of the token file {path} gives the role 'root'; "
        "a role is read, operate, supervise or admin\n",
    )
