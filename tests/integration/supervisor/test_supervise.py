"""`stateous supervise` against a real `stateous serve`: start-up refusals, routines that fail,
stops, and the faults of issue 5 (real processes, a real SQLite file)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.supervisor.procs import history, init_folder, wait_until
from tests.support import (
    ServeProcess,
    Supervise,
    free_port,
    serve_process,
    sqlite_url,
    start_supervise,
)

DATA = Path(__file__).resolve().parents[2] / "unit" / "supervisor" / "data"

ROUTINES = """
import asyncio
import time

from stateous import on_state

from contract import Tests, TicketContext, events, states


@on_state(states.coding)
async def coding(ctx: TicketContext) -> events.done | events.stuck:
    mode = ctx["repo"]
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "wrong":
        return events.passed(Tests(passed=1, failed=0))
    if mode == "notes":
        ctx.note("first")
        ctx.memory["dev"] = {"session": ctx.attempt}
        ctx.note("second")
    if mode == "slow":
        ctx.note("working")
        await asyncio.sleep(2.5)
    if mode == "hang":
        ctx.note("working")
        await asyncio.sleep(600)
    return events.done()


@on_state(states.testing)
def testing(ctx: TicketContext) -> events.passed | events.failed:
    if ctx["repo"] == "badpayload":
        return events.passed(Tests.model_construct(passed="many", failed=0))
    if ctx["repo"] == "slow":
        time.sleep(1.0)
    return events.passed(Tests(passed=1, failed=0))
