"""Every route of the served OpenAPI document with each role (issue 33): one real
`serve` whose auth file holds a name per role; each (path, method) of `GET /schema/openapi.json`
is called by each name, and a role outside the route's list gets exactly `403 forbidden`, one
inside it anything but 401 or 403. The refusals come first and write nothing.

The expectation is written here from the roles' documented lists, not read from
stateous.control.api.roles, so that a wrong line there fails this test.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import ServeProcess, serve_process, sqlite_url

ROOT = Path(__file__).resolve().parents[2]
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
AUTH_FILE = (
    "viewer: t-viewer read\nops: t-ops operate\nworker: t-worker supervise\nboss: t-boss admin\n"
)
NAMES = {"read": "viewer", "operate": "ops", "supervise": "worker", "admin": "boss"}
SCOPES = {
    "read": "the token 'viewer' may only read",
    "operate": "the token 'ops' may only read and operate, not supervise",
    "supervise": "the token 'worker' may only supervise and read the workflow",
}

#: The `operate` role's routes (docs/security.md): starts, events, pause/resume/cancel, retry, move,
#: migrate, bulk jobs, schedules, prune.
OPERATOR_ACTS = {
    ("post", "/tokens"), ("post", "/tokens/batch"), ("post", "/tokens/{token_id}/events/{event}"),
    ("post", "/tokens/{token_id}/pause"), ("post", "/tokens/{token_id}/resume"),
    ("post", "/tokens/{token_id}/cancel"), ("post", "/tokens/{token_id}/retry"),
    ("post", "/tokens/{token_id}/move"), ("post", "/tokens/{token_id}/migrate"),
    ("post", "/bulk"), ("post", "/bulk/{job}/stop"), ("post", "/prune"),
    ("post", "/schedules"), ("put", "/schedules/{name}"), ("post", "/schedules/{name}/pause"),
    ("post", "/schedules/{name}/resume"), ("delete", "/schedules/{name}"),
}  # fmt: skip
#: The `supervise` role's routes: claims, heartbeats, notes, memory, messages, beats (reports
#: below, which `operate` may make too from outside on a waiting task).
SUPERVISOR_MESSAGES = {
    ("post", "/tasks/claim"), ("post", "/tasks/heartbeat"), ("post", "/tasks/{task}/note"),
    ("put", "/tasks/{task}/memory"), ("post", "/tasks/messages"), ("post", "/supervisors/beat"),
}  # fmt: skip
REPORT = ("post", "/tasks/{task}/report")
#: The reads a supervisor makes too: `GET /workflow` (with `?checksum=`), its versions, health.
SUPERVISOR_READS = {("get", "/workflow"), ("get", "/workflow/versions"), ("get", "/health")}
#: The `admin` role's own routes: the import of exported tokens.
ADMIN_ACTS = {("post", "/import")}


def allowed(method: str, path: str) -> set[str]:
    """The roles that may call `method path`; a route of no list fails the test, so a new
    route must be placed in a list here."""
    if (method, path) in SUPERVISOR_READS:
        return {"read", "operate", "supervise", "admin"}
    if method == "get":
        return {"read", "operate", "admin"}  # `read`: every GET
    if (method, path) in OPERATOR_ACTS:
        return {"operate", "admin"}
    if (method, path) in SUPERVISOR_MESSAGES:
        return {"supervise", "admin"}
    if (method, path) in ADMIN_ACTS:
        return {"admin"}
    if (method, path) == REPORT:
        # The task below is made up: `operate`'s report from outside passes the role check and
        # answers 404 (test_roles.py checks its refusal on a task that is not waiting).
        return {"operate", "supervise", "admin"}
    raise AssertionError(f"{method.upper()} {path} is in none of the roles' lists")


#: The path parameters: an existing token and schedule, a made-up task and bulk job.
PARAMETERS = {
    "token_id": "W-1",
    "event": "done",
    "name": "nightly",
    "task": "999999",
    "job": "999999",
}


def concrete(path: str) -> str:
    """`path` with its `{parameters}` filled in."""
    filled = re.sub(r"\{(\w+)\}", lambda m: PARAMETERS[m.group(1)], path)
    assert "{" not in filled, path
    return filled


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("roles-openapi")


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


def counts(folder: Path) -> dict[str, int]:
    """The rows of every table of the served SQLite file."""
    with closing(sqlite3.connect(folder / "stateous.db")) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def forbidden_count(client: httpx.Client) -> float:
    text = client.get("/metrics", headers=bearer("admin")).text
    found = re.search(r'^stateous_refusals_total\{code="forbidden"\} (\S+)$', text, re.M)
    return 0.0 if found is None else float(found.group(1))


def bearer(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer t-{NAMES[role]}"}


def send(client: httpx.Client, role: str, method: str, path: str) -> httpx.Response:
    """`method path` by `role`'s token, with an empty body for all but a GET."""
    body: Any = None if method == "get" else {}
    return client.request(method.upper(), concrete(path), headers=bearer(role), json=body)


def test_every_route_of_the_document_answers_each_role_by_its_list(
    served: ServeProcess, folder: Path
) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as client:
        document = client.get("/schema/openapi.json", headers=bearer("read"))
        assert document.status_code == 200, document.text
        routes = sorted(
            (method, path) for path, item in document.json()["paths"].items() for method in item
        )
        assert len(routes) == 47  # as test_openapi.py lists them
        # The document itself is a GET: every role but `supervise`.
        routes.append(("get", "/schema/openapi.json"))
        start = {"token": "W-1", "context": {"repo": "r"}}
        assert client.post("/tokens", json=start, headers=bearer("admin")).status_code == 201
        schedule = {
            "name": "nightly",
            "cron": "0 3 * * *",
            "context": {"repo": "r"},
            "paused": True,
        }
        assert client.post("/schedules", json=schedule, headers=bearer("admin")).status_code == 201

        refused = [(m, p, r) for m, p in routes for r in NAMES if r not in allowed(m, p)]
        before, counted = counts(folder), forbidden_count(client)
        for method, path, role in refused:
            answer = send(client, role, method, path)
            assert (answer.status_code, answer.json()) == (
                403,
                {"error": SCOPES[role], "code": "forbidden"},
            ), (method, path, role)
        assert counts(folder) == before
        assert forbidden_count(client) == counted + len(refused)

        passed = [(m, p, r) for m, p in routes for r in NAMES if r in allowed(m, p)]
        for method, path, role in passed:
            answer = send(client, role, method, path)
            assert answer.status_code not in (401, 403), (method, path, role, answer.text)
        assert len(refused) + len(passed) == 4 * len(routes)
        assert forbidden_count(client) == counted + len(refused)
