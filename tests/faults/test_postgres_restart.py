"""A real restart of the machine's Postgres server under load: every answer is a success or
`503 database_busy`, the serve keeps its hold, and no token is corrupt (issue 9)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.faults.harness import (
    Load,
    Plane,
    check_invariants,
    make_folder,
    outbox_count,
    plane,
    scaled,
    supervise,
    supervisor_figures,
    wait_all_ended,
)
from tests.support import free_port, postgres_database
from tests.support.databases import PG_ADMIN

BUSY = {"error": "the database cannot take this request now; try again", "code": "database_busy"}
CLUSTER = ("15", "main")  # the cluster at 127.0.0.1:5432 that tests/support/databases.py uses
TOOK_BACK = "this control plane took its hold on the database again"


def pg_ready() -> bool:
    """Whether the server accepts connections (`pg_isready -h 127.0.0.1`)."""
    ready = subprocess.run(
        ["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"], check=False, timeout=30
    )
    return ready.returncode == 0


def pg_ctl(action: str) -> None:
    """`pg_ctlcluster 15 main <action>` (stop is the fast mode: sessions are ended at once)."""
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *CLUSTER, action],
        check=True,
        capture_output=True,
        timeout=120,
    )


def wait_ready(timeout: float = 60.0) -> None:
    """Wait until the server accepts connections again."""
    deadline = time.monotonic() + timeout
    while not pg_ready():
        assert time.monotonic() < deadline, "Postgres does not accept connections after start"
        time.sleep(0.2)


def why_not_restartable() -> str | None:
    """The reason this machine's Postgres cannot be restarted by the test, or None."""
    if shutil.which("pg_ctlcluster") is None or shutil.which("pg_lsclusters") is None:
        return "pg_ctlcluster is not found: the test restarts the machine's Postgres with it"
    listed = subprocess.run(
        ["pg_lsclusters", "--no-header"], check=False, capture_output=True, text=True, timeout=30
    )
    clusters = [line.split()[:3] for line in listed.stdout.splitlines() if line.strip()]
    if [*CLUSTER, "5432"] not in clusters:
        return "the Postgres at 127.0.0.1:5432 is not the cluster 15/main that this test restarts"
    return None


@contextmanager
def postgres_kept_running() -> Iterator[None]:
    """Whatever happens in the block, Postgres accepts connections when it ends."""
    try:
        yield
    finally:
        if not pg_ready():
            pg_ctl("start")
            wait_ready()


def other_clients(db_url: str) -> int:
    """Sessions of other programs on the server (not this test's database, not this query)."""
    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid() AND datname IS DISTINCT FROM %s",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def wait_alone(db_url: str, quiet: float = 3.0, timeout: float = 120.0) -> None:
    """Wait until no other program has used the server for `quiet` seconds: a restart would
    break another test run on this machine (skipped if the server never falls quiet)."""
    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() - calm_since < quiet:
        if other_clients(db_url):
            calm_since = time.monotonic()
            if calm_since > deadline:
                pytest.skip("other programs keep using the Postgres server; it is not restarted")
        time.sleep(0.25)


