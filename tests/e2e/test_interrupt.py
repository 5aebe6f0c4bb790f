"""Ctrl-C (SIGINT) in a long command, as real processes against a real `stateous serve`: the
command says what it did and how to go on, exits 130, and loses nothing.

Each test puts the command at a known point before the signal: a proxy holds one request of
the command (`HoldingProxy`), or the command waits for something the test controls.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stateous.cli.import_tokens import pages
from stateous.cli.prune import human_bytes
from stateous.client import Client
from stateous.control.store import migrate
from tests.integration.supervisor.procs import init_folder
from tests.support import (
    ServeProcess,
    free_port,
    postgres_database,
    serve_process,
    sqlite_url,
)
from tests.support.graphs import SDLC, write_graph
from tests.support.holding_proxy import HoldingProxy
from tests.support.processes import start_serve, start_supervise

REPO = {"repo": "acme/api"}
GO_ON = "to go on, run the same command again: a token that exists is left as it is, so none "
GO_ON += "starts twice"


@pytest.fixture
def plane(db_url: str, tmp_path: Path) -> Iterator[ServeProcess]:
    """`serve` of sdlc on a new database of the chosen backend."""
    with serve_process(write_graph(tmp_path, SDLC), db_url, cwd=tmp_path) as served:
        yield served


@pytest.fixture
def on_sqlite(tmp_path: Path) -> Iterator[ServeProcess]:
    """`serve` of sdlc on a new SQLite file (what the CLI does depends on no backend)."""
    with serve_process(write_graph(tmp_path, SDLC), sqlite_url(tmp_path), cwd=tmp_path) as served:
        yield served


def clean_env() -> dict[str, str]:
    """This environment without what would change a command's output or its control plane."""
    dropped = ("STATEOUS_URL", "COLUMNS", "LINES")
    return {k: v for k, v in os.environ.items() if k not in dropped}