"""


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "sdlc.json"
    shutil.copy(DATA / "sdlc.json", path)
    return path


@pytest.fixture
def plane(graph: Path, tmp_path: Path) -> Iterator[ServeProcess]:
    with serve_process(graph, sqlite_url(tmp_path)) as served:
        yield served


def make_folder(tmp_path: Path, url: str, *, name: str = "build-box-1") -> Path:
    folder = tmp_path / "sdlc-supervisor"
    init_folder(url, folder)
    # From a URL, init writes that URL as given.
    assert f'url: "{url}"    # the control plane\n' in (folder / "stateous.yaml").read_text()
    (folder / "routines.py").write_text(ROUTINES, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {url}\ntasks: 4\nname: {name}\n", encoding="utf-8")
    return folder


def start(url: str, token: str, repo: str) -> None:
    answer = httpx.post(
        f"{url}/tokens", json={"token": token, "context": {"repo": repo}}, timeout=10
    )
    assert answer.status_code == 201, answer.text


def token(url: str, token_id: str) -> dict[str, object]:
    return httpx.get(f"{url}/tokens/{token_id}", timeout=10).json()  # type: ignore[no-any-return]


def status(folder: Path) -> dict[str, object]:
    return json.loads((folder / ".stateous" / "status.json").read_text())  # type: ignore[no-any-return]


def outbox_rows(folder: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(folder / ".stateous" / "outbox.db")
    try:
        return conn.execute("SELECT task, attempt, token, kind, body FROM messages").fetchall()
    finally:
        conn.close()


def all_reports_logged(url: str, running: Supervise, name: str) -> bool:
    """Whether the supervisor logged a `reported` line for each report the plane applied to
    the token `name` (each `task_done` or `task_failed` of its history)."""
    applied = [
        line for line in history(url, name) if line.startswith(("task_done ", "task_failed "))
    ]
    logged = [m for m in running.messages() if f" of {name}: reported " in m]
    return len(logged) == len(applied)


def test_routines_notes_memory_and_failures(plane: ServeProcess, tmp_path: Path) -> None:
    folder = make_folder(tmp_path, plane.url)
    running = start_supervise(folder)
    try:
        running.wait_for(r"^build-box-1 serves coding, testing; the control plane is ")
        start(plane.url, "T-NOTES", "notes")
        start(plane.url, "T-WRONG", "wrong")
        start(plane.url, "T-BAD", "badpayload")
        start(plane.url, "T-RAISE", "raise")
        for name in ("T-NOTES", "T-WRONG", "T-BAD", "T-RAISE"):
            wait_until(lambda n=name: token(plane.url, n)["status"] != "active", what=name)
            # A token ends when the plane applies its last report, a moment before the
            # supervisor reads the answer and logs it: wait for the lines before the stop.
            wait_until(lambda n=name: all_reports_logged(plane.url, running, n), what=name)
        status = json.loads((folder / ".stateous" / "status.json").read_text())
        assert status["name"] == "build-box-1" and isinstance(status["pid"], int)
    finally:
        assert running.stop() == 0
    notes = history(plane.url, "T-NOTES")
    at = notes.index('task_claimed {"task": 1, "supervisor": "build-box-1", "attempt": 1}') + 1
    assert notes[at : at + 3] == [
        'note {"task": 1, "text": "first"}',
        'memory_set {"state": "coding", "memory_key": "dev"}',
        'note {"task": 1, "text": "second"}',
    ]
    assert notes[at + 3] == 'event_accepted {"event": "done", "payload": null, "state": "coding"}'
    assert token(plane.url, "T-NOTES")["status"] == "completed"

    wrong = history(plane.url, "T-WRONG")
    failure = "the routine returned 'passed', which 'coding' may not emit (allowed: done, stuck)"
    # The task's id depends on how T-NOTES's own tasks interleave with the starts (a claim of
    # several tasks runs T-NOTES's routine at once): read it from the claim.
    claimed = next(line for line in wrong if line.startswith("task_claimed "))
    task = json.loads(claimed.split(" ", 1)[1])["task"]
    assert f'task_failed {{"task": {task}, "error": "{failure}"}}' in wrong
    assert f'task_retrying {{"task": {task}, "attempt": 2}}' in wrong
    assert token(plane.url, "T-WRONG")["status"] == "failed"

    bad = [line for line in history(plane.url, "T-BAD") if line.startswith("task_failed")]
    assert len(bad) == 1
    assert "the control plane refused the report: " in bad[0]
    raised = history(plane.url, "T-RAISE")
    boom = [line for line in raised if line.startswith("task_failed ")]
    assert len(boom) == 3 and all(line.endswith('"error": "RuntimeError: boom"}') for line in boom)
    assert raised[-1].startswith(
        "failed {\"reason\": \"'coding' failed, and has no transition on 'error': RuntimeError: boom\""
    )
    messages = running.messages()
    assert "task 1 of T-NOTES: reported done" in messages
    assert any(m.startswith(f"task {task} of T-WRONG: reported failed") for m in messages)
    assert any(
        re.match(r"task \d+ of T-BAD: the control plane refused the report: ", m) for m in messages
    ), messages
    assert (
        messages[-1]
        == "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)"
    )
    assert outbox_rows(folder) == []


def test_a_second_supervisor_and_a_stale_contract_are_refused(
    plane: ServeProcess, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path, plane.url)
    first = start_supervise(folder)
    try:
        first.wait_for("serves")
        second = start_supervise(folder)
        assert second.process.wait(timeout=20) == 1
        second.read(timeout=0.5)
        assert second.lines == [
            f"error: another supervisor runs on {folder.resolve()} now: stop it, or use another folder"
        ]
    finally:
        assert first.stop() == 0
    contract = folder / "contract.py"
    stale = "sha256:" + "0" * 64
    text = contract.read_text()
    served = json.loads(text.split("__checksum__ = ")[1].split("\n")[0])
    contract.write_text(text.replace(served, stale), encoding="utf-8")
    third = start_supervise(folder)
    assert third.process.wait(timeout=20) == 1
    third.read(timeout=0.5)
    absolute = folder.resolve()
    assert third.lines == [
        f"error: {absolute}/contract.py is for another version of the workflow ({stale}; the "
        f"control plane serves {served}): run `stateous init supervisor {plane.url} {absolute}` again"
    ]


def test_a_graceful_stop_waits_for_the_running_routine(plane: ServeProcess, tmp_path: Path) -> None:
    folder = make_folder(tmp_path, plane.url)
    running = start_supervise(folder)
    running.wait_for("serves")
    start(plane.url, "T-SLOW", "slow")
    running.wait_for(r"^task 1: coding of T-SLOW, attempt 1$")
    code = running.stop()
    assert code == 0
    messages = running.messages()
    assert "stopping: no new tasks; waiting for 1 routine(s) (signal again to stop now)" in messages
    assert messages[-1] == "task 1 of T-SLOW: reported done"
    assert token(plane.url, "T-SLOW")["state"] == "testing"


def test_a_second_signal_cancels_and_exits_1(plane: ServeProcess, tmp_path: Path) -> None:
    folder = make_folder(tmp_path, plane.url)
    running = start_supervise(folder)
    running.wait_for("serves")
    start(plane.url, "T-HANG", "hang")
    running.wait_for(r"^task 1: coding of T-HANG, attempt 1$")
    import signal

    running.process.send_signal(signal.SIGINT)
    running.wait_for("^stopping: no new tasks")
    running.process.send_signal(signal.SIGINT)
    assert running.process.wait(timeout=20) == 1
    assert "stopping now: cancelling 1 routine(s)" in running.messages()
    assert [line.split(" ")[0] for line in history(plane.url, "T-HANG")][-1] == "note"


def test_control_plane_stopped_while_a_routine_runs(graph: Path, tmp_path: Path) -> None:
    port = free_port()
    db = sqlite_url(tmp_path)
    listen = f"127.0.0.1:{port}"
    with serve_process(graph, db, listen=listen) as first:
        url = first.url
        folder = make_folder(tmp_path, url)
        running = start_supervise(folder)
        running.wait_for("serves")
        start(url, "T-1", "slow")
        running.wait_for(r"^task 1: coding of T-1, attempt 1$")
    try:
        running.wait_for(
            r"^cannot reach the control plane at .*; trying again in 0\.5s$", timeout=20
        )
        # The outbox is locked while the supervisor runs; its status file counts the messages.
        wait_until(lambda: status(folder)["outbox"] == 1, what="the report in the outbox")
        with serve_process(graph, db, listen=listen) as second:
            running.wait_for(r"^task 1 of T-1: reported done$", timeout=30)
            wait_until(lambda: token(second.url, "T-1")["status"] == "completed", what="T-1")
            lines = history(second.url, "T-1")
            assert (
                sum(1 for line in lines if line.startswith('event_accepted {"event": "done"')) == 1
            )
            assert 'note {"task": 1, "text": "working"}' in lines
            assert running.stop() == 0
    finally:
        if running.process.poll() is None:
            running.kill()
    assert outbox_rows(folder) == []


def test_sigkill_after_a_note_is_committed_then_restart_resends_it(
    plane: ServeProcess, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path, plane.url)
    crashed = start_supervise(folder, env={"STATEOUS_DEBUG_POINT": "after_outbox_commit:note"})
    crashed.wait_for("serves")
    start(plane.url, "T-1", "slow")
    assert crashed.process.wait(timeout=20) == -9
    rows = outbox_rows(folder)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (1, 1, "T-1", "note", '{"text": "working"}')
    ]
    again = start_supervise(folder)
    try:
        again.wait_for(r"^sending 1 message\(s\) left in the outbox$")
        wait_until(
            lambda: 'note {"task": 1, "text": "working"}' in history(plane.url, "T-1"),
            what="the note",
        )
    finally:
        assert again.stop() == 0
    assert outbox_rows(folder) == []


def test_sigkill_mid_routine_then_the_lease_ends_and_attempt_2_runs(
    graph: Path, tmp_path: Path
) -> None:
    env = {"STATEOUS_LEASE_SECONDS": "2"}
    with serve_process(graph, sqlite_url(tmp_path), env=env) as plane:
        folder = make_folder(tmp_path, plane.url)
        crashed = start_supervise(folder, env={"STATEOUS_DEBUG_POINT": "after_outbox_commit:note"})
        crashed.wait_for("serves")
        start(plane.url, "T-1", "hang")
        assert crashed.process.wait(timeout=20) == -9
        (folder / "stateous.yaml").write_text(
            f"url: {plane.url}\nname: build-box-2\n", encoding="utf-8"
        )
        (folder / "routines.py").write_text(
            ROUTINES.replace('mode == "hang"', "False"), encoding="utf-8"
        )
        again = start_supervise(folder)
        try:
            again.wait_for(r"^sending 1 message\(s\) left in the outbox$")
            again.wait_for(r"^task 1 of T-1: reported done$", timeout=45)
        finally:
            assert again.stop() == 0
        kinds = [line for line in history(plane.url, "T-1") if line.startswith("task_")]
        assert kinds[:5] == [
            'task_queued {"task": 1, "state": "coding"}',
            'task_claimed {"task": 1, "supervisor": "build-box-1", "attempt": 1}',
            'task_failed {"task": 1, "error": "build-box-1 stopped answering: no heartbeat for 2 '
            'minutes"}',
            'task_retrying {"task": 1, "attempt": 2}',
            'task_claimed {"task": 1, "supervisor": "build-box-2", "attempt": 2}',
        ]


def test_a_task_taken_back_cancels_its_async_routine(plane: ServeProcess, tmp_path: Path) -> None:
    folder = make_folder(tmp_path, plane.url)
    running = start_supervise(folder)
    try:
        running.wait_for("serves")
        start(plane.url, "T-HANG", "hang")
        running.wait_for(r"^task 1: coding of T-HANG, attempt 1$")
        cancelled = httpx.post(f"{plane.url}/tokens/T-HANG/cancel", timeout=10)
        assert cancelled.status_code == 200
        running.wait_for(
            r"^task 1 of T-HANG: the control plane took it back; cancelling its routine$"
        )
    finally:
        assert running.stop() == 0
    messages = running.messages()
    assert not any("reported" in m for m in messages)
    assert messages[-1] == (
        "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)"
    )
    assert outbox_rows(folder) == []


def test_ctrl_c_while_waiting_for_the_control_plane_exits_1(graph: Path, tmp_path: Path) -> None:
    folder = tmp_path / "early"
    init_folder(str(graph), folder)
    (folder / "routines.py").write_text(ROUTINES, encoding="utf-8")
    (folder / "stateous.yaml").write_text(
        f"url: http://127.0.0.1:{free_port()}\n", encoding="utf-8"
    )
    running = start_supervise(folder)
    running.wait_for(
        r"^cannot reach the control plane at http://127\.0\.0\.1:\d+ \(.*\); trying again in "
    )
    import signal

    running.process.send_signal(signal.SIGINT)
    assert running.process.wait(timeout=20) == 1


def test_folder_errors_and_a_server_that_is_no_control_plane(graph: Path, tmp_path: Path) -> None:
    import http.server
    import threading

    missing = start_supervise(tmp_path / "nowhere")
    assert missing.process.wait(timeout=20) == 1
    assert missing.read(timeout=0.5) == [f"error: {tmp_path / 'nowhere'} is not a folder"]

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>hello</html>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        folder = tmp_path / "box"
        init_folder(str(graph), folder)
        (folder / "stateous.yaml").write_text(f"url: {url}\n", encoding="utf-8")
        page = start_supervise(folder)
        assert page.process.wait(timeout=20) == 1
        assert page.read(timeout=0.5) == [
            f"error: {url} did not answer as a Stateous control plane: the control plane's "
            "answer is not a JSON object"
        ]
    finally:
        server.shutdown()
        server.server_close()