@dataclass
class Probe:
    """Reads and starts tokens while `watching()` an outage, keeping every answer that is not a
    success or `503 database_busy`."""

    url: str
    answers: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    started: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _on: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin in the background."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Probe through the block and two seconds after it (the pool holds dead connections)."""
        self._on.set()
        try:
            yield
            time.sleep(2.0)
        finally:
            self._on.clear()

    def stop(self) -> None:
        """End the probing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        n = 1
        settled = True
        with httpx.Client(base_url=self.url, timeout=30) as http:
            # It ends on a start that was not answered 503: a 503 start may have been applied
            # all the same, and is asked again until the answer says whether it was.
            while not (self._stop.is_set() and settled):
                if settled and not self._on.is_set():
                    self._on.wait(0.1)
                    continue
                self._ask(http, "GET", "/tokens", params={"limit": "5"})
                name = f"P-{n}"
                body = {"token": name, "context": {"repo": f"r/{name}"}}
                status = self._ask(http, "POST", "/tokens", json=body)
                settled = status != 503  # any other answer is a success or already wrong
                if status in (200, 201):
                    self.started.add(name)
                    n += 1
                time.sleep(0.1)

    def _ask(self, http: httpx.Client, method: str, path: str, **kwargs: Any) -> int:
        """One call; answers its status (0 when the server did not answer)."""
        try:
            answer = http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            self.answers["no answer"] += 1
            self.wrong.append(f"{method} {path}: {exc!r}")  # serve stopped or hung
            return 0
        status = answer.status_code
        if status in (200, 201):
            self.answers[str(status)] += 1
        elif status == 503 and answer.json() == BUSY:
            self.answers["503 database_busy"] += 1
        else:
            self.answers[str(status)] += 1
            self.wrong.append(f"{method} {path}: {status} {answer.text}")
        return status


def restart_postgres(down: float) -> None:
    """Stop the server (fast: every session ended), keep it down `down` seconds, start it."""
    pg_ctl("stop")
    time.sleep(down)
    pg_ctl("start")
    wait_ready()


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
@pytest.mark.timeout(scaled(300, 1800))
def test_a_postgres_restart_is_database_busy_and_loses_nothing(tmp_path: Path) -> None:
    reason = why_not_restartable()
    if reason is not None:
        pytest.skip(reason)
    restarts = scaled(1, 3)
    with postgres_kept_running(), postgres_database("stateous_faults") as db:
        with plane(db, free_port(), tmp_path) as cp:
            folder = make_folder(tmp_path, cp.url, "box-1")
            run = supervise(folder)
            load = Load(cp.url, scaled(8, 300))
            probe = Probe(cp.url)
            load.start()
            probe.start()
            try:
                for _ in range(restarts):
                    time.sleep(scaled(1, 3))
                    wait_alone(db)
                    with probe.watching():
                        restart_postgres(down=scaled(2, 4))
                probe.stop()
                load.join(timeout=300)
                wait_all_ended(cp.url, timeout=scaled(90, 900))
                load.resume_all(time.monotonic() + 60)
                wait_all_ended(cp.url, timeout=scaled(60, 600))
            finally:
                probe.stop()
                code = run.stop()
            lines = served_lines(cp)
        assert not probe.wrong, probe.wrong[:20]
        assert probe.answers["503 database_busy"] > 0, probe.answers  # the outage was seen
        assert not failures(lines), "\n".join(failures(lines)[:80])
        assert not odd_answers(run.messages()), odd_answers(run.messages())
        assert sum(TOOK_BACK in line for line in lines) == restarts, lines
        assert code == 0, run.lines
        assert outbox_count(folder) == 0
        figures = check_invariants(db)
    assert figures.tokens == load.tokens + len(probe.started)
    figures.duplicates_answered = load.duplicates
    figures.faults = restarts
    supervisor_figures(figures, run)
    figures.write("postgres_restart")


def served_lines(cp: Plane) -> list[str]:
    """The serve's stderr so far; it kept serving through every restart (its hold too)."""
    assert cp.served is not None
    assert cp.served.process.poll() is None, cp.served.read_lines(1.0)
    return cp.served.read_lines(0.2)


def failures(lines: list[str]) -> list[str]:
    """The serve's `500`s (logged `failed unexpectedly`) and tracebacks, with the lines after."""
    found: list[str] = []
    for n, line in enumerate(lines):
        if "failed unexpectedly" in line or line.startswith("Traceback"):
            found.extend(lines[n : n + 40])
    return found


def odd_answers(messages: list[str]) -> list[str]:
    """The supervisor's calls that were answered with anything but `503 database_busy`."""
    answered = (re.search(r"\(it answered (\d+[^:)]*)", m) for m in messages)
    return [found[1] for found in answered if found and found[1] != "503, database_busy"]
