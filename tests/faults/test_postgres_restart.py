"""A real restart of a Postgres server under load: every answer is a success or
`503 database_busy`, the serve keeps its hold, and no token is corrupt (issue 9).

The server restarted is a throwaway cluster of this test alone (the machine's `initdb` in a
temporary folder, on a free port), never the shared server that other test runs use.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.faults.harness import (
    AnswerProbe,
    Load,
    Plane,
    check_invariants,
    failures,
    make_folder,
    odd_answers,
    outbox_count,
    plane,
    scaled,
    supervise,
    supervisor_figures,
)
from tests.support import free_port

TOOK_BACK = "this control plane took its hold on the database again"
PG_LIB = Path("/usr/lib/postgresql")  # Debian's layout: <version>/bin/initdb, pg_ctl
PG_USER = "postgres"  # the server refuses to run as root
#: Small, and durable as a real server is: the outage, not the settings, is under test.
PG_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "shared_buffers": "16MB",
    "max_connections": "50",
    "fsync": "on",
}


def postgres_bin() -> Path | None:
    """The bin folder of the machine's newest Postgres that has `initdb` and `pg_ctl`, or None."""
    found = [
        folder
        for folder in PG_LIB.glob("*/bin")
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file()
    ]
    found.sort(key=lambda folder: [int(n) for n in re.findall(r"\d+", folder.parent.name)])
    return found[-1] if found else None


def as_postgres(argv: list[str]) -> list[str]:
    """`argv` run as the `postgres` user (as is when this test already runs as postgres)."""
    if pwd.getpwuid(os.geteuid()).pw_name == PG_USER:
        return argv
    if shutil.which("runuser") is not None:
        return ["runuser", "-u", PG_USER, "--", *argv]
    return ["su", "-s", "/bin/sh", PG_USER, "-c", shlex.join(argv)]


def why_no_private_cluster() -> str | None:
    """The reason this machine cannot run a private Postgres cluster for the test, or None."""
    if postgres_bin() is None:
        return (
            f"the machine's Postgres binaries ({PG_LIB}/<version>/bin/initdb, pg_ctl) are missing"
        )
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        return f"there is no `{PG_USER}` user to run a private Postgres cluster (not root)"
    me = pwd.getpwuid(os.geteuid()).pw_name
    if me not in ("root", PG_USER):
        return f"the test runs as {me}: only root or {PG_USER} can run a cluster as {PG_USER}"
    if me == "root" and shutil.which("runuser") is None and shutil.which("su") is None:
        return f"neither runuser nor su is found to run a private cluster as {PG_USER}"
    return None


@dataclass
class Cluster:
    """A throwaway Postgres cluster in `folder` (data, socket, log), run by the `postgres` user
    on 127.0.0.1:`port` with trust authentication."""

    bin: Path
    folder: Path
    port: int

    @property
    def data(self) -> Path:
        """The data directory."""
        return self.folder / "data"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.folder / "server.log"

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        """One of the cluster's programs as `postgres`; failing with its output and the log."""
        done = subprocess.run(
            as_postgres([str(self.bin / program), *args]),
            cwd=self.folder,  # a folder `postgres` may enter
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise AssertionError(f"{program} {shlex.join(args)}: {done.stdout}{done.stderr}{tail}")
        return done

    def init(self) -> None:
        """`initdb` with trust authentication, then the test's settings and port."""
        # --no-sync only skips flushing initdb's own files; the server itself runs with fsync=on.
        self.run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            PG_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        settings = {
            **PG_SETTINGS,
            "port": str(self.port),
            "unix_socket_directories": f"'{self.folder}'",
        }
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (fast: every session is ended at once) and wait until it is down."""
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, down: float) -> None:
        """Stop the server in fast mode, keep it down `down` seconds, start it again."""
        self.stop()
        time.sleep(down)
        self.start()

    def create_database(self, name: str) -> str:
        """A new database of the cluster; answers its URL."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, dbname="postgres", autocommit=True
        ) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{name}"

    def running(self) -> bool:
        """Whether the server runs (`pg_ctl status`)."""
        status = subprocess.run(
            as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "status"]),
            cwd=self.folder,
            capture_output=True,
            check=False,
            timeout=60,
        )
        return status.returncode == 0

    def remove(self) -> None:
        """Stop the server if it runs (immediate: its data is deleted next); delete the folder."""
        try:
            if self.data.exists() and self.running():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A started cluster of this test alone; always stopped and deleted at the end."""
    bin_dir = postgres_bin()
    assert bin_dir is not None
    user = pwd.getpwnam(PG_USER)
    # Not under pytest's tmp_path: its parent folder is root's alone, and `postgres` must reach it.
    folder = Path(tempfile.mkdtemp(prefix="stateous-pg-restart-", dir="/tmp"))
    cluster = Cluster(bin_dir, folder, free_port())
    try:
        os.chown(folder, user.pw_uid, user.pw_gid)
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@dataclass
class Probe(AnswerProbe):
    """Probes while `watching()` an outage."""

    _on: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Probe through the block and two seconds after it (the pool holds dead connections)."""
        self._on.set()
        try:
            yield
            time.sleep(2.0)
        finally:
            self._on.clear()

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


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
@pytest.mark.timeout(scaled(300, 1800))
def test_a_postgres_restart_is_database_busy_and_loses_nothing(tmp_path: Path) -> None:
    reason = why_no_private_cluster()
    if reason is not None:
        pytest.skip(reason)
    restarts = scaled(1, 3)
    with private_cluster() as cluster:
        db = cluster.create_database("stateous_faults")
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
                    with probe.watching():
                        cluster.restart(down=scaled(2, 4))
                probe.stop()
                load.run_out(cp.url)
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
