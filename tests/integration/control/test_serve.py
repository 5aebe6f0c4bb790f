"""`stateous serve` as a real process: ORDER-1's rows, start-up lines and refusals, the hold."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from stateous.control.store import migrate
from stateous.control.store.db import Store, make_engine
from tests.support import serve_process
from tests.support.graphs import ORDERS, SDLC, graph_text, variant, write_graph
from tests.support.local_files import rows_in_the_file
from tests.support.processes import serve_command
from tests.support.rows import ledger_rows, table_rows, task_rows, token_row

BOX = "build-box-1"
HOLDER = re.compile(r"^[^:]+:\d+:[0-9a-f]{8}$")


def run_serve(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`stateous serve ARGS` to its end (for refusals)."""
    return subprocess.run(
        [sys.executable, "-m", "stateous", "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def drive_order_1(url: str) -> None:
    """What one supervisor and `stateous token start ORDER-1` do, over HTTP."""
    with httpx.Client(base_url=url, timeout=30) as http:
        started = http.post(
            "/tokens", json={"token": "ORDER-1", "context": {"title": "first order"}}
        )
        assert started.status_code == 201
        states = ["draft", "review"]
        grant = http.post(
            "/tasks/claim", json={"supervisor": BOX, "states": states, "request": "1" * 32}
        )
        assert grant.json()["entered_by"] == {"name": "__started__"}
        done = {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": BOX}
        assert http.post("/tasks/1/report", json=done).json()["state"] == "review"
        grant = http.post(
            "/tasks/claim", json={"supervisor": BOX, "states": states, "request": "2" * 32}
        )
        assert grant.json()["context"] == {"title": "first order", "verdict": None}
        verdict = {"approved": True, "note": ""}
        body = {
            "kind": "event",
            "event": "reviewed",
            "payload": verdict,
            "attempt": 1,
            "supervisor": BOX,
        }
        assert http.post("/tasks/2/report", json=body).json()["status"] == "completed"
        idle = http.post(
            "/tasks/claim", json={"supervisor": BOX, "states": states, "request": "e" * 32}
        )
        assert idle.status_code == 204


def test_order_1_rows_through_a_real_serve(tmp_path: Path, db_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        drive_order_1(served.url)
        store = Store(make_engine(db_url))
        with store.engine.connect() as conn:
            rows = ledger_rows(conn, "ORDER-1")
            plane = conn.execute(
                text("SELECT id, structure, checksum, serving, since FROM control_plane")
            ).one()
            version = table_rows(conn, "stateous_version")
            token = token_row(conn, "ORDER-1")
            tasks = task_rows(conn)
            claims = table_rows(conn, "claims")
            timers, memory = table_rows(conn, "timers"), table_rows(conn, "memory")
        store.engine.dispose()
    verdict = {"approved": True, "note": ""}
    assert [(seq, kind, key, data) for seq, _at, kind, key, data in rows] == [
        (1, "started", None, {"context": {"title": "first order", "verdict": None}}),
        (
            2,
            "event_accepted",
            None,
            {"event": "__started__", "payload": None, "state": "__start__"},
        ),
        (3, "entered", None, {"state": "draft", "visit": 1}),
        (4, "task_queued", None, {"task": 1, "state": "draft"}),
        (5, "task_claimed", None, {"task": 1, "supervisor": BOX, "attempt": 1}),
        (6, "event_accepted", None, {"event": "submitted", "payload": None, "state": "draft"}),
        (7, "task_done", None, {"task": 1}),
        (8, "entered", None, {"state": "review", "visit": 1}),
        (9, "task_queued", None, {"task": 2, "state": "review"}),
        (10, "task_claimed", None, {"task": 2, "supervisor": BOX, "attempt": 1}),
        (11, "context_changed", None, {"keys": ["verdict"]}),
        (12, "event_accepted", None, {"event": "reviewed", "payload": verdict, "state": "review"}),
        (13, "task_done", None, {"task": 2}),
        (14, "completed", None, {}),
    ]
    times = [at for _seq, at, *_ in rows]
    # One `at` per transaction: rows 1-4, 5, 6-9, 10, 11-14.
    groups = [times[0:4], times[4:5], times[5:9], times[9:10], times[10:14]]
    assert all(len(set(group)) == 1 for group in groups)
    assert len({group[0] for group in groups}) == 5
    assert token[:5] == (
        "ORDER-1",
        "review",
        "completed",
        1,
        {"title": "first order", "verdict": verdict},
    )
    assert token[5] == times[5] and token[6:] == (None, None)
    assert tasks == [
        (1, "ORDER-1", "draft", 1, "done", 1, BOX, None, times[0]),
        (2, "ORDER-1", "review", 1, "done", 1, BOX, None, times[5]),
    ]
    assert timers == [] and memory == []
    assert claims == [(BOX, "e" * 32, None, None)]
    assert (
        plane.id == 1 and plane.structure == plane.checksum and plane.checksum.startswith("sha256:")
    )
    assert HOLDER.match(plane.serving) and plane.since is not None
    assert version == [(migrate.HEAD,)]  # the first schema was 0003; later revisions add tables


def test_start_up_lines_and_a_clean_stop(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    db = f"sqlite:///{tmp_path / 'cp.db'}"
    with serve_process(graph, db, listen="0.0.0.0:0", cwd=tmp_path) as served:
        assert httpx.get(served.url + "/health").json()["workflow"] == "orders"
        code = served.stop()
    assert code == 0
    lines = served.lines
    assert lines[0] == (
        "warning: other computers can reach 0.0.0.0, and the API has no authentication; "
        "put a proxy or a VPN in front of it"
    )
    assert re.fullmatch(r"serving on http://127\.0\.0\.1:\d+ \(Ctrl-C stops\)", lines[1])
    assert lines[-1] == "stopped"
    store = Store(make_engine(db))
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT serving, since FROM control_plane")).one() == (None, None)
    store.engine.dispose()


def test_the_default_database_is_stateous_db_in_the_folder(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    process = subprocess.Popen(
        [sys.executable, "-m", "stateous", "serve", str(graph), "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line.startswith("serving on http://127.0.0.1:")
    process.send_signal(2)
    assert process.wait(timeout=20) == 0
    process.stderr.close()
    assert (tmp_path / "stateous.db").exists()


@pytest.mark.parametrize(
    "listen",
    ["127.0.0.1", "127.0.0.1:65536", "127.0.0.1:", "::1:80", "[127.0.0.1]:80", "h:123456", "x:-1"],
)
def test_a_bad_listen_is_refused(tmp_path: Path, listen: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    done = run_serve(str(graph), "--listen", listen, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: --listen {listen!r} is not HOST:PORT with a port from 0 to 65535; write, for example, "
        "127.0.0.1:8080 or [::1]:8080\n"
    )
    assert not (tmp_path / "stateous.db").exists()


def test_graph_file_refusals(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    done = run_serve(str(missing), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot read the graph file {missing}: ")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    done = run_serve(str(bad), cwd=tmp_path)
    assert (
        done.stderr
        == f"error: {bad} is not a graph file: the graph file has no 'stateous'; run `stateous compile` again\n"
    )


def test_a_used_port_is_refused(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_serve(str(graph), "--listen", f"127.0.0.1:{port}", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: another program already uses that port; "
        "stop it, or choose another port with --listen\n"
    )
    assert not (tmp_path / "stateous.db").exists()


def test_a_second_control_plane_is_refused(tmp_path: Path, backend: str, db_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, db_url, cwd=tmp_path):
        done = run_serve(str(graph), "--db", db_url, "--listen", "127.0.0.1:0", cwd=tmp_path)
    assert done.returncode == 1
    if backend == "postgres":
        assert done.stderr == "error: another control plane serves this database; stop it first\n"
    else:
        pattern = (
            r"error: another control plane serves this database \([^:]+:\d+:[0-9a-f]{8}, "
            r"last seen at \d\d:\d\d:\d\d UTC\); stop it first\n"
        )
        assert re.fullmatch(pattern, done.stderr)


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    db = tmp_path / "other.db"
    store = Store(make_engine(f"sqlite:///{db}"))
    with store.begin() as conn:
        conn.execute(text("CREATE TABLE tokens (x INTEGER)"))
    store.engine.dispose()
    done = run_serve(str(graph), "--db", f"sqlite:///{db}", "--listen", "127.0.0.1:0", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: cannot use the database sqlite:///{db}: this database has tables with the names "
        "Stateous uses, but no version of Stateous; start a new database\n"
    )


def test_an_unreachable_database_is_refused_with_the_password_masked(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    done = run_serve(
        str(graph),
        "--db",
        "postgresql://u:secret@127.0.0.1:1/x",
        "--listen",
        "127.0.0.1:0",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: cannot open the database postgresql://u:***@127.0.0.1:1/x: "
    )
    assert "secret" not in done.stderr


def test_a_database_in_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    done = run_serve(
        str(graph), "--db", "sqlite:///nodir/x.db", "--listen", "127.0.0.1:0", cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (
        1,
        "error: cannot open the database sqlite:///nodir/x.db: the folder 'nodir' of the "
        "database file does not exist; create it first\n",
    )
    assert not (tmp_path / "nodir").exists()


def test_a_database_other_than_sqlite_or_postgres_is_refused(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    done = run_serve(str(graph), "--db", "mysql://x", "--listen", "127.0.0.1:0", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        1,
        "error: cannot open the database mysql://x: Stateous stores its data in SQLite "
        "(sqlite:///FILE) or PostgreSQL (postgresql://USER@HOST/DB), not 'mysql'\n",
    )


def test_structure_changes(tmp_path: Path, db_url: str) -> None:
    graph = write_graph(tmp_path, SDLC)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        httpx.post(
            served.url + "/tokens", json={"token": "T-1", "context": {"repo": "r"}}
        ).raise_for_status()
    tuned = variant(SDLC)
    tuned["states"]["coding"]["timeout"] = "7h"
    write_graph(tmp_path, tuned)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        assert httpx.get(served.url + "/health").json()["checksum"] != ""
    changed = variant(SDLC)
    changed["events"]["extra"] = {}
    write_graph(tmp_path, changed)
    # Another structure with a live token starts: T-1 stays on its version.
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        assert httpx.get(served.url + "/workflow").json()["events"]["extra"] == {}
        served.read_lines(timeout=0.5)
        older = next(line for line in served.lines if "live token(s)" in line)
        assert httpx.get(served.url + "/tokens/T-1").json()["structure"] == _structure(tuned)
    assert older == (
        f"1 live token(s) stay on 1 older version (sha256:{_checksum(tuned)[7:15]}…); they "
        "keep running on it: see stateous versions"
    )
    write_graph(tmp_path, tuned)  # a roll-back: the older version is current again
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        httpx.post(served.url + "/tokens/T-1/cancel").raise_for_status()
        served.read_lines(timeout=0.5)
        assert not any("live token(s)" in line for line in served.lines)


def _structure(doc: dict[str, Any]) -> str:
    from stateous.model.canonical import structure

    return structure(doc)


def _checksum(doc: dict[str, Any]) -> str:
    from stateous.model.canonical import checksum

    return checksum(doc)


def test_a_takeover_stops_the_old_control_plane(tmp_path: Path, backend: str, db_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        store = Store(make_engine(db_url))
        if backend == "sqlite":
            with store.begin() as conn:
                conn.execute(
                    text("UPDATE control_plane SET serving = 'other:1:deadbeef', since = :now"),
                    {"now": str(datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=5))},
                )
        else:
            with store.engine.connect() as conn:
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks "
                        "WHERE locktype = 'advisory' AND pid <> pg_backend_pid() AND database = "
                        "(SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                )
                conn.commit()
                key = conn.execute(text("SELECT 1")).scalar()
                assert key == 1
            from stateous.control.hold import SERVE_KEY

            holder = store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            # pg_terminate_backend only signals: the lock is free once that backend has exited.
            deadline = time.monotonic() + 5
            take = text("SELECT pg_try_advisory_lock(:k)")
            while not holder.execute(take, {"k": SERVE_KEY}).scalar():
                assert time.monotonic() < deadline, "the terminated backend kept the hold"
                time.sleep(0.02)
        code = served.process.wait(timeout=20)
        served.read_lines(timeout=1.0)
        if backend == "postgres":
            holder.close()
        store.engine.dispose()
    assert code == 1, served.lines
    assert (
        served.lines[-1]
        == "error: another control plane took the database; this control plane stopped"
    )
    assert any(
        line.endswith(
            ": another control plane took this database; this control plane does no more "
            "work; trying again does not help: stop this server"
        )
        for line in served.lines
    )
    assert "stopped" not in served.lines


def test_graph_text_helper_round_trips() -> None:
    assert graph_text(ORDERS).endswith("}\n")
    assert serve_command("g.json", "sqlite://", "127.0.0.1:0")[-4:] == [
        "--db",
        "sqlite://",
        "--listen",
        "127.0.0.1:0",
    ]


def test_requests_that_are_not_http_get_the_envelope(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, f"sqlite:///{tmp_path / 'cp.db'}", cwd=tmp_path) as served:
        host, port = served.url.removeprefix("http://").split(":")
        answers = []
        for request in (
            b"POST /tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 9999999999999999999999\r\n\r\n",
            b"GARBAGE\r\n\r\n",
        ):
            with socket.create_connection((host, int(port)), timeout=10) as conn:
                conn.sendall(request)
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
            answers.append(data)
    assert answers[0].startswith(b"HTTP/1.1 413 ")
    assert answers[0].endswith(
        b'{"error":"the body is larger than 1 MiB, the most this API reads","code":"bad_request"}'
    )
    assert answers[1].startswith(b"HTTP/1.1 400 ")
    assert answers[1].endswith(b'"code":"bad_request"}')


def test_serve_copies_the_wal_into_the_file_beside_its_commits(tmp_path: Path) -> None:
    # The commits leave their pages in the WAL (the backstop is 10,000 pages); the checkpoint
    # task copies them within its interval, and a kill afterwards loses nothing either way.
    graph = write_graph(tmp_path, ORDERS)
    path = tmp_path / "cp.db"
    with serve_process(graph, f"sqlite:///{path}") as served:
        for n in range(3):
            answer = httpx.post(
                served.url + "/tokens", json={"token": f"W-{n}", "context": {"title": "w"}}
            )
            assert answer.status_code == 201, answer.text
        deadline = time.monotonic() + 10
        while (seen := rows_in_the_file(path, "tokens")) != 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert seen == 3
        answer = httpx.post(
            served.url + "/tokens", json={"token": "W-3", "context": {"title": "w"}}
        )
        assert answer.status_code == 201, answer.text
        served.process.kill()
        served.process.wait(timeout=10)
    store = Store(make_engine(f"sqlite:///{path}"))
    with store.engine.connect() as conn:
        ids = conn.execute(text("SELECT token FROM tokens ORDER BY token")).scalars().all()
    store.engine.dispose()
    assert ids == ["W-0", "W-1", "W-2", "W-3"]