def launch(*args: str) -> subprocess.Popen[str]:
    """`python -m stateous ARGS`, stdout and stderr piped, no terminal."""
    return subprocess.Popen(
        [sys.executable, "-m", "stateous", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=clean_env(),
    )  # fmt: skip


def ended(process: subprocess.Popen[str]) -> tuple[int, list[str], list[str]]:
    """Wait for the end: (exit code, stdout lines, stderr lines)."""
    out, err = process.communicate(timeout=60)
    return process.returncode, out.splitlines(), err.splitlines()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def token_ids(url: str) -> list[str]:
    """Every top token's id, in id order."""
    with Client(url) as client:
        found: list[str] = []
        after: str | None = None
        while True:
            page = client.tokens(limit=1000, after=after)
            found += [str(token["token"]) for token in page]
            if page.next is None:
                return sorted(found)
            after = page.next


def starts_file(path: Path, count: int) -> Path:
    path.write_text(
        "".join(json.dumps({"token": f"F-{n:04}", "context": REPO}) + "\n" for n in range(count))
    )
    return path


# ------------------------------------------------------------------------- token start --file


def test_ctrl_c_lets_the_batch_in_flight_end_and_says_how_to_go_on(
    on_sqlite: ServeProcess, tmp_path: Path
) -> None:
    path = starts_file(tmp_path / "starts.jsonl", 1500)  # three batches of 500
    with HoldingProxy(port_of(on_sqlite.url), b"POST /tokens/batch ", 2) as proxy:
        command = launch("token", "start", "--file", str(path), "--url", proxy.url)
        proxy.wait_held()
        command.send_signal(signal.SIGINT)
        time.sleep(0.3)  # the signal is in before the answer comes
        proxy.release()
        assert ended(command) == (
            130,
            [],
            [
                f"interrupted: started 1000, already there 0, refused 0, up to line 1000 of {path}",
                GO_ON,
            ],
        )
    assert token_ids(on_sqlite.url) == [f"F-{n:04}" for n in range(1000)]
    # The same file again starts the rest, and none twice.
    again = launch("token", "start", "--file", str(path), "--url", on_sqlite.url)
    assert ended(again) == (0, ["started 500, already there 1000, refused 0"], [])
    assert token_ids(on_sqlite.url) == [f"F-{n:04}" for n in range(1500)]


def test_a_second_ctrl_c_stops_at_once_and_says_what_may_have_started(
    on_sqlite: ServeProcess, tmp_path: Path
) -> None:
    path = starts_file(tmp_path / "starts.jsonl", 1500)
    with HoldingProxy(port_of(on_sqlite.url), b"POST /tokens/batch ", 2) as proxy:
        command = launch("token", "start", "--file", str(path), "--url", proxy.url)
        proxy.wait_held()
        command.send_signal(signal.SIGINT)
        time.sleep(0.5)  # two signals close together would count as one
        command.send_signal(signal.SIGINT)
        assert ended(command) == (
            130,
            [],
            [
                f"interrupted: started 500, already there 0, refused 0, up to line 500 of {path}",
                "lines 501 to 1000 were being sent: some of them may have started",
                GO_ON,
            ],
        )
    # The proxy never sent the second batch.
    assert token_ids(on_sqlite.url) == [f"F-{n:04}" for n in range(500)]


# ------------------------------------------------------------------------- prune --export


def ended_tokens(url: str, count: int) -> list[str]:
    """`count` tokens started, then cancelled by a bulk job; their ids in order."""
    ids = [f"P-{n:04}" for n in range(count)]
    with Client(url) as client:
        client.start_many([(token, REPO) for token in ids])
        job = int(client.bulk("cancel", {"status": ["active"]})["job"])
        deadline = time.monotonic() + 120
        while client.bulk_job(job)["status"] == "running":
            assert time.monotonic() < deadline, "the bulk cancel did not end"
            time.sleep(0.1)
        assert client.bulk_job(job)["done"] == count
    return ids


def exported_ids(path: Path) -> list[str]:
    return [json.loads(line)["token"]["token"] for line in path.read_text().splitlines()]


def test_ctrl_c_in_prune_finishes_the_page_and_the_file_holds_exactly_the_pruned(
    plane: ServeProcess, tmp_path: Path
) -> None:
    ids = ended_tokens(plane.url, 2100)  # pages of 1000, 1000 and 100
    cutoff = "2999-01-01T00:00:00Z"
    file = tmp_path / "archive.jsonl"
    prune = ("prune", "--ended-before", cutoff, "--export", str(file))
    with HoldingProxy(port_of(plane.url), b"POST /prune ", 2) as proxy:
        command = launch(*prune, "--url", proxy.url)
        proxy.wait_held()
        command.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proxy.release()
        size = human_bytes(file.stat().st_size) if file.exists() else "?"
        assert ended(command) == (
            130,
            [],
            [
                f"interrupted: pruned 2,000 tokens ({size} of history) into {file}",
                f"to go on, run the same command again: it prunes the rest, appending to {file}",
            ],
        )
    assert exported_ids(file) == ids[:2000]
    assert token_ids(plane.url) == ids[2000:]
    # The same command goes on where it stopped.
    code, out, err = ended(launch(*prune, "--url", plane.url))
    assert (code, err) == (0, [])
    assert out[0].startswith("pruned 100 tokens (")
    assert exported_ids(file) == ids
    assert token_ids(plane.url) == []


def test_ctrl_c_in_import_lets_the_page_in_flight_end_and_says_how_to_go_on(
    on_sqlite: ServeProcess, tmp_path: Path
) -> None:
    ids = ended_tokens(on_sqlite.url, 2100)  # three pages of POST /import: the 2nd is held
    file = tmp_path / "archive.jsonl"
    pruned = launch("prune", "--ended-before", "2999-01-01T00:00:00Z", "--export", str(file),
                    "--yes", "--url", on_sqlite.url)  # fmt: skip
    assert ended(pruned)[0] == 0
    ends = [last for _, _, last in pages(file)]
    assert len(ends) == 3
    first = ends[1]  # the page in flight ends; the third is not sent
    with HoldingProxy(port_of(on_sqlite.url), b"POST /import ", 2) as proxy:
        command = launch("import", str(file), "--url", proxy.url)
        proxy.wait_held()
        command.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proxy.release()
        assert ended(command) == (
            130,
            [],
            [
                f"interrupted: imported {first:,} tokens into {proxy.url}, skipped 0 (already "
                f"there), up to line {first:,} of {file}",
                "the same command goes on: the tokens already there are skipped",
            ],
        )
    assert token_ids(on_sqlite.url) == sorted(ids[:first], key=ids.index)
    code, out, err = ended(launch("import", str(file), "--url", on_sqlite.url))
    assert (code, err) == (0, [])
    assert out == [
        f"imported {2100 - first:,} tokens into {on_sqlite.url}, skipped {first:,} (already there)"
    ]


# ------------------------------------------------------------------------- the [y/N] question


def waiting_for_input(pid: int) -> None:
    """Wait until the process `pid` sleeps in its read of the terminal. The prompt is written
    just before the read begins, and Python's read of a line loses a SIGINT that comes in
    between (the signal is noted, then the read blocks); a person's Ctrl-C never comes that
    fast, a test's can."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "S" and Path(f"/proc/{pid}/wchan").read_text() not in ("", "0"):
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not come to wait for input")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_at_the_question_says_cancelled(on_sqlite: ServeProcess) -> None:
    with Client(on_sqlite.url) as client:
        client.start_many([("Q-1", REPO), ("Q-2", REPO)])
    primary, secondary = os.openpty()
    command = subprocess.Popen(
        [sys.executable, "-m", "stateous", "token", "cancel", "--where", "--status", "active",
         "--url", on_sqlite.url],
        stdin=secondary, stdout=secondary, stderr=secondary, env=clean_env(),
    )  # fmt: skip
    os.close(secondary)
    seen = b""
    try:
        while b"[y/N] " not in seen:
            seen += os.read(primary, 4096)
        waiting_for_input(command.pid)
        command.send_signal(signal.SIGINT)
        assert command.wait(timeout=60) == 130
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(primary)
    assert seen.decode().endswith("cancel 2 tokens? [y/N] \r\ncancelled\r\n"), seen
    assert httpx.get(on_sqlite.url + "/bulk", timeout=10).json() == []
    assert [t["status"] for t in httpx.get(on_sqlite.url + "/tokens").json()] == ["active"] * 2


# ------------------------------------------------------------------------- serve, supervise


def test_ctrl_c_while_a_replica_waits_for_the_schema(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, SDLC)
    with postgres_database() as url:
        replica = ServeProcess(url="", process=start_serve(graph, url, extra=["--replica"]))
        replica.start_reading()
        try:
            deadline = time.monotonic() + 30
            while not replica.read_lines(timeout=0.1) and time.monotonic() < deadline:
                pass
            assert replica.lines[0].startswith("waiting for the database's schema: ")
            code = replica.interrupt(20)
            replica.read_lines(timeout=2)
        finally:
            replica.kill()
    assert code == 130
    assert replica.lines == [
        "waiting for the database's schema: it has none yet, this replica needs version "
        f"{migrate.HEAD}; a control plane started without --replica creates it",
        "stopped while starting",
    ]


def _has_open(pid: int, path: Path) -> bool:
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == str(path):
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_ctrl_c_while_serve_opens_the_database_leaves_it_free(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, SDLC)
    db = sqlite_url(tmp_path)
    with serve_process(graph, db, cwd=tmp_path):
        pass  # the schema is made; the hold given up
    file = tmp_path / "stateous.db"
    locker = sqlite3.connect(file, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # serve now waits for the lock while it starts
    try:
        starting = ServeProcess(url="", process=start_serve(graph, db, cwd=tmp_path))
        starting.start_reading()
        deadline = time.monotonic() + 30
        while not _has_open(starting.process.pid, file):
            assert time.monotonic() < deadline and starting.process.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)
        starting.process.send_signal(signal.SIGINT)
        time.sleep(0.3)
    finally:
        locker.execute("COMMIT")
        locker.close()
    code = starting.process.wait(timeout=60)  # no second Ctrl-C: that would stop it at once
    starting.read_lines(timeout=2)
    starting.close_pipes()
    assert (code, starting.lines) == (130, ["stopped while starting"])
    # Nothing stays held: the next serve starts at once.
    with serve_process(graph, db, cwd=tmp_path) as served:
        assert httpx.get(served.url + "/health", timeout=10).status_code == 200


def test_ctrl_c_while_supervise_waits_for_the_control_plane(tmp_path: Path) -> None:
    folder = tmp_path / "early"
    init_folder(str(write_graph(tmp_path, SDLC)), folder)
    (folder / "stateous.yaml").write_text(f"url: http://127.0.0.1:{free_port()}\n")
    running = start_supervise(folder)
    running.wait_for(r"^cannot reach the control plane at .*; trying again in ")
    assert running.stop() == 1  # a stop before the stop handlers are in: exit 1
    assert running.lines[-1] == "stopped while starting"
    assert not any("Traceback" in line for line in running.lines)
