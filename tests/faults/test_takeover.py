"""Takeover on Postgres: a second control plane takes the database while the first is paused
(SIGSTOP); the first resumes and stops with `not_serving`, and no token is corrupt."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest

from tests.faults.harness import (
    Load,
    Plane,
    check_invariants,
    make_folder,
    outbox_count,
    scaled,
    supervise,
)
from tests.faults.proxy import ChaosProxy
from tests.support import free_port, postgres_database
from tests.support.databases import PG_ADMIN

NOT_SERVING = (
    "another control plane took this database; this control plane does no more work; "
    "trying again does not help: stop this server"
)


def terminate_backends(db_url: str) -> int:
    """End every session on this test's database (never anyone else's): a lost connection."""
    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "sqlite", reason="Postgres only")
def test_a_paused_control_plane_is_taken_over_and_stops(tmp_path: Path) -> None:
    with postgres_database("stateous_faults") as db:
        first = Plane(db, free_port(), tmp_path)
        first.start()
        # The supervisor and the load speak to one address; the proxy moves it to the new holder.
        proxy = ChaosProxy(upstream=first.port, drop=0.0, delay=0.0, cut=0.0)
        proxy.start()
        url = f"http://127.0.0.1:{proxy.port}"
        folder = make_folder(tmp_path, url, "box-1")
        run = supervise(folder)
        load = Load(url, scaled(8, 300))
        load.start()
        second = Plane(db, free_port(), tmp_path)
        try:
            time.sleep(1.0)
            assert first.served is not None
            first.served.process.send_signal(signal.SIGSTOP)
            assert terminate_backends(db) >= 1  # its lock connection, as a network cut would
            second.start_retrying(timeout=30)
            proxy.upstream = second.port
            first.served.process.send_signal(signal.SIGCONT)
            code = first.served.process.wait(timeout=20)
            first.served.read_lines(timeout=1.0)
            load.run_out(url)
        finally:
            stopped = run.stop()
            for cp in (first, second):
                if cp.served is not None and cp.served.process.poll() is None:
                    cp.served.process.send_signal(signal.SIGCONT)
                    cp.stop()
                cp.close_pipes()
            proxy.close()
        lines = first.served.lines
        assert code == 1, lines
        assert (
            lines[-1]
            == "error: another control plane took the database; this control plane stopped"
        )
        assert any(line.endswith(": " + NOT_SERVING) for line in lines)
        assert stopped == 0
        assert outbox_count(folder) == 0
        figures = check_invariants(db)
        assert figures.tokens == load.tokens
        figures.faults = 1
        figures.write("takeover_postgres")
