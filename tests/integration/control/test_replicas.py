"""Several control planes on one Postgres database: real `serve` and `serve --replica`
processes.

A holder and a replica answer alike and write the same rows; a replica refuses SQLite and
another structure, waits for the schema, shows its role; when the holder is killed a replica
takes the hold within a tick and the timers fire once; a claim held on one process is woken by
a start on another; a lost listener connection is re-opened and the held claims look again.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import create_engine

from stateous.control.store import migrate
from tests.support import ServeProcess, backends, postgres_database, serve_process
from tests.support.graphs import ORDERS, SDLC, variant, write_graph
from tests.support.processes import start_serve
from tests.support.rows import ledger_rows, table_rows, task_rows, token_row

pytestmark = pytest.mark.skipif("postgres" not in backends(), reason="replicas need Postgres")

BOX = "build-box-1"
NAME = re.compile(r"^[^:]+:\d+:[0-9a-f]{8}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
TOOK = "stateous.hold: this control plane took the hold on the database; it runs the clock now"
KNOBS = {"STATEOUS_SINCE_SECONDS": "1"}


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A new, empty Postgres database."""
    with postgres_database() as url:
        yield url


@contextmanager
def planes(
    graph: Path, url: str, replicas: int = 1, env: dict[str, str] | None = None
) -> Iterator[list[ServeProcess]]:
    """A holder, then `replicas` replicas, on one database."""
    with ExitStack() as stack:
        started = [stack.enter_context(serve_process(graph, url, env={**KNOBS, **(env or {})}))]
        for _ in range(replicas):
            started.append(
                stack.enter_context(
                    serve_process(graph, url, extra=["--replica"], env={**KNOBS, **(env or {})})
                )
            )
        yield started


def wait_line(served: ServeProcess, wanted: Callable[[str], bool], timeout: float) -> float:
    """Wait for a stderr line; answer when it came (monotonic)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        served.read_lines(timeout=0.05)
        if any(wanted(line) for line in served.lines):
            return time.monotonic()
    raise AssertionError(f"no such line in {served.lines}")


def plain(value: Any) -> Any:
    """An answer with every time replaced by `T` and the holder's name by `N` (two runs differ
    only in those)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, str) and TIME.match(value):
        return "T"
    if isinstance(value, str) and NAME.match(value):
        return "N"  # `serving` in /stats: the holder of each run
    return value


