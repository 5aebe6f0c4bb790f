"""Bad input, table-driven, against a real `serve`: every size limit of docs/reference/http-api.md (body,
nesting, ids, keys, names, notes, lists) and the rules every route keeps, malformed JSON and
headers, wrong types, unknown events, states and attempts. Each gets its refusal code, and the
database does not change (a dump of every table before and after).
Then a stateous.yaml, a graph file and a flow.py with mistakes: one line `error: ...`, exit 1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, inspect, text

from tests.support import ServeProcess, serve_process, sqlite_url

ROOT = Path(__file__).resolve().parents[2]
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
BOX = "box"
BIG = 1_048_576

# (method, path, body (dict, or bytes as sent), headers, status, code)
Case = tuple[str, str, Any, dict[str, str], int, str]
CASES: list[Case] = [
    # bodies, as every route reads them
    ("POST", "/tokens", b"{", {}, 400, "bad_request"),
    ("POST", "/tokens", b'{"token": NaN}', {}, 400, "bad_request"),
    ("POST", "/tokens", b'{"token": "X", "context": {"a": Infinity}}', {}, 400, "bad_request"),
    ("POST", "/tokens", b"[" * 65 + b"]" * 65, {}, 400, "bad_request"),
    ("POST", "/tokens", {"token": "X", "context": {"a": json.loads("[" * 63 + "]" * 63)}}, {},
     400, "bad_request"),
    ("POST", "/tokens", b'{"token": "X", "pad": "' + b"a" * BIG + b'"}', {}, 413, "bad_request"),
    ("POST", "/tokens", b"{}", {"Content-Length": "9" * 19}, 413, "bad_request"),
    ("POST", "/tokens", b"\xff\xfe", {}, 400, "bad_request"),
    ("POST", "/tokens", b"[1, 2]", {}, 422, "invalid_body"),
    ("POST", "/tokens", b'"text"', {}, 422, "invalid_body"),
    # starts
    ("POST", "/tokens", {}, {}, 422, "invalid_token_id"),
    ("POST", "/tokens", {"token": 7}, {}, 422, "invalid_token_id"),
    ("POST", "/tokens", {"token": "-x", "context": {"repo": "r"}}, {}, 422, "invalid_token_id"),
    ("POST", "/tokens", {"token": "a b", "context": {"repo": "r"}}, {}, 422, "invalid_token_id"),
    ("POST", "/tokens", {"token": "x" * 129, "context": {"repo": "r"}}, {}, 422,
     "invalid_token_id"),
    ("POST", "/tokens", {"token": "t-1", "context": {"repo": "r"}}, {}, 422, "invalid_token_id"),
    ("POST", "/tokens", {"token": "X", "context": [1]}, {}, 422, "invalid_context"),
    ("POST", "/tokens", {"token": "X", "context": {}}, {}, 422, "invalid_context"),
    ("POST", "/tokens", {"token": "X", "context": {"repo": 5}}, {}, 422, "invalid_context"),
    # listing
    ("GET", "/tokens?status=done", None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?status=", None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?limit=0", None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?limit=1001", None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?limit=1e3", None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?limit=" + "1" * 19, None, {}, 422, "invalid_argument"),
    ("GET", "/tokens?parent=" + "p" * 129, None, {}, 422, "invalid_argument"),
    ("GET", "/tokens/nope", None, {}, 404, "token_not_found"),
    ("GET", "/tokens/t-1", None, {}, 404, "token_not_found"),
    ("GET", "/tokens/nope/history", None, {}, 404, "token_not_found"),
    # fire: form checks and unknown tokens write nothing
    ("POST", "/tokens/T-1/events/done", {"payload": [1]}, {}, 422, "invalid_payload"),
    ("POST", "/tokens/T-1/events/done", {}, {"Idempotency-Key": ""}, 422, "invalid_payload"),
    ("POST", "/tokens/T-1/events/done", {}, {"Idempotency-Key": "k" * 257}, 422,
     "invalid_payload"),
    ("POST", "/tokens/nope/events/done", {}, {}, 404, "token_not_found"),
    ("POST", "/tokens/T-1/events/passed", {"payload": {"passed": "x"}}, {}, 422,
     "invalid_payload"),
    # steering
    ("POST", "/tokens/T-1/resume", None, {}, 409, "token_not_active"),
    ("POST", "/tokens/nope/pause", None, {}, 404, "token_not_found"),
    # claims and heartbeats
    ("POST", "/tasks/claim", {"states": ["coding"]}, {}, 422, "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": "", "states": []}, {}, 422, "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": "s" * 257, "states": []}, {}, 422, "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": 3, "states": []}, {}, 422, "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": "coding"}, {}, 422, "invalid_body"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": [""]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": ["s" * 130]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": ["x"] * 1001}, {}, 422,
     "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": ["coding"], "request": "a b"}, {}, 422,
     "invalid_argument"),
    ("POST", "/tasks/claim", {"supervisor": BOX, "states": ["coding"], "request": "r" * 65}, {},
     422, "invalid_argument"),
    ("POST", "/tasks/heartbeat", {"supervisor": BOX, "tasks": [True]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/heartbeat", {"supervisor": BOX, "tasks": [0]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/heartbeat", {"supervisor": BOX, "tasks": [2**63]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/heartbeat", {"supervisor": BOX, "tasks": list(range(1, 1002))}, {}, 422,
     "invalid_argument"),
    # reports
    ("POST", "/tasks/1/report", {"kind": "done"}, {}, 422, "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event"}, {}, 422, "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "failed"}, {}, 422, "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "attempt": True}, {}, 422,
     "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "attempt": 0}, {}, 422,
     "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "payload": 3}, {}, 422,
     "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done",
     "schedules": [{"event": "stuck", "after": "0s"}]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done",
     "schedules": [{"event": "stuck", "after": "3651d"}]}, {}, 422, "invalid_body"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "supervisor": ""}, {}, 422,
     "invalid_argument"),
    ("POST", "/tasks/99/report", {"kind": "event", "event": "done"}, {}, 404, "task_not_found"),
    ("POST", f"/tasks/{2**63}/report", {"kind": "event", "event": "done"}, {}, 404,
     "task_not_found"),
    ("POST", "/tasks/x1/report", {"kind": "event", "event": "done"}, {}, 404, "not_found"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "attempt": 2}, {}, 409,
     "task_not_held"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "supervisor": "other"}, {},
     409, "task_not_held"),
    ("POST", "/tasks/1/report", {"kind": "waiting"}, {}, 409, "task_not_held"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done", "context": {"repo": 1}}, {},
     422, "invalid_context"),
    ("POST", "/tasks/1/report", {"kind": "event", "event": "done",
     "schedules": [{"event": "nope", "after": "1s"}]}, {}, 422, "invalid_payload"),
    # notes and memory
    ("POST", "/tasks/1/note", {"text": "   "}, {}, 422, "invalid_payload"),
    ("POST", "/tasks/1/note", {"text": "n" * 501}, {}, 422, "invalid_payload"),
    ("POST", "/tasks/1/note", {"text": 5}, {}, 422, "invalid_payload"),
    ("POST", "/tasks/1/note", {"text": "hi", "attempt": 0}, {}, 422, "invalid_argument"),
    ("POST", "/tasks/1/note", {"text": "hi", "attempt": 2}, {}, 409, "task_not_held"),
    ("PUT", "/tasks/1/memory", {"key": "k"}, {}, 422, "invalid_body"),
    ("PUT", "/tasks/1/memory", {"key": "", "value": 1}, {}, 422, "invalid_payload"),
    ("PUT", "/tasks/1/memory", {"key": "k" * 129, "value": 1}, {}, 422, "invalid_payload"),
    ("PUT", "/tasks/1/memory", {"key": "k", "value": 1, "attempt": "1"}, {}, 422,
     "invalid_argument"),
    ("PUT", "/tasks/99/memory", {"key": "k", "value": 1}, {}, 404, "task_not_found"),
    # routes and methods
    ("GET", "/nowhere", None, {}, 404, "not_found"),
    ("PUT", "/tokens", {}, {}, 405, "method_not_allowed"),
    ("DELETE", "/tokens/T-1", None, {}, 405, "method_not_allowed"),
    ("GET", "/tasks/claim", None, {}, 405, "method_not_allowed"),
]  # fmt: skip


def dump(db_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but those the clock rewrites: the hold's row (its `since`) and
    the control planes' presence rows (their `seen_at`, every 10 s)."""
    moving = {"control_plane", "control_planes"}
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            names = [n for n in inspect(conn).get_table_names() if n not in moving]
            return {
                name: sorted(map(tuple, conn.execute(text(f"SELECT * FROM {name}"))), key=repr)
                for name in names
            }
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, str]]:
    folder = tmp_path_factory.mktemp("bad")
    db = sqlite_url(folder)
    with serve_process(SDLC, db, cwd=folder) as running:
        with httpx.Client(base_url=running.url, timeout=30) as http:
            assert http.post("/tokens", json={"token": "T-1", "context": {"repo": "r"}}).is_success
            grant = http.post("/tasks/claim", json={"supervisor": BOX, "states": ["coding"]})
            assert grant.json()["task"] == 1
        yield running, db
    for pipe in (running.process.stdout, running.process.stderr):
        if pipe is not None:
            pipe.close()