def script(urls: list[str]) -> list[tuple[int, Any]]:
    """One order through every kind of request, each sent to the next URL in turn: the answers."""
    clients = [httpx.Client(base_url=url, timeout=30) for url in urls]
    turn = iter(range(10_000))

    def send(method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        client = clients[next(turn) % len(clients)]
        answer = client.request(method, path, **kwargs)
        return answer.status_code, (answer.json() if answer.content else None)

    states = ["draft", "review"]
    verdict = {"approved": True, "note": ""}
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/tokens", {"json": {"token": "ORDER-1", "context": {"title": "first order"}}}),
        ("POST", "/tokens", {"json": {"token": "ORDER-1", "context": {"title": "first order"}}}),
        ("POST", "/tokens", {"json": {"token": "order-1", "context": {"title": "x"}}}),
        ("POST", "/tokens/ORDER-1/events/nope", {"json": {}}),
        ("POST", "/tasks/claim", {"json": {"supervisor": BOX, "states": states, "request": "1" * 32}}),
        ("POST", "/tasks/claim", {"json": {"supervisor": BOX, "states": states, "request": "1" * 32}}),
        ("POST", "/tasks/1/note", {"json": {"text": "working", "attempt": 1}}),
        ("PUT", "/tasks/1/memory", {"json": {"key": "k", "value": 1, "attempt": 1}}),
        ("POST", "/tasks/heartbeat", {"json": {"supervisor": BOX, "tasks": [1, 7]}}),
        ("POST", "/tasks/1/report", {"json": {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": BOX}}),
        ("POST", "/tasks/1/report", {"json": {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": BOX}}),
        ("POST", "/tokens/ORDER-1/pause", {"json": {}}),
        ("POST", "/tokens/ORDER-1/resume", {"json": {}}),
        ("POST", "/tasks/claim", {"json": {"supervisor": BOX, "states": states, "request": "2" * 32}}),
        ("POST", "/tasks/2/report", {"json": {"kind": "event", "event": "reviewed", "payload": verdict, "attempt": 1, "supervisor": BOX}}),
        ("POST", "/tasks/claim", {"json": {"supervisor": BOX, "states": states, "request": "e" * 32}}),
        ("POST", "/tokens/ORDER-1/cancel", {"json": {}}),
        ("GET", "/tokens/ORDER-1", {}),
        ("GET", "/tokens/ORDER-1/history", {}),
        ("GET", "/tokens", {}),
        ("GET", "/tasks", {}),
        ("GET", "/stats", {}),
        ("GET", "/workflow", {}),
    ]  # fmt: skip
    try:
        return [plain(send(method, path, **kwargs)) for method, path, kwargs in steps]
    finally:
        for client in clients:
            client.close()


def rows_of(url: str) -> dict[str, Any]:
    """The rows a script leaves, without their times."""
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        found = {
            "ledger": [row[:1] + row[2:] for row in ledger_rows(conn, "ORDER-1")],
            "token": token_row(conn, "ORDER-1")[:5],
            "tasks": [row[:8] for row in task_rows(conn)],
            "claims": table_rows(conn, "claims"),
            "memory": table_rows(conn, "memory"),
            "timers": table_rows(conn, "timers"),
        }
    engine.dispose()
    return found


def test_a_holder_and_a_replica_answer_and_write_as_one_holder(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with postgres_database() as alone, serve_process(graph, alone) as holder:
        expected = script([holder.url])
        expected_rows = rows_of(alone)
    with postgres_database() as shared, planes(graph, shared) as (holder, replica):
        answers = script([holder.url, replica.url])
        assert rows_of(shared) == expected_rows
    assert answers == expected
    assert [code for code, _ in answers[:6]] == [201, 200, 422, 409, 200, 200]


def test_replica_refuses_sqlite(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, ORDERS)
    done = subprocess.run(
        [sys.executable, "-m", "stateous", "serve", str(graph), "--db", "sqlite:///cp.db",
         "--replica", "--listen", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == "error: --replica needs Postgres: SQLite is served by one process\n"
    assert not (tmp_path / "cp.db").exists()


def test_replica_refuses_another_structure(tmp_path: Path, pg_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    other = variant(ORDERS)
    other["states"]["draft"]["emits"].append("dropped")
    other["events"]["dropped"] = {}
    other["transitions"].append({"from": "draft", "to": "__end__", "on": "dropped"})
    other_graph = write_graph(tmp_path, other, "other.json")
    with serve_process(graph, pg_url) as holder:
        structure = httpx.get(holder.url + "/health").json()["checksum"]
        replica = start_serve(other_graph, pg_url, extra=["--replica"])
        _out, err = replica.communicate(timeout=60)
    theirs = _structure_of(other_graph)
    assert replica.returncode == 1
    assert err == (
        f"error: refusing to serve as a replica: the database serves the structure {structure}, "
        f"this graph file has {theirs}\n"
    )


def _structure_of(graph: Path) -> str:
    from stateous.model.graph import read_graph_file

    return read_graph_file(graph).structure


def test_replica_waits_for_the_schema_and_shows_its_role(tmp_path: Path, pg_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    replica = ServeProcess(
        url="", process=start_serve(graph, pg_url, extra=["--replica"], env=KNOBS)
    )
    replica.start_reading()
    try:
        wait_line(replica, lambda line: line.startswith("waiting"), 30)
        assert replica.lines == [
            "waiting for the database's schema: it has none yet, this replica needs version "
            f"{migrate.HEAD}; a control plane started without --replica creates it"
        ]
        time.sleep(1.5)  # still waiting: it never migrates
        assert replica.read_lines(timeout=0.1) == replica.lines and len(replica.lines) == 1
        with serve_process(graph, pg_url, env=KNOBS) as holder:
            wait_line(replica, lambda line: line.startswith("serving on "), 30)
            replica.url = replica.lines[-1].removeprefix("serving on ").split(" ")[0]
            assert httpx.get(holder.url + "/health").json()["role"] == "holder"
            assert httpx.get(replica.url + "/health").json()["role"] == "replica"
            listed = httpx.get(replica.url + "/control-planes").json()
            assert [entry["role"] for entry in listed] == ["holder", "replica"]
            assert all(NAME.match(entry["name"]) for entry in listed)
            assert all(TIME.match(entry["seen_at"]) for entry in listed)
            from_holder = httpx.get(holder.url + "/control-planes").json()
            assert [(e["name"], e["role"]) for e in from_holder] == [
                (e["name"], e["role"]) for e in listed
            ]  # `seen_at` moves every second here
            serving = _serving(pg_url)
            assert listed[0]["name"] == serving
            # A second plain serve is still refused.
            second = start_serve(graph, pg_url)
            _out, err = second.communicate(timeout=60)
            assert second.returncode == 1
            assert err == "error: another control plane serves this database; stop it first\n"
        # The holder stopped cleanly: its row is gone; the replica took the hold.
        wait_line(replica, lambda line: line.endswith(TOOK), 10)
        # Its presence row says `holder` just after the log line: wait for it, briefly.
        deadline = time.monotonic() + 10
        while True:
            listed = httpx.get(replica.url + "/control-planes").json()
            if [entry["role"] for entry in listed] == ["holder"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert [(entry["role"]) for entry in listed] == ["holder"]
        assert listed[0]["name"] == _serving(pg_url)
    finally:
        code = replica.interrupt(20)
        replica.read_lines(timeout=2)
        for pipe in (replica.process.stdout, replica.process.stderr):
            if pipe is not None:
                pipe.close()
    assert code == 0
    assert replica.lines[-1] == "stopped"
    assert _serving(pg_url) is None


def _serving(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT serving FROM control_plane").fetchone()
    assert row is not None
    return None if row[0] is None else str(row[0])


def _history(url: str, token: str) -> list[tuple[str, Any]]:
    answer = httpx.get(f"{url}/tokens/{token}/history", timeout=30)
    return [(row["kind"], row["data"]) for row in answer.json()]


def test_killed_holder_a_replica_takes_the_hold_within_a_tick(tmp_path: Path, pg_url: str) -> None:
    doc = variant(SDLC)
    doc["states"]["coding"]["timeout"] = "3s"
    graph = write_graph(tmp_path, doc)
    with planes(graph, pg_url, replicas=2) as (holder, first, second):
        started = httpx.post(
            holder.url + "/tokens", json={"token": "T-1", "context": {"repo": "r"}}, timeout=30
        )
        assert started.status_code == 201
        holder.process.kill()
        killed = time.monotonic()
        holder.process.wait()
        took = (first, second)
        deadline = killed + 10
        winner: ServeProcess | None = None
        while winner is None and time.monotonic() < deadline:
            for served in took:
                served.read_lines(timeout=0.02)
                if any(line.endswith(TOOK) for line in served.lines):
                    winner = served
        assert winner is not None
        # Within a tick (1 s), with room for a loaded two-core machine.
        assert time.monotonic() - killed < 3.0
        loser = second if winner is first else first
        time.sleep(1.5)
        loser.read_lines(timeout=0.1)
        assert not any(line.endswith(TOOK) for line in loser.lines)
        assert httpx.get(winner.url + "/health").json()["role"] == "holder"
        assert httpx.get(loser.url + "/health").json()["role"] == "replica"
        # The timer set by the dead holder fires once, on the new holder's clock.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            kinds = [kind for kind, _ in _history(loser.url, "T-1")]
            if "timer_fired" in kinds:
                break
            time.sleep(0.2)
        time.sleep(2.0)
        kinds = [kind for kind, _ in _history(loser.url, "T-1")]
        assert kinds.count("timer_fired") == 1
        assert ("timer_fired", {"event": "timeout"}) in _history(winner.url, "T-1")
        # The dead holder's row is not listed (its hold ended), though written less than 30 s ago.
        listed = httpx.get(loser.url + "/control-planes").json()
        assert [(e["name"], e["role"]) for e in listed] == [
            (_serving(pg_url), "holder"),
            *[(e["name"], "replica") for e in listed[1:]],
        ]
        assert len(listed) == 2


def claim_in_thread(url: str, body: dict[str, Any]) -> Future[tuple[int, Any, float]]:
    """POST /tasks/claim in a thread: (status, answer, seconds it took)."""
    future: Future[tuple[int, Any, float]] = Future()

    def run() -> None:
        began = time.monotonic()
        try:
            answer = httpx.post(url + "/tasks/claim", json=body, timeout=90)
            content = answer.json() if answer.content else None
            future.set_result((answer.status_code, content, time.monotonic() - began))
        except Exception as exc:
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def test_a_claim_held_on_a_replica_wakes_for_a_start_on_the_holder(
    tmp_path: Path, pg_url: str
) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with planes(graph, pg_url) as (holder, replica):
        for_draft = claim_in_thread(
            replica.url, {"supervisor": "a", "states": ["draft"], "wait": 20}
        )
        for_review = claim_in_thread(
            replica.url, {"supervisor": "b", "states": ["review"], "wait": 4}
        )
        time.sleep(1.0)  # both are held now
        assert not for_draft.done() and not for_review.done()
        httpx.post(holder.url + "/tokens", json={"token": "A", "context": {"title": "a"}})
        status, grant, took = for_draft.result(timeout=30)
        assert status == 200 and grant["token"] == "A" and grant["state"] == "draft"
        assert took < 3.0  # woken by the notification, not the end of its 20 s wait
        status, _, took = for_review.result(timeout=30)
        assert status == 204 and took >= 3.9  # another state's task does not wake it


def test_a_lost_listener_is_reopened_and_held_claims_look_again(
    tmp_path: Path, pg_url: str
) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with planes(graph, pg_url) as (holder, replica):
        httpx.post(holder.url + "/tokens", json={"token": "A", "context": {"title": "a"}})
        first = httpx.post(
            replica.url + "/tasks/claim", json={"supervisor": "s", "states": ["draft"]}
        )
        assert first.json()["attempt"] == 1
        held = claim_in_thread(replica.url, {"supervisor": "s", "states": ["draft"], "wait": 40})
        time.sleep(1.0)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            # The task is queued again with no notification (triggers off in this session):
            # only the look after the listener's new connection can find it.
            conn.execute("SET session_replication_role = replica")
            conn.execute(
                "UPDATE tasks SET status = 'queued', claimed_by = NULL, lease_until = NULL "
                "WHERE id = 1"
            )
            time.sleep(1.5)
            assert not held.done()
            ended = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN stateous_queued%'"
            ).fetchall()
        assert len(ended) == 2  # the holder's and the replica's listeners
        status, grant, took = held.result(timeout=30)
        assert status == 200 and grant["task"] == 1 and grant["attempt"] == 2
        assert took < 10.0
        wait_line(replica, lambda line: "is open again" in line, 10)
    failed = [line for line in replica.lines if "listens for queued tasks" in line]
    assert (
        failed[0]
        .split(": ", 1)[1]
        .startswith("the connection that listens for queued tasks failed (")
    )
    assert failed[0].endswith("); opening a new one every 1.0 seconds")
    assert failed[1].endswith(
        "stateous.listen: the connection that listens for queued tasks is open again"
    )


def _job_status(url: str, job: int, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = httpx.get(f"{url}/bulk/{job}", timeout=30).json()
        if answer["status"] != "running" or time.monotonic() > deadline:
            return dict(answer)
        time.sleep(0.2)


def test_bulk_jobs_made_on_a_replica_run_on_the_holder_then_on_the_new_one(
    tmp_path: Path, pg_url: str
) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with planes(graph, pg_url) as (holder, replica):
        for n in range(3):
            httpx.post(f"{replica.url}/tokens", json={"token": f"B-{n}", "context": {"title": "b"}})
        made = httpx.post(
            f"{replica.url}/bulk", json={"action": "pause", "filter": {"prefix": "B-"}}
        )
        assert made.status_code == 202 and made.json()["matched"] == 3
        job = _job_status(replica.url, made.json()["job"])
        assert (job["status"], job["done"]) == ("finished", 3)
        holder.process.kill()
        holder.process.wait()
        wait_line(replica, lambda line: line.endswith(TOOK), 10)
        made = httpx.post(
            f"{replica.url}/bulk", json={"action": "resume", "filter": {"prefix": "B-"}}
        )
        job = _job_status(replica.url, made.json()["job"])
        assert (job["status"], job["done"]) == ("finished", 3)
        statuses = {t["token"]: t["status"] for t in httpx.get(f"{replica.url}/tokens").json()}
        assert statuses == {"B-0": "active", "B-1": "active", "B-2": "active"}


def test_a_replica_follows_the_holders_current_version_without_a_restart(
    tmp_path: Path, pg_url: str
) -> None:
    """A replica started with an older graph file on record starts new tokens on
    the version the holder serves; when it takes the hold, its own graph file is current."""
    from stateous.model.canonical import structure

    newer = variant(ORDERS)
    newer["events"]["dropped"] = {}
    older_graph = write_graph(tmp_path, ORDERS)
    newer_graph = write_graph(tmp_path, newer, "newer.json")
    context = {"title": "t"}
    with serve_process(older_graph, pg_url, env=KNOBS) as holder:
        assert httpx.post(holder.url + "/tokens", json={"token": "A-1", "context": context})
    with (
        serve_process(newer_graph, pg_url, env=KNOBS) as holder,
        serve_process(older_graph, pg_url, extra=["--replica"], env=KNOBS) as replica,
    ):
        started = httpx.post(replica.url + "/tokens", json={"token": "B-1", "context": context})
        assert started.json()["structure"] == structure(newer)
        health = httpx.get(replica.url + "/health").json()
        assert health["checksum"] == httpx.get(holder.url + "/health").json()["checksum"]
        holder.stop()  # the replica takes the hold: its graph file is current from then on
        deadline = time.monotonic() + 15
        while httpx.get(replica.url + "/health").json()["role"] != "holder":
            assert time.monotonic() < deadline, "the replica did not take the hold"
            time.sleep(0.2)
        taken = httpx.post(replica.url + "/tokens", json={"token": "C-1", "context": context})
        assert taken.json()["structure"] == structure(ORDERS)
        versions = httpx.get(replica.url + "/workflow/versions").json()
        assert [(v["structure"], v["current"], v["live"]) for v in versions] == [
            (structure(newer), False, 1),
            (structure(ORDERS), True, 2),
        ]