def raw(url: str, request: bytes) -> httpx.Response:
    """Send bytes that httpx would refuse to send (a false Content-Length); read the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return httpx.Response(status, content=body)


def send(url: str, case: Case) -> httpx.Response:
    method, path, body, headers, _, _ = case
    if "Content-Length" in headers:
        length = headers["Content-Length"].encode()
        request = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode()
        return raw(url, request + b"Content-Length: " + length + b"\r\n\r\n" + body)
    content = body if isinstance(body, bytes) else None if body is None else json.dumps(body)
    return httpx.request(method, url + path, content=content, headers=headers, timeout=30)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]} {c[1][:40]} {c[5]}")
def test_each_bad_input_gets_its_code_and_changes_nothing(
    served: tuple[ServeProcess, str], case: Case
) -> None:
    running, db = served
    before = dump(db)
    answer = send(running.url, case)
    assert (answer.status_code, answer.json()["code"]) == (case[4], case[5]), answer.text
    assert set(answer.json()) == {"error", "code"}
    assert "\n" not in answer.json()["error"]
    assert dump(db) == before


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`stateous ARGS` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        capture_output=True, text=True, timeout=60, cwd=cwd, check=False,
    )  # fmt: skip


def test_a_stateous_yaml_with_every_kind_of_mistake(tmp_path: Path) -> None:
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "contract.py").write_text((ROOT / "examples/sdlc-supervisor/contract.py").read_text())
    (folder / "stateous.yaml").write_text(
        "url: 'ftp://x'\ntasks: 0\nname: ''\ncolour: red\nauth_token_file: missing\n"
    )
    done = run_cli("supervise", str(folder))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: cannot use {folder}/stateous.yaml: url: 'ftp://x' is not an http:// or "
        "https:// address; tasks: input should be greater than or equal to 1; name: string "
        "should have at least 1 character; colour: there is no such setting; auth_token_file: "
        f"cannot read the token file {folder / 'missing'}: no such file or directory"
    )
    (folder / "stateous.yaml").write_text("- a list\n")
    done = run_cli("supervise", str(folder))
    assert done.stderr.strip() == (
        f"error: cannot use {folder}/stateous.yaml: it is not a mapping of settings"
    )
    (folder / "stateous.yaml").write_text("url: [unclosed\n")
    assert run_cli("supervise", str(folder)).stderr.startswith(f"error: cannot read {folder}: ")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "is not a graph file"),
        ("[]", "is not a graph file"),
        ('{"workflow": "x"}', "is not a graph file"),
    ],
)
def test_a_graph_file_with_mistakes_is_one_line(tmp_path: Path, text: str, reason: str) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(text)
    done = run_cli("serve", str(graph), "--db", sqlite_url(tmp_path), "--listen", "127.0.0.1:0")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {graph} {reason}: "), done.stderr
    assert not (tmp_path / "stateous.db").exists()


def test_a_flow_py_that_raises_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text("raise RuntimeError('boom')\n")
    done = run_cli("compile", "flow.py", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "boom" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
